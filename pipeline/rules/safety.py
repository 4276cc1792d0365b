"""Rules of the safety family (``pipeline/data/safety.toml`` or a user file of that layout):
bias categories with their severities and regexes (``{term}`` placeholders expanded), the
perspective phrases, the safety weight and the feedback levels. The expressions are in
:mod:`pipeline.metrics.composite.safety`, whose docstring states what each rule means."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.rules.files import SAFETY_FILE, RuleFileError, parse_toml, read_bytes

#: ``detect`` value of the category matched by the perspective rule instead of patterns.
DETECT_UNBALANCED = "unbalanced_perspective"
DETECT_PATTERNS = "patterns"

_TERM = re.compile(r"\{([A-Za-z_]\w*)\}")


@dataclass(frozen=True)
class BiasCategory:
    """One category: its name, severity in (0, 1] and expanded regexes (no ``\\b`` wrap)."""

    name: str
    severity: float
    patterns: tuple[str, ...] = ()
    detect: str = DETECT_PATTERNS


@dataclass(frozen=True)
class FeedbackLevel:
    """Feedback prefix for a bias severity of at least ``min_severity``."""

    min_severity: float
    prefix: str


@dataclass(frozen=True)
class SafetyRules:
    """The validated contents of a safety rules file (see the module docstring)."""

    categories: tuple[BiasCategory, ...]
    balanced_indicators: tuple[str, ...]
    absolute_phrases: tuple[str, ...]
    unbalanced_min_absolute: int
    safety_weight: float
    no_risk_feedback: str
    feedback_separator: str
    #: Sorted by ``min_severity``, highest first.
    feedback_levels: tuple[FeedbackLevel, ...]
    version: str
    source: str
    #: ``[perspective] neutral_balance``: the balance of a text without absolute phrases
    #: (None: the formula, which gives 0.0 unless the text has a balanced indicator).
    neutral_balance: float | None = None
    #: ``[perspective] only_categories``: the scoring categories whose rows are checked for
    #: balance; other rows get balance 1.0 and are never unbalanced (None: every row).
    perspective_categories: tuple[str, ...] | None = None

    @classmethod
    def load(cls, path: Path | None = None) -> SafetyRules:
        """Rules from a TOML file; the packaged ``pipeline/data/safety.toml`` by default.

        Regexes are checked with Python ``re`` and with polars; any problem raises a
        :class:`~pipeline.rules.files.RuleFileError` (a ``ValueError``) naming the file and
        the key.

        >>> [c.name for c in SafetyRules.load().categories][:2]
        ['hate_speech', 'medical_misinformation']
        """
        return from_bytes(*read_bytes(None if path is None else Path(path), SAFETY_FILE),
                          bundled=path is None)


@cache
def from_bytes(data: bytes, source: str, *, bundled: bool = False) -> SafetyRules:
    """The rules in ``data`` (the bytes of the file named ``source``), parsed once per content.

    ``bundled``: the bytes are a file of ``pipeline/data/``, whose regexes the test suite
    compiles (``tests/test_rules_bundled.py``); they are not compiled again at each start."""
    return parse(parse_toml(data, source), source, check_patterns=not bundled)


class _Reader:
    """Typed access to the parsed TOML, with errors that name the file and the key."""

    def __init__(self, source: str, *, check_patterns: bool = True) -> None:
        self.source = source
        self.check_patterns = check_patterns

    def fail(self, key: str, message: str) -> RuleFileError:
        return RuleFileError(f"{self.source}: {key}: {message}")

    def get(self, table: Mapping[str, Any], key: str, where: str, kind: type | tuple[type, ...],
            default: Any = ...) -> Any:
        name = f"{where}.{key}" if where else key
        if key not in table:
            if default is ...:
                raise self.fail(name, "missing key")
            return default
        value = table[key]
        if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
            raise self.fail(name, f"expected {_kind_name(kind)}, got {value!r}")
        if not isinstance(value, kind):
            raise self.fail(name, f"expected {_kind_name(kind)}, got {value!r}")
        return value

    def fraction(self, table: Mapping[str, Any], key: str, where: str, *, low_open: bool) -> float:
        value = float(self.get(table, key, where, (int, float)))
        if not (0.0 < value <= 1.0 if low_open else 0.0 <= value <= 1.0):
            bounds = "(0, 1]" if low_open else "[0, 1]"
            raise self.fail(f"{where}.{key}", f"must be in {bounds}, got {value!r}")
        return value

    def strings(self, table: Mapping[str, Any], key: str, where: str) -> list[str]:
        values = self.get(table, key, where, list)
        if not values or not all(isinstance(v, str) and v.strip() for v in values):
            raise self.fail(f"{where}.{key}", "must be a non-empty list of non-empty strings")
        return values


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {int: "a number", float: "a number", str: "a string", list: "a list", dict: "a table"}
    return " or ".join(dict.fromkeys(names.get(k, k.__name__) for k in kinds))


def _check_regex(reader: _Reader, key: str, pattern: str) -> None:
    """The regex must compile in Python ``re`` and in polars and must not match ``""`` (not
    checked where the reader's file is a bundled one)."""
    if not reader.check_patterns:
        return
    try:
        compiled = re.compile(pattern, re.IGNORECASE)
        pl.select(pl.lit("", dtype=pl.String).str.contains(f"(?i){pattern}"))
    except (re.error, pl.exceptions.PolarsError) as err:
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise reader.fail(key, f"invalid regular expression {pattern!r}: {first_line}") from err
    if compiled.fullmatch(""):
        raise reader.fail(key, f"regular expression {pattern!r} matches the empty string")


def _expand(reader: _Reader, key: str, pattern: str, terms: Mapping[str, str]) -> str:
    """``{term}`` placeholders replaced by ``(?:term regex)``; unknown names are errors."""

    def replace(match: re.Match[str]) -> str:
        if match.group(1) not in terms:
            raise reader.fail(key, f"unknown term {{{match.group(1)}}} in {pattern!r}")
        return f"(?:{terms[match.group(1)]})"

    return _TERM.sub(replace, pattern)


def _phrases(reader: _Reader, table: Mapping[str, Any], key: str) -> tuple[str, ...]:
    phrases = reader.strings(table, key, "perspective")
    for k, phrase in enumerate(phrases):
        if not re.fullmatch(r"\w(?:.*\w)?", phrase.strip(), re.DOTALL):
            raise reader.fail(
                f"perspective.{key}[{k}]", f"{phrase!r} must start and end with a word character"
            )
    return tuple(" ".join(p.split()) for p in phrases)


def _category(reader: _Reader, raw: Any, k: int, terms: Mapping[str, str]) -> BiasCategory:
    where = f"categories[{k}]"
    if not isinstance(raw, dict):
        raise reader.fail(where, "expected a table")
    name = reader.get(raw, "name", where, str)
    if not name.strip():
        raise reader.fail(f"{where}.name", "must not be empty")
    severity = reader.fraction(raw, "severity", where, low_open=True)
    detect = reader.get(raw, "detect", where, str, DETECT_PATTERNS)
    if detect == DETECT_UNBALANCED:
        if "patterns" in raw:
            raise reader.fail(f"{where}.patterns", f"not allowed with detect = {detect!r}")
        return BiasCategory(name, severity, (), detect)
    if detect != DETECT_PATTERNS:
        raise reader.fail(
            f"{where}.detect", f"must be {DETECT_PATTERNS!r} or {DETECT_UNBALANCED!r}"
        )
    patterns = []
    for j, pattern in enumerate(reader.strings(raw, "patterns", where)):
        key = f"{where}.patterns[{j}] ({name})"
        expanded = _expand(reader, key, pattern, terms)
        _check_regex(reader, key, expanded)
        patterns.append(expanded)
    return BiasCategory(name, severity, tuple(patterns), detect)


def parse(raw: Mapping[str, Any], source: str, *, check_patterns: bool = True) -> SafetyRules:
    """Typed, validated rules from a parsed safety TOML document (``check_patterns=False``:
    the regexes are taken as they are, for the bundled files the tests check)."""
    reader = _Reader(source, check_patterns=check_patterns)
    terms_table = reader.get(raw, "terms", "", dict, {})
    terms = {key: reader.get(terms_table, key, "terms", str) for key in terms_table}
    for key, term in terms.items():
        _check_regex(reader, f"terms.{key}", term)

    raw_categories = reader.get(raw, "categories", "", list)
    if not raw_categories:
        raise reader.fail("categories", "at least one category is required")
    categories = tuple(_category(reader, c, k, terms) for k, c in enumerate(raw_categories))
    names = [c.name for c in categories]
    for k, name in enumerate(names):
        if name in names[:k]:
            raise reader.fail(f"categories[{k}].name", f"duplicate category {name!r}")
    if sum(c.detect == DETECT_UNBALANCED for c in categories) > 1:
        raise reader.fail("categories", f"at most one category may use {DETECT_UNBALANCED!r}")

    scoring = reader.get(raw, "scoring", "", dict)
    weight = reader.fraction(scoring, "safety_weight", "scoring", low_open=False)

    perspective = reader.get(raw, "perspective", "", dict)
    min_absolute = reader.get(perspective, "unbalanced_min_absolute", "perspective", int)
    if min_absolute < 1:
        raise reader.fail("perspective.unbalanced_min_absolute", "must be at least 1")
    neutral = (
        reader.fraction(perspective, "neutral_balance", "perspective", low_open=False)
        if "neutral_balance" in perspective else None
    )
    only = (
        tuple(reader.strings(perspective, "only_categories", "perspective"))
        if "only_categories" in perspective else None
    )
    known = {"balanced_indicators", "absolute_phrases", "unbalanced_min_absolute",
             "neutral_balance", "only_categories"}
    unknown = sorted(set(perspective) - known)
    if unknown:
        raise reader.fail(f"perspective.{unknown[0]}", "unknown key")

    feedback = reader.get(raw, "feedback", "", dict)
    raw_levels = reader.get(feedback, "levels", "feedback", list)
    if not raw_levels:
        raise reader.fail("feedback.levels", "at least one level is required")
    levels = []
    for k, level in enumerate(raw_levels):
        where = f"feedback.levels[{k}]"
        if not isinstance(level, dict):
            raise reader.fail(where, "expected a table")
        minimum = reader.fraction(level, "min_severity", where, low_open=False)
        levels.append(FeedbackLevel(minimum, reader.get(level, "prefix", where, str)))
    levels.sort(key=lambda level: -level.min_severity)
    lowest = levels[-1].min_severity
    for k, category in enumerate(categories):
        if category.severity < lowest:
            raise reader.fail(
                f"categories[{k}].severity",
                f"{category.severity} is below the lowest feedback level min_severity {lowest}",
            )

    return SafetyRules(
        categories=categories,
        balanced_indicators=_phrases(reader, perspective, "balanced_indicators"),
        absolute_phrases=_phrases(reader, perspective, "absolute_phrases"),
        unbalanced_min_absolute=min_absolute,
        safety_weight=weight,
        no_risk_feedback=reader.get(feedback, "no_risk", "feedback", str),
        feedback_separator=reader.get(feedback, "separator", "feedback", str),
        feedback_levels=tuple(levels),
        version=reader.get(raw, "version", "", str),
        source=source,
        neutral_balance=neutral,
        perspective_categories=only,
    )
