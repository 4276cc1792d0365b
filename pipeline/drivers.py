"""The run drivers: an output directory (:func:`evaluate`) or a run of a results store
(:func:`evaluate_to_store`, :func:`evaluate_spark`).

They know no metric details: an engine (:mod:`pipeline.engines`) validates, scores and writes;
the drivers open the outputs atomically or the store's transaction (lock, stage, commit or
abort, views), and add the statistics (:mod:`pipeline.stats`) and the DuckDB views
(:mod:`pipeline.views`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from pipeline.config import Config
from pipeline.engines import Engine
from pipeline.engines.local import (  # noqa: F401 - re-exported: the batching rule of a run
    DEFAULT_BATCH_BYTES,
    DEFAULT_BATCH_ROWS,
    LocalEngine,
    batch_rows_for,
    stream_scores,
)
from pipeline.engines.spark import SparkEngine
from pipeline.io.atomic import (
    WORK_PREFIX,
    atomic_paths,
    clear_outputs,
    flushing,
    output_dir,
    owned_name,
    remove_stale,
)
from pipeline.io.layout import (  # noqa: F401 - re-exported for callers of the driver
    COMPARISONS_FILE,
    DERIVED_FILES,
    EXTRA_OUTPUTS_FILE,
    INTERVALS_FILE,
    MODEL_PARTITION,
    REJECTED_DIR,
    REJECTED_FILE,
    SCORES_DIR,
    SCORES_FILE,
    TEXT_COLUMNS,
    TEXTS_FILE,
)
from pipeline.io.parquet_options import ContractWriter
from pipeline.io.partitioned import scan_partitions
from pipeline.metrics.user import load_plugins
from pipeline.metrics.user import resolve as resolve_metrics
from pipeline.phases import phase
from pipeline.schema import KEY_COLUMNS
from pipeline.scoring import BatchScorer, prepare_inputs, score_frame  # noqa: F401 - re-exported
from pipeline.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, write_stats
from pipeline.store import Store, build_manifest, new_run_id
from pipeline.views import build_and_answer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

#: Values inside a rejection reason that differ from row to row (quoted text, lists, numbers),
#: masked by :func:`reason_kind`.
_REASON_VALUES = (
    (r'"(?:[^"\\]|\\.)*"', '"..."'),
    (r"'[^']*'", "'...'"),
    (r"\[[^\]]*\]", "[...]"),
    (r"\b[0-9]+(?:\.[0-9]+)?\b", "N"),
)


def reason_kind(reason: pl.Expr) -> pl.Expr:
    """A rejection reason with the values that differ from row to row masked (``"..."``,
    ``'...'``, ``[...]``, ``N``): the kind of problem, for counting rows by it.

    >>> pl.select(reason_kind(pl.lit("duplicate id 'q7' (first at row 3)"))).item()
    "duplicate id '...' (first at row N)"
    """
    for pattern, mask in _REASON_VALUES:
        reason = reason.str.replace_all(pattern, mask)
    return reason


def rejection_reasons(rejected: str | Path) -> pl.DataFrame:
    """Rows of the rejected-rows file(s) ``rejected`` (a path or glob) by kind of reason
    (:func:`reason_kind`): ``reason`` and ``rows``, most rows first, then by reason."""
    return (
        pl.scan_parquet(rejected, hive_partitioning=False)
        .group_by(reason_kind(pl.col("reason").fill_null("")).alias("reason"))
        .agg(pl.len().cast(pl.Int64).alias("rows"))
        .sort(["rows", "reason"], descending=[True, False])
        .collect()
    )


@dataclass(frozen=True)
class RunSummary:
    """What an evaluation run read, scored and wrote."""

    n_read: int
    n_scored: int
    n_rejected: int
    metrics: tuple[str, ...]
    out_dir: Path
    #: The results of the run's ``queries`` over its views (name -> frame).
    answers: Mapping[str, pl.DataFrame] = field(default_factory=dict)

    @property
    def rejected_files(self) -> Path:
        """The rejected rows of the run, with their reasons."""
        return self.out_dir / REJECTED_FILE


def evaluate(
    inputs: Sequence[Path],
    out_dir: Path,
    config: Config,
    *,
    pairs: Sequence[tuple[Path, Path]] = (),
    batch_rows: int = DEFAULT_BATCH_ROWS,
    on_progress: Callable[[str, int], None] | None = None,
    build_db: bool = True,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    stats: bool = True,
    stats_by: Sequence[str | Sequence[str]] = (),
    queries: Mapping[str, str] | None = None,
) -> RunSummary:
    """Read, validate and score ``inputs``; write scores, rejections, statistics and the views.

    ``queries`` (name -> SQL over the views, trusted) are answered while the views are built
    (:func:`pipeline.views.build_and_answer`), in :attr:`RunSummary.answers`; none without
    ``build_db``.

    Streams in batches (:mod:`pipeline.engines.local`), so memory does not grow with the input.
    Every output is written atomically. ``on_progress(stage, rows)`` reports rows read
    (``"reading"``) and scored (``"scoring"``); the CLI drives its progress bars with it.
    ``resamples`` and ``seed`` drive the bootstrap intervals and paired comparisons of
    :func:`pipeline.stats.write_stats` (per-question sums in bounded memory), which
    ``stats=False`` skips; ``stats_by`` adds slices to its default ones (``by``).

    ``out_dir`` holds one run: when the new scores are in place, what an earlier run made of
    its scores (statistics, views, the files listed in :data:`EXTRA_OUTPUTS_FILE`) is gone,
    and only what this run writes comes back. Temporary files of killed runs into ``out_dir``
    are removed first (:func:`pipeline.io.atomic.remove_stale`). An ``out_dir`` that is a file
    or cannot be written raises :class:`pipeline.io.atomic.OutputPathError`.
    """
    config = load_plugins(config)
    specs = resolve_metrics(config)
    output_dir(out_dir)
    remove_stale(out_dir)
    schema = BatchScorer.for_config(config, specs=specs).output_schema
    with (
        atomic_paths(out_dir / SCORES_FILE, out_dir / REJECTED_FILE, out_dir / TEXTS_FILE) as (
            scores_tmp, rejected_tmp, texts_tmp),
        ContractWriter(scores_tmp, schema) as writer,
        flushing(scores_tmp, texts_tmp),
        phase("engine"),
    ):
        result, _ = stream_scores(
            inputs, pairs, config, specs,
            work_dir=out_dir / owned_name(WORK_PREFIX),
            sink=writer, rejected_target=rejected_tmp, texts_target=texts_tmp,
            batch_rows=batch_rows, on_progress=on_progress,
        )
        # The new files replace the old ones when this block ends; what the old scores made
        # goes first, so that no moment mixes two runs.
        clear_outputs(out_dir, DERIVED_FILES, EXTRA_OUTPUTS_FILE)
    log.info(
        "read %d rows: %d scored, %d rejected; %d metrics", result.n_read, result.n_scored,
        result.n_rejected, len(specs),
    )

    def statistics() -> None:
        with phase("statistics"):
            write_stats(out_dir, resamples=resamples, seed=seed, by=stats_by)

    answers: dict[str, pl.DataFrame] = {}
    if build_db:  # the statistics beside the views that do not read them
        with phase("views"):
            _, answers = build_and_answer(out_dir, queries or {},
                                          statistics=statistics if stats else None)
    elif stats:
        statistics()
    return RunSummary(
        n_read=result.n_read,
        n_scored=result.n_scored,
        n_rejected=result.n_rejected,
        metrics=tuple(spec.name for spec in specs),
        out_dir=out_dir,
        answers=answers,
    )


@dataclass(frozen=True)
class StoreRunSummary:
    """What a run added to a results store."""

    run_id: str
    run_dir: Path
    n_read: int
    n_scored: int
    n_reused: int
    n_rejected: int
    metrics: tuple[str, ...]
    reused_from: str | None

    @property
    def rejected_files(self) -> str:
        """The rejected rows of the run, with their reasons (a Parquet glob)."""
        return (self.run_dir / REJECTED_DIR / "*.parquet").as_posix()


def evaluate_to_store(
    inputs: Sequence[Path],
    store_root: Path,
    config: Config,
    *,
    engine: Engine | None = None,
    run_id: str | None = None,
    force: bool = False,
    lock_wait: float = 0.0,
    pairs: Sequence[tuple[Path, Path]] = (),
    batch_rows: int = DEFAULT_BATCH_ROWS,
    on_progress: Callable[[str, int], None] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    stats: bool = True,
    stats_by: Sequence[str | Sequence[str]] = (),
) -> StoreRunSummary:
    """Score ``inputs`` as a new run of the results store at ``store_root``.

    ``engine`` writes the run (default: the local engine with ``pairs``, ``batch_rows`` and
    ``on_progress``). Rows whose content (``row_hash``) the newest run with the same
    signature and metrics already scored are copied from it, not scored again, unless
    ``force``. The run is written inside the store's transaction
    (:meth:`pipeline.store.Store.transaction`): staged, then committed by one rename, with the
    views of the store rebuilt; an exception records a failed manifest and leaves no partial
    run.
    """
    writer: Engine = engine or LocalEngine(
        pairs=pairs, batch_rows=batch_rows, on_progress=on_progress
    )
    config = load_plugins(config)
    specs = resolve_metrics(config)
    metrics = tuple(spec.name for spec in specs)
    store = Store(Path(store_root))
    manifest = build_manifest(
        [*inputs, *(p for pair in pairs for p in pair)], config, metrics, engine=writer.name
    )
    with store.transaction(run_id or new_run_id(), manifest, force=force,
                           lock_wait=lock_wait) as run:
        previous = run.previous
        with phase("engine"):
            result = writer.write_run(
                inputs, config, specs, run.staged.dir, previous_dir=run.previous_dir,
                previous_corpus=previous.get("corpus_digest") if previous else None,
            )
        if stats:
            _store_stats(run.staged.dir, resamples=resamples, seed=seed, by=stats_by,
                         columns=(*KEY_COLUMNS, *metrics, "signature"))
        run.finish(counts=result.counts, corpus_digest=result.corpus_digest)
    assert run.run_dir is not None
    return StoreRunSummary(
        run_id=run.staged.run_id, run_dir=run.run_dir, n_read=result.n_read,
        n_scored=result.n_scored, n_reused=result.n_reused, n_rejected=result.n_rejected,
        metrics=metrics, reused_from=previous["run_id"] if previous else None,
    )


def _store_stats(run_dir: Path, *, resamples: int, seed: int,
                 by: Sequence[str | Sequence[str]], columns: Sequence[str]) -> None:
    """The statistics of a staged store run. They serve readers only (``rag-eval stats``
    recomputes them from a checkout), so a failure (an error, not an interrupt) is a warning:
    the run is committed without them, and no partial statistics file stays behind."""
    scores = scan_partitions(run_dir / SCORES_DIR).select(*columns)
    try:
        with phase("statistics"):
            write_stats(run_dir, resamples=resamples, seed=seed, scores=scores, by=by)
    except Exception as exc:  # the scores stand; the statistics are recomputed on demand
        for name in (INTERVALS_FILE, COMPARISONS_FILE):
            (run_dir / name).unlink(missing_ok=True)
        log.warning("the statistics of the run failed (%s: %s); it is committed without them: "
                    "`rag-eval checkout` it and run `rag-eval stats` on the checkout",
                    type(exc).__name__, exc)


def evaluate_spark(
    inputs: Sequence[Path],
    store_root: Path,
    config: Config,
    *,
    spark: SparkSession | None = None,
    master: str = "local[2]",
    run_id: str | None = None,
    lock_wait: float = 0.0,
    force: bool = False,
) -> StoreRunSummary:
    """Evaluate Parquet ``inputs`` on Spark into a run of the results store at ``store_root``.

    The Spark counterpart of :func:`evaluate_to_store` (the same transaction, scores, rejected
    rows, texts and manifest fields; ``engine`` is ``"spark"``; no statistics). Without
    ``spark``, a local session on ``master`` is started and stopped. Every input is checked
    before the store is locked.
    """
    engine = SparkEngine(spark=spark, master=master)
    engine.check(inputs, config)
    return evaluate_to_store(
        inputs, store_root, config, engine=engine, run_id=run_id, force=force,
        lock_wait=lock_wait, stats=False,
    )
