"""The vocabulary of the two statistics tables: their columns (:func:`interval_schema`,
:func:`comparison_schema`), the default slices of each, the names of the method, the tests
and the correction they record, the defaults (1000 resamples, seed 0, 95 %), and which
columns of the scores are metrics (:func:`metric_columns`: kind ``score`` or ``flag``) under
which name (:data:`METRIC_NAMES`: the name the slice views ``metrics_by_slice.sql`` give their
mean). The grain and meaning of every row are defined in :mod:`pipeline.stats`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import polars as pl

from pipeline.io.layout import COMPARISONS_FILE, INTERVALS_FILE
from pipeline.metrics.spec import MEAN_KINDS
from pipeline.metrics.user import scores_catalog
from pipeline.schema import RECORD_SCHEMA

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0
CONFIDENCE = 0.95
#: Family-wise level of the Holm-adjusted tests.
ALPHA = 0.05
#: The normal quantile of a two-sided 95% interval.
Z_95 = 1.959963984540054


BOOTSTRAP_METHOD = "percentile bootstrap over questions"
TEST_MCNEMAR = "mcnemar exact"
TEST_PERMUTATION = "paired permutation"
CORRECTION = "holm"

#: Rows of the two models are paired on these columns (nulls equal).
PAIR_KEYS: tuple[str, ...] = ("id", "run", "noise_level", "task")
#: The name of the slice of all rows.
ALL = "all"
#: Slice columns every table has a typed column for, in this order (null where a row's slice
#: does not use them); the other columns of requested slices follow them.
SLICE_COLUMNS: tuple[str, ...] = ("noise_level", "category", "question_type", "task")
#: Default slices of the intervals (always per model): all rows, each noise level, each category.
INTERVAL_SLICES: tuple[tuple[str, ...], ...] = ((), ("noise_level",), ("category",))
#: Default slices of the comparisons: all rows, each noise level, category and RGB task.
COMPARISON_SLICES: tuple[tuple[str, ...], ...] = (
    (), ("noise_level",), ("category",), ("task",),
)
#: Most combinations of values (the product of each column's distinct non-null values) a
#: requested slice may have: its sums take groups x clusters x metrics floats.
MAX_SLICE_CELLS = 256
#: A metric's name in the tables where the slice views (``metrics_by_slice.sql``) name its mean
#: otherwise; every other metric keeps its column name.
METRIC_NAMES: Mapping[str, str] = MappingProxyType({
    "citation_precision": "citation_precision_macro",
    "citation_recall": "citation_recall_macro",
    "citation_f1": "citation_f1_macro",
    "abstained": "abstain_rate",
    "abstention_correct": "abstention_accuracy",
    "insufficient_context_detected": "insufficient_context_rate",
    "total_tokens": "mean_total_tokens",
})

#: At most this many distinct ids: the exact cluster bootstrap (one generator per group). Its
#: cost grows as groups x ids x resamples (about 15 ns per draw: 1,333 ids in 84 groups took
#: 0.9 s, more than 1M rows bucketed); beyond it ids are hashed into :data:`BUCKETS` buckets,
#: which then hold about one id each until the ids outnumber the buckets.
EXACT_MAX_IDS = 256
#: Buckets of the bucketed regime (a power of two; see :func:`bucket_of`).
BUCKETS = 1024


#: Up to this many models the comparisons pair every two of them; with more, each model is
#: compared with one baseline model (``max_all_pairs`` of :func:`write_stats`).
MAX_ALL_PAIRS = 20
#: The metric whose best mean over all rows picks the baseline when none is named (without it,
#: the first metric that has a better direction, in registry order).
PRIMARY_METRIC = "answer_f1"
#: Values of the ``pairing`` column of the comparisons: every two models, or each model and
#: the ``baseline``.
PAIRING_ALL = "all pairs"
PAIRING_BASELINE = "baseline"
#: The two files :func:`write_stats` writes, in the order they are put in place.
STATS_FILES: tuple[str, ...] = (INTERVALS_FILE, COMPARISONS_FILE)
#: Key of the Parquet key-value metadata that ties the two files of one :func:`write_stats`
#: (:func:`stats_id`; :func:`check_stats_pair` compares them).
STATS_ID_KEY = "rag_eval.stats_id"


#: Key columns whose type the scores contract fixes (others keep the type they have).
_KEY_DTYPES: dict[str, pl.DataType] = {
    c: RECORD_SCHEMA[c] for c in ("model", "run", *SLICE_COLUMNS)
}
#: Columns a slice cannot use: the model is a key of every interval and the pair of every
#: comparison, the id is the cluster.
_NOT_SLICES: tuple[str, ...] = ("model", "id")

_INTERVAL_VALUES: dict[str, pl.DataType] = {
    "metric": pl.String(),
    "n": pl.Int64(),
    "mean": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "wilson_low": pl.Float64(),
    "wilson_high": pl.Float64(),
    "resamples": pl.Int64(),
    "seed": pl.Int64(),
    "method": pl.String(),
}
_COMPARISON_VALUES: dict[str, pl.DataType] = {
    "metric": pl.String(),
    "n_pairs": pl.Int64(),
    "mean_a": pl.Float64(),
    "mean_b": pl.Float64(),
    "diff": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "test": pl.String(),
    "n_a_only": pl.Int64(),
    "n_b_only": pl.Int64(),
    "p_value": pl.Float64(),
    "p_adjusted": pl.Float64(),
    "correction": pl.String(),
    "significant": pl.Boolean(),
    "resamples": pl.Int64(),
    "seed": pl.Int64(),
    "pairing": pl.String(),
    "baseline": pl.String(),
}


def interval_schema(keys: Mapping[str, pl.DataType]) -> dict[str, pl.DataType]:
    """Columns of ``intervals.parquet`` with the slice columns ``keys`` (name -> dtype)."""
    return {"slice": pl.String(), "model": pl.String(), **keys, **_INTERVAL_VALUES}


def comparison_schema(keys: Mapping[str, pl.DataType]) -> dict[str, pl.DataType]:
    """Columns of ``comparisons.parquet`` with the slice columns ``keys`` (name -> dtype)."""
    return {"model_a": pl.String(), "model_b": pl.String(), "slice": pl.String(), **keys,
            **_COMPARISON_VALUES}


_DEFAULT_KEYS = {c: _KEY_DTYPES[c] for c in SLICE_COLUMNS}
#: The tables' columns with the default slices only.
INTERVAL_SCHEMA: dict[str, pl.DataType] = interval_schema(_DEFAULT_KEYS)
COMPARISON_SCHEMA: dict[str, pl.DataType] = comparison_schema(_DEFAULT_KEYS)


@dataclass(frozen=True)
class StatsSummary:
    """What :func:`write_stats` wrote."""

    intervals_path: Path
    comparisons_path: Path
    intervals: int
    comparisons: int
    significant: int
    resamples: int
    seed: int
    #: Names of the slices of the comparisons (the intervals have the same but ``task``).
    slices: tuple[str, ...] = ()
    #: Which pairs the comparisons hold (:class:`Pairing`): the rule, the baseline, and why.
    pairing: str = PAIRING_ALL
    baseline: str | None = None
    pairing_reason: str = ""


def metric_columns(scores_schema: Mapping[str, pl.DataType]) -> list[str]:
    """Metrics whose mean is a result (kind ``score`` or ``flag``), in registry order, then the
    user-defined ones (:func:`pipeline.metrics.user.scores_catalog`).

    Only those present in ``scores_schema`` with a numeric column. Sufficient statistics (kind
    ``count``, e.g. ``rouge_1_overlap``) are left out: their means are not scores; labels and
    lists have no mean.

    >>> metric_columns({"id": pl.String(), "answer_em": pl.Int8(), "citation_n_pred": pl.Int64()})
    ['answer_em']
    """
    columns = []
    for name, spec in scores_catalog(scores_schema).items():
        dtype = scores_schema[name]
        if not dtype.is_numeric() or spec.kind not in MEAN_KINDS:
            continue
        columns.append(name)
    return columns


def binary_columns(scores_schema: Mapping[str, pl.DataType]) -> list[str]:
    """Metrics of :func:`metric_columns` that are 0/1 flags (kind ``flag``).

    >>> binary_columns({"answer_em": pl.Int8(), "answer_f1": pl.Float64()})
    ['answer_em']
    """
    catalog = scores_catalog(scores_schema)
    return [name for name in metric_columns(scores_schema) if catalog[name].kind == "flag"]


def metric_name(column: str) -> str:
    """The name of a metric column's mean in the tables: the slice views' name for it.

    >>> metric_name("abstained"), metric_name("answer_f1")
    ('abstain_rate', 'answer_f1')
    """
    return METRIC_NAMES.get(column, column)
