"""End to end: ``ingest-rgb`` then ``evaluate`` through the CLI, on the bundled sample and on the
real RGB files (official mode against a pure-Python oracle of the published rules)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from test_rgb_matching import RGB_DIR, load, needs_rgb, oracle_correct

from pipeline.cli import main
from pipeline.metrics.robustness.rgb import answer_groups_from_json
from pipeline.views import run_query

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample" / "rgb"
NOISE_COLUMNS = ["noise_acc_0", "noise_acc_20", "noise_acc_40", "noise_acc_60", "noise_acc_80"]


def ingest_and_evaluate(tmp_path: Path, data: Path, outputs: Path, *extra: str) -> Path:
    records = tmp_path / "records.parquet"
    assert main(["ingest-rgb", "--data", str(data), "--outputs", str(outputs),
                 "--out", str(records)]) == 0
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(records), "--out", str(out), "--metrics", "rgb",
                 "--no-progress", *extra]) == 0
    return out


def test_sample_flow_prints_the_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = ingest_and_evaluate(
        tmp_path, SAMPLE / "rgb_data.json", SAMPLE / "rgb_outputs.jsonl"
    )
    printed = capsys.readouterr().out
    assert "480 records" in printed
    assert "RGB robustness" in printed
    summary = run_query(out, "select * from rgb_summary order by model")
    assert summary["model"].to_list() == ["atlas-7b", "borealis-13b", "cirrus-70b"]
    assert summary["n"].to_list() == [160, 160, 160]
    assert summary.drop("signature").null_count().sum_horizontal().item() == 0
    for row in summary.iter_rows(named=True):
        curve = [row[c] for c in NOISE_COLUMNS]
        assert curve == sorted(curve, reverse=True), row["model"]  # accuracy falls with noise
    atlas, _, cirrus = summary.iter_rows(named=True)
    assert cirrus["noise_acc_0"] > atlas["noise_acc_0"]
    assert cirrus["rejection_rate"] > atlas["rejection_rate"]


def test_sample_summary_equals_the_row_level_columns(tmp_path: Path) -> None:
    """The views aggregate exactly the per-row columns (recomputed here with polars)."""
    out = ingest_and_evaluate(
        tmp_path, SAMPLE / "rgb_data.json", SAMPLE / "rgb_outputs.jsonl"
    )
    scores = pl.read_parquet(out / "scores.parquet")
    expected = (
        scores.filter(pl.col("task") == "negative_rejection")
        .group_by("model")
        .agg((100 * pl.col("rejected").mean()).alias("rate"))
        .sort("model")
    )
    got = run_query(out, "select model, rejection_rate from rgb_negative_rejection order by 1")
    assert got["rejection_rate"].to_list() == pytest.approx(expected["rate"].to_list())


def test_ingest_sets_aside_unknown_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outputs = tmp_path / "outputs.jsonl"
    rows = [
        {"id": 0, "model": "m", "task": "noise_robustness", "noise_rate": 0.0, "response": "x"},
        {"id": 999, "model": "m", "task": "noise_robustness", "noise_rate": 0.0, "response": "x"},
    ]
    outputs.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    code = main(["ingest-rgb", "--data", str(SAMPLE / "rgb_data.json"), "--outputs",
                 str(outputs), "--out", str(tmp_path / "r.parquet")])
    assert code == 1
    assert "1 output rows set aside" in capsys.readouterr().out
    rejected = pl.read_parquet(tmp_path / "r.rejected.parquet")
    assert rejected["reason"].to_list() == [f"id: 999 not in {SAMPLE / 'rgb_data.json'}"]


def test_ingest_missing_response_column_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = tmp_path / "outputs.jsonl"
    outputs.write_text(json.dumps({"id": 0, "model": "m", "task": "noise_robustness",
                                   "noise_rate": 0.0, "answer": "x"}) + "\n")
    code = main(["ingest-rgb", "--data", str(SAMPLE / "rgb_data.json"), "--outputs",
                 str(outputs), "--out", str(tmp_path / "r.parquet")])
    assert code == 2
    err = capsys.readouterr().err
    assert "'response'" in err and str(outputs) in err and "--response-column" in err


def _official_outputs(name: str) -> tuple[list[dict], list[int], list[int]]:
    """Outputs for every item of a counterfactual file, with the oracle's labels."""
    chinese = name.startswith("zh")
    outputs, correct, detected = [], [], []
    for item in load(name):
        groups = answer_groups_from_json(item["answer"])
        right = " ".join(group[0] for group in groups)
        fake = item["fakeanswer"] if isinstance(item["fakeanswer"], str) else item["fakeanswer"][0]
        flag = "事实性错误" if chinese else "factual errors"
        responses = [
            right,  # correct
            fake,  # repeats the counterfactual answer
            f"The documents contain {flag}; the answer is {right.upper()}.",  # detected, corrected
            f"There are Factual Errors: {fake}",  # capitalized: not detected in official mode
            " ".join(right),  # spaced out: correct on Chinese sets only
        ]
        for k, response in enumerate(responses):
            outputs.append({"id": item["id"], "model": f"m{k}", "task":
                            "counterfactual_robustness", "noise_rate": 0.0, "response": response})
            correct.append(oracle_correct(response, item["answer"], chinese=chinese,
                                          noise_rate=0.0))
            text = response.replace(" ", "") if chinese else response
            detected.append(int("factual errors" in text or "事实性错误" in text))
    return outputs, correct, detected


@needs_rgb
@pytest.mark.parametrize("name", ["en_fact.json", "zh_fact.json"])
def test_official_mode_on_real_counterfactual_sets(tmp_path: Path, name: str) -> None:
    outputs, correct, detected = _official_outputs(name)
    path = tmp_path / "outputs.jsonl"
    path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in outputs),
                    encoding="utf-8")
    config = tmp_path / "official.toml"
    config.write_text('[rgb]\nmode = "official"\n')
    out = ingest_and_evaluate(tmp_path, RGB_DIR / name, path, "--config", str(config))
    expected = (
        pl.DataFrame({"model": [o["model"] for o in outputs], "c": correct, "d": detected})
        .group_by("model")
        .agg((100 * pl.col("c").mean()).alias("accuracy"),
             (100 * pl.col("d").mean()).alias("error_detection_rate"))
        .sort("model")
    )
    got = run_query(out, "select model, accuracy, error_detection_rate, error_correction_rate "
                         "from rgb_counterfactual order by model")
    assert got["accuracy"].to_list() == pytest.approx(expected["accuracy"].to_list())
    assert got["error_correction_rate"].to_list() == pytest.approx(expected["accuracy"].to_list())
    assert got["error_detection_rate"].to_list() == pytest.approx(
        expected["error_detection_rate"].to_list()
    )
    # The correct responses are counted correct, the repeated counterfactuals are not.
    assert got["accuracy"][0] == 100.0
    assert got["error_detection_rate"].to_list()[2:4] == [100.0, 0.0]
