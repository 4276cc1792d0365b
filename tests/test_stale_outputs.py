"""Issue 16, point 4: a run's outputs are one consistent set. A re-run into the same ``--out``
removes what the earlier run made and this one does not write again (statistics after
``--no-stats``, a report, ``compare`` tables), never a file the pipeline did not name; files
left by killed runs are removed by the next run when their process is provably gone."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline import scoring as scoring_module
from pipeline.cli import EXIT_INTERNAL, EXIT_OK, main
from pipeline.io import atomic as atomic_module
from pipeline.io.atomic import atomic_paths, owned_name
from pipeline.views import run_query

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--no-progress", "--metrics", "answer", "--resamples", "10"]


def write_jsonl(path: Path, models: list[str], n: int = 3) -> Path:
    rows = [{"id": f"q{i}", "model": model, "question": f"question {i}?",
             "reference": f"answer {i}", "response": f"answer {i}" if i % 2 else "no idea"}
            for model in models for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def names(directory: Path) -> list[str]:
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*"))


RUN_FILES = ["eval.duckdb", "rejected.parquet", "scores.parquet", "texts.parquet"]
STATS_FILES = ["comparisons.parquet", "intervals.parquet"]


@pytest.fixture(scope="module")
def pristine_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(input, where tests get their output directory, the pristine one): ``evaluate`` of
    models m1 and m2 with ``--report out/report.html``, run once for the module."""
    root = tmp_path_factory.mktemp("run")
    out = root / "out"
    source = write_jsonl(root / "in.jsonl", ["m1", "m2"])
    assert main(["evaluate", "--input", str(source), "--out", str(out), "--report",
                 str(out / "report.html"), *FAST]) == EXIT_OK
    pristine = root / "pristine"
    out.rename(pristine)
    return source, out, pristine


@pytest.fixture
def reported(pristine_run: tuple[Path, Path, Path]) -> tuple[Path, Path]:
    """(input, output directory of :func:`pristine_run`, this test's copy to change). The
    copy lives at the path the run wrote (its views name the files by absolute path)."""
    source, out, pristine = pristine_run
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(pristine, out, symlinks=True)
    return source, out


def test_no_stats_rerun_removes_the_earlier_statistics(tmp_path: Path) -> None:
    """The hostile case: the report of a --no-stats re-run printed the earlier run's
    intervals, for models not in the run."""
    out = tmp_path / "out"
    first = write_jsonl(tmp_path / "first.jsonl", ["old-model-a", "old-model-b"])
    assert main(["evaluate", "--input", str(first), "--out", str(out), *FAST]) == EXIT_OK
    assert names(out) == sorted([*RUN_FILES, *STATS_FILES])
    assert run_query(out, "select count(*) from intervals").item() > 0

    second = write_jsonl(tmp_path / "second.jsonl", ["new-model"])
    report = out / "report.html"
    assert main(["evaluate", "--input", str(second), "--out", str(out), "--no-stats",
                 "--report", str(report), *FAST]) == EXIT_OK
    assert names(out) == sorted([*RUN_FILES, ".rag-eval-outputs", "report.html"])
    assert run_query(out, "select count(*) from intervals").item() == 0
    assert run_query(out, "select distinct model from headline").to_series().to_list() == [
        "new-model"
    ]
    html = report.read_text(encoding="utf-8")
    assert "new-model" in html and "old-model" not in html


def test_reports_and_comparisons_of_the_run_go_with_it(
    reported: tuple[Path, Path], tmp_path: Path
) -> None:
    source, out = reported  # evaluated with --report out/report.html
    assert main(["report", str(out), "--out", str(out / "reports" / "again.html")]) == EXIT_OK
    assert main(["compare", str(out), str(out), "--resamples", "10"]) == EXIT_OK
    outside = tmp_path / "outside.html"
    assert main(["report", str(out), "--out", str(outside)]) == EXIT_OK
    assert (out / ".rag-eval-outputs").read_text(encoding="utf-8").splitlines() == [
        "report.html", "reports/again.html", "compare/deltas.parquet",
        "compare/regressed_items.parquet", "compare/new_items.parquet",
        "compare/missing_items.parquet",
    ]
    # Files rag-eval did not write, some with names it uses elsewhere.
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    (out / "my-report.html").write_text("mine\n", encoding="utf-8")
    (out / "reports" / "keep.txt").write_text("mine\n", encoding="utf-8")
    (out / ".tmp-notes").write_text("mine\n", encoding="utf-8")

    assert main(["evaluate", "--input", str(source), "--out", str(out), *FAST]) == EXIT_OK
    assert names(out) == sorted([
        *RUN_FILES, *STATS_FILES, ".tmp-notes", "my-report.html", "notes.txt", "reports",
        "reports/keep.txt",
    ])
    assert outside.is_file()  # written outside the directory: not the run's to remove


def test_a_record_never_reaches_outside_the_directory(tmp_path: Path) -> None:
    out = tmp_path / "out"
    source = write_jsonl(tmp_path / "in.jsonl", ["m1"])
    assert main(["evaluate", "--input", str(source), "--out", str(out), *FAST]) == EXIT_OK
    victim = tmp_path / "victim.txt"
    victim.write_text("keep\n", encoding="utf-8")
    (out / "link.txt").symlink_to(victim)
    (out / "a-dir").mkdir()
    (out / ".rag-eval-outputs").write_text(
        f"../victim.txt\n{victim}\nlink.txt\na-dir\n", encoding="utf-8"
    )
    assert main(["evaluate", "--input", str(source), "--out", str(out), *FAST]) == EXIT_OK
    assert victim.read_text(encoding="utf-8") == "keep\n"
    assert names(out) == sorted([*RUN_FILES, *STATS_FILES, "a-dir", "link.txt"])


def test_a_failed_run_keeps_the_earlier_set_whole(
    reported: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    source, out = reported  # evaluated with --report out/report.html
    before = {name: (out / name).read_bytes() for name in names(out)}

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError("simulated crash")

    monkeypatch.setattr(scoring_module, "score_frame", crash)
    code = main(["evaluate", "--input", str(source), "--out", str(out), "--no-stats", *FAST])
    assert code == EXIT_INTERNAL
    assert {name: (out / name).read_bytes() for name in names(out)} == before


def test_checkout_replaces_the_whole_set(tmp_path: Path) -> None:
    store, out = tmp_path / "store", tmp_path / "out"
    source = write_jsonl(tmp_path / "in.jsonl", ["m1", "m2"])
    for run, extra in (("with-stats", []), ("no-stats", ["--no-stats", "--force"])):
        assert main(["evaluate", "--input", str(source), "--store", str(store), "--run-id",
                     run, *extra, *FAST]) == EXIT_OK
    assert main(["checkout", str(store), "--run", "with-stats", "--out", str(out)]) == EXIT_OK
    assert names(out) == sorted([*RUN_FILES, *STATS_FILES])
    assert main(["report", str(out), "--out", str(out / "report.html")]) == EXIT_OK
    assert main(["checkout", str(store), "--run", "no-stats", "--out", str(out)]) == EXIT_OK
    assert names(out) == RUN_FILES


# -- leftovers of killed runs -----------------------------------------------------------------


def dead_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    done = subprocess.Popen([sys.executable, "-c", ""])
    done.wait()
    return done.pid


def with_pid(name: str, pid: int) -> str:
    """An owned temporary name of this host, written by process ``pid``."""
    return re.sub(r"[0-9]+@", f"{pid}@", name, count=1)


def test_a_killed_run_leaves_files_the_next_run_removes(tmp_path: Path) -> None:
    rows = [{"id": f"q{i}", "model": f"m{i % 3}", "question": f"question {i}?",
             "reference": f"answer {i}", "response": f"answer {i}"} for i in range(20_000)]
    source = tmp_path / "big.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    args = ["evaluate", "--input", str(source), "--out", str(out), *FAST]
    run = subprocess.Popen([sys.executable, "-m", "pipeline", *args], cwd=ROOT,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while run.poll() is None and time.monotonic() < deadline:
        if out.is_dir() and any(p.name.startswith(".work-") for p in out.iterdir()):
            run.send_signal(signal.SIGKILL)
            break
        time.sleep(0.005)
    assert run.wait() == -signal.SIGKILL, "the run ended before its work directory was seen"
    left = names(out)
    pid = str(run.pid)
    assert any(re.fullmatch(rf"\.work-{pid}@[A-Za-z0-9-]+\.[0-9a-f]{{8}}", n) for n in left)
    assert any(re.fullmatch(rf"\.tmp-scores\.parquet\.{pid}@[A-Za-z0-9-]+\.[0-9a-f]{{8}}", n)
               for n in left)

    assert main(args) == EXIT_OK
    assert names(out) == sorted([*RUN_FILES, *STATS_FILES])


def test_only_files_of_dead_processes_of_this_host_are_removed(
    reported: tuple[Path, Path]
) -> None:
    source, out = reported  # any earlier run: here one with a report
    dead = dead_pid()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        stale = [with_pid(owned_name(".tmp-", "scores.parquet"), dead),
                 with_pid(owned_name(".tmp-", "eval.duckdb"), dead) + ".wal",
                 with_pid(owned_name(".work-"), dead)]
        kept = [with_pid(owned_name(".tmp-", "texts.parquet"), live.pid),
                with_pid(owned_name(".work-"), live.pid),
                f".tmp-scores.parquet.{dead}@another-host.0123abcd",
                ".tmp-scores.parquet.k2j4h5g6",  # the naming of earlier versions
                ".work-1a2b3c4d", ".tmp-notes"]
        for name in [*stale, *kept]:
            if name.startswith(".work-"):
                (out / name).mkdir()
                (out / name / "records.parquet").write_bytes(b"x" * 1000)
            else:
                (out / name).write_bytes(b"x")
        assert main(["evaluate", "--input", str(source), "--out", str(out), *FAST]) == EXIT_OK
        left = sorted(p.name for p in out.iterdir() if p.name.startswith((".tmp-", ".work-")))
        assert left == sorted(kept)
    finally:
        live.kill()
        live.wait()


def test_the_next_store_writer_removes_leftovers_of_dead_processes(tmp_path: Path) -> None:
    store = tmp_path / "store"
    source = write_jsonl(tmp_path / "in.jsonl", ["m1"])
    assert main(["evaluate", "--input", str(source), "--store", str(store), *FAST]) == EXIT_OK
    dead = dead_pid()
    (store / "_failed").mkdir()
    (store / "_staging" / "eval_run=killed.0123abcd").mkdir(parents=True)
    stale = [store / with_pid(owned_name(".tmp-", "eval.duckdb"), dead),
             store / "_failed" / with_pid(owned_name(".tmp-", "killed.0123abcd.json"), dead)]
    kept = [store / ".tmp-eval.duckdb.k2j4h5g6", store / "notes.txt"]
    for path in [*stale, *kept]:
        path.write_bytes(b"x")
    assert main(["evaluate", "--input", str(source), "--store", str(store), "--force",
                 *FAST]) == EXIT_OK
    assert [path.exists() for path in stale] == [False, False]
    assert [path.exists() for path in kept] == [True, True]
    assert list((store / "_staging").iterdir()) == []
    assert list((store / "_failed").iterdir()) == []


def test_atomic_paths_move_every_file_or_none(tmp_path):
    """The run's three files are flushed together and moved together; a failure moves none."""
    targets = [tmp_path / name for name in ("scores.parquet", "rejected.parquet", "texts.parquet")]
    targets[0].write_text("old scores")
    with atomic_paths(*targets) as temps:
        assert [t.parent for t in temps] == [tmp_path] * 3 and not any(t.exists() for t in temps)
        for tmp, text in zip(temps, ("new scores", "new rejected", "new texts"), strict=True):
            tmp.write_text(text)
        assert targets[0].read_text() == "old scores"  # nothing moves before the block ends
    assert [t.read_text() for t in targets] == ["new scores", "new rejected", "new texts"]
    with pytest.raises(RuntimeError), atomic_paths(*targets) as temps:
        for tmp in temps:
            tmp.write_text("half written")
        raise RuntimeError("crash")
    assert [t.read_text() for t in targets] == ["new scores", "new rejected", "new texts"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(t.name for t in targets)


def test_flushing_syncs_the_files_while_they_are_written(tmp_path, monkeypatch):
    """The run's files reach the disk as they are written, so that the flush before they are
    moved into place has little left; the flushing stops with the block."""
    synced: list[Path] = []
    monkeypatch.setattr(atomic_module, "_fsync_file", synced.append)
    target = tmp_path / "texts.parquet"
    with atomic_module.flushing(target, interval=0.01):
        target.write_text("rows")
        deadline = time.monotonic() + 5
        while not synced and time.monotonic() < deadline:
            time.sleep(0.01)
    assert synced and set(synced) == {target}
    after = len(synced)
    time.sleep(0.05)
    assert len(synced) == after
