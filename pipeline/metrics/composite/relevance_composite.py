"""Category-aware relevance: intent, refusal, depth and category bonuses folded into one score.

Every pattern, weight, range and threshold comes from a TOML rules file
(``pipeline/data/relevance.toml`` by default), loaded by :mod:`pipeline.rules` into
:class:`~pipeline.rules.relevance.RelevanceRules` when the config is read. Patterns are
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
  Words are those of ``[depth] word_unit``: ``\\w+(?:'\\w+)*`` runs by default, or the
  enhanced framework's punctuation-deleted whitespace words (``whitespace``).
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

from collections.abc import Mapping
from typing import Any

import polars as pl

from pipeline.metrics.arithmetic import flag, sum_in_order
from pipeline.rules.relevance import COMPOSITE_INPUTS, RelevanceRules, any_pattern
from pipeline.text.tokenize import punctuation_deleted_words

WORD = r"\w+(?:'\w+)*"


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
    if rules.depth_word_unit == "whitespace":
        n = punctuation_deleted_words(response).list.len().cast(pl.Float64)
    else:
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
        value = sum_in_order(terms) if terms else pl.lit(0.0)
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
    raw = sum_in_order([*weighted, adjustment])
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
