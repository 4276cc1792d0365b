"""Uncertainty and significance for ``scores.parquet``: bootstrap intervals and paired model tests.

Both tables are computed per *slice*: a tuple of columns of the scores (``()`` is ``all``, every
row). A slice's name is ``all`` or its columns joined by commas (``question_type,noise_level``).
Every table has one typed column per slice column, named and typed as in the scores (the
contract's ``noise_level`` double, ``category``, ``question_type`` and ``task`` text; a requested
column its own type, a categorical as text), null where the column is not part of the row's
slice: :data:`SLICE_COLUMNS` always, then the other columns of the requested slices in the
order given. Rows with a null in one of their slice's columns are left out of that slice.
Metrics are named as the slice views name their mean (:data:`METRIC_NAMES`: ``abstain_rate``
is the mean of ``abstained``); a metric whose mean no view shows keeps its column name.

Two tables are written beside ``scores.parquet``:

* ``intervals.parquet`` -- grain: one row per (slice, model, slice columns, metric). Default
  slices (:data:`INTERVAL_SLICES`): ``all`` (the ``by_model`` view; a null model is its own
  group), ``noise_level`` (``by_model_noise``) and ``category`` (``by_model_category``).
  ``mean`` and ``n`` are the plain mean and count of the non-null values; ``ci_low`` /
  ``ci_high`` are the 2.5th and 97.5th percentiles (numpy ``linear``) of the resampled means of
  a percentile bootstrap over *questions*: rows are clustered by ``id`` (a question can appear
  once per noise level), ids are drawn with replacement, and a resampled mean is
  ``sum(w * id_sums) / sum(w * id_counts)``. ``wilson_low`` / ``wilson_high`` are the Wilson
  score interval (Wilson 1927) of binary metrics.
* ``comparisons.parquet`` -- grain: one row per (model_a, model_b, slice, slice columns,
  metric), ``model_a < model_b``. Rows of the two models are paired on (id, run, noise_level,
  task), nulls equal; a question only one model answered is left out, and so is a key under
  which a model has several rows (which row to pair is ambiguous; a warning is logged).
  Default slices (:data:`COMPARISON_SLICES`): ``all`` and every non-null value of
  ``noise_level``, ``category`` and ``task``. A pair's value of a column that is not a pairing
  key (``category``, ``question_type``) is model a's, or model b's where a's is null.
  ``diff = mean_a - mean_b`` over pairs where both values are present, with a paired
  bootstrap interval (clustered by ``id``).
  Binary metrics are tested with the exact two-sided McNemar test (``n_a_only`` pairs where
  only model a scored 1, ``n_b_only`` the converse); other metrics with a paired permutation
  test that flips the signs of the per-question summed differences,
  ``p = (1 + #{|T*| >= |T|}) / (B + 1)``. ``p_adjusted`` is Holm's step-down adjustment over
  one family of rows of one (model_a, model_b, metric): the default slices together, and each
  requested slice on its own (so asking for a slice never changes the default rows);
  ``significant`` is ``p_adjusted < 0.05``.

Requested slices (``by``; ``rag-eval stats DIR --by question_type,noise_level``) are added to
the defaults of both tables; one equal to a default (as a set of columns) is that default. A
requested slice may have at most :data:`MAX_SLICE_CELLS` combinations of values.

Rows whose metric has no value in a group (``n == 0`` / ``n_pairs == 0``) are left out.
With ``resamples=0`` the bootstrap intervals and permutation p-values are null; Wilson
intervals and McNemar tests are still computed.

How it is computed. The scores are read once (or in a few passes, see below), only the key and
metric columns, and reduced to *sufficient statistics*: per (group, cluster) the sums and counts
of each metric, per (model pair, slice value, cluster) the sums of ``a - b`` and the number of
pairs with both values. The default slices come from one fine grid over their columns (each
slice a sum over the others), each requested slice from its own grid. Every resample is then a
matrix product over clusters; no row is held after its pass. The rule that picks the cluster is
global (one per table, from the distinct ids of all the scores):

* **Exact** (at most :data:`EXACT_MAX_IDS` = 256 distinct ids): a cluster is an id, and each
  group has its own generator ``SeedSequence([seed, *sha256(JSON group key)[:16] as 4 uint32])``
  with keys ``("interval", slice, model, *values)``, ``("bootstrap", model_a, model_b, slice,
  *values)`` and ``("permutation", ...)``, where ``values`` are the row's values of the slice's
  columns in the slice's order (JSON; a value JSON has no type for is its ``str``). Each
  resample draws the group's ids with replacement (``rng.integers``, ids in ascending order,
  a null id first) and the sign-flip test draws ``rng.integers(0, 2)`` per id: the cluster
  bootstrap computed group by group, and a group's numbers do not depend on other groups.
* **Bucketed** (more ids): ids are hashed into :data:`BUCKETS` = 1024 buckets by
  :func:`bucket_of` (the top 10 bits of md5 of the UTF-8 id, stable across library versions), and
  buckets are resampled instead of ids. One weight matrix ``W`` (resamples x buckets; each row
  the counts of ``buckets`` uniform draws, i.e. multinomial) comes from
  ``SeedSequence([seed, *sha256(["interval", "buckets"])])`` for the intervals and from
  ``["bootstrap", "buckets"]`` for the comparisons, and is applied to every group at once:
  questions are resampled jointly across slices, which is a valid cluster bootstrap since a
  bucket is a union of whole questions. A small group sees ``W`` restricted to the few buckets
  it occupies: close to the Poisson(1) bootstrap. The sign-flip test uses one sign matrix from
  ``["permutation", "buckets"]`` on the bucket sums of the per-question differences: a sum of
  independent symmetric differences is symmetric, so the test stays a valid randomization
  test. The numbers depend on the seed and the data only; ``method`` names the buckets.

Both regimes give the same ``n``, ``mean``, Wilson intervals and McNemar tests (closed forms
over the same counts). Float sums are added by ``np.bincount`` in row order, so the same input
gives byte-identical files. Above :data:`PASS_ROWS` rows the rows are read in passes over
disjoint sets of clusters (``cluster % passes``), which bounds memory by the rows of one pass
plus groups x clusters; totals across passes may then differ from one pass in the last bit.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import duckdb
import numpy as np
import polars as pl

from pipeline.io.atomic import write_parquet_atomic
from pipeline.io.layout import COMPARISONS_FILE, INTERVALS_FILE, SCORES_FILE
from pipeline.metrics.registry import REGISTRY
from pipeline.metrics.spec import MEAN_KINDS
from pipeline.schema import RECORD_SCHEMA, InputError

__all__ = [
    "ALL",
    "COMPARISONS_FILE",
    "COMPARISON_SCHEMA",
    "COMPARISON_SLICES",
    "CONFIDENCE",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "INTERVALS_FILE",
    "INTERVAL_SCHEMA",
    "INTERVAL_SLICES",
    "MAX_SLICE_CELLS",
    "METRIC_NAMES",
    "SLICE_COLUMNS",
    "StatsSummary",
    "benjamini_hochberg",
    "binary_columns",
    "bucket_of",
    "check_slices",
    "comparison_table",
    "holm",
    "interval_table",
    "mcnemar_exact_p",
    "metric_columns",
    "metric_name",
    "parse_slice",
    "slice_name",
    "wilson_interval",
    "write_stats",
]

log = logging.getLogger(__name__)

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
#: Rows of the scores grouped by pairing key in one pass of the comparisons.
PASS_ROWS = 2_000_000

#: Elements of one resampling matrix (B x n_ids): 2**24 float64 = 128 MiB; with the int32
#: draws and the int64 counts behind it a chunk peaks near 320 MiB.
_CHUNK_ELEMENTS = 2**24

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


# --------------------------------------------------------------------------- columns


def metric_columns(scores_schema: Mapping[str, pl.DataType]) -> list[str]:
    """Registered metrics whose mean is a result (kind ``score`` or ``flag``), in registry order.

    Only those present in ``scores_schema`` with a numeric column. Sufficient statistics (kind
    ``count``, e.g. ``rouge_1_overlap``) are left out: their means are not scores; labels and
    lists have no mean.

    >>> metric_columns({"id": pl.String(), "answer_em": pl.Int8(), "citation_n_pred": pl.Int64()})
    ['answer_em']
    """
    columns = []
    for name, spec in REGISTRY.items():
        dtype = scores_schema.get(name)
        if dtype is None or not dtype.is_numeric() or spec.kind not in MEAN_KINDS:
            continue
        columns.append(name)
    return columns


def binary_columns(scores_schema: Mapping[str, pl.DataType]) -> list[str]:
    """Metrics of :func:`metric_columns` that are 0/1 flags (kind ``flag``).

    >>> binary_columns({"answer_em": pl.Int8(), "answer_f1": pl.Float64()})
    ['answer_em']
    """
    return [name for name in metric_columns(scores_schema) if REGISTRY[name].kind == "flag"]


def metric_name(column: str) -> str:
    """The name of a metric column's mean in the tables: the slice views' name for it.

    >>> metric_name("abstained"), metric_name("answer_f1")
    ('abstain_rate', 'answer_f1')
    """
    return METRIC_NAMES.get(column, column)


# --------------------------------------------------------------------------- slices


def slice_name(columns: Sequence[str]) -> str:
    """The name of a slice: ``all`` for no column, else its columns joined by commas.

    >>> slice_name(()), slice_name(("question_type", "noise_level"))
    ('all', 'question_type,noise_level')
    """
    return ",".join(columns) if columns else ALL


def parse_slice(text: str) -> tuple[str, ...]:
    """The columns of a slice written as ``COLUMN[,COLUMN...]`` (``all``: no column).

    >>> parse_slice("question_type, noise_level")
    ('question_type', 'noise_level')
    """
    columns = tuple(c.strip() for c in text.split(","))
    if columns == (ALL,):
        return ()
    if not all(columns):
        raise InputError(f"a slice is COLUMN[,COLUMN...]; got {text!r}")
    return columns


def _sliceable(dtype: pl.DataType) -> bool:
    return not dtype.is_nested() and not isinstance(dtype, pl.Object | pl.Binary)


def _key_dtype(column: str, dtype: pl.DataType | None) -> pl.DataType:
    """The type of a slice column in the tables (and of its values while coding)."""
    if column in _KEY_DTYPES or dtype is None:
        return _KEY_DTYPES.get(column, pl.String())
    if isinstance(dtype, pl.Categorical | pl.Enum):
        return pl.String()
    return dtype


def check_slices(
    scores_schema: Mapping[str, pl.DataType], by: Iterable[str | Sequence[str]]
) -> tuple[tuple[str, ...], ...]:
    """The requested slices ``by`` (each a tuple of columns, or a text for :func:`parse_slice`)
    checked against the scores: every column exists, is not ``model`` or ``id``, holds plain
    values and is named unlike a column of the tables; a column repeated within a slice is an
    error, a slice repeated (as a set) is dropped.

    An unknown column raises :class:`~pipeline.schema.InputError` naming the columns a slice
    may use.

    >>> check_slices({"id": pl.String(), "question_type": pl.String(),
    ...               "noise_level": pl.Float64()}, ["question_type,noise_level"])
    (('question_type', 'noise_level'),)
    """
    reserved = set(interval_schema({})) | set(comparison_schema({}))
    available = [c for c, dtype in scores_schema.items()
                 if c not in _NOT_SLICES and c not in reserved and _sliceable(dtype)]
    slices: list[tuple[str, ...]] = []
    seen: set[frozenset[str]] = set()
    for given in by:
        columns = parse_slice(given) if isinstance(given, str) else tuple(given)
        if len(set(columns)) != len(columns):
            raise InputError(f"slice {slice_name(columns)!r} names a column twice")
        for column in columns:
            if column in _NOT_SLICES:
                raise InputError(
                    f"{column!r} cannot be a slice column: every interval is per model and "
                    "every comparison a pair of models, and the id is what is resampled"
                )
            if column not in available:
                problem = ("is not a column of the scores" if column not in scores_schema
                           else "cannot be a slice column")
                keys = [c for c in available if c not in REGISTRY]
                metrics = len(available) - len(keys)
                raise InputError(
                    f"slice column {column!r} {problem}; available: {', '.join(keys)}"
                    + (f" (and the {metrics} metric columns)" if metrics else "")
                )
        if frozenset(columns) not in seen:
            seen.add(frozenset(columns))
            slices.append(columns)
    return tuple(slices)


# --------------------------------------------------------------------------- closed forms


def wilson_interval(
    successes: np.ndarray, n: np.ndarray, z: float = Z_95
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a binomial proportion; NaN where ``n == 0``.

    >>> low, high = wilson_interval(np.array([8]), np.array([10]))
    >>> round(float(low[0]), 4), round(float(high[0]), 4)
    (0.4902, 0.9433)
    """
    k = np.asarray(successes, dtype=np.float64)
    total = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / total
        z2 = z * z
        denominator = 1.0 + z2 / total
        center = (p + z2 / (2.0 * total)) / denominator
        half = z / denominator * np.sqrt(p * (1.0 - p) / total + z2 / (4.0 * total * total))
    low = np.where(total > 0, np.clip(center - half, 0.0, 1.0), np.nan)
    high = np.where(total > 0, np.clip(center + half, 0.0, 1.0), np.nan)
    return low, high


#: ln(k!) for small k, exact to double precision; Stirling's series beyond.
_LOG_FACTORIAL_TABLE = np.array([math.lgamma(k + 1.0) for k in range(256)])


def _log_factorial(k: np.ndarray) -> np.ndarray:
    x = np.asarray(k, dtype=np.float64)
    small = x < _LOG_FACTORIAL_TABLE.size
    big = np.where(small, float(_LOG_FACTORIAL_TABLE.size), x)
    inverse = 1.0 / big
    stirling = (
        big * np.log(big) - big + 0.5 * np.log(2.0 * np.pi * big)
        + inverse * (1.0 / 12.0 - inverse**2 * (1.0 / 360.0 - inverse**2 / 1260.0))
    )
    table = _LOG_FACTORIAL_TABLE[np.where(small, x, 0).astype(np.int64)]
    return np.where(small, table, stirling)


def mcnemar_exact_p(b: int | np.ndarray, c: int | np.ndarray) -> Any:
    """Two-sided exact McNemar p-value: ``min(1, 2 P(X <= min(b, c)))``, ``X ~ Bin(b + c, 1/2)``.

    ``b + c == 0`` gives 1. The lower tail is summed in log space downward from ``k = min(b, c)``
    with the ratio ``pmf(j - 1) / pmf(j) = j / (n - j + 1)``; terms more than
    ``sqrt(30 n) + 2`` steps below ``k`` are below ``e**-60`` of ``pmf(k)`` and are skipped, so
    ``n`` in the millions costs a few thousand terms. Scalars in, a float out.

    >>> round(mcnemar_exact_p(1, 6), 12)  # 2 * (1 + 7) / 2**7
    0.125
    """
    b_arr, c_arr = np.broadcast_arrays(np.asarray(b, dtype=np.int64), np.asarray(c, dtype=np.int64))
    if np.any(b_arr < 0) or np.any(c_arr < 0):
        raise ValueError("McNemar counts must not be negative")
    scalar = b_arr.ndim == 0
    n = (b_arr + c_arr).ravel()
    k = np.minimum(b_arr, c_arr).ravel()
    steps = np.minimum(k, np.ceil(np.sqrt(30.0 * n)).astype(np.int64) + 2)
    log_pmf_k = _log_factorial(n) - _log_factorial(k) - _log_factorial(n - k) - n * math.log(2.0)
    log_tail = np.empty(n.size)
    width = int(steps.max(initial=0))
    rows_per_chunk = max(1, _CHUNK_ELEMENTS // 4 // max(width, 1))
    offsets = np.arange(width)
    for start in range(0, n.size, rows_per_chunk):
        part = slice(start, start + rows_per_chunk)
        j = k[part, None] - offsets[None, :]  # pmf(j - 1) / pmf(j) for j = k, k - 1, ...
        inside = offsets[None, :] < steps[part, None]
        above = np.where(inside, n[part, None] - j + 1, 1).astype(np.float64)
        below = np.where(inside, j, 1).astype(np.float64)
        ratios = np.where(inside, np.log(below) - np.log(above), -np.inf)
        with np.errstate(invalid="ignore"):
            cumulative = np.cumsum(ratios, axis=1)
        cumulative = np.where(inside, cumulative, -np.inf)
        terms = np.concatenate([np.zeros((cumulative.shape[0], 1)), cumulative], axis=1)
        log_tail[part] = log_pmf_k[part] + np.logaddexp.reduce(terms, axis=1)
    p = np.where(n == 0, 1.0, np.minimum(1.0, 2.0 * np.exp(log_tail)))
    if scalar:
        return float(p[0])
    return p.reshape(b_arr.shape)


def _ranked(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Ascending order of ``p`` (NaN last), the sorted values, and the number of non-NaN values."""
    order = np.argsort(p, kind="stable")
    return order, p[order], int(np.count_nonzero(~np.isnan(p)))


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values; NaN stays NaN and does not count as a test.

    >>> holm(np.array([0.01, 0.04, 0.03, np.nan])).tolist()
    [0.03, 0.06, 0.06, nan]
    """
    values = np.asarray(p, dtype=np.float64)
    order, ranked, m = _ranked(values)
    adjusted_sorted = np.maximum.accumulate(
        np.minimum(1.0, (m - np.arange(ranked.size)) * np.nan_to_num(ranked, nan=0.0))
    )
    adjusted = np.empty_like(values)
    adjusted[order] = adjusted_sorted
    return np.where(np.isnan(values), np.nan, adjusted)


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q-values); NaN stays NaN and does not count.

    >>> benjamini_hochberg(np.array([0.01, 0.04, 0.03, np.nan])).tolist()
    [0.03, 0.04, 0.04, nan]
    """
    values = np.asarray(p, dtype=np.float64)
    order, ranked, m = _ranked(values)
    rank = np.arange(1, ranked.size + 1)
    scaled = np.where(rank <= m, m / rank * ranked, np.inf)
    adjusted_sorted = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    adjusted = np.empty_like(values)
    adjusted[order] = adjusted_sorted
    return np.where(np.isnan(values), np.nan, adjusted)


# --------------------------------------------------------------------------- resampling


def _check_resamples(resamples: int) -> None:
    if isinstance(resamples, bool) or not isinstance(resamples, int | np.integer):
        raise ValueError(f"resamples must be an integer, got {resamples!r}")
    if resamples < 0:
        raise ValueError(f"resamples must be >= 0, got {resamples}")


def _check_buckets(buckets: int) -> None:
    if not (8 <= buckets <= 2**16 and buckets & (buckets - 1) == 0):
        raise ValueError(f"buckets must be a power of two in [8, 65536], got {buckets!r}")


def _rng(seed: int, *key: Any) -> np.random.Generator:
    """A generator for one group: the seed plus four words of sha256 of the group key as JSON."""
    digest = hashlib.sha256(json.dumps(key, default=str).encode()).digest()
    words = np.frombuffer(digest[:16], dtype="<u4").tolist()
    return np.random.default_rng(np.random.SeedSequence([seed, *words]))


def _chunks(resamples: int, n_ids: int) -> list[int]:
    size = max(1, _CHUNK_ELEMENTS // max(n_ids, 1))
    return [min(size, resamples - start) for start in range(0, resamples, size)]


def _bootstrap_means(
    sums: np.ndarray, counts: np.ndarray, rng: np.random.Generator, resamples: int
) -> np.ndarray:
    """Resampled means (resamples x metrics): ids drawn with replacement, NaN where none counts."""
    n_ids, n_metrics = sums.shape
    means = np.full((resamples, n_metrics), np.nan)
    if n_ids == 0:
        return means
    start = 0
    for size in _chunks(resamples, n_ids):
        draws = rng.integers(0, n_ids, size=(size, n_ids), dtype=np.int32)
        draws += (np.arange(size, dtype=np.int32) * n_ids)[:, None]
        counts_drawn = np.bincount(draws.ravel(), minlength=size * n_ids)
        del draws
        weights_f = counts_drawn.reshape(size, n_ids).astype(np.float64)
        del counts_drawn
        with np.errstate(invalid="ignore", divide="ignore"):
            means[start : start + size] = (weights_f @ sums) / (weights_f @ counts)
        start += size
    return means


def _percentile_interval(means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """2.5th and 97.5th percentiles of each column, ignoring NaN; NaN for an all-NaN column.

    numpy's ``linear`` method (virtual index ``q (m - 1)`` over the ``m`` sorted non-NaN values),
    computed for all columns at once (``np.nanpercentile`` loops over columns in Python).
    """
    ordered = np.sort(means, axis=0)  # NaN sorts last
    valid = np.count_nonzero(~np.isnan(ordered), axis=0)
    columns = np.arange(ordered.shape[1])
    tail = (1.0 - CONFIDENCE) / 2.0
    bounds = []
    for q in (tail, 1.0 - tail):
        position = q * np.maximum(valid - 1, 0)
        below = np.floor(position).astype(np.int64)
        above = np.minimum(below + 1, np.maximum(valid - 1, 0))
        fraction = position - below
        if ordered.shape[0] == 0:
            bounds.append(np.full(ordered.shape[1], np.nan))
            continue
        low_value, high_value = ordered[below, columns], ordered[above, columns]
        value = low_value + fraction * (high_value - low_value)
        bounds.append(np.where(valid > 0, value, np.nan))
    return bounds[0], bounds[1]


def _permutation_p(
    summed_diffs: np.ndarray, rng: np.random.Generator, resamples: int
) -> np.ndarray:
    """Two-sided sign-flip p-values of per-question summed differences (ids x metrics)."""
    n_ids, n_metrics = summed_diffs.shape
    observed = np.abs(summed_diffs.sum(axis=0))
    # Flipped sums equal to the observed one up to rounding count as at least as extreme.
    tolerance = 1e-9 * np.maximum(1.0, np.abs(summed_diffs).sum(axis=0))
    extreme = np.zeros(n_metrics, dtype=np.int64)
    if n_ids == 0:
        return np.ones(n_metrics)
    for size in _chunks(resamples, n_ids):
        signs = rng.integers(0, 2, size=(size, n_ids), dtype=np.int8).astype(np.float64)
        signs = 2.0 * signs - 1.0
        flipped = np.abs(signs @ summed_diffs)
        extreme += np.count_nonzero(flipped >= observed - tolerance, axis=0)
    return (1.0 + extreme) / (resamples + 1.0)


def _bucket_weights(rng: np.random.Generator, resamples: int, buckets: int) -> np.ndarray:
    """Multinomial bootstrap weights (resamples x buckets, int32): ``buckets`` draws per row.

    A draw is the top ``log2(buckets)`` bits of a little-endian uint32 of ``rng.bytes``, so it is
    uniform over the buckets without rejection.
    """
    shift = np.uint32(32 - (buckets.bit_length() - 1))
    weights = np.empty((resamples, buckets), dtype=np.int32)
    start = 0
    for size in _chunks(resamples, buckets):
        raw = np.frombuffer(rng.bytes(4 * size * buckets), dtype="<u4")
        draws = (raw >> shift).astype(np.int64).reshape(size, buckets)
        draws += (np.arange(size, dtype=np.int64) * buckets)[:, None]
        counts = np.bincount(draws.ravel(), minlength=size * buckets)
        weights[start : start + size] = counts.reshape(size, buckets)
        start += size
    return weights


def _bucket_signs(rng: np.random.Generator, resamples: int, buckets: int) -> np.ndarray:
    """Sign-flip patterns as packed bits (resamples x buckets / 8, uint8): bit 1 keeps a sign."""
    raw = np.frombuffer(rng.bytes(resamples * buckets // 8), dtype=np.uint8)
    return raw.reshape(resamples, buckets // 8)


def _distinct_columns(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct columns of ``matrix`` and, per column, the index of its distinct column."""
    fingerprint = np.sin(np.arange(1, matrix.shape[0] + 1)) @ matrix
    _, first, inverse = np.unique(fingerprint, return_index=True, return_inverse=True)
    distinct = matrix[:, first]
    if not np.array_equal(distinct[:, inverse], matrix):  # a fingerprint collision
        return matrix, np.arange(matrix.shape[1])
    return distinct, inverse


def _bucket_bootstrap(
    sums: np.ndarray, counts: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of ``(w @ sums) / (w @ counts)`` per column (buckets x columns).

    Columns without counts are skipped (NaN); equal count columns (the metrics of a group
    without missing values) share one product.
    """
    resamples, buckets = weights.shape
    low, high = np.full(sums.shape[1], np.nan), np.full(sums.shape[1], np.nan)
    active = np.flatnonzero(counts.any(axis=0))
    width = max(1, _CHUNK_ELEMENTS // max(buckets, resamples, 1))
    for first in range(0, active.size, width):
        block = active[first : first + width]
        distinct, inverse = _distinct_columns(counts[:, block])
        means = np.empty((resamples, block.size))
        start = 0
        for size in _chunks(resamples, buckets):
            w = weights[start : start + size].astype(np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                means[start : start + size] = (
                    (w @ sums[:, block]) / (w @ distinct)[:, inverse]
                )
            start += size
        low[block], high[block] = _percentile_interval(means)
    return low, high


def _bucket_permutation_p(summed_diffs: np.ndarray, packed_signs: np.ndarray) -> np.ndarray:
    """:func:`_permutation_p` with the signs of :func:`_bucket_signs` (buckets x columns)."""
    resamples = packed_signs.shape[0]
    buckets = packed_signs.shape[1] * 8
    observed = np.abs(summed_diffs.sum(axis=0))
    tolerance = 1e-9 * np.maximum(1.0, np.abs(summed_diffs).sum(axis=0))
    extreme = np.zeros(summed_diffs.shape[1], dtype=np.int64)
    start = 0
    for size in _chunks(resamples, buckets):
        bits = np.unpackbits(packed_signs[start : start + size], axis=1)
        signs = 2.0 * bits.astype(np.float64) - 1.0
        flipped = np.abs(signs @ summed_diffs)
        extreme += np.count_nonzero(flipped >= observed - tolerance, axis=0)
        start += size
    return (1.0 + extreme) / (resamples + 1.0)


def _nullable(values: np.ndarray) -> pl.Series:
    return pl.Series(values, dtype=pl.Float64, nan_to_null=True)


# --------------------------------------------------------------------------- sufficient statistics


def bucket_of(ids: pl.Series, buckets: int = BUCKETS) -> pl.Series:
    """The bucket of each id: the top ``log2(buckets)`` bits of the first 4 bytes of md5 (UTF-8).

    Computed by DuckDB's ``md5``; equal to
    ``int(hashlib.md5(id.encode()).hexdigest()[:8], 16) >> (32 - log2(buckets))``, so stable
    across versions of polars, DuckDB and Python. A null id goes to bucket 0.

    >>> bucket_of(pl.Series(["q1", None]), 4096).to_list()
    [4083, 0]
    """
    _check_buckets(buckets)
    frame = pl.DataFrame({"id": ids.cast(pl.String)})
    connection = duckdb.connect()
    try:
        connection.register("ids", frame.to_arrow())
        hexes = connection.sql("select left(md5(id), 8) as h from ids").pl()["h"]
    finally:
        connection.close()
    shift = 32 - (buckets.bit_length() - 1)
    codes = hexes.str.to_integer(base=16).cast(pl.UInt64) // (1 << shift)
    return codes.fill_null(0).cast(pl.UInt32).rename("cluster")


@dataclass(frozen=True)
class _Grid:
    """Slices computed from one fine grid: ``columns`` are its axes, each slice a subset."""

    columns: tuple[str, ...]
    slices: tuple[tuple[str, ...], ...]


def _grids(
    defaults: tuple[tuple[str, ...], ...], requested: tuple[tuple[str, ...], ...]
) -> tuple[_Grid, ...]:
    """One grid for the default slices, one per requested slice that is not a default."""
    grids = [_Grid(tuple(dict.fromkeys(c for s in defaults for c in s)), defaults)]
    known = {frozenset(s) for s in defaults}
    for columns in requested:
        if frozenset(columns) not in known:
            known.add(frozenset(columns))
            grids.append(_Grid(columns, (columns,)))
    return tuple(grids)


@dataclass(frozen=True)
class _Layout:
    """What a pass needs to code rows: the clusters, the dictionaries of the key columns."""

    mapping: pl.DataFrame  # id, idx (rank of the id, null first), cluster; one row per id
    exact: bool  # clusters are ids (idx), else md5 buckets
    clusters: int  # number of cluster codes
    #: Key columns coded as small integers (each value its rank among the non-null values,
    #: null last) -> their sorted non-null values ([] if the column is absent).
    values: dict[str, list[Any]]
    dtypes: dict[str, pl.DataType]  # key column -> its type while coding and in the tables
    key_columns: tuple[str, ...]  # the typed slice columns of the tables, in order
    interval_grids: tuple[_Grid, ...]
    comparison_grids: tuple[_Grid, ...]
    metrics: list[str]
    binary: np.ndarray
    rows: int

    def size(self, column: str) -> int:
        """Codes of a key column: its values and null."""
        return len(self.values[column]) + 1

    def cells(self, columns: Sequence[str]) -> list[tuple[Any, ...]]:
        """Every combination of non-null values of ``columns``, in the order of the grids."""
        return list(itertools.product(*(self.values[c] for c in columns)))


def _layout(
    lf: pl.LazyFrame, exact_max_ids: int, buckets: int, by: Iterable[str | Sequence[str]] = ()
) -> _Layout:
    _check_buckets(buckets)
    schema = lf.collect_schema()
    requested = check_slices(schema, by)
    interval_grids = _grids(INTERVAL_SLICES, requested)
    comparison_grids = _grids(COMPARISON_SLICES, requested)
    used = [c for grid in (*interval_grids, *comparison_grids) for c in grid.columns]
    coded = tuple(dict.fromkeys(("model", "run", "noise_level", "task", *used)))
    key_columns = tuple(dict.fromkeys((*SLICE_COLUMNS, *used)))
    dtypes = {c: _key_dtype(c, schema.get(c)) for c in dict.fromkeys((*coded, *key_columns))}
    present = [c for c in coded if c in schema]
    ids, rows, *dictionaries = pl.collect_all(
        [
            lf.select(pl.col("id").unique()),
            lf.select(pl.len()),
            *(lf.select(pl.col(c).cast(dtypes[c]).drop_nulls().unique()) for c in present),
        ],
        engine="streaming",
    )
    values = {c: frame[c].sort().to_list() for c, frame in zip(present, dictionaries, strict=True)}
    values = {c: values.get(c, []) for c in coded}
    for columns in requested:
        cells = math.prod(len(values[c]) for c in columns)
        if cells > MAX_SLICE_CELLS:
            counts = ", ".join(f"{c}: {len(values[c])}" for c in columns)
            raise InputError(
                f"slice {slice_name(columns)!r} has {cells} combinations of values ({counts} "
                f"distinct values); at most {MAX_SLICE_CELLS}"
            )
    id_values = ids["id"].sort(nulls_last=False)  # the order of the exact bootstrap's ranks
    idx = pl.Series("idx", np.arange(id_values.len(), dtype=np.uint32))
    exact = id_values.len() <= exact_max_ids
    cluster = idx.rename("cluster") if exact else bucket_of(id_values, buckets)
    binary_set = set(binary_columns(schema))
    metrics = metric_columns(schema)
    return _Layout(
        mapping=pl.DataFrame([id_values, idx, cluster]),
        exact=exact,
        clusters=id_values.len() if exact else buckets,
        values=values,
        dtypes=dtypes,
        key_columns=key_columns,
        interval_grids=interval_grids,
        comparison_grids=comparison_grids,
        metrics=metrics,
        binary=np.array([m in binary_set for m in metrics], dtype=bool),
        rows=int(rows.item()),
    )


def _passes(
    lf: pl.LazyFrame, layout: _Layout
) -> Iterator[tuple[dict[str, np.ndarray], list[np.ndarray]]]:
    """The rows in passes over disjoint sets of clusters of about :data:`PASS_ROWS` rows each:
    integer codes of the key columns, ``idx`` and ``cluster``, and one array per metric (NaN for
    null or NaN). Only these columns are read; rows keep their order."""
    codes = []
    for column, values in layout.values.items():
        if not values:
            continue
        codes.append(
            pl.col(column).cast(layout.dtypes[column])
            .replace_strict(values, list(range(len(values))), default=len(values),
                            return_dtype=pl.Int64)
            .fill_null(len(values)).alias(column)
        )
    columns: list[pl.Expr] = [
        pl.col("id"), *codes,
        *(pl.col(m).cast(pl.Float64).fill_null(float("nan")).alias(f"_m{j}")
          for j, m in enumerate(layout.metrics)),
    ]
    names = [f"_m{j}" for j in range(len(layout.metrics))]
    passes = max(1, math.ceil(layout.rows / PASS_ROWS))
    for part in range(passes):
        mapping, rows = layout.mapping, lf
        if passes > 1:
            mapping = mapping.filter(pl.col("cluster") % passes == part)
            rows = rows.filter(pl.col("id").is_in(mapping["id"].implode(), nulls_equal=True))
        batch = rows.select(*columns).collect(engine="streaming").join(
            mapping, on="id", how="left", nulls_equal=True, maintain_order="left"
        )
        arrays = {
            c: batch[c].to_numpy() if c in batch.columns else np.full(batch.height, 0, np.int64)
            for c in layout.values
        }
        arrays["idx"] = batch["idx"].to_numpy().astype(np.int64)
        arrays["cluster"] = batch["cluster"].to_numpy().astype(np.int64)
        columns_of_metrics = [batch[c].to_numpy() for c in names]  # no copies
        del batch
        yield arrays, columns_of_metrics
        del arrays, columns_of_metrics  # before the next pass is read


def _sum_by(
    cell: np.ndarray, values: list[np.ndarray], size: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-cell sums and counts of the non-NaN ``values`` (metrics x rows): (metrics x size) each.

    ``np.bincount`` adds in row order, so the sums do not depend on anything but the rows.
    """
    sums = np.empty((len(values), size))
    counts = np.empty((len(values), size))
    rows = None
    for j, column in enumerate(values):
        missing = np.isnan(column)
        if missing.any():
            sums[j] = np.bincount(cell, weights=np.where(missing, 0.0, column), minlength=size)
            counts[j] = np.bincount(cell, weights=(~missing).astype(np.float64), minlength=size)
        else:
            sums[j] = np.bincount(cell, weights=column, minlength=size)
            if rows is None:
                rows = np.bincount(cell, minlength=size).astype(np.float64)
            counts[j] = rows
    return sums, counts


def _fine_codes(
    codes: Mapping[str, np.ndarray], grid: _Grid, layout: _Layout, length: int
) -> np.ndarray:
    """The cell of each of ``length`` rows in ``grid``: its codes of the grid's columns in
    mixed radix (null last on every axis)."""
    fine = np.zeros(length, dtype=np.int64)
    for column in grid.columns:
        fine = fine * layout.size(column) + codes[column]
    return fine


def _marginals(fine: np.ndarray, lead: int, grid: _Grid, layout: _Layout) -> list[np.ndarray]:
    """The slices of ``grid`` from its fine cells.

    ``fine`` is ``(*lead axes, *grid sizes, clusters)`` with the null code last on every grid
    axis. One array per slice, ``(*lead axes, cells, clusters)``: the sums over the grid's other
    columns for every combination of non-null codes of the slice's columns (row-major in the
    slice's column order, as :meth:`_Layout.cells`).
    """
    parts = []
    for columns in grid.slices:
        keep = [grid.columns.index(c) for c in columns]
        drop = tuple(lead + a for a in range(len(grid.columns)) if a not in keep)
        part = fine.sum(axis=drop) if drop else fine
        kept = sorted(keep)  # the order of the remaining axes
        part = np.moveaxis(part, [lead + kept.index(a) for a in keep],
                           [lead + i for i in range(len(keep))])
        for i, column in enumerate(columns):
            part = np.take(part, np.arange(layout.size(column) - 1), axis=lead + i)
        parts.append(part.reshape(*part.shape[:lead], -1, part.shape[-1]))
    return parts


@dataclass
class _Stats:
    """Sufficient statistics of every interval group and comparison slice over clusters."""

    layout: _Layout
    interval_sums: np.ndarray  # metrics x groups x clusters
    interval_counts: np.ndarray
    interval_rows: np.ndarray  # groups x clusters
    pair_d: np.ndarray  # pairs x metrics x slice cells x clusters: sums of a - b, both present
    pair_n: np.ndarray  # pairs with both present
    pair_keys: np.ndarray  # pairs x slice cells x clusters: paired keys
    pair_totals: np.ndarray  # pairs x 4 x metrics x cells: sums of a, b; (1, 0) and (0, 1) pairs
    duplicates: np.ndarray  # models: rows that share a pairing key with another row of the model


def _interval_groups(layout: _Layout) -> list[tuple[tuple[str, ...], Any, tuple[Any, ...]]]:
    """(slice columns, model, values) of each interval group, in the order of the sums:
    slice after slice, and within one model after model (null last), then its cells."""
    models = [*layout.values["model"], None]
    return [
        (columns, model, cell)
        for grid in layout.interval_grids for columns in grid.slices
        for model in models for cell in layout.cells(columns)
    ]


def _slice_cells(layout: _Layout) -> list[tuple[tuple[str, ...], tuple[Any, ...]]]:
    """(slice columns, values) of each comparison slice cell, in the order of the sums."""
    return [
        (columns, cell)
        for grid in layout.comparison_grids for columns in grid.slices
        for cell in layout.cells(columns)
    ]


def _key_frame(
    layout: _Layout, slices: Sequence[tuple[tuple[str, ...], tuple[Any, ...]]]
) -> pl.DataFrame:
    """``slice`` and the typed slice columns (null outside the slice) of each slice cell."""
    rows = [dict(zip(columns, cell, strict=True)) for columns, cell in slices]
    return pl.DataFrame({
        "slice": pl.Series([slice_name(columns) for columns, _ in slices], dtype=pl.String),
        **{c: pl.Series([row.get(c) for row in rows], dtype=layout.dtypes[c])
           for c in layout.key_columns},
    })


def _statistics(lf: pl.LazyFrame, layout: _Layout) -> _Stats:
    """One pass (or a few, by cluster) over the rows: sums and counts per group and cluster."""
    n_model, k, m = layout.size("model"), layout.clusters, len(layout.metrics)
    pairs = len(list(itertools.combinations(range(n_model - 1), 2)))
    groups, slices = len(_interval_groups(layout)), len(_slice_cells(layout))
    stats = _Stats(
        layout=layout,
        interval_sums=np.zeros((m, groups, k)),
        interval_counts=np.zeros((m, groups, k)),
        interval_rows=np.zeros((groups, k)),
        pair_d=np.zeros((pairs, m, slices, k)),
        pair_n=np.zeros((pairs, m, slices, k)),
        pair_keys=np.zeros((pairs, slices, k)),
        pair_totals=np.zeros((pairs, 4, m, slices)),
        duplicates=np.zeros(n_model - 1, dtype=np.int64),
    )
    if layout.rows == 0:
        return stats
    passes = _passes(lf, layout)
    while (batch := next(passes, None)) is not None:
        _accumulate(stats, *batch)
        del batch  # before the next pass is read
    return stats


def _accumulate(stats: _Stats, codes: dict[str, np.ndarray], values: list[np.ndarray]) -> None:
    """Add the sufficient statistics of one pass of rows to ``stats``."""
    layout = stats.layout
    n_model, n_noise, n_task = (layout.size(c) for c in ("model", "noise_level", "task"))
    n_run, k, m = layout.size("run"), layout.clusters, len(layout.metrics)
    pairs = list(itertools.combinations(range(n_model - 1), 2))
    cluster = codes["cluster"]
    # intervals: per grid the fine cells (model, grid columns, cluster), then its slices
    grouped: tuple[list[np.ndarray], ...] = ([], [], [])
    for grid in layout.interval_grids:
        sizes = [layout.size(c) for c in grid.columns]
        fine_cell = _fine_codes(codes, grid, layout, cluster.size)
        cell = (codes["model"] * math.prod(sizes) + fine_cell) * k + cluster
        size = n_model * math.prod(sizes) * k
        fine_sums, fine_counts = _sum_by(cell, values, size)
        fine_rows = np.bincount(cell, minlength=size).astype(np.float64)
        for parts, fine in zip(grouped, (fine_sums, fine_counts, fine_rows[None]), strict=True):
            for part in _marginals(fine.reshape(-1, n_model, *sizes, k), 2, grid, layout):
                parts.append(part.reshape(part.shape[0], -1, k))  # model-major groups
    for total, parts in zip(
        (stats.interval_sums, stats.interval_counts, stats.interval_rows), grouped, strict=True
    ):
        total += np.concatenate(parts, axis=1).reshape(total.shape)
    if not pairs:
        return
    # comparisons: rows keyed by (id, run, noise_level, task); a key a model has several
    # rows under is left out for that model. Keys are numbered densely: the ids of this
    # pass times the (run, noise_level, task) combinations that occur.
    variant = (codes["run"] * n_noise + codes["noise_level"]) * n_task + codes["task"]
    used = np.bincount(variant, minlength=n_run * n_noise * n_task) > 0
    present = np.zeros(layout.mapping.height, dtype=bool)
    present[codes["idx"]] = True
    local_id = np.cumsum(present) - 1
    key = local_id[codes["idx"]] * int(used.sum()) + (np.cumsum(used) - 1)[variant]
    key_space = int(present.sum()) * int(used.sum())
    if key_space > 4 * max(key.size, 1 << 18):
        unique, key = np.unique(key, return_inverse=True)
        key_space = unique.size
    columns = list(dict.fromkeys(c for grid in layout.comparison_grids for c in grid.columns))
    by_key = [c for c in columns if c in PAIR_KEYS]  # the same for both rows of a pair
    by_model = [c for c in columns if c not in PAIR_KEYS]  # model a's value, else model b's
    row_of = []  # per model: its row under each key (-1: no row, or several)
    for i in range(n_model - 1):
        rows = np.flatnonzero(codes["model"] == i)
        count = np.bincount(key[rows], minlength=key_space)
        stats.duplicates[i] += int(count[count > 1].sum())
        unique_rows = rows[count[key[rows]] == 1]
        rows_by_key = np.full(key_space, -1, dtype=np.int64)
        rows_by_key[key[unique_rows]] = unique_rows
        row_of.append(rows_by_key)
    for p, (i, j) in enumerate(pairs):
        paired = np.flatnonzero((row_of[i] >= 0) & (row_of[j] >= 0))
        rows_a, rows_b = row_of[i][paired], row_of[j][paired]
        pair_codes = {c: codes[c][rows_a] for c in (*by_key, "cluster")}
        for c in by_model:
            code_a = codes[c][rows_a]
            pair_codes[c] = np.where(code_a < layout.size(c) - 1, code_a, codes[c][rows_b])
        cells = []  # per grid: fine cell, (fine cell, cluster) and keys per cell of each pair
        for grid in layout.comparison_grids:
            fine_size = math.prod(layout.size(c) for c in grid.columns)
            fine = _fine_codes(pair_codes, grid, layout, paired.size)
            cell = fine * k + pair_codes["cluster"]
            cells.append((fine, cell, fine_size,
                          np.bincount(cell, minlength=fine_size * k).astype(np.float64)))
        d = [np.empty((m, fine_size * k)) for _, _, fine_size, _ in cells]
        n = [np.empty((m, fine_size * k)) for _, _, fine_size, _ in cells]
        totals = [np.zeros((4, m, fine_size)) for _, _, fine_size, _ in cells]
        for metric in range(m):
            a, b = values[metric][rows_a], values[metric][rows_b]
            diff = a - b  # NaN unless both values are there
            both = ~np.isnan(diff)
            if both.all():  # the common case: no masking
                weights: list[np.ndarray | None] = [diff, None, a, b]
            else:
                weights = [np.where(both, diff, 0.0), both.astype(np.float64),
                           np.where(both, a, 0.0), np.where(both, b, 0.0)]
            if layout.binary[metric]:
                weights += [(both & (a == x) & (b == y)).astype(np.float64)
                            for x, y in ((1, 0), (0, 1))]
            for g, (fine, cell, fine_size, keys) in enumerate(cells):
                size = fine_size * k
                d[g][metric] = np.bincount(cell, weights[0], size)
                n[g][metric] = keys if weights[1] is None else np.bincount(cell, weights[1], size)
                for t, weight in enumerate(weights[2:]):
                    totals[g][t, metric] = np.bincount(fine, weight, fine_size)
        found: tuple[list[np.ndarray], ...] = ([], [], [], [])
        grids = zip(layout.comparison_grids, cells, strict=True)
        for g, (grid, (_, _, _, keys)) in enumerate(grids):
            sizes = [layout.size(c) for c in grid.columns]
            found[0].extend(_marginals(d[g].reshape(m, *sizes, k), 1, grid, layout))
            found[1].extend(_marginals(n[g].reshape(m, *sizes, k), 1, grid, layout))
            found[2].extend(_marginals(keys.reshape(*sizes, k), 0, grid, layout))
            found[3].extend(
                part[..., 0]
                for part in _marginals(totals[g].reshape(4, m, *sizes, 1), 2, grid, layout)
            )
        stats.pair_d[p] += np.concatenate(found[0], axis=1)
        stats.pair_n[p] += np.concatenate(found[1], axis=1)
        stats.pair_keys[p] += np.concatenate(found[2], axis=0)
        stats.pair_totals[p] += np.concatenate(found[3], axis=2)


# --------------------------------------------------------------------------- intervals


def interval_table(
    scores: pl.DataFrame | pl.LazyFrame, *, resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED, exact_max_ids: int = EXACT_MAX_IDS, buckets: int = BUCKETS,
    by: Iterable[str | Sequence[str]] = (),
) -> pl.DataFrame:
    """Bootstrap and Wilson intervals of every metric per model, over all rows, per noise level
    and per category, and per slice of ``by`` (each a tuple of columns of the scores, or
    ``"COLUMN,COLUMN"``).

    Grain: one row per (slice, model, slice columns, metric); see the module docstring.

    >>> scores = pl.DataFrame({"id": ["q1", "q2"], "model": ["m", "m"], "answer_em": [1, 0]})
    >>> interval_table(scores, resamples=0).select("slice", "model", "metric", "n", "mean").row(0)
    ('all', 'm', 'answer_em', 2, 0.5)
    """
    _check_resamples(resamples)
    lf = scores.lazy()
    by = tuple(by)
    if not _has_stats_columns(lf):
        return pl.DataFrame(schema=interval_schema(_empty_keys(lf, by)))
    layout = _layout(lf, exact_max_ids, buckets, by)
    return _interval_table(_statistics(lf, layout), resamples, seed)


def _has_stats_columns(lf: pl.LazyFrame) -> bool:
    schema = lf.collect_schema()
    return "model" in schema and "id" in schema and bool(metric_columns(schema))


def _empty_keys(lf: pl.LazyFrame, by: Iterable[str | Sequence[str]]) -> dict[str, pl.DataType]:
    """The slice columns of the empty tables of scores without metrics (``by`` checked)."""
    schema = lf.collect_schema()
    columns = dict.fromkeys((*SLICE_COLUMNS, *(c for s in check_slices(schema, by) for c in s)))
    return {c: _key_dtype(c, schema.get(c)) for c in columns}


def _interval_table(stats: _Stats, resamples: int, seed: int) -> pl.DataFrame:
    layout, metrics = stats.layout, stats.layout.metrics
    groups = _interval_groups(layout)
    sums, counts = stats.interval_sums, stats.interval_counts  # metrics x groups x clusters
    n = counts.sum(axis=2).T  # groups x metrics
    total = sums.sum(axis=2).T
    low, high = np.full(n.shape, np.nan), np.full(n.shape, np.nan)
    if layout.exact:
        for g, (columns, model, cell) in enumerate(groups):
            present = np.flatnonzero(stats.interval_rows[g] > 0)
            if present.size == 0 or not (n[g] > 0).any():
                continue
            rng = _rng(seed, "interval", slice_name(columns), model, *cell)
            means = _bootstrap_means(sums[:, g, present].T, counts[:, g, present].T, rng,
                                     resamples)
            low[g], high[g] = _percentile_interval(means)
        method = BOOTSTRAP_METHOD
    else:
        weights = _bucket_weights(_rng(seed, "interval", "buckets"), resamples, layout.clusters)
        k = layout.clusters
        bounds = _bucket_bootstrap(sums.transpose(2, 1, 0).reshape(k, -1),
                                   counts.transpose(2, 1, 0).reshape(k, -1), weights)
        low, high = (bound.reshape(n.shape) for bound in bounds)
        method = f"{BOOTSTRAP_METHOD}, ids in {k} md5 buckets"
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / n
    w_low, w_high = wilson_interval(total, n)
    binary = np.broadcast_to(layout.binary, n.shape)
    repeat = np.repeat(np.arange(len(groups)), len(metrics))
    keys = _key_frame(layout, [(columns, cell) for columns, _, cell in groups]).with_columns(
        model=pl.Series([model for _, model, _ in groups], dtype=pl.String)
    )
    schema = interval_schema({c: layout.dtypes[c] for c in layout.key_columns})
    table = keys[repeat].with_columns(
        metric=pl.Series(np.tile(np.array([metric_name(m) for m in metrics], dtype=object),
                                 len(groups)).tolist(), dtype=pl.String),
        n=pl.Series(n.ravel().astype(np.int64)),
        mean=_nullable(mean.ravel()),
        ci_low=_nullable(low.ravel()),
        ci_high=_nullable(high.ravel()),
        wilson_low=_nullable(np.where(binary, w_low, np.nan).ravel()),
        wilson_high=_nullable(np.where(binary, w_high, np.nan).ravel()),
        resamples=pl.lit(resamples, dtype=pl.Int64),
        seed=pl.lit(seed, dtype=pl.Int64),
        method=pl.lit(method, dtype=pl.String),
    ).select(list(schema)).filter(pl.col("n") > 0)
    return table.sort(["slice", "model", *layout.key_columns, "metric"], nulls_last=True)


# --------------------------------------------------------------------------- comparisons


def comparison_table(
    scores: pl.DataFrame | pl.LazyFrame, *, resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED, exact_max_ids: int = EXACT_MAX_IDS, buckets: int = BUCKETS,
    by: Iterable[str | Sequence[str]] = (),
) -> pl.DataFrame:
    """Paired differences and tests for every pair of models, overall, per noise level,
    category and task, and per slice of ``by`` (each a tuple of columns of the scores, or
    ``"COLUMN,COLUMN"``).

    Grain: one row per (model_a, model_b, slice, slice columns, metric); see the module
    docstring. Rows with a null model take part in no comparison.
    """
    _check_resamples(resamples)
    lf = scores.lazy()
    by = tuple(by)
    if not _has_stats_columns(lf):
        return pl.DataFrame(schema=comparison_schema(_empty_keys(lf, by)))
    layout = _layout(lf, exact_max_ids, buckets, by)
    return _comparison_table(_statistics(lf, layout), resamples, seed)


def _comparison_table(stats: _Stats, resamples: int, seed: int) -> pl.DataFrame:
    layout, metrics = stats.layout, stats.layout.metrics
    models = layout.values["model"]
    for model, count in zip(models, stats.duplicates.tolist(), strict=True):
        if count:
            log.warning(
                "model %r: %d rows share a (%s) key with another row of the model; "
                "they are left out of its paired comparisons",
                model, count, ", ".join(PAIR_KEYS),
            )
    pairs = list(itertools.combinations(models, 2))
    slices = _slice_cells(layout)
    schema = comparison_schema({c: layout.dtypes[c] for c in layout.key_columns})
    frames = [pl.DataFrame(schema=schema)]
    if not pairs:
        return frames[0]
    n_pairs = stats.pair_n.sum(axis=3).transpose(0, 2, 1)  # pairs x slices x metrics
    sum_a, sum_b, a_only, b_only = (stats.pair_totals[:, s].transpose(0, 2, 1) for s in range(4))
    shape = n_pairs.shape
    low, high = np.full(shape, np.nan), np.full(shape, np.nan)
    permutation = np.full(shape, np.nan)
    if layout.exact:
        for p, s in itertools.product(range(len(pairs)), range(len(slices))):
            present = np.flatnonzero(stats.pair_keys[p, s] > 0)
            if present.size == 0 or not (n_pairs[p, s] > 0).any():
                continue
            columns, cell = slices[s]
            key = (*pairs[p], slice_name(columns), *cell)
            d, n = stats.pair_d[p][:, s][:, present].T, stats.pair_n[p][:, s][:, present].T
            means = _bootstrap_means(d, n, _rng(seed, "bootstrap", *key), resamples)
            low[p, s], high[p, s] = _percentile_interval(means)
            if resamples > 0:
                permutation[p, s] = _permutation_p(d, _rng(seed, "permutation", *key), resamples)
    else:
        k = layout.clusters
        d = stats.pair_d.transpose(3, 0, 2, 1).reshape(k, -1)  # clusters x (pair, slice, metric)
        n = stats.pair_n.transpose(3, 0, 2, 1).reshape(k, -1)
        weights = _bucket_weights(_rng(seed, "bootstrap", "buckets"), resamples, k)
        low, high = (bound.reshape(shape) for bound in _bucket_bootstrap(d, n, weights))
        if resamples > 0:
            signs = _bucket_signs(_rng(seed, "permutation", "buckets"), resamples, k)
            permutation = _bucket_permutation_p(d, signs).reshape(shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_a, mean_b = sum_a / n_pairs, sum_b / n_pairs
    binary = np.broadcast_to(layout.binary, shape)
    p_value = np.where(
        binary, mcnemar_exact_p(a_only.astype(np.int64), b_only.astype(np.int64)), permutation
    )
    keys = _key_frame(layout, slices)[np.repeat(np.arange(len(slices)), len(metrics))]
    keys = keys.with_columns(
        metric=pl.Series(np.tile(np.array([metric_name(m) for m in metrics], dtype=object),
                                 len(slices)).tolist(), dtype=pl.String),
        # the Holm family: the default slices together, each requested slice on its own
        _family=pl.when(pl.col("slice").is_in([slice_name(s) for s in COMPARISON_SLICES]))
        .then(pl.lit(ALL)).otherwise(pl.col("slice")),
    )
    for p, (model_a, model_b) in enumerate(pairs):
        pair = keys.with_columns(
            n_pairs=pl.Series(n_pairs[p].ravel().astype(np.int64)),
            mean_a=pl.Series(mean_a[p].ravel()),
            mean_b=pl.Series(mean_b[p].ravel()),
            diff=pl.Series((mean_a[p] - mean_b[p]).ravel()),
            ci_low=pl.Series(low[p].ravel()),
            ci_high=pl.Series(high[p].ravel()),
            _binary=pl.Series(binary[p].ravel()),
            n_a_only=pl.Series(a_only[p].ravel().astype(np.int64)),
            n_b_only=pl.Series(b_only[p].ravel().astype(np.int64)),
            p_value=pl.Series(p_value[p].ravel()),
        ).filter(pl.col("n_pairs") > 0)
        if pair.height:
            frames.append(_finish_pair(pair, model_a, model_b, resamples, seed, schema))
    table = pl.concat(frames, how="vertical")
    return table.sort(["model_a", "model_b", "slice", *layout.key_columns, "metric"],
                      nulls_last=True)


def _finish_pair(
    pair: pl.DataFrame, model_a: str, model_b: str, resamples: int, seed: int,
    schema: Mapping[str, pl.DataType],
) -> pl.DataFrame:
    """Holm-adjust each metric's p-values across the rows of one family of one model pair;
    final columns."""
    p = pair["p_value"].fill_null(np.nan).to_numpy()
    adjusted = np.full(p.size, np.nan)
    families = pair.with_row_index("_row").group_by("metric", "_family").agg("_row")
    for rows in families["_row"].to_list():
        adjusted[rows] = holm(p[rows])
    binary = pl.col("_binary")
    return pair.with_columns(
        model_a=pl.lit(model_a),
        model_b=pl.lit(model_b),
        mean_a=pl.col("mean_a").fill_nan(None),
        mean_b=pl.col("mean_b").fill_nan(None),
        diff=pl.col("diff").fill_nan(None),
        ci_low=pl.col("ci_low").fill_nan(None),
        ci_high=pl.col("ci_high").fill_nan(None),
        test=pl.when(binary).then(pl.lit(TEST_MCNEMAR)).otherwise(pl.lit(TEST_PERMUTATION)),
        n_a_only=pl.when(binary).then(pl.col("n_a_only")),
        n_b_only=pl.when(binary).then(pl.col("n_b_only")),
        p_value=pl.col("p_value").fill_nan(None),
        p_adjusted=_nullable(adjusted),
        correction=pl.lit(CORRECTION),
    ).with_columns(
        significant=pl.col("p_adjusted") < ALPHA,
        resamples=pl.lit(resamples, dtype=pl.Int64),
        seed=pl.lit(seed, dtype=pl.Int64),
    ).select(list(schema)).cast(dict(schema))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- driver


def write_stats(
    out_dir: Path, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
    scores: pl.DataFrame | pl.LazyFrame | None = None,
    exact_max_ids: int = EXACT_MAX_IDS, buckets: int = BUCKETS,
    by: Iterable[str | Sequence[str]] = (),
) -> StatsSummary:
    """Read ``out_dir/scores.parquet`` lazily (or take ``scores``); write ``intervals.parquet``
    and ``comparisons.parquet`` into ``out_dir``, with the default slices and those of ``by``
    (each a tuple of columns of the scores or ``"COLUMN,COLUMN"``, :func:`check_slices`).

    The scores are reduced to per-(group, cluster) sums in streaming passes (only the key and
    metric columns are read), so memory is bounded by groups x clusters, not by rows.
    """
    _check_resamples(resamples)
    out_dir = Path(out_dir)
    by = tuple(by)
    if scores is None:
        scores_path = out_dir / SCORES_FILE
        if not scores_path.is_file():
            raise InputError(
                f"{scores_path} is missing; run `rag-eval evaluate --out {out_dir}` first"
            )
        scores = pl.scan_parquet(scores_path)
    lf = scores.lazy()
    requested = check_slices(lf.collect_schema(), by)
    if _has_stats_columns(lf):
        stats = _statistics(lf, _layout(lf, exact_max_ids, buckets, requested))
        intervals = _interval_table(stats, resamples, seed)
        comparisons = _comparison_table(stats, resamples, seed)
    else:
        keys = _empty_keys(lf, requested)
        intervals = pl.DataFrame(schema=interval_schema(keys))
        comparisons = pl.DataFrame(schema=comparison_schema(keys))
    intervals_path = write_parquet_atomic(intervals, out_dir / INTERVALS_FILE)
    comparisons_path = write_parquet_atomic(comparisons, out_dir / COMPARISONS_FILE)
    return StatsSummary(
        intervals_path=intervals_path,
        comparisons_path=comparisons_path,
        intervals=intervals.height,
        comparisons=comparisons.height,
        significant=int(comparisons["significant"].sum()),
        resamples=resamples,
        seed=seed,
        slices=tuple(slice_name(s) for grid in _grids(COMPARISON_SLICES, requested)
                     for s in grid.slices),
    )
