"""Issue 29: ``intervals.parquet`` and ``comparisons.parquet`` are written as one pair.

:func:`pipeline.stats.write_stats` stages both files in a sibling temporary directory and puts
them in place only when both are complete; each carries the same ``rag_eval.stats_id``
(Parquet key-value metadata), so a reader can tell a mixed pair. Faults tried, each against an
earlier pair written with another seed and number of resamples:

* the second table's writer fails with ``ENOSPC`` (a monkeypatched Arrow writer), its final
  file fails, its rename fails (with and without hard links): the earlier pair stays, byte for
  byte, and nothing temporary is left;
* a real full disk: a small tmpfs (root only), filled to every free size in steps of 8 KiB;
* ``SIGKILL`` while the second file is half written: the earlier pair stays; the next
  ``write_stats`` (and ``rag-eval stats``) removes what the killed one left;
* ``SIGKILL`` between the two renames: the ids differ and :func:`check_stats_pair` says so.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from test_stats_scale import generated

import pipeline.stats
from pipeline.cli import main
from pipeline.stats import (
    COMPARISONS_FILE,
    INTERVALS_FILE,
    STATS_FILES,
    STATS_ID_KEY,
    check_stats_pair,
    read_stats_id,
    write_stats,
)

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample" / "records.parquet"
#: The earlier pair: seed 0, 40 resamples; the new one: seed 5, 20 resamples.
OLD = {"seed": 0, "resamples": 40}
NEW = {"seed": 5, "resamples": 20}


def scores() -> pl.DataFrame:
    return generated(4, 30, seed=1)


def old_pair(out: Path) -> dict[str, bytes]:
    """``out`` with scores and the earlier pair; the pair's bytes."""
    out.mkdir(parents=True, exist_ok=True)
    scores().write_parquet(out / "scores.parquet")
    write_stats(out, **OLD)
    return {name: (out / name).read_bytes() for name in STATS_FILES}


def assert_old_pair_whole(out: Path, before: dict[str, bytes]) -> None:
    assert {name: (out / name).read_bytes() for name in STATS_FILES} == before
    assert check_stats_pair(out) is None
    assert pl.read_parquet(out / INTERVALS_FILE)["seed"].unique().to_list() == [OLD["seed"]]
    assert pl.read_parquet(out / COMPARISONS_FILE)["seed"].unique().to_list() == [OLD["seed"]]


def leftovers(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if p.name.startswith(".tmp-"))


def test_both_files_carry_one_stats_id(tmp_path: Path) -> None:
    old_pair(tmp_path / "a")
    ids = {read_stats_id(tmp_path / "a" / name) for name in STATS_FILES}
    assert len(ids) == 1
    (pair,) = ids
    assert pair is not None and '"seed": 0' in pair and '"resamples": 40' in pair
    assert pq.read_metadata(tmp_path / "a" / INTERVALS_FILE).metadata[STATS_ID_KEY.encode()]
    assert check_stats_pair(tmp_path / "a") is None
    assert leftovers(tmp_path / "a") == []
    # the id depends on the input only: the same input gives the same files
    old_pair(tmp_path / "b")
    for name in STATS_FILES:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    write_stats(tmp_path / "b", **NEW)
    assert read_stats_id(tmp_path / "b" / INTERVALS_FILE) != pair


def _enospc(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("where", ["section", "final file"])
def test_the_second_table_failing_leaves_the_earlier_pair(
    where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = old_pair(tmp_path)
    original = pq.ParquetWriter.write_table

    def write_table(self: pq.ParquetWriter, table: object, *args: object, **kwargs: object) -> None:
        name = Path(self.where).name
        if name.startswith(COMPARISONS_FILE) and (name == COMPARISONS_FILE) == (
            where == "final file"
        ):
            _enospc()
        original(self, table, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetWriter, "write_table", write_table)
    with pytest.raises(OSError) as caught:
        write_stats(tmp_path, **NEW)
    assert caught.value.errno == errno.ENOSPC
    assert_old_pair_whole(tmp_path, before)
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("links", [True, False], ids=["hard links", "no hard links"])
@pytest.mark.parametrize("earlier", [True, False], ids=["earlier pair", "no earlier pair"])
def test_a_failing_second_rename_restores_the_first(
    links: bool, earlier: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if earlier:
        before = old_pair(tmp_path)
    else:
        tmp_path.mkdir(exist_ok=True)
        scores().write_parquet(tmp_path / "scores.parquet")
    original = os.replace

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        # only the rename of the new comparisons (not the backup's move or its way back)
        new = Path(src).parent.name.startswith(".tmp-stats.") and Path(src).name == COMPARISONS_FILE
        if new and Path(dst) == tmp_path / COMPARISONS_FILE:
            _enospc()
        original(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    if not links:
        monkeypatch.setattr(os, "link", lambda *a, **k: _enospc())
    with pytest.raises(OSError):
        write_stats(tmp_path, **NEW)
    monkeypatch.undo()
    if earlier:
        assert_old_pair_whole(tmp_path, before)
    else:  # neither file: the new intervals were taken back
        assert not any((tmp_path / name).exists() for name in STATS_FILES)
    assert leftovers(tmp_path) == []


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs (root only; skipped where it cannot be mounted)."""
    mount = tmp_path / "tmpfs"
    mount.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_at_any_point_keeps_one_whole_pair(small_tmpfs: Path) -> None:
    """Free space from 0 up in steps of 16 KiB: each write either puts the new pair in place
    or fails with ENOSPC leaving the earlier pair; some fail after the intervals are staged."""
    frame = generated(12, 40, seed=2)  # comparisons of 66 pairs: the larger file
    out = small_tmpfs / "out"
    out.mkdir()
    write_stats(out, scores=frame, **OLD)
    before = {name: (out / name).read_bytes() for name in STATS_FILES}
    sizes = {name: len(data) for name, data in before.items()}
    assert sizes[COMPARISONS_FILE] > 2 * sizes[INTERVALS_FILE]
    filler = small_tmpfs / "filler"
    outcomes: list[str] = []
    free_after_fill = 0
    while True:
        filler.unlink(missing_ok=True)
        stat = os.statvfs(small_tmpfs)
        available = stat.f_bavail * stat.f_frsize
        filler.write_bytes(b"\0" * max(0, available - free_after_fill))
        try:
            write_stats(out, scores=frame, **NEW)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC or "No space left" in str(exc), exc
            assert_old_pair_whole(out, before)
            outcomes.append("failed")
        else:
            assert check_stats_pair(out) is None
            assert pl.read_parquet(out / COMPARISONS_FILE)["seed"].unique().to_list() == [5]
            outcomes.append("written")
            break
        finally:
            assert leftovers(out) == []
        free_after_fill += 16384
    assert outcomes[-1] == "written" and outcomes.count("failed") > 3
    # the failures with room for the staged intervals came from the second table
    assert free_after_fill > 2 * sizes[INTERVALS_FILE] + sizes[COMPARISONS_FILE]


CHILD = textwrap.dedent("""
    import os, signal, sys, time
    from pathlib import Path
    import pyarrow.parquet as pq
    import pipeline.stats as st

    out, moment = Path(sys.argv[1]), sys.argv[2]
    if moment == "writing":  # stop inside the second file, one row group written
        original = pq.ParquetWriter.write_table
        def write_table(self, table, *args, **kwargs):
            original(self, table, *args, **kwargs)
            if Path(self.where).name == st.COMPARISONS_FILE:
                print("ready", flush=True)
                time.sleep(120)
        pq.ParquetWriter.write_table = write_table
    else:  # killed between the two renames
        replace = os.replace
        def killing_replace(src, dst):
            replace(src, dst)
            if Path(dst) == out / st.INTERVALS_FILE:
                os.kill(os.getpid(), signal.SIGKILL)
        os.replace = killing_replace
    st.budgets.FRAME_ROWS = 16  # many row groups
    st.write_stats(out, seed=5, resamples=20)
""")


def run_child(out: Path, moment: str) -> None:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(out), moment], cwd=ROOT,
                             stdout=subprocess.PIPE, text=True)
    try:
        if moment == "writing":
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
            os.kill(child.pid, signal.SIGKILL)
        assert child.wait(timeout=120) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_sigkill_while_writing_the_second_file(tmp_path: Path) -> None:
    assert main(["evaluate", "--input", str(SAMPLE), "--out", str(tmp_path), "--no-progress",
                 "--metrics", "answer", "--embedding-backend", "hashed",
                 "--resamples", str(OLD["resamples"]), "--seed", str(OLD["seed"])]) == 0
    before = {name: (tmp_path / name).read_bytes() for name in STATS_FILES}
    run_child(tmp_path, "writing")
    assert_old_pair_whole(tmp_path, before)
    (staged,) = leftovers(tmp_path)  # the killed writer's directory: nothing visible
    assert staged.startswith(".tmp-stats.")
    assert (tmp_path / staged / INTERVALS_FILE).is_file()  # the first table was complete
    # the next command (``rag-eval stats``) removes it
    assert main(["stats", str(tmp_path), "--resamples", "20", "--seed", "5"]) == 0
    assert leftovers(tmp_path) == []
    assert check_stats_pair(tmp_path) is None
    assert pl.read_parquet(tmp_path / COMPARISONS_FILE)["seed"].unique().to_list() == [5]


def test_sigkill_between_the_renames_is_detected(tmp_path: Path) -> None:
    before = old_pair(tmp_path)
    run_child(tmp_path, "renaming")
    assert (tmp_path / COMPARISONS_FILE).read_bytes() == before[COMPARISONS_FILE]
    assert (tmp_path / INTERVALS_FILE).read_bytes() != before[INTERVALS_FILE]
    problem = check_stats_pair(tmp_path)
    assert problem is not None
    assert "seed 5, 20 resamples" in problem and "seed 0, 40 resamples" in problem
    assert "were not written together" in problem
    write_stats(tmp_path, **NEW)  # the next write makes one pair again and cleans up
    assert check_stats_pair(tmp_path) is None
    assert leftovers(tmp_path) == []


def test_check_stats_pair_cases(tmp_path: Path) -> None:
    assert check_stats_pair(tmp_path) is None  # no statistics
    old_pair(tmp_path / "run")
    run = tmp_path / "run"
    # files without ids (an older version, or written by hand) are read as before
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    for name in STATS_FILES:
        pl.read_parquet(run / name).write_parquet(legacy / name)
        assert read_stats_id(legacy / name) is None
    assert check_stats_pair(legacy) is None
    (legacy / COMPARISONS_FILE).unlink()
    assert check_stats_pair(legacy) is None
    # one file with an id without its partner, or beside a file without one
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(run / INTERVALS_FILE, lone / INTERVALS_FILE)
    assert "has no comparisons.parquet beside it" in (check_stats_pair(lone) or "")
    pl.read_parquet(run / COMPARISONS_FILE).write_parquet(lone / COMPARISONS_FILE)
    assert "an older version" in (check_stats_pair(lone) or "")
    # a truncated file
    (lone / COMPARISONS_FILE).write_bytes((run / COMPARISONS_FILE).read_bytes()[:100])
    assert "cannot be read" in (check_stats_pair(lone) or "")


def test_a_killed_writers_directory_is_removed_by_the_next_write(tmp_path: Path) -> None:
    before = old_pair(tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    stale = tmp_path / pipeline.stats.owned_name(".tmp-", "stats").replace(
        f".{os.getpid()}@", f".{int(dead.stdout)}@")
    stale.mkdir()
    (stale / INTERVALS_FILE).write_bytes(b"PAR1 half")
    write_stats(tmp_path, **OLD)
    assert not stale.exists()
    assert_old_pair_whole(tmp_path, before)
