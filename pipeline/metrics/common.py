"""Shared numeric conventions for metric expressions."""

from __future__ import annotations

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


def harmonic_mean(precision: pl.Expr, recall: pl.Expr) -> pl.Expr:
    """``2PR / (P + R)``, 0.0 when both are 0 (evaluated as ``(2 * P * R) / (P + R)``)."""
    total = precision + recall
    return pl.when(total == 0).then(0.0).otherwise((2 * precision * recall) / total)


def flag(condition: pl.Expr) -> pl.Expr:
    """A boolean condition as a nullable Int8 0/1 column (null stays null)."""
    return condition.cast(pl.Int8)
