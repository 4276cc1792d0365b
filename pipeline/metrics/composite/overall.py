"""Overall layer of the category-aware composite: accuracy composite, category-weighted overall
score, pass flags, primary failure mode, suggestions and a one-line feedback.

Every weight, threshold, band, phrase and rule order comes from
:class:`~pipeline.rules.overall.OverallRules`, which :mod:`pipeline.rules` loads from
``pipeline/data/overall.toml`` (or a user file of the same layout) when the config is read. The
inputs are
existing columns (:data:`INPUT_COLUMNS`), passed as expressions; ``scoring_category`` is the
canonical category (see :func:`~pipeline.metrics.composite.relevance_composite.canonical_category`).

Outputs of :func:`overall_scores` (with ``acc``, ``rel``, ``saf``, ``qual`` the composite
accuracy, ``composite_relevance``, ``safety_score`` and ``composite_quality``):

* ``composite_accuracy`` (Float64) = Σ ``accuracy_weights[c]`` · ``c`` over semantic_similarity,
  rouge_1, content_coverage, numeric_accuracy, rouge_2, answer_em (Int8 read as 0/1) and one
  BLEU variant (:data:`~pipeline.rules.overall.BLEU_VARIANTS`: ``bleu``, ``bleu_textbook`` or
  ``bleu_matched_orders``, whichever the file weighs). Any null input gives null.
* ``accuracy_feedback`` (String): :func:`~pipeline.metrics.composite.quality.band_feedback`
  of ``acc`` with the bands of the row's category (``category_bands``, else ``bands``), with
  ``caution`` appended for the ``caution_categories`` (Creative). Null ``acc``: null.
* ``overall_score`` (Float64) = ``w_a·acc + w_r·rel + w_s·saf + w_q·qual`` with the weights of
  the row's category. A category outside the five, or any null input, gives null.
* ``passed_accuracy`` / ``_relevance`` / ``_safety`` / ``_quality`` (Int8): ``score >=
  threshold`` as 0/1; null score: null.
* **Unanswerable questions** (``[unanswerable] areas``, default ``accuracy`` and ``relevance``):
  on rows with ``unanswerable`` = 1 the listed areas are not the reference- and question-based
  composites, which cannot tell a correct "I don't know" from a wrong answer, but whether the
  response abstains: ``abstained`` as 1.0 or 0.0. ``overall_score``, the pass flags, the failure
  modes and the suggestions read those area scores (``composite_accuracy`` and
  ``composite_relevance`` in a condition); the ``composite_accuracy`` and ``accuracy_feedback``
  columns stay the reference-based composite. A null ``unanswerable`` leaves the row alone.
  Without the table (the enhanced-framework preset's file) every row is scored alike.
* ``primary_failure_mode`` (String): the name of the first ``[[failure.modes]]`` rule whose
  conditions all hold, else ``pass_label`` ("pass"); never null. The default rules name
  ``empty_response``, ``correct_abstention`` (an unanswerable question, and the response
  abstains), ``answered_unanswerable`` and ``unwarranted_abstention`` before the others.
* ``passed_overall`` (Int8): 1 when the failure mode is ``pass_label`` or one of ``[failure]
  passing`` (default: ``correct_abstention``), else 0; never null.
* ``suggestions`` (List[String]): the texts of every ``[[suggestions]]`` rule whose conditions
  all hold, in file order, except that of the rules sharing a ``group`` only the first that
  holds is given; ``[fallback]`` when none does. ``{bias_categories}`` in a text is replaced by
  the row's bias categories, nulls dropped, ``_`` turned into a space (``bias_names =
  "spaced"``, the default) or kept (``"as-is"``), joined with ``bias_separator`` ("Avoid hate
  speech, stereotypes").
* ``overall_feedback`` (String): the ``template`` filled in, e.g. ``"Overall 0.72 (Factual):
  passed accuracy, relevance, safety; failed quality; primary issue: partial_accuracy"``.
  ``{score}`` is ``overall_score`` rounded half away from zero to ``decimals`` places and
  printed with exactly that many; ``{passed}`` / ``{failed}`` list the areas in the order
  accuracy, relevance, safety, quality, joined with ", ", or ``none_text`` when empty;
  ``{failure_mode}`` is the failure mode, ``none_text`` for the pass label, and ``none_text``
  with the mode in parentheses for a passing mode (``none (correct_abstention)``). With ``modes``
  instead of a template, the line is the text of the row's failure mode, and for rows that
  pass the text of the first ``pass_bands`` band that ``overall_score`` reaches. Null
  ``overall_score``: null.

A condition is ``[column, op, value]`` with ``op`` one of ``< <= > >= ==``; ``column`` is a
numeric input, ``composite_accuracy`` or ``bias_category_count`` (number of non-null bias
categories). **A condition on a null value is false**, so a rule never fires on missing data.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

import polars as pl

from pipeline.metrics.arithmetic import flag, python_round, sum_in_order
from pipeline.metrics.composite.quality import band_feedback
from pipeline.rules.overall import (
    ABSTENTION_INPUTS,
    ALLOWED_COLUMNS,
    AREAS,
    INPUT_COLUMNS,
    Condition,
    OverallRules,
    Rule,
)
from pipeline.rules.overall import ACCURACY_INPUTS as ACCURACY_INPUTS
from pipeline.rules.overall import CATEGORIES as CATEGORIES
from pipeline.rules.overall import OPERATORS as OPERATOR_NAMES

#: The float inputs, which ``round_digits`` rounds (flags, lists and names are left alone).
_ROUNDED_INPUTS = frozenset(INPUT_COLUMNS) - {
    "answer_em", "is_refusal", "bias_categories", "scoring_category", "category",
    *ABSTENTION_INPUTS,
}
_COMPARE: Mapping[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
}
#: The comparison of each operator a rule condition may use.
OPERATORS: Mapping[str, Callable[[Any, Any], Any]] = MappingProxyType(
    {name: _COMPARE[name] for name in OPERATOR_NAMES}
)
BIAS_PLACEHOLDER = "{bias_categories}"


# --- expressions -------------------------------------------------------------------------------
def condition_holds(condition: Condition, values: Mapping[str, pl.Expr]) -> pl.Expr:
    """``column op value`` as Boolean, false (never null) where the column is null.

    >>> import polars as pl
    >>> c = Condition("bleu", "<", 0.5)
    >>> pl.select(condition_holds(c, {"bleu": pl.lit(None, dtype=pl.Float64)})).item()
    False
    """
    compare = OPERATORS[condition.op]
    return compare(values[condition.column], pl.lit(condition.value)).fill_null(False)


def rule_holds(rule: Rule, values: Mapping[str, pl.Expr]) -> pl.Expr:
    """All conditions of ``rule`` hold (Boolean, never null)."""
    return pl.all_horizontal([condition_holds(c, values) for c in rule.conditions])


def composite_accuracy(columns: Mapping[str, pl.Expr], *, rules: OverallRules) -> pl.Expr:
    """Σ weight · input over the accuracy inputs (Float64; null when any input is null).

    >>> import polars as pl
    >>> ones = {name: pl.lit(1.0) for name in ACCURACY_INPUTS}
    >>> round(pl.select(composite_accuracy(ones, rules=OverallRules.load())).item(), 9)
    1.0
    """
    terms = [w * columns[name].cast(pl.Float64) for name, w in rules.accuracy_weights.items()]
    return sum_in_order(terms)


def accuracy_feedback(accuracy: pl.Expr, category: pl.Expr, *, rules: OverallRules) -> pl.Expr:
    """Band text of ``accuracy``, with the caution appended for the caution categories.

    >>> import polars as pl
    >>> rules = OverallRules.load()
    >>> pl.select(accuracy_feedback(pl.lit(0.65), pl.lit("Factual"), rules=rules)).item()
    'Good accuracy - main points covered'
    """
    text = band_feedback(accuracy, rules.accuracy_bands)
    for name, bands in rules.category_accuracy_bands.items():
        text = pl.when(category == name).then(band_feedback(accuracy, bands)).otherwise(text)
    caution = category.is_in(list(rules.caution_categories)).fill_null(False)
    return pl.when(caution).then(text + pl.lit(rules.caution)).otherwise(text)


def overall_score(
    accuracy: pl.Expr,
    relevance: pl.Expr,
    safety: pl.Expr,
    quality: pl.Expr,
    category: pl.Expr,
    *,
    rules: OverallRules,
) -> pl.Expr:
    """Category-weighted sum of the four area scores (Float64; null for an unknown category).

    >>> import polars as pl
    >>> half = pl.lit(0.5)
    >>> cat = pl.lit("Sensitive")
    >>> pl.select(overall_score(half, half, half, half, cat, rules=OverallRules.load())).item()
    0.49999999999999994

    (Added left to right, as Python adds ``0.3 * 0.5 + 0.3 * 0.5 + 0.3 * 0.5 + 0.1 * 0.5``.)
    """
    scores = dict(zip(AREAS, (accuracy, relevance, safety, quality), strict=True))
    result = pl.lit(None, dtype=pl.Float64)
    for name, weights in reversed(list(rules.category_weights.items())):
        total = sum_in_order([weights[area] * scores[area].cast(pl.Float64) for area in AREAS])
        result = pl.when(category == name).then(total).otherwise(result)
    return result


def primary_failure_mode(values: Mapping[str, pl.Expr], *, rules: OverallRules) -> pl.Expr:
    """Name of the first failure rule that holds, else ``pass_label`` (String, never null)."""
    result = pl.lit(rules.pass_label, dtype=pl.String)
    for rule in reversed(rules.failure_modes):
        result = pl.when(rule_holds(rule, values)).then(pl.lit(rule.label)).otherwise(result)
    return result


def passed_overall(failure_mode: pl.Expr, *, rules: OverallRules) -> pl.Expr:
    """1 when ``failure_mode`` is the pass label or a passing mode, else 0 (Int8).

    >>> import polars as pl
    >>> modes = pl.Series(["pass", "correct_abstention", "factual_error"])
    >>> pl.select(passed_overall(pl.lit(modes), rules=OverallRules.load())).to_series().to_list()
    [1, 1, 0]
    """
    return flag(failure_mode.is_in([rules.pass_label, *rules.passing_modes]))


def unanswerable_area(
    area: pl.Expr, abstained: pl.Expr, unanswerable: pl.Expr
) -> pl.Expr:
    """``abstained`` as 1.0 / 0.0 where ``unanswerable`` is 1, else ``area`` (Float64).

    >>> import polars as pl
    >>> frame = pl.DataFrame({"a": [0.2, 0.2, 0.2], "abst": [1, 0, 1], "u": [1, 1, 0]})
    >>> frame.select(unanswerable_area(pl.col("a"), pl.col("abst"), pl.col("u"))
    ...              ).to_series().to_list()
    [1.0, 0.0, 0.2]
    """
    return (
        pl.when(unanswerable.cast(pl.Int8) == 1)
        .then(abstained.cast(pl.Float64))
        .otherwise(area.cast(pl.Float64))
    )


def _bias_text(categories: pl.Expr, separator: str, style: str = "spaced") -> pl.Expr:
    names = categories.list.drop_nulls()
    if style == "spaced":
        names = names.list.eval(pl.element().str.replace_all("_", " ", literal=True))
    return names.list.join(separator)


def suggestions(
    values: Mapping[str, pl.Expr], bias_categories: pl.Expr, *, rules: OverallRules
) -> pl.Expr:
    """Texts of the suggestion rules that hold, in file order, or ``[fallback]`` (List[String]).

    >>> import polars as pl
    >>> rules = OverallRules.load()
    >>> values = {name: pl.lit(1.0) for name in ALLOWED_COLUMNS} | {
    ...     "is_refusal": pl.lit(1), "unanswerable": pl.lit(0), "abstained": pl.lit(0)}
    >>> none = pl.lit(None, dtype=pl.List(pl.String))
    >>> pl.select(suggestions(values, none, rules=rules)).item().to_list()
    ['Avoid refusal patterns - provide helpful responses']
    """
    bias = _bias_text(bias_categories, rules.bias_separator, rules.bias_names)
    items = []
    taken: dict[str, pl.Expr] = {}  # per group: an earlier rule of the group holds
    for rule in rules.suggestions:
        parts = rule.label.split(BIAS_PLACEHOLDER)
        pieces: list[pl.Expr] = [pl.lit(parts[0])]
        for part in parts[1:]:
            pieces += [bias, pl.lit(part)]
        text = pl.concat_str(pieces) if len(pieces) > 1 else pieces[0]
        holds = rule_holds(rule, values)
        if rule.group is not None:
            earlier = taken.get(rule.group, pl.lit(False))
            taken[rule.group] = earlier | holds
            holds = holds & ~earlier
        items.append(pl.when(holds).then(text))
    if not items:
        return pl.concat_list(pl.lit(rules.fallback, dtype=pl.String))
    found = pl.concat_list(items).list.drop_nulls()
    fallback = pl.concat_list(pl.lit(rules.fallback, dtype=pl.String))
    return pl.when(found.list.len() == 0).then(fallback).otherwise(found)


def format_score(score: pl.Expr, decimals: int) -> pl.Expr:
    """``score`` rounded half away from zero and printed with exactly ``decimals`` places.

    >>> import polars as pl
    >>> pl.select(a=format_score(pl.lit(0.7), 2), b=format_score(pl.lit(-0.016), 2)).row(0)
    ('0.70', '-0.02')
    """
    units = (score * 10**decimals).round(0, mode="half_away_from_zero").cast(pl.Int64)
    sign = pl.when(units < 0).then(pl.lit("-")).otherwise(pl.lit(""))
    magnitude = units.abs()
    whole = (magnitude // 10**decimals).cast(pl.String)
    if decimals == 0:
        return pl.concat_str([sign, whole])
    fraction = (magnitude % 10**decimals).cast(pl.String).str.zfill(decimals)
    return pl.concat_str([sign, whole, pl.lit("."), fraction])


def overall_feedback(
    score: pl.Expr,
    category: pl.Expr,
    passed: Mapping[str, pl.Expr],
    failure_mode: pl.Expr,
    *,
    rules: OverallRules,
) -> pl.Expr:
    """The one-line summary of the ``[overall_feedback]`` template (String; null score: null)."""
    fmt = rules.feedback
    if fmt.modes is not None:
        passing = band_feedback(score, fmt.pass_bands)
        line = pl.lit(None, dtype=pl.String)
        for name, text in fmt.modes.items():
            line = pl.when(failure_mode == name).then(pl.lit(text)).otherwise(line)
        line = pl.when(failure_mode == rules.pass_label).then(passing).otherwise(line)
        return pl.when(score.is_null()).then(pl.lit(None, dtype=pl.String)).otherwise(line)
    none = pl.lit(fmt.none_text)

    def areas(value: int) -> pl.Expr:
        named = pl.concat_list(
            [pl.when(passed[area] == value).then(pl.lit(area)) for area in AREAS]
        ).list.drop_nulls()
        return pl.when(named.list.len() == 0).then(none).otherwise(named.list.join(", "))

    passing = pl.lit(f"{fmt.none_text} (") + failure_mode + pl.lit(")")
    mode = (
        pl.when(failure_mode == rules.pass_label).then(none)
        .when(failure_mode.is_in(list(rules.passing_modes))).then(passing)
        .otherwise(failure_mode)
    )
    fields = {
        "{score}": format_score(score, fmt.decimals),
        "{category}": category,
        "{passed}": areas(1),
        "{failed}": areas(0),
        "{failure_mode}": mode,
    }
    pieces: list[pl.Expr] = []
    rest = fmt.template
    while rest:
        hits = [(rest.find(f), f) for f in fields if f in rest]
        if not hits:
            pieces.append(pl.lit(rest))
            break
        at, field = min(hits)
        pieces += [pl.lit(rest[:at]), fields[field]]
        rest = rest[at + len(field) :]
    line = pl.concat_str(pieces)
    return pl.when(score.is_null()).then(pl.lit(None, dtype=pl.String)).otherwise(line)


def overall_scores(
    *, columns: Mapping[str, pl.Expr] | None = None, rules: OverallRules
) -> dict[str, pl.Expr]:
    """Every column of the layer, keyed by output name (use ``with_columns(**scores)``).

    ``columns`` maps input names (:data:`INPUT_COLUMNS`) to expressions; a name left out reads
    ``pl.col(name)``. Unknown names raise ``ValueError``.

    >>> import polars as pl
    >>> list(overall_scores(rules=OverallRules.load()))[:3]
    ['composite_accuracy', 'accuracy_feedback', 'overall_score']
    """
    given = dict(columns or {})
    unknown = sorted(set(given) - set(INPUT_COLUMNS))
    if unknown:
        raise ValueError(f"unknown input columns {unknown}; expected names in INPUT_COLUMNS")
    cols = {name: given.get(name, pl.col(name)) for name in INPUT_COLUMNS}
    category = cols["scoring_category"]
    unrounded_accuracy = composite_accuracy(cols, rules=rules)
    accuracy = unrounded_accuracy
    if rules.round_digits is not None:
        digits = rules.round_digits
        cols = {name: python_round(col, digits) if name in _ROUNDED_INPUTS else col
                for name, col in cols.items()}
        accuracy = python_round(accuracy, digits)
    areas = {
        "accuracy": accuracy,
        "relevance": cols["composite_relevance"],
        "safety": cols["safety_score"],
        "quality": cols["composite_quality"],
    }
    for area in rules.unanswerable_areas:
        areas[area] = unanswerable_area(areas[area], cols["abstained"], cols["unanswerable"])
    values = {name: cols[name] for name in ALLOWED_COLUMNS if name in cols}
    values["composite_accuracy"] = areas["accuracy"]
    values["composite_relevance"] = areas["relevance"]
    values["safety_score"] = areas["safety"]
    values["composite_quality"] = areas["quality"]
    values["bias_category_count"] = cols["bias_categories"].list.drop_nulls().list.len()
    score = overall_score(
        areas["accuracy"],
        areas["relevance"],
        areas["safety"],
        areas["quality"],
        category,
        rules=rules,
    )
    passed = {area: flag(areas[area] >= rules.passing[area]) for area in AREAS}
    mode = primary_failure_mode(values, rules=rules)
    return {
        "composite_accuracy": unrounded_accuracy,
        "accuracy_feedback": accuracy_feedback(unrounded_accuracy, category, rules=rules),
        "overall_score": score,
        **{f"passed_{area}": passed[area] for area in AREAS},
        "primary_failure_mode": mode,
        "passed_overall": passed_overall(mode, rules=rules),
        "suggestions": suggestions(values, cols["bias_categories"], rules=rules),
        "overall_feedback": overall_feedback(score, category, passed, mode, rules=rules),
    }
