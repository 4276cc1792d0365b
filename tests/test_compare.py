"""Run diffs: ``rag-eval compare`` on two runs of the sample, identical and one degraded."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import EXIT_ERROR, EXIT_GATE, EXIT_OK, main
from pipeline.compare import (
    DELTAS_FILE,
    REGRESSED_FILE,
    Gate,
    IncomparableRunsError,
    compare,
)
from pipeline.views import connect

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample" / "records.parquet"
METRICS = "answer,citation,abstention,usage"
DEGRADED = "atlas-7b"
RESAMPLES = "200"


def subset() -> pl.DataFrame:
    """The first 20 questions of the sample: 300 rows, 3 models x 5 noise levels."""
    frame = pl.read_parquet(SAMPLE)
    ids = sorted(frame["id"].unique().to_list())[:20]
    return frame.filter(pl.col("id").is_in(ids))


def degrade(frame: pl.DataFrame) -> pl.DataFrame:
    """Every answer of one model at noise 0.0 and 0.2 replaced by an abstention."""
    hit = (pl.col("model") == DEGRADED) & (pl.col("noise_level") <= 0.2)
    return frame.with_columns(
        pl.when(hit).then(pl.lit("I don't know.")).otherwise(pl.col("response")).alias("response")
    )


def run(tmp: Path, name: str, frame: pl.DataFrame, *extra: str) -> Path:
    records = tmp / f"{name}.parquet"
    frame.write_parquet(records)
    out = tmp / name
    code = main(["evaluate", "--input", str(records), "--out", str(out), "--metrics", METRICS,
                 "--no-progress", "--resamples", RESAMPLES, *extra])
    assert code == EXIT_OK
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("compare")
    base = subset()
    runs = {
        "a": run(tmp, "a", base),
        "degraded": run(tmp, "degraded", degrade(base)),
        "partial": run(tmp, "partial", base.filter(pl.col("id") != base["id"][0])),
    }
    config = tmp / "official.toml"
    config.write_text('[rgb]\nmode = "official"\n')
    runs["other_settings"] = run(tmp, "other_settings", base, "--config", str(config))
    runs["copy"] = tmp / "copy"
    shutil.copytree(runs["a"], runs["copy"])
    return runs


def test_identical_runs_have_zero_deltas_and_pass(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["compare", str(runs["a"]), str(runs["copy"]), "--resamples", RESAMPLES])
    assert code == EXIT_OK
    assert "regression gate passed" in capsys.readouterr().out
    deltas = pl.read_parquet(runs["copy"] / "compare" / DELTAS_FILE)
    assert deltas.height > 0
    assert deltas["delta"].abs().max() == 0.0
    assert deltas["ci_low"].abs().max() == 0.0 and deltas["ci_high"].abs().max() == 0.0
    assert pl.read_parquet(runs["copy"] / "compare" / REGRESSED_FILE).height == 0


def test_degraded_model_fails_the_gate_and_lists_its_items(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["compare", str(runs["a"]), str(runs["degraded"]), "--resamples", RESAMPLES])
    printed = capsys.readouterr().out
    assert code == EXIT_GATE
    assert "regression gate FAILED" in printed and f"{DEGRADED}: answer_f1 fell by" in printed
    result = compare(runs["a"], runs["degraded"], resamples=int(RESAMPLES))
    # Exactly the items that were answered right before and replaced by an abstention.
    before = pl.read_parquet(runs["a"] / "scores.parquet")
    expected = before.filter(
        (pl.col("model") == DEGRADED) & (pl.col("noise_level") <= 0.2) & (pl.col("answer_em") == 1)
    )
    em = result.regressed.filter(pl.col("metric") == "answer_em")
    assert sorted(em["id"].to_list()) == sorted(expected["id"].to_list())
    assert set(em["model"]) == {DEGRADED}
    assert em["before"].unique().to_list() == [1.0] and em["after"].unique().to_list() == [0.0]
    overall = result.deltas.filter((pl.col("slice") == "all") & (pl.col("metric") == "answer_f1"))
    by_model = dict(overall.select("model", "delta").rows())
    assert by_model[DEGRADED] < -0.05
    assert by_model["borealis-13b"] == 0.0 and by_model["cirrus-70b"] == 0.0
    # The noise levels that were not touched show no change for the degraded model either.
    untouched = result.deltas.filter(
        (pl.col("model") == DEGRADED) & (pl.col("slice") == "noise_level")
        & pl.col("noise_level").is_in([0.4, 0.6, 0.8])
    )
    assert untouched["delta"].abs().max() == 0.0


def test_gate_thresholds_are_configurable(runs: dict[str, Path]) -> None:
    lenient = Gate(max_drop={"answer_f1": 0.9}, max_regressed_items=None)
    assert compare(runs["a"], runs["degraded"], gate=lenient, resamples=50).failures == ()
    strict_items = Gate(max_drop={}, max_regressed_items=0)
    failures = compare(runs["a"], runs["degraded"], gate=strict_items, resamples=50).failures
    assert len(failures) == 1 and "items regressed (more than 0)" in failures[0]
    code = main(["compare", str(runs["a"]), str(runs["degraded"]), "--max-drop",
                 "answer_f1=0.9", "--resamples", "50"])
    assert code == EXIT_OK


def test_new_and_missing_items(runs: dict[str, Path]) -> None:
    result = compare(runs["a"], runs["partial"], resamples=50)
    dropped = subset()["id"][0]
    assert result.new_items.height == 0
    assert set(result.missing_items["id"]) == {dropped}
    assert result.missing_items.height == 15  # 3 models x 5 noise levels
    reverse = compare(runs["partial"], runs["a"], resamples=50)
    assert reverse.new_items.height == 15 and reverse.missing_items.height == 0


def test_different_settings_are_refused_unless_forced(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(IncomparableRunsError, match="rgb: "):
        compare(runs["a"], runs["other_settings"], resamples=50)
    code = main(["compare", str(runs["a"]), str(runs["other_settings"]), "--resamples", "50"])
    assert code == EXIT_ERROR
    assert "--force" in capsys.readouterr().err
    forced = main(["compare", str(runs["a"]), str(runs["other_settings"]), "--force",
                   "--resamples", "50"])
    assert forced == EXIT_OK


def test_bad_gate_flag_is_a_clear_error(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["compare", str(runs["a"]), str(runs["copy"]), "--max-drop", "nonsense"])
    assert code == EXIT_ERROR
    assert "--max-drop expects METRIC=NUMBER" in capsys.readouterr().err


def test_missing_run_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", str(tmp_path / "nope"), str(tmp_path / "nope2")]) == EXIT_ERROR
    assert "no scores.parquet" in capsys.readouterr().err


def test_model_comparison_view_of_a_run(runs: dict[str, Path]) -> None:
    """evaluate writes the paired comparisons; the view has one row per its grain."""
    with connect(runs["a"]) as con:
        n, distinct, pairs = con.execute(
            "select count(*), count(distinct (model_a, model_b, slice, noise_level, category, "
            "question_type, task, metric)), "
            "count(distinct (model_a, model_b)) from model_comparison"
        ).fetchone()
        em = con.execute(
            "select test, n_pairs from model_comparison where slice = 'all' "
            "and metric = 'answer_em' and model_a = 'atlas-7b' and model_b = 'cirrus-70b'"
        ).fetchone()
    assert n == distinct > 0
    assert pairs == 3
    assert em == ("mcnemar exact", 100)


def test_report_with_a_baseline_has_the_run_comparison(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "report.html"
    code = main(["report", str(runs["degraded"]), "--out", str(target),
                 "--compare", str(runs["a"])])
    assert code == EXIT_OK
    assert f"report: {target}" in capsys.readouterr().out
    page = target.read_text(encoding="utf-8")
    assert 'id="run-comparison"' in page
    assert DEGRADED in page


def test_stats_command_recomputes_with_its_seed(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = tmp_path / "run"
    shutil.copytree(runs["a"], run_dir)
    before = (run_dir / "intervals.parquet").read_bytes()
    assert main(["stats", str(run_dir), "--resamples", RESAMPLES, "--seed", "0"]) == EXIT_OK
    assert (run_dir / "intervals.parquet").read_bytes() == before  # evaluate used seed 0 too
    printed = capsys.readouterr().out
    assert "resamples 200, seed 0" in printed and "significant after Holm" in printed
    assert main(["stats", str(run_dir), "--resamples", RESAMPLES, "--seed", "7"]) == EXIT_OK
    assert (run_dir / "intervals.parquet").read_bytes() != before
    with connect(run_dir) as con:
        seeds = con.execute("select distinct seed from intervals").fetchall()
    assert seeds == [(7,)]
    with pytest.raises(SystemExit):  # argparse rejects a negative count
        main(["stats", str(run_dir), "--resamples", "-1"])
