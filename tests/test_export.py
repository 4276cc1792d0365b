"""`rag-eval export`: one flat table with texts, scores and feedback, written atomically."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main

ROWS = [
    {"id": "q1", "model": "m", "category": "Factual", "question": "Capital of France?",
     "reference": "Paris", "response": "Paris\tis the capital [1].",
     "contexts": ["Paris is the capital of France."], "gold_citations": [1]},
    {"id": "q2", "model": "m", "category": "Creative", "question": "A poem?",
     "reference": "Roses", "response": 'Roses are red,\n"violets" are blue.'},
]


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    source = tmp_path / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(source), "--out", str(out), "--no-progress",
                 "--embedding-backend", "hashed"]) == 0
    return out


def test_tsv_export_round_trips_texts_and_scores(run_dir: Path, capsys) -> None:
    assert main(["export", str(run_dir), "--format", "tsv"]) == 0
    assert "wrote 2 rows" in capsys.readouterr().out
    table = pl.read_csv(run_dir / "export.tsv", separator="\t", infer_schema=False)
    assert table.columns[:9] == ["id", "model", "run", "category", "noise_level",
                                 "question_type", "question", "reference", "response"]
    assert table["response"].to_list() == [r["response"] for r in ROWS]  # tabs, newlines, quotes
    scores = pl.read_parquet(run_dir / "scores.parquet")
    assert float(table["answer_f1"][0]) == scores["answer_f1"][0]
    assert {"quality_feedback", "safety_feedback", "bias_categories"} <= set(table.columns)


def test_parquet_export_keeps_lists(run_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "x" / "all.parquet"
    assert main(["export", str(run_dir), "--format", "parquet", "--out", str(target)]) == 0
    table = pl.read_parquet(target)
    assert table.schema["bias_categories"] == pl.List(pl.String)
    assert table["question"].to_list() == [r["question"] for r in ROWS]


def test_export_without_a_run_is_a_clear_error(tmp_path: Path, capsys) -> None:
    assert main(["export", str(tmp_path)]) == 2
    assert "scores.parquet is missing" in capsys.readouterr().err
