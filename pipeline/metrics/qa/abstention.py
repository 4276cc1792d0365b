"""Abstention and refusal detection by phrase matching.

Texts are folded before matching (lowercase, curly quotes to straight ones, whitespace runs to
one space); a response abstains when it contains any configured phrase, folded the same way.

Two replaced tools use exact tokens instead (presets, docs/compat.md):
:func:`insufficient_context_exact` is the HotpotQA generation evaluator's detection and
:func:`abstention_exact` IntelliDocU's abstention accuracy.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipeline.metrics.common import flag
from pipeline.text.markers import CITATION_MARKER
from pipeline.text.normalize import lower_collapse, squad_normalize

_QUOTES_FROM = ["\u2019", "\u2018", "\u02bc", "\u201c", "\u201d"]
_QUOTES_TO = ["'", "'", "'", '"', '"']

#: A sentence: text up to terminal punctuation, with the citation markers that follow it.
_SENTENCE = rf"[^.!?\n]+(?:[.!?]+|$)(?:\s*{CITATION_MARKER})*"


def fold(text: pl.Expr) -> pl.Expr:
    """Lowercase, straighten quotes and collapse whitespace: the form phrases are matched in."""
    return lower_collapse(text.str.replace_many(_QUOTES_FROM, _QUOTES_TO))


def fold_phrases(phrases: Sequence[str]) -> list[str]:
    """The configured phrases folded like the texts they are matched against."""
    folded = pl.Series(list(phrases), dtype=pl.String).to_frame("p").select(fold(pl.col("p")))
    return folded.to_series().to_list()


def abstained(response: pl.Expr, *, phrases: Sequence[str]) -> pl.Expr:
    """1 when the folded response contains any abstention phrase (Int8)."""
    return flag(fold(response).str.contains_any(fold_phrases(phrases)))


def is_reference(reference: pl.Expr, token: str) -> pl.Expr:
    """Whether the reference is ``token``, compared folded and without trailing punctuation."""
    [folded_token] = fold_phrases([token])
    strip = r"[.!?\s]+$"
    return fold(reference).str.replace(strip, "") == folded_token.rstrip(".!? ")


def is_unanswerable(
    reference: pl.Expr, question_type: pl.Expr, *,
    abstention_reference: str, unanswerable_types: Sequence[str],
) -> pl.Expr:
    """The abstention reference or an unanswerable ``question_type`` (never null)."""
    return is_reference(reference, abstention_reference) | question_type.is_in(
        list(unanswerable_types)
    ).fill_null(False)


def abstention_correct(
    abstained_flag: pl.Expr, reference: pl.Expr, question_type: pl.Expr, *,
    abstention_reference: str, unanswerable_types: Sequence[str],
) -> pl.Expr:
    """For unanswerable rows (abstention reference or an unanswerable ``question_type``):
    1 when the response abstains, else 0. Null for answerable rows."""
    unanswerable = is_unanswerable(
        reference, question_type,
        abstention_reference=abstention_reference, unanswerable_types=unanswerable_types,
    )
    return pl.when(unanswerable).then(abstained_flag)


def insufficient_context_detected(
    abstained_flag: pl.Expr, reference: pl.Expr, *, insufficient_context_reference: str
) -> pl.Expr:
    """Where the reference is the insufficient-context token: 1 when the response abstains
    (says so in any configured phrase), else 0. Null elsewhere."""
    return pl.when(is_reference(reference, insufficient_context_reference)).then(abstained_flag)


def insufficient_context_exact(
    response: pl.Expr, reference: pl.Expr, *, insufficient_context_reference: str
) -> pl.Expr:
    """The HotpotQA generation evaluator's ``insufficient_context_detection``: where the
    reference is the token after ``normalize_answer`` (SQuAD), 1 when the response is the token
    too after ``normalize_answer``, else 0; null elsewhere (Int8).

    Any other wording scores 0: "I don't know" does not detect insufficient context here.

    >>> df = pl.DataFrame({"r": ["Insufficient context.", "I don't know", "x"],
    ...                    "g": ["insufficient context", "insufficient context", "Paris"]})
    >>> df.select(insufficient_context_exact(pl.col("r"), pl.col("g"),
    ...     insufficient_context_reference="insufficient context").alias("d"))["d"].to_list()
    [1, 0, None]
    """
    token = pl.select(squad_normalize(pl.lit(insufficient_context_reference))).item()
    return pl.when(squad_normalize(reference) == token).then(
        flag(squad_normalize(response) == token)
    )


def abstention_exact(response: pl.Expr, reference: pl.Expr, *, token: str) -> pl.Expr:
    """IntelliDocU's abstention accuracy per row: where the reference is exactly ``token``,
    1 when the response is exactly ``token`` too, else 0; null elsewhere (Int8).

    Exactly means the same string: case, spaces and the final period count.

    >>> token = "It is not mentioned in the document."
    >>> df = pl.DataFrame({"r": [token, "It is not mentioned in the document", token],
    ...                    "g": [token, token, "Paris"]})
    >>> df.select(abstention_exact(pl.col("r"), pl.col("g"), token=token).alias("a")
    ...           )["a"].to_list()
    [1, 0, None]
    """
    return pl.when(reference == token).then(flag(response == token))


def idk_with_citation(response: pl.Expr, *, phrases: Sequence[str]) -> pl.Expr:
    """1 when one sentence both abstains and carries a ``[n]`` citation marker (Int8).

    Citing a passage for "I don't know" is a known failure of RAG systems; healthy systems score 0.
    A sentence runs to its terminal punctuation plus any markers right after it.
    """
    folded = fold_phrases(phrases)
    sentences = fold(response).str.extract_all(_SENTENCE)
    both = pl.element().str.contains_any(folded) & pl.element().str.contains(CITATION_MARKER)
    return flag(sentences.list.eval(both).list.any())
