"""The small things of a new user's first hour (issue 28)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample" / "records.parquet"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True,
                          text=True, check=False, cwd=cwd)


def test_a_misspelled_column_gets_a_did_you_mean(tmp_path: Path) -> None:
    records = pl.read_parquet(SAMPLE).head(5).rename({"response": "respnse"})
    records.write_parquet(tmp_path / "typo.parquet")
    done = _cli("evaluate", "--input", "typo.parquet", "--out", "out", "--metrics", "answer",
                cwd=tmp_path)
    assert done.returncode == 2
    line = done.stderr.strip()
    assert "required column 'response' is missing (did you mean 'respnse'?" in line
    assert "--column response=respnse" in line


def test_the_headline_fits_100_columns_and_explains_its_warning_columns(tmp_path: Path) -> None:
    env_run = subprocess.run(
        [sys.executable, "-m", "pipeline", "evaluate", "--input", str(SAMPLE), "--out", "out",
         "--metrics", "answer,citation,abstention,usage,grounding", "--no-progress",
         "--embedding-backend", "hashed", "--cache-dir", "cache", "--no-stats"],
        capture_output=True, text=True, check=False, cwd=tmp_path,
        env={**__import__("os").environ, "COLUMNS": "100"},
    )
    assert env_run.returncode == 0, env_run.stderr
    lines = env_run.stdout.splitlines()
    table = [line for line in lines if line and line[0] in "┌│╞└"]
    assert table and all(len(line) <= 100 for line in table), max(map(len, table))
    header = [c.strip() for c in table[1].strip("│ ").split("┆")]
    assert header[:3] == ["model", "n", "answer_f1"]  # the most important columns first
    start = next(k for k, line in enumerate(lines) if line.startswith("(+"))
    assert "--wide" in " ".join(lines[start:start + 3])
    assert any(line.startswith("n_idk_with_citation, idk_check:") for line in lines)
    assert all(len(line) <= 100 for line in lines if not line.startswith("signature:"))
    assert "%" in table[3]  # the abstain rate as a percentage
    wide = subprocess.run(
        [sys.executable, "-m", "pipeline", "query", "out", "select count(*) from headline"],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )
    assert wide.returncode == 0


def test_compare_of_unchanged_runs_prints_no_negative_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # compare reads the scores alone, so the run is evaluated without statistics once, and
    # its copy is the unchanged second run
    done = _cli("evaluate", "--input", str(SAMPLE), "--out", "a", "--metrics", "answer",
                "--no-progress", "--no-stats", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    done = _cli("compare", "a", "b", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "1650 items compared" in done.stdout
    assert "-0.000" not in done.stdout and "0.000" in done.stdout
    assert "regression gate passed" in done.stdout
    with pytest.raises(SystemExit) as exited:
        main(["compare", "--help"])
    assert exited.value.code == 0
    help_text = capsys.readouterr().out
    assert "default: answer_f1=0.02, answer_em=0.02" in " ".join(help_text.split())


def test_metrics_lists_whole_descriptions(tmp_path: Path) -> None:
    done = _cli("metrics", cwd=tmp_path)
    assert done.returncode == 0
    assert "…" not in done.stdout
    assert "SQuAD v2 token F1 (multiset overlap of normalized tokens); max over references." in (
        " ".join(done.stdout.split())
    )
