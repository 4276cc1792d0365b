"""Rules of the composite relevance family (``pipeline/data/relevance.toml`` or a user file of
that layout): categories and aliases, word ranges, intents, refusal patterns, step words,
creativity indicators, adjustments, composite weights and feedback bands. The expressions are
in :mod:`pipeline.metrics.composite.relevance_composite`, whose docstring states what each
rule means."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import polars as pl

from pipeline.rules.files import RELEVANCE_FILE, RuleFileError, parse_toml, read_bytes

ADJUSTABLE = ("step_completeness", "creativity_score")
COMPOSITE_INPUTS = ("semantic_relevance", "tfidf_relevance", "keyword_overlap", "intent_match")
#: ``[depth] word_unit``: ``\w+(?:'\w+)*`` runs, or the enhanced framework's punctuation-deleted
#: whitespace words (:func:`pipeline.text.tokenize.punctuation_deleted_words`).
DEPTH_WORD_UNITS = ("word-characters", "whitespace")
_STEP_WORD = re.compile(r"[a-z]+(?: [a-z]+)*")


@dataclass(frozen=True)
class Intent:
    """One intent: question-side and response-side pattern lists."""

    name: str
    question: tuple[str, ...]
    response: tuple[str, ...]


@dataclass(frozen=True)
class RelevanceRules:
    """The validated contents of a relevance rules file (see ``pipeline/data/relevance.toml``)."""

    source: str
    categories: tuple[str, ...]
    default_category: str
    aliases: Mapping[str, str]
    length_ranges: Mapping[str, tuple[int, int]]
    intents: tuple[Intent, ...]
    refusal_patterns: tuple[str, ...]
    refusal_threshold: float
    refusal_penalty: float
    step_words: tuple[str, ...]
    numbered_item: str
    step_divisor: float
    indicator_families: Mapping[str, tuple[str, ...]]
    indicator_weight: float
    distinct_word_bonus: float
    distinct_word_threshold: int
    adjustment: Mapping[str, Mapping[str, float]]
    composite_weights: Mapping[str, float]
    feedback: tuple[tuple[float, str], ...]
    #: ``[depth] word_unit``, one of :data:`DEPTH_WORD_UNITS` (left out: ``word-characters``).
    depth_word_unit: str = "word-characters"

    @staticmethod
    def load(path: Path | None = None) -> RelevanceRules:
        """Rules from a TOML file, the packaged ``relevance.toml`` by default.

        Raises :class:`~pipeline.rules.files.RuleFileError` (a ``ValueError``) naming the file
        and the key for a malformed file.

        >>> RelevanceRules.load().default_category
        'Factual'
        """
        return from_bytes(*read_bytes(None if path is None else Path(path), RELEVANCE_FILE),
                          bundled=path is None)

    @property
    def step_pattern(self) -> str:
        """One regex matching any step word (spaces in phrases match any whitespace run)."""
        words = "|".join(word.replace(" ", r"\s+") for word in self.step_words)
        return rf"(?i)\b(?:{words})\b"


def any_pattern(patterns: Sequence[str]) -> str:
    """One case-insensitive regex matching where any of ``patterns`` matches."""
    return "(?i)" + "|".join(f"(?:{p})" for p in patterns)


@cache
def from_bytes(data: bytes, source: str, *, bundled: bool = False) -> RelevanceRules:
    """The rules in ``data`` (the bytes of the file named ``source``), parsed once per content.

    ``bundled``: the bytes are a file of ``pipeline/data/``, whose regexes the test suite
    compiles (``tests/test_rules_bundled.py``); they are not compiled again at each start."""
    return parse(parse_toml(data, source), source, check_patterns=not bundled)


class _Reader:
    """Typed access to a parsed TOML document with errors naming the file and the key."""

    def __init__(self, source: str, *, check_patterns: bool = True) -> None:
        self.source = source
        self.check_patterns = check_patterns

    def fail(self, key: str, message: str) -> RuleFileError:
        return RuleFileError(f"{self.source}: key {key!r}: {message}")

    def get(self, table: Mapping[str, Any], key: str, prefix: str) -> Any:
        if key not in table:
            raise self.fail(f"{prefix}{key}", "missing")
        return table[key]

    def table(self, table: Mapping[str, Any], key: str, prefix: str = "") -> dict[str, Any]:
        value = self.get(table, key, prefix)
        if not isinstance(value, dict):
            raise self.fail(f"{prefix}{key}", "expected a table")
        return value

    def number(self, value: Any, key: str, *, positive: bool = False) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, f"expected a number, got {value!r}")
        if value < 0 or (positive and value == 0):
            raise self.fail(key, f"expected a {'positive' if positive else 'non-negative'} number")
        return float(value)

    def text(self, value: Any, key: str) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, f"expected a non-empty string, got {value!r}")
        return value

    def regex(self, value: Any, key: str) -> str:
        pattern = self.text(value, key)
        if not self.check_patterns:
            return pattern
        try:
            re.compile(pattern)
            pl.select(pl.lit("").str.contains(any_pattern([pattern])))
        except (re.error, pl.exceptions.PolarsError) as error:
            raise self.fail(key, f"invalid regex {pattern!r}: {error}") from None
        return pattern

    def regexes(self, value: Any, key: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not value:
            raise self.fail(key, "expected a non-empty list of regexes")
        return tuple(self.regex(p, f"{key}[{i}]") for i, p in enumerate(value))


def parse(doc: Mapping[str, Any], source: str, *, check_patterns: bool = True) -> RelevanceRules:
    """Typed, validated rules from a parsed relevance TOML document (``check_patterns=False``:
    the regexes are taken as they are, for the bundled files the tests check)."""
    r = _Reader(source, check_patterns=check_patterns)

    cats = r.table(doc, "categories")
    names = cats.get("names")
    if not isinstance(names, list) or not names:
        raise r.fail("categories.names", "expected a non-empty list of names")
    categories = tuple(r.text(n, f"categories.names[{i}]").strip() for i, n in enumerate(names))
    lookup = {name.lower(): name for name in categories}
    if len(lookup) != len(categories):
        raise r.fail("categories.names", "names must differ case-insensitively")
    default = r.text(r.get(cats, "default", "categories."), "categories.default")
    if default not in categories:
        raise r.fail("categories.default", f"{default!r} is not one of the names")
    aliases: dict[str, str] = {}
    for alias, target in cats.get("aliases", {}).items():
        key = f"categories.aliases.{alias}"
        if target not in categories:
            raise r.fail(key, f"{target!r} is not one of the names")
        if alias.strip().lower() in lookup:
            raise r.fail(key, "an alias must not be a category name")
        aliases[alias.strip().lower()] = target

    ranges_table = r.table(doc, "length_ranges")
    ranges: dict[str, tuple[int, int]] = {}
    for name in categories:
        key = f"length_ranges.{name}"
        value = r.get(ranges_table, name, "length_ranges.")
        if (
            not isinstance(value, list) or len(value) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
            or not 0 < value[0] <= value[1]
        ):
            raise r.fail(key, f"expected [min, max] integers with 0 < min <= max, got {value!r}")
        ranges[name] = (value[0], value[1])

    intent_list = r.get(doc, "intents", "")
    if not isinstance(intent_list, list):
        raise r.fail("intents", "expected an array of tables")
    intents = tuple(
        Intent(
            name=r.text(r.get(item, "name", f"intents[{i}]."), f"intents[{i}].name"),
            question=r.regexes(r.get(item, "question", f"intents[{i}]."), f"intents[{i}].question"),
            response=r.regexes(r.get(item, "response", f"intents[{i}]."), f"intents[{i}].response"),
        )
        for i, item in enumerate(intent_list)
    )

    refusal = r.table(doc, "refusal")
    steps = r.table(doc, "steps")
    words = r.get(steps, "words", "steps.")
    if not isinstance(words, list) or not words:
        raise r.fail("steps.words", "expected a non-empty list")
    step_words = []
    for i, word in enumerate(words):
        if not isinstance(word, str) or not _STEP_WORD.fullmatch(word):
            raise r.fail(f"steps.words[{i}]", f"expected lowercase words, got {word!r}")
        step_words.append(word)

    creativity = r.table(doc, "creativity")
    families = r.table(creativity, "families", "creativity.")
    threshold = r.get(creativity, "distinct_word_threshold", "creativity.")
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0:
        raise r.fail("creativity.distinct_word_threshold", "expected a non-negative integer")

    adjustment: dict[str, Mapping[str, float]] = {}
    for name, entries in r.table(doc, "adjustment").items():
        key = f"adjustment.{name}"
        if name not in categories:
            raise r.fail(key, f"{name!r} is not one of the category names")
        if not isinstance(entries, dict) or not set(entries) <= set(ADJUSTABLE):
            raise r.fail(key, f"expected a table with keys among {ADJUSTABLE}")
        adjustment[name] = MappingProxyType(
            {c: r.number(w, f"{key}.{c}") for c, w in entries.items()}
        )

    composite = r.table(doc, "composite")
    weights = {
        name: r.number(r.get(composite, name, "composite."), f"composite.{name}")
        for name in COMPOSITE_INPUTS
    }

    bands = r.get(doc, "feedback", "")
    if not isinstance(bands, list) or not bands:
        raise r.fail("feedback", "expected a non-empty array of tables")
    feedback = tuple(
        (
            r.number(r.get(band, "min", f"feedback[{i}]."), f"feedback[{i}].min"),
            r.text(r.get(band, "label", f"feedback[{i}]."), f"feedback[{i}].label"),
        )
        for i, band in enumerate(bands)
    )
    mins = [band[0] for band in feedback]
    if mins != sorted(mins, reverse=True) or len(set(mins)) != len(mins) or mins[-1] != 0:
        raise r.fail("feedback", "band mins must strictly decrease and end with 0")

    depth_unit = "word-characters"
    if "depth" in doc:
        depth = r.table(doc, "depth")
        if set(depth) - {"word_unit"}:
            raise r.fail(f"depth.{sorted(set(depth) - {'word_unit'})[0]}", "unknown key")
        depth_unit = r.text(r.get(depth, "word_unit", "depth."), "depth.word_unit")
        if depth_unit not in DEPTH_WORD_UNITS:
            raise r.fail("depth.word_unit", f"expected one of {', '.join(DEPTH_WORD_UNITS)}")

    return RelevanceRules(
        source=source,
        categories=categories,
        default_category=default,
        aliases=MappingProxyType(aliases),
        length_ranges=MappingProxyType(ranges),
        intents=intents,
        refusal_patterns=r.regexes(r.get(refusal, "patterns", "refusal."), "refusal.patterns"),
        refusal_threshold=r.number(
            r.get(refusal, "threshold", "refusal."), "refusal.threshold"
        ),
        refusal_penalty=r.number(r.get(refusal, "penalty", "refusal."), "refusal.penalty"),
        step_words=tuple(step_words),
        numbered_item=r.regex(r.get(steps, "numbered_item", "steps."), "steps.numbered_item"),
        step_divisor=r.number(
            r.get(steps, "divisor", "steps."), "steps.divisor", positive=True
        ),
        indicator_families=MappingProxyType(
            {f: r.regexes(p, f"creativity.families.{f}") for f, p in families.items()}
        ),
        indicator_weight=r.number(
            r.get(creativity, "indicator_weight", "creativity."), "creativity.indicator_weight"
        ),
        distinct_word_bonus=r.number(
            r.get(creativity, "distinct_word_bonus", "creativity."),
            "creativity.distinct_word_bonus",
        ),
        distinct_word_threshold=threshold,
        adjustment=MappingProxyType(adjustment),
        composite_weights=MappingProxyType(weights),
        feedback=feedback,
        depth_word_unit=depth_unit,
    )
