"""``compare`` cannot pass by accident: two runs with no item in common are refused (issue 28).

The same rows read from a JSONL file with ids and from a layout without them get different
ids, so nothing pairs; the gate must not report "passed" over nothing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pipeline.compare import IncomparableRunsError, compare
from pipeline.config import Config
from pipeline.drivers import evaluate

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample" / "records.parquet"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("refusal")
    rows = pl.read_parquet(SAMPLE).head(30)
    rows.write_parquet(tmp / "a.parquet")
    other = rows.with_columns((pl.lit("other-") + pl.col("id")).alias("id"))
    other.write_parquet(tmp / "b.parquet")
    config = Config(metrics=("answer",), embedding_cache_dir=None)
    for name in ("a", "b"):
        evaluate([tmp / f"{name}.parquet"], tmp / name, config, stats=False)
    return tmp / "a", tmp / "b"


def test_no_common_item_is_refused_with_the_reason(runs: tuple[Path, Path]) -> None:
    with pytest.raises(IncomparableRunsError, match=r"no item in common \(A: 30 items, B: 30\)"):
        compare(*runs)


def test_the_cli_exits_2_with_one_line(runs: tuple[Path, Path], tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "compare", str(runs[0]), str(runs[1]), "--out",
         str(tmp_path / "cmp")],
        capture_output=True, text=True, check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no item in common" in lines[0] and "derived" in lines[0]
    assert "gate passed" not in done.stdout


def test_a_comparison_counts_its_items(runs: tuple[Path, Path]) -> None:
    assert compare(runs[0], runs[0]).n_compared == 30
