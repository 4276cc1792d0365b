"""Cost and latency columns carried through from the input."""

from __future__ import annotations

import polars as pl


def total_tokens(total: pl.Expr, prompt: pl.Expr, completion: pl.Expr) -> pl.Expr:
    """``total_tokens`` where given, else ``prompt_tokens + completion_tokens`` (null if either
    is missing)."""
    return pl.coalesce(total, prompt + completion).cast(pl.Int64)
