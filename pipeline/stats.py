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
Randomness is seeded per group: ``SeedSequence([seed, *sha256(group key)])``, so a group's
numbers do not depend on which other groups exist, and the same seed gives identical files.
With ``resamples=0`` the bootstrap intervals and permutation p-values are null; Wilson
intervals and McNemar tests are still computed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from pipeline.io.atomic import write_parquet_atomic
from pipeline.metrics.registry import REGISTRY
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

#: Input (the name :mod:`pipeline.evaluate` writes; imported there, so not imported here).
SCORES_FILE = "scores.parquet"
INTERVALS_FILE = "intervals.parquet"
COMPARISONS_FILE = "comparisons.parquet"

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
    """Registered numeric metrics present in ``scores_schema``, in registry order.

    Sufficient-statistic counts (Int64 with no better direction, e.g. ``rouge_1_overlap``) are
    left out: their means are not scores. ``total_tokens`` and ``latency_ms`` stay.

    >>> metric_columns({"id": pl.String(), "answer_em": pl.Int8(), "citation_n_pred": pl.Int64()})
    ['answer_em']
    """
    columns = []
    for name, spec in REGISTRY.items():
        dtype = scores_schema.get(name)
        if dtype is None or not dtype.is_numeric() or not spec.dtype.is_numeric():
            continue
        if spec.dtype == pl.Int64 and spec.higher_is_better is None:
            continue
        columns.append(name)
    return columns


def binary_columns(scores_schema: Mapping[str, pl.DataType]) -> list[str]:
    """Metrics of :func:`metric_columns` that are 0/1 flags (Int8 with range [0, 1]).

    >>> binary_columns({"answer_em": pl.Int8(), "answer_f1": pl.Float64()})
    ['answer_em']
    """
    return [
        name
        for name in metric_columns(scores_schema)
        if (spec := REGISTRY[name]).dtype == pl.Int8 and (spec.lower, spec.upper) == (0, 1)
    ]


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


def _rng(seed: int, *key: Any) -> np.random.Generator:
    """A generator for one group: the seed plus four words of sha256 of the group key as JSON."""
    digest = hashlib.sha256(json.dumps(key).encode()).digest()
    words = np.frombuffer(digest[:16], dtype="<u4").tolist()
    return np.random.default_rng(np.random.SeedSequence([seed, *words]))


def _cluster_sums(ids: pl.Series, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-id sums and counts of the non-NaN ``values`` (rows x metrics); ids in sorted order."""
    if ids.len() == 0:
        return np.zeros((0, values.shape[1])), np.zeros((0, values.shape[1]))
    codes = ids.rank("dense").fill_null(0).to_numpy()
    order = np.argsort(codes, kind="stable")
    ordered = codes[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    present = ~np.isnan(values[order])
    sums = np.add.reduceat(np.where(present, values[order], 0.0), starts, axis=0)
    counts = np.add.reduceat(present.astype(np.float64), starts, axis=0)
    return sums, counts


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


def _float_matrix(frame: pl.DataFrame, columns: list[str]) -> np.ndarray:
    """Columns as a float64 matrix (rows x columns) with NaN for nulls."""
    if not columns:
        return np.zeros((frame.height, 0))
    matrix = frame.select(pl.col(columns).cast(pl.Float64)).to_numpy()
    return matrix.reshape(frame.height, len(columns))


def _nullable(values: np.ndarray) -> pl.Series:
    return pl.Series(values, dtype=pl.Float64, nan_to_null=True)


# --------------------------------------------------------------------------- intervals


def interval_table(
    scores: pl.DataFrame, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> pl.DataFrame:
    """Bootstrap and Wilson intervals of every metric per model, model x noise, model x category.

    Grain: one row per (view, model, noise_level, category, metric); see the module docstring.
    """
    _check_resamples(resamples)
    metrics = metric_columns(scores.schema)
    binary = np.array([name in set(binary_columns(scores.schema)) for name in metrics], dtype=bool)
    frames = [pl.DataFrame(schema=INTERVAL_SCHEMA)]
    for view, extra in VIEWS.items():
        keys = ["model", *extra]
        present = [c for c in keys if c in scores.columns]
        if len(present) < len(keys) or not metrics:
            continue
        rows = scores.drop_nulls(list(extra)) if extra else scores
        rows = rows.sort(keys, nulls_last=True, maintain_order=True)
        for group in rows.partition_by(keys, maintain_order=True):
            key = {c: group[c][0] for c in ("model", "noise_level", "category") if c in keys}
            values = _float_matrix(group, metrics)
            sums, counts = _cluster_sums(group["id"], values)
            n = counts.sum(axis=0)
            with np.errstate(invalid="ignore", divide="ignore"):
                mean = sums.sum(axis=0) / n
            rng = _rng(seed, "interval", view, key.get("model"), key.get("noise_level"),
                       key.get("category"))
            low, high = _percentile_interval(_bootstrap_means(sums, counts, rng, resamples))
            w_low, w_high = wilson_interval(sums.sum(axis=0), n)
            keep = n > 0
            frame = pl.DataFrame(
                {
                    "view": view,
                    "model": key.get("model"),
                    "noise_level": key.get("noise_level"),
                    "category": key.get("category"),
                    "metric": np.array(metrics, dtype=object)[keep].tolist(),
                    "n": n[keep].astype(np.int64),
                    "mean": _nullable(mean[keep]),
                    "ci_low": _nullable(low[keep]),
                    "ci_high": _nullable(high[keep]),
                    "wilson_low": _nullable(np.where(binary, w_low, np.nan)[keep]),
                    "wilson_high": _nullable(np.where(binary, w_high, np.nan)[keep]),
                    "resamples": resamples,
                    "seed": seed,
                    "method": BOOTSTRAP_METHOD,
                },
                schema=INTERVAL_SCHEMA,
            )
            frames.append(frame)
    table = pl.concat(frames, how="vertical")
    return table.sort(["view", "model", "noise_level", "category", "metric"], nulls_last=True)


# --------------------------------------------------------------------------- comparisons


def _paired(scores: pl.DataFrame, model_a: str, model_b: str, metrics: list[str]) -> pl.DataFrame:
    """Rows of ``model_a`` joined with rows of ``model_b`` on :data:`PAIR_KEYS` (nulls equal)."""
    keys = [c for c in PAIR_KEYS if c in scores.columns]
    sides = []
    for model, suffix in ((model_a, "a"), (model_b, "b")):
        side = scores.filter(pl.col("model") == model).select(
            *keys,
            *(pl.col(c).alias(f"{c}_{suffix}") for c in ("category",) if c in scores.columns),
            *(pl.col(m).cast(pl.Float64).alias(f"{m}__{suffix}") for m in metrics),
        )
        unique = side.filter(pl.len().over(keys) == 1)
        if unique.height < side.height:
            log.warning(
                "model %r: %d rows share a (%s) key with another row of the model; "
                "they are left out of its paired comparisons",
                model, side.height - unique.height, ", ".join(keys),
            )
        sides.append(unique)
    joined = sides[0].join(sides[1], on=keys, how="inner", nulls_equal=True, maintain_order="left")
    if "category" in scores.columns:
        joined = joined.with_columns(
            pl.coalesce("category_a", "category_b").alias("category")
        ).drop("category_a", "category_b")
    return joined.sort(keys, nulls_last=True, maintain_order=True)


def _slices(joined: pl.DataFrame) -> list[tuple[str, str, pl.Series]]:
    """(slice, slice_value, row mask) for ``all`` and every non-null value of each slice column."""
    out = [("all", "all", pl.Series(np.ones(joined.height, dtype=bool)))]
    for column in SLICES:
        if column not in joined.columns:
            continue
        for value in joined[column].drop_nulls().unique().sort().to_list():
            out.append((column, str(value), joined[column] == value))
    return out


def _compare_slice(
    rows: pl.DataFrame,
    metrics: list[str],
    binary: np.ndarray,
    rng_key: tuple[Any, ...],
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    a = _float_matrix(rows, [f"{m}__a" for m in metrics])
    b = _float_matrix(rows, [f"{m}__b" for m in metrics])
    both = ~np.isnan(a) & ~np.isnan(b)
    n_pairs = both.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_a = np.where(both, a, 0.0).sum(axis=0) / n_pairs
        mean_b = np.where(both, b, 0.0).sum(axis=0) / n_pairs
    diffs = np.where(both, a - b, np.nan)
    sums, counts = _cluster_sums(rows["id"], diffs)
    means = _bootstrap_means(sums, counts, _rng(seed, "bootstrap", *rng_key), resamples)
    low, high = _percentile_interval(means)
    a_only = np.count_nonzero(both & (a == 1) & (b == 0), axis=0)
    b_only = np.count_nonzero(both & (a == 0) & (b == 1), axis=0)
    if resamples > 0:
        permutation = _permutation_p(sums, _rng(seed, "permutation", *rng_key), resamples)
    else:
        permutation = np.full(len(metrics), np.nan)
    p = np.where(binary, mcnemar_exact_p(a_only, b_only), permutation)
    keep = n_pairs > 0
    return {
        "metric": np.array(metrics, dtype=object)[keep].tolist(),
        "n_pairs": n_pairs[keep].astype(np.int64),
        "mean_a": mean_a[keep],
        "mean_b": mean_b[keep],
        "diff": (mean_a - mean_b)[keep],
        "ci_low": low[keep],
        "ci_high": high[keep],
        "binary": binary[keep],
        "n_a_only": a_only[keep].astype(np.int64),
        "n_b_only": b_only[keep].astype(np.int64),
        "p_value": p[keep],
    }


def comparison_table(
    scores: pl.DataFrame, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED
) -> pl.DataFrame:
    """Paired differences and tests for every pair of models, overall and per slice.

    Grain: one row per (model_a, model_b, slice, slice_value, metric); see the module docstring.
    Rows with a null model take part in no comparison.
    """
    _check_resamples(resamples)
    metrics = metric_columns(scores.schema)
    binary_set = set(binary_columns(scores.schema))
    binary = np.array([name in binary_set for name in metrics], dtype=bool)
    frames = [pl.DataFrame(schema=COMPARISON_SCHEMA)]
    if "model" not in scores.columns or not metrics:
        return frames[0]
    models = scores["model"].drop_nulls().unique().sort().to_list()
    for i, model_a in enumerate(models):
        for model_b in models[i + 1 :]:
            joined = _paired(scores, model_a, model_b, metrics)
            parts = []
            for slice_name, value, mask in _slices(joined):
                key = (model_a, model_b, slice_name, value)
                part = _compare_slice(joined.filter(mask), metrics, binary, key, resamples, seed)
                parts.append(pl.DataFrame(part).with_columns(
                    slice=pl.lit(slice_name), slice_value=pl.lit(value)
                ))
            pair = pl.concat(parts, how="vertical")
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
    scores: pl.DataFrame | None = None,
) -> StatsSummary:
    """Read ``out_dir/scores.parquet`` (or take ``scores``); write ``intervals.parquet`` and
    ``comparisons.parquet`` into ``out_dir``. Holds every score in memory."""
    _check_resamples(resamples)
    out_dir = Path(out_dir)
    if scores is None:
        scores_path = out_dir / SCORES_FILE
        if not scores_path.is_file():
            raise InputError(
                f"{scores_path} is missing; run `rag-eval evaluate --out {out_dir}` first"
            )
        scores = pl.read_parquet(scores_path)
    intervals = interval_table(scores, resamples=resamples, seed=seed)
    comparisons = comparison_table(scores, resamples=resamples, seed=seed)
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
