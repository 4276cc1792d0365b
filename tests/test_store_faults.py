"""Issue 29: the results store and ``checkout`` under real faults, one test (or two) per fault
class of the audit.

* ``checkout`` is one atomic step: a checkout killed (SIGKILL at random moments) or failing (a
  file-size limit, ``RLIMIT_FSIZE``) leaves the earlier run whole, never one run's scores beside
  another's texts; the next checkout removes what a killed one left.
* The store isolates runs: a truncated score file, a damaged or a missing manifest affect their
  own run only (reported by name); an unknown ``--run`` exits 2 listing the runs; a command that
  committed its run exits 0 when a later step (views, statistics) fails, with a warning.
* The manifest records the input the run read: a file replaced while the run waited for the lock
  is hashed as replaced; one changed while the run read it is not committed.
* Model partitions hold any name (300 characters, empty, non-Latin) and any number of models:
  1,100 models under ``ulimit -n 1024`` (``RLIMIT_NOFILE``), one file per model.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pytest

from pipeline import drivers
from pipeline.cli import EXIT_ERROR, EXIT_OK, main
from pipeline.config import Config
from pipeline.drivers import evaluate_to_store
from pipeline.engines.local import LocalEngine
from pipeline.io.layout import HASHED_PREFIX, MODEL_NAME_COLUMN
from pipeline.io.partitioned import PartitionedWriter, partition_dir, scan_partitions
from pipeline.schema import InputError
from pipeline.store import FAILED_DIR, MANIFEST_FILE
from pipeline.views import run_query

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--no-progress", "--metrics", "answer", "--resamples", "10"]
CONFIG = Config(embedding_backend="hashed", metrics=("answer",))
LONG_NAME = "org/" + "a-very-long-model-name-" * 13  # 303 characters: past any file name limit


def write_jsonl(path: Path, models: Sequence[str], n: int = 3, *, answer: str = "answer",
                filler: int = 0, seed: int = 0) -> Path:
    """``n`` questions per model; ``answer`` changes the responses (and so the scores),
    ``filler`` adds that many random letters to each response (texts that do not compress)."""
    rng = random.Random(seed)
    rows = []
    for model in models:
        for i in range(n):
            extra = "".join(rng.choices("abcdefghijklmnopqrstuvwxyz ", k=filler))
            rows.append({"id": f"q{i}", "model": model, "question": f"question {i}?",
                         "reference": f"answer {i}",
                         "response": (f"{answer} {i}" if i % 2 else "no idea") + extra})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def evaluate(source: Path, store: Path, run: str, *extra: str) -> None:
    assert main(["evaluate", "--input", str(source), "--store", str(store), "--run-id", run,
                 *extra, *FAST]) == EXIT_OK


def cli(*args: str, limits: dict[int, int] | None = None,
        **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """``rag-eval ARGS`` in a child process, with resource ``limits`` (soft values) set in it."""
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=ROOT,
                          capture_output=True, text=True, preexec_fn=_limiter(limits),
                          check=False, **kwargs)


def _limiter(limits: dict[int, int] | None) -> Callable[[], None] | None:
    if not limits:
        return None

    def apply() -> None:
        for kind, soft in limits.items():
            hard = resource.getrlimit(kind)[1]
            resource.setrlimit(kind, (soft, hard))

    return apply


def run_set(out: Path) -> tuple[Any, ...]:
    """What a reader of an output directory sees of a run: scores, texts, rejected rows, and
    which statistics files are there."""
    scores = pl.read_parquet(out / "scores.parquet").select("id", "model", "answer_em", "row_hash")
    texts = pl.read_parquet(out / "texts.parquet").select("id", "response")
    rejected = pl.read_parquet(out / "rejected.parquet").height
    stats = tuple(name for name in ("intervals.parquet", "comparisons.parquet")
                  if (out / name).is_file())
    return (scores.sort("model", "id").rows(), texts.sort("id", "response").rows(), rejected,
            stats)


def leftovers(*directories: Path) -> list[str]:
    return sorted(p.name for d in directories for p in d.iterdir()
                  if p.name.startswith((".tmp-", ".work-")))


@pytest.fixture(scope="module")
def pristine_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, Path]:
    """(where tests get their store, the pristine store, checkouts of r1 and r2), made once
    for the module: a store with run r1 (statistics) and r2 (other responses and scores, no
    statistics), and a checkout of each for reference (tests only read those)."""
    root = tmp_path_factory.mktemp("two-runs")
    store = root / "store"
    models = ["m1", "m2", "m3"]
    evaluate(write_jsonl(root / "a.jsonl", models, n=40), store, "r1")
    evaluate(write_jsonl(root / "b.jsonl", models, n=40, answer="other", filler=400),
             store, "r2", "--no-stats")
    references = root / "references"
    for run in ("r1", "r2"):
        assert main(["checkout", str(store), "--run", run, "--out",
                     str(references / run)]) == EXIT_OK
    pristine = root / "pristine"
    store.rename(pristine)
    return store, pristine, references / "r1", references / "r2"


@pytest.fixture
def two_runs(pristine_runs: tuple[Path, Path, Path, Path]) -> tuple[Path, Path, Path]:
    """The store of :func:`pristine_runs`, this test's own copy to damage (at the path it was
    written to: its views name files by absolute path), and the two reference checkouts."""
    store, pristine, ref1, ref2 = pristine_runs
    shutil.rmtree(store, ignore_errors=True)
    shutil.copytree(pristine, store)
    return store, ref1, ref2


# -- checkout: one atomic step ------------------------------------------------------------------


def test_a_killed_checkout_leaves_one_whole_run(
    two_runs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store, ref1, ref2 = two_runs
    expected = {"r1": run_set(ref1), "r2": run_set(ref2)}
    assert expected["r1"][:2] != expected["r2"][:2] and expected["r1"][3] != expected["r2"][3]
    work = tmp_path / "work"
    out = work / "out"
    assert main(["checkout", str(store), "--run", "r1", "--out", str(out)]) == EXIT_OK
    assert capsys.readouterr().out.startswith(f"run r1 of {store} checked out -> ")
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")

    # The copies take milliseconds, the views a few hundred: delays from 0 to 160 ms, one in
    # each stretch (the first temporary file, the copies, their end, the views) and each run
    # checked out over the other twice. Eight delays (0, 2, 4, 8, 15, 30, 60, 160 ms) covered
    # the same stretches at twice the cost.
    delays = [0.0, 0.004, 0.03, 0.16]
    for attempt, delay in enumerate(delays):
        run = ("r2", "r1")[attempt % 2]
        child = subprocess.Popen(
            [sys.executable, "-m", "pipeline", "checkout", str(store), "--run", run, "--out",
             str(out)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        # Once it starts writing (a temporary file beside or in the directory), a SIGKILL.
        before = set(leftovers(work, out))  # what earlier killed attempts left
        deadline = time.monotonic() + 60
        while child.poll() is None and time.monotonic() < deadline:
            if set(leftovers(work, out)) - before:
                time.sleep(delay)
                child.send_signal(signal.SIGKILL)
                break
            time.sleep(0.001)
        child.wait()
        found = run_set(out)  # never one run's scores beside another's texts or statistics
        assert found in expected.values(), f"attempt {attempt}: a mix of two runs"
        assert (out / "notes.txt").read_text(encoding="utf-8") == "mine\n"
    # The next checkout removes what the killed ones left, beside the directory and in it.
    assert main(["checkout", str(store), "--run", "r2", "--out", str(out)]) == EXIT_OK
    assert run_set(out) == expected["r2"]
    assert leftovers(work, out) == []
    assert sorted(p.name for p in out.iterdir()) == [
        "eval.duckdb", "notes.txt", "rejected.parquet", "scores.parquet", "texts.parquet"]
    assert run_query(out, "select count(*) as n from scores").item() == 120


def test_a_failed_checkout_keeps_the_earlier_run_whole(
    two_runs: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    store, ref1, ref2 = two_runs
    out = tmp_path / "out"
    assert main(["checkout", str(store), "--run", "r1", "--out", str(out)]) == EXIT_OK
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    # r2's scores fit under the limit, its texts (random letters) do not: a checkout writing
    # file by file would have put r2's scores beside r1's texts.
    sizes = {name: (ref2 / name).stat().st_size for name in ("scores.parquet", "texts.parquet")}
    limit = (sizes["scores.parquet"] + sizes["texts.parquet"]) // 2
    assert sizes["scores.parquet"] < limit < sizes["texts.parquet"]
    done = cli("checkout", str(store), "--run", "r2", "--out", str(out),
               limits={resource.RLIMIT_FSIZE: limit})
    assert done.returncode != EXIT_OK, done.stdout
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert run_set(out) == run_set(ref1)
    assert leftovers(tmp_path, out) == []


# -- the store isolates runs --------------------------------------------------------------------


def test_a_truncated_score_file_blocks_only_its_own_run(
    two_runs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    store, ref1, _ = two_runs
    damaged = store / "eval_run=r2" / "scores" / partition_dir("model", "m2") / "part-0.parquet"
    with open(damaged, "r+b") as handle:
        handle.truncate(damaged.stat().st_size // 2)
    count = "select eval_run, count(*) as n from scores group by all order by all"

    assert run_query(store, count, run="r1").rows() == [("r1", 120)]
    with caplog.at_level(logging.WARNING):
        assert run_query(store, count).rows() == [("r1", 120)]  # the latest readable run
        assert run_query(store, count, run="all").rows() == [("r1", 120)]
    assert "run r2 of" in caplog.text and "model=m2/part-0.parquet is truncated" in caplog.text
    capsys.readouterr()
    assert main(["query", str(store), count, "--run", "r2"]) == EXIT_ERROR
    assert capsys.readouterr().err.startswith(
        f"error: {store}: run 'r2' is damaged (scores/model=m2/part-0.parquet is truncated or "
        "not Parquet); runs: r1")
    assert main(["checkout", str(store), "--run", "r2", "--out", str(tmp_path / "x")]) == \
        EXIT_ERROR
    assert "run 'r2' is damaged" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    assert main(["checkout", str(store), "--out", str(tmp_path / "latest")]) == EXIT_OK
    assert capsys.readouterr().out.startswith("run r1 of")
    assert run_set(tmp_path / "latest") == run_set(ref1)
    # A new run neither fails nor reads the damaged run: it reuses the newest readable one.
    evaluate(write_jsonl(tmp_path / "b.jsonl", ["m1", "m2", "m3"], n=40, answer="other",
                         filler=400), store, "r3")
    assert json.loads((store / "eval_run=r3" / MANIFEST_FILE).read_text())["reused_from"] == "r1"


def test_a_damaged_manifest_blocks_nothing_else(
    two_runs: tuple[Path, Path, Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store, _, ref2 = two_runs
    (store / "eval_run=r1" / MANIFEST_FILE).write_text('{"run_id": "r1", "sta', encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert run_query(store, "select eval_run from runs").rows() == [("r2",)]
        assert run_query(store, "select count(*) from scores", run="r2").item() == 120
    assert "run r1 of" in caplog.text and "manifest.json is not valid JSON" in caplog.text
    assert main(["checkout", str(store), "--run", "r2", "--out", str(tmp_path / "o")]) == EXIT_OK
    assert run_set(tmp_path / "o") == run_set(ref2)
    evaluate(write_jsonl(tmp_path / "c.jsonl", ["m1"]), store, "r3")
    assert run_query(store, "select eval_run from runs order by eval_run").rows() == [
        ("r2",), ("r3",)]


def test_a_run_without_manifest_is_committed_nowhere(
    two_runs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    store, _, _ = two_runs
    (store / "eval_run=r1" / MANIFEST_FILE).unlink()
    every = "select eval_run, count(*) as n from scores group by all order by all"
    assert run_query(store, every, run="all").rows() == [("r2", 120)]
    assert run_query(store, "select eval_run from runs").rows() == [("r2",)]
    capsys.readouterr()
    assert main(["query", str(store), every, "--run", "r1"]) == EXIT_ERROR
    assert capsys.readouterr().err.startswith(
        f"error: {store}: run 'r1' is damaged (manifest.json is missing: not a committed run); "
        "runs: r2")


def test_an_unknown_run_exits_2_listing_the_runs(
    two_runs: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    store, _, _ = two_runs
    capsys.readouterr()
    assert main(["query", str(store), "select * from headline", "--run", "r9"]) == EXIT_ERROR
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"error: {store}: no committed run 'r9'; runs: r1, r2\n"
    with pytest.raises(InputError, match="no committed run 'r9'; runs: r1, r2"):
        run_query(store, "select 1", run="r9")


def test_a_committed_run_exits_0_when_its_views_cannot_be_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = tmp_path / "store"
    source = write_jsonl(tmp_path / "a.jsonl", ["m1", "m2"])
    evaluate(source, store, "r1")
    (store / "eval.duckdb").unlink()
    (store / "eval.duckdb").mkdir()  # a directory in the way: the views cannot be written
    with caplog.at_level(logging.WARNING):
        evaluate(source, store, "r2", "--force")
    assert "run r2 is committed, but the views of" in caplog.text
    assert sorted(p.name for p in store.glob("eval_run=*")) == ["eval_run=r1", "eval_run=r2"]
    # Readers build the views in memory meanwhile.
    assert run_query(store, "select eval_run from runs order by eval_run").rows() == [
        ("r1",), ("r2",)]


def test_a_committed_run_exits_0_when_its_statistics_fail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def full_disk(run_dir: Path, **kwargs: object) -> None:
        (run_dir / "intervals.parquet").write_bytes(b"PAR1 half a file")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(drivers, "write_stats", full_disk)
    store = tmp_path / "store"
    with caplog.at_level(logging.WARNING):
        evaluate(write_jsonl(tmp_path / "a.jsonl", ["m1", "m2"]), store, "r1")
    assert "the statistics of the run failed (OSError" in caplog.text
    run_dir = store / "eval_run=r1"
    assert json.loads((run_dir / MANIFEST_FILE).read_text())["status"] == "committed"
    assert not (run_dir / "intervals.parquet").exists()
    assert run_query(store, "select count(*) from scores").item() == 6


# -- the manifest records the input the run read ---------------------------------------------

_HOLDER = """
import fcntl, sys
handle = open(sys.argv[1], "a+")
fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
print("locked", flush=True)
sys.stdin.readline()
"""


def test_the_manifest_hashes_the_file_replaced_while_waiting_for_the_lock(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    source = write_jsonl(tmp_path / "in.jsonl", ["m1"], n=2)
    replacement = write_jsonl(tmp_path / "b.jsonl", ["m1", "m2", "m3"], n=5, answer="other")
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(store / "_lock")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    log_path = tmp_path / "evaluate.log"
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        with open(log_path, "w", encoding="utf-8") as log_file:
            run = subprocess.Popen(
                [sys.executable, "-m", "pipeline", "-v", "evaluate", "--input", str(source),
                 "--store", str(store), "--run-id", "r1", "--lock-wait", "120", *FAST],
                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log_file,
            )
            deadline = time.monotonic() + 60
            while "waiting up to 120 s" not in log_path.read_text(encoding="utf-8"):
                assert run.poll() is None and time.monotonic() < deadline, log_path.read_text()
                time.sleep(0.05)
            os.replace(replacement, source)  # while the run waits for the lock
            assert holder.stdin is not None
            holder.stdin.write("\n")
            holder.stdin.flush()
            assert run.wait(timeout=120) == EXIT_OK, log_path.read_text()
    finally:
        holder.kill()
        holder.wait()
    manifest = json.loads((store / "eval_run=r1" / MANIFEST_FILE).read_text())
    data = source.read_bytes()
    assert manifest["inputs"] == [{"path": str(source), "bytes": len(data),
                                   "sha256": hashlib.sha256(data).hexdigest()}]
    assert manifest["counts"]["read"] == 15  # the rows of the file hashed


class _RewritingEngine(LocalEngine):
    """The local engine, with the input rewritten (appended to) as the run reads it."""

    def write_run(self, inputs: Sequence[Path], *args: Any, **kwargs: Any) -> Any:
        with open(inputs[0], "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"id": "late", "model": "m1", "question": "q?",
                                     "reference": "a", "response": "a"}) + "\n")
        return super().write_run(inputs, *args, **kwargs)


def test_an_input_changed_while_the_run_reads_it_is_not_committed(tmp_path: Path) -> None:
    store = tmp_path / "store"
    source = write_jsonl(tmp_path / "in.jsonl", ["m1"], n=2)
    with pytest.raises(InputError, match=r"in\.jsonl changed while run r1 read it"):
        evaluate_to_store([source], store, CONFIG, engine=_RewritingEngine(), run_id="r1",
                          stats=False)
    assert not (store / "eval_run=r1").exists()
    failed = json.loads(next((store / FAILED_DIR).glob("r1.*.json")).read_text())
    assert failed["status"] == "failed" and "changed while run r1 read it" in failed["error"]


# -- model partitions hold any name and any number of models -----------------------------------


def test_any_model_name_has_a_partition_and_reads_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    names = [LONG_NAME, "m1", "", "日本語モデル" * 10, f"{HASHED_PREFIX}not-a-hash",
             "__HIVE_DEFAULT_PARTITION__", "a/b c%d"]
    store = tmp_path / "store"
    source = write_jsonl(tmp_path / "in.jsonl", names, n=2)
    evaluate(source, store, "r1")
    scores_dir = store / "eval_run=r1" / "scores"
    dirs = sorted(p.name for p in scores_dir.iterdir())
    assert len(dirs) == len(names) and all(len(d.encode()) <= 200 for d in dirs)
    assert "model=m1" in dirs and "model=a%2Fb%20c%25d" in dirs
    assert sum(d.startswith(f"model={HASHED_PREFIX}") for d in dirs) == 5
    by_model = "select model, n from by_model order by model"
    assert run_query(store, by_model).rows() == sorted((name, 2) for name in names)
    out = tmp_path / "out"
    assert main(["checkout", str(store), "--out", str(out)]) == EXIT_OK
    assert sorted(pl.read_parquet(out / "scores.parquet")["model"].unique().to_list()) == \
        sorted(names)
    assert MODEL_NAME_COLUMN not in pl.read_parquet_schema(out / "scores.parquet")
    assert sorted(scan_partitions(scores_dir).collect()["model"].unique().to_list()) == \
        sorted(names)
    # The next run reuses every row, hashed partitions included.
    evaluate(source, store, "r2")
    assert run_query(store, "select n_reused from runs where eval_run = 'r2'").item() == 14


#: Runs ``main`` on each argument list of ``argv[1]`` (JSON) in turn, in one process: one
#: interpreter start for the three commands, every one under the child's limits.
_COMMANDS = """
import json, sys
from pipeline.cli import main
for args in json.loads(sys.argv[1]):
    code = main(args)
    print(f"== exit {code}", flush=True)
"""


def test_more_models_than_open_files(tmp_path: Path) -> None:
    models = [f"model-{m:04d}" for m in range(300)]  # more than the 256 files it may open
    source = write_jsonl(tmp_path / "in.jsonl", models, n=2)
    store = tmp_path / "store"
    out = tmp_path / "out"
    commands = [
        ["evaluate", "--input", str(source), "--store", str(store), "--run-id", "r1",
         "--no-stats", *FAST],
        ["query", str(store), "select count(distinct model) as m, count(*) as n from scores",
         "--format", "csv"],
        ["checkout", str(store), "--out", str(out)],
    ]
    done = subprocess.run([sys.executable, "-c", _COMMANDS, json.dumps(commands)], cwd=ROOT,
                          capture_output=True, text=True, check=False,
                          preexec_fn=_limiter({resource.RLIMIT_NOFILE: 256}))
    assert done.returncode == 0, done.stderr[-3000:]
    outputs = done.stdout.split("== exit ")
    assert [part.split("\n", 1)[0] for part in outputs[1:]] == [str(EXIT_OK)] * 3, (
        done.stdout[-3000:], done.stderr[-3000:])
    files = sorted((store / "eval_run=r1" / "scores").glob("model=*/*.parquet"))
    assert len(files) == 300  # one file per model
    counted = outputs[1].split("\n", 1)[1]  # what the query printed
    assert counted.splitlines()[-1] == "300,600"
    assert pl.read_parquet(out / "scores.parquet")["model"].n_unique() == 300


def test_the_writer_holds_at_most_its_budget_of_files(tmp_path: Path) -> None:
    schema = pa.schema([("model", pa.string()), ("x", pa.int64())])
    writer = PartitionedWriter(tmp_path / "scores", schema, max_open=2)
    names = ["c", None, "a", LONG_NAME, "b"]
    for batch in range(3):  # every batch holds every model: the worst order for the writer
        rows = [(name, batch * 10 + k) for k, name in enumerate(names)]
        writer.write(pa.table({"model": [r[0] for r in rows], "x": [r[1] for r in rows]},
                              schema=schema))
        assert len(writer._writers) <= 2
    writer.close()
    files = sorted((tmp_path / "scores").glob("model=*/*.parquet"))
    assert len(files) == len(names)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".work-")]
    found = scan_partitions(tmp_path / "scores").collect()
    expected = sorted(((name, b * 10 + k) for b in range(3) for k, name in enumerate(names)),
                      key=lambda r: r[1])
    assert sorted(found.select("model", "x").rows(), key=lambda r: r[1]) == expected
