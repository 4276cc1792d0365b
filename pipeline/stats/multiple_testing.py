"""Adjusted p-values for a family of tests: Holm's step-down procedure (S. Holm, "A simple
sequentially rejective multiple test procedure", Scand. J. Statist. 6, 1979), which the
comparisons apply (``correction`` = ``holm``), and the Benjamini-Hochberg false discovery rate
(Y. Benjamini and Y. Hochberg, JRSS B 57, 1995). A NaN p-value stays NaN and is not counted
as a test."""

from __future__ import annotations

import numpy as np


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
