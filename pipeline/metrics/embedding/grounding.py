"""Grounding: how many response sentences are supported by the passage they cite.

Sentences come from :func:`pipeline.text.sentences.split_sentences` on the raw response (markers
kept). A sentence is **supported** when all of these hold:

1. it cites exactly one passage: the distinct numbers in its ``[n]`` markers
   (:func:`pipeline.metrics.qa.citation.parse_citation_markers`) are one number ``n`` with
   ``1 <= n <= len(contexts)``; ``[1][2]``, ``[1, 2]``, no marker, or a number outside the
   contexts make it unsupported (``[1][1]`` cites one passage);
2. it is not an abstention: it does not contain an abstention phrase, both folded as in
   :func:`pipeline.metrics.qa.abstention.fold`;
3. ``cosine(embed(claim), embed(contexts[n - 1])) >= tau_sim``, where the claim is the
   sentence with its markers removed and surrounding whitespace stripped
   (``"Paris is big [1]."`` -> ``"Paris is big ."``).

:func:`grounding_counts` emits the sufficient statistics ``n_sentences`` and ``n_supported``
and, for reading a failure, ``first_unsupported``: the first sentence (as written, markers
kept) that is not supported, null when every sentence is or the row has no passages;
:func:`overlap` and :func:`faithfulness` are expressions over the counts. A row with a null or empty
response has 0 sentences; null ``contexts`` support nothing.

**Rows without passages** (``contexts`` null or empty, :func:`n_contexts` 0): grounding does not
apply, so ``overlap`` and ``faithfulness`` are null there and the views average them over the
rows that had passages. The core RAG tool scores such rows like any other (overlap 0.0,
faithfulness 0.6), which ranks a model that retrieved nothing above one whose passages support
only some sentences; its preset (``core-rag``, docs/compat.md) keeps that rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import polars as pl

from pipeline.config import DEFAULT_ABSTENTION_PHRASES, DEFAULT_TAU_SIM
from pipeline.metrics.common import safe_div
from pipeline.metrics.qa.abstention import fold, fold_phrases
from pipeline.metrics.qa.citation import parse_citation_markers, strip_citation_markers
from pipeline.text.sentences import split_sentences


class Embedder(Protocol):
    """What grounding needs from :class:`pipeline.embed.CachedEmbedder`."""

    def paired_dots(
        self, left: pl.Series, right: pl.Series, *, rows: int = 0, label: str = ""
    ) -> np.ndarray: ...


def grounding_counts(
    frame: pl.DataFrame,
    embedder: Embedder,
    *,
    tau_sim: float = DEFAULT_TAU_SIM,
    abstention_phrases: Sequence[str] = DEFAULT_ABSTENTION_PHRASES,
) -> pl.DataFrame:
    """``n_sentences``, ``n_supported`` (Int64, never null) and ``first_unsupported``
    (String) for each row of ``frame``.

    ``frame`` needs ``response`` (String) and ``contexts`` (List[String], may be null); the
    result has one row per input row, in order. Only eligible sentences (rules 1 and 2) and the
    passages they cite are embedded, in one deduplicated call.

    >>> from pipeline.embed import CachedEmbedder, EmbeddingCache, HashedNgramBackend
    >>> embedder = CachedEmbedder(HashedNgramBackend(), EmbeddingCache(None))
    >>> frame = pl.DataFrame({"response": ["Paris is in France [1]. I don't know [1]."],
    ...                       "contexts": [["Paris is in France."]]})
    >>> grounding_counts(frame, embedder).row(0)
    (2, 1, "I don't know [1].")
    """
    rows = frame.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"),
        split_sentences(pl.col("response")).alias("sentence"),
        pl.col("contexts").list.len().fill_null(0).cast(pl.Int64).alias("n_contexts"),
    )
    sentences = (
        rows.explode("sentence").drop_nulls("sentence")
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over("_row").alias("_sentence"))
    )
    cited = parse_citation_markers(pl.col("sentence"))
    number = cited.list.first()
    folded = fold_phrases(abstention_phrases)
    eligible = sentences.filter(
        (cited.list.len() == 1)
        & number.is_between(1, pl.col("n_contexts"))
        & ~fold(pl.col("sentence")).str.contains_any(folded)
    ).select(
        "_row",
        "_sentence",
        number.alias("_passage"),
        strip_citation_markers(pl.col("sentence")).str.strip_chars().alias("claim"),
    )
    passages = (
        frame.select(
            pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"),
            pl.col("contexts").alias("passage"),
        )
        .join(eligible.select("_row", "_passage").unique(), on="_row", how="semi")
        .with_columns(pl.int_ranges(1, pl.col("passage").list.len() + 1).alias("_passage"))
        .explode("passage", "_passage")
    )
    pairs = eligible.join(passages, on=["_row", "_passage"], how="left", maintain_order="left")

    supported = _supported(pairs, embedder, tau_sim, frame.height)
    supported_pairs = pairs.filter(supported)
    n_supported = supported_pairs.group_by("_row").len("n_supported")
    first_unsupported = (
        sentences.filter(pl.col("n_contexts") > 0)
        .join(supported_pairs.select("_row", "_sentence"), on=["_row", "_sentence"], how="anti")
        .group_by("_row")
        .agg(pl.col("sentence").sort_by("_sentence").first().str.strip_chars()
             .alias("first_unsupported"))
    )
    return (
        rows.join(n_supported, on="_row", how="left", maintain_order="left")
        .join(first_unsupported, on="_row", how="left", maintain_order="left")
        .select(
            pl.col("sentence").list.len().fill_null(0).cast(pl.Int64).alias("n_sentences"),
            pl.col("n_supported").fill_null(0).cast(pl.Int64),
            pl.col("first_unsupported").cast(pl.String),
        )
    )


def _supported(pairs: pl.DataFrame, embedder: Embedder, tau_sim: float, rows: int
               ) -> pl.Series:
    """``cosine(claim, passage) >= tau_sim`` per pair; False where the passage is null.

    Only claims and the passages they cite are embedded: a passage no eligible sentence cites
    is never encoded (rows x passages would be several times the text).
    """
    n = pairs.height
    present = pairs["passage"].is_not_null().to_numpy()
    cosine = embedder.paired_dots(pairs["claim"].filter(present),
                                  pairs["passage"].filter(present), rows=rows, label="grounding")
    supported = np.zeros(n, dtype=bool)
    supported[present] = cosine >= tau_sim
    return pl.Series("supported", supported)


def n_contexts(contexts: pl.Expr) -> pl.Expr:
    """Passages retrieved for the row: the length of ``contexts``, 0 when it is null (Int64).

    >>> pl.DataFrame({"c": [["p1", "p2"], [], None]}, schema={"c": pl.List(pl.String)}).select(
    ...     n_contexts(pl.col("c")))["c"].to_list()
    [2, 0, 0]
    """
    return contexts.list.len().fill_null(0).cast(pl.Int64)


def overlap(
    n_supported: pl.Expr, n_sentences: pl.Expr, n_contexts: pl.Expr | None = None
) -> pl.Expr:
    """Share of supported sentences, ``n_supported / n_sentences``; 0.0 with no sentences.

    With ``n_contexts``, null where it is 0 (no passage: grounding does not apply); without it,
    such rows score like any other (the core RAG tool's rule).

    >>> pl.select(overlap(pl.lit(1), pl.lit(4)), overlap(pl.lit(0), pl.lit(0)).alias("e")).row(0)
    (0.25, 0.0)
    >>> pl.select(overlap(pl.lit(0), pl.lit(2), pl.lit(0))).item() is None
    True
    """
    ratio = safe_div(n_supported, n_sentences, empty=0.0)
    if n_contexts is None:
        return ratio
    return pl.when(n_contexts > 0).then(ratio)


def faithfulness(
    overlap: pl.Expr, abstained: pl.Expr, answerable: pl.Expr, empty: pl.Expr | None = None
) -> pl.Expr:
    """The core RAG tool's proxy ``min(1, 0.6 + 0.4 * overlap)``, except 0.0 where the response
    gives no answer although the question is answerable: it abstains (``abstained == 1``) or,
    with ``empty``, it is empty (``empty == 1``, :func:`pipeline.metrics.qa.abstention.
    empty_response`).

    0.6 is a baseline, not a finding: an answer none of whose sentences is supported still
    scores 0.6; ``overlap``, the share of supported sentences, is what moves it. On an
    unanswerable question (``answerable`` false) an abstention or an empty response is not
    penalized: it keeps ``0.6 + 0.4 * overlap`` (0.6, since an abstaining sentence is never
    supported). A null ``overlap`` (no passage) gives null, also for an abstaining or empty
    response.

    >>> pl.select(faithfulness(pl.lit(0.5), pl.lit(0), pl.lit(True))).item()
    0.8
    >>> pl.select(faithfulness(pl.lit(0.5), pl.lit(1), pl.lit(True))).item()
    0.0
    >>> pl.select(faithfulness(pl.lit(0.0), pl.lit(1), pl.lit(False))).item()
    0.6
    >>> pl.select(faithfulness(pl.lit(0.0), pl.lit(0), pl.lit(True), pl.lit(1))).item()
    0.0
    """
    silent = abstained.cast(pl.Int8) == 1
    if empty is not None:
        silent = silent | (empty.cast(pl.Int8) == 1)
    refuses = silent & answerable
    return (
        pl.when(overlap.is_null())
        .then(pl.lit(None, dtype=pl.Float64))
        .when(refuses.fill_null(False))
        .then(pl.lit(0.0, dtype=pl.Float64))
        .otherwise((0.6 + 0.4 * overlap.cast(pl.Float64)).clip(upper_bound=1.0))
    )
