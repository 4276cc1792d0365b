"""The local engine: a run over the inputs on this machine, in bounded memory.

One pass when no selected metric needs corpus statistics and no input repeats a key
(:func:`_single_pass`); otherwise two passes, as follows.

Pass 1 reads each input in chunks (:func:`pipeline.validate.iter_validated`), validates them,
appends valid records (with their ``row_hash``) to a work file and rejected rows to another, and
spills the distinct texts the corpus statistics count (:class:`pipeline.scoring.CorpusStatsBuilder`
with a spill file). DuckDB then counts the document frequencies, finds duplicate keys over whole
files and, in an incremental run, splits the records into those whose ``row_hash`` a compatible
earlier run already scored (their scores are copied) and those to score. Pass 2 streams the
records to score through :class:`pipeline.scoring.BatchScorer`, batch by batch, into a
:class:`ScoreSink`.

Memory: one input chunk (``chunk_rows``) in pass 1; one scoring batch (``batch_rows``, fewer for
long texts, see :func:`batch_rows_for`) with its intermediate token lists in pass 2; between
them, DuckDB's set operations under ``duckdb_memory`` (spilling to the work directory beyond
it) and the vocabulary's document frequencies. Nothing is held per input row.
"""

from __future__ import annotations

import functools
import logging
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config import Config
from pipeline.engines import STALE_NOTE, EngineRun, duplicate_rows_sql, first_scored_rows_sql
from pipeline.io.background import BackgroundWriter, Prefetch
from pipeline.io.layout import MODEL_PARTITION, REJECTED_DIR, SCORES_DIR, TEXT_COLUMNS, TEXTS_DIR
from pipeline.io.other_columns import STRING_VIEWS, union_writer
from pipeline.io.parquet_options import parquet_writer, physical_table
from pipeline.io.partitioned import PartitionedWriter, partition_dir
from pipeline.io.readers import parquet_keys_unique
from pipeline.io.sql import sql_string
from pipeline.metrics.registry import MetricSpec
from pipeline.phases import PhaseTimer
from pipeline.schema import REJECTED_SCHEMA, ROW_COLUMN, SOURCE_COLUMN
from pipeline.scoring import (
    RECORD_BATCH_SCHEMA,
    ROW_HASH,
    TEXT_BYTES_COLUMNS,
    BatchScorer,
    CorpusStats,
    CorpusStatsBuilder,
    candidate_count,
    corpus_dependent,
    needs_corpus,
    process_embedder,
    row_hashes,
)
from pipeline.text.kernels.buffers import start_kernels_in_background
from pipeline.validate import DUPLICATE_REASON, KEY, Validated, iter_raw, iter_validated

log = logging.getLogger(__name__)

#: Most rows scored per batch; bounds the memory used by intermediate token lists.
DEFAULT_BATCH_ROWS = 100_000
#: Most text bytes per batch, of the texts the metrics read (of question, reference, response
#: and contexts: :func:`pipeline.scoring.scored_texts`), so batches of long texts hold fewer
#: rows: intermediate memory grows with the text, not only the row count.
DEFAULT_BATCH_BYTES = 32 * 2**20
#: Rows read and validated at a time in pass 1.
DEFAULT_CHUNK_ROWS = 100_000
#: DuckDB's memory limit for the duplicate check and the incremental split (it spills beyond).
DEFAULT_DUCKDB_MEMORY = "512MB"

_RECORDS = "records.parquet"
_REJECTED = "rejected.parquet"
_REUSED = "reused.parquet"
_DUPLICATE_RAW = "duplicate-raw.parquet"
_POSITION = "__position"
_TEXT_WORDS = "text-words.parquet"
_EXTRAS = "other-columns.parquet"
#: The columns of ``texts.parquet`` before the inputs' other columns, with their dtypes.
TEXTS_BASE = pl.DataFrame(schema=RECORD_BATCH_SCHEMA).select(TEXT_COLUMNS).schema
_KEY_SCHEMA = {SOURCE_COLUMN: pl.String(), ROW_COLUMN: pl.Int64()}


class ScoreSink(Protocol):
    """Where scored batches go: one file, or a partitioned store directory. Each table is in
    the :func:`~pipeline.io.parquet_options.physical_schema` of the scorer's output schema,
    as a :class:`~pipeline.io.parquet_options.ContractWriter` of it takes them."""

    def write(self, table: pa.Table) -> None: ...


@dataclass(frozen=True)
class StreamResult:
    """Row accounting of one streaming run."""

    n_read: int
    n_scored: int
    n_reused: int
    n_rejected: int


@dataclass(frozen=True)
class _FirstPass:
    """What pass 1 leaves: valid records (with ``row_hash``) and rejected rows in work files."""

    records: Path
    rejected: Path
    #: ``source``, ``row_number`` and the inputs' other columns (kept) of valid records, when
    #: an input kept any (:mod:`pipeline.io.other_columns`).
    extras: Path | None
    n_read: int
    n_valid: int
    #: UTF-8 bytes of each of :data:`~pipeline.scoring.TEXT_BYTES_COLUMNS` over the valid rows.
    text_bytes: dict[str, int]
    scorer: BatchScorer


@dataclass(frozen=True)
class _Split:
    """What DuckDB leaves for pass 2 between the passes."""

    #: Earlier scores of reused records (incremental runs), sorted like the records, else None.
    reused: Path | None
    #: (source, row_number) of duplicate rows, which pass 2 skips (None when there are none).
    duplicates: pl.DataFrame | None
    n_duplicates: int
    #: Input file -> its position in the run (the order of the records work file).
    positions: dict[str, int]


def text_bytes(records: pl.DataFrame,
               columns: Sequence[str] = TEXT_BYTES_COLUMNS) -> dict[str, int]:
    """UTF-8 bytes of each of ``columns`` (of :data:`~pipeline.scoring.TEXT_BYTES_COLUMNS`;
    ``contexts`` a list of texts) over ``records``."""
    if records.height == 0:
        return dict.fromkeys(columns, 0)
    sizes = records.select(
        (pl.col(name).list.eval(pl.element().str.len_bytes()).list.sum() if name == "contexts"
         else pl.col(name).str.len_bytes()).fill_null(0).sum().alias(name)
        for name in columns
    )
    return {name: int(sizes[name].item()) for name in columns}


def batch_rows_for(
    records: pl.DataFrame, batch_rows: int = DEFAULT_BATCH_ROWS,
    batch_bytes: int = DEFAULT_BATCH_BYTES, texts: Sequence[str] = TEXT_BYTES_COLUMNS,
) -> int:
    """Rows per batch: ``batch_rows``, fewer when rows average more than
    ``batch_bytes / batch_rows`` bytes of the ``texts`` the metrics read
    (:attr:`~pipeline.scoring.BatchScorer.scored_texts`; default: all of them)."""
    n_bytes = sum(text_bytes(records, texts).values())
    return _batch_rows(records.height, n_bytes, batch_rows, batch_bytes)


def _batch_rows(rows: int, n_bytes: int, batch_rows: int, batch_bytes: int) -> int:
    if batch_rows < 1 or batch_bytes < 1:
        raise ValueError("batch_rows and batch_bytes must be positive")
    if rows == 0:
        return batch_rows
    per_row = max(n_bytes / rows, 1.0)
    return max(1, min(batch_rows, int(batch_bytes // per_row)))


def stream_scores(
    inputs: Sequence[Path],
    pairs: Sequence[tuple[Path, Path]],
    config: Config,
    specs: Sequence[MetricSpec],
    *,
    work_dir: Path,
    sink: ScoreSink,
    rejected_target: Path,
    texts_target: Path,
    previous_scores: str | None = None,
    previous_corpus: str | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    duckdb_memory: str = DEFAULT_DUCKDB_MEMORY,
    on_progress: Callable[[str, int], None] | None = None,
) -> tuple[StreamResult, BatchScorer]:
    """Validate, score and write ``inputs``; ``previous_scores`` (a Parquet glob of a compatible
    run's scores, hive-partitioned) enables incremental re-scoring.

    Incremental rule: a record whose ``row_hash`` the previous run scored keeps that run's
    scores, except the corpus-dependent metrics (:func:`pipeline.scoring.corpus_dependent`),
    which are recomputed for every reused row when this run's corpus digest differs from
    ``previous_corpus`` (the previous run's :meth:`CorpusStats.digest`).

    Writes scores into ``sink``, rejected rows to ``rejected_target`` and the texts behind the
    scores to ``texts_target``, with the inputs' other columns that ``config.keep_columns``
    keeps after them (:mod:`pipeline.io.other_columns`: their union over the inputs) (both
    complete files in input order, file then row, written by
    DuckDB or polars into temporary paths the caller renames); scores come in the same order,
    so identical runs write the same rows in the same order. ``work_dir`` holds intermediate
    files; it is removed.
    ``on_progress(stage, rows)`` reports rows read and validated (``"reading"``) and rows
    scored or reused (``"scoring"``), for progress bars.
    """
    start_kernels_in_background()
    if previous_scores is None and not needs_corpus(config, specs) and not pairs:
        # The single pass starts reading before the key check says it may run: the check reads
        # the key columns of every file (0.05-0.13 s at 1M rows) beside the first chunk.
        timer = PhaseTimer()
        chunks = _read_ahead(inputs, config, chunk_rows, timer)
        try:
            unique = all(parquet_keys_unique(path, config, KEY) for path in inputs)
        except BaseException:
            chunks.close()
            raise
        if unique:
            log.info("single pass: no corpus statistics needed and no repeated key in the inputs")
            try:
                return _single_pass(chunks, timer, config, specs, sink, rejected_target,
                                    texts_target, batch_rows, on_progress)
            finally:
                chunks.close()
        chunks.close()  # a repeated key: the chunks read so far are dropped
    work_dir.mkdir(parents=True, exist_ok=True)
    try:
        timer = PhaseTimer()
        with timer.phase("read+validate"):
            first = _read_and_validate(
                inputs, pairs, config, specs, work_dir, chunk_rows, duckdb_memory, on_progress
            )
        n_bytes = sum(first.text_bytes[name] for name in first.scorer.scored_texts)
        rows_per_batch = _batch_rows(first.n_valid, n_bytes, batch_rows, DEFAULT_BATCH_BYTES)
        log.info(
            "pass 1: %d rows read, %d valid; scoring in batches of %d rows", first.n_read,
            first.n_valid, rows_per_batch,
        )
        # Row order of the work files is not needed (the outputs are keyed or sorted explicitly);
        # without it DuckDB streams larger-than-memory joins and copies.
        settings: dict[str, str | bool | int | float | list[str]] = {
            "memory_limit": duckdb_memory, "threads": 2, "preserve_insertion_order": False,
        }
        with timer.phase("corpus"), duckdb.connect(config=settings) as db:
            split = _split(db, first, inputs, pairs, config, work_dir, chunk_rows,
                           previous_scores, rejected_target, texts_target)
        scorer = first.scorer
        with timer.phase("scoring"):
            n_scored, n_reused = _score_records(
                first, split, sink, specs, previous_corpus, rows_per_batch, on_progress
            )
        n_rejected = first.n_read - first.n_valid + split.n_duplicates
        result = StreamResult(n_read=first.n_read, n_scored=n_scored, n_reused=n_reused,
                              n_rejected=n_rejected)
        if n_scored + n_reused + n_rejected != first.n_read:  # pragma: no cover - invariant
            raise RuntimeError(f"row accounting broken: {result}")
        _log_embeddings(scorer, n_scored)
        return result, scorer
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


def _read_ahead(
    inputs: Sequence[Path], config: Config, chunk_rows: int, timer: PhaseTimer
) -> Prefetch[Validated]:
    """The validated chunks of ``inputs``, each with its ``row_hash``, read and hashed on a
    background thread (two chunks ahead), timed as ``read+validate`` in ``timer``."""

    def validated() -> Iterator[Validated]:
        chunks = iter_validated(inputs, (), config, chunk_rows)
        while True:
            start = time.perf_counter()
            chunk = next(chunks, None)
            if chunk is not None:  # hashed here, on the reading thread, to offload scoring
                chunk = replace(chunk, records=chunk.records.with_columns(
                    row_hashes(chunk.records)))
            timer.add("read+validate", time.perf_counter() - start)
            if chunk is None:
                return
            yield chunk

    return Prefetch(validated(), depth=2)


def _single_pass(
    chunks: Prefetch[Validated],
    timer: PhaseTimer,
    config: Config,
    specs: Sequence[MetricSpec],
    sink: ScoreSink,
    rejected_target: Path,
    texts_target: Path,
    batch_rows: int,
    on_progress: Callable[[str, int], None] | None,
) -> tuple[StreamResult, BatchScorer]:
    """Score and write each chunk of ``chunks`` (:func:`_read_ahead`) once: no work files, no
    second read.

    Valid when no selected metric needs corpus statistics, the run is not incremental and no
    input repeats a key (:func:`pipeline.io.readers.parquet_keys_unique`), so no row can turn
    out a duplicate later. The candidate count is taken per batch: it decides how many
    reference columns are compared, never a value. Rejected rows and texts are written in
    input order (file, then row).
    """
    base = BatchScorer.for_config(config, specs=specs)
    schema = base.output_schema
    scorers: dict[int, BatchScorer] = {}
    n_read = n_valid = 0
    rejected_schema = pl.DataFrame(schema=REJECTED_SCHEMA).to_arrow().schema

    def timed_write(write: Callable[[pa.Table], object], table: pa.Table) -> Callable[[], None]:
        def run() -> None:
            start = time.perf_counter()
            write(table)
            timer.add("writing", time.perf_counter() - start)

        return run

    # Three threads overlap: the next chunk is read and validated while this one is scored,
    # and the previous scores are written (in order) meanwhile.
    with (
        parquet_writer(rejected_target, rejected_schema) as rejected_out,
        union_writer(texts_target, TEXTS_BASE) as texts_out,
        BackgroundWriter() as background,
    ):
        for chunk in chunks:
            n_read += chunk.n_read
            valid = chunk.records
            n_valid += valid.height
            rejected = chunk.rejected.to_arrow().cast(rejected_schema)
            texts = texts_out.conform(
                valid.select(TEXT_COLUMNS).hstack(chunk.extras.get_columns()), chunk.source
            )
            background.submit(timed_write(rejected_out.write_table, rejected))
            background.submit(timed_write(texts_out.write, texts))
            rows = batch_rows_for(valid, batch_rows, texts=base.scored_texts)
            for offset in range(0, valid.height, rows):
                batch = valid.slice(offset, rows)
                start = time.perf_counter()
                stats = CorpusStats(n_candidates=candidate_count(batch))
                scorer = scorers.setdefault(stats.n_candidates, replace(base, stats=stats))
                scores = physical_table(scorer.score_frame(batch), schema)
                timer.add("scoring", time.perf_counter() - start)
                background.submit(timed_write(sink.write, scores))
                if on_progress is not None:
                    on_progress("scoring", batch.height)
            if on_progress is not None:
                on_progress("reading", chunk.n_read)
    timer.log_all(("read+validate", "scoring", "writing"))
    log.info("single pass: %d rows read, %d valid", n_read, n_valid)
    result = StreamResult(n_read=n_read, n_scored=n_valid, n_reused=0,
                          n_rejected=n_read - n_valid)
    _log_embeddings(base, n_valid)
    return result, base


def _log_embeddings(scorer: BatchScorer, rows: int) -> None:
    """The run's embedding totals (texts and tokens encoded per row, texts/s, tokens/s)."""
    if scorer.embeds:
        process_embedder(scorer.config).log_total(rows=rows)


def _score_records(
    first: _FirstPass,
    split: _Split,
    sink: ScoreSink,
    specs: Sequence[MetricSpec],
    previous_corpus: str | None,
    rows_per_batch: int,
    on_progress: Callable[[str, int], None] | None,
) -> tuple[int, int]:
    """Pass 2: score the records batch by batch, copying the earlier scores of reused ones
    (their corpus-dependent metrics recomputed when the corpus changed); (scored, reused)."""
    scorer = first.scorer
    stale: tuple[str, ...] = ()
    earlier = None
    if split.reused is not None:
        earlier = _OrderedScores(split.reused, rows_per_batch, split.positions)
        stale = () if scorer.stats.digest() == previous_corpus else corpus_dependent(specs)
        if stale:
            log.warning(STALE_NOTE, ", ".join(stale))
    n_scored = n_reused = 0
    # The next batch is read while this one is scored; scores are written (in order) meanwhile.
    with BackgroundWriter() as background:
        for frame in Prefetch(_frames(first.records, rows_per_batch)):
            if split.duplicates is not None:
                frame = frame.join(split.duplicates, on=[SOURCE_COLUMN, ROW_COLUMN], how="anti")
            done = 0
            if earlier is not None and frame.height:
                reused, frame = earlier.match(frame)
                if reused.height:
                    scores = scorer.refresh(reused, stale).select(scorer.output_schema.names)
                    table = physical_table(scores, scorer.output_schema)
                    background.submit(functools.partial(sink.write, table))
                    n_reused += reused.height
                    done += reused.height
            if frame.height:
                table = physical_table(scorer.score_frame(frame), scorer.output_schema)
                background.submit(functools.partial(sink.write, table))
            n_scored += frame.height
            if on_progress is not None:
                on_progress("scoring", done + frame.height)
    return n_scored, n_reused


def _read_and_validate(
    inputs: Sequence[Path],
    pairs: Sequence[tuple[Path, Path]],
    config: Config,
    specs: Sequence[MetricSpec],
    work_dir: Path,
    chunk_rows: int,
    duckdb_memory: str,
    on_progress: Callable[[str, int], None] | None,
) -> _FirstPass:
    """Pass 1: validate chunk by chunk, append to the work files, accumulate corpus stats."""
    records_path, rejected_path = work_dir / _RECORDS, work_dir / _REJECTED
    extras_path = work_dir / _EXTRAS
    stats = CorpusStatsBuilder(
        config, tuple(specs), spill_path=work_dir / _TEXT_WORDS, duckdb_memory=duckdb_memory
    )
    n_read = n_valid = 0
    n_bytes = dict.fromkeys(TEXT_BYTES_COLUMNS, 0)
    # The work file is read back by polars and DuckDB only: written from polars' own string
    # views, without copying every text into Arrow's large strings first.
    records_schema = pl.DataFrame(schema=RECORD_BATCH_SCHEMA).with_columns(
        pl.lit(None, pl.Binary).alias(ROW_HASH)
    ).to_arrow(compat_level=STRING_VIEWS).schema
    rejected_schema = pl.DataFrame(schema=REJECTED_SCHEMA).to_arrow().schema
    with (
        parquet_writer(records_path, records_schema) as records_out,
        parquet_writer(rejected_path, rejected_schema) as rejected_out,
        union_writer(extras_path, _KEY_SCHEMA) as extras_out,
    ):
        for chunk in Prefetch(iter_validated(inputs, pairs, config, chunk_rows)):
            n_read += chunk.n_read
            valid = chunk.records
            n_valid += valid.height
            for name, size in text_bytes(valid).items():
                n_bytes[name] += size
            stats.add(valid)
            records_out.write_table(
                valid.with_columns(row_hashes(valid)).to_arrow(compat_level=STRING_VIEWS)
                .cast(records_schema)
            )
            rejected_out.write_table(chunk.rejected.to_arrow().cast(rejected_schema))
            if chunk.extras.width:  # rows of inputs without other columns: null in the texts
                keyed = valid.select(SOURCE_COLUMN, ROW_COLUMN).hstack(
                    chunk.extras.get_columns()
                )
                extras_out.write(extras_out.conform(keyed, chunk.source))
            if on_progress is not None:
                on_progress("reading", chunk.n_read)
    return _FirstPass(
        records=records_path, rejected=rejected_path,
        extras=extras_path if extras_out.columns else None, n_read=n_read, n_valid=n_valid,
        text_bytes=n_bytes, scorer=BatchScorer.for_config(config, stats.result(), specs),
    )


def _split(
    db: duckdb.DuckDBPyConnection,
    first: _FirstPass,
    inputs: Sequence[Path],
    pairs: Sequence[tuple[Path, Path]],
    config: Config,
    work_dir: Path,
    chunk_rows: int,
    previous_scores: str | None,
    rejected_target: Path,
    texts_target: Path,
) -> _Split:
    """Between the passes, in DuckDB: duplicate keys over whole files, the final rejected and
    texts files, and (incremental runs) the split into reused and to-score records."""
    db.execute(f"set temp_directory = '{_sql_path(work_dir / 'duckdb.tmp')}'")
    db.execute(
        "create view records as select * from "
        f"read_parquet('{_sql_path(first.records)}', hive_partitioning = false)"
    )
    n_duplicates = _find_duplicates(db)
    log.info("duplicate keys over whole files: %d", n_duplicates)
    raw_path = work_dir / _DUPLICATE_RAW
    if n_duplicates:
        _write_duplicate_raw(db, inputs, pairs, config, chunk_rows, raw_path)
    sources = [str(path) for path in inputs] + [str(pred) for pred, _ in pairs]
    _write_rejected(db, first.rejected, raw_path if n_duplicates else None, sources,
                    rejected_target)
    # In input order (file, then row), as the single pass writes them: the scan of the work
    # file runs on several threads, so without the sort the order changes from run to run.
    others = ""
    if first.extras is not None:
        others = (
            ", e.* exclude (source, row_number) from kept k left join read_parquet("
            f"'{_sql_path(first.extras)}', hive_partitioning = false) e "
            "on e.source = k.source and e.row_number = k.row_number"
        )
    _copy(
        db,
        f"select {', '.join(f'k.{name}' for name in TEXT_COLUMNS)}"
        f"{others or ' from kept k'} "
        f"left join ({_positions_sql(sources)}) files on files.source = k.source "
        "order by files.position, k.source, k.row_number",
        texts_target,
    )
    log.debug("rejected rows and texts written")
    positions = {source: position for position, source in enumerate(sources)}
    duplicates = db.sql("select source, row_number from duplicates").pl() if n_duplicates else None
    reused = None
    if previous_scores is not None:
        reused = work_dir / _REUSED
        n_reused = _split_incremental(db, previous_scores, first.scorer, positions, reused)
        log.info("incremental: %d of %d records reuse earlier scores", n_reused,
                 first.n_valid - n_duplicates)
    return _Split(reused=reused, duplicates=duplicates, n_duplicates=n_duplicates,
                  positions=positions)


def _frames(path: Path, rows: int) -> Iterator[pl.DataFrame]:
    """``path`` (Parquet) as polars frames of at most ``rows`` rows (slices of one lazy scan:
    flat memory, where pyarrow's batch iterator grows with the file)."""
    n_rows = pq.ParquetFile(path).metadata.num_rows
    scan = pl.scan_parquet(path, hive_partitioning=False)
    for offset in range(0, n_rows, rows):
        yield scan.slice(offset, rows).collect()


def _sql_path(path: Path) -> str:
    return sql_string(str(path))


def _copy(db: duckdb.DuckDBPyConnection, query: str, target: Path) -> None:
    db.execute(
        f"copy ({query}) to '{_sql_path(target)}' (format parquet, compression zstd)"
    )


def _find_duplicates(db: duckdb.DuckDBPyConnection) -> int:
    """Create ``duplicates`` (rows whose key an earlier row of the same file holds) and ``kept``."""
    db.execute(f"create temp table duplicates as {duplicate_rows_sql('records')}")
    db.execute(
        "create view kept as select * from records r "
        "anti join duplicates d using (source, row_number)"
    )
    return int(db.sql("select count(*) from duplicates").fetchall()[0][0])


def _write_duplicate_raw(
    db: duckdb.DuckDBPyConnection, inputs: Sequence[Path], pairs: Sequence[tuple[Path, Path]],
    config: Config, chunk_rows: int, target: Path,
) -> None:
    """The ``raw`` JSON of every duplicate row, re-read from its file (as validation writes it)."""
    rows = db.sql("select source, row_number from duplicates").pl()
    schema = pa.schema([("source", pa.string()), ("row_number", pa.int64()), ("raw", pa.string())])
    with parquet_writer(target, schema) as writer:
        for part in iter_raw(inputs, pairs, config, chunk_rows, rows):
            writer.write_table(part.to_arrow().cast(schema))


def _positions_sql(sources: Sequence[str]) -> str:
    """A relation of ``source`` and its ``position`` in the run, to sort rows in input order."""
    return " union all ".join(
        f"select '{sql_string(source)}' as source, {position} as position"
        for position, source in enumerate(sources)
    ) or "select null::varchar as source, 0 as position where false"


def _write_rejected(
    db: duckdb.DuckDBPyConnection, rejected: Path, duplicate_raw: Path | None,
    sources: Sequence[str], target: Path,
) -> None:
    """Rows rejected in pass 1 and duplicate keys, in input order (file, then row)."""
    duplicates = ""
    if duplicate_raw is not None:
        duplicates = f"""union all
        select d.source, d.row_number, d.id,
               format('{sql_string(DUPLICATE_REASON)}', d.id, d.first_row) as reason, r.raw
        from duplicates d
        join read_parquet('{_sql_path(duplicate_raw)}', hive_partitioning = false) r
            using (source, row_number)"""
    _copy(
        db,
        f"""select rejected.* from (
            select * from read_parquet('{_sql_path(rejected)}', hive_partitioning = false)
            {duplicates}
        ) rejected
        left join ({_positions_sql(sources)}) files using (source)
        order by files.position, rejected.source, rejected.row_number""",
        target,
    )


def _split_incremental(
    db: duckdb.DuckDBPyConnection, previous: str, scorer: BatchScorer,
    positions: dict[str, int], target: Path,
) -> int:
    """Write the earlier scores of every kept record whose ``row_hash`` the previous run
    scored to ``target``, with the record's ``source`` and ``row_number``, sorted like the
    records work file (input position, then row); return how many.

    Every join builds on narrow tables (hashes and keys only), so DuckDB streams the wide
    previous scores past them; a hash the previous run scored twice (identical records in two
    files) takes the scores of its first row.
    """
    # union_by_name: files of hashed model partitions carry ``model_name`` besides the others.
    scan = (
        f"read_parquet('{sql_string(previous)}', hive_partitioning = true, "
        "union_by_name = true, hive_types = {'model': varchar, 'eval_run': varchar})"
    )
    order = " union all ".join(
        f"select '{sql_string(source)}' as source, {position} as position"
        for source, position in positions.items()
    )
    db.execute(f"create temp table previous_first as {first_scored_rows_sql(scan)}")
    db.execute(
        "create temp table reuse as select k.row_hash, k.source, k.row_number, o.position "
        f"from kept k semi join previous_first using (row_hash) join ({order}) o using (source)"
    )
    metrics = ", ".join(f'p."{name}"' for name in scorer.metrics)
    _copy(
        db,
        f"""select r.position as {_POSITION}, r.source, r.row_number, {metrics}, p.signature
        from {scan} p
        join previous_first f
            on p.row_hash = f.row_hash and p.source = f.source and p.row_number = f.row_number
        join reuse r on r.row_hash = p.row_hash
        order by r.position, r.row_number""",
        target,
    )
    return int(db.sql("select count(*) from reuse").fetchall()[0][0])


class _OrderedScores:
    """Earlier scores sorted by (input position, row), handed out to record batches that come
    in the same order: a merge join in bounded memory (one batch of scores buffered)."""

    def __init__(self, path: Path, rows: int, positions: dict[str, int]) -> None:
        self._frames = _frames(path, rows)
        self._positions = positions
        self._buffer: pl.DataFrame | None = None
        self._done = False

    def match(self, records: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
        """(records with their earlier scores, records without): ``records`` is the next
        batch of the records work file; metric columns replace record columns of the same
        name (``total_tokens``, ``latency_ms``), as in scoring."""
        position = pl.col(SOURCE_COLUMN).replace_strict(self._positions, return_dtype=pl.Int64)
        last = records.select(position.last(), pl.col(ROW_COLUMN).last()).row(0)
        earlier = self._take_until(*last)
        keys = [SOURCE_COLUMN, ROW_COLUMN]
        shadowed = [name for name in earlier.columns if name in records.columns
                    and name not in keys]
        matched = records.drop(shadowed).join(
            earlier.drop(_POSITION), on=keys, how="inner", maintain_order="left"
        )
        return matched, records.join(earlier.select(keys), on=keys, how="anti",
                                     maintain_order="left")

    def _take_until(self, position: int, row: int) -> pl.DataFrame:
        """Buffered and next rows with key <= (position, row)."""
        after = (pl.col(_POSITION) > position) | (
            (pl.col(_POSITION) == position) & (pl.col(ROW_COLUMN) > row)
        )
        parts = [] if self._buffer is None else [self._buffer]
        while not self._done and not (parts and parts[-1].select(after.last()).item()):
            following = next(self._frames, None)
            if following is None:
                self._done = True
            else:
                parts.append(following)
        if not parts:
            return pl.DataFrame(schema={_POSITION: pl.Int64, SOURCE_COLUMN: pl.String,
                                        ROW_COLUMN: pl.Int64})
        buffer = pl.concat(parts)
        self._buffer = buffer.filter(after)
        return buffer.filter(~after)


@dataclass(frozen=True)
class LocalEngine:
    """This module as an :class:`~pipeline.engines.Engine`: a store run written on this machine
    (one pass or two, as :func:`stream_scores` decides)."""

    pairs: Sequence[tuple[Path, Path]] = ()
    batch_rows: int = DEFAULT_BATCH_ROWS
    on_progress: Callable[[str, int], None] | None = None
    name: str = "local"

    def write_run(
        self,
        inputs: Sequence[Path],
        config: Config,
        specs: Sequence[MetricSpec],
        run_dir: Path,
        *,
        previous_dir: Path | None,
        previous_corpus: str | None,
    ) -> EngineRun:
        previous_scores = None
        if previous_dir is not None:
            previous_scores = (
                f"{previous_dir.as_posix()}/{SCORES_DIR}/{MODEL_PARTITION}=*/*.parquet"
            )
        schema = BatchScorer.for_config(config, specs=specs).output_schema
        sink = PartitionedWriter(run_dir / SCORES_DIR, schema)
        for name in (REJECTED_DIR, TEXTS_DIR):
            (run_dir / name).mkdir()
        try:
            result, scorer = stream_scores(
                inputs, self.pairs, config, specs,
                work_dir=run_dir / "_work", sink=sink,
                rejected_target=run_dir / REJECTED_DIR / "part-0.parquet",
                texts_target=run_dir / TEXTS_DIR / "part-0.parquet",
                previous_scores=previous_scores, previous_corpus=previous_corpus,
                batch_rows=self.batch_rows, on_progress=self.on_progress,
            )
        except BaseException:
            sink.abort()
            raise
        sink.close()  # writes the models beyond the open-file budget, one at a time
        if sink.rows == 0:  # every row rejected: an empty file keeps the run's scores readable
            empty = run_dir / SCORES_DIR / partition_dir(MODEL_PARTITION, None)
            empty.mkdir(parents=True, exist_ok=True)
            pq.write_table(sink.schema.empty_table(), empty / "part-0.parquet",
                           compression="zstd")
        return EngineRun(
            n_read=result.n_read, n_scored=result.n_scored, n_reused=result.n_reused,
            n_rejected=result.n_rejected, corpus_digest=scorer.stats.digest(),
        )
