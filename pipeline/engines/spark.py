"""The Spark engine: the local engine's run (:mod:`pipeline.engines.local`), step by step.

Nothing about metrics is re-implemented here. Every step that touches values runs the same
Python code as the single-machine engine, called on Arrow data by Spark:

1. Read: each Parquet input on its own (its own columns and dtypes, as
   :func:`pipeline.io.readers.iter_records` reads it), the config's column mapping applied,
   ``source`` the path as the caller gave it, ``row_number`` from ``_metadata.row_index``.
   A missing required column raises the reader's error, before any Spark job runs. The other
   columns ``[columns] keep`` keeps (:func:`pipeline.io.readers.extra_columns`) join the texts
   by ``source`` and ``row_number``, by the rule of :mod:`pipeline.io.other_columns` (checked on
   the driver from the files' schemas).
2. Validate: :func:`pipeline.validate.validate_records` (without its duplicate check, as
   :func:`pipeline.validate.iter_validated` calls it) on every Arrow batch, through
   ``mapInArrow``; ``row_hash`` is :func:`pipeline.scoring.row_hashes` of the batch.
3. Duplicate keys in a file: :func:`pipeline.engines.duplicate_rows_sql` run by Spark SQL over
   the valid rows, the same SQL text the local engine runs in DuckDB; the reason is
   :data:`pipeline.validate.DUPLICATE_REASON` and ``raw`` is
   :func:`pipeline.validate.raw_json` of the input rows, re-read (a semi join on the input),
   as ``local._write_duplicate_raw`` does.
4. Corpus statistics (a first aggregation): the largest ``references`` list, and TF-IDF
   document frequencies over the distinct non-null questions and compared responses of the
   valid records: Spark ``distinct`` over the texts each batch yields, then the words of each
   text (:func:`pipeline.metrics.lexical.tfidf.tfidf_tokens`, once per text) counted by
   ``groupBy``. :meth:`pipeline.metrics.lexical.tfidf.IdfTable.from_frequencies` turns them into
   the very table the local :class:`~pipeline.metrics.lexical.tfidf.DocumentFrequencies` builds.
5. Score: ``mapInArrow`` with the run's :class:`pipeline.scoring.BatchScorer`, shipped once to
   each executor as a broadcast variable (the IDF table can be large; a broadcast is fetched
   once per executor and unpickled once per Python worker, where a closure would travel with
   every task). The embedding model loads lazily, once per Python worker process.
6. Write the store run (:mod:`pipeline.store` layout) into the staged run directory: scores
   with ``partitionBy("model")`` (a name too long or odd for a directory is hashed, with the
   real name in ``model_name``, as :mod:`pipeline.io.partitioned` lays it out), ``rejected/``
   and ``texts/``. The store transaction around
   it (lock, stage, commit, views) is :meth:`pipeline.store.Store.transaction`, the same as for
   the local engine (:func:`pipeline.drivers.evaluate_spark`).

Incremental runs reuse a compatible earlier run's scores by ``row_hash`` (a join) and score only
the rest (an anti join), as ``local._split_incremental`` does; when the corpus statistics
changed (another :meth:`pipeline.scoring.CorpusStats.digest`), the corpus-dependent metrics of the
reused rows are recomputed with :meth:`pipeline.scoring.BatchScorer.refresh`.

PySpark is imported lazily: the rest of the package works without the ``spark`` extra.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config import Config
from pipeline.engines import STALE_NOTE, EngineRun, duplicate_rows_sql, first_scored_rows_sql
from pipeline.io.columns import ColumnPlan
from pipeline.io.layout import (
    MODEL_NAME_COLUMN,
    MODEL_PARTITION,
    REJECTED_DIR,
    SCORES_DIR,
    TEXT_COLUMNS,
    TEXTS_DIR,
)
from pipeline.io.partitioned import is_hashed, partition_value
from pipeline.io.readers import check_file, extra_columns, missing_column_error, source_names
from pipeline.metrics.lexical.tfidf import IdfTable, tfidf_tokens
from pipeline.metrics.registry import compared_response
from pipeline.metrics.spec import MetricSpec
from pipeline.schema import (
    RECORD_SCHEMA,
    REJECTED_SCHEMA,
    REQUIRED_COLUMNS,
    ROW_COLUMN,
    SOURCE_COLUMN,
    InputError,
)
from pipeline.scoring import (
    RECORD_BATCH_SCHEMA,
    ROW_HASH,
    BatchScorer,
    CorpusStats,
    corpus_dependent,
    needs_corpus,
    row_hashes,
)
from pipeline.validate import DUPLICATE_REASON, raw_json, validate_records

if TYPE_CHECKING:
    from pyspark.broadcast import Broadcast
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

SPARK_EXTRA_HINT = (
    "the Spark engine needs the optional extra: pip install 'rag-eval-pipeline[spark]' "
    "(and Java 17)"
)
#: Address every local session binds to (driver, block manager, Python workers).
LOCAL_ADDRESS = "127.0.0.1"
ENGINE = "spark"

_REASON = "reason"
_RAW = "raw"
_FIRST = "__first_row"
_FIRST_ID = "__first_id"
_TEXT = "text"
#: Temporary view of the valid records that the duplicate-key SQL reads.
_RECORDS_VIEW = "rag_eval_records"
#: Temporary view of the earlier run's scores that the reuse SQL reads.
_PREVIOUS_VIEW = "rag_eval_previous_scores"
_WORD = "word"
_DOCS = "docs"


class SparkUnavailableError(ImportError):
    """PySpark (or the Java it runs on) is not installed."""


def _pyspark() -> Any:
    """``pyspark.sql``, or a clear error when the extra is missing. ``mapInArrow`` also needs
    pandas on the driver (PySpark checks its version there), which ``pyspark[sql]`` brings."""
    try:
        import pandas  # noqa: F401
        import pyspark.sql
    except ImportError as exc:
        raise SparkUnavailableError(f"{SPARK_EXTRA_HINT}; missing: {exc.name}") from exc
    return pyspark.sql


# --- sessions -----------------------------------------------------------------------------------


def local_session(
    master: str = "local[2]", app_name: str = "rag-eval", shuffle_partitions: int = 4
) -> SparkSession:
    """A Spark session in local mode bound to 127.0.0.1, UI off, Arrow on, logs quiet.

    ``SPARK_LOCAL_IP`` is set before the JVM starts; the Python workers run this interpreter
    unless ``PYSPARK_PYTHON`` says otherwise. Column names are case-sensitive, as in the
    single-machine readers.
    """
    sql = _pyspark()
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        raise SparkUnavailableError(
            "Spark needs Java 17 and no java is on PATH (nor JAVA_HOME set): run .ci/install-java"
        )
    os.environ["SPARK_LOCAL_IP"] = LOCAL_ADDRESS
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    session = (
        sql.SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.driver.bindAddress", LOCAL_ADDRESS)
        .config("spark.driver.host", LOCAL_ADDRESS)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
        .config("spark.sql.adaptive.coalescePartitions.initialPartitionNum",
                str(shuffle_partitions))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.caseSensitive", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    # py4j logs every connection it closes at INFO, also at interpreter exit (when log streams
    # may be closed already): keep its chatter out of the run's logs.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    return session


# --- Arrow batch functions (run on the executors) -----------------------------------------------


def _arrow_schema(schema: dict[str, pl.DataType]) -> pa.Schema:
    return pl.DataFrame(schema=schema).to_arrow().schema


def _spark_types(schema: pa.Schema) -> tuple[StructType, pa.Schema]:
    """The Spark type of an Arrow schema, and the Arrow schema Spark sends and expects back.

    Spark has no large (64-bit offset) types, so polars' ``large_string`` and ``large_list``
    travel as ``string`` and ``list``: the values are the same.
    """
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    struct = from_arrow_schema(schema)
    return struct, to_arrow_schema(struct)


def _polars_frames(batches: Iterable[pa.RecordBatch]) -> Iterator[pl.DataFrame]:
    """The non-empty Arrow batches Spark hands a ``mapInArrow`` function, as polars frames."""
    for batch in batches:
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        if frame.height:
            yield frame


def _to_batches(table: pa.Table, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    yield from table.select(target.names).cast(target).to_batches()


#: What validation hands on: records, ``row_hash``, and (on rejected rows only) reason and raw.
VALIDATED_SCHEMA: dict[str, pl.DataType] = {
    **RECORD_BATCH_SCHEMA, ROW_HASH: pl.Binary(), _REASON: pl.String(), _RAW: pl.String(),
}


@dataclass(frozen=True)
class _Validate:
    """``mapInArrow`` function: batches of one input file -> :func:`validate_records` (without
    the duplicate check, which needs the whole file), both outcomes in one schema.

    Valid rows carry the canonical record and ``row_hash`` (reason null); rejected rows carry
    ``source``, ``row_number``, ``id``, ``reason`` and ``raw`` (the rest null).
    """

    config: Config
    target: pa.Schema

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for frame in _polars_frames(batches):
            checked = validate_records(
                frame, frame[SOURCE_COLUMN][0], self.config, check_duplicates=False
            )
            records = checked.records.with_columns(row_hashes(checked.records))
            both = pl.concat([records, checked.rejected], how="diagonal")
            yield from _to_batches(both.to_arrow(), self.target)


@dataclass(frozen=True)
class _DuplicateRejections:
    """``mapInArrow`` function: input rows of one file whose key an earlier row holds (with
    ``__first_id`` and ``__first_row`` joined) -> rejected rows, with
    :data:`DUPLICATE_REASON` and the :func:`raw_json` of the row as read."""

    target: pa.Schema

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for frame in _polars_frames(batches):
            rows = frame.drop(_FIRST_ID, _FIRST)
            rejected = frame.select(
                SOURCE_COLUMN,
                ROW_COLUMN,
                pl.col(_FIRST_ID).alias("id"),
                pl.format(DUPLICATE_REASON, pl.col(_FIRST_ID), pl.col(_FIRST)).alias(_REASON),
            ).with_columns(raw_json(rows, rows[SOURCE_COLUMN][0]).alias(_RAW))
            yield from _to_batches(rejected.to_arrow(), self.target)


@dataclass(frozen=True)
class _CorpusTexts:
    """``mapInArrow`` function: valid records -> the distinct non-null questions and compared
    responses of each batch (the texts :class:`pipeline.scoring.CorpusStatsBuilder` counts)."""

    config: Config
    target: pa.Schema

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for frame in _polars_frames(batches):
            texts = (
                frame.select(
                    pl.concat_list(pl.col("question"), compared_response(self.config))
                    .alias(_TEXT)
                )
                .explode(_TEXT)
                .drop_nulls()
                .unique()
            )
            yield from _to_batches(texts.to_arrow(), self.target)


@dataclass(frozen=True)
class _DocumentWords:
    """``mapInArrow`` function: distinct texts -> per-batch document counts of each word, plus
    one row with a null word counting the batch's texts (summed, that is ``n_documents``).

    Words are :func:`pipeline.metrics.lexical.tfidf.tfidf_tokens`, each counted once per text, as in
    :meth:`pipeline.metrics.lexical.tfidf.DocumentFrequencies.add`.
    """

    target: pa.Schema

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for frame in _polars_frames(batches):
            counts = (
                frame.select(tfidf_tokens(pl.col(_TEXT)).list.unique().alias(_WORD))
                .explode(_WORD)
                .drop_nulls()
                .group_by(_WORD)
                .agg(pl.len().cast(pl.Int64).alias(_DOCS))
            )
            total = pl.DataFrame(
                {_WORD: [None], _DOCS: [frame.height]}, schema={_WORD: pl.String, _DOCS: pl.Int64}
            )
            yield from _to_batches(pl.concat([counts, total]).to_arrow(), self.target)


@dataclass(frozen=True)
class _BroadcastScorer:
    """``mapInArrow`` function: the broadcast :class:`BatchScorer`, its batches cast to the
    Arrow types Spark expects."""

    scorer: Broadcast[BatchScorer]
    target: pa.Schema

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for scored in self.scorer.value(batches):
            yield from _to_batches(pa.Table.from_batches([scored]), self.target)


@dataclass(frozen=True)
class _BroadcastRefresh:
    """``mapInArrow`` function: reused rows (record and earlier scores) -> their scores, the
    ``stale`` metrics recomputed (:meth:`BatchScorer.refresh`), as the streaming engine does."""

    scorer: Broadcast[BatchScorer]
    stale: tuple[str, ...]
    target: pa.Schema

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for frame in _polars_frames(batches):
            fresh = self.scorer.value.refresh(frame, self.stale)
            yield from _to_batches(fresh.to_arrow(), self.target)


# --- inputs -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Input:
    source: str
    #: Column in the file -> canonical name, in canonical order.
    renames: dict[str, str]
    #: The file's other columns that ``[columns] keep`` keeps, with their dtypes as polars reads
    #: them (the local engine's, so both engines compare and name types alike).
    extras: dict[str, pl.DataType]


def _plan_input(path: Path | str, config: Config, many: bool = False) -> _Input:
    """Check one input on the driver as :func:`pipeline.io.readers.iter_records` does: the same
    errors (file, format, missing required column, no records) with the same messages; the
    other columns it keeps (a name of ``[columns] keep`` it lacks is no error when ``many``)."""
    source = os.fspath(path)
    if Path(source).suffix.lower() != ".parquet":
        raise InputError(
            f"{source}: the Spark engine reads Parquet inputs only; convert the file "
            "(python -m pipeline export) or use the single-machine engine"
        )
    check_file(Path(source), source)
    try:
        handle = pq.ParquetFile(source)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{source}: not a readable Parquet file: {exc}") from exc
    available = handle.schema_arrow.names
    wanted = source_names(config)
    for column in REQUIRED_COLUMNS:
        if wanted.get(column) not in set(available):
            raise missing_column_error(column, source, available, config)
    if handle.metadata.num_rows == 0:
        raise InputError(f"{source}: the file contains no records")
    renames = {src: name for name, src in wanted.items() if src in set(available)}
    ordered = {src: name for name in RECORD_SCHEMA for src, n in renames.items() if n == name}
    plan = ColumnPlan(pairs=tuple((src, name) for src, name in ordered.items()))
    kept = extra_columns(available, plan, source, config.keep_columns, missing_ok=many)
    dtypes = pl.read_parquet_schema(source)
    return _Input(source=source, renames=ordered, extras={name: dtypes[name] for name in kept})


def _plan_inputs(inputs: Sequence[Path], config: Config) -> list[_Input]:
    """:func:`_plan_input` of every input, and their other columns checked together by the rule
    of :mod:`pipeline.io.other_columns`: one type per column, a kept name some input has."""
    plans = [_plan_input(path, config, many=len(inputs) > 1) for path in inputs]
    first: dict[str, tuple[pl.DataType, str]] = {}
    for plan in plans:
        for name, dtype in plan.extras.items():
            known = first.setdefault(name, (dtype, plan.source))
            if dtype == pl.Null() or known[0] == dtype:
                continue
            if known[0] == pl.Null():
                first[name] = (dtype, plan.source)
                continue
            raise InputError(
                f"{plan.source}: the kept column {name!r} is {dtype} here but {known[0]} in "
                f"{known[1]}; a kept column has one type in every input "
                "(docs/input-formats.md, \"Other columns\"): give it one, or leave it out "
                "with [columns] keep"
            )
    unknown = [name for name in config.keep_columns or () if name not in first]
    if unknown:
        raise InputError(
            f"[columns] keep names {', '.join(map(repr, unknown))}, which no input has "
            f"({', '.join(map(str, inputs))}); other columns kept: "
            f"{', '.join(sorted(first)) or 'none'}"
        )
    return plans


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _other_columns(spark: SparkSession, plans: Sequence[_Input]) -> DataFrame | None:
    """``source``, ``row_number`` and the other columns each input keeps, over every input
    that keeps one (a column an input lacks is null there); None when none keeps one."""
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    frames = [
        spark.read.parquet(item.source).select(
            F.lit(item.source).alias(SOURCE_COLUMN),
            F.col("_metadata.row_index").cast("long").alias(ROW_COLUMN),
            *(F.col(_quoted(name)) for name in item.extras),
        )
        for item in plans if item.extras
    ]
    if not frames:
        return None
    return functools.reduce(
        lambda left, right: DataFrame.unionByName(left, right, allowMissingColumns=True), frames
    )


def _read_input(spark: SparkSession, item: _Input) -> DataFrame:
    """One file's canonical columns (as read), ``source`` and ``row_number``."""
    from pyspark.sql import functions as F

    frame = spark.read.parquet(item.source)
    return frame.select(
        *(F.col(_quoted(src)).alias(name) for src, name in item.renames.items()),
        F.lit(item.source).alias(SOURCE_COLUMN),
        F.col("_metadata.row_index").cast("long").alias(ROW_COLUMN),
    )


# --- the run ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SparkEngine:
    """This module as an :class:`~pipeline.engines.Engine`. Without ``spark``, a
    :func:`local_session` on ``master`` is started and stopped around each run (for a cluster,
    pass the session ``spark-submit`` created)."""

    spark: SparkSession | None = None
    master: str = "local[2]"
    name: str = ENGINE

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
        _pyspark()
        if not inputs:
            raise InputError("no inputs to evaluate")
        plans = _plan_inputs(inputs, config)
        session = self.spark if self.spark is not None else local_session(self.master)
        try:
            counts, digest = _run(session, plans, config, specs, run_dir, previous_dir,
                                  previous_corpus)
        finally:
            if self.spark is None:
                session.stop()
        return EngineRun(
            n_read=counts["read"], n_scored=counts["scored"], n_reused=counts["reused"],
            n_rejected=counts["rejected"], corpus_digest=digest,
        )

    def check(self, inputs: Sequence[Path], config: Config) -> None:
        """Check every input on the driver (format, required columns) before a run starts."""
        _pyspark()
        if not inputs:
            raise InputError("no inputs to evaluate")
        _plan_inputs(inputs, config)


def _run(
    spark: SparkSession,
    plans: Sequence[_Input],
    config: Config,
    specs: Sequence[MetricSpec],
    run_dir: Path,
    previous_run: Path | None,
    previous_corpus: str | None,
) -> tuple[dict[str, int], str | None]:
    """Write scores, rejected rows and texts into ``run_dir``; return the counts and the
    corpus digest."""
    from pyspark import StorageLevel
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    # Pass 1: validation of each file's batches, cached (every later step reads it).
    validated_struct, validated_arrow = _spark_types(_arrow_schema(VALIDATED_SCHEMA))
    validate = _Validate(config, validated_arrow)
    inputs = {plan.source: _read_input(spark, plan) for plan in plans}
    validated = functools.reduce(
        DataFrame.unionByName,
        (frame.mapInArrow(validate, validated_struct) for frame in inputs.values()),
    ).persist(StorageLevel.MEMORY_AND_DISK)
    records = validated.filter(F.col(_REASON).isNull()).drop(_REASON, _RAW)

    # Duplicate keys in a file: the first row_number of each key wins (the SQL the local
    # engine runs in DuckDB).
    records.createOrReplaceTempView(_RECORDS_VIEW)
    duplicates = spark.sql(duplicate_rows_sql(_RECORDS_VIEW)).select(
        SOURCE_COLUMN, ROW_COLUMN, F.col("id").alias(_FIRST_ID), F.col("first_row").alias(_FIRST)
    ).persist(StorageLevel.MEMORY_AND_DISK)
    kept = records.join(
        duplicates.select(SOURCE_COLUMN, ROW_COLUMN), on=[SOURCE_COLUMN, ROW_COLUMN],
        how="left_anti",
    )
    cached = [validated, duplicates]
    broadcast = None
    try:
        row = validated.agg(
            F.count(F.lit(1)).alias("read"),
            F.count(_REASON).alias("invalid"),
            F.max(F.when(F.col(_REASON).isNull(), F.size("references"))).alias("longest"),
        ).first()
        assert row is not None
        n_read, n_invalid = int(row["read"]), int(row["invalid"])
        n_duplicates = duplicates.count()
        stats = _corpus_stats(records, config, specs, int(row["longest"] or 0))
        log.info(
            "pass 1: %d rows read, %d valid, %d duplicate keys", n_read, n_read - n_invalid,
            n_duplicates,
        )

        rejected_struct, rejected_arrow = _spark_types(_arrow_schema(REJECTED_SCHEMA))
        rejected = validated.filter(F.col(_REASON).isNotNull()).select(*REJECTED_SCHEMA)
        if n_duplicates:
            found = duplicates.persist(StorageLevel.MEMORY_AND_DISK)
            cached.append(found)
            for frame in inputs.values():
                again = frame.join(found, on=[SOURCE_COLUMN, ROW_COLUMN], how="inner")
                rejected = rejected.unionByName(
                    again.mapInArrow(_DuplicateRejections(rejected_arrow), rejected_struct)
                )
        order = {plan.source: position for position, plan in enumerate(plans)}
        position = F.element_at(
            F.create_map(*(F.lit(x) for item in order.items() for x in item)),
            F.col(SOURCE_COLUMN),
        )
        _write(rejected.orderBy(position, ROW_COLUMN), run_dir / REJECTED_DIR)
        texts = kept.select(*TEXT_COLUMNS)
        others = _other_columns(spark, plans)
        if others is not None:
            names = [name for name in others.columns if name not in (SOURCE_COLUMN, ROW_COLUMN)]
            texts = texts.join(others, on=[SOURCE_COLUMN, ROW_COLUMN], how="left").select(
                *TEXT_COLUMNS, *names
            )
        _write(texts, run_dir / TEXTS_DIR)

        scorer = BatchScorer.for_config(config, stats, specs)
        scores_struct, scores_arrow = _spark_types(scorer.output_schema)
        to_score = kept.select(*RECORD_BATCH_SCHEMA, ROW_HASH)
        broadcast = spark.sparkContext.broadcast(scorer)
        scores = None
        n_reused = 0
        if previous_run is not None:
            to_score, reused = _split_incremental(spark, to_score, previous_run, scorer)
            stale = () if stats.digest() == previous_corpus else corpus_dependent(scorer.specs)
            if stale:
                log.warning(STALE_NOTE, ", ".join(stale))
            reused = reused.persist(StorageLevel.MEMORY_AND_DISK)
            cached.append(reused)
            n_reused = reused.count()
            scores = reused.mapInArrow(
                _BroadcastRefresh(broadcast, tuple(stale), scores_arrow), scores_struct
            )
        fresh = to_score.mapInArrow(_BroadcastScorer(broadcast, scores_arrow), scores_struct)
        scores = fresh if scores is None else fresh.unionByName(scores)
        models = [row[0] for row in kept.select(MODEL_PARTITION).distinct().collect()]
        _write(_hashed_partitions(scores, models), run_dir / SCORES_DIR,
               partition_by=MODEL_PARTITION)
    finally:
        if broadcast is not None:
            broadcast.unpersist()
        for frame in cached:
            frame.unpersist()
    n_rejected = n_invalid + n_duplicates
    n_scored = n_read - n_rejected - n_reused
    log.info("%d rows scored, %d reused, %d rejected", n_scored, n_reused, n_rejected)
    counts = {"read": n_read, "scored": n_scored, "reused": n_reused, "rejected": n_rejected}
    return counts, stats.digest()


def _corpus_stats(
    records: DataFrame, config: Config, specs: Sequence[Any], longest: int
) -> CorpusStats:
    """The first aggregation: candidates, and document frequencies over distinct texts."""
    from pyspark.sql import functions as F

    n_candidates = max(1, 1 + max(longest, 0))
    if not needs_corpus(config, specs):
        return CorpusStats(n_candidates=n_candidates)
    text_struct, text_arrow = _spark_types(_arrow_schema({_TEXT: pl.String()}))
    word_struct, word_arrow = _spark_types(_arrow_schema({_WORD: pl.String(), _DOCS: pl.Int64()}))
    frequencies = (
        records.select("question", "response")
        .mapInArrow(_CorpusTexts(config, text_arrow), text_struct)
        .distinct()
        .mapInArrow(_DocumentWords(word_arrow), word_struct)
        .groupBy(_WORD)
        .agg(F.sum(_DOCS).cast("long").alias(_DOCS))
    )
    table = pl.from_arrow(frequencies.toArrow())
    assert isinstance(table, pl.DataFrame)
    totals = table.filter(pl.col(_WORD).is_null())[_DOCS]
    n_documents = int(totals[0]) if len(totals) else 0
    words = table.filter(pl.col(_WORD).is_not_null()).rename({_DOCS: "df"})
    log.info("corpus: %d distinct texts, %d words", n_documents, words.height)
    idf = IdfTable.from_frequencies(words, n_documents)
    return CorpusStats(n_candidates=n_candidates, idf=idf)


def _split_incremental(
    spark: SparkSession, kept: DataFrame, previous_run: Path, scorer: BatchScorer
) -> tuple[DataFrame, DataFrame]:
    """(records to score, reused rows): records whose ``row_hash`` the previous run scored,
    with its scores (its first row per hash by source and row_number; metrics named like
    record columns replace them), as ``local._split_incremental``; the others to score."""
    scores = spark.read.parquet(str(previous_run / SCORES_DIR))
    scores.createOrReplaceTempView(_PREVIOUS_VIEW)
    # The rule the local engine runs in DuckDB: each hash's first row by source and row_number.
    first = spark.sql(first_scored_rows_sql(_PREVIOUS_VIEW))
    previous = scores.join(first, on=[ROW_HASH, SOURCE_COLUMN, ROW_COLUMN], how="inner").select(
        ROW_HASH, *scorer.metrics, "signature"
    )
    shadowed = [name for name in scorer.metrics if name in RECORD_BATCH_SCHEMA]
    reused = kept.drop(*shadowed).join(previous, on=ROW_HASH, how="inner")
    return kept.join(previous.select(ROW_HASH), on=ROW_HASH, how="left_anti"), reused


def _hashed_partitions(scores: DataFrame, models: Sequence[str | None]) -> DataFrame:
    """``scores`` ready for ``partitionBy("model")`` in the local engine's layout
    (:mod:`pipeline.io.partitioned`): a model name too long or odd for a directory name becomes
    its hashed directory value, with the real name in ``model_name`` (null for the others).
    Unchanged when no name of ``models`` (the run's distinct models) needs it."""
    from pyspark.sql import functions as F

    hashed = {m: partition_value(m) for m in models if m is not None and is_hashed(m)}
    if not hashed:
        return scores
    names = F.create_map(*(F.lit(x) for item in hashed.items() for x in item))
    value = F.element_at(names, F.col(MODEL_PARTITION))
    return scores.withColumn(
        MODEL_NAME_COLUMN, F.when(value.isNotNull(), F.col(MODEL_PARTITION))
    ).withColumn(MODEL_PARTITION, F.coalesce(value, F.col(MODEL_PARTITION)))


def _write(frame: DataFrame, target: Path, partition_by: str | None = None) -> None:
    """Parquet (zstd) under ``target``; Spark's ``_SUCCESS`` and ``.crc`` files are removed so
    the directory holds what the single-machine engine writes: Parquet files only."""
    writer = frame.write.mode("errorifexists").option("compression", "zstd")
    if partition_by is not None:
        writer = writer.partitionBy(partition_by)
    writer.parquet(str(target))
    for path in target.rglob("*"):
        if path.name == "_SUCCESS" or (path.name.startswith(".") and path.suffix == ".crc"):
            path.unlink()
