"""The evaluation driver: validated records in, metric columns added, Parquet out.

It knows no metric details: the registry says which columns to add and in what order. Records
are scored in batches so peak memory is the input table plus one batch of intermediate token
lists, whatever the input size.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from pipeline.config import Config
from pipeline.io.atomic import atomic_path, write_parquet_atomic
from pipeline.metrics.registry import (
    MetricSpec,
    compared_response,
    intermediates,
    levels,
    metric_expressions,
)
from pipeline.metrics.registry import resolve as resolve_metrics
from pipeline.metrics.spec import NEEDS_EMBEDDER, NEEDS_IDF, Inputs
from pipeline.schema import KEY_COLUMNS
from pipeline.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, write_stats

log = logging.getLogger(__name__)

#: Most rows scored per batch; bounds the memory used by intermediate token lists.
DEFAULT_BATCH_ROWS = 200_000
#: Most text bytes (question, reference, response, contexts) per batch, so batches of long
#: texts hold fewer rows: intermediate memory grows with the text, not only the row count.
DEFAULT_BATCH_BYTES = 32 * 2**20

SCORES_FILE = "scores.parquet"
REJECTED_FILE = "rejected.parquet"
#: The texts behind each scored row (for exports and reports), keyed like ``scores.parquet``.
TEXTS_FILE = "texts.parquet"
TEXT_COLUMNS: tuple[str, ...] = ("source", "row_number", "id", "question", "reference", "response")


@dataclass(frozen=True)
class RunSummary:
    """What an evaluation run read, scored and wrote."""

    n_read: int
    n_scored: int
    n_rejected: int
    metrics: tuple[str, ...]
    out_dir: Path


def batch_rows_for(
    records: pl.DataFrame, batch_rows: int = DEFAULT_BATCH_ROWS,
    batch_bytes: int = DEFAULT_BATCH_BYTES,
) -> int:
    """Rows per batch: ``batch_rows``, fewer when rows average more than
    ``batch_bytes / batch_rows`` bytes of text."""
    if batch_rows < 1 or batch_bytes < 1:
        raise ValueError("batch_rows and batch_bytes must be positive")
    if records.height == 0:
        return batch_rows
    text_bytes = records.select(
        pl.sum_horizontal(
            pl.col(name).str.len_bytes().fill_null(0)
            for name in ("question", "reference", "response")
        ).sum()
        + pl.col("contexts").list.eval(pl.element().str.len_bytes()).list.sum().fill_null(0).sum()
    ).item()
    per_row = max(text_bytes / records.height, 1.0)
    return max(1, min(batch_rows, int(batch_bytes // per_row)))


def count_candidates(records: pl.DataFrame) -> int:
    """``reference`` plus the longest ``references`` list: how many answers a row can match."""
    longest = records.select(pl.col("references").list.len().max()).item()
    return 1 + int(longest or 0)


def prepare_inputs(
    records: pl.DataFrame, config: Config, specs: Sequence[MetricSpec]
) -> Inputs:
    """What the metric builders share across batches, prepared once per run.

    The candidate count; TF-IDF document frequencies over every distinct question and compared
    response of ``records`` (the first pass of a two-pass run); the embedding model behind its
    cache. Each is prepared only when a selected metric needs it.
    """
    needs = {need for spec in specs for need in spec.needs}
    idf = None
    if NEEDS_IDF in needs:
        from pipeline.metrics.tfidf import IdfTable

        texts = records.select(
            pl.concat_list(pl.col("question"), compared_response(config)).alias("text")
        ).explode("text")["text"]
        idf = IdfTable.from_texts(texts)
    embedder = None
    if NEEDS_EMBEDDER in needs:
        from pipeline.embed import make_embedder

        embedder = make_embedder(
            config.embedding_backend,
            cache_dir=config.embedding_cache_dir,
            batch_size=config.embedding_batch_size,
        )
    return Inputs(
        config=config, n_candidates=count_candidates(records), idf=idf, embedder=embedder
    )


def score_frame(
    records: pl.DataFrame | pl.LazyFrame,
    config: Config,
    *,
    specs: Sequence[MetricSpec] | None = None,
    inputs: Inputs | None = None,
) -> pl.LazyFrame:
    """Key columns, metric columns and ``signature`` for each record (lazy).

    ``records`` must have every column of :data:`pipeline.schema.RECORD_SCHEMA`. ``inputs``
    defaults to :func:`prepare_inputs` over ``records`` themselves; a batched run passes the
    inputs it prepared once over all its records.
    """
    specs = tuple(specs) if specs is not None else resolve_metrics(config.metrics)
    frame = records.lazy()
    if inputs is None:
        inputs = prepare_inputs(frame.collect(), config, specs)
    needed = {need for spec in specs for need in spec.needs}
    for stage in intermediates(inputs, needed):
        frame = frame.with_columns(expr.alias(name) for name, expr in stage.items())
    for group in levels(specs):
        frame = frame.with_columns(metric_expressions(group, inputs))
    keys = [pl.col(name) for name in KEY_COLUMNS]
    metrics = [pl.col(spec.name) for spec in specs]
    return frame.select(*keys, *metrics, pl.lit(config.signature()).alias("signature"))


def evaluate(
    inputs: Sequence[Path],
    out_dir: Path,
    config: Config,
    *,
    pairs: Sequence[tuple[Path, Path]] = (),
    batch_rows: int = DEFAULT_BATCH_ROWS,
    on_batch: Callable[[int], None] | None = None,
    build_db: bool = True,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
) -> RunSummary:
    """Read, validate and score ``inputs``; write scores, rejections, statistics and the views.

    Every output is written atomically. ``on_batch`` is called with the number of rows of each
    scored batch (the CLI drives a progress bar with it). ``resamples`` and ``seed`` drive the
    bootstrap intervals and paired comparisons of :func:`pipeline.stats.write_stats`.
    """
    from pipeline.validate import load_inputs

    specs = resolve_metrics(config.metrics)
    validated = load_inputs(list(inputs), list(pairs), config)
    records = validated.records
    shared = prepare_inputs(records, config, specs)
    log.info(
        "read %d rows: %d valid, %d rejected; scoring %d metrics",
        validated.n_read, records.height, validated.rejected.height, len(specs),
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_scores(records, shared, specs, out_dir / SCORES_FILE, batch_rows, on_batch)
    write_parquet_atomic(records.select(TEXT_COLUMNS), out_dir / TEXTS_FILE)
    write_parquet_atomic(validated.rejected, out_dir / REJECTED_FILE)
    write_stats(out_dir, resamples=resamples, seed=seed)
    if build_db:
        from pipeline.views import build_views

        build_views(out_dir)
    summary = RunSummary(
        n_read=validated.n_read,
        n_scored=records.height,
        n_rejected=validated.rejected.height,
        metrics=tuple(spec.name for spec in specs),
        out_dir=out_dir,
    )
    if summary.n_scored + summary.n_rejected != summary.n_read:  # pragma: no cover - invariant
        raise RuntimeError(f"row accounting broken: {summary}")
    return summary


def _write_scores(
    records: pl.DataFrame,
    inputs: Inputs,
    specs: Sequence[MetricSpec],
    target: Path,
    batch_rows: int,
    on_batch: Callable[[int], None] | None,
) -> None:
    batch_rows = batch_rows_for(records, batch_rows)
    log.debug("scoring in batches of %d rows", batch_rows)
    config = inputs.config
    empty = score_frame(records.head(0), config, specs=specs, inputs=inputs)
    schema = empty.collect().to_arrow().schema
    with atomic_path(target) as tmp, pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
        for offset in range(0, records.height, batch_rows):
            batch = records.slice(offset, batch_rows)
            scored = score_frame(batch, config, specs=specs, inputs=inputs).collect()
            writer.write_table(scored.to_arrow().cast(schema))
            if on_batch is not None:
                on_batch(batch.height)
