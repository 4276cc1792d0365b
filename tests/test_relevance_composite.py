"""Relevance composite: hand-worked golden rows, category fallbacks, rules files, an oracle."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.metrics.composite.relevance_composite import (
    RelevanceRules,
    canonical_category,
    category_is_known,
    relevance_scores,
)

GOLDEN = Path(__file__).parent / "golden" / "relevance_cases.jsonl"
RULES = RelevanceRules.load()
PACKAGED = resources.files("pipeline.data").joinpath("relevance.toml").read_text(encoding="utf-8")
FLOATS = (
    "intent_match", "refusal_score", "depth_score", "step_completeness", "creativity_score",
    "relevance_adjustment", "composite_relevance",
)


# --- oracle: the module docstring, one row at a time with Python's re ------------------------
def matches(patterns: Any, text: str) -> bool:
    return any(re.search(p, text, re.IGNORECASE) for p in patterns)


def oracle_category(category: str | None, rules: RelevanceRules = RULES) -> tuple[str, int]:
    table = {name.lower(): name for name in rules.categories} | dict(rules.aliases)
    found = None if category is None else table.get(category.strip().lower())
    return (rules.default_category, 0) if found is None else (found, 1)


def oracle(
    question: str, response: str, category: str | None, s: float, t: float, k: float,
    rules: RelevanceRules = RULES,
) -> dict[str, Any]:
    name, _ = oracle_category(category, rules)
    intent = next((i for i in rules.intents if matches(i.question, question)), None)
    intent_score = 1.0 if intent is not None and matches(intent.response, response) else 0.5
    refusal = 1.0 if matches(rules.refusal_patterns, response) else 0.0
    words = re.findall(r"\w+(?:'\w+)*", response)
    low, high = rules.length_ranges[name]
    n = len(words)
    depth = 0.0 if n == 0 else n / low if n < low else high / n if n > high else 1.0
    step_words = "|".join(w.replace(" ", r"\s+") for w in rules.step_words)
    steps = len(re.findall(rf"\b(?:{step_words})\b", response, re.IGNORECASE)) + len(
        re.findall(rules.numbered_item, response, re.IGNORECASE)
    )
    step_score = min(1.0, steps / rules.step_divisor)
    families = sum(matches(p, response) for p in rules.indicator_families.values())
    distinct = len({w.lower() for w in words})
    bonus = rules.distinct_word_bonus if distinct > rules.distinct_word_threshold else 0.0
    creativity = min(1.0, rules.indicator_weight * families + bonus)
    component = {"step_completeness": step_score, "creativity_score": creativity}
    weights = rules.adjustment.get(name, {})
    adjustment = sum(w * component[c] for c, w in weights.items())
    cw = rules.composite_weights
    raw = (
        cw["semantic_relevance"] * s + cw["tfidf_relevance"] * t + cw["keyword_overlap"] * k
        + cw["intent_match"] * intent_score + adjustment - rules.refusal_penalty * refusal
    )
    composite = min(1.0, max(0.0, raw))
    label = next(label for low_, label in rules.feedback if composite >= low_)
    return {
        "intent_match": intent_score, "refusal_score": refusal,
        "is_refusal": int(refusal > rules.refusal_threshold), "depth_score": depth,
        "step_completeness": step_score, "creativity_score": creativity,
        "relevance_adjustment": adjustment, "composite_relevance": composite,
        "relevance_feedback": label,
    }


# --- helpers ---------------------------------------------------------------------------------
def score(rows: list[dict[str, Any]], rules: RelevanceRules = RULES) -> pl.DataFrame:
    schema = {
        "question": pl.String, "response": pl.String, "category": pl.String,
        "semantic_relevance": pl.Float64, "tfidf_relevance": pl.Float64,
        "keyword_overlap": pl.Float64,
    }
    frame = pl.DataFrame([{c: row[c] for c in schema} for row in rows], schema=schema)
    columns = relevance_scores(*(pl.col(c) for c in schema), rules=rules)
    return frame.select(
        canonical_category=canonical_category(pl.col("category"), rules=rules),
        category_is_known=category_is_known(pl.col("category"), rules=rules),
        **columns,
    )


def golden_rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()]


def row(question: str | None, response: str | None, category: str | None = "Factual",
        s: float | None = 0.5, t: float = 0.5, k: float = 0.5) -> dict[str, Any]:
    return {"question": question, "response": response, "category": category,
            "semantic_relevance": s, "tfidf_relevance": t, "keyword_overlap": k}


# --- golden ----------------------------------------------------------------------------------
def test_golden_has_three_rows_per_category():
    counts: dict[str, int] = {}
    for case in golden_rows():
        if case["expected"]["category_is_known"]:
            name = case["expected"]["canonical_category"]
            counts[name] = counts.get(name, 0) + 1
    assert counts.keys() == set(RULES.categories)
    assert min(counts.values()) >= 3


def test_golden_rows_match_hand_worked_values_and_oracle():
    cases = golden_rows()
    out = score(cases).to_dicts()
    for case, got in zip(cases, out, strict=True):
        expected = case["expected"]
        for name, value in expected.items():
            if name in FLOATS:
                assert got[name] == pytest.approx(value, abs=1e-9), (case["note"], name)
            else:
                assert got[name] == value, (case["note"], name)
        want = oracle(case["question"], case["response"], case["category"],
                      case["semantic_relevance"], case["tfidf_relevance"],
                      case["keyword_overlap"])
        for name, value in want.items():
            assert expected[name] == pytest.approx(value, abs=1e-9), (case["note"], name)


def test_dtypes():
    out = score([row("What?", "It is.")])
    assert out.schema["is_refusal"] == pl.Int8
    assert out.schema["category_is_known"] == pl.Int8
    assert out.schema["relevance_feedback"] == pl.String
    for name in FLOATS:
        assert out.schema[name] == pl.Float64, name


# --- categories ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("category", "canonical", "known"),
    [
        ("Factual", "Factual", 1),
        ("  creative\t", "Creative", 1),
        ("SENSITIVE", "Sensitive", 1),
        ("Instruction", "Instructional", 1),
        (" instruction ", "Instructional", 1),
        ("instructional", "Instructional", 1),
        ("Poetry", "Factual", 0),
        ("", "Factual", 0),
        ("   ", "Factual", 0),
        (None, "Factual", 0),
    ],
)
def test_category_fallback(category, canonical, known):
    frame = pl.DataFrame({"c": [category]}, schema={"c": pl.String})
    out = frame.select(
        name=canonical_category(pl.col("c"), rules=RULES),
        known=category_is_known(pl.col("c"), rules=RULES),
    )
    assert out.row(0) == (canonical, known)
    assert oracle_category(category) == (canonical, known)


def test_unknown_category_scores_as_default():
    response = "First mix. Then stir. " + "word " * 20
    fallback = score([row("How?", response, "Poetry")])
    default = score([row("How?", response, "Factual")])
    assert fallback.drop("category_is_known").to_dicts() == default.drop(
        "category_is_known"
    ).to_dicts()


# --- nulls -----------------------------------------------------------------------------------
def test_null_response_gives_null_scores():
    out = score([row("What is it?", None)]).to_dicts()[0]
    for name in (*FLOATS, "is_refusal", "relevance_feedback"):
        if name != "intent_match":
            assert out[name] is None, name
    assert out["intent_match"] == 0.5


def test_null_question_and_null_input():
    out = score([row(None, "It is."), row("What?", "It is.", s=None)]).to_dicts()
    assert out[0]["intent_match"] is None
    assert out[0]["composite_relevance"] is None
    assert out[1]["depth_score"] is not None
    assert out[1]["composite_relevance"] is None
    assert out[1]["relevance_feedback"] is None


@pytest.mark.parametrize(
    ("response", "refusal"),
    [
        ("That would be against rules, so no.", 1.0),  # the enhanced framework's pattern
        ("It is against the rules of chess to move twice.", 1.0),
        ("Rules of thumb help.", 0.0),
    ],
)
def test_refusal_against_rules(response, refusal):
    assert score([row("Can you do it?", response)])["refusal_score"].to_list() == [refusal]


def test_depth_word_unit(tmp_path):
    """``[depth] word_unit = "whitespace"``: "Île-de-France" and "9-11" are one word each."""
    text = "In the Île-de-France region, 9-11 is a number."
    assert score([row("q?", text)])["depth_score"].item() == 1.0  # 11 words, Factual 10-80
    rules = RelevanceRules.load(write(tmp_path, PACKAGED.replace(
        'word_unit = "word-characters"', 'word_unit = "whitespace"')))
    assert rules.depth_word_unit == "whitespace"
    assert score([row("q?", text)], rules)["depth_score"].item() == pytest.approx(8 / 10)


# --- rules files -----------------------------------------------------------------------------
def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_override_file_changes_result(tmp_path):
    text = PACKAGED.replace("divisor = 8", "divisor = 4").replace(
        'default = "Factual"', 'default = "Instructional"'
    )
    rules = RelevanceRules.load(write(tmp_path, text))
    assert rules.source == str(tmp_path / "rules.toml")
    case = row("How?", "First mix. Then stir. " + "word " * 36, "Unknown genre")
    before = score([case]).to_dicts()[0]
    after = score([case], rules).to_dicts()[0]
    assert (before["step_completeness"], before["relevance_adjustment"]) == (0.25, 0.0)
    assert (after["step_completeness"], after["relevance_adjustment"]) == (0.5, 0.15)
    assert after["canonical_category"] == "Instructional"
    assert after["composite_relevance"] == pytest.approx(before["composite_relevance"] + 0.15)


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("'\\bcannot\\b',", "'(unclosed',", "refusal.patterns[0]"),
        ("'\\bcannot\\b',", "'(?<=x)cannot',", "refusal.patterns[0]"),
        ("divisor = 8", "divisor = 0", "steps.divisor"),
        ("divisor = 8", "", "steps.divisor"),
        ('default = "Factual"', 'default = "Opinion"', "categories.default"),
        ("Creative = [50, 400]", "Creative = [400, 50]", "length_ranges.Creative"),
        ("Sensitive = [30, 200]", "", "length_ranges.Sensitive"),
        ('instruction = "Instructional"', 'instruction = "Howto"', "categories.aliases"),
        ("min = 0.0", "min = 0.1", "feedback"),
        ("[adjustment.Creative]", "[adjustment.Poem]", "adjustment.Poem"),
        ("creativity_score = 0.2", "novelty = 0.2", "adjustment.Creative"),
        ('"after that"', '"After-that"', "steps.words[7]"),
    ],
)
def test_malformed_file_names_file_and_key(tmp_path, old, new, key):
    assert old in PACKAGED
    path = write(tmp_path, PACKAGED.replace(old, new, 1))
    with pytest.raises(ValueError, match=re.escape(str(path))) as error:
        RelevanceRules.load(path)
    assert key in str(error.value)


def test_invalid_toml_names_file(tmp_path):
    path = write(tmp_path, "[categories\nnames = 1")
    with pytest.raises(ValueError, match=re.escape(str(path))):
        RelevanceRules.load(path)


# --- property test against the oracle --------------------------------------------------------
PIECES = [
    "hello", "Hi", "what", "Why", "how", "?", " ", " ", "\n", ".", ",", "!", '"', "'", "I'd",
    "please", "can you", "do you mean", "is it true", "in other words", "yes", "no", "sure",
    "here are", "is", "because", "cannot", "not able to", "decline to answer", "rather not say",
    "against guidelines", "not allowed", "first", "Then", "next", "finally", "after that",
    "steps", "Step", "1.", "2)", "3.50", "10.", "imagine", "picture", "like a", "metaphor",
    "said", "suddenly", "Surprisingly", "alpha", "beta", "gamma", "delta", "word", "x",
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen",
    "sixteen seventeen",
]
texts = st.lists(st.sampled_from(PIECES), max_size=30).map(" ".join) | st.lists(
    st.sampled_from(PIECES), max_size=30
).map("".join)
categories = st.sampled_from([
    None, "", "Factual", "explanatory", " Instructional ", "instruction", "CREATIVE",
    "Sensitive", "other",
])
unit = st.floats(0.0, 1.0, allow_nan=False)


# Batches of 10-30 rows (hypothesis draws lists near their minimum size): as many rows as
# before against the oracle, at a fraction of the scoring runs.
@settings(max_examples=examples(80), deadline=None)
@given(st.lists(st.tuples(texts, texts, categories, unit, unit, unit), min_size=10,
                max_size=30))
def test_equals_oracle(cases):
    rows = [row(*case) for case in cases]
    out = score(rows).to_dicts()
    for case, got in zip(cases, out, strict=True):
        want = oracle(*case)
        for name, value in want.items():
            if name in FLOATS:
                assert got[name] == pytest.approx(value, abs=1e-12), (case, name)
            elif name == "relevance_feedback":
                # a float sum within rounding of a band edge may land on either side
                composite = got["composite_relevance"]
                edge = any(abs(composite - low) < 1e-12 for low, _ in RULES.feedback)
                assert edge or got[name] == value, (case, name)
            else:
                assert got[name] == value, (case, name)
        assert 0.0 <= got["composite_relevance"] <= 1.0
        assert (got["canonical_category"], got["category_is_known"]) == oracle_category(case[2])
