"""Abstention and refusal detection: the refusal rule, plus configured phrases.

A response abstains when :func:`pipeline.text.refusals.refuses` reads it as a refusal (it says
the sources or the model lack the answer and asserts nothing else, in ten languages), or when it
contains a configured phrase that the default lists do not hold (a user's own wording adds to
the rule). Phrases are matched folded (lowercase, curly quotes to straight ones, whitespace runs
to one space). With ``rules=False`` (every compat preset) only the phrases count, as substrings,
exactly as the replaced tools did.

Whether a *question* is unanswerable is decided in one place, :func:`is_unanswerable`: every
metric that asks (``unanswerable``, ``abstention_correct``, ``faithfulness`` and through
``unanswerable`` the overall layer's failure modes) reads that rule.

Two replaced tools use exact tokens instead (presets, docs/compat.md):
:func:`insufficient_context_exact` is the HotpotQA generation evaluator's detection and
:func:`abstention_exact` IntelliDocU's abstention accuracy.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipeline.config import DEFAULT_ABSTENTION_PHRASES
from pipeline.metrics.arithmetic import flag
from pipeline.metrics.qa.citation import strip_citation_markers
from pipeline.text.markers import CITATION_MARKER
from pipeline.text.normalize import lower_collapse, squad_normalize
from pipeline.text.refusals import refuses

_QUOTES_FROM = ["\u2019", "\u2018", "\u02bc", "\u201c", "\u201d"]
_QUOTES_TO = ["'", "'", "'", '"', '"']

#: A sentence: text up to terminal punctuation, with the citation markers that follow it.
_SENTENCE = rf"[^.!?\n]+(?:[.!?]+|$)(?:\s*{CITATION_MARKER})*"
#: Trailing punctuation and spaces a reference is compared without.
_TRAILING = r"[.!?\s]+$"

#: References that say the question has no answer, whatever the configuration: RAGAS and
#: Hugging Face data sets mark such questions with a ground truth like these. The configured
#: abstention reference, insufficient-context token and abstention phrases count too
#: (:func:`unanswerable_references`).
UNANSWERABLE_REFERENCES: tuple[str, ...] = ("I don't know", "unanswerable", "no answer")


def fold(text: pl.Expr) -> pl.Expr:
    """Lowercase, straighten quotes and collapse whitespace: the form phrases are matched in
    (Python's lowercasing, exactly; :func:`pipeline.text.refusals.fold` is the rule's own)."""
    return lower_collapse(text.str.replace_many(_QUOTES_FROM, _QUOTES_TO))


def fold_phrases(phrases: Sequence[str]) -> list[str]:
    """The configured phrases folded like the texts they are matched against."""
    folded = pl.Series(list(phrases), dtype=pl.String).to_frame("p").select(fold(pl.col("p")))
    return folded.to_series().to_list()


def abstained(response: pl.Expr, *, phrases: Sequence[str], rules: bool = False) -> pl.Expr:
    """1 when the response abstains, else 0 (Int8; null for a null response).

    With ``rules``: the refusal rule (:func:`pipeline.text.refusals.refuses`) or a configured
    phrase beyond the default lists (the defaults are what the rule reads, as meaning: "I don't
    know why people like it, but the capital is Paris." does not abstain). Without: the folded
    response contains any phrase.

    >>> df = pl.DataFrame({"r": ["Sorry, I couldn't find that in the documents.",
    ...                          "I don't know why, but it is Paris.", "No idea, sorry."]})
    >>> df.select(abstained(pl.col("r"), phrases=["no idea"], rules=True))["r"].to_list()
    [1, 0, 1]
    >>> df.select(abstained(pl.col("r"), phrases=["i don't know"]))["r"].to_list()
    [0, 1, 0]
    """
    if not rules:
        return flag(fold(response).str.contains_any(fold_phrases(phrases)))
    extra = [p for p in phrases if p not in DEFAULT_ABSTENTION_PHRASES]
    found = refuses(response)
    if extra:
        found = found | fold(response).str.contains_any(fold_phrases(extra))
    return flag(found)


def _bare(text: pl.Expr) -> pl.Expr:
    """Folded, without trailing ``.!?`` and spaces: the form references are compared in."""
    return fold(text).str.replace(_TRAILING, "")


def is_reference(reference: pl.Expr, token: str) -> pl.Expr:
    """Whether the reference is ``token``, compared folded and without trailing punctuation."""
    return is_any_reference(reference, [token])


def is_any_reference(reference: pl.Expr, tokens: Sequence[str]) -> pl.Expr:
    """Whether the reference is one of ``tokens``, compared folded and without trailing
    ``.!?`` and spaces (``"I Don’t know."`` is ``"i don't know"``).

    >>> df = pl.DataFrame({"g": ["I Don\u2019t know.", "I don't know the answer", None]})
    >>> df.select(is_any_reference(pl.col("g"), ["i don't know"]))["g"].to_list()
    [True, False, None]
    """
    bare = [token.rstrip(".!? \t\n") for token in fold_phrases(tokens)]
    return _bare(reference).is_in(list(dict.fromkeys(bare)))


def unanswerable_references(
    *, abstention_reference: str, insufficient_context_reference: str,
    abstention_phrases: Sequence[str],
) -> tuple[str, ...]:
    """The references that mark a question as unanswerable by default:
    :data:`UNANSWERABLE_REFERENCES`, the abstention reference, the insufficient-context token and
    every abstention phrase (a ground truth that *is* "I don't know")."""
    return tuple(dict.fromkeys((*UNANSWERABLE_REFERENCES, abstention_reference,
                                insufficient_context_reference, *abstention_phrases)))


def has_no_answer(reference: pl.Expr, references: pl.Expr) -> pl.Expr:
    """No gold answer at all: ``reference`` is empty or whitespace and ``references`` is null or
    holds only such texts. SQuAD v2 marks an unanswerable question this way (an empty
    ``answers`` list). Never null.

    >>> df = pl.DataFrame({"g": ["", " ", "", "Paris"], "alt": [None, [""], ["Paris"], None]},
    ...                   schema={"g": pl.String, "alt": pl.List(pl.String)})
    >>> df.select(has_no_answer(pl.col("g"), pl.col("alt")))["g"].to_list()
    [True, True, False, False]
    """
    blank = reference.str.strip_chars().fill_null("") == ""
    alternatives = references.list.eval(pl.element().str.strip_chars() != "").list.any()
    return blank & ~alternatives.fill_null(False)


def is_unanswerable(
    reference: pl.Expr, question_type: pl.Expr, references: pl.Expr | None = None, *,
    unanswerable_references: Sequence[str], unanswerable_types: Sequence[str],
    rules: bool = False,
) -> pl.Expr:
    """The one rule for an unanswerable question (Boolean, never null). It is unanswerable when

    1. its reference is one of ``unanswerable_references`` (:func:`is_any_reference`: folded,
       trailing ``.!?`` ignored; by default :func:`unanswerable_references`), or, with
       ``rules``, the reference itself is a refusal (:func:`pipeline.text.refusals.refuses`:
       "The context does not mention the salary band.", "Ich weiß es nicht"; never "No Doubt"),
    2. with ``references`` given, it has no gold answer (:func:`has_no_answer`, SQuAD v2's
       convention), or
    3. its ``question_type`` is one of ``unanswerable_types``.

    The compat presets keep their tools' narrower rule: the abstention reference alone as (1),
    without (2) (``pipeline.metrics.registry``, docs/compat.md).

    >>> df = pl.DataFrame({"g": ["I don't know.", "Paris", "", "Paris"],
    ...                    "t": [None, None, None, "impossible"]})
    >>> df.select(is_unanswerable(pl.col("g"), pl.col("t"), pl.lit(None, pl.List(pl.String)),
    ...     unanswerable_references=UNANSWERABLE_REFERENCES,
    ...     unanswerable_types=["impossible"]))["g"].to_list()
    [True, False, True, True]
    """
    found = is_any_reference(reference, unanswerable_references).fill_null(False)
    if rules:
        found = found | refuses(reference).fill_null(False)
    if references is not None:
        found = found | has_no_answer(reference, references)
    return found | question_type.is_in(list(unanswerable_types)).fill_null(False)


def empty_response(response: pl.Expr) -> pl.Expr:
    """1 when the response says nothing: null, or empty or whitespace once its citation markers
    are removed (``" [1] "`` is empty), else 0 (Int8, never null).

    >>> df = pl.DataFrame({"r": ["Paris [1].", " [1][2] ", "", None]})
    >>> df.select(empty_response(pl.col("r")))["r"].to_list()
    [0, 1, 1, 1]
    """
    text = strip_citation_markers(response).str.strip_chars()
    return flag(text.fill_null("") == "")


def abstention_correct(abstained_flag: pl.Expr, unanswerable_flag: pl.Expr) -> pl.Expr:
    """For unanswerable rows (``unanswerable_flag == 1``, :func:`is_unanswerable`): 1 when the
    response abstains, else 0. Null for answerable rows.

    >>> df = pl.DataFrame({"a": [1, 0, 1], "u": [1, 1, 0]})
    >>> df.select(abstention_correct(pl.col("a"), pl.col("u")))["a"].to_list()
    [1, 0, None]
    """
    return pl.when(unanswerable_flag.cast(pl.Int8) == 1).then(abstained_flag)


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
