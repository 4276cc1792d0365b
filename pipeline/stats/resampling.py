"""Resampling over questions: the percentile cluster bootstrap of a mean and the paired
sign-flip permutation test, in two regimes that one rule picks per table (from the distinct
ids of all the scores, :mod:`pipeline.stats.coding`).

* **Exact** (at most :data:`~pipeline.stats.tables.EXACT_MAX_IDS` = 256 distinct ids): a
  cluster is an id, and each group has its own generator ``SeedSequence([seed,
  *sha256(JSON group key)[:16] as 4 uint32])`` (:func:`_rng`) with keys ``("interval", slice,
  model, *values)``, ``("bootstrap", model_a, model_b, slice, *values)`` and
  ``("permutation", ...)``, where ``values`` are the row's values of the slice's columns in the
  slice's order (JSON; a value JSON has no type for is its ``str``). Each resample draws the
  group's ids with replacement (``rng.integers``, ids in ascending order, a null id first) and
  the sign-flip test draws ``rng.integers(0, 2)`` per id: the cluster bootstrap computed group
  by group, and a group's numbers do not depend on other groups.
* **Bucketed** (more ids): ids are hashed into :data:`~pipeline.stats.tables.BUCKETS` = 1024
  buckets by :func:`~pipeline.stats.coding.bucket_of`, and buckets are resampled instead of
  ids. One weight matrix ``W`` (resamples x buckets; each row the counts of ``buckets``
  uniform draws, i.e. multinomial) comes from ``SeedSequence([seed, *sha256(["interval",
  "buckets"])])`` for the intervals and from ``["bootstrap", "buckets"]`` for the comparisons,
  and is applied to every group at once: questions are resampled jointly across slices, which
  is a valid cluster bootstrap since a bucket is a union of whole questions. A small group
  sees ``W`` restricted to the few buckets it occupies: close to the Poisson(1) bootstrap. The
  sign-flip test uses one sign matrix from ``["permutation", "buckets"]`` on the bucket sums
  of the per-question differences: a sum of independent symmetric differences is symmetric,
  so the test stays a valid randomization test. Every product with ``W`` has one shape
  (:data:`~pipeline.stats.budgets.PRODUCT_COLUMNS` columns, zero-padded), and a group in at
  most 1/:data:`~pipeline.stats.budgets.SPARSE_RATIO` of the buckets is resampled from its
  own buckets, so a group's numbers depend on its own sums only, not on the groups, slices or
  blocks computed beside it.

A resampled mean is ``sum(w * id_sums) / sum(w * id_counts)``; the interval is the 2.5th and
97.5th percentiles of the resampled means (numpy's ``linear`` method); the p-value is
``(1 + #{|T*| >= |T|}) / (B + 1)``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from pipeline.stats import budgets
from pipeline.stats.sums import _ranks, _Sums
from pipeline.stats.tables import CONFIDENCE


def _check_resamples(resamples: int) -> None:
    if isinstance(resamples, bool) or not isinstance(resamples, int | np.integer):
        raise ValueError(f"resamples must be an integer, got {resamples!r}")
    if resamples < 0:
        raise ValueError(f"resamples must be >= 0, got {resamples}")


def _rng(seed: int, *key: Any) -> np.random.Generator:
    """A generator for one group: the seed plus four words of sha256 of the group key as JSON."""
    digest = hashlib.sha256(json.dumps(key, default=str).encode()).digest()
    words = np.frombuffer(digest[:16], dtype="<u4").tolist()
    return np.random.default_rng(np.random.SeedSequence([seed, *words]))


def _chunks(resamples: int, n_ids: int) -> list[int]:
    size = max(1, budgets.CHUNK_ELEMENTS // max(n_ids, 1))
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
    return _percentile_rows(np.ascontiguousarray(means.T))


def _percentile_rows(means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_percentile_interval` of each row of ``means`` (columns x resamples)."""
    ordered = np.sort(means, axis=1)  # NaN sorts last
    valid = np.count_nonzero(~np.isnan(ordered), axis=1)
    rows = np.arange(ordered.shape[0])
    tail = (1.0 - CONFIDENCE) / 2.0
    bounds = []
    for q in (tail, 1.0 - tail):
        position = q * np.maximum(valid - 1, 0)
        below = np.floor(position).astype(np.int64)
        above = np.minimum(below + 1, np.maximum(valid - 1, 0))
        fraction = position - below
        if ordered.shape[1] == 0:
            bounds.append(np.full(ordered.shape[0], np.nan))
            continue
        low_value, high_value = ordered[rows, below], ordered[rows, above]
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


def _fixed_products(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``left @ right`` (float64) in blocks of :data:`budgets.PRODUCT_COLUMNS` columns of ``right``,
    the last block padded with zero columns.

    BLAS adds in an order that depends on the shape of a product; with every product of one
    shape, a column's result depends on that column alone, not on how many other columns
    (groups, slices, blocks) are computed beside it.
    """
    out = np.empty((left.shape[0], right.shape[1]))
    block = np.zeros((right.shape[0], budgets.PRODUCT_COLUMNS))
    for start in range(0, right.shape[1], budgets.PRODUCT_COLUMNS):
        width = min(budgets.PRODUCT_COLUMNS, right.shape[1] - start)
        block[:, :width] = right[:, start : start + width]
        block[:, width:] = 0.0
        out[:, start : start + width] = (left @ block)[:, :width]
    return out


def _bucket_bootstrap(
    sums: np.ndarray, counts: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of ``(w @ sums) / (w @ counts)`` per column (buckets x columns).

    Columns without counts are skipped (NaN); equal count columns (the metrics of a group
    without missing values) share one product. The caller bounds the columns of one call.
    """
    resamples, buckets = weights.shape
    low, high = np.full(sums.shape[1], np.nan), np.full(sums.shape[1], np.nan)
    active = np.flatnonzero(counts.any(axis=0))
    if active.size == 0 or resamples == 0:
        return low, high
    distinct, inverse = _distinct_columns(counts[:, active])
    means = np.empty((resamples, active.size))
    start = 0
    for size in _chunks(resamples, buckets):
        w = weights[start : start + size].astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            means[start : start + size] = (
                _fixed_products(w, sums[:, active]) / _fixed_products(w, distinct)[:, inverse]
            )
        start += size
    low[active], high[active] = _percentile_interval(means)
    return low, high


def _bucket_permutation_p(
    summed_diffs: np.ndarray, packed_signs: np.ndarray, observed: np.ndarray,
    tolerance: np.ndarray,
) -> np.ndarray:
    """:func:`_permutation_p` with the signs of :func:`_bucket_signs` (buckets x columns);
    ``observed`` is ``|sum|`` of each column, ``tolerance`` as in :func:`_permutation_p`."""
    resamples = packed_signs.shape[0]
    buckets = packed_signs.shape[1] * 8
    extreme = np.zeros(summed_diffs.shape[1], dtype=np.int64)
    start = 0
    for size in _chunks(resamples, buckets):
        bits = np.unpackbits(packed_signs[start : start + size], axis=1)
        signs = 2.0 * bits.astype(np.float64) - 1.0
        flipped = np.abs(_fixed_products(signs, summed_diffs))
        extreme += np.count_nonzero(flipped >= observed - tolerance, axis=0)
        start += size
    return (1.0 + extreme) / (resamples + 1.0)


def _gathered_bootstrap(
    s: _Sums, groups: np.ndarray, first: np.ndarray, nnz: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval (groups x metrics) of the resampled means of ``groups`` of ``s``
    (``first`` entry and ``nnz`` entries of each group), each from the weights of its own
    buckets only.

    Groups with as many buckets are stacked into one product, whose every slice is computed
    as the group's product alone: a group's means depend on its entries only.
    """
    resamples, metrics = weights.shape[0], s.sums.shape[0]
    by_bucket = weights.T  # buckets x resamples
    low, high = np.empty((groups.size, metrics)), np.empty((groups.size, metrics))
    for size in np.unique(nnz[groups]).tolist():
        where = np.flatnonzero(nnz[groups] == size)
        step = max(1, budgets.BLOCK_BYTES // (8 * max(resamples, 1) * (size + 3 * metrics)))
        for start in range(0, where.size, step):
            chosen = where[start : start + step]
            entry = first[groups[chosen]][:, None] + np.arange(size)  # groups x size
            w = by_bucket[s.cluster[entry]].astype(np.float64)  # groups x size x resamples
            means = s.sums.T[entry].transpose(0, 2, 1) @ w  # groups x metrics x resamples
            counts = s.counts.T[entry].transpose(0, 2, 1)
            same = (counts == counts[:, :1]).all(axis=(1, 2))  # one product for all metrics
            with np.errstate(invalid="ignore", divide="ignore"):
                for pick, rows in ((same, slice(0, 1)), (~same, slice(None))):
                    if pick.any():
                        means[pick] /= counts[pick][:, rows] @ w[pick]
            del w
            bounds = _percentile_rows(means.reshape(chosen.size * metrics, resamples))
            low[chosen], high[chosen] = (bound.reshape(-1, metrics) for bound in bounds)
    return low, high


def _gathered_permutation_p(
    s: _Sums, groups: np.ndarray, first: np.ndarray, nnz: np.ndarray,
    packed_signs: np.ndarray, observed: np.ndarray, tolerance: np.ndarray,
) -> np.ndarray:
    """:func:`_bucket_permutation_p` for ``groups`` of ``s`` from the signs of their own
    buckets (as :func:`_gathered_bootstrap`): groups x metrics."""
    resamples, metrics = packed_signs.shape[0], s.sums.shape[0]
    by_byte = np.ascontiguousarray(packed_signs.T)  # bucket bytes x resamples
    extreme = np.zeros((groups.size, metrics), dtype=np.int64)
    for size in np.unique(nnz[groups]).tolist():
        where = np.flatnonzero(nnz[groups] == size)
        step = max(1, budgets.BLOCK_BYTES // (8 * resamples * (size + 2 * metrics)))
        for start in range(0, where.size, step):
            chosen = where[start : start + step]
            entry = first[groups[chosen]][:, None] + np.arange(size)
            bucket = s.cluster[entry]  # bit 7 - bucket % 8 of byte bucket // 8 keeps a sign
            bits = (by_byte[bucket >> 3] >> (7 - (bucket & 7)).astype(np.uint8)[..., None]) & 1
            signs = 2.0 * bits.astype(np.float64) - 1.0  # groups x size x resamples
            flipped = np.abs(s.sums.T[entry].transpose(0, 2, 1) @ signs)
            bound = observed[groups[chosen]] - tolerance[groups[chosen]]
            extreme[chosen] = np.count_nonzero(flipped >= bound[:, :, None], axis=2)
    return (1.0 + extreme) / (resamples + 1.0)


def _exact_resampled(
    s: _Sums, groups: int, n: np.ndarray, resamples: int,
    generators: Callable[[int], tuple[np.random.Generator, np.random.Generator | None]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exact regime, group by group: percentile interval of the cluster bootstrap and, where
    ``generators(group)`` gives a second generator, the sign-flip p-value (groups x metrics)."""
    m = s.sums.shape[0]
    low, high, p = (np.full((groups, m), np.nan) for _ in range(3))
    first, nnz = s.starts(groups)
    for g in np.flatnonzero(nnz).tolist():
        if not (n[g] > 0).any():
            continue
        entries = slice(int(first[g]), int(first[g] + nnz[g]))
        sums = np.ascontiguousarray(s.sums[:, entries]).T  # clusters x metrics
        counts = np.ascontiguousarray(s.counts[:, entries]).T
        bootstrap, permutation = generators(g)
        means = _bootstrap_means(sums, counts, bootstrap, resamples)
        low[g], high[g] = _percentile_interval(means)
        if permutation is not None and resamples > 0:
            p[g] = _permutation_p(sums, permutation, resamples)
    return low, high, p


def _bucket_resampled(
    jobs: Sequence[tuple[_Sums, int]], clusters: int, weights: np.ndarray,
    signs: np.ndarray | None,
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The bucketed regime for several (statistics, groups) at once: per job the percentile
    interval of the shared weight matrix's means and, with ``signs``, the sign-flip p-value
    (groups x metrics each).

    A group spread over more than 1/:data:`budgets.SPARSE_RATIO` of the buckets is resampled on a
    dense column per metric (:func:`_bucket_bootstrap`; the jobs' columns share products), a
    group in fewer buckets from its own buckets (:func:`_gathered_bootstrap`); either way in blocks
    of :data:`budgets.BLOCK_BYTES`. A group's numbers depend on its own sums only.
    """
    offsets = np.cumsum([0, *(groups for _, groups in jobs)])
    groups = int(offsets[-1])
    s = _Sums.merged([_Sums(part.group + offset, part.cluster, part.sums, part.counts,
                            part.rows) for (part, _), offset in zip(jobs, offsets, strict=False)],
                     jobs[0][0].sums.shape[0] if jobs else 0, ordered=True)
    m, resamples = s.sums.shape[0], weights.shape[0]
    low, high, p = (np.full((groups, m), np.nan) for _ in range(3))
    first, nnz = s.starts(groups)
    observed = tolerance = np.empty((groups, m))
    if signs is not None:  # added in bucket order, as numpy sums the rows of a dense matrix
        observed = np.abs(np.stack([np.bincount(s.group, weights=s.sums[j], minlength=groups)
                                    for j in range(m)], axis=1))
        spread = np.stack([np.bincount(s.group, weights=np.abs(s.sums[j]), minlength=groups)
                           for j in range(m)], axis=1)
        tolerance = 1e-9 * np.maximum(1.0, spread)
    dense = np.flatnonzero(nnz * budgets.SPARSE_RATIO > clusters)
    step = max(1, budgets.BLOCK_BYTES // (8 * max(m, 1) * (2 * clusters + 4 * resamples)))
    for start in range(0, dense.size, step):
        chosen = dense[start : start + step]
        entry = np.repeat(first[chosen], nnz[chosen]) + _ranks(nnz[chosen])
        column = (np.repeat(np.arange(chosen.size), nnz[chosen]) * m)[:, None] + np.arange(m)
        sums, counts = np.zeros((clusters, chosen.size * m)), np.zeros((clusters, chosen.size * m))
        sums[s.cluster[entry][:, None], column] = s.sums[:, entry].T
        counts[s.cluster[entry][:, None], column] = s.counts[:, entry].T
        bounds = _bucket_bootstrap(sums, counts, weights)
        low[chosen], high[chosen] = (bound.reshape(-1, m) for bound in bounds)
        if signs is not None:
            p[chosen] = _bucket_permutation_p(
                sums, signs, observed[chosen].ravel(), tolerance[chosen].ravel()
            ).reshape(-1, m)
    sparse = np.flatnonzero((nnz > 0) & (nnz * budgets.SPARSE_RATIO <= clusters))
    step = max(1, budgets.BLOCK_BYTES // (32 * max(m, 1) * max(resamples, 1)))
    for start in range(0, sparse.size, step):
        chosen = sparse[start : start + step]
        low[chosen], high[chosen] = _gathered_bootstrap(s, chosen, first, nnz, weights)
        if signs is not None:
            p[chosen] = _gathered_permutation_p(s, chosen, first, nnz, signs, observed,
                                                tolerance)
    return [(low[a:b], high[a:b], p[a:b])
            for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True)]
