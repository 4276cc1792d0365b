"""Rules of the overall layer (``pipeline/data/overall.toml`` or a user file of that layout):
accuracy weights and bands, category weights, pass thresholds, failure-mode and suggestion
rules, and the feedback template. The expressions are in
:mod:`pipeline.metrics.composite.overall`, whose docstring states what each rule means."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pipeline.rules.files import OVERALL_FILE, parse_toml, read_bytes
from pipeline.rules.table import Table, bands

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
#: The BLEU variants ``[accuracy_weights]`` may weigh (exactly one of them): sacreBLEU, the
#: textbook BLEU with floored zero precisions, and BLEU over the matching orders (the enhanced
#: framework's reference output; see docs/compat.md).
BLEU_VARIANTS = ("bleu", "bleu_textbook", "bleu_matched_orders")
INPUT_COLUMNS = (
    *ACCURACY_INPUTS,
    *(name for name in BLEU_VARIANTS if name not in ACCURACY_INPUTS),
    "composite_relevance",
    "safety_score",
    "composite_quality",
    "is_refusal",
    "refusal_score",
    "intent_match",
    "bias_categories",
    "perspective_balance",
    "coherence_score",
    "conciseness_score",
    "fluency_score",
    "scoring_category",
    "abstained",
    "unanswerable",
    "empty_response",
    # Where the answer failed (docs/retrieval.md): rules may name the retrieval and grounding
    # stages.
    "answer_in_context",
    "answer_str_em",
    "hallucination",
)
#: The 0/1 flags among the inputs that say whether an answer was owed and given (the abstention
#: family): rule conditions may name them, and ``[unanswerable]`` reads the first two.
ABSTENTION_INPUTS = ("abstained", "unanswerable", "empty_response")
#: Columns a rule condition may name: the numeric inputs and two derived values.
ALLOWED_COLUMNS = frozenset(
    [c for c in INPUT_COLUMNS if c not in ("bias_categories", "scoring_category")]
    + ["composite_accuracy", "bias_category_count"]
)
#: Comparison operators of a rule condition.
OPERATORS: tuple[str, ...] = ("<", "<=", ">", ">=", "==")
#: Fields of the ``[overall_feedback]`` template.
FEEDBACK_FIELDS = ("{score}", "{category}", "{passed}", "{failed}", "{failure_mode}")
#: ``[suggestion_format] bias_names``: category names with ``_`` turned into spaces, or as-is.
BIAS_NAME_STYLES = ("spaced", "as-is")


@dataclass(frozen=True)
class Condition:
    """``column op value``; false where the column is null."""

    column: str
    op: str
    value: float


@dataclass(frozen=True)
class Rule:
    """A name (failure mode) or text (suggestion) and the conditions that must all hold; of
    the suggestions sharing a ``group``, only the first that holds is given."""

    label: str
    conditions: tuple[Condition, ...]
    group: str | None = None


@dataclass(frozen=True)
class FeedbackFormat:
    """``[overall_feedback]``: the line template, score decimals and the text for 'nothing';
    or, with ``modes``, a fixed text per failure mode and ``pass_bands`` (``(threshold, text)``
    on ``overall_score``) for rows that pass."""

    template: str
    decimals: int
    none_text: str
    modes: Mapping[str, str] | None = None
    pass_bands: tuple[tuple[float, str], ...] = ()


@dataclass(frozen=True)
class OverallRules:
    """All rules of the overall layer, as read from one TOML file (see ``overall.toml``)."""

    accuracy_weights: Mapping[str, float]
    accuracy_bands: tuple[tuple[float, str], ...]
    #: Bands of ``[accuracy_feedback.category_bands]`` that replace ``accuracy_bands`` for
    #: their category.
    category_accuracy_bands: Mapping[str, tuple[tuple[float, str], ...]]
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
    #: ``[suggestion_format] bias_names``, one of :data:`BIAS_NAME_STYLES`.
    bias_names: str = "spaced"
    #: ``[inputs] round_digits``: when set, the layer reads its inputs (and composite accuracy)
    #: rounded to this many decimals, as Python's ``round``, the way the enhanced framework
    #: passes its rounded result dictionaries on; the accuracy feedback still reads the
    #: unrounded composite accuracy. None (the default): inputs as they are.
    round_digits: int | None = None
    #: ``[failure] passing``: failure modes that count as a pass (``passed_overall`` = 1), such
    #: as ``correct_abstention``. Empty (the default): only ``pass_label`` passes.
    passing_modes: tuple[str, ...] = ()
    #: ``[unanswerable] areas``: on rows whose question is unanswerable (``unanswerable`` = 1)
    #: these areas score whether the response abstains (``abstained``: 1.0 or 0.0) instead of
    #: their composite. Empty (the default): every row is scored alike.
    unanswerable_areas: tuple[str, ...] = ()

    @property
    def bleu_input(self) -> str:
        """The BLEU variant that ``composite_accuracy`` weighs."""
        return next(name for name in self.accuracy_weights if name in BLEU_VARIANTS)

    @classmethod
    def load(cls, path: Path | None = None) -> OverallRules:
        """Rules from ``path``, or the packaged ``pipeline/data/overall.toml`` by default.

        Raises :class:`~pipeline.rules.files.RuleFileError` (a ``ValueError``) naming the file
        and the key on malformed input.

        >>> OverallRules.load().category_weights["Creative"]["quality"]
        0.3
        """
        return from_bytes(*read_bytes(None if path is None else Path(path), OVERALL_FILE))


@cache
def from_bytes(data: bytes, source: str) -> OverallRules:
    """The rules in ``data`` (the bytes of the file named ``source``), parsed once per content."""
    return parse(parse_toml(data, source), source)


def parse(data: Mapping[str, Any], source: str) -> OverallRules:
    """Typed, validated rules from a parsed overall TOML document."""
    root = Table(data, source, "")
    accuracy = root.table("accuracy_weights")
    weights = _weights(accuracy, _accuracy_names(accuracy))
    band_table = root.table("accuracy_feedback")
    categories = root.table("category_weights")
    category_weights = {c: _weights(categories.table(c), AREAS) for c in CATEGORIES}
    categories.done()
    passing = root.table("passing")
    thresholds = {area: passing.number(area) for area in AREAS}
    failure = root.table("failure")
    fmt = root.table("suggestion_format")
    feedback = root.table("overall_feedback")
    feedback_format = _feedback_format(feedback)
    rules = OverallRules(
        accuracy_weights=MappingProxyType(weights),
        accuracy_bands=bands(band_table),
        category_accuracy_bands=MappingProxyType(_category_bands(band_table)),
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
        feedback=feedback_format,
        source=source,
        bias_names=_bias_names(fmt),
        round_digits=_round_digits(root),
        passing_modes=_passing_modes(failure),
        unanswerable_areas=_unanswerable_areas(root),
    )
    modes = {rule.label for rule in rules.failure_modes}
    for mode in rules.passing_modes:
        if mode not in modes:
            raise failure.fail("passing", f"{mode!r} is no failure mode name")
    for mode in sorted(set(feedback_format.modes or {}) - modes - {rules.pass_label}):
        raise feedback.fail("modes", f"{mode!r} is no failure mode name")
    missing = sorted(modes - set(feedback_format.modes or modes))
    if missing:
        raise feedback.fail("modes", f"no text for the failure mode {missing[0]!r}")
    for table in (accuracy, band_table, passing, failure, fmt, feedback, root):
        table.done()
    return rules


def _accuracy_names(table: Table) -> tuple[str, ...]:
    """The accuracy inputs ``table`` must weigh: the non-BLEU inputs and the one BLEU variant
    it names (``bleu`` when it names none, so that the error says what is missing)."""
    named = [name for name in BLEU_VARIANTS if name in table.data]
    if len(named) > 1:
        raise table.fail(named[1], f"weigh one BLEU variant only, got {', '.join(named)}")
    bleu = named[0] if named else "bleu"
    return tuple(bleu if name == "bleu" else name for name in ACCURACY_INPUTS)


def _category_bands(table: Table) -> dict[str, tuple[tuple[float, str], ...]]:
    """``[accuracy_feedback.category_bands]``: per category, bands like ``bands`` (optional)."""
    if "category_bands" not in table.data:
        return {}
    per_category = table.table("category_bands")
    found = {}
    for name in list(per_category.data):
        if name not in CATEGORIES:
            raise per_category.fail(name, f"unknown category; expected one of {CATEGORIES}")
        named = Table({"bands": per_category.raw(name)}, table.source,
                      f"{per_category.name}.{name}")
        found[name] = bands(named)
    per_category.done()
    return found


def _round_digits(root: Table) -> int | None:
    """``[inputs] round_digits`` (optional): 0 to 15 decimals."""
    if "inputs" not in root.data:
        return None
    table = root.table("inputs")
    digits = table.typed("round_digits", int, "an integer")
    if not 0 <= digits <= 15:
        raise table.fail("round_digits", "expected an integer from 0 to 15")
    table.done()
    return digits


def _passing_modes(table: Table) -> tuple[str, ...]:
    """``[failure] passing`` (optional): names of failure modes that count as a pass."""
    if "passing" not in table.data:
        return ()
    return table.strings("passing")


def _unanswerable_areas(root: Table) -> tuple[str, ...]:
    """``[unanswerable] areas`` (optional): the areas an unanswerable row scores by whether
    the response abstains."""
    if "unanswerable" not in root.data:
        return ()
    table = root.table("unanswerable")
    areas = table.strings("areas")
    for area in areas:
        if area not in AREAS:
            raise table.fail("areas", f"unknown area {area!r}; expected some of {AREAS}")
    table.done()
    return areas


def _bias_names(table: Table) -> str:
    if "bias_names" not in table.data:
        return "spaced"
    style = table.typed("bias_names", str, "a string")
    if style not in BIAS_NAME_STYLES:
        raise table.fail("bias_names", f"expected one of {', '.join(BIAS_NAME_STYLES)}")
    return style


def _feedback_format(table: Table) -> FeedbackFormat:
    """``[overall_feedback]``: a ``template`` (with ``decimals`` and ``none_text``), or
    ``modes`` (failure mode -> text) with ``pass_bands`` for the rows that pass."""
    if "modes" not in table.data:
        template = table.typed("template", str, "a string")
        if not any(field in template for field in FEEDBACK_FIELDS):
            raise table.fail(
                "template", f"expected at least one of {', '.join(FEEDBACK_FIELDS)}"
            )
        return FeedbackFormat(
            template=template,
            decimals=table.integer("decimals"),
            none_text=table.typed("none_text", str, "a string"),
        )
    modes_table = table.table("modes")
    modes = {name: modes_table.typed(name, str, "a string") for name in list(modes_table.data)}
    modes_table.done()
    pass_bands = bands(
        Table({"bands": table.raw("pass_bands")}, table.source, f"{table.name}.pass_bands")
    )
    return FeedbackFormat(template="", decimals=0, none_text="", modes=MappingProxyType(modes),
                          pass_bands=pass_bands)


def _weights(table: Table, names: tuple[str, ...]) -> dict[str, float]:
    """Non-negative weights for exactly ``names``, summing to 1 within 1e-9."""
    weights = {name: table.number(name, low=0.0) for name in names}
    table.done()
    total = math.fsum(weights.values())
    if abs(total - 1.0) > 1e-9:
        raise table.fail(names[0], f"weights must sum to 1 (within 1e-9), got {total!r}")
    return weights


def _categories(table: Table, key: str) -> tuple[str, ...]:
    names = table.strings(key)
    for name in names:
        if name not in CATEGORIES:
            raise table.fail(key, f"unknown category {name!r}; expected one of {CATEGORIES}")
    return names


def _rules(table: Table, key: str, label: str) -> tuple[Rule, ...]:
    raw = table.typed(key, list, "an array of tables")
    rules = []
    for index, entry in enumerate(raw):
        if not isinstance(entry, dict):
            raise table.fail(key, f"expected an array of tables, got {entry!r}")
        item = Table(entry, table.source, f"{table.name}.{key}[{index}]".lstrip("."))
        text = item.typed(label, str, "a string")
        conditions = item.typed("all", list, "a list of [column, op, value]")
        if not conditions:
            raise item.fail("all", "needs at least one condition")
        group = item.typed("group", str, "a string") if "group" in item.data else None
        if group is not None and label != "text":
            raise item.fail("group", "only suggestions have groups")
        rules.append(Rule(text, tuple(_condition(item, c) for c in conditions), group))
        item.done()
    return tuple(rules)


def _condition(table: Table, raw: Any) -> Condition:
    ok = isinstance(raw, list) and len(raw) == 3
    if not ok or not all(isinstance(x, str) for x in raw[:2]):
        raise table.fail("all", f"expected [column, op, value], got {raw!r}")
    column, op, value = raw
    if column not in ALLOWED_COLUMNS:
        raise table.fail("all", f"unknown column {column!r}; allowed: {sorted(ALLOWED_COLUMNS)}")
    if op not in OPERATORS:
        raise table.fail("all", f"unknown op {op!r}; expected one of {list(OPERATORS)}")
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise table.fail("all", f"expected a number as value in {raw!r}")
    return Condition(column, op, float(value))
