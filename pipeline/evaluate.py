"""The evaluation driver: validated records in, metric columns added, Parquet out.

It knows no metric details: the registry says which columns to add and in what order. Runs
stream in two passes (:mod:`pipeline.streaming`), so peak memory is bounded by the batch size,
not the input size. :func:`evaluate` writes one output directory; :func:`evaluate_to_store`
adds a run to a results store (:mod:`pipeline.store`).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from pipeline.batch import BatchScorer, CorpusStatsBuilder
from pipeline.config import Config
from pipeline.io.atomic import atomic_path
from pipeline.metrics.registry import (
    MetricSpec,
    intermediates,
    levels,
    metric_expressions,
)
from pipeline.metrics.registry import resolve as resolve_metrics
from pipeline.metrics.spec import NEEDS_EMBEDDER, Inputs
from pipeline.phases import phase
from pipeline.schema import KEY_COLUMNS
from pipeline.stats import DEFAULT_RESAMPLES, DEFAULT_SEED, write_stats
from pipeline.streaming import (  # noqa: F401 - re-exported: the batching rule of a run
    DEFAULT_BATCH_BYTES,
    DEFAULT_BATCH_ROWS,
    TEXT_COLUMNS,
    batch_rows_for,
    stream_scores,
)

log = logging.getLogger(__name__)

SCORES_FILE = "scores.parquet"
REJECTED_FILE = "rejected.parquet"
#: The texts behind each scored row (for exports and reports), keyed like ``scores.parquet``.
TEXTS_FILE = "texts.parquet"


@dataclass(frozen=True)
class RunSummary:
    """What an evaluation run read, scored and wrote."""

    n_read: int
    n_scored: int
    n_rejected: int
    metrics: tuple[str, ...]
    out_dir: Path


def prepare_inputs(
    records: pl.DataFrame, config: Config, specs: Sequence[MetricSpec]
) -> Inputs:
    """What the metric builders share across batches, prepared once per run.

    The candidate count; TF-IDF document frequencies over every distinct question and compared
    response of ``records`` (the first pass of a two-pass run); the embedding model behind its
    cache. Each is prepared only when a selected metric needs it.
    """
    needs = {need for spec in specs for need in spec.needs}
    corpus = CorpusStatsBuilder(config, tuple(specs))
    corpus.add(records)
    stats = corpus.result()
    embedder = None
    if NEEDS_EMBEDDER in needs:
        from pipeline.embed import make_embedder

        embedder = make_embedder(
            config.embedding_backend,
            cache_dir=config.embedding_cache_dir,
            batch_size=config.embedding_batch_size,
            batch_tokens=config.embedding_batch_tokens,
            device=config.embedding_device,
            cache_float16=config.embedding_cache_float16,
        )
    return Inputs(
        config=config, n_candidates=stats.n_candidates, idf=stats.idf, embedder=embedder
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
    on_progress: Callable[[str, int], None] | None = None,
    build_db: bool = True,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    stats: bool = True,
) -> RunSummary:
    """Read, validate and score ``inputs``; write scores, rejections, statistics and the views.

    Streams in batches (:mod:`pipeline.streaming`), so memory does not grow with the input.
    Every output is written atomically. ``on_progress(stage, rows)`` reports rows read
    (``"reading"``) and scored (``"scoring"``); the CLI drives its progress bars with it.
    ``resamples`` and ``seed`` drive the bootstrap intervals and paired comparisons of
    :func:`pipeline.stats.write_stats` (per-question sums in bounded memory), which
    ``stats=False`` skips.
    """
    specs = resolve_metrics(config.metrics)
    out_dir.mkdir(parents=True, exist_ok=True)
    schema = BatchScorer.for_config(config, specs=specs).output_schema
    with (
        atomic_path(out_dir / SCORES_FILE) as scores_tmp,
        atomic_path(out_dir / REJECTED_FILE) as rejected_tmp,
        atomic_path(out_dir / TEXTS_FILE) as texts_tmp,
        pq.ParquetWriter(scores_tmp, schema, compression="zstd") as writer,
    ):
        result, _ = stream_scores(
            inputs, pairs, config, specs,
            work_dir=out_dir / f".work-{uuid.uuid4().hex[:8]}",
            sink=writer, rejected_target=rejected_tmp, texts_target=texts_tmp,
            batch_rows=batch_rows, on_progress=on_progress,
        )
    log.info(
        "read %d rows: %d scored, %d rejected; %d metrics", result.n_read, result.n_scored,
        result.n_rejected, len(specs),
    )
    if stats:
        with phase("statistics"):
            write_stats(out_dir, resamples=resamples, seed=seed)
    if build_db:
        from pipeline.views import build_views

        with phase("views"):
            build_views(out_dir)
    return RunSummary(
        n_read=result.n_read,
        n_scored=result.n_scored,
        n_rejected=result.n_rejected,
        metrics=tuple(spec.name for spec in specs),
        out_dir=out_dir,
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


def evaluate_to_store(
    inputs: Sequence[Path],
    store_root: Path,
    config: Config,
    *,
    run_id: str | None = None,
    force: bool = False,
    lock_wait: float = 0.0,
    pairs: Sequence[tuple[Path, Path]] = (),
    batch_rows: int = DEFAULT_BATCH_ROWS,
    on_progress: Callable[[str, int], None] | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    stats: bool = True,
) -> StoreRunSummary:
    """Score ``inputs`` as a new run of the results store at ``store_root``.

    Rows whose content (``row_hash``) the newest run with the same signature and metrics already
    scored are copied from it, not scored again, unless ``force``. The run is written under the
    store's lock into a staging directory and committed by one rename (:mod:`pipeline.store`);
    an exception records a failed manifest and leaves no partial run. The views of the store
    are rebuilt after the commit.
    """
    from pipeline.store import (
        REJECTED_DIR,
        SCORES_DIR,
        TEXTS_DIR,
        PartitionedWriter,
        Store,
        build_manifest,
        new_run_id,
    )

    specs = resolve_metrics(config.metrics)
    metrics = tuple(spec.name for spec in specs)
    store = Store(Path(store_root))
    run_id = run_id or new_run_id()
    manifest = build_manifest(
        [*inputs, *(p for pair in pairs for p in pair)], config, metrics, engine="local"
    )
    with store.lock(lock_wait):
        previous = None if force else store.latest_compatible(config.signature(), metrics)
        staged = store.begin(run_id, manifest)
        try:
            previous_glob = None
            if previous is not None:
                previous_glob = (
                    f"{store.run_dir(previous['run_id']).as_posix()}/{SCORES_DIR}/model=*/*.parquet"
                )
                log.info("reusing unchanged rows of run %s", previous["run_id"])
            schema = BatchScorer.for_config(config, specs=specs).output_schema
            sink = PartitionedWriter(staged.dir / SCORES_DIR, schema)
            for name in (REJECTED_DIR, TEXTS_DIR):
                (staged.dir / name).mkdir()
            try:
                result, scorer = stream_scores(
                    inputs, pairs, config, specs,
                    work_dir=staged.dir / "_work", sink=sink,
                    rejected_target=staged.dir / REJECTED_DIR / "part-0.parquet",
                    texts_target=staged.dir / TEXTS_DIR / "part-0.parquet",
                    previous_scores=previous_glob,
                    previous_corpus=previous.get("corpus_digest") if previous else None,
                    batch_rows=batch_rows, on_progress=on_progress,
                )
            finally:
                sink.close()
            if stats:
                scores = pl.scan_parquet(
                    staged.dir / SCORES_DIR, hive_partitioning=True,
                    hive_schema={"model": pl.String},
                ).select(*KEY_COLUMNS, *metrics, "signature")
                with phase("statistics"):
                    write_stats(staged.dir, resamples=resamples, seed=seed, scores=scores)
            counts = {
                "read": result.n_read, "scored": result.n_scored, "reused": result.n_reused,
                "rejected": result.n_rejected,
            }
            run_dir = staged.commit(
                counts=counts, reused_from=previous["run_id"] if previous else None,
                corpus_digest=scorer.stats.digest(),
            )
        except BaseException as exc:
            staged.abort(f"{type(exc).__name__}: {exc}")
            raise
        from pipeline.views import build_views

        build_views(store.root)
    return StoreRunSummary(
        run_id=run_id, run_dir=run_dir, n_read=result.n_read, n_scored=result.n_scored,
        n_reused=result.n_reused, n_rejected=result.n_rejected, metrics=metrics,
        reused_from=previous["run_id"] if previous else None,
    )
