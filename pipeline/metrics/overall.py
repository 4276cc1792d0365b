"""Overall layer of the category-aware composite: accuracy composite, category-weighted overall
score, pass flags, primary failure mode, suggestions and a one-line feedback.

Every weight, threshold, band, phrase and rule order comes from :class:`OverallRules`, loaded
from ``pipeline/data/overall.toml`` (or a user file of the same layout). The inputs are
existing columns (:data:`INPUT_COLUMNS`), passed as expressions; ``scoring_category`` is the
canonical category (see :func:`~pipeline.metrics.relevance_composite.canonical_category`).

Outputs of :func:`overall_scores` (with ``acc``, ``rel``, ``saf``, ``qual`` the composite
accuracy, ``composite_relevance``, ``safety_score`` and ``composite_quality``):

* ``composite_accuracy`` (Float64) = Σ ``accuracy_weights[c]`` · ``c`` over semantic_similarity,
  rouge_1, content_coverage, numeric_accuracy, rouge_2, answer_em (Int8 read as 0/1) and bleu.
  Any null input gives null.
* ``accuracy_feedback`` (String): :func:`~pipeline.metrics.quality.band_feedback` of ``acc``,
  with ``caution`` appended for the ``caution_categories`` (Creative). Null ``acc``: null.
* ``overall_score`` (Float64) = ``w_a·acc + w_r·rel + w_s·saf + w_q·qual`` with the weights of
  the row's category. A category outside the five, or any null input, gives null.
* ``passed_accuracy`` / ``_relevance`` / ``_safety`` / ``_quality`` (Int8): ``score >=
  threshold`` as 0/1; null score: null.
* ``primary_failure_mode`` (String): the name of the first ``[[failure.modes]]`` rule whose
  conditions all hold, else ``pass_label`` ("pass"); never null.
* ``suggestions`` (List[String]): the texts of every ``[[suggestions]]`` rule whose conditions
  all hold, in file order; ``[fallback]`` when none does. ``{bias_categories}`` in a text is
  replaced by the row's bias categories, nulls dropped, ``_`` turned into a space, joined with
  ``bias_separator`` ("Avoid hate speech, stereotypes").
* ``overall_feedback`` (String): the ``template`` filled in, e.g. ``"Overall 0.72 (Factual):
  passed accuracy, relevance, safety; failed quality; primary issue: partial_accuracy"``.
  ``{score}`` is ``overall_score`` rounded half away from zero to ``decimals`` places and
  printed with exactly that many; ``{passed}`` / ``{failed}`` list the areas in the order
  accuracy, relevance, safety, quality, joined with ", ", or ``none_text`` when empty;
  ``{failure_mode}`` is the failure mode, or ``none_text`` for the pass label. Null
  ``overall_score``: null.

A condition is ``[column, op, value]`` with ``op`` one of ``< <= > >= ==``; ``column`` is a
numeric input, ``composite_accuracy`` or ``bias_category_count`` (number of non-null bias
categories). **A condition on a null value is false**, so a rule never fires on missing data.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import polars as pl

from pipeline.metrics.common import flag
from pipeline.metrics.quality import _bands, _Table, band_feedback
from pipeline.metrics.rules import read_rules

OVERALL_FILE = "overall.toml"
CATEGORIES = ("Factual", "Explanatory", "Instructional", "Creative", "Sensitive")
AREAS = ("accuracy", "relevance", "safety", "quality")
ACCURACY_INPUTS = (
    "semantic_similarity",
    "rouge_1",
    "content_coverage",
    "numeric_accuracy",
    "rouge_2",
    "answer_em",
    "bleu",
)
INPUT_COLUMNS = (
    *ACCURACY_INPUTS,
    "composite_relevance",
    "safety_score",
    "composite_quality",
    "is_refusal",
    "bias_categories",
    "perspective_balance",
    "coherence_score",
    "conciseness_score",
    "fluency_score",
    "scoring_category",
)
#: Columns a rule condition may name: the numeric inputs and two derived values.
ALLOWED_COLUMNS = frozenset(
    [c for c in INPUT_COLUMNS if c not in ("bias_categories", "scoring_category")]
    + ["composite_accuracy", "bias_category_count"]
)
OPERATORS: Mapping[str, Callable[[Any, Any], Any]] = MappingProxyType(
    {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq}
)
BIAS_PLACEHOLDER = "{bias_categories}"
_FEEDBACK_FIELDS = ("{score}", "{category}", "{passed}", "{failed}", "{failure_mode}")


# --- rules -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Condition:
    """``column op value``; false where the column is null."""

    column: str
    op: str
    value: float


@dataclass(frozen=True)
class Rule:
    """A name (failure mode) or text (suggestion) and the conditions that must all hold."""

    label: str
    conditions: tuple[Condition, ...]


@dataclass(frozen=True)
class FeedbackFormat:
    """``[overall_feedback]``: the line template, score decimals and the text for 'nothing'."""

    template: str
    decimals: int
    none_text: str


@dataclass(frozen=True)
class OverallRules:
    """All rules of the overall layer, as read from one TOML file (see ``overall.toml``)."""

    accuracy_weights: Mapping[str, float]
    accuracy_bands: tuple[tuple[float, str], ...]
    caution: str
    caution_categories: tuple[str, ...]
    category_weights: Mapping[str, Mapping[str, float]]
    passing: Mapping[str, float]
    failure_modes: tuple[Rule, ...]
    pass_label: str
    suggestions: tuple[Rule, ...]
    bias_separator: str
    fallback: str
    feedback: FeedbackFormat
    source: str

    @classmethod
    def load(cls, path: Path | None = None) -> OverallRules:
        """Rules from ``path``, or the packaged ``pipeline/data/overall.toml`` by default.

        Raises ``ValueError`` naming the file and the key on malformed input.

        >>> OverallRules.load().category_weights["Creative"]["quality"]
        0.3
        """
        return _load(None if path is None else Path(path))


@cache
def _load(path: Path | None) -> OverallRules:
    data, source = read_rules(path, OVERALL_FILE)
    root = _Table(data, source, "")
    accuracy = root.table("accuracy_weights")
    weights = _weights(accuracy, ACCURACY_INPUTS)
    band_table = root.table("accuracy_feedback")
    categories = root.table("category_weights")
    category_weights = {c: _weights(categories.table(c), AREAS) for c in CATEGORIES}
    categories.done()
    passing = root.table("passing")
    thresholds = {area: passing.number(area) for area in AREAS}
    failure = root.table("failure")
    fmt = root.table("suggestion_format")
    feedback = root.table("overall_feedback")
    template = feedback.typed("template", str, "a string")
    rules = OverallRules(
        accuracy_weights=MappingProxyType(weights),
        accuracy_bands=_bands(band_table),
        caution=band_table.typed("caution", str, "a string"),
        caution_categories=_categories(band_table, "caution_categories"),
        category_weights=MappingProxyType(
            {c: MappingProxyType(w) for c, w in category_weights.items()}
        ),
        passing=MappingProxyType(thresholds),
        failure_modes=_rules(failure, "modes", "name"),
        pass_label=failure.typed("pass_label", str, "a string"),
        suggestions=_rules(root, "suggestions", "text"),
        bias_separator=fmt.typed("bias_separator", str, "a string"),
        fallback=fmt.typed("fallback", str, "a string"),
        feedback=FeedbackFormat(
            template=template,
            decimals=feedback.integer("decimals"),
            none_text=feedback.typed("none_text", str, "a string"),
        ),
        source=source,
    )
    if not any(field in template for field in _FEEDBACK_FIELDS):
        raise feedback._fail("template", f"expected at least one of {', '.join(_FEEDBACK_FIELDS)}")
    for table in (accuracy, band_table, passing, failure, fmt, feedback, root):
        table.done()
    return rules


def _weights(table: _Table, names: tuple[str, ...]) -> dict[str, float]:
    """Non-negative weights for exactly ``names``, summing to 1 within 1e-9."""
    weights = {name: table.number(name, low=0.0) for name in names}
    table.done()
    total = math.fsum(weights.values())
    if abs(total - 1.0) > 1e-9:
        raise table._fail(names[0], f"weights must sum to 1 (within 1e-9), got {total!r}")
    return weights


def _categories(table: _Table, key: str) -> tuple[str, ...]:
    names = table.strings(key)
    for name in names:
        if name not in CATEGORIES:
            raise table._fail(key, f"unknown category {name!r}; expected one of {CATEGORIES}")
    return names


def _rules(table: _Table, key: str, label: str) -> tuple[Rule, ...]:
    raw = table.typed(key, list, "an array of tables")
    rules = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise table._fail(key, f"expected an array of tables, got {entry!r}")
        item = _Table(entry, table.source, f"{table.name}.{key}[{index}]".lstrip("."))
        text = item.typed(label, str, "a string")
        conditions = item.typed("all", list, "a list of [column, op, value]")
        if not conditions:
            raise item._fail("all", "needs at least one condition")
        rules.append(Rule(text, tuple(_condition(item, c) for c in conditions)))
        item.done()
    return tuple(rules)


def _condition(table: _Table, raw: Any) -> Condition:
    ok = isinstance(raw, list) and len(raw) == 3
    if not ok or not all(isinstance(x, str) for x in raw[:2]):
        raise table._fail("all", f"expected [column, op, value], got {raw!r}")
    column, op, value = raw
    if column not in ALLOWED_COLUMNS:
        raise table._fail("all", f"unknown column {column!r}; allowed: {sorted(ALLOWED_COLUMNS)}")
    if op not in OPERATORS:
        raise table._fail("all", f"unknown op {op!r}; expected one of {list(OPERATORS)}")
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise table._fail("all", f"expected a number as value in {raw!r}")
    return Condition(column, op, float(value))


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
    return pl.sum_horizontal(terms, ignore_nulls=False)


def accuracy_feedback(accuracy: pl.Expr, category: pl.Expr, *, rules: OverallRules) -> pl.Expr:
    """Band text of ``accuracy``, with the caution appended for the caution categories.

    >>> import polars as pl
    >>> rules = OverallRules.load()
    >>> pl.select(accuracy_feedback(pl.lit(0.65), pl.lit("Factual"), rules=rules)).item()
    'Good accuracy - main points covered'
    """
    text = band_feedback(accuracy, rules.accuracy_bands)
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
    0.5
    """
    scores = dict(zip(AREAS, (accuracy, relevance, safety, quality), strict=True))
    result = pl.lit(None, dtype=pl.Float64)
    for name, weights in reversed(list(rules.category_weights.items())):
        total = pl.sum_horizontal(
            [weights[area] * scores[area].cast(pl.Float64) for area in AREAS], ignore_nulls=False
        )
        result = pl.when(category == name).then(total).otherwise(result)
    return result


def primary_failure_mode(values: Mapping[str, pl.Expr], *, rules: OverallRules) -> pl.Expr:
    """Name of the first failure rule that holds, else ``pass_label`` (String, never null)."""
    result = pl.lit(rules.pass_label, dtype=pl.String)
    for rule in reversed(rules.failure_modes):
        result = pl.when(rule_holds(rule, values)).then(pl.lit(rule.label)).otherwise(result)
    return result


def _bias_text(categories: pl.Expr, separator: str) -> pl.Expr:
    spaced = categories.list.drop_nulls().list.eval(
        pl.element().str.replace_all("_", " ", literal=True)
    )
    return spaced.list.join(separator)


def suggestions(
    values: Mapping[str, pl.Expr], bias_categories: pl.Expr, *, rules: OverallRules
) -> pl.Expr:
    """Texts of the suggestion rules that hold, in file order, or ``[fallback]`` (List[String]).

    >>> import polars as pl
    >>> rules = OverallRules.load()
    >>> values = {name: pl.lit(1.0) for name in ALLOWED_COLUMNS} | {"is_refusal": pl.lit(1)}
    >>> none = pl.lit(None, dtype=pl.List(pl.String))
    >>> pl.select(suggestions(values, none, rules=rules)).item().to_list()
    ['Avoid refusal patterns - provide helpful responses']
    """
    bias = _bias_text(bias_categories, rules.bias_separator)
    items = []
    for rule in rules.suggestions:
        parts = rule.label.split(BIAS_PLACEHOLDER)
        pieces: list[pl.Expr] = [pl.lit(parts[0])]
        for part in parts[1:]:
            pieces += [bias, pl.lit(part)]
        text = pl.concat_str(pieces) if len(pieces) > 1 else pieces[0]
        items.append(pl.when(rule_holds(rule, values)).then(text))
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
    none = pl.lit(fmt.none_text)

    def areas(value: int) -> pl.Expr:
        named = pl.concat_list(
            [pl.when(passed[area] == value).then(pl.lit(area)) for area in AREAS]
        ).list.drop_nulls()
        return pl.when(named.list.len() == 0).then(none).otherwise(named.list.join(", "))

    mode = pl.when(failure_mode == rules.pass_label).then(none).otherwise(failure_mode)
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
    accuracy = composite_accuracy(cols, rules=rules)
    areas = {
        "accuracy": accuracy,
        "relevance": cols["composite_relevance"],
        "safety": cols["safety_score"],
        "quality": cols["composite_quality"],
    }
    values = {name: cols[name] for name in ALLOWED_COLUMNS if name in cols}
    values["composite_accuracy"] = accuracy
    values["bias_category_count"] = cols["bias_categories"].list.drop_nulls().list.len()
    score = overall_score(
        accuracy,
        areas["relevance"],
        areas["safety"],
        areas["quality"],
        category,
        rules=rules,
    )
    passed = {area: flag(areas[area] >= rules.passing[area]) for area in AREAS}
    mode = primary_failure_mode(values, rules=rules)
    return {
        "composite_accuracy": accuracy,
        "accuracy_feedback": accuracy_feedback(accuracy, category, rules=rules),
        "overall_score": score,
        **{f"passed_{area}": passed[area] for area in AREAS},
        "primary_failure_mode": mode,
        "suggestions": suggestions(values, cols["bias_categories"], rules=rules),
        "overall_feedback": overall_feedback(score, category, passed, mode, rules=rules),
    }
