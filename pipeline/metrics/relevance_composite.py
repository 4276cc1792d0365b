"""Category-aware relevance: intent, refusal, depth and category bonuses folded into one score.

Every pattern, weight, range and threshold comes from a TOML rules file
(``pipeline/data/relevance.toml`` by default, see :meth:`RelevanceRules.load`). Patterns are
matched case-insensitively (``(?i)`` is prepended) by polars' Rust regex engine; a pattern list
matches when any of its patterns does.

Categories: the category text is stripped and lowercased, then looked up among the canonical
names and the aliases (``instruction`` -> ``Instructional``). Unknown and null categories fall
back to the default category (``Factual``); :func:`category_is_known` flags them with 0.

Scores (Float64 unless stated), with ``R`` the response and ``Q`` the question:

* ``intent_match``: the question's intent is the *first* intent, in file order, with a matching
  question pattern; 1.0 when that intent's response patterns match ``R``, else 0.5 (also when
  no intent is detected).
* ``refusal_score``: 1.0 when a refusal pattern matches ``R``, else 0.0;
  ``is_refusal`` (Int8) = ``refusal_score > threshold``.
* ``depth_score``: with ``n`` the word count of ``R`` and ``[L_min, L_max]`` the category's
  range: 1.0 inside the range, ``n / L_min`` below, ``L_max / n`` above, 0.0 for 0 words.
* ``step_completeness = min(1, steps / divisor)`` where steps = occurrences of the step words
  plus numbered items (``1.``, ``2)``); both counts add, so "Step 1. Mix" is two steps.
  Computed for every row; only Instructional rows use it in the adjustment.
* ``creativity_score = min(1, w · indicators + bonus · [distinct words > threshold])``, where
  indicators = number of indicator *families* with a match (repeating one family adds nothing).
  The issue's literal ``0.25 · distinct_words`` would saturate whenever it applies, so the
  distinct-word term is a fixed bonus. Computed for every row; only Creative rows use it.
* ``relevance_adjustment`` = Σ weight · component over the category's adjustment entries
  (0.3 · step_completeness for Instructional, 0.2 · creativity_score for Creative, else 0).
* ``composite_relevance = clamp01(Σ w_i · input_i + adjustment − penalty · refusal_score)``
  over semantic_relevance, tfidf_relevance, keyword_overlap and intent_match.
* ``relevance_feedback`` (String): the label of the first band whose ``min`` the composite
  reaches.

Words are ``\\w+(?:'\\w+)*`` runs ("don't" is one word); distinct words compare lowercased.
Nulls: a null question gives a null ``intent_match``; a null response gives null for every
response score; any null input makes the adjustment, composite and feedback null.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import polars as pl

from pipeline.metrics.common import flag
from pipeline.metrics.rules import read_rules

RULES_FILE = "relevance.toml"
WORD = r"\w+(?:'\w+)*"
ADJUSTABLE = ("step_completeness", "creativity_score")
COMPOSITE_INPUTS = ("semantic_relevance", "tfidf_relevance", "keyword_overlap", "intent_match")
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

    @staticmethod
    def load(path: Path | None = None) -> RelevanceRules:
        """Rules from a TOML file, the packaged ``relevance.toml`` by default.

        Raises ``ValueError`` naming the file and the key for a malformed file.

        >>> RelevanceRules.load().default_category
        'Factual'
        """
        return _load(None if path is None else Path(path))

    @property
    def step_pattern(self) -> str:
        """One regex matching any step word (spaces in phrases match any whitespace run)."""
        words = "|".join(word.replace(" ", r"\s+") for word in self.step_words)
        return rf"(?i)\b(?:{words})\b"


def any_pattern(patterns: Sequence[str]) -> str:
    """One case-insensitive regex matching where any of ``patterns`` matches."""
    return "(?i)" + "|".join(f"(?:{p})" for p in patterns)


# --- loading ---------------------------------------------------------------------------------
class _Reader:
    """Typed access to a parsed TOML document with errors naming the file and the key."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, key: str, message: str) -> ValueError:
        return ValueError(f"{self.source}: key {key!r}: {message}")

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


@cache
def _load(path: Path | None) -> RelevanceRules:
    doc, source = read_rules(path, RULES_FILE)
    r = _Reader(source)

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
    )


# --- expressions -----------------------------------------------------------------------------
def _null_where_null(expr: pl.Expr, *inputs: pl.Expr) -> pl.Expr:
    """``expr``, but null wherever any input is null (``when`` would treat null as false)."""
    any_null = pl.any_horizontal(*(i.is_null() for i in inputs))
    return pl.when(any_null).then(None).otherwise(expr)


def _lookup_key(category: pl.Expr) -> pl.Expr:
    return category.str.strip_chars().str.to_lowercase()


def _canonical_or_null(category: pl.Expr, rules: RelevanceRules) -> pl.Expr:
    table = {name.lower(): name for name in rules.categories} | dict(rules.aliases)
    return _lookup_key(category).replace_strict(
        list(table), list(table.values()), default=None, return_dtype=pl.String
    )


def canonical_category(category: pl.Expr, *, rules: RelevanceRules) -> pl.Expr:
    """Canonical category name: names and aliases matched stripped and case-insensitively;
    unknown or null categories give ``rules.default_category``.

    >>> import polars as pl
    >>> rules = RelevanceRules.load()
    >>> pl.select(canonical_category(pl.lit(" instruction "), rules=rules)).item()
    'Instructional'
    """
    return _canonical_or_null(category, rules).fill_null(rules.default_category)


def category_is_known(category: pl.Expr, *, rules: RelevanceRules) -> pl.Expr:
    """1 when the category is a known name or alias, 0 when it falls back (null too), Int8."""
    return flag(_canonical_or_null(category, rules).is_not_null())


def intent_match(question: pl.Expr, response: pl.Expr, *, rules: RelevanceRules) -> pl.Expr:
    """1.0 when the response matches the question's intent (first in file order whose question
    patterns match), else 0.5 (no intent detected included); null for a null question."""
    expr: Any = pl
    for intent in rules.intents:
        answered = response.str.contains(any_pattern(intent.response)).fill_null(False)
        expr = expr.when(question.str.contains(any_pattern(intent.question))).then(
            pl.when(answered).then(1.0).otherwise(0.5)
        )
    scored = pl.lit(0.5) if expr is pl else expr.otherwise(0.5)
    return _null_where_null(scored.cast(pl.Float64), question)


def refusal_score(response: pl.Expr, *, rules: RelevanceRules) -> pl.Expr:
    """1.0 when a refusal pattern matches the response, else 0.0 (null stays null)."""
    return response.str.contains(any_pattern(rules.refusal_patterns)).cast(pl.Float64)


def word_count(text: pl.Expr) -> pl.Expr:
    r"""Number of ``\w+(?:'\w+)*`` words (UInt32)."""
    return text.str.count_matches(WORD)


def depth_score(response: pl.Expr, category: pl.Expr, *, rules: RelevanceRules) -> pl.Expr:
    """1.0 inside the category's word range, n/L_min below, L_max/n above, 0.0 for no words.

    >>> import polars as pl
    >>> rules = RelevanceRules.load()
    >>> pl.select(depth_score(pl.lit("one two"), pl.lit("Factual"), rules=rules)).item()
    0.2
    """
    canonical = canonical_category(category, rules=rules)
    names = list(rules.length_ranges)
    low = canonical.replace_strict(
        names, [r[0] for r in rules.length_ranges.values()], return_dtype=pl.Float64
    )
    high = canonical.replace_strict(
        names, [r[1] for r in rules.length_ranges.values()], return_dtype=pl.Float64
    )
    n = word_count(response).cast(pl.Float64)
    scored = (
        pl.when(n == 0).then(0.0).when(n < low).then(n / low).when(n > high).then(high / n)
        .otherwise(1.0)
    )
    return _null_where_null(scored, response)


def step_count(response: pl.Expr, *, rules: RelevanceRules) -> pl.Expr:
    """Step-word occurrences plus numbered items (UInt32)."""
    return response.str.count_matches(rules.step_pattern) + response.str.count_matches(
        rules.numbered_item
    )


def step_completeness(response: pl.Expr, *, rules: RelevanceRules) -> pl.Expr:
    """``min(1, steps / divisor)`` for every row (Float64)."""
    steps = step_count(response, rules=rules).cast(pl.Float64)
    return (steps / rules.step_divisor).clip(upper_bound=1.0)


def creativity_score(response: pl.Expr, *, rules: RelevanceRules) -> pl.Expr:
    """``min(1, w · matching families + bonus · [distinct words > threshold])`` (Float64)."""
    families = [
        response.str.contains(any_pattern(patterns)).cast(pl.Float64)
        for patterns in rules.indicator_families.values()
    ]
    indicators = pl.sum_horizontal(families) if families else pl.lit(0.0)
    distinct = response.str.to_lowercase().str.extract_all(WORD).list.n_unique()
    bonus = (distinct > rules.distinct_word_threshold).cast(pl.Float64)
    score = rules.indicator_weight * indicators + rules.distinct_word_bonus * bonus
    return _null_where_null(score.clip(upper_bound=1.0), response)


def relevance_adjustment(
    category: pl.Expr, components: Mapping[str, pl.Expr], *, rules: RelevanceRules
) -> pl.Expr:
    """Σ weight · component over the category's adjustment entries, 0.0 for other categories.

    ``components`` maps ``step_completeness`` and ``creativity_score`` to their expressions.
    """
    canonical = canonical_category(category, rules=rules)
    expr: Any = pl
    for name, weights in rules.adjustment.items():
        terms = [weight * components[c] for c, weight in weights.items()]
        value = pl.sum_horizontal(terms, ignore_nulls=False) if terms else pl.lit(0.0)
        expr = expr.when(canonical == name).then(value)
    return pl.lit(0.0) if expr is pl else expr.otherwise(0.0)


def relevance_feedback(composite: pl.Expr, *, rules: RelevanceRules) -> pl.Expr:
    """The label of the first feedback band whose ``min`` the score reaches (String)."""
    expr: Any = pl.when(composite.is_null()).then(pl.lit(None, dtype=pl.String))
    for low, label in rules.feedback[:-1]:
        expr = expr.when(composite >= low).then(pl.lit(label))
    return expr.otherwise(pl.lit(rules.feedback[-1][1]))


def is_refusal(refusal: pl.Expr, *, rules: RelevanceRules) -> pl.Expr:
    """1 where ``refusal`` exceeds the configured threshold (Int8)."""
    return flag(refusal > rules.refusal_threshold)


def composite_relevance(
    components: Mapping[str, pl.Expr], adjustment: pl.Expr, refusal: pl.Expr, *,
    rules: RelevanceRules,
) -> pl.Expr:
    """clamp01(sum of weighted ``components`` (keys: :data:`COMPOSITE_INPUTS`) + ``adjustment``
    − refusal penalty × ``refusal``); null when any input is null."""
    weighted = [
        rules.composite_weights[name] * components[name].cast(pl.Float64)
        for name in COMPOSITE_INPUTS
    ]
    raw = pl.sum_horizontal([*weighted, adjustment], ignore_nulls=False)
    return (raw - rules.refusal_penalty * refusal).clip(0.0, 1.0)


def relevance_scores(
    question: pl.Expr,
    response: pl.Expr,
    category: pl.Expr,
    semantic_relevance: pl.Expr,
    tfidf_relevance: pl.Expr,
    keyword_overlap: pl.Expr,
    *,
    rules: RelevanceRules,
) -> dict[str, pl.Expr]:
    """All relevance columns (names as keys, aliased), as the module docstring defines them.

    >>> import polars as pl
    >>> cols = relevance_scores(
    ...     pl.lit("Hello!"), pl.lit("Hi there, nice to meet you."), pl.lit("Factual"),
    ...     pl.lit(0.5), pl.lit(0.5), pl.lit(0.5), rules=RelevanceRules.load(),
    ... )
    >>> round(pl.select(cols["composite_relevance"]).item(), 9)
    0.6
    """
    intent = intent_match(question, response, rules=rules)
    refusal = refusal_score(response, rules=rules)
    steps = step_completeness(response, rules=rules)
    creativity = creativity_score(response, rules=rules)
    adjustment = relevance_adjustment(
        category, {"step_completeness": steps, "creativity_score": creativity}, rules=rules
    )
    values = (semantic_relevance, tfidf_relevance, keyword_overlap, intent)
    composite = composite_relevance(
        dict(zip(COMPOSITE_INPUTS, values, strict=True)), adjustment, refusal, rules=rules
    )
    composite = _null_where_null(composite, question, response)
    columns = {
        "intent_match": intent,
        "refusal_score": refusal,
        "is_refusal": is_refusal(refusal, rules=rules),
        "depth_score": depth_score(response, category, rules=rules),
        "step_completeness": steps,
        "creativity_score": creativity,
        "relevance_adjustment": _null_where_null(adjustment, response),
        "composite_relevance": composite,
        "relevance_feedback": relevance_feedback(composite, rules=rules),
    }
    return {name: expr.alias(name) for name, expr in columns.items()}
