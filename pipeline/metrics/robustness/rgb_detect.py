"""Lenient rejection and error-detection checks for the RGB benchmark.

The official RGB script (see :mod:`pipeline.metrics.robustness.rgb`) recognizes only two
case-sensitive phrases per check. These checks accept the wider wording models actually use.
Every text is folded with :func:`~pipeline.metrics.qa.abstention.fold` (lowercase, curly quotes
straightened, whitespace runs collapsed) and so is every configured phrase; phrases that fold to
the empty string are ignored. A null response gives null.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import polars as pl

from pipeline.metrics.arithmetic import flag
from pipeline.metrics.qa.abstention import fold, fold_phrases
from pipeline.rules.rgb import (
    DEFAULT_ERROR_KEYWORDS,
    DEFAULT_PRIMARY_REJECTIONS,
    DEFAULT_SECONDARY_REJECTIONS,
)

#: RGB's Chinese rejection phrase ("insufficient information"), checked on Chinese sets only.
CHINESE_REJECTION = "信息不足"


def _nonempty_folded(phrases: Sequence[str]) -> list[tuple[str, str]]:
    """(configured, folded) pairs in list order, without phrases that fold to ``""``."""
    folded = fold_phrases(phrases)
    return [(phrase, folded[i]) for i, phrase in enumerate(phrases) if folded[i]]


def _rejection_candidates(
    primary: Sequence[str], secondary: Sequence[str]
) -> list[tuple[str, str]]:
    return _nonempty_folded([*primary, *secondary])


def rgb_rejection_phrase(
    response: pl.Expr,
    *,
    primary: Sequence[str] = DEFAULT_PRIMARY_REJECTIONS,
    secondary: Sequence[str] = DEFAULT_SECONDARY_REJECTIONS,
    chinese: pl.Expr | bool,
) -> pl.Expr:
    """The rejection phrase found in the folded response, as configured (String).

    Phrases are tried in list order, primary before secondary, then :data:`CHINESE_REJECTION`
    where ``chinese`` is true; the first one contained in the folded response is returned
    (so the full primary sentence is reported before its shortening "can not answer").
    Null when none matches or the response is null.

    >>> df = pl.DataFrame({"r": ["Sorry, I DON’T KNOW.", "Paris", "信息不足"]})
    >>> df.select(rgb_rejection_phrase(pl.col("r"), chinese=True).alias("p"))["p"].to_list()
    ["i don't know", None, '信息不足']
    """
    folded = fold(response)
    found = [
        pl.when(folded.str.contains(needle, literal=True)).then(pl.lit(phrase, dtype=pl.String))
        for phrase, needle in _rejection_candidates(primary, secondary)
    ]
    chinese_expr = pl.lit(chinese) if isinstance(chinese, bool) else chinese
    found.append(
        pl.when(
            chinese_expr.fill_null(False) & folded.str.contains(CHINESE_REJECTION, literal=True)
        ).then(pl.lit(CHINESE_REJECTION, dtype=pl.String))
    )
    return pl.coalesce(found).cast(pl.String)


def rgb_rejected(
    response: pl.Expr,
    *,
    primary: Sequence[str] = DEFAULT_PRIMARY_REJECTIONS,
    secondary: Sequence[str] = DEFAULT_SECONDARY_REJECTIONS,
    chinese: pl.Expr | bool,
) -> pl.Expr:
    """1 when the folded response contains a rejection phrase (Int8), null for a null response.

    The phrases are those of :func:`rgb_rejection_phrase` (:data:`CHINESE_REJECTION` only where
    ``chinese`` is true; a null ``chinese`` counts as false); matching is plain substring
    containment, without word boundaries.

    >>> df = pl.DataFrame({"r": ["We CANNOT answer that.", "Paris", None]})
    >>> df.select(rgb_rejected(pl.col("r"), chinese=False).alias("x"))["x"].to_list()
    [1, 0, None]
    """
    phrase = rgb_rejection_phrase(response, primary=primary, secondary=secondary, chinese=chinese)
    return rejected_from_phrase(response, phrase)


def rejected_from_phrase(response: pl.Expr, phrase: pl.Expr) -> pl.Expr:
    """1 where a rejection phrase was found, 0 where none was, null for a null response (Int8).

    Shared by both matching modes: ``phrase`` is the found phrase (or null) of either
    :func:`rgb_rejection_phrase` or the official script's phrases.
    """
    return pl.when(response.is_not_null()).then(flag(phrase.is_not_null()))


def _whole_word_pattern(keywords: Sequence[str]) -> str | None:
    """A regex matching any folded keyword as a whole word, or None when there is none.

    ``\\b`` is put only on an edge whose character is a word character, so a keyword that starts
    or ends with punctuation still matches.
    """
    alternatives = []
    for _, needle in _nonempty_folded(keywords):
        start = r"\b" if re.match(r"\w", needle[0]) else ""
        end = r"\b" if re.match(r"\w", needle[-1]) else ""
        alternatives.append(f"{start}{re.escape(needle)}{end}")
    return f"(?:{'|'.join(alternatives)})" if alternatives else None


def rgb_error_detected(
    response: pl.Expr,
    fake_answer: pl.Expr,
    *,
    keywords: Sequence[str] = DEFAULT_ERROR_KEYWORDS,
) -> pl.Expr:
    """1 when the response flags the counterfactual answer as an error (Int8).

    True when the folded response contains an error keyword as a whole word (word boundaries,
    Unicode ``\\w``: "error" matches "an error." but not "terror" or "errors"; list "errors" to
    count it), or contains ``"not " + fake`` or ``fake + " is wrong"`` with ``fake`` the folded
    fake answer, compared as a literal substring (no word boundaries, so "not paris" is also
    found in "not parisian"). A null or empty fake answer disables only the two fake-answer
    forms. Null for a null response.

    >>> df = pl.DataFrame({"r": ["It is not 1990.", "Terror in 1990", "1990 is WRONG"],
    ...                    "f": ["1990", "1990", "1990"]})
    >>> df.select(rgb_error_detected(pl.col("r"), pl.col("f")).alias("x"))["x"].to_list()
    [1, 0, 1]
    """
    folded = fold(response)
    detected = fake_denied(folded, fold(fake_answer))
    pattern = _whole_word_pattern(keywords)
    if pattern is not None:
        detected = detected | folded.str.contains(pattern).fill_null(False)
    return pl.when(response.is_not_null()).then(flag(detected))


def fake_denied(text: pl.Expr, fake: pl.Expr) -> pl.Expr:
    """True where ``text`` contains ``"not " + fake`` or ``fake + " is wrong"`` (both already
    normalized; false for a null or empty ``fake``), the app's explicit-denial rule."""
    usable = fake.is_not_null() & (fake != "")
    denied = text.str.contains(pl.concat_str(pl.lit("not "), fake), literal=True)
    called_wrong = text.str.contains(pl.concat_str(fake, pl.lit(" is wrong")), literal=True)
    return (usable & (denied | called_wrong)).fill_null(False)
