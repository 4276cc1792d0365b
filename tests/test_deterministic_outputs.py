"""Issue 16, point 7: every output file lists its rows in the same, documented order (input
order: file, then row) in every run, however many chunks, batches and threads the run used.
The hostile case: ``texts.parquet`` came out in another order at 200k rows, because DuckDB
scans the many row groups of the work file on several threads."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import polars as pl
import pytest

from pipeline import drivers as evaluate_module
from pipeline.cli import EXIT_OK, main
from pipeline.config import load_config
from pipeline.engines import local
from pipeline.io.parquet_options import ContractWriter
from pipeline.metrics.registry import resolve
from pipeline.scoring import BatchScorer

#: Rows per chunk of pass 1: every chunk is a row group of the work file DuckDB scans.
SMALL_CHUNKS = 50
FILES = ("a.jsonl", "b.jsonl")
N_ROWS = 800  # per file


def row(i: int) -> dict:
    if i % 97 == 5:  # invalid: rejected in pass 1
        return {"id": f"q{i}", "model": "m0", "question": i, "reference": "x", "response": "x"}
    if i % 89 == 7:  # repeats the key of row 0 of its model: a duplicate (found by DuckDB)
        return {"id": "q0", "model": f"m{0 % 3}", "question": "dup", "reference": "x",
                "response": f"copy {i}"}
    return {"id": f"q{i}", "model": f"m{i % 3}", "question": f"question {i}?",
            "reference": f"answer {i}", "response": f"answer {i}" if i % 4 else "no idea"}


def expected_rows() -> tuple[list[int], list[int]]:
    """Row numbers of one file's kept rows and of its rejected rows, in input order."""
    kept = [i for i in range(N_ROWS) if i % 97 != 5 and i % 89 != 7]
    return kept, [i for i in range(N_ROWS) if i % 97 == 5 or i % 89 == 7]


@pytest.fixture
def inputs(tmp_path: Path) -> list[Path]:
    paths = []
    for name in FILES:
        path = tmp_path / name
        path.write_text("".join(json.dumps(row(i)) + "\n" for i in range(N_ROWS)),
                        encoding="utf-8")
        paths.append(path)
    return paths


def in_input_order(frame: pl.DataFrame, inputs: list[Path], rows: list[int]) -> None:
    expected = [(str(path), i) for path in inputs for i in rows]
    assert list(zip(frame["source"], frame["row_number"], strict=True)) == expected


def test_engine_writes_texts_and_rejections_in_input_order(inputs: list[Path],
                                                           tmp_path: Path) -> None:
    config = load_config(None, metrics=("answer",))
    specs = resolve(config.metrics)
    schema = BatchScorer.for_config(config, specs=specs).output_schema
    kept, rejected = expected_rows()
    runs = []
    for attempt in range(3):
        run = tmp_path / f"run{attempt}"
        run.mkdir()
        with ContractWriter(run / "scores.parquet", schema) as sink:
            result, _ = local.stream_scores(
                inputs, [], config, specs, work_dir=run / "work", sink=sink,
                rejected_target=run / "rejected.parquet", texts_target=run / "texts.parquet",
                batch_rows=64, chunk_rows=SMALL_CHUNKS,
            )
        assert (result.n_scored, result.n_rejected) == (2 * len(kept), 2 * len(rejected))
        frames = {name: pl.read_parquet(run / f"{name}.parquet")
                  for name in ("scores", "texts", "rejected")}
        in_input_order(frames["texts"], inputs, kept)
        in_input_order(frames["scores"], inputs, kept)
        in_input_order(frames["rejected"], inputs, rejected)
        runs.append(frames)
    for frames in runs[1:]:
        for name, frame in frames.items():
            assert frame.equals(runs[0][name]), name


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs through the command line read in chunks of :data:`SMALL_CHUNKS` rows."""
    chunked = functools.partial(local.stream_scores, chunk_rows=SMALL_CHUNKS)
    monkeypatch.setattr(evaluate_module, "stream_scores", chunked)
    monkeypatch.setattr(local, "stream_scores", chunked)


@pytest.mark.usefixtures("small_chunks")
def test_identical_out_runs_write_identical_files(inputs: list[Path], tmp_path: Path) -> None:
    args = ["evaluate", *(a for path in inputs for a in ("--input", str(path))),
            "--batch-rows", "64", "--metrics", "answer", "--resamples", "20", "--no-progress"]
    for name in ("one", "two"):
        assert main([*args, "--out", str(tmp_path / name)]) == EXIT_OK
    kept, rejected = expected_rows()
    in_input_order(pl.read_parquet(tmp_path / "one" / "texts.parquet"), inputs, kept)
    in_input_order(pl.read_parquet(tmp_path / "one" / "rejected.parquet"), inputs, rejected)
    for name in ("scores", "texts", "rejected", "intervals", "comparisons"):
        one = (tmp_path / "one" / f"{name}.parquet").read_bytes()
        assert one == (tmp_path / "two" / f"{name}.parquet").read_bytes(), name


@pytest.mark.usefixtures("small_chunks")
def test_identical_store_runs_write_identical_files(inputs: list[Path], tmp_path: Path) -> None:
    store = tmp_path / "store"
    args = ["evaluate", *(a for path in inputs for a in ("--input", str(path))),
            "--store", str(store), "--batch-rows", "64", "--metrics", "answer", "--no-stats",
            "--no-progress"]
    assert main([*args, "--run-id", "one"]) == EXIT_OK
    assert main([*args, "--run-id", "two", "--force"]) == EXIT_OK  # scored again, not reused
    one, two = store / "eval_run=one", store / "eval_run=two"
    files = sorted(p.relative_to(one) for p in one.rglob("*.parquet"))
    assert files == sorted(p.relative_to(two) for p in two.rglob("*.parquet"))
    assert [f.as_posix() for f in files] == [
        "rejected/part-0.parquet", "scores/model=m0/part-0.parquet",
        "scores/model=m1/part-0.parquet", "scores/model=m2/part-0.parquet",
        "texts/part-0.parquet",
    ]
    kept, rejected = expected_rows()
    in_input_order(pl.read_parquet(one / "texts" / "part-0.parquet"), inputs, kept)
    in_input_order(pl.read_parquet(one / "rejected" / "part-0.parquet"), inputs, rejected)
    for name in files:
        assert pl.read_parquet(one / name).equals(pl.read_parquet(two / name)), name
