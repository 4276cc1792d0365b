"""Rules of the quality family (``pipeline/data/quality.toml`` or a user file of that layout):
word bounds, per-sentence fluency values, connectives, conciseness, readability coefficients,
composite weights and feedback bands. The expressions are in
:mod:`pipeline.metrics.composite.quality`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from pipeline.rules.files import QUALITY_FILE, parse_toml, read_bytes
from pipeline.rules.table import Table, bands

#: ``[words] unit``: runs of letters, marks and digits (hyphens separate words), or the
#: punctuation-deleted whitespace words of the enhanced framework ("Île-de-France" is one word).
WORD_UNITS: tuple[str, ...] = ("letters", "whitespace")


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
    """``[coherence]``: connective families (name -> phrases), hits expected per gap and the
    score of a one-sentence response (None: the formula, 1.0 with a connective, else 0.0)."""

    connectives_per_gap: float
    connectives: Mapping[str, tuple[str, ...]]
    single_sentence: float | None = None


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
    #: ``[words] unit``, one of :data:`WORD_UNITS` (left out: ``letters``).
    word_unit: str = "letters"

    @classmethod
    def load(cls, path: Path | None = None) -> QualityRules:
        """Rules from ``path``, or the packaged ``pipeline/data/quality.toml`` by default.

        Raises :class:`~pipeline.rules.files.RuleFileError` (a ``ValueError``) naming the file
        and the key on malformed input.

        >>> QualityRules.load().length.max_words
        300
        """
        return from_bytes(*read_bytes(None if path is None else Path(path), QUALITY_FILE))


@cache
def from_bytes(data: bytes, source: str) -> QualityRules:
    """The rules in ``data`` (the bytes of the file named ``source``), parsed once per content."""
    return parse(parse_toml(data, source), source)


def parse(data: Mapping[str, Any], source: str) -> QualityRules:
    """Typed, validated rules from a parsed quality TOML document."""
    root = Table(data, source, "")
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
        feedback_bands=bands(feedback),
        source=source,
        word_unit=_word_unit(root),
    )
    if rules.length.min_words > rules.length.max_words:
        raise length.fail("min_words", "must not exceed max_words")
    for table in (length, fluency, conciseness, readability, composite, feedback, root):
        table.done()
    return rules


def _word_unit(root: Table) -> str:
    """``[words] unit`` (optional table; ``letters`` when left out)."""
    if "words" not in root.data:
        return "letters"
    table = root.table("words")
    unit = table.typed("unit", str, "a string")
    if unit not in WORD_UNITS:
        raise table.fail("unit", f"expected one of {', '.join(WORD_UNITS)}, got {unit!r}")
    table.done()
    return unit


def _coherence(table: Table) -> CoherenceRules:
    per_gap = table.number("connectives_per_gap", low=math.ulp(0.0))
    single = (
        table.number("single_sentence", low=0, high=1) if "single_sentence" in table.data
        else None
    )
    families = table.table("connectives")
    connectives = {name: families.strings(name) for name in list(families.data)}
    if not connectives:
        raise table.fail("connectives", "needs at least one family")
    table.done()
    return CoherenceRules(
        connectives_per_gap=per_gap, connectives=connectives, single_sentence=single
    )
