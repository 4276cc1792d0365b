"""The results store: incremental re-scoring, atomic commits, crash safety and the write lock.

The kill test runs the CLI in a child process and SIGKILLs it in each phase of a run (before
the lock, set-up, scoring, after the commit); the store must stay readable with every committed
run intact and no partial run visible, and the next run must clean up and succeed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipeline.cli import EXIT_BUSY, main
from pipeline.config import Config
from pipeline.drivers import evaluate, evaluate_to_store
from pipeline.schema import InputError
from pipeline.scoring import BatchScorer
from pipeline.store import (
    FAILED_DIR,
    MANIFEST_FILE,
    STAGING_DIR,
    Store,
    StoreBusyError,
    checkout_run,
    partition_dir,
)
from pipeline.views import run_query

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample" / "records.parquet"
METRICS = ("answer", "citation", "lexical", "relevance")
CONFIG = Config(embedding_backend="hashed", metrics=METRICS)


def run_scores(run_dir: Path) -> pl.DataFrame:
    """A committed run's scores with ``model`` from the partition directories."""
    return pl.read_parquet(
        run_dir / "scores", hive_partitioning=True, hive_schema={"model": pl.String}
    ).sort("source", "row_number")


def flat_scores(records: Path, out: Path, config: Config = CONFIG) -> pl.DataFrame:
    evaluate([records], out, config, stats=False, build_db=False)
    return pl.read_parquet(out / "scores.parquet").sort("source", "row_number")


@pytest.fixture
def records(tmp_path: Path) -> Path:
    """Every third row of each model of the sample (184 a model): :data:`ROWS` rows."""
    path = tmp_path / "records.parquet"
    frame = pl.read_parquet(SAMPLE)
    frame.filter(pl.int_range(pl.len()).over("model") % 3 == 0).write_parquet(path)
    return path


ROWS = 552


@pytest.fixture(scope="module")
def committed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(records, pristine store, where tests get their copy): run ``r1`` of :data:`CONFIG` on
    :func:`records`, scored once for the module. Tests that only read it use the pristine
    store; :func:`store_r1` gives a test its own copy."""
    root = tmp_path_factory.mktemp("committed")
    path = root / "records.parquet"
    frame = pl.read_parquet(SAMPLE)
    frame.filter(pl.int_range(pl.len()).over("model") % 3 == 0).write_parquet(path)
    work = root / "s"
    evaluate_to_store([path], work, CONFIG, run_id="r1", stats=False)
    pristine = root / "pristine"
    work.rename(pristine)
    return path, pristine, work


@pytest.fixture
def store_r1(committed: tuple[Path, Path, Path]) -> Path:
    """A store holding run ``r1`` of :func:`committed`, this test's to change. It lives at the
    path the run was written to (the views name their files by absolute path)."""
    _records, pristine, work = committed
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(pristine, work)
    return work


#: Rows of the sample that the subprocess tests score (each child process scores them again).
SMALL_ROWS = 300


@pytest.fixture
def small_records(tmp_path: Path) -> Path:
    """The first :data:`SMALL_ROWS` rows of the sample: enough batches of 50 for a kill or a
    race to land anywhere, at a fifth of the cost."""
    path = tmp_path / "small.parquet"
    pl.read_parquet(SAMPLE).head(SMALL_ROWS).write_parquet(path)
    return path


def change_one_percent(path: Path) -> int:
    frame = pl.read_parquet(path)
    changed = pl.int_range(pl.len()) % 100 == 7
    frame.with_columns(
        pl.when(changed).then(pl.col("response") + " Also, see above.").otherwise("response")
        .alias("response")
    ).write_parquet(path)
    return int(frame.select(changed.sum()).item())


# --- incremental ---------------------------------------------------------------------------------


def test_rerun_scores_nothing_and_changed_rows_only(
    committed: tuple[Path, Path, Path], store_r1: Path, tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = store_r1  # day 1: run r1 scored every row (test_manifest_records_...)
    records = committed[0]  # the input of r1 (the path is in the scores): put back at the end
    original = records.read_bytes()
    try:
        _rerun_and_change(records, store, tmp_path, caplog)
    finally:
        records.write_bytes(original)


def _rerun_and_change(records: Path, store: Path, tmp_path: Path,
                      caplog: pytest.LogCaptureFixture) -> None:
    first_dir = store / "eval_run=r1"
    again = evaluate_to_store([records], store, CONFIG, run_id="day2", stats=False)
    assert (again.n_scored, again.n_reused, again.reused_from) == (0, ROWS, "r1")
    assert run_scores(again.run_dir).equals(run_scores(first_dir))

    n_changed = change_one_percent(records)
    assert n_changed == 6
    caplog.clear()
    third = evaluate_to_store([records], store, CONFIG, run_id="day3", stats=False)
    assert (third.n_scored, third.n_reused) == (6, ROWS - 6)
    # ... and says why its values move on unchanged rows (a warning: shown by default).
    said = [r for r in caplog.records if r.levelname == "WARNING" and "recomputed" in r.message]
    assert said and "tfidf_relevance" in said[0].message
    assert "document frequencies count every question" in said[0].message
    # Reused rows included, the run equals a fresh run on the changed file: the corpus-level
    # tfidf_relevance of reused rows was recomputed because the corpus changed.
    fresh = flat_scores(records, tmp_path / "flat")
    assert run_scores(third.run_dir).select(fresh.columns).equals(fresh)

    forced = evaluate_to_store([records], store, CONFIG, run_id="day4", force=True, stats=False)
    assert (forced.n_scored, forced.n_reused) == (ROWS, 0)
    assert run_scores(forced.run_dir).equals(run_scores(third.run_dir))


def test_other_settings_are_never_reused(committed: tuple[Path, Path, Path],
                                         store_r1: Path) -> None:
    records, store = committed[0], store_r1  # run r1: CONFIG
    other = Config(embedding_backend="hashed", metrics=METRICS, rouge_stemmer=True)
    assert evaluate_to_store([records], store, other, run_id="b", stats=False).n_reused == 0
    fewer = Config(embedding_backend="hashed", metrics=("answer",))
    assert evaluate_to_store([records], store, fewer, run_id="c", stats=False).n_reused == 0


def test_manifest_records_inputs_config_counts_and_times(
    committed: tuple[Path, Path, Path]
) -> None:
    records, pristine, _work = committed
    manifest = json.loads((pristine / "eval_run=r1" / MANIFEST_FILE).read_text())
    assert manifest["status"] == "committed"
    assert manifest["run_id"] == "r1"
    assert manifest["inputs"][0]["path"] == str(records)
    assert len(manifest["inputs"][0]["sha256"]) == 64
    assert manifest["signature"] == CONFIG.signature()
    assert manifest["config"]["rouge_stemmer"] is False
    assert manifest["counts"] == {"read": ROWS, "scored": ROWS, "reused": 0, "rejected": 0}
    assert manifest["started_at"] <= manifest["finished_at"]
    assert manifest["engine"] == "local"


def test_layout_is_hive_partitioned_by_run_and_model(store_r1: Path) -> None:
    run_dir = store_r1 / "eval_run=r1"
    models = sorted(p.name for p in (run_dir / "scores").iterdir())
    assert models == ["model=atlas-7b", "model=borealis-13b", "model=cirrus-70b"]
    assert sorted(p.name for p in store_r1.glob("eval_run=*")) == ["eval_run=r1"]
    assert partition_dir("model", "org/name v2") == "model=org%2Fname%20v2"
    assert partition_dir("model", None) == "model=__HIVE_DEFAULT_PARTITION__"
    glob = f"{store_r1}/eval_run=*/scores/model=*/*.parquet"
    found = duckdb.sql(
        f"select eval_run, model, count(*) from read_parquet('{glob}', hive_partitioning = true) "
        "group by all order by model"
    ).fetchall()
    assert found == [("r1", m, ROWS // 3) for m in ("atlas-7b", "borealis-13b", "cirrus-70b")]


def test_views_read_the_chosen_run(committed: tuple[Path, Path, Path],
                                   store_r1: Path) -> None:
    records, store = committed[0], store_r1  # run r1: CONFIG
    evaluate_to_store([records], store, Config(embedding_backend="hashed", metrics=("answer",)),
                      run_id="r2", stats=False)
    runs = run_query(store, "select eval_run, n_scored from runs")
    assert runs.rows() == [("r2", ROWS), ("r1", ROWS)]
    latest = run_query(store, "select eval_run, count(*) as n from scores group by all")
    assert latest.rows() == [("r2", ROWS)]
    both = run_query(store, "select eval_run, count(*) as n from scores group by all "
                            "order by eval_run", run="all")
    assert both.rows() == [("r1", ROWS), ("r2", ROWS)]
    assert run_query(store, "select model, n from by_model order by model", run="r1")[
        "n"].to_list() == [ROWS // 3] * 3


def test_run_ids_are_checked(committed: tuple[Path, Path, Path], store_r1: Path) -> None:
    records = committed[0]
    with pytest.raises(InputError, match="already committed"):
        evaluate_to_store([records], store_r1, CONFIG, run_id="r1", stats=False)
    with pytest.raises(InputError, match="not valid"):
        evaluate_to_store([records], store_r1, CONFIG, run_id="../x", stats=False)


def test_checkout_gives_a_plain_output_directory(records: Path, tmp_path: Path) -> None:
    evaluate_to_store([records], tmp_path / "s", CONFIG, run_id="r1", resamples=50)
    out = tmp_path / "checked-out"
    assert main(["checkout", str(tmp_path / "s"), "--run", "r1", "--out", str(out)]) == 0
    flat = tmp_path / "flat"
    evaluate([records], flat, CONFIG, resamples=50)
    for name in ("scores.parquet", "texts.parquet", "rejected.parquet", "intervals.parquet",
                 "comparisons.parquet"):
        assert pl.read_parquet(out / name).equals(pl.read_parquet(flat / name)), name
    assert run_query(out, "select * from headline order by model").equals(
        run_query(flat, "select * from headline order by model"))
    with pytest.raises(InputError, match="no committed run 'nope'; runs: r1"):
        checkout_run(tmp_path / "s", "nope", tmp_path / "x")


# --- atomicity -----------------------------------------------------------------------------------


def test_a_failing_run_leaves_no_partial_run(
    committed: tuple[Path, Path, Path], store_r1: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    records, store = committed[0], store_r1
    good_dir = store / "eval_run=r1"  # the good run
    before = run_scores(good_dir)
    calls = {"n": 0}
    original = BatchScorer.score_frame

    def failing(self: BatchScorer, frame: pl.DataFrame) -> pl.DataFrame:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("disk on fire")
        return original(self, frame)

    monkeypatch.setattr(BatchScorer, "score_frame", failing)
    with pytest.raises(RuntimeError, match="disk on fire"):
        evaluate_to_store([records], store, CONFIG, run_id="bad", stats=False, force=True,
                          batch_rows=300)
    assert not (store / "eval_run=bad").exists()
    assert list((store / STAGING_DIR).iterdir()) == []
    failed = json.loads(next((store / FAILED_DIR).glob("bad.*.json")).read_text())
    assert failed["status"] == "failed"
    assert "disk on fire" in failed["error"]
    assert run_scores(good_dir).equals(before)
    assert run_query(store, "select eval_run from runs").rows() == [("r1",)]


def _cli(store: Path, records: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "pipeline", "evaluate", "--input", str(records), "--store",
        str(store), "--metrics", ",".join(METRICS), "--embedding-backend", "hashed",
        "--no-stats", "--no-progress", "--batch-rows", "50", *extra,
    ]


def _check_store(store: Path, rows: int = SMALL_ROWS) -> list[str]:
    """Every committed run complete and readable; no partial run visible. Returns run ids."""
    committed = sorted(p.name.removeprefix("eval_run=") for p in store.glob("eval_run=*"))
    for run in committed:
        manifest = json.loads((store / f"eval_run={run}" / MANIFEST_FILE).read_text())
        assert manifest["status"] == "committed"
        counts = manifest["counts"]
        scores = run_scores(store / f"eval_run={run}")
        assert scores.height == counts["scored"] + counts["reused"] == rows
    if committed:
        listed = run_query(store, "select eval_run from runs order by eval_run")
        assert listed["eval_run"].to_list() == committed
    return committed


def _kill_when(child: subprocess.Popen[bytes], ready: Callable[[float], bool]) -> None:
    """SIGKILL ``child`` as soon as ``ready(seconds since it started)`` (polled every
    millisecond), or once it has exited."""
    started = time.monotonic()
    while child.poll() is None and not ready(time.monotonic() - started):
        assert time.monotonic() - started < 300, "the child neither finished nor got ready"
        time.sleep(0.001)
    child.send_signal(signal.SIGKILL)
    child.wait()


def test_sigkill_in_every_phase_never_corrupts_the_store(small_records: Path,
                                                         tmp_path: Path) -> None:
    store = tmp_path / "store"
    staging = store / STAGING_DIR
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # The committed run the kills must leave intact (in this process: it is not killed).
    assert main(_cli(store, small_records, "--run-id", "base")[3:]) == 0
    assert _check_store(store) == ["base"]

    def staged(parquet: bool) -> Callable[[float], bool]:
        def ready(_seconds: float) -> bool:
            runs = list(staging.glob("eval_run=*")) if staging.is_dir() else []
            return bool(runs) and (not parquet or any(runs[0].rglob("*.parquet")))
        return ready

    # One kill in each phase of a run. Seeded random moments used to land in these phases, at
    # three times the cost (and by chance); the phases are where a kill can leave something.
    phases: list[tuple[bool, Callable[[float], bool]]] = [
        # the interpreter starting, the store untouched
        (True, lambda seconds: seconds > 0.2),
        # set-up: the lock taken, the staged run directory made, nothing scored yet
        (True, staged(parquet=False)),
        # scoring (--force: every row is scored): score files half written in the staged run
        (True, staged(parquet=True)),
        # after the commit's rename, while the views are rebuilt and the lock is held; the run
        # reuses base's rows (no --force), so it gets there without scoring
        (False, lambda _seconds: (store / "eval_run=k3").is_dir()),
    ]
    for attempt, (force, ready) in enumerate(phases):
        child = subprocess.Popen(
            _cli(store, small_records, "--run-id", f"k{attempt}", *(["--force"] if force else [])),
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        _kill_when(child, ready)
        committed = _check_store(store)
        assert "base" in committed
        assert set(committed) <= {"base", *(f"k{i}" for i in range(attempt + 1))}
    # The next invocation takes the lock, removes what the killed runs left and commits.
    assert main(_cli(store, small_records, "--run-id", "after")[3:]) == 0
    assert "after" in _check_store(store)
    assert list((store / STAGING_DIR).iterdir()) == []


# --- concurrency ---------------------------------------------------------------------------------


def test_a_second_writer_fails_clearly_or_waits(records: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    store = Store(tmp_path / "s")
    args = ["evaluate", "--input", str(records), "--store", str(store.root), "--metrics",
            "answer", "--embedding-backend", "hashed", "--no-stats", "--no-progress"]
    with store.lock():
        assert main([*args, "--run-id", "loser"]) == EXIT_BUSY
        assert "is locked by another run (pid" in capsys.readouterr().err
        with pytest.raises(StoreBusyError, match="locked"):
            evaluate_to_store([records], store.root, CONFIG, run_id="x", lock_wait=0.3)
    assert not (store.root / "eval_run=loser").exists()

    lock_held = threading.Event()

    def hold() -> None:
        with store.lock():
            lock_held.set()
            time.sleep(1.5)

    holder = threading.Thread(target=hold)
    holder.start()
    lock_held.wait()
    assert main([*args, "--run-id", "waiter", "--lock-wait", "60"]) == 0
    holder.join()
    assert (store.root / "eval_run=waiter" / MANIFEST_FILE).is_file()


def test_two_runs_started_together_both_commit_whole(tmp_path: Path) -> None:
    # The lock is taken before anything is read: two batches of 50 are as good as six here.
    rows = 100
    records = tmp_path / "records.parquet"
    pl.read_parquet(SAMPLE).head(rows).write_parquet(records)
    store = tmp_path / "store"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    children = [
        subprocess.Popen(_cli(store, records, "--run-id", name, "--lock-wait", "300"), env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for name in ("left", "right")
    ]
    for child in children:
        _, err = child.communicate(timeout=300)
        assert child.returncode == 0, err
    assert _check_store(store, rows) == ["left", "right"]
    manifests = [json.loads((store / f"eval_run={n}" / MANIFEST_FILE).read_text())
                 for n in ("left", "right")]
    # serialised by the lock: one ran first and the other reused all of its rows
    assert sorted(m["counts"]["reused"] for m in manifests) == [0, rows]
    first, second = sorted(manifests, key=lambda m: m["started_at"])
    assert first["finished_at"] <= second["started_at"]
