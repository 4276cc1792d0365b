"""Keyword metrics: how much of a reference's (or a question's) content a response mentions.

Keywords of a text (:func:`keywords`), in this order:

1. Lowercase (polars ``str.to_lowercase``); the typographic apostrophe ’ becomes '.
2. Words: maximal runs of Unicode letters, combining marks and digits; an apostrophe between
   two such runs stays inside the word ("don't", "o'brien"). Hyphens, underscores and all
   other characters separate words ("state-of-the-art" -> state, of, the, art). A final
   possessive 's is removed ("Einstein's" -> einstein). Digit runs are words ("1990").
3. Words in the stopword list are dropped.
4. Each remaining word is lemmatized with simplemma (English) and the lemma lowercased
   ("cars" -> car, "bought" -> buy); a word whose lemma is a stopword is dropped too
   ("was" -> be).
5. Distinct lemmas, in order of first occurrence.

Steps 1-2 and 5 are polars expressions. Steps 3-4 (with the possessive strip) run in Python
once per *distinct word* of a batch, never per row: each distinct word's keyword (or null for
a stopword) is computed, its lemma taken from the module-level cache ``_LEMMAS`` (filled on
first sight by ``simplemma.lemmatize``), and the lists are mapped with ``replace_strict``
inside one ``map_batches``. The cache grows with the vocabulary the process has seen.
Lemmas are simplemma's, quirks included ("Fleming" -> fleme, "data" stays data).

Synonyms: a file of symmetric groups (:func:`load_synonyms`); each member is lemmatized like a
keyword and mapped to its group's canonical member, the smallest lemma. Before comparing, both
sides map every keyword to its canonical member, so the sets are compared as *concepts*:
reference keywords of one group count once, and "car" in the reference is found by
"automobile" in the response.

Scores (Float64 in [0, 1]) take keyword lists, so each text is keyworded once and reused:

* ``content_coverage = |C(reference) ∩ C(response)| / |C(reference)|`` where ``C`` is the set
  of canonical keywords; 1.0 when the reference has no keyword (empty, or only stopwords:
  nothing to cover); null when either list is null.
* ``keyword_overlap``: the same with the question in the place of the reference.

The stopword list (``pipeline/data/stopwords_en.txt``) and the synonym groups
(``pipeline/data/synonyms.tsv``) are package data; a user file of the same format replaces them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache, partial
from pathlib import Path
from types import MappingProxyType

import polars as pl
import simplemma

from pipeline.metrics.common import safe_div
from pipeline.rules.files import STOPWORDS_FILE, SYNONYMS_FILE, read_text

LEMMA_LANGUAGE = "en"

_WORD = r"[\p{L}\p{M}\p{N}]+(?:'[\p{L}\p{M}\p{N}]+)*"
_FILE_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")

#: Lemma of each distinct word seen so far (lowercase word -> lowercase lemma).
_LEMMAS: dict[str, str] = {}


def _lemma(word: str) -> str:
    lemma = _LEMMAS.get(word)
    if lemma is None:
        lemma = simplemma.lemmatize(word, lang=LEMMA_LANGUAGE).lower()
        _LEMMAS[word] = lemma
    return lemma


def _content_lines(text: str) -> list[tuple[int, str]]:
    """(line number, content) of lines that are not blank once ``#`` comments are removed."""
    stripped = ((n, line.split("#", 1)[0].strip()) for n, line in enumerate(text.splitlines(), 1))
    return [(n, content) for n, content in stripped if content]


def _as_word(raw: str, source: str, line: int) -> str:
    word = raw.strip().lower().replace("\u2019", "'")
    if not _FILE_WORD.fullmatch(word):
        raise ValueError(f"{source}, line {line}: {raw.strip()!r} is not a single word")
    return word


@cache
def _stopwords(path: Path | None) -> frozenset[str]:
    text, source = read_text(path, STOPWORDS_FILE)
    return frozenset(_as_word(content, source, n) for n, content in _content_lines(text))


def load_stopwords(path: Path | None = None) -> frozenset[str]:
    """Stopwords, one word per line (lowercased; ``#`` comments); the packaged list by default.

    >>> "the" in load_stopwords()
    True
    """
    return _stopwords(None if path is None else Path(path))


@cache
def _synonyms(path: Path | None) -> Mapping[str, str]:
    text, source = read_text(path, SYNONYMS_FILE)
    canonical: dict[str, str] = {}
    group_line: dict[str, int] = {}
    for n, content in _content_lines(text):
        members = [_as_word(raw, source, n) for raw in re.split(r"[\t,]+", content)]
        lemmas = sorted({_lemma(word) for word in members})
        if len(lemmas) < 2:
            raise ValueError(
                f"{source}, line {n}: a synonym group needs two words with different lemmas, "
                f"got {content!r}"
            )
        for lemma in lemmas:
            if lemma in group_line:
                raise ValueError(
                    f"{source}, line {n}: {lemma!r} is already in the group of line "
                    f"{group_line[lemma]} (groups must not share a word after lemmatization)"
                )
            group_line[lemma] = n
            canonical[lemma] = lemmas[0]
    return MappingProxyType(canonical)


def load_synonyms(path: Path | None = None) -> dict[str, str]:
    """Synonym groups as ``lemma -> canonical lemma`` (the group's smallest lemma).

    One group per line, members separated by tabs or commas; ``#`` comments. Members are single
    words, lowercased and lemmatized; a group needs two distinct lemmas and no lemma may be in
    two groups. The packaged groups by default.

    >>> load_synonyms()["automobile"]
    'auto'
    """
    return dict(_synonyms(None if path is None else Path(path)))


def _keyword(word: str, stopwords: frozenset[str]) -> str | None:
    """The keyword of one lowercase word, or None for a stopword (possessive 's removed)."""
    if word.endswith("'s"):
        word = word[:-2]
    if word in stopwords:
        return None
    lemma = _lemma(word)
    return None if lemma in stopwords else lemma


def _lemmatize_lists(words: pl.Series, stopwords: frozenset[str]) -> pl.Series:
    """Keywords of a ``List[String]`` column of words (steps 2-4, without the distinct step).

    Python runs once per distinct word of the batch (:func:`_keyword`); the lists are mapped by
    polars with ``replace_strict`` (stopwords map to null and are dropped).
    """
    vocabulary = words.explode(empty_as_null=False, keep_nulls=False).unique().to_list()
    lemmas = [_keyword(word, stopwords) for word in vocabulary]
    mapping = pl.element().replace_strict(
        pl.Series(vocabulary, dtype=pl.String), pl.Series(lemmas, dtype=pl.String)
    )
    return words.list.eval(mapping.drop_nulls())


def keyword_words(text: pl.Expr) -> pl.Expr:
    """Steps 1-2 of :func:`keywords`: lowercased words (the possessive 's still attached)."""
    lowered = text.str.to_lowercase().str.replace_all("\u2019", "'", literal=True)
    return lowered.str.extract_all(_WORD)


def keywords(text: pl.Expr, *, stopwords: frozenset[str] | None = None) -> pl.Expr:
    """Distinct keyword lemmas of a text (``List[String]``), as the module docstring describes.

    ``stopwords`` defaults to the packaged list (:func:`load_stopwords`).

    >>> import polars as pl
    >>> pl.select(keywords(pl.lit("The children's cars were bought in 1990."))).item().to_list()
    ['child', 'car', 'buy', '1990']
    """
    stop = load_stopwords() if stopwords is None else frozenset(stopwords)
    lemmas = keyword_words(text).map_batches(
        partial(_lemmatize_lists, stopwords=stop),
        return_dtype=pl.List(pl.String),
        is_elementwise=True,
    )
    return lemmas.list.unique(maintain_order=True)


def canonical_keywords(keyword_lists: pl.Expr, synonyms: Mapping[str, str]) -> pl.Expr:
    """Distinct canonical members (synonym group ids) of keyword lists; others stay as they are."""
    if not synonyms:
        return keyword_lists.list.unique()
    old, new = list(synonyms), list(synonyms.values())
    return keyword_lists.list.eval(pl.element().replace(old, new)).list.unique()


def content_coverage(
    response: pl.Expr, reference: pl.Expr, synonyms: Mapping[str, str] | None = None
) -> pl.Expr:
    """Share of the reference's keyword concepts found in the response (Float64 in [0, 1]).

    Takes keyword lists (:func:`keywords`). ``synonyms`` maps lemma -> canonical lemma; the
    packaged groups by default, ``{}`` for none. 1.0 when the reference has no keyword.

    >>> import polars as pl
    >>> response = keywords(pl.lit("She purchased an automobile."))
    >>> reference = keywords(pl.lit("She bought a red car."))
    >>> pl.select(content_coverage(response, reference)).item()
    0.6666666666666666
    """
    groups = load_synonyms() if synonyms is None else synonyms
    expected = canonical_keywords(reference, groups)
    found = expected.list.set_intersection(canonical_keywords(response, groups))
    return safe_div(found.list.len(), expected.list.len(), empty=1.0)


def keyword_overlap(
    question: pl.Expr, response: pl.Expr, synonyms: Mapping[str, str] | None = None
) -> pl.Expr:
    """Share of the question's keyword concepts the response mentions (Float64 in [0, 1]).

    :func:`content_coverage` with the question as the reference side; 1.0 when the question
    has no keyword.
    """
    return content_coverage(response, question, synonyms)
