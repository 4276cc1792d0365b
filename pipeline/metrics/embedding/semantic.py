"""Embedding cosines between two text columns: semantic similarity and semantic relevance.

Vectors come from a :class:`pipeline.embed.CachedEmbedder` (all-MiniLM-L6-v2 by default), whose
rows are unit vectors, so the cosine is the row-wise dot product. It is computed in float64 and
clipped to ``[-1, 1]`` (float32 rounding can give ``1.0000001`` for identical texts).

Null convention: the cosine is null where either text is null. Both texts present but one
without any feature for a lexical backend (``""`` with ``hashed``) gives 0.0, not null.

These are Series functions, not expressions: embedding needs the whole batch at once, so the
registry calls them through ``map_batches``.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from pipeline.embed.cache import CachedEmbedder


def cosine_similarity(
    left: pl.Series, right: pl.Series, embedder: CachedEmbedder, *, label: str = ""
) -> pl.Series:
    """Row-wise cosine of the embeddings of ``left`` and ``right`` (Float64, in ``[-1, 1]``).

    Null where either side is null. Both columns go to the embedder in one call, so a text that
    occurs on both sides, or on many rows, is embedded once.

    >>> from pipeline.embed import CachedEmbedder, EmbeddingCache, HashedNgramBackend
    >>> embedder = CachedEmbedder(HashedNgramBackend(), EmbeddingCache(None))
    >>> left = pl.Series(["the cat", "the cat", None])
    >>> cosine_similarity(left, pl.Series(["the cat", "", "x"]), embedder).round(6).to_list()
    [1.0, 0.0, None]
    """
    if len(left) != len(right):
        raise ValueError(f"columns differ in length: {len(left)} and {len(right)}")
    both = (left.is_not_null() & right.is_not_null()).to_numpy()
    dots = embedder.paired_dots(left.cast(pl.String).filter(both),
                                right.cast(pl.String).filter(both), rows=len(left), label=label)
    cosine = np.full(len(left), np.nan)
    cosine[both] = np.clip(dots, -1.0, 1.0)
    return pl.Series("cosine", cosine, dtype=pl.Float64, nan_to_null=True)


def semantic_similarity(
    response: pl.Series, reference: pl.Series, embedder: CachedEmbedder
) -> pl.Series:
    """Cosine of response and reference embeddings, clamped to ``[0, 1]`` (null if either is null).

    Negative cosines (unrelated texts) count as no similarity.
    """
    return cosine_similarity(response, reference, embedder, label="semantic_similarity").clip(
        0.0, 1.0
    )


def semantic_relevance(
    question: pl.Series, response: pl.Series, embedder: CachedEmbedder
) -> pl.Series:
    """Cosine of question and response embeddings, not clamped: in ``[-1, 1]``, null if either
    is null."""
    return cosine_similarity(question, response, embedder, label="semantic_relevance")
