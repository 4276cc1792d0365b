"""Uncertainty and significance for ``scores.parquet``: bootstrap intervals and paired model tests.

Two tables are written beside ``scores.parquet``:

* ``intervals.parquet`` -- grain: one row per (view, model, noise_level, category, metric).
  Views are ``by_model`` (every model; a null model is its own group), ``by_model_noise``
  (rows with a noise level) and ``by_model_category`` (rows with a category). ``mean`` and ``n``
  are the plain mean and count of the non-null values; ``ci_low`` / ``ci_high`` are the 2.5th and
  97.5th percentiles (numpy ``linear``) of the resampled means of a percentile bootstrap over
  *questions*: rows are clustered by ``id`` (a question can appear once per noise level), ids are
  drawn with replacement, and a resampled mean is ``sum(w * id_sums) / sum(w * id_counts)``.
  ``wilson_low`` / ``wilson_high`` are the Wilson score interval (Wilson 1927) of binary metrics.
* ``comparisons.parquet`` -- grain: one row per (model_a, model_b, slice, slice_value, metric),
  ``model_a < model_b``. Rows of the two models are paired on (id, run, noise_level, task),
  nulls equal; a question only one model answered is left out, and so is a key under which a
  model has several rows (which row to pair is ambiguous; a warning is logged). Slices: ``all``
  and every non-null value of ``noise_level``, ``category`` and ``task``.
  ``diff = mean_a - mean_b`` over pairs where both values are present, with a paired
  bootstrap interval (clustered by ``id``).
  Binary metrics are tested with the exact two-sided McNemar test (``n_a_only`` pairs where
  only model a scored 1, ``n_b_only`` the converse); other metrics with a paired permutation
  test that flips the signs of the per-question summed differences,
  ``p = (1 + #{|T*| >= |T|}) / (B + 1)``. ``p_adjusted`` is Holm's step-down adjustment over
  the slice rows of one (model_a, model_b, metric); ``significant`` is ``p_adjusted < 0.05``.

Rows whose metric has no value in a group (``n == 0`` / ``n_pairs == 0``) are left out.
With ``resamples=0`` the bootstrap intervals and permutation p-values are null; Wilson
intervals and McNemar tests are still computed.

How it is computed. The scores are read once (or in a few passes, see below), only the key and
metric columns, and reduced to *sufficient statistics*: per (group, cluster) the sums and counts
of each metric, per (model pair, slice, cluster) the sums of ``a - b`` and the number of pairs
with both values. Every resample is then a matrix product over clusters; no row is held after
its pass. The rule that picks the cluster is global (one per table, from the distinct ids of
all the scores):

* **Exact** (at most :data:`EXACT_MAX_IDS` = 256 distinct ids): a cluster is an id, and each
  group has its own generator ``SeedSequence([seed, *sha256(JSON group key)[:16] as 4 uint32])``
  with keys ``("interval", view, model, noise_level, category)``,
  ``("bootstrap", model_a, model_b, slice, slice_value)`` and ``("permutation", ...)``. Each
  resample draws the group's ids with replacement (``rng.integers``, ids in ascending order,
  a null id first) and the sign-flip test draws ``rng.integers(0, 2)`` per id: the cluster
  bootstrap exactly as the package computed it before sufficient statistics (same draws; sums
  may differ in the last bit), and a group's numbers do not depend on other groups.
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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl

from pipeline.io.atomic import write_parquet_atomic
from pipeline.io.layout import COMPARISONS_FILE, INTERVALS_FILE, SCORES_FILE
from pipeline.metrics.registry import REGISTRY
from pipeline.metrics.spec import MEAN_KINDS
from pipeline.schema import InputError

__all__ = [
    "COMPARISONS_FILE",
    "COMPARISON_SCHEMA",
    "CONFIDENCE",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "INTERVALS_FILE",
    "INTERVAL_SCHEMA",
    "StatsSummary",
    "benjamini_hochberg",
    "binary_columns",
    "bucket_of",
    "comparison_table",
    "holm",
    "interval_table",
    "mcnemar_exact_p",
    "metric_columns",
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
#: Slice columns of the comparison table, besides ``all``.
SLICES: tuple[str, ...] = ("noise_level", "category", "task")
#: Views of the interval table: name -> the columns that define a group besides ``model``.
VIEWS: dict[str, tuple[str, ...]] = {
    "by_model": (),
    "by_model_noise": ("noise_level",),
    "by_model_category": ("category",),
}

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

INTERVAL_SCHEMA: dict[str, pl.DataType] = {
    "view": pl.String(),
    "model": pl.String(),
    "noise_level": pl.Float64(),
    "category": pl.String(),
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

COMPARISON_SCHEMA: dict[str, pl.DataType] = {
    "model_a": pl.String(),
    "model_b": pl.String(),
    "slice": pl.String(),
    "slice_value": pl.String(),
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
    digest = hashlib.sha256(json.dumps(key).encode()).digest()
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


#: Key columns coded as small integers: each value its rank among the non-null values, null last.
_CODED: tuple[str, ...] = ("model", "noise_level", "category", "task", "run")


@dataclass(frozen=True)
class _Layout:
    """What a pass needs to code rows: the clusters, the dictionaries of the key columns."""

    mapping: pl.DataFrame  # id, idx (rank of the id, null first), cluster; one row per id
    exact: bool  # clusters are ids (idx), else md5 buckets
    clusters: int  # number of cluster codes
    values: dict[str, list[Any]]  # column -> sorted non-null values ([] if the column is absent)
    metrics: list[str]
    binary: np.ndarray
    rows: int

    def size(self, column: str) -> int:
        """Codes of a key column: its values and null."""
        return len(self.values[column]) + 1


def _layout(lf: pl.LazyFrame, exact_max_ids: int, buckets: int) -> _Layout:
    _check_buckets(buckets)
    schema = lf.collect_schema()
    present = [c for c in _CODED if c in schema]
    as_type = {c: pl.Float64 if c == "noise_level" else pl.String for c in present}
    ids, rows, *dictionaries = pl.collect_all(
        [
            lf.select(pl.col("id").unique()),
            lf.select(pl.len()),
            *(lf.select(pl.col(c).cast(as_type[c]).drop_nulls().unique()) for c in present),
        ],
        engine="streaming",
    )
    values = {c: frame[c].sort().to_list() for c, frame in zip(present, dictionaries, strict=True)}
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
        values={c: values.get(c, []) for c in _CODED},
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
    for column in _CODED:
        values = layout.values[column]
        if not values:
            continue
        source = pl.col(column).cast(pl.Float64 if column == "noise_level" else pl.String)
        codes.append(
            source.replace_strict(values, list(range(len(values))), default=len(values),
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
            for c in _CODED
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


def _roll_up(fine: np.ndarray, axes: list[int]) -> np.ndarray:
    """Slices of a fine grid (..., n_1, ..., n_k, clusters) whose last code on each axis is null:
    ``all`` (the sum over every axis), then each non-null value of each axis in turn."""
    lead = fine.ndim - len(axes) - 1
    every = tuple(range(lead, lead + len(axes)))
    parts = [fine.sum(axis=every)[..., None, :]]
    for axis in range(len(axes)):
        others = tuple(a for a in every if a != lead + axis)
        non_null = np.take(fine, np.arange(axes[axis] - 1), axis=lead + axis)
        parts.append(non_null.sum(axis=others))
    return np.concatenate(parts, axis=-2)


@dataclass
class _Stats:
    """Sufficient statistics of every interval group and comparison slice over clusters."""

    layout: _Layout
    interval_sums: np.ndarray  # metrics x groups x clusters
    interval_counts: np.ndarray
    interval_rows: np.ndarray  # groups x clusters
    pair_d: np.ndarray  # pairs x metrics x slices x clusters: sums of a - b over both present
    pair_n: np.ndarray  # pairs with both present
    pair_keys: np.ndarray  # pairs x slices x clusters: paired keys
    pair_totals: np.ndarray  # pairs x 4 x metrics x slices: sums of a, b; (1, 0) and (0, 1) pairs
    duplicates: np.ndarray  # models: rows that share a pairing key with another row of the model


def _interval_groups(layout: _Layout) -> list[tuple[str, Any, Any, Any]]:
    """(view, model, noise_level, category) of each interval group, in the order of the grid."""
    models = [*layout.values["model"], None]
    groups: list[tuple[str, Any, Any, Any]] = [("by_model", m, None, None) for m in models]
    groups += [("by_model_noise", m, v, None) for m in models for v in layout.values["noise_level"]]
    groups += [("by_model_category", m, None, c) for m in models for c in layout.values["category"]]
    return groups


def _slice_names(layout: _Layout) -> list[tuple[str, str]]:
    """(slice, slice_value) of each comparison slice, in the order of :func:`_roll_up`."""
    names = [("all", "all")]
    for column in SLICES:
        names += [(column, str(v)) for v in layout.values[column]]
    return names


def _statistics(lf: pl.LazyFrame, layout: _Layout) -> _Stats:
    """One pass (or a few, by cluster) over the rows: sums and counts per group and cluster."""
    n_model, k, m = layout.size("model"), layout.clusters, len(layout.metrics)
    pairs = len(list(itertools.combinations(range(n_model - 1), 2)))
    groups, slices = len(_interval_groups(layout)), len(_slice_names(layout))
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
    n_model, n_noise, n_category, n_task = (
        layout.size(c) for c in ("model", "noise_level", "category", "task")
    )
    n_run, k, m = layout.size("run"), layout.clusters, len(layout.metrics)
    pairs = list(itertools.combinations(range(n_model - 1), 2))
    grid = (n_model, n_noise, n_category)
    cluster = codes["cluster"]
    # intervals: grid (model, noise, category, cluster) -> the three views
    cell = ((codes["model"] * n_noise + codes["noise_level"]) * n_category
            + codes["category"]) * k + cluster
    size = n_model * n_noise * n_category * k
    fine_sums, fine_counts = _sum_by(cell, values, size)
    fine_rows = np.bincount(cell, minlength=size).astype(np.float64)
    for total, fine in ((stats.interval_sums, fine_sums), (stats.interval_counts, fine_counts),
                        (stats.interval_rows, fine_rows[None])):
        grid_values = fine.reshape(-1, *grid, k)
        total += np.concatenate([
            grid_values.sum(axis=(2, 3)),
            grid_values[:, :, :-1].sum(axis=3).reshape(grid_values.shape[0], -1, k),
            grid_values[:, :, :, :-1].sum(axis=2).reshape(grid_values.shape[0], -1, k),
        ], axis=1).reshape(total.shape)
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
    key_noise, key_task, key_cluster = (
        np.zeros(key_space, dtype=np.int64) for _ in range(3)
    )
    key_noise[key], key_task[key], key_cluster[key] = (
        codes["noise_level"], codes["task"], cluster
    )
    aligned = []  # per model: metrics x keys (NaN: no value, no row or several), category
    for i in range(n_model - 1):
        rows = np.flatnonzero(codes["model"] == i)
        count = np.bincount(key[rows], minlength=key_space)
        stats.duplicates[i] += int(count[count > 1].sum())
        model_values = np.full((m, key_space), np.nan)
        unique_rows = rows[count[key[rows]] == 1]
        for metric, column in enumerate(values):
            model_values[metric, key[unique_rows]] = column[unique_rows]
        category = np.full(key_space, n_category - 1, dtype=np.int64)
        category[key[rows]] = codes["category"][rows]
        aligned.append((model_values, category, count == 1))
    axes = [n_noise, n_category, n_task]
    fine_size = n_noise * n_category * n_task
    size = fine_size * k
    for p, (i, j) in enumerate(pairs):
        values_a, category_a, unique_a = aligned[i]
        values_b, category_b, unique_b = aligned[j]
        paired = unique_a & unique_b
        category = np.where(category_a < n_category - 1, category_a, category_b)
        fine = np.where(paired, (key_noise * n_category + category) * n_task + key_task,
                        fine_size)  # unpaired keys go to a last bin that is dropped
        cell = np.where(paired, fine * k + key_cluster, size)
        d, n = np.empty((m, size)), np.empty((m, size))
        totals = np.zeros((4, m, fine_size))
        for metric in range(m):
            a, b = values_a[metric], values_b[metric]
            diff = a - b  # NaN unless both values are there
            both = ~np.isnan(diff)
            d[metric] = np.bincount(cell, np.where(both, diff, 0.0), size + 1)[:size]
            n[metric] = np.bincount(cell, both.astype(np.float64), size + 1)[:size]
            totals[0, metric] = np.bincount(fine, np.where(both, a, 0.0), fine_size + 1)[:-1]
            totals[1, metric] = np.bincount(fine, np.where(both, b, 0.0), fine_size + 1)[:-1]
            if layout.binary[metric]:
                for t, (x, y) in ((2, (1, 0)), (3, (0, 1))):
                    hit = (both & (a == x) & (b == y)).astype(np.float64)
                    totals[t, metric] = np.bincount(fine, hit, fine_size + 1)[:-1]
        keys = np.bincount(cell, minlength=size + 1)[:size].astype(np.float64)
        stats.pair_d[p] += _roll_up(d.reshape(m, *axes, k), axes)
        stats.pair_n[p] += _roll_up(n.reshape(m, *axes, k), axes)
        stats.pair_keys[p] += _roll_up(keys.reshape(*axes, k), axes)
        stats.pair_totals[p] += _roll_up(totals.reshape(4, m, *axes, 1), axes)[..., 0]


# --------------------------------------------------------------------------- intervals


def interval_table(
    scores: pl.DataFrame | pl.LazyFrame, *, resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED, exact_max_ids: int = EXACT_MAX_IDS, buckets: int = BUCKETS,
) -> pl.DataFrame:
    """Bootstrap and Wilson intervals of every metric per model, model x noise, model x category.

    Grain: one row per (view, model, noise_level, category, metric); see the module docstring.
    """
    _check_resamples(resamples)
    lf = scores.lazy()
    if not _has_stats_columns(lf):
        return pl.DataFrame(schema=INTERVAL_SCHEMA)
    layout = _layout(lf, exact_max_ids, buckets)
    return _interval_table(_statistics(lf, layout), resamples, seed)


def _has_stats_columns(lf: pl.LazyFrame) -> bool:
    schema = lf.collect_schema()
    return "model" in schema and "id" in schema and bool(metric_columns(schema))


def _interval_table(stats: _Stats, resamples: int, seed: int) -> pl.DataFrame:
    layout, metrics = stats.layout, stats.layout.metrics
    groups = _interval_groups(layout)
    sums, counts = stats.interval_sums, stats.interval_counts  # metrics x groups x clusters
    n = counts.sum(axis=2).T  # groups x metrics
    total = sums.sum(axis=2).T
    low, high = np.full(n.shape, np.nan), np.full(n.shape, np.nan)
    if layout.exact:
        for g, key in enumerate(groups):
            present = np.flatnonzero(stats.interval_rows[g] > 0)
            if present.size == 0 or not (n[g] > 0).any():
                continue
            means = _bootstrap_means(sums[:, g, present].T, counts[:, g, present].T,
                                     _rng(seed, "interval", *key), resamples)
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
    keys = [list(column) for column in zip(*groups, strict=True)] if groups else [[]] * 4
    table = pl.DataFrame(
        {
            **{name: pl.Series(values, dtype=INTERVAL_SCHEMA[name]).gather(repeat)
               for name, values in zip(("view", "model", "noise_level", "category"), keys,
                                       strict=True)},
            "metric": np.tile(np.array(metrics, dtype=object), len(groups)).tolist(),
            "n": n.ravel().astype(np.int64),
            "mean": _nullable(mean.ravel()),
            "ci_low": _nullable(low.ravel()),
            "ci_high": _nullable(high.ravel()),
            "wilson_low": _nullable(np.where(binary, w_low, np.nan).ravel()),
            "wilson_high": _nullable(np.where(binary, w_high, np.nan).ravel()),
            "resamples": resamples,
            "seed": seed,
            "method": method,
        },
        schema=INTERVAL_SCHEMA,
    ).filter(pl.col("n") > 0)
    return table.sort(["view", "model", "noise_level", "category", "metric"], nulls_last=True)


# --------------------------------------------------------------------------- comparisons


def comparison_table(
    scores: pl.DataFrame | pl.LazyFrame, *, resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED, exact_max_ids: int = EXACT_MAX_IDS, buckets: int = BUCKETS,
) -> pl.DataFrame:
    """Paired differences and tests for every pair of models, overall and per slice.

    Grain: one row per (model_a, model_b, slice, slice_value, metric); see the module docstring.
    Rows with a null model take part in no comparison.
    """
    _check_resamples(resamples)
    lf = scores.lazy()
    if not _has_stats_columns(lf):
        return pl.DataFrame(schema=COMPARISON_SCHEMA)
    layout = _layout(lf, exact_max_ids, buckets)
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
    slices = _slice_names(layout)
    frames = [pl.DataFrame(schema=COMPARISON_SCHEMA)]
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
            key = (*pairs[p], *slices[s])
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
    per_pair = len(slices) * len(metrics)
    columns = {
        "slice": np.repeat([s for s, _ in slices], len(metrics)).tolist(),
        "slice_value": np.repeat(np.array([v for _, v in slices], dtype=object),
                                 len(metrics)).tolist(),
        "metric": np.tile(np.array(metrics, dtype=object), len(slices)).tolist(),
    }
    for p, (model_a, model_b) in enumerate(pairs):
        pair = pl.DataFrame({
            **columns,
            "n_pairs": n_pairs[p].ravel().astype(np.int64),
            "mean_a": mean_a[p].ravel(),
            "mean_b": mean_b[p].ravel(),
            "diff": (mean_a[p] - mean_b[p]).ravel(),
            "ci_low": low[p].ravel(),
            "ci_high": high[p].ravel(),
            "binary": binary[p].ravel(),
            "n_a_only": a_only[p].ravel().astype(np.int64),
            "n_b_only": b_only[p].ravel().astype(np.int64),
            "p_value": p_value[p].ravel(),
        }, schema_overrides={"slice": pl.String, "slice_value": pl.String}).filter(
            pl.col("n_pairs") > 0
        )
        assert pair.width == 13 and per_pair >= pair.height
        if pair.height:
            frames.append(_finish_pair(pair, model_a, model_b, resamples, seed))
    table = pl.concat(frames, how="vertical")
    return table.sort(["model_a", "model_b", "slice", "slice_value", "metric"], nulls_last=True)


def _finish_pair(
    pair: pl.DataFrame, model_a: str, model_b: str, resamples: int, seed: int
) -> pl.DataFrame:
    """Holm-adjust each metric's p-values across the slices of one model pair; final columns."""
    pair = pair.sort(["metric", "slice", "slice_value"])
    p = pair["p_value"].fill_null(np.nan).to_numpy()
    adjusted = np.full(p.size, np.nan)
    metric = pair["metric"].to_numpy()
    for name in pair["metric"].unique(maintain_order=True).to_list():
        rows = np.flatnonzero(metric == name)
        adjusted[rows] = holm(p[rows])
    return pair.select(
        model_a=pl.lit(model_a),
        model_b=pl.lit(model_b),
        slice=pl.col("slice"),
        slice_value=pl.col("slice_value"),
        metric=pl.col("metric"),
        n_pairs=pl.col("n_pairs"),
        mean_a=pl.col("mean_a").fill_nan(None),
        mean_b=pl.col("mean_b").fill_nan(None),
        diff=pl.col("diff").fill_nan(None),
        ci_low=pl.col("ci_low").fill_nan(None),
        ci_high=pl.col("ci_high").fill_nan(None),
        test=pl.when(pl.col("binary")).then(pl.lit(TEST_MCNEMAR)).otherwise(pl.lit(TEST_PERMUTATION)),
        n_a_only=pl.when(pl.col("binary")).then(pl.col("n_a_only")),
        n_b_only=pl.when(pl.col("binary")).then(pl.col("n_b_only")),
        p_value=pl.col("p_value").fill_nan(None),
        p_adjusted=_nullable(adjusted),
        correction=pl.lit(CORRECTION),
    ).with_columns(
        significant=pl.col("p_adjusted") < ALPHA,
        resamples=pl.lit(resamples, dtype=pl.Int64),
        seed=pl.lit(seed, dtype=pl.Int64),
    ).cast(COMPARISON_SCHEMA)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- driver


def write_stats(
    out_dir: Path, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
    scores: pl.DataFrame | pl.LazyFrame | None = None,
    exact_max_ids: int = EXACT_MAX_IDS, buckets: int = BUCKETS,
) -> StatsSummary:
    """Read ``out_dir/scores.parquet`` lazily (or take ``scores``); write ``intervals.parquet``
    and ``comparisons.parquet`` into ``out_dir``.

    The scores are reduced to per-(group, cluster) sums in streaming passes (only the key and
    metric columns are read), so memory is bounded by groups x clusters, not by rows.
    """
    _check_resamples(resamples)
    out_dir = Path(out_dir)
    if scores is None:
        scores_path = out_dir / SCORES_FILE
        if not scores_path.is_file():
            raise InputError(
                f"{scores_path} is missing; run `rag-eval evaluate --out {out_dir}` first"
            )
        scores = pl.scan_parquet(scores_path)
    lf = scores.lazy()
    if _has_stats_columns(lf):
        stats = _statistics(lf, _layout(lf, exact_max_ids, buckets))
        intervals = _interval_table(stats, resamples, seed)
        comparisons = _comparison_table(stats, resamples, seed)
    else:
        intervals = pl.DataFrame(schema=INTERVAL_SCHEMA)
        comparisons = pl.DataFrame(schema=COMPARISON_SCHEMA)
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
    )
