"""Shared arithmetic conventions of metric expressions: safe division with a stated empty value,
harmonic means, flags, exact float sums and CPython-exact rounding."""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from functools import partial, reduce

import numpy as np
import polars as pl

# Veltkamp's splitter for doubles: x = hi + lo with hi of 26 significant bits.
_SPLITTER = 134217729.0


def safe_div(numerator: pl.Expr, denominator: pl.Expr, *, empty: pl.Expr | float) -> pl.Expr:
    """``numerator / denominator`` as Float64, or ``empty`` where the denominator is 0.

    The value for a zero denominator is always stated by the caller, so each metric documents
    its own empty-input convention instead of producing NaN.
    """
    fallback = empty if isinstance(empty, pl.Expr) else pl.lit(empty, dtype=pl.Float64)
    return (
        pl.when(denominator == 0)
        .then(fallback)
        .otherwise(numerator.cast(pl.Float64) / denominator.cast(pl.Float64))
    )



def share_found(expected: pl.Expr, candidates: pl.Expr, *, empty: float) -> pl.Expr:
    """``|expected ∩ candidates| / |expected|`` of two list columns (Float64), ``empty`` where
    ``expected`` is empty, null where either is null.

    The lists are computed once each (as the fields of a struct handed to a batch function):
    polars does not share an expression containing ``list.eval`` between its uses, so written
    as one expression ``expected`` would be built three times.

    >>> pl.select(share_found(pl.lit(["a", "b", "c"]), pl.lit(["c", "a"]), empty=1.0)).item()
    0.6666666666666666
    """
    return pl.struct(expected=expected, candidates=candidates).map_batches(
        partial(_share_found_batch, empty=empty), return_dtype=pl.Float64, is_elementwise=True
    )


def _share_found_batch(pair: pl.Series, *, empty: float) -> pl.Series:
    expected = pl.col("expected")
    found = expected.list.set_intersection(pl.col("candidates")).list.len()
    return pair.struct.unnest().select(
        safe_div(found, expected.list.len(), empty=empty)
    ).to_series().rename(pair.name)



def sum_in_order(terms: Sequence[pl.Expr]) -> pl.Expr:
    """``terms[0] + terms[1] + ...`` added left to right, as Python's ``a + b + c`` (null where
    any term is null; at least one term).

    ``pl.sum_horizontal`` adds in another order, which can differ in the last bit: a weighted
    sum that Python makes 0.49999999999999994 it makes 0.5, and a threshold at 0.5 flips.

    >>> terms = [0.35 * 0.3, 0.2, 0.15 * 0.7, 0.1 * 0.3, 0.0, 0.05, 0.05 * 0.2]
    >>> pl.select(sum_in_order([pl.lit(t) for t in terms])).item() == sum(terms)
    True
    """
    if not terms:
        raise ValueError("sum_in_order needs at least one term")
    return reduce(operator.add, terms)


def harmonic_mean(precision: pl.Expr, recall: pl.Expr) -> pl.Expr:
    """``2PR / (P + R)``, 0.0 when both are 0 (evaluated as ``(2 * P * R) / (P + R)``)."""
    total = precision + recall
    return pl.when(total == 0).then(0.0).otherwise((2 * precision * recall) / total)


def flag(condition: pl.Expr) -> pl.Expr:
    """A boolean condition as a nullable Int8 0/1 column (null stays null)."""
    return condition.cast(pl.Int8)


def python_round(value: pl.Expr, digits: int = 4) -> pl.Expr:
    """``round(value, digits)`` of Python, exactly: the float's exact binary value rounded half
    to even at ``digits`` decimals (polars rounds ``value * 10**digits``, whose rounding can
    turn a value just above a tie into a tie, as 0.00025 -> 0.0002 where Python gives 0.0003).

    Computed by :func:`python_round_array` on the whole column at once (numpy): the value is
    read once, where an expression would repeat it (and every expression it is made of) in
    each of the fifteen places the arithmetic uses it.

    >>> import polars as pl
    >>> pl.select(python_round(pl.lit([0.00025, 0.00035, 0.94166666, -0.00001]).explode())
    ...           ).to_series().to_list()
    [0.0003, 0.0003, 0.9417, -0.0]
    """
    return value.cast(pl.Float64).map_batches(
        lambda column: pl.Series(column.name, python_round_array(column.to_numpy(), digits)),
        return_dtype=pl.Float64, is_elementwise=True,
    )


def python_round_array(x: np.ndarray, digits: int) -> np.ndarray:
    """:func:`python_round` of a float64 array (nulls as NaN come back as NaN, then null).

    The integer part is set aside (exactly) and the product of the fraction with
    ``10**digits`` is taken exactly as a sum of two doubles (Veltkamp split).
    """
    x = np.asarray(x, dtype=np.float64)
    scale = float(10**digits)
    # From 2**large on, a double's spacing is at least 10**-digits: the rounded decimal is
    # within half a spacing of x, so round() gives x back.
    large = math.ceil(52 - digits * math.log2(10))
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        unchanged = ~np.isfinite(x) | (np.abs(x) >= 2.0**large)
        integer = np.where(x >= 0.0, np.floor(x), np.ceil(x))
        fraction = x - integer  # exact
        product = fraction * scale
        split = fraction * _SPLITTER
        high = split - (split - fraction)
        low = fraction - high
        error = (high * scale - product) + low * scale  # fraction * scale == product + error
        whole = np.floor(product)
        above_half = (product - (whole + 0.5)) + error
        odd = (whole - 2.0 * np.floor(whole / 2.0)) == 1.0
        bump = (above_half > 0.0) | ((above_half == 0.0) & odd)
        units = integer * scale + whole + bump.astype(np.float64)  # an integer below 2**53
        rounded = units / scale
        negative_zero = (rounded == 0.0) & np.signbit(x)  # x < 0, or x is -0.0
        return np.where(unchanged, x, np.where(negative_zero, -0.0, rounded))
