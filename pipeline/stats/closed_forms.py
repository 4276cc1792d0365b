"""Closed forms over counts, the same in both resampling regimes.

* :func:`wilson_interval`: the Wilson score interval of a binomial proportion (E. B. Wilson,
  "Probable inference, the law of succession, and statistical inference", JASA 22, 1927),
  ``z`` = 1.959963984540054 (two-sided 95 %); the interval of a binary metric's mean.
* :func:`mcnemar_exact_p`: the exact two-sided McNemar test (Q. McNemar 1947) of the
  discordant pairs ``b`` and ``c``: the binomial test ``min(1, 2 P(X <= min(b, c)))`` with
  ``X ~ Binomial(b + c, 1/2)``, summed in log space so that millions of pairs cost a few
  thousand terms.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from pipeline.stats import budgets
from pipeline.stats.tables import Z_95


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
    rows_per_chunk = max(1, budgets.CHUNK_ELEMENTS // 4 // max(width, 1))
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
