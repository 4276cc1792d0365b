"""CLI manners (issue 17, point 6): help with examples, quiet by default, progress bars with
totals, list columns as JSON in ``query --format csv``, and a headline without all-null columns.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar

import polars as pl
import pytest

from pipeline.cli import EXIT_OK, _parser, frames, headline, main, progress

LAYOUTS = Path(__file__).resolve().parent / "fixtures" / "layouts"
RECORDS = [
    {"id": "q1", "question": "Capital of France?", "reference": "Paris", "response": "Paris",
     "model": "m1"},
    {"id": "q2", "question": "Who wrote Dune?", "reference": "Frank Herbert",
     "response": "Herbert", "model": "m1"},
    {"id": "q3", "question": 7, "reference": "x", "response": "x", "model": "m1"},
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    return path


def commands() -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(actions[0].choices)


def example_lines(epilog: str) -> list[str]:
    """The ``rag-eval ...`` command lines of an epilog, continuation lines joined."""
    joined = epilog.replace("\\\n", " ")
    return [line.strip() for line in joined.splitlines() if line.strip().startswith("rag-eval ")]


@pytest.mark.parametrize("name", list(commands()))
def test_every_command_shows_examples_that_parse(name: str, capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main([name, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert "example" in text
    lines = example_lines(text[text.index("example"):])
    assert any(line.startswith(f"rag-eval {name} ") for line in lines)
    for line in lines:  # each example is a valid command line
        args = _parser().parse_args(shlex.split(line, comments=True)[1:])
        assert args.command in commands()


def test_the_program_help_shows_examples(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    lines = example_lines(text[text.index("examples"):])
    assert len(lines) == 4
    for line in lines:
        _parser().parse_args(shlex.split(line)[1:])


def test_examples_keep_their_line_breaks(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    text = capsys.readouterr().out
    assert ("\n  rag-eval evaluate --input gpt4o.csv --model gpt-4o --input llama.csv --model "
            "llama-3 --out out\n") in text


def test_quiet_by_default_warnings_shown_and_v_for_info(tmp_path: Path, capsys) -> None:
    # ragas_v02_hf.jsonl repeats a question: a warning, which the quiet default still shows
    source = LAYOUTS / "ragas_v02_hf.jsonl"
    args = ["evaluate", "--input", str(source), "--model", "m1", "--no-progress",
            "--no-stats", "--metrics", "answer"]
    assert main([*args, "--out", str(tmp_path / "a")]) == EXIT_OK
    quiet = capsys.readouterr()
    assert "read 4 rows: scored 4, rejected 0" in quiet.out
    assert "INFO" not in quiet.err
    assert "WARNING pipeline.io.readers" in quiet.err and "repeat the question" in quiet.err
    assert main(["-v", *args, "--out", str(tmp_path / "b")]) == EXIT_OK
    verbose = capsys.readouterr().err
    assert "INFO pipeline.validate" in verbose and "DEBUG" not in verbose
    assert main(["-vv", *args, "--out", str(tmp_path / "c")]) == EXIT_OK
    assert "DEBUG pipeline.io.readers" in capsys.readouterr().err


class _Bar:
    """Stands in for tqdm: records the total and the rows counted."""

    made: ClassVar[list[_Bar]] = []

    def __init__(self, **kwargs: Any) -> None:
        self.desc, self.total, self.n = kwargs["desc"], kwargs["total"], 0
        self.closed_at: tuple[int | None, int] | None = None
        _Bar.made.append(self)

    def update(self, rows: int) -> None:
        self.n += rows

    def refresh(self) -> None:
        pass

    def close(self) -> None:
        self.closed_at = (self.total, self.n)


def test_progress_bars_have_the_parquet_row_count_as_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setattr(progress, "tqdm", _Bar)
    _Bar.made = []
    first, second = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pl.DataFrame(RECORDS[:2]).write_parquet(first)
    pl.DataFrame([{**row, "question": str(row["question"]), "model": "m2"} for row in RECORDS]
                 ).write_parquet(second)
    assert main(["evaluate", "--input", str(first), "--input", str(second), "--out",
                 str(tmp_path / "out"), "--no-stats", "--metrics", "answer"]) == EXIT_OK
    bars = {bar.desc: bar for bar in _Bar.made}
    assert bars["reading"].closed_at == (5, 5)
    assert bars["scoring"].closed_at == (5, 5)
    # text formats: the number of records is known only once parsed, so no total
    _Bar.made = []
    source = write_jsonl(tmp_path / "r.jsonl", RECORDS)
    assert main(["evaluate", "--input", str(source), "--out", str(tmp_path / "out2"),
                 "--no-stats", "--metrics", "answer"]) == EXIT_OK
    assert {bar.desc: bar.closed_at for bar in _Bar.made} == {
        "reading": (None, 3), "scoring": (None, 2)
    }


def test_scoring_bar_ends_at_the_rows_scored_when_rows_are_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(progress, "tqdm", _Bar)
    _Bar.made = []
    path = tmp_path / "r.parquet"
    pl.DataFrame([{**row, "question": str(row["question"]) if row["id"] != "q3" else None}
                  for row in RECORDS]).write_parquet(path)
    assert main(["evaluate", "--input", str(path), "--out", str(tmp_path / "out"),
                 "--no-stats", "--metrics", "answer"]) == EXIT_OK
    bars = {bar.desc: bar.closed_at for bar in _Bar.made}
    assert bars == {"reading": (3, 3), "scoring": (2, 2)}


@pytest.fixture(scope="module")
def composite_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("composite") / "out"
    assert main(["evaluate", "--input", str(LAYOUTS / "ragas_v02_hf.jsonl"), "--model", "m1",
                 "--out", str(out), "--no-progress", "--no-stats", "--metrics", "overall",
                 "--embedding-backend", "hashed"]) == EXIT_OK
    return out


def test_query_csv_writes_list_columns_as_json(composite_run: Path, capsys) -> None:
    capsys.readouterr()
    sql = ("select id, suggestions, case when row_number = 0 then null else suggestions end "
           "as maybe from scores order by row_number")
    assert main(["query", str(composite_run), sql, "--format", "csv"]) == EXIT_OK
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    expected = pl.read_parquet(composite_run / "scores.parquet").sort("row_number")
    assert [json.loads(row["suggestions"]) for row in rows] == expected["suggestions"].to_list()
    assert all(isinstance(json.loads(row["suggestions"]), list) for row in rows)
    assert rows[0]["maybe"] == ""  # null stays an empty cell
    assert json.loads(rows[1]["maybe"]) == expected["suggestions"][1].to_list()


def test_headline_shows_overall_score_when_the_composites_ran(composite_run: Path, capsys):
    capsys.readouterr()
    headline.print_headline(composite_run)
    header = capsys.readouterr().out.splitlines()[2]
    assert "overall_score" in header
    assert "faithfulness" not in header and "answer_f1" not in header  # not run: all null


def test_headline_drops_all_null_columns(tmp_path: Path, capsys) -> None:
    source = write_jsonl(tmp_path / "r.jsonl", RECORDS[:2])
    assert main(["evaluate", "--input", str(source), "--out", str(tmp_path / "out"),
                 "--no-progress", "--no-stats", "--metrics", "answer"]) == EXIT_OK
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if "answer_f1" in line)
    assert [cell.strip() for cell in header.strip("│┆ ").split("┆")] == [
        "model", "n", "answer_f1"
    ]  # no STR-EM (in by_model), faithfulness, overlap (nor its n_grounding), citation, cost,
    # latency, abstention, overall or retrieval columns


def test_without_empty_columns_keeps_model_and_empty_frames() -> None:
    frame = pl.DataFrame({"model": [None, None], "a": [None, 1], "b": [None, None]},
                         schema={"model": pl.String, "a": pl.Int64, "b": pl.Float64})
    assert frames.without_empty_columns(frame, keep=("model",)).columns == ["model", "a"]
    empty = frame.clear()
    assert frames.without_empty_columns(empty).columns == ["model", "a", "b"]


@pytest.mark.parametrize(("given", "seen"), [(None, "1"), ("3", "3")])
def test_the_command_line_runs_openblas_on_one_thread_unless_set(given: str | None,
                                                                  seen: str) -> None:
    # Set when the command line is imported, before numpy: OpenBLAS reads it when it loads.
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if given is not None:
        env["OPENBLAS_NUM_THREADS"] = given
    probe = ("import sys, os, pipeline.cli; "
             "print(os.environ['OPENBLAS_NUM_THREADS'], 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == [seen, "False"]
