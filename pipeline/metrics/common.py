"""Shared numeric conventions for metric expressions."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from functools import partial, reduce

import polars as pl


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
