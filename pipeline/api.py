"""The Python API: score records in memory, run an evaluation, open a run and read it.

:func:`score` scores a DataFrame (polars, pandas), a pyarrow Table, a Hugging Face
``datasets.Dataset`` or files in memory and writes nothing; :func:`evaluate` writes what
``rag-eval evaluate`` writes and returns a :class:`Run`; :func:`open_run` opens an output
directory or a run of a results store. Both read records with the command line's readers
(column names of known layouts, ``columns``), validate them with its rules (every row is scored
or rejected with a reason) and score them with its scorer, so the same rows give the same
scores. The command line (:mod:`pipeline.cli`) is a layer over this module.

``import pipeline.api`` is light: the modules that load DuckDB, the embedding runtime or
matplotlib are imported inside the function that first needs them, so a notebook pays for what
it uses. Those imports are plain ``from pipeline... import`` statements of modules on a floor
below this one, which ``tests/test_architecture.py`` checks like the module-level ones (this
module is the only one allowed them). docs/python-api.md has the examples.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias, cast

import polars as pl

from pipeline.config import Config, ConfigError, UserMetricDef, did_you_mean, load_config
from pipeline.io import atomic
from pipeline.io.in_memory import _from_arrow, _paths, _polars
from pipeline.io.layout import (
    EXTRA_OUTPUTS_FILE,
    REJECTED_DIR,
    REJECTED_FILE,
    SCORES_DIR,
    SCORES_FILE,
)
from pipeline.phases import phase
from pipeline.schema import (
    KEY_COLUMNS,
    READER_SCHEMA,
    RECORD_SCHEMA,
    REJECTED_SCHEMA,
    ROW_COLUMN,
    SOURCE_COLUMN,
    InputError,
)

if TYPE_CHECKING:
    from pipeline.compare import Comparison
    from pipeline.metrics.spec import MetricSpec
    from pipeline.metrics.user import UserMetric
    from pipeline.stats import StatsSummary

__all__ = [
    "Compared", "Counts", "Run", "Scored", "Statistics", "check_gate_metrics", "evaluate",
    "open_run", "score",
]

log = logging.getLogger(__name__)

#: ``source`` of the rows of in-memory data given to :func:`score` (files keep their path).
DATA_SOURCE = "<data>"
#: Where :func:`evaluate` writes in-memory data for the engine (in a temporary directory).
DATA_FILE = "data.parquet"

#: What :func:`score` and :func:`evaluate` read: a polars DataFrame or LazyFrame, a pandas
#: DataFrame, a pyarrow Table, a Hugging Face ``datasets.Dataset``, or a path or list of paths of
#: records files (pandas and ``datasets`` are not dependencies, so the type names none of them).
Records: TypeAlias = object
#: Metric or family names (``"answer"``, ``"answer_f1"``; a string may list several, comma
#: separated) and user-defined metric objects (:mod:`pipeline.metrics.user`).
Metrics: TypeAlias = str | Sequence[object]
PathLike: TypeAlias = str | os.PathLike[str]
#: A run's settings: a TOML file's path, TOML text, a dict of the same tables, or a Config.
ConfigLike: TypeAlias = PathLike | Mapping[str, Any] | Config


# --- results ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scored:
    """What :func:`score` returns.

    ``scores``: one row per scored record, the columns and values of ``scores.parquet`` of
    ``rag-eval evaluate`` on the same rows (key columns, ``source``, ``row_number``,
    ``row_hash``, one column per metric, ``signature``) with the row's texts (``question``,
    ``reference``, ``response``, ``contexts``) and the input's other columns that were kept
    (``keep_columns``) after ``row_number``. ``rejected``: one row per record that
    was not scored (``source``, ``row_number``, ``id``, ``reason``, ``raw``). ``signature``: the
    settings behind every score (:meth:`pipeline.config.Config.signature`).
    """

    scores: pl.DataFrame
    rejected: pl.DataFrame
    signature: str


class Counts(NamedTuple):
    """Rows a run read, scored, reused from an earlier store run, and rejected."""

    read: int
    scored: int
    reused: int
    rejected: int


class Statistics(NamedTuple):
    """What :meth:`Run.stats` computed: bootstrap intervals and paired model comparisons
    (``intervals.parquet`` and ``comparisons.parquet``, docs/statistics.md), and what was written
    (None for a store run, whose files never change)."""

    intervals: pl.DataFrame
    comparisons: pl.DataFrame
    summary: StatsSummary | None


class Compared(NamedTuple):
    """What :meth:`Run.compare` found: the comparison (deltas, regressed, new and missing
    items, the gate's failures) and whether the regression gate passed."""

    comparison: Comparison
    passed: bool


# --- score --------------------------------------------------------------------------------------


def score(
    data: Records,
    *,
    metrics: Metrics | None = None,
    config: ConfigLike | None = None,
    columns: Mapping[str, str] | None = None,
    embedding_backend: str | None = None,
    keep_columns: Sequence[str] | None = None,
) -> Scored:
    """Validate and score ``data`` in memory; write nothing.

    ``data``: a polars DataFrame or LazyFrame, a pandas DataFrame, a pyarrow Table, a Hugging
    Face ``datasets.Dataset`` or a path (or list of paths) of records files, read as
    ``rag-eval evaluate --input`` reads a file (known layouts such as RAGAS, derived ids,
    ``columns``). ``metrics``: names or families (default: the configuration's, else all);
    ``config``: a TOML file's path, TOML text, a dict of the same tables
    (``{"answer": {"strip_citation_markers": False}}``) or a :class:`~pipeline.config.Config`
    (default: the defaults);
    ``columns``: canonical name -> name in ``data``, over the config's ``[columns]``;
    ``embedding_backend``: as ``--embedding-backend``; ``keep_columns``: the input's columns
    that are no canonical column (a ``label``) to carry into :attr:`Scored.scores` (default:
    the config's ``[columns] keep``, else all of them; ``[]``: none, each named in a warning).

    Rows that fail validation, and rows whose key an earlier row of the same input holds, are
    in :attr:`Scored.rejected` with their reasons (and a warning is logged), never dropped.

    >>> import polars as pl
    >>> frame = pl.DataFrame({"id": ["q1", "q2", "q3"], "model": "m",
    ...     "question": ["Capital of France?", "2 + 2?", "Largest planet?"],
    ...     "reference": ["Paris", "4", "Jupiter"], "response": ["Paris.", "5", None]})
    >>> scored = score(frame, metrics=["answer_em", "answer_f1"])
    >>> scored.scores.select("id", "answer_em", "answer_f1").rows()
    [('q1', 1, 1.0), ('q2', 0, 0.0)]
    >>> scored.rejected.select("id", "reason").rows()
    [('q3', 'response: is null (required)')]
    """
    from pipeline.validate import validate_records

    settings, specs = _settings(config, metrics=metrics, columns=columns,
                                embedding_backend=embedding_backend)
    keep = settings.keep_columns if keep_columns is None else list(
        [keep_columns] if isinstance(keep_columns, str) else keep_columns
    )
    inputs = _reader_frames(data, settings, keep)
    parts = [validate_records(frame, source, settings, check_duplicates=False)
             for frame, source in inputs]
    valid = pl.concat([part.records for part in parts])
    kept, duplicates = _without_duplicates(valid, inputs)
    rejected = pl.concat([*(part.rejected for part in parts), duplicates])
    if rejected.height:
        order = {source: position for position, (_, source) in enumerate(inputs)}
        rejected = rejected.sort(
            pl.col(SOURCE_COLUMN).replace_strict(order, return_dtype=pl.Int64), ROW_COLUMN
        )
        n_read = sum(part.n_read for part in parts)
        log.warning("%d of %d rows rejected: Scored.rejected has them with their reasons",
                    rejected.height, n_read)
    scores = _with_texts(_scores(kept, valid, settings, specs), kept, inputs)
    return Scored(scores=scores, rejected=rejected, signature=settings.signature())


def _settings(
    config: ConfigLike | None,
    *,
    metrics: Metrics | None = None,
    columns: Mapping[str, str] | None = None,
    embedding_backend: str | None = None,
) -> tuple[Config, tuple[MetricSpec, ...]]:
    """The configuration of a run (:func:`_configure`, plug-ins loaded) and its metric specs,
    resolved as the drivers resolve them, so a bad selection or user metric fails before
    anything is read."""
    from pipeline.metrics.user import load_plugins, resolve

    settings = load_plugins(_configure(config, metrics=metrics, columns=columns,
                                       embedding_backend=embedding_backend))
    return settings, tuple(resolve(settings))


def _configure(
    config: ConfigLike | None,
    *,
    metrics: Metrics | None = None,
    columns: Mapping[str, str] | None = None,
    embedding_backend: str | None = None,
) -> Config:
    """``config`` (a file, TOML text, a dict, a Config or the defaults) with the arguments over
    it, as the command line puts its flags over ``--config``."""
    from pipeline.metrics.user import with_user_metrics

    if isinstance(config, Config):
        settings = config
        if columns:
            settings = replace(settings, columns={**settings.columns, **columns})
        if embedding_backend is not None:
            settings = replace(settings, embedding_backend=embedding_backend)
    else:
        given: dict[str, Any] = {}
        if isinstance(config, Mapping):
            given["data"] = config
        elif isinstance(config, str) and _is_toml_text(config):
            given["text"] = config
        elif config is not None:
            given["path"] = Path(config)
        settings = load_config(**given, columns=dict(columns or {}),
                               embedding_backend=embedding_backend)
    if metrics is None:
        return settings
    selection = tuple(
        name for item in ([metrics] if isinstance(metrics, str) else metrics)
        for name in (item.split(",") if isinstance(item, str) else [item])
        if not isinstance(name, str) or name.strip()
    )  # entries of another type raise TypeError in with_user_metrics
    return with_user_metrics(settings, cast("tuple[str | UserMetric | UserMetricDef, ...]",
                                            selection))


def _is_toml_text(config: str) -> bool:
    """Whether a ``config`` string is TOML text rather than a file's path: it has a line break,
    opens a ``[table]``, or sets a key (``=``) and names no file."""
    text = config.strip()
    if "\n" in text or text.startswith("["):
        return True
    return "=" in text and not text.endswith(".toml") and not Path(config).exists()


def _reader_frames(
    data: Records, config: Config, keep: Sequence[str] | None = ()
) -> list[tuple[pl.DataFrame, str]]:
    """``(frame, source)`` of each input, as the command line's readers return them, with the
    other columns ``keep`` names (None: all)."""
    from pipeline.io.readers import read_frame, read_records

    paths = _paths(data)
    if paths is not None:
        if not paths:
            raise ConfigError("no records: give data or at least one path")
        return [(read_records(os.fspath(path), config, keep), os.fspath(path))
                for path in paths]
    return [(read_frame(_polars(data), DATA_SOURCE, config, keep), DATA_SOURCE)]


def _without_duplicates(
    records: pl.DataFrame, inputs: Sequence[tuple[pl.DataFrame, str]]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """``records`` without the rows whose key (:data:`pipeline.validate.KEY`) an earlier valid
    row of the same input holds, and those rows as rejected rows with the duplicate reason:
    the rule of :func:`pipeline.engines.duplicate_rows_sql`, which the engines run."""
    from pipeline.validate import DUPLICATE_REASON, KEY, raw_json

    first = pl.col(ROW_COLUMN).min().over(SOURCE_COLUMN, *KEY)
    marked = records.with_columns(first.alias("__first"))
    repeated = marked.filter(pl.col(ROW_COLUMN) != pl.col("__first"))
    rejected = []
    for frame, source in inputs:
        rows = repeated.filter(pl.col(SOURCE_COLUMN) == source)
        if not rows.height:
            continue
        rows = rows.sort(ROW_COLUMN)
        raw = frame.join(rows.select(SOURCE_COLUMN, ROW_COLUMN), on=[SOURCE_COLUMN, ROW_COLUMN],
                         how="semi").sort(ROW_COLUMN)
        rejected.append(rows.select(
            SOURCE_COLUMN, ROW_COLUMN, "id",
            pl.format(DUPLICATE_REASON, "id", "__first").alias("reason"),
        ).with_columns(raw_json(raw, source)))
    empty = pl.DataFrame(schema=REJECTED_SCHEMA)
    kept = marked.filter(pl.col(ROW_COLUMN) == pl.col("__first")).drop("__first")
    return kept, pl.concat([empty, *rejected], how="vertical_relaxed")


def _scores(
    records: pl.DataFrame, valid: pl.DataFrame, config: Config, specs: Sequence[MetricSpec]
) -> pl.DataFrame:
    """The scores of ``records`` in the schema of ``scores.parquet``, batch by batch as the
    local engine scores them; the corpus statistics count every ``valid`` row, duplicates
    included, as the engine's first pass does."""
    from pipeline.engines.local import batch_rows_for
    from pipeline.scoring import BatchScorer, CorpusStatsBuilder

    corpus = CorpusStatsBuilder(config, tuple(specs))
    corpus.add(valid)
    scorer = BatchScorer.for_config(config, corpus.result(), specs)
    schema = scorer.output_schema
    rows = batch_rows_for(records, texts=scorer.scored_texts)
    batches = [
        _from_arrow(scorer.score_frame(records.slice(offset, rows)).to_arrow().cast(schema))
        for offset in range(0, records.height, rows)
    ]
    return pl.concat([_from_arrow(schema.empty_table()), *batches])


def _with_texts(
    scores: pl.DataFrame, records: pl.DataFrame, inputs: Sequence[tuple[pl.DataFrame, str]]
) -> pl.DataFrame:
    """``scores`` with each row's texts (:data:`TEXT_COLUMNS` of ``records``) and the kept
    input columns of ``inputs`` (as read) after ``row_number``; a kept column named like a
    column of the scores (a metric) is left out with a warning."""
    from pipeline.io.layout import TEXT_COLUMNS

    on = [SOURCE_COLUMN, ROW_COLUMN]
    texts = [name for name in TEXT_COLUMNS if name not in scores.columns]
    known = {*RECORD_SCHEMA, *on, *READER_SCHEMA}
    extras = []
    for frame, source in inputs:
        kept = [name for name in frame.columns if name not in known]
        for name in (n for n in kept if n in scores.columns):
            log.warning("%s: column %r is not kept: the scores have a column of that name; "
                        "rename it", source, name)
        kept = [name for name in kept if name not in scores.columns]
        if kept:
            extras.append(frame.select(*on, *kept))
    joined = scores.join(records.select(*on, *texts), on=on, how="left", maintain_order="left")
    names = []
    if extras:
        extra = pl.concat(extras, how="diagonal_relaxed")
        names = [name for name in extra.columns if name not in on]
        joined = joined.join(extra, on=on, how="left", maintain_order="left")
    cut = scores.columns.index(ROW_COLUMN) + 1
    return joined.select(*scores.columns[:cut], *texts, *names, *scores.columns[cut:])


# --- evaluate -----------------------------------------------------------------------------------


def evaluate(
    data: Records,
    out: PathLike | None = None,
    *,
    store: PathLike | None = None,
    metrics: Metrics | None = None,
    config: ConfigLike | None = None,
    columns: Mapping[str, str] | None = None,
    embedding_backend: str | None = None,
    stats: bool = True,
    stats_by: Sequence[str | Sequence[str]] = (),
    resamples: int | None = None,
    seed: int | None = None,
    report: PathLike | None = None,
    run_id: str | None = None,
    force: bool = False,
    lock_wait: float = 0.0,
    engine: str = "local",
    spark_master: str = "local[2]",
    pairs: Sequence[tuple[PathLike, PathLike]] = (),
    batch_rows: int | None = None,
    on_progress: Callable[[str, int], None] | None = None,
    queries: Mapping[str, str] | None = None,
) -> Run:
    """Validate and score ``data``; write what ``rag-eval evaluate`` writes; return the run.

    Into the output directory ``out`` (scores, texts, rejected rows, statistics, views) or,
    with ``store``, as a new run of a results store (``run_id``, ``force``, ``lock_wait``,
    ``engine`` ``"spark"`` with ``spark_master``: docs/results-store.md). ``data``,
    ``metrics``, ``config``, ``columns`` and ``embedding_backend`` are :func:`score`'s; a path
    or list of paths is read as ``--input`` reads it, and in-memory data is written to a
    temporary Parquet file first, which the rows' ``source`` names (a LazyFrame streams there).
    ``stats``, ``stats_by``, ``resamples`` and ``seed`` drive the statistics (defaults of
    :mod:`pipeline.stats`: 1000 resamples, seed 0); ``report`` also writes the HTML report
    (output directories only). ``pairs`` are legacy (predictions, references) JSON files,
    ``batch_rows`` the most rows scored at once, ``on_progress(stage, rows)`` reports rows
    read and scored. ``queries`` (name -> SQL over the views, output directories only) are
    answered while the views are built, beside the statistics: :attr:`Run.answers`.

    >>> import tempfile, polars as pl
    >>> frame = pl.DataFrame({"id": ["q1", "q2"], "model": "m", "question": ["?", "?"],
    ...                       "reference": ["Paris", "4"], "response": ["Paris", "5"]})
    >>> tmp = tempfile.TemporaryDirectory()
    >>> run = evaluate(frame, tmp.name, metrics="answer_em", stats=False)
    >>> run.counts
    Counts(read=2, scored=2, reused=0, rejected=0)
    >>> run.query("select model, answer_em from by_model").rows()
    [('m', 0.5)]
    >>> tmp.cleanup()
    """
    from pipeline import drivers
    from pipeline.stats import DEFAULT_RESAMPLES, DEFAULT_SEED

    if (out is None) == (store is None):
        raise ConfigError("give out (an output directory) or store (a results store)")
    if engine not in ("local", "spark"):
        raise ConfigError(f"engine is 'local' or 'spark', got {engine!r}")
    settings, _ = _settings(config, metrics=metrics, columns=columns,
                            embedding_backend=embedding_backend)
    resamples = DEFAULT_RESAMPLES if resamples is None else resamples
    seed = DEFAULT_SEED if seed is None else seed
    pair_paths = [(Path(p), Path(r)) for p, r in pairs]
    rows = batch_rows or drivers.DEFAULT_BATCH_ROWS
    with _files(data, pairs=bool(pair_paths)) as inputs:
        if out is not None:
            if engine == "spark":
                raise ConfigError("engine 'spark' writes a results store: give store=")
            if run_id is not None or force or lock_wait:
                raise ConfigError("run_id, force and lock_wait apply to store runs only")
            if report is not None:  # before the run, which checks out itself
                atomic.check_output_file(Path(report))
            summary = drivers.evaluate(
                inputs, Path(out), settings, pairs=pair_paths, batch_rows=rows,
                on_progress=on_progress, resamples=resamples, seed=seed, stats=stats,
                stats_by=stats_by, queries=queries,
            )
            run = Run(Path(out), counts=Counts(summary.n_read, summary.n_scored, 0,
                                               summary.n_rejected), answers=summary.answers)
        else:
            assert store is not None  # out is None
            root = Path(store)
            if report is not None:
                raise ConfigError("report needs an output directory (out); for a store run, "
                                  "call report() on the Run")
            atomic.check_output_dir(root)
            if engine == "spark":
                if pair_paths:
                    raise ConfigError("engine 'spark' reads Parquet files only, not pairs")
                if settings.input_labels:
                    raise ConfigError("input labels (--model, --run-label) apply to the local "
                                      "engine; give the files a model (or run) column")
                if stats_by:
                    raise ConfigError("stats_by needs statistics, which Spark runs do not "
                                      "write; call stats() on the Run")
                stored = drivers.evaluate_spark(
                    inputs, root, settings, master=spark_master, run_id=run_id,
                    lock_wait=lock_wait, force=force,
                )
            else:
                stored = drivers.evaluate_to_store(
                    inputs, root, settings, run_id=run_id, force=force,
                    lock_wait=lock_wait, pairs=pair_paths, batch_rows=rows,
                    on_progress=on_progress, resamples=resamples, seed=seed, stats=stats,
                    stats_by=stats_by,
                )
            run = Run(stored.run_dir, store=root, run_id=stored.run_id,
                      counts=Counts(stored.n_read, stored.n_scored, stored.n_reused,
                                    stored.n_rejected))
    if report is not None:
        with phase("report"):
            run.report(report)
    return run


@contextlib.contextmanager
def _files(data: Records, *, pairs: bool = False) -> Iterator[list[Path]]:
    """The records files of ``data``: its paths, or a temporary Parquet file of in-memory
    data (removed afterwards). Only ``pairs`` may stand in for records."""
    paths = _paths(data)
    if paths is not None:
        if not paths and not pairs:
            raise ConfigError("no records: give data or at least one path")
        yield [Path(path) for path in paths]
        return
    frame = _polars(data)
    with tempfile.TemporaryDirectory(prefix="rag-eval-data-") as tmp:
        target = Path(tmp) / DATA_FILE
        if isinstance(frame, pl.LazyFrame):
            frame.sink_parquet(target)
        else:
            frame.write_parquet(target)
        yield [target]


# --- runs ---------------------------------------------------------------------------------------


def open_run(path: PathLike, *, run: str | None = None) -> Run:
    """The run in the output directory ``path``, or run ``run`` of the results store ``path``
    (default: its latest committed run).

    >>> open_run("no/such/dir")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pipeline.errors.InputError: no/such/dir: no scores.parquet here; run `rag-eval evaluate ...
    """
    from pipeline.store import Store
    from pipeline.views import is_store

    root = Path(path)
    if is_store(root):
        runs = Store(root).runs()
        latest = runs.latest()
        if latest is None:
            raise InputError(f"{root}: no committed run that can be read; {runs.listing()}")
        if run is None:
            run = latest["run_id"]
        found = next((m for m in runs.committed if m["run_id"] == run), None)
        if found is None:
            raise runs.unknown(run)
        counts = found["counts"]
        return Run(
            Store(root).run_dir(run), store=root, run_id=run,
            counts=Counts(counts["read"], counts["scored"], counts["reused"], counts["rejected"]),
        )
    if run is not None:
        raise ConfigError(f"{root} is an output directory, not a results store: no run= here")
    if not (root / SCORES_FILE).is_file():
        raise InputError(f"{root}: no {SCORES_FILE} here; run `rag-eval evaluate --out {root}` "
                         "first")
    return Run(root)


@dataclass(frozen=True, init=False)
class Run:
    """One evaluation run: an output directory, or a committed run of a results store.

    ``path``: the run's directory (in a store, ``STORE/eval_run=RUN``); ``store`` and
    ``run_id``: the store and the run's name (None for an output directory). Get one from
    :func:`evaluate` or :func:`open_run`; ``Run(path)`` opens an output directory unchecked.
    A store run's files never change: :meth:`stats`, :meth:`report`, :meth:`compare` and
    :meth:`export` read it through a temporary checkout (:meth:`checkout`).
    """

    path: Path
    store: Path | None = None
    run_id: str | None = None
    _counts: Counts | None = field(default=None, repr=False, compare=False)
    _answers: Mapping[str, pl.DataFrame] = field(default_factory=dict, repr=False,
                                                 compare=False)

    def __init__(self, path: PathLike, *, store: PathLike | None = None,
                 run_id: str | None = None, counts: Counts | None = None,
                 answers: Mapping[str, pl.DataFrame] | None = None) -> None:
        object.__setattr__(self, "path", Path(path))
        object.__setattr__(self, "store", None if store is None else Path(store))
        object.__setattr__(self, "run_id", run_id)
        object.__setattr__(self, "_counts", counts)
        object.__setattr__(self, "_answers", dict(answers or {}))

    @property
    def answers(self) -> Mapping[str, pl.DataFrame]:
        """The results of :func:`evaluate`'s ``queries`` (name -> frame), as the run left its
        views; empty for a run opened otherwise."""
        return self._answers

    @property
    def scores(self) -> pl.LazyFrame:
        """The per-row scores (``scores.parquet``; a store run's partitions in its order)."""
        if self.store is None:
            return pl.scan_parquet(self.path / SCORES_FILE)
        from pipeline.io.partitioned import scan_partitions

        scan = scan_partitions(self.path / SCORES_DIR)  # the real model names, hashed or not
        return scan.select(*KEY_COLUMNS, pl.exclude(KEY_COLUMNS)).sort(SOURCE_COLUMN, ROW_COLUMN)

    @property
    def rejected_files(self) -> str:
        """The Parquet file (a glob in a store) of the rejected rows with their reasons."""
        if self.store is None:
            return os.fspath(self.path / REJECTED_FILE)
        return (self.path / REJECTED_DIR / "*.parquet").as_posix()

    @property
    def rejected(self) -> pl.DataFrame:
        """The rows that were not scored: ``source``, ``row_number``, ``id``, ``reason``,
        ``raw`` (the row as read, JSON)."""
        return pl.read_parquet(self.rejected_files, hive_partitioning=False)

    @property
    def counts(self) -> Counts:
        """Rows read, scored, reused (store runs) and rejected."""
        if self._counts is None:
            scored = self.scores.select(pl.len()).collect().item()
            rejected = pl.scan_parquet(self.rejected_files).select(pl.len()).collect().item()
            object.__setattr__(self, "_counts", Counts(scored + rejected, scored, 0, rejected))
        assert self._counts is not None
        return self._counts

    def headline(self) -> pl.DataFrame:
        """The ``headline`` view: one row per model with the main means."""
        return self.query("select * from headline order by model")

    def query(self, sql: str) -> pl.DataFrame:
        """The result of one read-only SQL statement over the run's views, under the rules of
        ``rag-eval query`` (docs/query-security.md; refused statements raise
        :class:`pipeline.views.QueryRefused`)."""
        from pipeline.views import run_query

        return run_query(self._views_root, sql, run=self.run_id)

    def stats(
        self, by: Sequence[str | Sequence[str]] = (), *, resamples: int | None = None,
        seed: int | None = None,
    ) -> Statistics:
        """Bootstrap intervals and paired model comparisons, as ``rag-eval stats``: written
        (output directory, views rebuilt) and returned. ``by``: extra slices, each columns of
        the scores (``"question_type,noise_level"`` or a tuple)."""
        from pipeline.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, write_stats
        from pipeline.views import build_views

        resamples = DEFAULT_RESAMPLES if resamples is None else resamples
        seed = DEFAULT_SEED if seed is None else seed
        if self.store is not None:
            with tempfile.TemporaryDirectory(prefix="rag-eval-stats-") as tmp:
                found = write_stats(Path(tmp), resamples=resamples, seed=seed,
                                               scores=self.scores, by=by)
                return Statistics(pl.read_parquet(found.intervals_path),
                                  pl.read_parquet(found.comparisons_path), None)
        summary = write_stats(self.path, resamples=resamples, seed=seed, by=by)
        build_views(self.path)
        return Statistics(pl.read_parquet(summary.intervals_path),
                          pl.read_parquet(summary.comparisons_path), summary)

    def report(self, path: PathLike, *, baseline: Run | PathLike | None = None,
               force: bool = False) -> Path:
        """Write the self-contained HTML report to ``path``, as ``rag-eval report``; with
        ``baseline``, a run comparison section against it (``force``: even when the runs'
        settings differ). Returns ``path``."""
        from pipeline.compare import compare
        from pipeline.report import write_report

        target = atomic.check_output_file(Path(path))
        with contextlib.ExitStack() as stack:
            directory = stack.enter_context(self._directory())
            diff = regressed = None
            if baseline is not None:
                other = stack.enter_context(_run(baseline)._directory())
                comparison = compare(other, directory, force=force)
                diff, regressed = comparison.deltas, comparison.regressed
            title = None if self.store is None else f"Evaluation report: {self.run_id}"
            written: Path = write_report(directory, target, diff=diff, regressed=regressed,
                                         title=title)
        if self.store is None:
            atomic.record_output(self.path, EXTRA_OUTPUTS_FILE, [written])
        return written

    def compare(
        self,
        baseline: Run | PathLike,
        *,
        max_drop: Mapping[str, float] | None = None,
        max_regressed_items: int | None = None,
        force: bool = False,
        resamples: int | None = None,
        seed: int | None = None,
        out: PathLike | None = None,
        item_drop: float | None = None,
    ) -> Compared:
        """This run against ``baseline``, as ``rag-eval compare BASELINE THIS``: per-slice
        deltas with intervals, regressed, new and missing items, and the regression gate
        (``max_drop``: metric, built-in or a user metric of this run -> largest allowed fall of
        a model's mean, default answer_f1 and answer_em 0.02; ``max_regressed_items``;
        ``item_drop``: an item regressed in a metric that fell by more, default
        :data:`pipeline.compare.DEFAULT_ITEM_DROP`).
        ``out``: also write the four tables there (``rag-eval compare`` writes them to
        ``THIS/compare``)."""
        from pipeline import compare as comparing
        from pipeline.stats import DEFAULT_RESAMPLES, DEFAULT_SEED

        drops = dict(comparing.DEFAULT_MAX_DROP if max_drop is None else max_drop)
        base = _run(baseline)
        check_gate_metrics(drops, self, base)
        gate = comparing.Gate(max_drop=drops, max_regressed_items=max_regressed_items)
        if out is not None:
            atomic.check_output_dir(Path(out))
        with self._directory() as mine, base._directory() as theirs:
            comparison = comparing.compare(
                theirs, mine, gate=gate, force=force,
                resamples=DEFAULT_RESAMPLES if resamples is None else resamples,
                seed=DEFAULT_SEED if seed is None else seed,
                item_drop=comparing.DEFAULT_ITEM_DROP if item_drop is None else item_drop,
            )
        if out is not None:
            target = atomic.output_dir(Path(out))
            comparing.write_comparison(comparison, target)
            if self.store is None:
                names = (comparing.DELTAS_FILE, comparing.REGRESSED_FILE, comparing.NEW_FILE,
                         comparing.MISSING_FILE)
                atomic.record_output(self.path, EXTRA_OUTPUTS_FILE,
                                     [target / name for name in names])
        return Compared(comparison, not comparison.failures)

    def metrics(self) -> dict[str, MetricSpec]:
        """The metrics of this run's scores by name, built-in ones in registry order, then the
        user-defined ones (family ``user``, kind and direction read from the signature:
        :func:`pipeline.metrics.user.scores_catalog`)."""
        from pipeline.metrics.user import scores_catalog

        if self.store is None and not (self.path / SCORES_FILE).is_file():
            raise InputError(f"{self.path}: no {SCORES_FILE} here; run `rag-eval evaluate "
                             f"--out {self.path}` first")
        scan = self.scores
        schema = scan.collect_schema()
        signatures: list[str] = []
        if "signature" in schema:
            found = scan.select(pl.col("signature").unique()).collect()
            signatures = found["signature"].drop_nulls().to_list()
        return scores_catalog(schema, signatures)

    def export(self, path: PathLike, *, format: str | None = None, layout: str = "wide",
               neutralize_formulas: bool = True) -> int:
        """Write the per-row results with their texts as one table, as ``rag-eval export``;
        return the rows written. ``format``: ``tsv``, ``csv`` or ``parquet`` (default: the
        extension of ``path``); ``layout``: ``wide`` or ``enhanced-framework``
        (docs/compat.md); ``neutralize_formulas``: quote spreadsheet formulas in text
        formats."""
        from pipeline.export import export

        target = Path(path)
        fmt = format or target.suffix.lstrip(".").lower() or "tsv"
        with self._directory() as directory:
            rows: int = export(directory, target, fmt, neutralize=neutralize_formulas,
                               layout=layout)
        return rows

    def checkout(self, out: PathLike) -> Run:
        """Copy this store run into the output directory ``out``, as ``rag-eval checkout``."""
        if self.store is None:
            raise ConfigError(f"{self.path} is an output directory, not a store run")
        from pipeline.store import checkout_run

        checkout_run(self.store, self.run_id, Path(out))
        return Run(Path(out), counts=self._counts)

    @property
    def _views_root(self) -> Path:
        return self.path if self.store is None else self.store

    @contextlib.contextmanager
    def _directory(self) -> Iterator[Path]:
        """An output directory with this run's files: its own, or a temporary checkout."""
        if self.store is None:
            yield self.path
            return
        with tempfile.TemporaryDirectory(prefix="rag-eval-run-") as tmp:
            yield self.checkout(Path(tmp) / str(self.run_id)).path


def _run(run: Run | PathLike) -> Run:
    return run if isinstance(run, Run) else Run(run)


def check_gate_metrics(names: Iterable[str], run: Run, baseline: Run, *,
                       what: str = "max_drop") -> None:
    """Raise :class:`~pipeline.config.ConfigError` (one line, naming ``what``) unless every
    name of ``names`` is a metric the regression gate can check: a built-in metric (also as
    the tables name its mean, ``abstain_rate``), or a user-defined metric that both ``run``
    and ``baseline`` scored (a metric column of both, :meth:`Run.metrics`). The line lists
    the metrics of both runs and the closest known name."""
    from pipeline.metrics.registry import REGISTRY
    from pipeline.stats import metric_name

    names = list(names)
    if all(name in REGISTRY for name in names):
        return  # the runs' files are not read for the built-in gate
    mine, theirs = run.metrics(), baseline.metrics()
    both = [name for name in mine if name in theirs]
    user = {name for name in both if mine[name].family == "user"}
    known = {*REGISTRY, *(metric_name(name) for name in REGISTRY), *user}
    listed = ", ".join(both) or "none"
    for name in names:
        if name in known:
            continue
        if name in mine or name in theirs:
            where = "this run" if name in mine else "the baseline"
            raise ConfigError(f"{what}: metric {name!r} is a column of {where} only; the gate "
                              f"compares metrics of both runs: {listed}")
        raise ConfigError(f"{what}: unknown metric {name!r}{did_you_mean(name, known)}; "
                          f"metrics of both runs: {listed}")

