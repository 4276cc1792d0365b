"""The command line's part of a new user's first hour (issue 34): how to run the tool after
``make evaluate``, a light start-up, the model cell, the signature line, a run that scores
nothing, and the README's sample figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample" / "records.parquet"
RGB_SAMPLE = ROOT / "data" / "sample" / "rgb"
#: Modules a light command must not load: polars, the metric registry, the drivers.
HEAVY = ("polars", "pipeline.metrics.registry", "pipeline.drivers", "pipeline.api")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipeline", *args], capture_output=True,
                          text=True, check=False, cwd=cwd)


def _loaded_by(*argv: str) -> set[str]:
    """The modules ``rag-eval ARGV`` has imported when it exits."""
    code = ("import runpy, sys, json\n"
            f"sys.argv = ['rag-eval', *{list(argv)!r}]\n"
            "try:\n    runpy.run_module('pipeline', run_name='__main__')\n"
            "except SystemExit:\n    pass\n"
            "sys.__stderr__.write('\\n' + json.dumps(sorted(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, cwd=ROOT)
    return set(json.loads(done.stderr.strip().splitlines()[-1]))


def test_version_and_help_load_no_heavy_module() -> None:
    for argv in (["--version"], ["--help"]):
        loaded = _loaded_by(*argv)
        assert "pipeline.cli" in loaded
        assert not [m for m in HEAVY if m in loaded], argv


def test_a_command_loads_only_its_own_module() -> None:
    loaded = _loaded_by("metrics", "--help")
    assert "pipeline.cli.metrics" in loaded
    assert not {"pipeline.cli.evaluate", "pipeline.cli.compare", "pipeline.cli.query"} & loaded


def test_make_evaluate_ends_by_saying_how_to_run_the_tool() -> None:
    done = subprocess.run(["make", "-n", "evaluate"], cwd=ROOT, capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    said = [line.removeprefix("echo ").strip('"') for line in done.stdout.splitlines()
            if line.startswith("echo")]
    assert any(".venv/bin/rag-eval" in line for line in said)
    assert any(line.strip() == "source .venv/bin/activate" for line in said)


def test_readme_sample_figures_match_the_sample() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    records = pl.read_parquet(SAMPLE).height
    outputs = (RGB_SAMPLE / "rgb_outputs.jsonl").read_text(encoding="utf-8").splitlines()
    rgb = sum(1 for line in outputs if line.strip())  # one record per model output
    assert f"the {records:,} records of `data/sample/records.parquet`" in readme
    assert f"{rgb} RGB rows" in readme
    assert f"{records + rgb:,} rows in all" in readme
    assert f"scores the {records:,} rows of `data/sample/records.parquet`" in readme


def test_a_run_without_model_shows_none_and_no_signature_line(tmp_path: Path) -> None:
    rows = [{"id": "q1", "question": "Capital of France?", "reference": "Paris",
             "response": "Paris"}]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    done = _cli("evaluate", "--input", "a.jsonl", "--out", "out", "--metrics", "answer",
                "--no-progress", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "(none)" in done.stdout
    assert "signature" not in done.stdout + done.stderr
    verbose = _cli("-v", "evaluate", "--input", "a.jsonl", "--out", "out2", "--metrics",
                   "answer", "--no-progress", cwd=tmp_path)
    signatures = [line for line in verbose.stderr.splitlines() if "signature: " in line]
    assert len(signatures) == 1
    stored = pl.read_parquet(tmp_path / "out" / "scores.parquet")["signature"].to_list()
    assert stored[0] and stored[0] in signatures[0]


def test_a_run_that_scores_nothing_prints_one_line(tmp_path: Path) -> None:
    rows = [{"id": "q1", "question": 7, "reference": "x", "response": "x"}]
    (tmp_path / "bad.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    done = _cli("evaluate", "--input", "bad.jsonl", "--out", "out", "--metrics", "answer",
                "--no-progress", cwd=tmp_path)
    assert done.returncode == 1
    after = done.stdout[done.stdout.index("rejected rows and reasons"):].splitlines()[1:]
    assert [line for line in after if line.strip()] == ["no row was scored: no headline to show"]


def _query_loading(out: Path, sql: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """``rag-eval query OUT SQL --format csv`` in a fresh interpreter: the finished process and
    the modules it had imported when the command returned."""
    code = ("import json, sys\nfrom pipeline.cli import main\n"
            f"code = main(['query', {str(out)!r}, {sql!r}, '--format', 'csv'])\n"
            "sys.__stderr__.write('\\n' + json.dumps([code, sorted(sys.modules)]))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False, cwd=ROOT)
    code_and_modules = json.loads(done.stderr.strip().splitlines()[-1])
    assert code_and_modules[0] == 0, done.stderr
    return done, set(code_and_modules[1])


def test_query_of_an_up_to_date_database_loads_no_view_builder(tmp_path: Path) -> None:
    """``query`` reads through ``pipeline.query``: the view builder and the metric registry
    (and pyarrow) are loaded only when the database must be built again."""
    rows = [{"id": "q1", "question": "Capital of France?", "reference": "Paris",
             "response": "Paris"}]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), "utf-8")
    made = _cli("evaluate", "--input", "a.jsonl", "--out", "out", "--metrics", "answer",
                "--no-progress", "--no-stats", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    out = tmp_path / "out"
    builder = {"pipeline.views", "pipeline.metrics.registry", "pipeline.stats", "pyarrow"}

    done, loaded = _query_loading(out, "select n, answer_f1 from headline")
    assert done.stdout == "n,answer_f1\n1,1.0\n"
    assert "pipeline.query" in loaded
    assert not builder & loaded

    (out / "eval.duckdb").unlink()  # missing: built again, through the view builder
    done, loaded = _query_loading(out, "select n, answer_f1 from headline")
    assert done.stdout == "n,answer_f1\n1,1.0\n"
    assert {"pipeline.views", "pipeline.metrics.registry"} <= loaded
    assert (out / "eval.duckdb").is_file()

    done, loaded = _query_loading(out, "select n from headline")  # up to date again
    assert done.stdout == "n\n1\n"
    assert not builder & loaded
