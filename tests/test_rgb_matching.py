"""RGB answer matching: hand-built cases for both modes, an oracle check on the real RGB files."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipeline.metrics.robustness.rgb import (
    answer_groups_from_json,
    flexible_correct,
    official_correct,
    official_error_detected,
    official_rejected,
)

#: The real RGB files (CC BY-NC-SA 4.0) live in shared/ beside the repository, never in it.
RGB_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "rgb"
RGB_FILES = ["en_fact.json", "zh_fact.json", "zh_int.json", "zh_refine.json"]
GROUPS = pl.List(pl.List(pl.String))

needs_rgb = pytest.mark.skipif(
    not RGB_DIR.is_dir(), reason=f"RGB data folder {RGB_DIR} is absent (real-data tests skipped)"
)


def flexible(responses, groups, *, strict=False):
    frame = pl.DataFrame({"r": responses, "g": groups}, schema={"r": pl.String, "g": GROUPS})
    out = frame.select(flexible_correct(pl.col("r"), pl.col("g"), strict=strict).alias("ok"))
    assert out.schema["ok"] == pl.Int8
    return out["ok"].to_list()


def official(responses, groups, *, chinese=False, noise_rate=0.0):
    frame = pl.DataFrame({"r": responses, "g": groups}, schema={"r": pl.String, "g": GROUPS})
    expr = official_correct(
        pl.col("r"), pl.col("g"), chinese=chinese, noise_rate=pl.lit(noise_rate)
    )
    out = frame.select(expr.alias("ok"))
    assert out.schema["ok"] == pl.Int8
    return out["ok"].to_list()


# --- flexible mode -------------------------------------------------------------------------------


def test_flexible_containment_both_ways():
    assert flexible(["Paris"], [[["The capital of France is Paris."]]]) == [1]
    assert flexible(["The capital of France is Paris."], [[["Paris"]]]) == [1]
    assert flexible(["  PARIS!!  "], [[["paris"]]]) == [1]
    assert flexible(["Lyon"], [[["The capital of France is Paris."]]]) == [0]


def test_flexible_groups_and_alternatives():
    groups = [[["Jan 3", "January 3"], ["Jan 12", "January 12"]]]
    assert flexible(["On January 3 and Jan 12."], groups) == [1]
    assert flexible(["On January 3 only."], groups) == [0]
    assert flexible(["x"], [[]]) == [0]  # no groups: nothing to be correct about
    assert flexible(["x"], [[["x"], []]]) == [0]  # an empty group never matches


def test_flexible_token_recall_threshold():
    alternative = [[["alpha beta gamma delta epsilon"]]]
    assert flexible(["alpha beta gamma delta zeta"], alternative) == [1]  # 4/5 = 80%: at
    assert flexible(["epsilon delta gamma beta alpha"], alternative) == [1]  # 5/5: above
    assert flexible(["alpha beta gamma zeta eta"], alternative) == [0]  # 3/5: below


def test_flexible_strict():
    assert flexible(["Paris."], [[["paris"]]], strict=True) == [1]
    assert flexible(["Paris is the capital"], [[["paris"]]], strict=True) == [0]
    assert flexible(["a"], [[["b", "A"]]], strict=True) == [1]


def test_flexible_nulls_and_empty():
    assert flexible([None, "x"], [[["x"]], None]) == [None, None]
    assert flexible(["", "..."], [[["x"]], [["x"]]]) == [0, 0]


# --- official mode -------------------------------------------------------------------------------


def test_official_substring_without_word_boundaries():
    assert official(["Let us start."], [[["art"]]]) == [1]
    assert official(["THE ART"], [[["art"]]]) == [1]
    assert official(["nothing"], [[["art"]]]) == [0]


def test_official_rejection_is_case_sensitive():
    frame = pl.DataFrame({"r": ["Insufficient information", "insufficient information here"]})
    flags = frame.select(official_rejected(pl.col("r"), chinese=False).alias("x"))["x"]
    assert flags.to_list() == [0, 1]
    # "Insufficient information" is not a rejection, so its answer is checked.
    assert official(["Insufficient information"], [[["information"]]]) == [1]
    assert official(["insufficient information"], [[["information"]]]) == [0]


def test_official_chinese_spaces_removed():
    assert official(["北 京"], [[["北京"]]], chinese=True) == [1]
    assert official(["北 京"], [[["北京"]]], chinese=False) == [0]
    # On Chinese sets the English phrase loses its space and no longer rejects.
    frame = pl.DataFrame({"r": ["insufficient information"]})
    flag = frame.select(official_rejected(pl.col("r"), chinese=True).alias("x"))["x"].item()
    assert flag == 0


def test_official_rejection_at_full_noise():
    assert official(["信息不足"], [[["北京"]]], chinese=True, noise_rate=1.0) == [1]
    assert official(["信息不足"], [[["北京"]]], chinese=True, noise_rate=0.8) == [0]
    assert official(["北京"], [[["北京"]]], chinese=True, noise_rate=1.0) == [1]


def test_official_per_row_chinese_and_nulls():
    frame = pl.DataFrame(
        {"r": ["北 京", "北 京", None], "g": [[["北京"]]] * 3, "zh": [True, False, True]},
        schema={"r": pl.String, "g": GROUPS, "zh": pl.Boolean},
    )
    expr = official_correct(pl.col("r"), pl.col("g"), chinese=pl.col("zh"), noise_rate=pl.lit(0.2))
    assert frame.select(expr.alias("x"))["x"].to_list() == [1, 0, None]


def test_official_error_detected():
    frame = pl.DataFrame(
        {"r": ["There are factual errors.", "Factual errors", "有事实性错误", None]}
    )
    out = frame.select(official_error_detected(pl.col("r")).alias("x"))["x"].to_list()
    assert out == [1, 0, 1, None]


# --- real RGB files ------------------------------------------------------------------------------


def load(name: str) -> list[dict]:
    with (RGB_DIR / name).open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def oracle_correct(response: str, answer: object, *, chinese: bool, noise_rate: float) -> int:
    """The official rule, written out in plain Python from its description."""
    if chinese:
        response = response.replace(" ", "")
    if "信息不足" in response or "insufficient information" in response:
        return int(noise_rate == 1.0)
    text = response.lower()
    parts = answer if isinstance(answer, list) else [answer]
    labels = []
    for part in parts:
        alternatives = part if isinstance(part, list) else [part]
        labels.append(any(alt.lower() in text for alt in alternatives))
    return int(bool(labels) and all(labels))


def built_responses(name: str, item: dict) -> list[str]:
    groups = answer_groups_from_json(item["answer"])
    correct = " ".join(group[0] for group in groups)
    responses = [correct, f"The answer: {correct.upper()}.", " ".join(correct)]  # spaced out
    if len(groups) > 1:
        responses.append(groups[0][0])  # partial
    responses.append("信息不足" if name.startswith("zh") else "insufficient information")
    responses.append(f"Insufficient information, but {correct}")  # not a rejection
    responses.append(f"insufficient information, but {correct}")  # a rejection
    if "fakeanswer" in item:
        fake = item["fakeanswer"]
        responses.append(fake if isinstance(fake, str) else json.dumps(fake, ensure_ascii=False))
    return responses


@needs_rgb
@pytest.mark.parametrize("name", RGB_FILES)
@pytest.mark.parametrize("noise_rate", [0.4, 1.0])
def test_official_matches_oracle_on_rgb(name, noise_rate):
    chinese = name.startswith("zh")
    rows = []
    for item in load(name):
        for response in built_responses(name, item):
            expected = oracle_correct(
                response, item["answer"], chinese=chinese, noise_rate=noise_rate
            )
            rows.append((response, answer_groups_from_json(item["answer"]), expected))
    frame = pl.DataFrame(
        rows, schema={"r": pl.String, "g": GROUPS, "expected": pl.Int8}, orient="row"
    )
    expr = official_correct(
        pl.col("r"), pl.col("g"), chinese=chinese, noise_rate=pl.lit(noise_rate)
    )
    got = frame.select(expr.alias("got"), "expected")
    mismatches = got.filter(pl.col("got") != pl.col("expected"))
    assert mismatches.height == 0, mismatches
    # The fully correct responses are all counted correct (a sanity check on the builders).
    assert got["got"].sum() > 0


@needs_rgb
@pytest.mark.parametrize("name", RGB_FILES)
def test_answer_groups_from_json_on_rgb(name):
    for item in load(name):
        groups = answer_groups_from_json(item["answer"])
        assert groups, item["id"]
        assert all(group and all(isinstance(a, str) and a for a in group) for group in groups)


def test_answer_groups_from_json_shapes():
    assert answer_groups_from_json("x") == [["x"]]
    assert answer_groups_from_json(["x", "y"]) == [["x"], ["y"]]
    assert answer_groups_from_json([["x", "y"], "z"]) == [["x", "y"], ["z"]]
    with pytest.raises(TypeError):
        answer_groups_from_json(3)
