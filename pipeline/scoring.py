"""The scoring core: records in, metric columns out, the same on every engine.

:func:`score_frame` adds the registry's intermediates and metric columns level by level to a
frame of validated records; :class:`BatchScorer` wraps it as the engine-neutral batch function
(Arrow record batches in, Arrow record batches out). Every engine runs the same code. The
local engine (:mod:`pipeline.engines.local`) feeds it batches of one file; Spark calls it
through ``DataFrame.mapInArrow`` (:mod:`pipeline.engines.spark`); Ray Data could call it
through ``map_batches(batch_format="pyarrow")`` (docs/distributed.md).

A run has two passes. The first accumulates :class:`CorpusStats` (TF-IDF document frequencies over
distinct questions and compared responses, and the candidate count) with
:class:`CorpusStatsBuilder`, batch by batch, or merged from per-partition builders. The second
maps each batch of validated records (the columns of :data:`pipeline.schema.RECORD_SCHEMA` plus
``source`` and ``row_number``) to key columns, ``row_hash``, metric columns and ``signature``
with :class:`BatchScorer`. Both objects pickle, so a distributed engine ships them to its workers;
the embedding model is not pickled but loaded once per worker process, the first time a batch
needs it.

``row_hash`` identifies a record's content (every column of ``RECORD_SCHEMA``, not where the row
came from): XXH3-128 of a fixed, versioned encoding of the record (:func:`row_hashes`), 16 bytes.
It is stable across processes, machines and polars versions, which is what incremental
re-scoring (:mod:`pipeline.store`) needs.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.config import Config
from pipeline.embed import make_embedder
from pipeline.embed.cache import CachedEmbedder
from pipeline.metrics.lexical.tfidf import DocumentFrequencies, IdfTable, SpilledDocumentFrequencies
from pipeline.metrics.registry import (
    REGISTRY,
    MetricSpec,
    compared_response,
    intermediates,
    levels,
    metric_expressions,
)
from pipeline.metrics.spec import NEEDS_EMBEDDER, NEEDS_IDF, Inputs
from pipeline.metrics.user import resolve as resolve_metrics
from pipeline.schema import KEY_COLUMNS, PROVENANCE_SCHEMA, RECORD_SCHEMA
from pipeline.text.kernels.buffers import arrow_series
from pipeline.text.kernels.rows import hash_rows
from pipeline.text.language import LATIN, UNDETERMINED, language_stages

log = logging.getLogger(__name__)

#: The polars engine of the small plans around scoring (language, the Latin-script check).
ENGINE: Literal["in-memory"] = "in-memory"
#: A batch of at least this many rows whose responses average at least
#: :data:`STREAMING_RESPONSE_BYTES` bytes, scored by few metrics, runs on the streaming engine
#: (:func:`scoring_engine`).
STREAMING_ROWS = 10_000
STREAMING_RESPONSE_BYTES = 80
#: At most this many metric specs (dependencies included) is a narrow metric set.
NARROW_METRICS = 24


def scoring_engine(records: pl.DataFrame, n_metrics: int) -> Literal["in-memory", "streaming"]:
    """The polars engine of a batch's scoring plan. The in-memory engine evaluates a
    ``with_columns`` stage's expressions in parallel, the streaming engine a plan's row chunks
    (so two compiled kernels run at once over long texts). Measured (docs/benchmarks.md): wide
    metric sets and small batches run faster in memory (20 rows of the default metrics: 0.9 s
    against 1.25 s, mostly planning; 100k short rows: 20.6 s against 22.8 s), as do EM/F1,
    ROUGE and BLEU on 1M short answers (~28 bytes: 5.8 / 5.4 / 6.1 s against 5.9 / 5.9 / 6.3 s
    whole process, and less memory); the same metrics on 1M ~30-word answers run faster
    streaming (8.1 / 8.3 / 9.8 s against 9.3 / 9.1 / 12.8 s)."""
    narrow = n_metrics <= NARROW_METRICS and "response" in records.columns
    if records.height >= STREAMING_ROWS and narrow:
        response_bytes = records["response"].str.len_bytes().mean()
        if isinstance(response_bytes, (int, float)) and response_bytes >= STREAMING_RESPONSE_BYTES:
            return "streaming"
    return ENGINE

#: Column of every scored row: XXH3-128 of the record's content (``Binary``, 16 bytes).
ROW_HASH = "row_hash"
#: ``polars_hash.hash_rows`` encoding behind ``row_hash`` (its version 1 never changes), which
#: :mod:`pipeline.text.kernels.rows` writes.
ROW_ENCODING = 1
#: Record columns added after ``lang``: encoded in ``row_hash`` only on rows that set one.
LATE_COLUMNS: tuple[str, ...] = ("context_ids", "relevant_ids", "relevance")
#: Schema of a validated record batch, as :class:`BatchScorer` expects it.
RECORD_BATCH_SCHEMA: dict[str, pl.DataType] = {**RECORD_SCHEMA, **PROVENANCE_SCHEMA}


def row_hashes(records: pl.DataFrame) -> pl.Series:
    """``row_hash`` of each record: XXH3-128 of its ``RECORD_SCHEMA`` columns, 16 bytes.

    The columns are cast to their canonical dtypes and encoded as ``polars_hash.hash_rows``
    encodes a row (encoding version 1, which its authors fix forever: unambiguous, nulls and
    lists included, independent of column names and polars' memory layout), then hashed with
    XXH3-128 (xxHash 0.8, seed 0, ``polars_hash``'s ``nchash.xxh3_128``); the bytes are the
    hash's canonical big-endian form. A compiled kernel writes each row's encoding from the
    Arrow buffers and hashes it at once (:mod:`pipeline.text.kernels.rows`; the tests check its
    hashes against ``polars_hash``'s). Equal records hash equally in any process, on any
    machine, with any polars version. ``lang`` and the retrieval columns
    (:data:`LATE_COLUMNS`, added later) are encoded only where set, so records without them
    keep the hash they had before they existed.
    """
    content = records.select(
        pl.col(name).cast(dtype) if name in records.columns else pl.lit(None, dtype).alias(name)
        for name, dtype in RECORD_SCHEMA.items()
    )
    late = list(LATE_COLUMNS)
    # 0: the columns before ``lang``; 1: with ``lang``; 2: every column (a judged row).
    row_levels = content.select(
        pl.when(pl.any_horizontal(pl.col(late).is_not_null())).then(2)
        .when(pl.col("lang").is_not_null()).then(1)
        .otherwise(0).cast(pl.Int64)
    ).to_series().to_numpy()
    levels = [2 if name in LATE_COLUMNS else 1 if name == "lang" else 0 for name in content.columns]
    table = content.to_arrow(compat_level=pl.CompatLevel.newest())
    if len({tuple(len(chunk) for chunk in column.chunks) for column in table.columns}) > 1:
        table = table.combine_chunks()  # the kernel reads one chunk of every column at a time
    packed = np.empty((content.height, 2), dtype=">u8")
    start = 0
    for k, chunk in enumerate(table.columns[0].chunks if table.num_columns else []):
        rows = slice(start, start + len(chunk))
        low, high = hash_rows([column.chunks[k] for column in table.columns], levels,
                              row_levels[rows])
        packed[rows, 0] = high
        packed[rows, 1] = low
        start = rows.stop
    array = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(16), content.height, [None, pa.py_buffer(packed.tobytes())]
    )
    return arrow_series(ROW_HASH, array.cast(pa.binary()))


@dataclass(frozen=True)
class CorpusStats:
    """What every batch of a run shares: the candidate count and corpus document frequencies."""

    n_candidates: int = 1
    idf: IdfTable | None = None

    def digest(self) -> str | None:
        """sha256 of the document frequencies (None without them): equal digests, equal idf.

        The candidate count is left out: it changes how many columns are compared, never a
        value.
        """
        if self.idf is None:
            return None
        lines = self.idf.table.select(
            pl.concat_str(pl.col("word"), pl.col("df").cast(pl.String), separator="\t")
            .str.join("\n")
        ).item()
        text = f"{self.idf.n_documents}\n{lines or ''}"
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def needs_corpus(config: Config, specs: Iterable[MetricSpec]) -> bool:
    """Whether a run of ``specs`` under ``config`` counts corpus document frequencies (the first
    pass): a selected metric needs them, and its idf is the run's own (``tfidf_relevance``
    under the enhanced-framework preset reads that framework's fixed corpus instead)."""
    needs = {need for spec in specs for need in spec.needs}
    return NEEDS_IDF in needs and config.tfidf_mode() == "corpus-distinct"


def corpus_dependent(specs: Iterable[MetricSpec]) -> tuple[str, ...]:
    """Names of the ``specs`` whose values depend on corpus statistics, directly or through
    other metrics (``tfidf_relevance`` and the composites built on it)."""
    specs = tuple(specs)
    memo: dict[str, bool] = {}
    by_name = {**REGISTRY, **{spec.name: spec for spec in specs}}

    def depends(name: str) -> bool:
        if name not in memo:
            needs = by_name[name].needs
            memo[name] = NEEDS_IDF in needs or any(depends(n) for n in needs if n in by_name)
        return memo[name]

    return tuple(spec.name for spec in specs if depends(spec.name))


def candidate_count(records: pl.DataFrame) -> int:
    """Answer candidates of ``records``: the reference plus the longest ``references`` list
    (1 for no records). It decides how many reference columns are compared, never a value."""
    if records.height == 0:
        return 1
    longest = records.select(pl.col("references").list.len().max()).item()
    return 1 + int(longest or 0)


@dataclass
class CorpusStatsBuilder:
    """First pass: :meth:`add` every batch of records, then take the :meth:`result`.

    With ``spill_path`` the distinct texts go to that work file and DuckDB counts them at the
    end (:class:`~pipeline.metrics.lexical.tfidf.SpilledDocumentFrequencies`, bounded memory);
    without, their hashes are kept in memory (8 bytes per distinct text).
    """

    config: Config
    specs: tuple[MetricSpec, ...]
    n_candidates: int = 1
    spill_path: Path | None = None
    duckdb_memory: str = "512MB"
    _frequencies: object | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if needs_corpus(self.config, self.specs):
            self._frequencies = (
                DocumentFrequencies() if self.spill_path is None
                else SpilledDocumentFrequencies(self.spill_path, self.duckdb_memory)
            )

    def add(self, records: pl.DataFrame) -> None:
        """Count one batch of validated records."""
        if records.height == 0:
            return
        self.n_candidates = max(self.n_candidates, candidate_count(records))
        if self._frequencies is not None:
            texts = records.select(
                pl.concat_list(pl.col("question"), compared_response(self.config)).alias("text")
            ).explode("text")["text"]
            self._frequencies.add(texts)  # type: ignore[attr-defined]

    def result(self) -> CorpusStats:
        """The statistics of everything added."""
        log.debug("corpus statistics: counting document frequencies")
        idf = self._frequencies.idf() if self._frequencies is not None else None  # type: ignore[attr-defined]
        return CorpusStats(n_candidates=self.n_candidates, idf=idf)


def prepare_inputs(
    records: pl.DataFrame, config: Config, specs: Sequence[MetricSpec]
) -> Inputs:
    """What the metric builders share across batches, prepared once over ``records``.

    The candidate count; TF-IDF document frequencies over every distinct question and compared
    response of ``records`` (the first pass of a two-pass run); the embedding model behind its
    cache. Each is prepared only when a selected metric needs it.
    """
    needs = {need for spec in specs for need in spec.needs}
    corpus = CorpusStatsBuilder(config, tuple(specs))
    corpus.add(records)
    stats = corpus.result()
    embedder = process_embedder(config) if NEEDS_EMBEDDER in needs else None
    return Inputs(
        config=config, n_candidates=stats.n_candidates, idf=stats.idf, embedder=embedder
    )


def _has_auto_rules(config: Config) -> bool:
    return "auto" in (config.answer_scorer, config.rouge_tokenizer, config.bleu_tokenize)


def latin_rules(config: Config) -> Config:
    """``config`` with each ``auto`` text rule replaced by what ``auto`` does on Latin-script
    rows (SQuAD v2, rouge-score's tokenizer, 13a): for a batch whose every row is Latin, the
    same scores without the per-row choice (the signature stays ``config``'s)."""
    return replace(
        config,
        answer_scorer="squad-v2" if config.answer_scorer == "auto" else config.answer_scorer,
        rouge_tokenizer=(
            "rouge-score" if config.rouge_tokenizer == "auto" else config.rouge_tokenizer
        ),
        bleu_tokenize="13a" if config.bleu_tokenize == "auto" else config.bleu_tokenize,
    )


def with_language(frame: pl.LazyFrame) -> pl.LazyFrame:
    """``frame`` with each record's ``lang`` set: given, else the RGB ``language``, else
    detected from its script (:func:`pipeline.text.language.language_stages`)."""
    for stage in language_stages("lang", "language", "reference", "response"):
        frame = frame.with_columns(expr.alias(name) for name, expr in stage.items())
    return frame


def score_frame(
    records: pl.DataFrame | pl.LazyFrame,
    config: Config,
    *,
    specs: Sequence[MetricSpec] | None = None,
    inputs: Inputs | None = None,
    stages: Callable[[Inputs], Sequence[list[pl.Expr]]] | None = None,
) -> pl.LazyFrame:
    """Key columns, metric columns and ``signature`` for each record (lazy).

    ``records`` must have every column of :data:`pipeline.schema.RECORD_SCHEMA`. ``inputs``
    defaults to :func:`prepare_inputs` over ``records`` themselves; a batched run passes the
    inputs it prepared once over all its records, and ``stages``, the expressions of
    :func:`metric_stages` it built once for those inputs. The registry says which
    intermediates and metric levels to add; this function knows no metric details.
    """
    specs = tuple(specs) if specs is not None else resolve_metrics(config)
    frame = records.lazy()
    if inputs is None:
        inputs = prepare_inputs(frame.collect(engine=ENGINE), config, specs)
    frame = with_language(frame)
    if isinstance(records, pl.DataFrame) and _has_auto_rules(config):
        frame = frame.collect(engine=ENGINE).lazy()
        # An undetermined row with non-ASCII text may hold a script detection does not name,
        # which the ROUGE tokenizer's auto reads by its text: no shortcut for such a batch.
        unread = (pl.col("lang") == UNDETERMINED) & pl.col("_lang_wide").is_not_null()
        latin = frame.select((pl.col(LATIN) & ~unread.fill_null(False)).all())
        if latin.collect(engine=ENGINE).item():
            inputs = replace(inputs, config=latin_rules(config))
    for stage in (metric_stages(inputs, specs) if stages is None else stages(inputs)):
        frame = frame.with_columns(stage)
    keys = [pl.col(name) for name in KEY_COLUMNS]
    metrics = [pl.col(spec.name) for spec in specs]
    return frame.select(*keys, *metrics, pl.lit(config.signature()).alias("signature"))


def metric_stages(inputs: Inputs, specs: Sequence[MetricSpec]) -> list[list[pl.Expr]]:
    """The expressions :func:`score_frame` adds after the language, one list per stage: the
    intermediates the specs need, then each level of metrics. They depend on ``inputs`` and
    ``specs`` only, so a run builds them once, not once a batch (:class:`BatchScorer`)."""
    needed = {need for spec in specs for need in spec.needs}
    stages = [[expr.alias(name) for name, expr in stage.items()]
              for stage in intermediates(inputs, needed)]
    return stages + [list(metric_expressions(group, inputs)) for group in levels(specs)]


#: The record columns whose text makes a batch's intermediate memory grow (:func:`scored_texts`).
TEXT_BYTES_COLUMNS: tuple[str, ...] = ("question", "reference", "response", "contexts")


def scored_texts(inputs: Inputs, specs: Sequence[MetricSpec],
                 stages: Sequence[list[pl.Expr]] | None = None) -> tuple[str, ...]:
    """Those of :data:`TEXT_BYTES_COLUMNS` that the scoring plan of ``specs`` reads: the root
    columns of its expressions (language detection reads the reference and the response).
    A run's batches are sized by the bytes of these texts alone: a text no metric reads (the
    passages of a BLEU run) is never tokenized, so it adds nothing to a batch's memory.

    >>> from pipeline.config import Config
    >>> from pipeline.metrics.user import resolve
    >>> config = Config(metrics=("bleu",))
    >>> scored_texts(Inputs(config=config), resolve(config))
    ('reference', 'response')
    """
    language = [list(stage.values())
                for stage in language_stages("lang", "language", "reference", "response")]
    plan = metric_stages(inputs, specs) if stages is None else stages
    roots = {root for stage in [*language, *plan] for expr in stage
             for root in expr.meta.root_names()}
    return tuple(name for name in TEXT_BYTES_COLUMNS if name in roots)


@functools.cache
def _process_embedder(
    backend: str, cache_dir: str | None, batch_size: int, batch_tokens: int, device: str,
    cache_float16: bool,
) -> CachedEmbedder:
    """One embedder (model and cache handle) per process and setting: workers load it once."""
    return make_embedder(
        backend, cache_dir=Path(cache_dir) if cache_dir else None, batch_size=batch_size,
        batch_tokens=batch_tokens, device=device, cache_float16=cache_float16,
    )


def process_embedder(config: Config) -> CachedEmbedder:
    """This process's shared embedder for ``config``'s embedding settings."""
    cache_dir = config.embedding_cache_dir
    return _process_embedder(
        config.embedding_backend, str(cache_dir) if cache_dir else None,
        config.embedding_batch_size, config.embedding_batch_tokens, config.embedding_device,
        config.embedding_cache_float16,
    )


@dataclass(frozen=True)
class BatchScorer:
    """Maps a batch of validated records to its scores; picklable, the same on every engine.

    >>> from pipeline.config import Config
    >>> scorer = BatchScorer.for_config(Config(metrics=("answer_em",)))
    >>> scorer.output_schema.names[-3:]
    ['row_hash', 'answer_em', 'signature']
    """

    config: Config
    #: Names of the scored metrics (specs hold closures, so workers resolve them again).
    metrics: tuple[str, ...]
    stats: CorpusStats

    @functools.cached_property
    def specs(self) -> tuple[MetricSpec, ...]:
        """The specs of :attr:`metrics`, in registry order (user-defined metrics rebuilt from
        the config's definitions: a worker imports a Python metric's module)."""
        return tuple(resolve_metrics(self.config, self.metrics))

    def __getstate__(self) -> dict[str, object]:
        return {name: self.__dict__[name] for name in ("config", "metrics", "stats")}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)

    @classmethod
    def for_config(
        cls, config: Config, stats: CorpusStats | None = None,
        specs: Sequence[MetricSpec] | None = None,
    ) -> BatchScorer:
        """The scorer of ``config``'s metrics (``stats`` default to an empty corpus)."""
        specs = tuple(specs) if specs is not None else resolve_metrics(config)
        names = tuple(spec.name for spec in specs)
        return cls(config=config, metrics=names, stats=stats or CorpusStats())

    @functools.cached_property
    def output_schema(self) -> pa.Schema:
        """Key columns, ``row_hash``, one column per metric, ``signature``.

        Built from the declared dtypes (the record schema's and each spec's ``dtype``), so no
        scoring is needed to know it; ``tests/test_evaluate.py`` checks that scoring gives
        exactly this schema for every registered metric.
        """
        columns = {
            **{name: RECORD_BATCH_SCHEMA[name] for name in KEY_COLUMNS},
            ROW_HASH: pl.Binary(),
            **{spec.name: spec.dtype for spec in self.specs},
            "signature": pl.String(),
        }
        return pl.DataFrame(schema=columns).to_arrow().schema

    @functools.cached_property
    def scored_texts(self) -> tuple[str, ...]:
        """:func:`scored_texts` of this scorer's metrics."""
        inputs = self.inputs()
        return scored_texts(inputs, self.specs, self.stages(inputs))

    @functools.cached_property
    def _built_stages(self) -> list[tuple[Inputs, list[list[pl.Expr]]]]:
        return []

    def stages(self, inputs: Inputs) -> list[list[pl.Expr]]:
        """:func:`metric_stages` of this scorer's metrics for ``inputs``, built once for each
        configuration its batches use (its own and, for all-Latin batches, that of
        :func:`latin_rules`): building them took 0.03-0.08 s a batch for every metric."""
        for known, stages in self._built_stages:
            if (known.config == inputs.config and known.n_candidates == inputs.n_candidates
                    and known.idf is inputs.idf and known.embedder is inputs.embedder):
                return stages
        stages = metric_stages(inputs, self.specs)
        self._built_stages.append((inputs, stages))
        return stages

    @functools.cached_property
    def embeds(self) -> bool:
        """Whether a selected metric needs the embedding model."""
        return NEEDS_EMBEDDER in {need for spec in self.specs for need in spec.needs}

    def inputs(self) -> Inputs:
        """The metric builders' inputs; the embedder is this process's shared one."""
        embedder = None
        if self.embeds:
            embedder = process_embedder(self.config)
        return Inputs(
            config=self.config, n_candidates=self.stats.n_candidates, idf=self.stats.idf,
            embedder=embedder,
        )

    def score_frame(self, records: pl.DataFrame) -> pl.DataFrame:
        """Scores of a polars frame of validated records (``row_hash`` computed if absent)."""
        if ROW_HASH not in records.columns:
            records = records.with_columns(row_hashes(records))
        return self._score(records)

    def refresh(self, scored: pl.DataFrame, names: Sequence[str]) -> pl.DataFrame:
        """Recompute the metrics ``names`` of rows that hold records *and* earlier scores.

        Incremental runs use it for every reused row (``lang`` is set as in scoring) and, when
        the corpus statistics changed, to recompute: the other metric columns are kept and feed
        the recomputed ones that need them.
        """
        # A reused row's language is the record's, set again like a scored row's.
        scored = with_language(scored.lazy()).collect(engine=ENGINE).select(scored.columns)
        if not names:
            return scored
        stale = tuple(spec for spec in self.specs if spec.name in set(names))
        fresh = score_frame(
            scored.drop(names), self.config, specs=stale, inputs=self.inputs()
        ).select(*names).collect(engine=scoring_engine(scored, len(stale)))
        return scored.with_columns(fresh)

    def score(self, batch: pa.RecordBatch | pa.Table) -> pa.RecordBatch:
        """Scores of one Arrow batch of validated records, in :attr:`output_schema`."""
        frame = pl.from_arrow(batch)
        assert isinstance(frame, pl.DataFrame)
        table = self.score_frame(frame).to_arrow().cast(self.output_schema)
        return table.combine_chunks().to_batches()[0] if table.num_rows else (
            pa.RecordBatch.from_pylist([], schema=self.output_schema)
        )

    def __call__(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """The ``mapInArrow`` / ``map_batches`` form: an iterator of batches to one of scores."""
        for batch in batches:
            if batch.num_rows:
                yield self.score(batch)

    def _score(self, records: pl.DataFrame) -> pl.DataFrame:
        if ROW_HASH not in records.columns:
            records = records.with_columns(pl.lit(None, pl.Binary).alias(ROW_HASH))
        scored = score_frame(records, self.config, specs=self.specs, inputs=self.inputs(),
                             stages=self.stages)
        metrics = [spec.name for spec in self.specs]
        return (
            scored.collect(engine=scoring_engine(records, len(self.specs)))
            .with_columns(records[ROW_HASH])
            .select(*KEY_COLUMNS, ROW_HASH, *metrics, "signature")
        )
