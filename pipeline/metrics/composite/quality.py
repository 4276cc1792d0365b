"""Quality family of the category-aware composite: length, fluency, coherence, conciseness,
readability, their weighted composite and banded feedback.

Every weight, range, threshold and phrase list comes from
:class:`~pipeline.rules.quality.QualityRules`, which :mod:`pipeline.rules` loads from
``pipeline/data/quality.toml`` (or a user file of the same layout) when the config is read.
Each function takes the raw response text (``String``) and its part of the rules as a keyword
argument; a null response gives null in every column.

Shared units:

* **Words** (``[words] unit``): ``letters`` (the default) is
  :func:`~pipeline.metrics.lexical.keywords.keyword_words` -- the text lowercased, ’ folded to
  ', then maximal runs of Unicode letters, combining marks and digits, an apostrophe between two
  runs kept inside ("don't"); hyphens and other punctuation separate words. ``whitespace`` is
  :func:`~pipeline.text.tokenize.punctuation_deleted_words`, the enhanced framework's unit: the
  text lowercased, characters other than word characters and whitespace deleted, split at
  whitespace ("Île-de-France" is one word, "9-11" the word ``911``). A word's length is its
  number of characters (code points, apostrophes included).
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
  whitespace run; a phrase listed in two families counts once). A response of one sentence has
  no gap to connect and scores ``single_sentence`` (1.0 in the bundled rules; left out, the
  formula gives 1.0 with a connective and 0.0 without); empty: 0.0.
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

import re
from collections.abc import Sequence

import polars as pl

from pipeline.metrics.arithmetic import flag, safe_div
from pipeline.metrics.lexical.keywords import keyword_words
from pipeline.rules.quality import (
    WORD_UNITS,
    CoherenceRules,
    CompositeRules,
    ConcisenessRules,
    FluencyRules,
    LengthRules,
    QualityRules,
    ReadabilityRules,
)
from pipeline.text.sentences import split_sentences
from pipeline.text.tokenize import punctuation_deleted_words

_EDGE_PUNCTUATION = r"^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$"
_CAPITALIZED = r"^[^\p{L}\p{N}]*[\p{Lu}\p{Lt}\p{N}]"


# --- shared units ------------------------------------------------------------------------------
def words(response: pl.Expr, unit: str = "letters") -> pl.Expr:
    """Lowercased words of the response in ``unit`` (``List[String]``; see the module
    docstring).

    >>> import polars as pl
    >>> text = pl.lit("Île-de-France, 9-11.")
    >>> pl.select(a=words(text), b=words(text, "whitespace")).row(0)
    (['île', 'de', 'france', '9', '11'], ['îledefrance', '911'])
    """
    if unit not in WORD_UNITS:
        raise ValueError(f"unknown word unit {unit!r}; expected one of {WORD_UNITS}")
    return keyword_words(response) if unit == "letters" else punctuation_deleted_words(response)


def _words_of(response: pl.Expr, unit: str, tokens: pl.Expr | None) -> pl.Expr:
    """``tokens`` when given (the words computed once for several metrics), else the words of
    ``response`` in ``unit``."""
    return words(response, unit) if tokens is None else tokens


def _sentences_of(response: pl.Expr, sentences: pl.Expr | None) -> pl.Expr:
    """``sentences`` when given (computed once for several metrics), else those of
    ``response``. Sentence lists are passed as columns because polars does not share an
    expression that contains ``list.eval`` between its uses."""
    return split_sentences(response) if sentences is None else sentences


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
def length_ok(
    response: pl.Expr, *, rules: LengthRules, unit: str = "letters", tokens: pl.Expr | None = None
) -> pl.Expr:
    """1 when ``min_words <= words <= max_words`` (Int8; ``""`` has 0 words).

    >>> import polars as pl
    >>> pl.select(length_ok(pl.lit("One two three four five."), rules=QualityRules.load().length)).item()
    1
    """  # noqa: E501
    count = _words_of(response, unit, tokens).list.len()
    return flag(count.is_between(rules.min_words, rules.max_words))


def length_feedback(
    response: pl.Expr, *, rules: LengthRules, unit: str = "letters", tokens: pl.Expr | None = None
) -> pl.Expr:
    """``too_short``, ``too_long`` or the ``appropriate`` template filled in (String).

    >>> import polars as pl
    >>> rules = QualityRules.load().length
    >>> pl.select(length_feedback(pl.lit("One two three four five."), rules=rules)).item()
    'Appropriate length (5 words, ideal: 5-300)'
    """
    count = _words_of(response, unit, tokens).list.len()
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


def fluency_score(
    response: pl.Expr, *, rules: FluencyRules, sentences: pl.Expr | None = None
) -> pl.Expr:
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
    sentences = _sentences_of(response, sentences)
    return safe_div(sentences.list.eval(value).list.sum(), sentences.list.len(), empty=0.0)


def connective_pattern(rules: CoherenceRules) -> str:
    """One case-insensitive regex matching any connective phrase as whole words.

    >>> connective_pattern(CoherenceRules(2.0, {"x": ("in addition", "thus")}))
    '(?i)\\\\b(?:in\\\\s+addition|thus)\\\\b'
    """
    phrases = {" ".join(p.split()).lower() for ps in rules.connectives.values() for p in ps}
    ordered = sorted(phrases, key=lambda p: (-len(p), p))
    alternatives = (r"\s+".join(re.escape(word) for word in p.split()) for p in ordered)
    return rf"(?i)\b(?:{'|'.join(alternatives)})\b"


def coherence_score(
    response: pl.Expr, *, rules: CoherenceRules, sentences: pl.Expr | None = None
) -> pl.Expr:
    """``min(1, hits / max(1, per_gap * (sentences - 1)))`` (Float64 in [0, 1]).

    >>> import polars as pl
    >>> text = pl.lit("It rained. However, we went out. Then it was fine.")
    >>> pl.select(coherence_score(text, rules=QualityRules.load().coherence)).item()
    0.5
    """
    hits = response.str.count_matches(connective_pattern(rules)).cast(pl.Float64)
    gaps = _sentences_of(response, sentences).list.len().cast(pl.Float64) - 1.0
    expected = (gaps * rules.connectives_per_gap).clip(lower_bound=1.0)
    score = (hits / expected).clip(upper_bound=1.0)
    if rules.single_sentence is None:
        return score
    single = pl.lit(rules.single_sentence, dtype=pl.Float64)
    return pl.when(gaps == 0.0).then(single).otherwise(score)


def conciseness_score(
    response: pl.Expr, *, rules: ConcisenessRules, unit: str = "letters",
    tokens: pl.Expr | None = None,
) -> pl.Expr:
    """Weighted type-token ratio and repetition score (Float64); 0.0 without words.

    >>> import polars as pl
    >>> rules = QualityRules.load().conciseness
    >>> round(pl.select(conciseness_score(pl.lit("the cat saw the dog"), rules=rules)).item(), 9)
    0.86
    """
    tokens = _words_of(response, unit, tokens)
    total = tokens.list.len()
    ratio = safe_div(tokens.list.n_unique(), total, empty=0.0)
    long_word = pl.element().str.len_chars() > rules.min_word_length_exclusive
    counts = tokens.list.eval(pl.element().filter(long_word).unique_counts().cast(pl.Int64))
    excess = counts.list.eval((pl.element() - rules.max_repeats).clip(lower_bound=0)).list.sum()
    repetition = (1.0 - rules.penalty_per_repeat * excess.cast(pl.Float64)).clip(lower_bound=0.0)
    score = rules.type_token_weight * ratio + rules.repetition_weight * repetition
    return pl.when(total == 0).then(pl.lit(0.0, dtype=pl.Float64)).otherwise(score)


def readability_score(
    response: pl.Expr, *, rules: ReadabilityRules, unit: str = "letters",
    tokens: pl.Expr | None = None, sentences: pl.Expr | None = None,
) -> pl.Expr:
    """``clamp01(1 - (a * W/S + b * C/W + c) / scale)`` (Float64); 0.0 without words.

    >>> import polars as pl
    >>> rules = QualityRules.load().readability
    >>> round(pl.select(readability_score(pl.lit("I am ok. Go."), rules=rules)).item(), 9)
    0.708
    """
    tokens = _words_of(response, unit, tokens)
    total = tokens.list.len().cast(pl.Float64)
    chars = tokens.list.eval(pl.element().str.len_chars()).list.sum().cast(pl.Float64)
    n_sentences = _sentences_of(response, sentences).list.len().cast(pl.Float64)
    grade = (
        rules.words_per_sentence * safe_div(total, n_sentences, empty=0.0)
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
    'Good quality - generally clear and readable'
    """
    unit = rules.word_unit
    ok = length_ok(response, rules=rules.length, unit=unit)
    fluency = fluency_score(response, rules=rules.fluency)
    coherence = coherence_score(response, rules=rules.coherence)
    conciseness = conciseness_score(response, rules=rules.conciseness, unit=unit)
    readability = readability_score(response, rules=rules.readability, unit=unit)
    composite = composite_quality(
        fluency, coherence, conciseness, readability, ok, rules=rules.composite
    )
    return {
        "length_ok": ok,
        "length_feedback": length_feedback(response, rules=rules.length, unit=unit),
        "fluency_score": fluency,
        "coherence_score": coherence,
        "conciseness_score": conciseness,
        "readability_score": readability,
        "composite_quality": composite,
        "quality_feedback": band_feedback(composite, rules.feedback_bands),
    }
