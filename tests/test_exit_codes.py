"""Issue 16, points 3 and 6: a user error exits 2 with one line and no traceback; a run that
scores nothing, or rejects more than ``--max-rejected``, exits 1 with its outputs written and
its top rejection reasons in the run's line."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import EXIT_ERROR, EXIT_OK, EXIT_REJECTED, main

GOOD = {"id": "g1", "model": "m", "question": "Capital of France?", "reference": "Paris",
        "response": "Paris"}
#: Four rows, each rejected for another reason (the third two ways: its id repeats g1's key).
BAD = [
    {"id": "b1", "model": "m", "question": 7, "reference": "x", "response": "x"},
    {"id": "b2", "model": "m", "question": "?", "reference": None, "response": "x"},
    {"id": "b3", "model": "m", "question": "?", "reference": "x", "response": "x",
     "contexts": ["one"], "citations": [3]},
    {"id": "b4", "model": "m", "question": "?", "reference": "x", "response": "x",
     "noise_level": "abc"},
]
FAST = ["--no-progress", "--metrics", "answer", "--resamples", "10"]


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def error_lines(err: str) -> list[str]:
    """stderr without the INFO log lines."""
    return [line for line in err.splitlines() if line and not line.startswith("INFO ")]


# -- point 3: user errors ------------------------------------------------------------------


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "good.jsonl", [GOOD])


@pytest.fixture
def a_file(tmp_path: Path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("not a directory\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (["--out", "{file}"], "error: {file} is a file, not a directory"),
        (["--out", "{file}/sub"], "error: {file} is a file, not a directory "
                                  "(output path {file}/sub)"),
        (["--store", "{file}"], "error: {file} is a file, not a directory"),
        (["--out", "{tmp}/out", "--report", "{tmp}"],
         "error: {tmp} is a directory; give a file path"),
        (["--out", "{tmp}/out", "--report", "{file}/r.html"],
         "error: {file} is a file, not a directory (output path {file}/r.html)"),
        (["--out", "{tmp}/out", "--cache-dir", "{file}"],
         "error: {file} is a file, not a directory"),
    ],
    ids=["out-is-a-file", "out-below-a-file", "store-is-a-file", "report-is-a-directory",
         "report-below-a-file", "cache-dir-is-a-file"],
)
def test_unwritable_output_paths_exit_2_with_one_line(
    good: Path, a_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    target: list[str], expected: str,
) -> None:
    fill = {"file": str(a_file), "tmp": str(tmp_path)}
    args = [arg.format(**fill) for arg in target]
    assert main(["evaluate", "--input", str(good), *args, *FAST]) == EXIT_ERROR
    captured = capsys.readouterr()
    assert error_lines(captured.err) == [expected.format(**fill)]
    assert captured.out == ""
    assert a_file.read_text(encoding="utf-8") == "not a directory\n"
    assert not (tmp_path / "out").exists()  # refused before anything was written


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_an_unwritable_directory_exits_2(good: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        code = main(["evaluate", "--input", str(good), "--out", str(locked / "out"), *FAST])
    finally:
        locked.chmod(0o755)
    assert code == EXIT_ERROR
    assert error_lines(capsys.readouterr().err) == [
        f"error: {locked} is not writable (output path {locked / 'out'})"
    ]


def test_other_commands_refuse_unwritable_outputs(
    good: Path, a_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    store, out = tmp_path / "store", tmp_path / "out"
    assert main(["evaluate", "--input", str(good), "--store", str(store), *FAST]) == EXIT_OK
    assert main(["evaluate", "--input", str(good), "--out", str(out), *FAST]) == EXIT_OK
    capsys.readouterr()
    for args, expected in [
        (["checkout", str(store), "--out", str(a_file)], f"error: {a_file} is a file, not a "
                                                         "directory"),
        (["report", str(out), "--out", str(tmp_path)], f"error: {tmp_path} is a directory; "
                                                       "give a file path"),
        (["compare", str(out), str(out), "--out", str(a_file)], f"error: {a_file} is a file, "
                                                                "not a directory"),
    ]:
        assert main(args) == EXIT_ERROR, args
        assert error_lines(capsys.readouterr().err) == [expected]


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--batch-rows", "0"], "argument --batch-rows: must be 1 or more, got 0"),
        (["--batch-rows", "-5"], "argument --batch-rows: must be 1 or more, got -5"),
        (["--max-rejected", "1.5"], "argument --max-rejected: must be a number from 0 to 1, "
                                    "got '1.5'"),
        (["--max-rejected", "nan"], "argument --max-rejected: must be a number from 0 to 1, "
                                    "got 'nan'"),
        (["--max-rejected", "a lot"], "argument --max-rejected: must be a number from 0 to 1, "
                                      "got 'a lot'"),
    ],
)
def test_bad_numbers_are_usage_errors(good: Path, tmp_path: Path, option: list[str],
                                      message: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["evaluate", "--input", str(good), "--out", str(tmp_path / "out"), *option])
    assert exited.value.code == EXIT_ERROR
    assert capsys.readouterr().err.splitlines()[-1] == f"rag-eval evaluate: error: {message}"


# -- point 6: runs that score nothing or reject too much -------------------------------------

REASONS = [
    "rejected rows by reason:",
    "        1  citations: [...] outside N..N (the number of contexts)",
    "        1  noise_level: expected a finite number, got string \"...\"",
    "        1  question: expected string, got int",
    "        1  reference: is null (required)",
]


def test_every_row_rejected_exits_1_with_outputs_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_jsonl(tmp_path / "bad.jsonl", BAD)
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(source), "--out", str(out), *FAST]) == EXIT_REJECTED
    captured = capsys.readouterr()
    assert error_lines(captured.err) == [
        "error: no row was scored (4 of 4 rows rejected); the outputs are written"
    ]
    lines = captured.out.splitlines()
    assert lines[:7] == [
        f"read 4 rows: scored 0, rejected 4 -> {out}", *REASONS,
        f"rejected rows and reasons: {out / 'rejected.parquet'}",
    ]
    assert pl.read_parquet(out / "scores.parquet").height == 0
    assert pl.read_parquet(out / "rejected.parquet")["id"].to_list() == ["b1", "b2", "b3", "b4"]


def test_every_row_rejected_in_a_store_exits_1_and_commits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_jsonl(tmp_path / "bad.jsonl", BAD)
    store = tmp_path / "store"
    code = main(["evaluate", "--input", str(source), "--store", str(store), "--run-id", "r1",
                 *FAST])
    assert code == EXIT_REJECTED
    captured = capsys.readouterr()
    assert error_lines(captured.err) == [
        "error: no row was scored (4 of 4 rows rejected); the outputs are written"
    ]
    run_dir = store / "eval_run=r1"
    assert captured.out.splitlines()[:7] == [
        f"run r1: read 4 rows: scored 0, reused 0, rejected 4 -> {run_dir}", *REASONS,
        f"rejected rows and reasons: {(run_dir / 'rejected' / '*.parquet').as_posix()}",
    ]
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "committed"
    assert manifest["counts"] == {"read": 4, "scored": 0, "reused": 0, "rejected": 4}


@pytest.mark.parametrize(
    ("limit", "code", "message"),
    [
        (None, EXIT_OK, None),
        ("1", EXIT_OK, None),
        ("0.8", EXIT_OK, None),  # 4 of 5 is not more than 0.8
        ("0.79", EXIT_REJECTED,
         "error: 4 of 5 rows rejected (80.00%), more than --max-rejected 0.79; the outputs "
         "are written"),
        ("0", EXIT_REJECTED,
         "error: 4 of 5 rows rejected (80.00%), more than --max-rejected 0; the outputs are "
         "written"),
    ],
)
@pytest.mark.parametrize("target", ["--out", "--store"])
def test_max_rejected_fails_a_run_that_rejects_more(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], limit: str | None, code: int,
    message: str | None, target: str,
) -> None:
    source = write_jsonl(tmp_path / "mixed.jsonl", [GOOD, *BAD])
    option = [] if limit is None else ["--max-rejected", limit]
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(source), target, str(out), *option, *FAST]) == code
    captured = capsys.readouterr()
    assert error_lines(captured.err) == ([] if message is None else [message])
    assert REASONS[1] in captured.out.splitlines()  # the reasons are listed either way
    if target == "--out":
        assert pl.read_parquet(out / "scores.parquet")["id"].to_list() == ["g1"]


def test_reasons_beyond_the_top_five_are_summed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    duplicates = [{**GOOD, "response": f"copy {i}"} for i in range(3)]
    rows = [GOOD, *duplicates, *BAD, {**BAD[0], "id": "b5"},
            {"id": "b6", "model": "m", "question": "?", "reference": "x", "response": 5}]
    source = write_jsonl(tmp_path / "many.jsonl", rows)
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(source), "--out", str(out), *FAST]) == EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[:9] == [
        f"read 10 rows: scored 1, rejected 9 -> {out}",
        "rejected rows by reason:",
        "        3  duplicate id '...' (first at row N)",
        "        2  question: expected string, got int",
        "        1  citations: [...] outside N..N (the number of contexts)",
        "        1  noise_level: expected a finite number, got string \"...\"",
        "        1  reference: is null (required)",
        "        1  (1 other reason)",
        f"rejected rows and reasons: {out / 'rejected.parquet'}",
    ]


def test_no_row_scored_is_a_logged_error_in_json_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_jsonl(tmp_path / "bad.jsonl", BAD)
    code = main(["--log-format", "json", "evaluate", "--input", str(source), "--out",
                 str(tmp_path / "out"), *FAST])
    assert code == EXIT_REJECTED
    entries = [json.loads(line) for line in capsys.readouterr().err.splitlines() if line]
    assert entries[-1]["level"] == "ERROR"
    assert entries[-1]["message"] == (
        "no row was scored (4 of 4 rows rejected); the outputs are written"
    )
