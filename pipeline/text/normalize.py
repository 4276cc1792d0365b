"""Normalization steps as polars expressions.

``squad_normalize`` reproduces ``normalize_answer`` of the official SQuAD v2 evaluation script
(lower, remove ASCII punctuation, replace the articles a/an/the by a space, collapse whitespace)
character for character; see ``pipeline.text.charclasses`` for how CPython's Unicode behaviour is
matched.

Most texts are pure ASCII, where CPython's behaviour needs none of that machinery. :func:`by_ascii`
sends ASCII rows through a cheaper expression and the others through the general one.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from functools import cache

import polars as pl

from pipeline.text.charclasses import (
    ascii_punctuation_class,
    lowercase_mismatches,
    space_class,
    word_class,
)

# Private-use code points (no case mapping anywhere) used to shield characters from lowercasing.
_SHIELD = "\U000f0000"
_SHIELD_BASE = 0xF0100


@cache
def _shield_tables() -> tuple[list[str], list[str]]:
    originals = [_SHIELD, *lowercase_mismatches()]
    encoded = [_SHIELD + _SHIELD] + [
        _SHIELD + chr(_SHIELD_BASE + i) for i in range(len(originals) - 1)
    ]
    return originals, encoded


def is_ascii(text: pl.Expr) -> pl.Expr:
    """True where ``text`` is pure ASCII; null where it is null."""
    return text.str.contains(r"[^\x00-\x7f]").not_()


def by_ascii(
    text: pl.Expr,
    ascii_path: Callable[[pl.Expr], pl.Expr],
    unicode_path: Callable[[pl.Expr], pl.Expr],
) -> pl.Expr:
    """``ascii_path(text)`` on ASCII rows, ``unicode_path(text)`` on the others (null stays null).

    Each path receives ``text`` nulled outside its rows, so it does its work on its own rows only
    (string kernels skip nulls cheaply) and the frame keeps its shape. ``ascii_path`` must give a
    non-null result for every non-null input.

    Both branches use the same ASCII test, so common-subexpression elimination evaluates an
    expression ``text`` at most twice; pass a column where ``text`` is expensive.
    """
    ascii_rows = is_ascii(text)
    return pl.coalesce(
        ascii_path(pl.when(ascii_rows).then(text)),
        unicode_path(pl.when(ascii_rows).then(None).otherwise(text)),
    )


def _shielded_lower(text: pl.Expr) -> pl.Expr:
    """:func:`python_lower` for any text."""
    originals, encoded = _shield_tables()
    if len(originals) == 1:
        return text.str.to_lowercase()
    shielded = text.str.replace_many(originals, encoded)
    return shielded.str.to_lowercase().str.replace_many(encoded, originals)


def python_lower(text: pl.Expr) -> pl.Expr:
    """``str.lower()`` of the running CPython, exactly (full Unicode case mapping, final sigma).

    polars lowercases with a newer Unicode database; the few characters this interpreter does not
    lowercase are shielded with a prefix-free private-use escape and restored afterwards. ASCII
    rows skip the shielding: every shielded character is non-ASCII, and on ASCII both map
    ``A-Z`` to ``a-z`` and nothing else.
    """
    return by_ascii(text, lambda ascii_text: ascii_text.str.to_lowercase(), _shielded_lower)


@cache
def _article_pattern() -> str:
    non_word = f"[^{word_class()}]"
    # ``\b(a|an|the)\b`` without look-around: the boundary characters are captured and put back.
    return f"(^|{non_word})(?:a|an|the)({non_word}|$)"


def remove_articles(text: pl.Expr) -> pl.Expr:
    """Replace each whole-word ``a``/``an``/``the`` by a space, as ``re.sub(r"\\b(a|an|the)\\b")``.

    Matches consume one boundary character on each side, so two articles separated by a single
    character ("a a") need a second pass; after it no article can remain.
    """
    pattern = _article_pattern()
    once = text.str.replace_all(pattern, "${1} ${2}")
    return once.str.replace_all(pattern, "${1} ${2}")


def remove_ascii_punctuation(text: pl.Expr) -> pl.Expr:
    """Delete every character of ``string.punctuation``."""
    return text.str.replace_all(f"[{ascii_punctuation_class()}]", "")


_ASCII_FOLD_FROM = [*string.ascii_uppercase, *string.punctuation]
_ASCII_FOLD_TO = [*string.ascii_lowercase, *[""] * len(string.punctuation)]


def ascii_lower_remove_punctuation(text: pl.Expr) -> pl.Expr:
    """``remove_ascii_punctuation(python_lower(text))`` for pure ASCII text, in one pass.

    On ASCII, ``str.lower`` maps ``A-Z`` to ``a-z`` and changes nothing else, so both steps are a
    per-character substitution (punctuation characters are not letters).
    """
    return text.str.replace_many(_ASCII_FOLD_FROM, _ASCII_FOLD_TO)


@cache
def _whitespace_to_collapse() -> str:
    spaces = space_class()
    # A maximal run of whitespace other than one plain space: one holding any other whitespace
    # character, or two or more characters. Single spaces, most of a text's whitespace, are
    # not matches, so the replacement has little to do (4x faster than replacing every run).
    return f"[{spaces}]*[{spaces}--\\x{{20}}][{spaces}]*|[{spaces}]{{2,}}"


def collapse_whitespace(text: pl.Expr) -> pl.Expr:
    """``" ".join(text.split())``: runs of ``str.isspace`` characters become one space, trimmed.

    >>> import polars as pl
    >>> pl.select(collapse_whitespace(pl.lit(" a\\t b  c\\u2028"))).item()
    'a b c'
    """
    # After the runs are single spaces, only a leading and a trailing one can remain.
    return text.str.replace_all(_whitespace_to_collapse(), " ").str.strip_chars(" ")


def squad_core(text: pl.Expr) -> pl.Expr:
    """``normalize_answer`` up to (not including) the final whitespace collapse."""
    return remove_articles(remove_ascii_punctuation(python_lower(text)))


def squad_normalize(text: pl.Expr) -> pl.Expr:
    """``normalize_answer`` of the official SQuAD v2 script.

    >>> import polars as pl
    >>> pl.select(squad_normalize(pl.lit("The  Eiffel-Tower!"))).item()
    'eiffeltower'
    """
    return collapse_whitespace(squad_core(text))


def lower_collapse(text: pl.Expr) -> pl.Expr:
    """Lowercase and collapse whitespace only (the "strict" exact-match normalization)."""
    return collapse_whitespace(python_lower(text))
