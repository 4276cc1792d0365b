"""The small things of a new user's first hour (issue 28)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl

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
