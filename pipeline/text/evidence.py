"""Lexical evidence units of a claim and of the passage it cites, as polars expressions.

The default grounding rule (:mod:`pipeline.metrics.embedding.grounding`, docs/grounding.md)
checks that what a sentence asserts is written in its cited passage. It reads four kinds of
units, all from the text lowercased (``str.lower``) unless said otherwise:

* **words**: runs of Unicode letters, marks and digits (``[^\\W_]``) outside the character
  scripts below; a *content word* is a word that is not all digits and not a stopword
  (:data:`STOPWORDS`);
* **numbers**: runs of decimal digits with inner ``.`` or ``,`` parts (``10.4``, ``1,361``),
  thousands separators removed (``1,361`` -> ``1361``); ``70`` is not found in ``170``;
* **entities** (Latin, Cyrillic, Greek ... scripts with capitals; read on the text as written):
  runs of capitalized words joined by a space or ``", "`` (``Tampa, Florida``, ``Simona
  Halep``, ``U.S``); an entity's content words must all be found;
* **character bigrams** of the scripts written without spaces (Han, Hiragana, Katakana, Thai):
  each pair of adjacent characters of a run (a one-character run is its own unit), found by
  substring. A bigram holding one of :data:`FUNCTION_CHARACTERS` (的, 了, 是 ...) is never an
  anchor: grammar, not content.

A unit is *found* in a text when it occurs there as a unit: a word among the text's words, a
number among its numbers, a bigram as a substring of the lowercased text (:func:`found`).
"""

from __future__ import annotations

from functools import cache

import polars as pl

from pipeline.rules.files import STOPWORDS_FILE, read_text

#: Scripts written without spaces between words: read as character bigrams.
CHARACTER_SCRIPTS = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}"
_WORD = rf"[^\W_{CHARACTER_SCRIPTS}]+"
_CHARACTER_RUN = rf"[{CHARACTER_SCRIPTS}]+"
_NUMBER = r"\p{Nd}+(?:[.,]\p{Nd}+)*"
_THOUSANDS = r"(\p{Nd}),(\p{Nd}{3})"
_ENTITY_WORD = r"\p{Lu}(?:[\p{L}\p{M}\p{Nd}'’\-]|\.\p{Lu})*"
#: A run of capitalized words joined by one space or ", " (``Tampa, Florida``).
ENTITY = rf"{_ENTITY_WORD}(?:(?:, | ){_ENTITY_WORD})*"

#: Characters of Chinese and Japanese grammar: a bigram holding one is not an anchor.
FUNCTION_CHARACTERS = "的了是在和有也都就而及与或被把这那其之于以为对从到们着过得地吗呢吧啊么所"

#: Words that open sentences without naming anything (capitalized, but not entities); added to
#: the bundled stopword list.
_DISCOURSE_WORDS = ("according", "yes", "based", "overall", "therefore", "thus", "additionally",
                    "furthermore", "moreover", "finally", "first", "second", "third", "note")


@cache
def stopwords() -> frozenset[str]:
    """The bundled English stopword list (``pipeline/data/stopwords_en.txt``, the file the
    keyword metrics use by default) plus a few sentence-opening discourse words.

    >>> {"the", "according"} <= stopwords(), "florida" in stopwords()
    (True, False)
    """
    text, _ = read_text(None, STOPWORDS_FILE)
    words = (line.split("#", 1)[0].strip().lower() for line in text.splitlines())
    return frozenset(w for w in words if w) | frozenset(_DISCOURSE_WORDS)


def words(text: pl.Expr) -> pl.Expr:
    """The lowercased words of ``text`` (``List[String]``, in order, repeats kept).

    >>> pl.select(words(pl.lit("Tampa, Florida's 2021 东京 x_y"))).item().to_list()
    ['tampa', 'florida', 's', '2021', 'x', 'y']
    """
    return text.str.to_lowercase().str.extract_all(_WORD)


def content_words(text: pl.Expr) -> pl.Expr:
    """The distinct content words of ``text`` (lowercased), in first-seen order.

    >>> pl.select(content_words(pl.lit("The game was played in Tampa in 2021"))).item().to_list()
    ['game', 'played', 'tampa']
    """
    stop = sorted(stopwords())
    content = pl.element().filter(
        ~pl.element().is_in(stop) & ~pl.element().str.contains(r"^\p{Nd}+$")
    )
    return words(text).list.eval(content).list.unique(maintain_order=True)


def numbers(text: pl.Expr) -> pl.Expr:
    """The numbers of ``text`` (``List[String]``), thousands separators removed.

    >>> pl.select(numbers(pl.lit("1,361万 and 10.48‰ on February 7, 2021"))).item().to_list()
    ['1361', '10.48', '7', '2021']
    """
    joined = text.str.replace_all(_THOUSANDS, "${1}${2}").str.replace_all(_THOUSANDS, "${1}${2}")
    return joined.str.extract_all(_NUMBER)


def entities(text: pl.Expr) -> pl.Expr:
    """Capitalized word runs of ``text`` as written (``List[String]``); ``U.S.`` gives ``U.S``.

    >>> pl.select(entities(pl.lit("The game was in Tampa, Florida. Simona Halep won."))
    ...           ).item().to_list()
    ['The', 'Tampa, Florida', 'Simona Halep']
    """
    return text.str.extract_all(ENTITY)


def character_runs(text: pl.Expr) -> pl.Expr:
    """The runs of :data:`CHARACTER_SCRIPTS` characters in ``text`` (``List[String]``).

    >>> pl.select(character_runs(pl.lit("香港立法会有70个议席"))).item().to_list()
    ['香港立法会有', '个议席']
    """
    return text.str.extract_all(_CHARACTER_RUN)


def bigram_anchor(bigram: pl.Expr) -> pl.Expr:
    """Whether a character bigram carries content: it holds no :data:`FUNCTION_CHARACTERS`."""
    return ~bigram.str.contains(f"[{FUNCTION_CHARACTERS}]")


def found(haystack: pl.Expr, units: pl.Expr) -> pl.Expr:
    """The distinct ``units`` (a list per row) that occur in ``haystack`` (one string per row)
    as substrings; a null haystack finds nothing (null).

    >>> pl.select(found(pl.lit("香港立法会"), pl.lit(["立法", "议席"]))).item().to_list()
    ['立法']
    """
    return haystack.str.extract_many(units, overlapping=True).list.unique(maintain_order=True)
