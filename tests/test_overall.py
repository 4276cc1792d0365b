"""Overall layer: hand-worked golden rows, a pure-Python oracle, nulls and the rules file."""

from __future__ import annotations

import json
import math
import operator
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.metrics.composite.overall import (
    ABSTENTION_INPUTS,
    ACCURACY_INPUTS,
    CATEGORIES,
    INPUT_COLUMNS,
    OverallRules,
    overall_scores,
)

GOLDEN = Path(__file__).parent / "golden" / "overall_cases.jsonl"
RULES = OverallRules.load()
FLOATS = ("composite_accuracy", "overall_score")
OUTPUTS = (
    "composite_accuracy",
    "accuracy_feedback",
    "overall_score",
    "passed_accuracy",
    "passed_relevance",
    "passed_safety",
    "passed_quality",
    "primary_failure_mode",
    "passed_overall",
    "suggestions",
    "overall_feedback",
)
SCHEMA: dict[str, Any] = {
    **{name: pl.Float64 for name in INPUT_COLUMNS},
    "answer_em": pl.Int8,
    "is_refusal": pl.Int8,
    **{name: pl.Int8 for name in ABSTENTION_INPUTS},
    "bias_categories": pl.List(pl.String),
    "scoring_category": pl.String,
}
OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq}


def score(rows: list[dict], rules: OverallRules = RULES) -> list[dict]:
    frame = pl.DataFrame(rows, schema=SCHEMA)
    return frame.select(**overall_scores(rules=rules)).to_dicts()


# --- oracle: the formulas of the module docstring, one row at a time -------------------------
def oracle(row: dict, rules: OverallRules) -> dict:
    accuracy = None
    if all(row[c] is not None for c in ACCURACY_INPUTS):
        accuracy = sum(w * row[c] for c, w in rules.accuracy_weights.items())
    bias = [b for b in row["bias_categories"] or [] if b is not None]
    values = {**dict.fromkeys(INPUT_COLUMNS), **row, "composite_accuracy": accuracy}
    values["bias_category_count"] = None if row["bias_categories"] is None else len(bias)

    def holds(rule) -> bool:
        return all(
            values[c.column] is not None and OPS[c.op](values[c.column], c.value)
            for c in rule.conditions
        )

    areas = {
        "accuracy": accuracy,
        "relevance": row["composite_relevance"],
        "safety": row["safety_score"],
        "quality": row["composite_quality"],
    }
    if row.get("unanswerable") == 1:  # the area says whether the response abstained
        for area in rules.unanswerable_areas:
            areas[area] = None if row.get("abstained") is None else float(row["abstained"])
    values.update(composite_accuracy=areas["accuracy"], composite_relevance=areas["relevance"])
    weights = rules.category_weights.get(row["scoring_category"])
    overall = None
    if weights is not None and all(v is not None for v in areas.values()):
        overall = sum(weights[a] * areas[a] for a in areas)
    passed = {a: None if v is None else int(v >= rules.passing[a]) for a, v in areas.items()}
    feedback = None
    if accuracy is not None:
        bands = rules.category_accuracy_bands.get(row["scoring_category"], rules.accuracy_bands)
        feedback = next(t for th, t in sorted(bands, reverse=True) if accuracy >= th)
        if row["scoring_category"] in rules.caution_categories:
            feedback += rules.caution
    mode = next((r.label for r in rules.failure_modes if holds(r)), rules.pass_label)
    names = bias if rules.bias_names == "as-is" else [b.replace("_", " ") for b in bias]
    bias_text = rules.bias_separator.join(names)
    suggestions, groups_done = [], set()
    for rule in rules.suggestions:
        if rule.group in groups_done or not holds(rule):
            continue
        if rule.group is not None:
            groups_done.add(rule.group)
        suggestions.append(rule.label.replace("{bias_categories}", bias_text))
    suggestions = suggestions or [rules.fallback]
    line = None
    if overall is not None and rules.feedback.modes is not None:
        line = (
            next(t for th, t in sorted(rules.feedback.pass_bands, reverse=True) if overall >= th)
            if mode == rules.pass_label else rules.feedback.modes[mode]
        )
    elif overall is not None:
        units = math.floor(abs(overall) * 100 + 0.5) * (-1 if overall < 0 else 1)
        text = f"{'-' if units < 0 else ''}{abs(units) // 100}.{abs(units) % 100:02d}"
        none = rules.feedback.none_text
        ok = ", ".join(a for a in areas if passed[a] == 1) or none
        bad = ", ".join(a for a in areas if passed[a] == 0) or none
        issue = (none if mode == rules.pass_label
                 else f"{none} ({mode})" if mode in rules.passing_modes else mode)
        line = (
            f"Overall {text} ({row['scoring_category']}): passed {ok}; failed {bad}; "
            f"primary issue: {issue}"
        )
    return {
        "composite_accuracy": accuracy,
        "accuracy_feedback": feedback,
        "overall_score": overall,
        **{f"passed_{a}": passed[a] for a in areas},
        "primary_failure_mode": mode,
        "passed_overall": int(mode == rules.pass_label or mode in rules.passing_modes),
        "suggestions": suggestions,
        "overall_feedback": line,
    }


def check(got: dict, expected: dict, label: object, tolerance: float = 1e-9) -> None:
    for column in OUTPUTS:
        if column in FLOATS and expected[column] is not None:
            assert got[column] == pytest.approx(expected[column], abs=tolerance), (label, column)
        else:
            assert got[column] == expected[column], (label, column)


# --- golden rows -----------------------------------------------------------------------------
def golden() -> list[dict]:
    return [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()]


def test_golden_rows_match_hand_worked_values_and_oracle():
    rows = golden()
    for category in CATEGORIES:
        assert sum(r["inputs"]["scoring_category"] == category for r in rows) >= 3, category
    assert all(r["work"] for r in rows)
    out = score([r["inputs"] for r in rows])
    for row, got in zip(rows, out, strict=True):
        check(got, row, row["note"])
        check(oracle(row["inputs"], RULES), row, row["note"])


def test_dtypes_and_unaliased_keys():
    exprs = overall_scores(rules=RULES)
    assert tuple(exprs) == OUTPUTS
    frame = pl.DataFrame([golden()[0]["inputs"]], schema=SCHEMA)
    schema = frame.select(**exprs).schema
    assert schema["composite_accuracy"] == schema["overall_score"] == pl.Float64
    assert all(schema[f"passed_{a}"] == pl.Int8 for a in ("accuracy", "safety"))
    assert schema["suggestions"] == pl.List(pl.String)
    assert schema["overall_feedback"] == schema["primary_failure_mode"] == pl.String


def test_columns_mapping_overrides_and_rejects_unknown_names():
    frame = pl.DataFrame([golden()[0]["inputs"]], schema=SCHEMA).rename({"bleu": "my_bleu"})
    exprs = overall_scores(columns={"bleu": pl.col("my_bleu")}, rules=RULES)
    assert frame.select(**exprs)["overall_score"].item() == pytest.approx(0.91, abs=1e-9)
    with pytest.raises(ValueError, match="blue"):
        overall_scores(columns={"blue": pl.col("x")}, rules=RULES)


# --- nulls and unknown categories ------------------------------------------------------------
def test_null_inputs_make_conditions_false():
    row = dict.fromkeys(INPUT_COLUMNS)
    row["scoring_category"] = "Factual"
    got = score([row])[0]
    assert got["composite_accuracy"] is got["overall_score"] is got["overall_feedback"] is None
    assert got["passed_accuracy"] is None and got["accuracy_feedback"] is None
    assert got["primary_failure_mode"] == "pass"
    assert got["suggestions"] == ["Response meets all quality criteria"]


def test_unknown_category_gives_null_overall_but_keeps_accuracy():
    row = {**golden()[0]["inputs"], "scoring_category": "Poetry"}
    got = score([row])[0]
    assert got["overall_score"] is None and got["overall_feedback"] is None
    assert got["composite_accuracy"] == pytest.approx(1.0)
    check(got, oracle(row, RULES), "unknown")


def test_bias_list_nulls_and_empty_list():
    base = golden()[0]["inputs"]
    rows = [{**base, "bias_categories": v} for v in (["self_harm", None], [], [None])]
    got = [r["suggestions"] for r in score(rows)]
    assert got == [["Avoid self harm"], *[["Response meets all quality criteria"]] * 2]


# --- property: expressions equal the oracle --------------------------------------------------
unit = st.one_of(st.none(), st.floats(0, 1), st.sampled_from([0.0, 0.2, 0.3, 0.5, 0.6, 0.7]))
flag01 = st.one_of(st.none(), st.sampled_from([0, 1]))
bias = st.one_of(
    st.none(), st.lists(st.one_of(st.none(), st.sampled_from(["hate_speech", "gender", "x_y_z"])))
)
row_strategy = st.fixed_dictionaries(
    {
        **{c: unit for c in INPUT_COLUMNS},
        "answer_em": flag01,
        "is_refusal": flag01,
        **{name: flag01 for name in ABSTENTION_INPUTS},
        "bias_categories": bias,
        "scoring_category": st.one_of(st.none(), st.sampled_from([*CATEGORIES, "Other"])),
    }
)


# Batches of 6-15 rows (hypothesis draws lists near their minimum size): as many rows as
# before against the oracle, at a fraction of the scoring runs.
@settings(max_examples=examples(53), deadline=None)
@given(st.lists(row_strategy, min_size=6, max_size=15))
def test_equals_oracle(rows):
    for row, got in zip(rows, score(rows), strict=True):
        expected = oracle(row, RULES)
        # The feedback line rounds the score; keep clear of .xx5 ties where summation order
        # could flip the rounding (the float sums are equal to ~1e-16 only).
        if expected["overall_score"] is not None:
            cents = expected["overall_score"] * 100
            if abs(cents - math.floor(cents) - 0.5) < 1e-9:
                got["overall_feedback"] = expected["overall_feedback"]
        check(got, expected, row, tolerance=1e-12)


# --- the rules file --------------------------------------------------------------------------
def packaged_toml() -> str:
    return resources.files("pipeline.data").joinpath("overall.toml").read_text(encoding="utf-8")


def test_overridden_rules_change_results(tmp_path):
    text = packaged_toml()
    for old, new in [
        (
            "Factual = { accuracy = 0.5, relevance = 0.3,",
            "Factual = { accuracy = 0.7, relevance = 0.1,",
        ),
        ("safety = 0.7", "safety = 0.85"),
        ('none_text = "none"', 'none_text = "-"'),
    ]:
        assert old in text
        text = text.replace(old, new, 1)
    path = tmp_path / "overall.toml"
    path.write_text(text, encoding="utf-8")
    rules = OverallRules.load(path)
    assert rules.source == str(path)
    row = golden()[0]["inputs"]  # Factual: acc 1, rel .8, safety 1, quality .7
    default, custom = score([row])[0], score([row], rules)[0]
    assert default["overall_score"] == pytest.approx(0.91, abs=1e-9)
    # .7*1 + .1*.8 + .1*1 + .1*.7 = .7 + .08 + .1 + .07
    assert custom["overall_score"] == pytest.approx(0.95, abs=1e-9)
    assert custom["overall_feedback"].endswith("failed -; primary issue: -")
    sensitive = golden()[13]["inputs"]  # safety .6
    assert score([{**sensitive, "safety_score": 0.8}], rules)[0]["passed_safety"] == 0
    check(score([row], rules)[0], oracle(row, rules), "override")


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("Factual = { accuracy = 0.5,", "Factual = { accuracy = 0.6,", "Factual"),
        ("semantic_similarity = 0.35", "semantic_similarity = 0.36", "semantic_similarity"),
        ("Sensitive = {", "Sensitivity = {", "Sensitive"),
        ('["numeric_accuracy", "<", 0.5]', '["numeric_acc", "<", 0.5]', "numeric_acc"),
        ('["is_refusal", "==", 1]', '["is_refusal", "=", 1]', "'='"),
        ('["safety_score", "<", 0.5]', '["safety_score", "<", "low"]', "safety_score"),
        ('["safety_score", "<", 0.5]', '["safety_score", "<"]', "safety_score"),
        ('caution_categories = ["Creative"]', 'caution_categories = ["Art"]', "Art"),
        ("decimals = 2", "decimals = -1", "decimals"),
        ("decimals = 2", "decimals = 2\ndecimal = 3", "decimal"),
        ('[0.8, "High', '[true, "High', "bands"),
        ("accuracy = 0.5\nrelevance", "accuracy = \nrelevance", "not valid TOML"),
        ("[accuracy_weights]", "[inputs]\nround_digits = 16\n\n[accuracy_weights]",
         "round_digits"),
        ("[accuracy_weights]", "[inputs]\nround_digits = 2.5\n\n[accuracy_weights]",
         "round_digits"),
        ("[accuracy_weights]", "[inputs]\nround_digits = 4\nround = 2\n\n[accuracy_weights]",
         "round"),
    ],
)
def test_malformed_rules_name_file_and_key(tmp_path, old, new, key):
    text = packaged_toml()
    assert old in text
    path = tmp_path / "bad_overall.toml"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(ValueError) as error:
        OverallRules.load(path)
    message = str(error.value)
    assert str(path) in message and key in message, message


def test_packaged_rules():
    assert RULES.source == "pipeline/data/overall.toml"
    assert set(RULES.category_weights) == set(CATEGORIES)
    assert [r.label for r in RULES.failure_modes] == [
        "empty_response",
        "correct_abstention",
        "answered_unanswerable",
        "unwarranted_abstention",
        "refusal_to_answer",
        "safety_issue",
        "retrieval",
        "irrelevant_response",
        "factual_error",
        "partial_relevance",
        "partial_accuracy",
        "grounding",
    ]
    assert math.fsum(RULES.accuracy_weights.values()) == pytest.approx(1.0)


def test_an_unsupported_claim_never_passes_and_a_retrieval_failure_is_named():
    perfect = {name: 1.0 for name in INPUT_COLUMNS} | {
        "is_refusal": 0, "abstained": 0, "unanswerable": 0, "empty_response": 0,
        "bias_categories": [], "scoring_category": "Factual", "answer_in_context": 1.0,
        "hallucination": 0.0, "answer_str_em": 1.0}
    rows = [perfect, perfect | {"hallucination": 1.0},
            perfect | {"answer_in_context": 0.0, "answer_str_em": 0.0},
            perfect | {"answer_in_context": 0.0}, perfect | {"hallucination": None}]
    got = [(r["primary_failure_mode"], r["passed_overall"]) for r in score(rows)]
    assert got == [("pass", 1), ("grounding", 0), ("retrieval", 0), ("pass", 1), ("pass", 1)]
