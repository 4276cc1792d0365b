"""Quality family of the category-aware composite: length, fluency, coherence, conciseness,
readability, their weighted composite and banded feedback.

Every weight, range, threshold and phrase list comes from :class:`QualityRules`, loaded from
``pipeline/data/quality.toml`` (or a user file of the same layout). Each function takes the raw
response text (``String``) and its part of the rules as a keyword argument; a null response
gives null in every column.

Shared units:

* **Words**: :func:`~pipeline.metrics.keywords.keyword_words` -- the text lowercased, ’ folded
  to ', then maximal runs of Unicode letters, combining marks and digits, an apostrophe between
  two runs kept inside ("don't"). Hyphens and other punctuation separate words. A word's length
  is its number of characters (code points, apostrophes included).
* **Sentences**: :func:`~pipeline.text.sentences.split_sentences`; a piece with no word
  ("!!!") is still a sentence.

Metrics (empty = no sentence, i.e. ``""`` or whitespace only):

* ``length_ok``: ``min_words <= words <= max_words`` as Int8 0/1; ``length_feedback``: "Too
  short", "Too long" or the ``appropriate`` template with ``{words}``, ``{min}``, ``{max}``.
* ``fluency_score``: mean over sentences of ``short_word`` (0.3) when the sentence has an
  implausibly short word, else ``not_capitalized`` (0.5) when it is not capitalized, else
  ``well_formed`` (1.0). A short word is a whitespace token which, stripped of leading and
  trailing characters other than letters and digits, is 1..``short_word_max_letters`` letters
  and, lowercased, not in ``short_word_allowed`` (so "x", "(b)", "e" are short; "a", "I",
  "5", "e.g.", "x-ray" are not). A sentence is capitalized when its first letter-or-digit
  character is an uppercase/titlecase letter or a digit ("“The", "3 cats", "ALL CAPS"); a
  sentence without any letter or digit is not capitalized. Terminal punctuation is not
  required. Empty: 0.0. The splitter only ends a sentence before an uppercase letter, a
  digit, an opening quote or a line break, so a lowercase start after ". " continues the
  previous sentence and is only seen at the start of the response or of a line.
* ``coherence_score``: ``min(1, hits / max(1, connectives_per_gap * (sentences - 1)))``; hits
  counts every non-overlapping occurrence in the whole response of any connective phrase of any
  family (case-insensitive, whole words, longest phrase first, a phrase's space matching any
  whitespace run; a phrase listed in two families counts once). One sentence with one hit
  scores 1.0; empty: 0.0.
* ``conciseness_score``: ``type_token_weight * distinct/total words + repetition_weight *
  max(0, 1 - penalty_per_repeat * Σ(count - max_repeats))`` over distinct words longer than
  ``min_word_length_exclusive`` characters occurring more than ``max_repeats`` times. No word:
  0.0 (nothing to be concise about).
* ``readability_score``: ``clamp01(1 - (a * W/S + b * C/W + c) / scale)`` with W words,
  S sentences and C characters of the words (a Flesch-Kincaid grade with characters per word in
  place of syllables per word, as specified; with the default coefficients most English prose
  averages over 2.7 characters per word and scores 0.0). No word: 0.0.
* ``composite_quality``: weighted sum of the four scores, times ``length_penalty`` when
  ``length_ok`` is 0; ``quality_feedback``: :func:`band_feedback` of it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

import polars as pl

from pipeline.metrics.common import flag, safe_div
from pipeline.metrics.keywords import keyword_words
from pipeline.metrics.rules import read_rules
from pipeline.text.sentences import split_sentences

QUALITY_FILE = "quality.toml"

_EDGE_PUNCTUATION = r"^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$"
_CAPITALIZED = r"^[^\p{L}\p{N}]*[\p{Lu}\p{Lt}\p{N}]"

_T = TypeVar("_T")


# --- rules -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class LengthRules:
    """``[length]``: inclusive word bounds and the feedback texts."""

    min_words: int
    max_words: int
    too_short: str
    too_long: str
    appropriate: str


@dataclass(frozen=True)
class FluencyRules:
    """``[fluency]``: per-sentence values and the implausibly-short-word rule."""

    well_formed: float
    not_capitalized: float
    short_word: float
    short_word_max_letters: int
    short_word_allowed: tuple[str, ...]


@dataclass(frozen=True)
class CoherenceRules:
    """``[coherence]``: connective families (name -> phrases) and hits expected per gap."""

    connectives_per_gap: float
    connectives: Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class ConcisenessRules:
    """``[conciseness]``: weights and the repetition penalty."""

    type_token_weight: float
    repetition_weight: float
    min_word_length_exclusive: int
    max_repeats: int
    penalty_per_repeat: float


@dataclass(frozen=True)
class ReadabilityRules:
    """``[readability]``: coefficients of the grade and its scale."""

    words_per_sentence: float
    word_length: float
    intercept: float
    scale: float


@dataclass(frozen=True)
class CompositeRules:
    """``[composite]``: weights of the four scores and the factor for a bad length."""

    fluency: float
    coherence: float
    conciseness: float
    readability: float
    length_penalty: float


class _Table:
    """One TOML table with typed getters whose errors name the file and the key."""

    def __init__(self, data: Mapping[str, Any], source: str, name: str) -> None:
        self.data, self.source, self.name = data, source, name
        self.used: set[str] = set()

    def _fail(self, key: str, message: str) -> ValueError:
        return ValueError(f"{self.source}: [{self.name}] {key}: {message}")

    def raw(self, key: str) -> Any:
        if key not in self.data:
            raise self._fail(key, "missing")
        self.used.add(key)
        return self.data[key]

    def typed(self, key: str, kind: type[_T], what: str) -> _T:
        value = self.raw(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise self._fail(key, f"expected {what}, got {value!r}")
        return value

    def number(self, key: str, *, low: float = -math.inf, high: float = math.inf) -> float:
        value = self.raw(key)
        if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
            raise self._fail(key, f"expected a number, got {value!r}")
        if not low <= value <= high:
            raise self._fail(key, f"expected a number in [{low}, {high}], got {value!r}")
        return float(value)

    def integer(self, key: str, *, low: int = 0) -> int:
        value = self.typed(key, int, "an integer")
        if value < low:
            raise self._fail(key, f"expected an integer >= {low}, got {value!r}")
        return value

    def strings(self, key: str, value: Any = None) -> tuple[str, ...]:
        value = self.raw(key) if value is None else value
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise self._fail(key, f"expected a list of non-empty strings, got {value!r}")
        if not value:
            raise self._fail(key, "expected at least one string")
        return tuple(value)

    def table(self, key: str) -> _Table:
        return _Table(self.typed(key, dict, "a table"), self.source, f"{self.name}.{key}")

    def done(self) -> None:
        unknown = sorted(set(self.data) - self.used)
        if unknown:
            raise self._fail(unknown[0], "unknown key")


@dataclass(frozen=True)
class QualityRules:
    """All rules of the quality family, as read from one TOML file (see ``quality.toml``)."""

    length: LengthRules
    fluency: FluencyRules
    coherence: CoherenceRules
    conciseness: ConcisenessRules
    readability: ReadabilityRules
    composite: CompositeRules
    feedback_bands: tuple[tuple[float, str], ...]
    source: str

    @classmethod
    def load(cls, path: Path | None = None) -> QualityRules:
        """Rules from ``path``, or the packaged ``pipeline/data/quality.toml`` by default.

        Raises ``ValueError`` naming the file and the key on malformed input.

        >>> QualityRules.load().length.max_words
        300
        """
        return _load(None if path is None else Path(path))


@cache
def _load(path: Path | None) -> QualityRules:
    data, source = read_rules(path, QUALITY_FILE)
    root = _Table(data, source, "")
    length, fluency, coherence, conciseness, readability, composite, feedback = (
        root.table(name)
        for name in (
            "length",
            "fluency",
            "coherence",
            "conciseness",
            "readability",
            "composite",
            "feedback",
        )
    )
    rules = QualityRules(
        length=LengthRules(
            min_words=length.integer("min_words"),
            max_words=length.integer("max_words"),
            too_short=length.typed("too_short", str, "a string"),
            too_long=length.typed("too_long", str, "a string"),
            appropriate=length.typed("appropriate", str, "a string"),
        ),
        fluency=FluencyRules(
            well_formed=fluency.number("well_formed", low=0, high=1),
            not_capitalized=fluency.number("not_capitalized", low=0, high=1),
            short_word=fluency.number("short_word", low=0, high=1),
            short_word_max_letters=fluency.integer("short_word_max_letters", low=1),
            short_word_allowed=tuple(w.lower() for w in fluency.strings("short_word_allowed")),
        ),
        coherence=_coherence(coherence),
        conciseness=ConcisenessRules(
            type_token_weight=conciseness.number("type_token_weight", low=0),
            repetition_weight=conciseness.number("repetition_weight", low=0),
            min_word_length_exclusive=conciseness.integer("min_word_length_exclusive"),
            max_repeats=conciseness.integer("max_repeats"),
            penalty_per_repeat=conciseness.number("penalty_per_repeat", low=0),
        ),
        readability=ReadabilityRules(
            words_per_sentence=readability.number("words_per_sentence"),
            word_length=readability.number("word_length"),
            intercept=readability.number("intercept"),
            scale=readability.number("scale", low=math.ulp(0.0)),
        ),
        composite=CompositeRules(
            fluency=composite.number("fluency", low=0),
            coherence=composite.number("coherence", low=0),
            conciseness=composite.number("conciseness", low=0),
            readability=composite.number("readability", low=0),
            length_penalty=composite.number("length_penalty", low=0),
        ),
        feedback_bands=_bands(feedback),
        source=source,
    )
    if rules.length.min_words > rules.length.max_words:
        raise length._fail("min_words", "must not exceed max_words")
    for table in (length, fluency, conciseness, readability, composite, feedback, root):
        table.done()
    return rules


def _coherence(table: _Table) -> CoherenceRules:
    per_gap = table.number("connectives_per_gap", low=math.ulp(0.0))
    families = table.table("connectives")
    connectives = {name: families.strings(name) for name in list(families.data)}
    if not connectives:
        raise table._fail("connectives", "needs at least one family")
    table.done()
    return CoherenceRules(connectives_per_gap=per_gap, connectives=connectives)


def _bands(table: _Table) -> tuple[tuple[float, str], ...]:
    raw = table.typed("bands", list, "a list of [threshold, text]")
    bands = []
    for band in raw:
        ok = isinstance(band, list) and len(band) == 2 and isinstance(band[1], str)
        if not ok or isinstance(band[0], bool) or not isinstance(band[0], int | float):
            raise table._fail("bands", f"expected [threshold, text], got {band!r}")
        bands.append((float(band[0]), band[1]))
    if not bands:
        raise table._fail("bands", "needs at least one band")
    return tuple(bands)


# --- shared units ------------------------------------------------------------------------------
def words(response: pl.Expr) -> pl.Expr:
    """Lowercased words of the response (``List[String]``; see the module docstring)."""
    return keyword_words(response)


def _word_count(response: pl.Expr) -> pl.Expr:
    return words(response).list.len()


def band_feedback(score: pl.Expr, bands: Sequence[tuple[float, str]]) -> pl.Expr:
    """Text of the first band, highest threshold first, with ``score >= threshold`` (String).

    ``bands`` are ``(threshold, text)`` pairs in any order; a score below every threshold or a
    null score gives null (use ``-inf`` as the last threshold for a catch-all).

    >>> import polars as pl
    >>> bands = [(0.5, "high"), (float("-inf"), "low")]
    >>> pl.select(band_feedback(pl.lit(0.5), bands)).item()
    'high'
    """
    result = pl.lit(None, dtype=pl.String)
    # Built from the lowest threshold up, so the highest matching threshold wins.
    for threshold, text in sorted(bands, key=lambda band: band[0]):
        result = pl.when(score >= threshold).then(pl.lit(text, dtype=pl.String)).otherwise(result)
    return result


# --- metrics -----------------------------------------------------------------------------------
def length_ok(response: pl.Expr, *, rules: LengthRules) -> pl.Expr:
    """1 when ``min_words <= words <= max_words`` (Int8; ``""`` has 0 words).

    >>> import polars as pl
    >>> pl.select(length_ok(pl.lit("One two three four five."), rules=QualityRules.load().length)).item()
    1
    """  # noqa: E501
    count = _word_count(response)
    return flag(count.is_between(rules.min_words, rules.max_words))


def length_feedback(response: pl.Expr, *, rules: LengthRules) -> pl.Expr:
    """``too_short``, ``too_long`` or the ``appropriate`` template filled in (String).

    >>> import polars as pl
    >>> rules = QualityRules.load().length
    >>> pl.select(length_feedback(pl.lit("One two three four five."), rules=rules)).item()
    'Appropriate length (5 words, ideal: 5-300)'
    """
    count = _word_count(response)
    template = rules.appropriate.replace("{min}", str(rules.min_words))
    template = template.replace("{max}", str(rules.max_words))
    parts = template.split("{words}")
    pieces: list[pl.Expr] = [pl.lit(parts[0])]
    for part in parts[1:]:
        pieces += [count.cast(pl.String), pl.lit(part)]
    return (
        pl.when(count < rules.min_words)
        .then(pl.lit(rules.too_short))
        .when(count > rules.max_words)
        .then(pl.lit(rules.too_long))
        .otherwise(pl.concat_str(pieces))
    )


def fluency_score(response: pl.Expr, *, rules: FluencyRules) -> pl.Expr:
    """Mean per-sentence fluency (Float64 in [0, 1]); 0.0 for an empty response.

    >>> import polars as pl
    >>> rules = QualityRules.load().fluency
    >>> text = pl.lit("Fine.\\nnot capitalized.\\nHas x here.")
    >>> pl.select(fluency_score(text, rules=rules)).item()
    0.6
    """
    token = pl.element()
    short = token.str.contains(rf"^\p{{L}}{{1,{rules.short_word_max_letters}}}$") & ~(
        token.str.to_lowercase().is_in(list(rules.short_word_allowed))
    )
    sentence = pl.element()
    has_short = (
        sentence.str.extract_all(r"\S+")
        .list.eval(pl.element().str.replace_all(_EDGE_PUNCTUATION, ""))
        .list.eval(short)
        .list.any()
    )
    value = (
        pl.when(has_short)
        .then(pl.lit(rules.short_word, dtype=pl.Float64))
        .when(sentence.str.contains(_CAPITALIZED))
        .then(pl.lit(rules.well_formed, dtype=pl.Float64))
        .otherwise(pl.lit(rules.not_capitalized, dtype=pl.Float64))
    )
    values = split_sentences(response).list.eval(value)
    return safe_div(values.list.sum(), values.list.len(), empty=0.0)


def connective_pattern(rules: CoherenceRules) -> str:
    """One case-insensitive regex matching any connective phrase as whole words.

    >>> connective_pattern(CoherenceRules(2.0, {"x": ("in addition", "thus")}))
    '(?i)\\\\b(?:in\\\\s+addition|thus)\\\\b'
    """
    phrases = {" ".join(p.split()).lower() for ps in rules.connectives.values() for p in ps}
    ordered = sorted(phrases, key=lambda p: (-len(p), p))
    alternatives = (r"\s+".join(re.escape(word) for word in p.split()) for p in ordered)
    return rf"(?i)\b(?:{'|'.join(alternatives)})\b"


def coherence_score(response: pl.Expr, *, rules: CoherenceRules) -> pl.Expr:
    """``min(1, hits / max(1, per_gap * (sentences - 1)))`` (Float64 in [0, 1]).

    >>> import polars as pl
    >>> text = pl.lit("It rained. However, we went out. Then it was fine.")
    >>> pl.select(coherence_score(text, rules=QualityRules.load().coherence)).item()
    0.5
    """
    hits = response.str.count_matches(connective_pattern(rules)).cast(pl.Float64)
    gaps = split_sentences(response).list.len().cast(pl.Float64) - 1.0
    expected = (gaps * rules.connectives_per_gap).clip(lower_bound=1.0)
    return (hits / expected).clip(upper_bound=1.0)


def conciseness_score(response: pl.Expr, *, rules: ConcisenessRules) -> pl.Expr:
    """Weighted type-token ratio and repetition score (Float64); 0.0 without words.

    >>> import polars as pl
    >>> rules = QualityRules.load().conciseness
    >>> round(pl.select(conciseness_score(pl.lit("the cat saw the dog"), rules=rules)).item(), 9)
    0.86
    """
    tokens = words(response)
    total = tokens.list.len()
    ratio = safe_div(tokens.list.n_unique(), total, empty=0.0)
    long_word = pl.element().str.len_chars() > rules.min_word_length_exclusive
    counts = tokens.list.eval(pl.element().filter(long_word).unique_counts().cast(pl.Int64))
    excess = counts.list.eval((pl.element() - rules.max_repeats).clip(lower_bound=0)).list.sum()
    repetition = (1.0 - rules.penalty_per_repeat * excess.cast(pl.Float64)).clip(lower_bound=0.0)
    score = rules.type_token_weight * ratio + rules.repetition_weight * repetition
    return pl.when(total == 0).then(pl.lit(0.0, dtype=pl.Float64)).otherwise(score)


def readability_score(response: pl.Expr, *, rules: ReadabilityRules) -> pl.Expr:
    """``clamp01(1 - (a * W/S + b * C/W + c) / scale)`` (Float64); 0.0 without words.

    >>> import polars as pl
    >>> rules = QualityRules.load().readability
    >>> round(pl.select(readability_score(pl.lit("I am ok. Go."), rules=rules)).item(), 9)
    0.708
    """
    tokens = words(response)
    total = tokens.list.len().cast(pl.Float64)
    chars = tokens.list.eval(pl.element().str.len_chars()).list.sum().cast(pl.Float64)
    sentences = split_sentences(response).list.len().cast(pl.Float64)
    grade = (
        rules.words_per_sentence * safe_div(total, sentences, empty=0.0)
        + rules.word_length * safe_div(chars, total, empty=0.0)
        + rules.intercept
    )
    score = (1.0 - grade / rules.scale).clip(0.0, 1.0)
    return pl.when(total == 0).then(pl.lit(0.0, dtype=pl.Float64)).otherwise(score)


def composite_quality(
    fluency: pl.Expr,
    coherence: pl.Expr,
    conciseness: pl.Expr,
    readability: pl.Expr,
    length_is_ok: pl.Expr,
    *,
    rules: CompositeRules,
) -> pl.Expr:
    """Weighted sum of the four scores, times ``length_penalty`` where ``length_is_ok`` is 0.

    >>> import polars as pl
    >>> rules = QualityRules.load().composite
    >>> one = pl.lit(1.0)
    >>> pl.select(composite_quality(one, one, one, one, pl.lit(0), rules=rules)).item()
    0.7
    """
    total = (
        rules.fluency * fluency
        + rules.coherence * coherence
        + rules.conciseness * conciseness
        + rules.readability * readability
    )
    return pl.when(length_is_ok == 0).then(total * rules.length_penalty).otherwise(total)


def quality_scores(response: pl.Expr, *, rules: QualityRules) -> dict[str, pl.Expr]:
    """Every column of the family, keyed by output name (use ``with_columns(**scores)``).

    ``length_ok`` Int8, ``length_feedback`` and ``quality_feedback`` String, the rest Float64.

    >>> import polars as pl
    >>> scores = quality_scores(pl.lit("Hi."), rules=QualityRules.load())
    >>> pl.select(**scores).row(0)[-1]
    'Average quality - some issues with clarity or structure'
    """
    ok = length_ok(response, rules=rules.length)
    fluency = fluency_score(response, rules=rules.fluency)
    coherence = coherence_score(response, rules=rules.coherence)
    conciseness = conciseness_score(response, rules=rules.conciseness)
    readability = readability_score(response, rules=rules.readability)
    composite = composite_quality(
        fluency, coherence, conciseness, readability, ok, rules=rules.composite
    )
    return {
        "length_ok": ok,
        "length_feedback": length_feedback(response, rules=rules.length),
        "fluency_score": fluency,
        "coherence_score": coherence,
        "conciseness_score": conciseness,
        "readability_score": readability,
        "composite_quality": composite,
        "quality_feedback": band_feedback(composite, rules.feedback_bands),
    }
