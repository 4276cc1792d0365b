"""The ``rgb`` family in the registry: which rows get which column, in every matching mode."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest
from conftest import records

from pipeline.config import Config, ConfigError, load_config
from pipeline.metrics.registry import FAMILIES, resolve
from pipeline.scoring import score_frame

COLUMNS = ["rgb_correct", "rejected", "rejection_phrase", "error_detected", "error_corrected"]
NR, NEG, INT, CF = (
    "noise_robustness",
    "negative_rejection",
    "information_integration",
    "counterfactual_robustness",
)
REJECTION = "I can not answer the question because of the insufficient information in documents."


def score(rows: list[dict], **config: object) -> dict[str, list]:
    frame = score_frame(records(rows), Config(**config), specs=resolve(["rgb"])).collect()
    return {name: frame[name].to_list() for name in COLUMNS}


def row(response: str | None, task: str | None, groups: list[list[str]] | None = None,
        **extra: object) -> dict:
    return {"reference": "-", "response": response, "task": task, "answer_groups": groups,
            "noise_level": extra.pop("noise_level", 0.0), **extra}


def test_family_and_dtypes() -> None:
    assert FAMILIES["rgb"] == tuple(COLUMNS)
    frame = score_frame(records([row("x", NR, [["x"]])]), Config(), specs=resolve(["rgb"]))
    schema = frame.collect_schema()
    assert schema["rejection_phrase"] == pl.String
    assert all(schema[c] == pl.Int8 for c in COLUMNS if c != "rejection_phrase")


def test_flexible_issue_cases() -> None:
    """The issue's hand-built cases: "Paris" vs a sentence, counterfactual fake-only and both."""
    got = score([
        row("Paris", NR, [["The capital of France is Paris."]]),
        row("The capital of France is Paris.", NR, [["Paris"]]),
        row("It was 1990.", CF, [["2004"]], counterfactual_answer="1990"),
        row("The documents say 1990, but that is wrong; it was 2004.", CF, [["2004"]],
            counterfactual_answer="1990"),
        row("2004.", CF, [["2004"]], counterfactual_answer="1990"),
    ])
    assert got["rgb_correct"] == [1, 1, 0, 1, 1]
    assert got["error_corrected"] == [None, None, 0, 1, 1]
    assert got["error_detected"] == [None, None, 0, 1, 0]
    assert got["rejected"] == [0, 0, 0, 0, 0]


def test_columns_are_null_outside_their_tasks() -> None:
    got = score([
        row("Paris", None, [["Paris"]]),  # not an RGB row
        row(REJECTION, NEG, None, noise_level=1.0),
        row("Velmora and 1912", INT, [["Velmora"], ["1912", "in 1912"]]),
        row("Velmora", INT, [["Velmora"], ["1912"]]),
    ])
    assert got["rgb_correct"] == [None, None, 1, 0]
    assert got["rejected"] == [None, 1, 0, 0]
    assert got["rejection_phrase"] == [None, REJECTION.rstrip("."), None, None]
    assert got["error_detected"] == [None, None, None, None]
    assert got["error_corrected"] == [None, None, None, None]


def test_null_response_gives_nulls() -> None:
    got = score([row(None, NR, [["x"]]), row(None, CF, [["x"]], counterfactual_answer="y")])
    assert got["rgb_correct"] == [None, None]
    assert got["rejected"] == [None, None]
    assert got["error_corrected"] == [None, None]


def test_strict_mode_needs_equality_after_normalization() -> None:
    got = score([
        row("  PARIS. ", NR, [["Paris"]]),
        row("The capital of France is Paris.", NR, [["Paris"]]),
    ], rgb_mode="strict")
    assert got["rgb_correct"] == [1, 0]


def test_official_mode_rules() -> None:
    got = score([
        row("It was the start.", NR, [["ART"]]),  # substring without word boundaries
        row("Insufficient information.", NR, [["x"]]),  # capitalized: not a rejection
        row("insufficient information", NEG, None, noise_level=1.0),
        row("巴 黎", NR, [["巴黎"]], language="zh"),  # spaces removed on Chinese sets
        row("There are factual errors in the documents; it was 2004.", CF, [["2004"]],
            counterfactual_answer="1990"),
        row("That is wrong; it was 2004.", CF, [["2004"]], counterfactual_answer="1990"),
    ], rgb_mode="official")
    assert got["rgb_correct"] == [1, 0, None, 1, 1, 1]
    assert got["rejected"] == [0, 0, 1, 0, 0, 0]
    assert got["rejection_phrase"][2] == "insufficient information"
    assert got["error_detected"][4:] == [1, 0]
    assert got["error_corrected"][4:] == [1, 1]


def test_official_language_falls_back_to_the_question() -> None:
    rows = [row("巴 黎", NR, [["巴黎"]], question="法国的首都是哪里？"),
            row("巴 黎", NR, [["巴黎"]], question="Capital of France?")]
    assert score(rows, rgb_mode="official")["rgb_correct"] == [1, 0]


def test_configured_phrase_lists() -> None:
    rows = [row("No clue, sorry.", NEG, None, noise_level=1.0),
            row("I don't know.", NEG, None, noise_level=1.0),
            row("Bogus claim; it was 2004.", CF, [["2004"]], counterfactual_answer="1990")]
    got = score(rows, rgb_primary_rejections=("no clue",), rgb_secondary_rejections=(),
                rgb_error_keywords=("bogus",))
    assert got["rejected"][:2] == [1, 0]
    assert got["rejection_phrase"][0] == "no clue"
    assert got["error_detected"][2] == 1


def test_citation_markers_do_not_break_strict_matching() -> None:
    assert score([row("Paris [1]", NR, [["Paris"]])], rgb_mode="strict")["rgb_correct"] == [1]


def test_config_section_and_signature(tmp_path: Path) -> None:
    path = tmp_path / "rgb.toml"
    path.write_text(
        '[rgb]\nmode = "official"\nprimary_rejections = ["no clue"]\n'
        'secondary_rejections = []\nerror_keywords = ["bogus"]\n'
    )
    config = load_config(path)
    assert config.rgb_mode == "official"
    assert config.rgb_primary_rejections == ("no clue",)
    assert config.rgb_secondary_rejections == ()
    assert config.rgb_error_keywords == ("bogus",)
    assert "|rgb:official-" in config.signature()
    assert Config().signature().split("|rgb:")[1].startswith("flexible-")
    lists_differ = Config(rgb_error_keywords=("bogus",)).signature()
    assert lists_differ != Config().signature()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[rgb]\nmode = "fuzzy"\n', "mode 'fuzzy' is unknown"),
        ("[rgb]\nerror_keywords = \"wrong\"\n", "error_keywords must be a list of strings"),
        ('[rgb]\nprimary_rejections = [""]\n', "must not contain empty strings"),
        ('[rgb]\nphrases = ["x"]\n', "unknown key 'phrases' in [rgb]"),
    ],
)
def test_bad_rgb_config(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(path)
