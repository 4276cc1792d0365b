"""Tokenizers as polars expressions returning ``List[String]``."""

from __future__ import annotations

import polars as pl

from pipeline.text.charclasses import space_class
from pipeline.text.normalize import squad_core


def whitespace_tokens(text: pl.Expr) -> pl.Expr:
    """``text.split()``: maximal runs of non-``str.isspace`` characters; ``[]`` for ``""``."""
    return text.str.extract_all(f"[^{space_class()}]+")


def squad_tokens(text: pl.Expr) -> pl.Expr:
    """``get_tokens`` of the official SQuAD v2 script: ``normalize_answer(s).split()``.

    The tokens joined by single spaces equal ``normalize_answer(s)``, so two texts have equal
    normalizations exactly when their token lists are equal.

    >>> import polars as pl
    >>> pl.select(squad_tokens(pl.lit("The cat, the hat."))).item().to_list()
    ['cat', 'hat']
    """
    return whitespace_tokens(squad_core(text))
