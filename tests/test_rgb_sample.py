"""The bundled RGB-style sample ``data/sample/rgb/``: reproducible, well-formed, and built to rank.

Grain: ``rgb_data.json`` has one line per item; ``rgb_outputs.jsonl`` one line per (id, model,
task, noise_rate). The generator is ``data/generate_rgb_sample.py``; these tests pin the committed
files to a fresh regeneration and check the properties the RGB metrics rely on.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

from pipeline.metrics.robustness.rgb import answer_groups_from_json
from pipeline.schema import RGB_TASKS

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_DIR = ROOT / "data" / "sample" / "rgb"
DATA = SAMPLE_DIR / "rgb_data.json"
OUTPUTS = SAMPLE_DIR / "rgb_outputs.jsonl"
GENERATOR = ROOT / "data" / "generate_rgb_sample.py"

MODELS = ("atlas-7b", "borealis-13b", "cirrus-70b")  # weakest first
NOISE_RATES = {
    "noise_robustness": (0.0, 0.2, 0.4, 0.6, 0.8),
    "negative_rejection": (1.0,),
    "information_integration": (0.0, 0.2, 0.4),
    "counterfactual_robustness": (0.0,),
}
DATA_KEYS = ["id", "query", "answer", "positive", "negative"]
COUNTERFACTUAL_KEYS = ["id", "query", "answer", "fakeanswer", "positive_wrong", "positive",
                       "negative"]
OUTPUT_KEYS = ["id", "model", "task", "noise_rate", "response", "latency_ms"]
RGB_REJECTION = (
    "I can not answer the question because of the insufficient information in documents."
)
REJECTION_PHRASES = ("insufficient information", "信息不足", "do not provide", "don't know",
                     "cannot determine", "没有提到")
ERROR_PHRASES = ("factual errors", "incorrect", "error")


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_rgb_sample", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being created
    spec.loader.exec_module(module)
    return module


def _read_lines(path: Path) -> list[dict]:
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n") and "\n\n" not in text
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    return _load_generator()


@pytest.fixture(scope="module")
def items() -> dict[int, dict]:
    return {item["id"]: item for item in _read_lines(DATA)}


@pytest.fixture(scope="module")
def outputs() -> list[dict]:
    return _read_lines(OUTPUTS)


def _kind(item: dict) -> str:
    if "fakeanswer" in item:
        return "counterfactual"
    if item["positive"] and isinstance(item["positive"][0], list):
        return "integration"
    return "single"


def _hits(response: str, answer: object) -> list[bool]:
    """Oracle: per answer group, is its first alternative a lowercase substring of the response?"""
    groups = [[answer]] if isinstance(answer, str) else [
        [element] if isinstance(element, str) else element for element in answer
    ]
    return [group[0].lower() in response.lower() for group in groups]


def _accuracy(outputs: list[dict], items: dict[int, dict], task: str) -> dict[tuple, float]:
    cells: dict[tuple, list[bool]] = {}
    for row in outputs:
        if row["task"] == task:
            hit = all(_hits(row["response"], items[row["id"]]["answer"]))
            cells.setdefault((row["model"], row["noise_rate"]), []).append(hit)
    return {cell: sum(hits) / len(hits) for cell, hits in cells.items()}


# Reproducibility


def test_committed_files_equal_a_fresh_regeneration(generator, tmp_path, caplog):
    caplog.set_level("INFO")
    out = tmp_path / "rgb"
    assert generator.main(["--out-dir", str(out), "--seed", "0"]) == 0
    assert (out / "rgb_data.json").read_bytes() == DATA.read_bytes()
    assert (out / "rgb_outputs.jsonl").read_bytes() == OUTPUTS.read_bytes()
    assert sorted(p.name for p in out.iterdir()) == ["rgb_data.json", "rgb_outputs.jsonl"]
    assert "40 items" in caplog.text and "480 responses" in caplog.text


def test_another_seed_gives_another_sample(generator):
    data, outputs = generator.build(1)
    assert generator.to_json_lines(outputs, generator.OUTPUT_KEYS) != OUTPUTS.read_text("utf-8")
    assert len(data) == 40 and len(outputs) == 480


def test_sample_is_small():
    assert DATA.stat().st_size + OUTPUTS.stat().st_size < 150_000


# Data file: RGB's format


def test_data_lines_have_rgb_keys_in_order(items):
    assert sorted(items) == list(range(len(items)))
    for item in items.values():
        keys = COUNTERFACTUAL_KEYS if "fakeanswer" in item else DATA_KEYS
        assert list(item) == keys, item["id"]
        assert item["query"] and item["negative"]
        assert all(isinstance(p, str) and p for p in item["negative"])


def test_item_counts_per_kind_and_language(items):
    kinds = Counter(_kind(item) for item in items.values())
    assert kinds == {"single": 20, "integration": 10, "counterfactual": 10}
    chinese = [item for item in items.values() if any("\u4e00" <= ch <= "\u9fff"
                                                      for ch in item["query"])]
    assert 2 <= len(chinese) <= 3
    assert all(_kind(item) == "single" for item in chinese)


def test_answers_parse_as_groups_of_alternatives(items):
    shapes = Counter()
    for item in items.values():
        groups = answer_groups_from_json(item["answer"])
        assert groups and all(group and all(alt for alt in group) for group in groups)
        shapes[(_kind(item), len(groups), isinstance(item["answer"], str))] += 1
    # Single-answer items: bare strings and one group of alternatives; integration: two parts.
    assert shapes[("single", 1, True)] > 0 and shapes[("single", 1, False)] > 0
    assert sum(n for (kind, size, _), n in shapes.items() if kind == "integration") == 10
    assert all(size == 2 for (kind, size, _) in shapes if kind == "integration")
    mixed = [item for item in items.values() if _kind(item) == "integration"
             and {type(e) for e in item["answer"]} == {str, list}]
    assert mixed


def test_positives_hold_the_answer_and_negatives_do_not(items):
    for item in items.values():
        groups = answer_groups_from_json(item["answer"])
        alternatives = [alt.lower() for group in groups for alt in group]
        for passage in item["negative"]:
            assert not any(alt in passage.lower() for alt in alternatives), item["id"]
        if _kind(item) == "integration":
            assert len(item["positive"]) == len(groups)
            for group, passages in zip(groups, item["positive"], strict=True):
                assert passages and all(group[0] in p for p in passages), item["id"]
        else:
            assert all(isinstance(p, str) and groups[0][0] in p for p in item["positive"])


def test_counterfactual_items_swap_the_answer_for_the_fake(items):
    for item in items.values():
        if _kind(item) != "counterfactual":
            assert "positive_wrong" not in item
            continue
        true = answer_groups_from_json(item["answer"])[0]
        fake = item["fakeanswer"]
        assert isinstance(fake, str) and not any(t.lower() in fake.lower() for t in true)
        assert len(item["positive_wrong"]) == len(item["positive"])
        for right, wrong in zip(item["positive"], item["positive_wrong"], strict=True):
            assert wrong == right.replace(true[0], fake)
            assert not any(t.lower() in wrong.lower() for t in true)


# Outputs file


def test_output_lines_are_clean(items, outputs):
    for row in outputs:
        assert list(row) == OUTPUT_KEYS
        assert row["id"] in items
        assert row["model"] in MODELS
        assert row["task"] in RGB_TASKS
        assert row["noise_rate"] in NOISE_RATES[row["task"]]
        assert isinstance(row["response"], str) and row["response"]
        assert isinstance(row["latency_ms"], float) and row["latency_ms"] > 0
    keys = [(r["id"], r["model"], r["task"], r["noise_rate"]) for r in outputs]
    assert len(set(keys)) == len(keys)


def test_every_task_model_and_noise_rate_is_present(items, outputs):
    expected = {
        "single": ["noise_robustness", "negative_rejection"],
        "integration": ["information_integration"],
        "counterfactual": ["counterfactual_robustness"],
    }
    cells = {(r["id"], r["model"], r["task"], r["noise_rate"]) for r in outputs}
    grid = {
        (item["id"], model, task, rate)
        for item in items.values()
        for task in expected[_kind(item)]
        for model in MODELS
        for rate in NOISE_RATES[task]
    }
    assert cells == grid
    assert {r["task"] for r in outputs} == set(RGB_TASKS)
    assert {r["model"] for r in outputs} == set(MODELS)


# Built-in behaviour (oracle: lowercase substring of each group's first alternative)


def test_noise_robustness_falls_with_noise_and_ranks_models(items, outputs):
    accuracy = _accuracy(outputs, items, "noise_robustness")
    for model in MODELS:
        curve = [accuracy[(model, rate)] for rate in NOISE_RATES["noise_robustness"]]
        assert all(a >= b for a, b in itertools.pairwise(curve)), (model, curve)
        assert curve[0] > curve[-1], (model, curve)
    assert accuracy[("cirrus-70b", 0.0)] > accuracy[("atlas-7b", 0.0)]


def test_noise_robustness_responses_vary(items, outputs):
    rows = [r for r in outputs if r["task"] == "noise_robustness"]
    responses = [r["response"] for r in rows]
    assert any(r == RGB_REJECTION for r in responses)
    correct = [r for r in rows if all(_hits(r["response"], items[r["id"]]["answer"]))]
    bare = [r for r in correct if len(r["response"]) < 20]
    assert bare and len(bare) < len(correct)
    # An alternative spelling that the first-alternative oracle misses.
    alternative = [
        r for r in rows
        if not all(_hits(r["response"], items[r["id"]]["answer"]))
        and any(alt.lower() in r["response"].lower()
                for alt in answer_groups_from_json(items[r["id"]]["answer"])[0][1:])
    ]
    assert alternative


def test_stronger_models_reject_more_on_negative_rejection(items, outputs):
    rejected = Counter()
    for row in outputs:
        if row["task"] == "negative_rejection":
            assert not any(_hits(row["response"], items[row["id"]]["answer"]))
            rejected[row["model"]] += any(p in row["response"] for p in REJECTION_PHRASES)
    assert rejected["atlas-7b"] < rejected["borealis-13b"] < rejected["cirrus-70b"]
    assert rejected["atlas-7b"] > 0 and rejected["cirrus-70b"] < 20


def test_information_integration_has_full_and_partial_answers(items, outputs):
    full, partial = Counter(), Counter()
    for row in outputs:
        if row["task"] == "information_integration":
            hits = _hits(row["response"], items[row["id"]]["answer"])
            full[row["model"]] += all(hits)
            partial[row["model"]] += sum(hits) == 1
    assert full["atlas-7b"] < full["cirrus-70b"]
    assert sum(partial.values()) > 0


def test_stronger_models_flag_counterfactual_errors_more(items, outputs):
    flagged, repeated = Counter(), Counter()
    for row in outputs:
        if row["task"] == "counterfactual_robustness":
            response = row["response"]
            flagged[row["model"]] += any(p in response for p in ERROR_PHRASES)
            fake = items[row["id"]]["fakeanswer"]
            repeated[row["model"]] += fake in response and not any(
                p in response for p in ERROR_PHRASES
            )
    assert flagged["atlas-7b"] < flagged["cirrus-70b"]
    assert repeated["atlas-7b"] > repeated["cirrus-70b"]
    responses = {r["response"] for r in outputs if r["task"] == "counterfactual_robustness"}
    assert "There are factual errors in the provided documents." in responses
