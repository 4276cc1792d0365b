"""Issue 29, items 6 and 9: exit codes that tell the truth under the faults a nightly job meets,
and inputs and exports that do not grow without bound.

Every user or environment error exits 2 with one line naming the path or key and the cause; a
closed stdout changes no code; Ctrl-C exits 130 with one line, earlier outputs whole and no
temporary file left; exit 4 is for bugs only. The table of README.md ("Exit codes") lists
exactly the codes tested here.
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import signal
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import pipeline.cli as cli

# The command modules load on demand; these are patched below.
import pipeline.cli.query
import pipeline.cli.stats  # noqa: F401
from pipeline.cli import (
    EXIT_BUSY,
    EXIT_ERROR,
    EXIT_GATE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REJECTED,
    main,
)
from pipeline.cli._guard import EARLY, deferred_interrupts
from pipeline.cli.errors import environment_error
from pipeline.config import Config
from pipeline.io import readers, record_limits
from pipeline.io.atomic import owned_name, public_path
from pipeline.schema import InputError
from pipeline.store import Store

ROOT = Path(__file__).resolve().parent.parent
FAST = ["--no-progress", "--metrics", "answer", "--resamples", "10"]


def write_jsonl(path: Path, n: int = 3, model: str = "m") -> Path:
    rows = [{"id": f"q{i}", "model": model, "question": f"question {i}?",
             "reference": f"answer {i}", "response": f"answer {i}" if i % 2 else "no idea"}
            for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def error_lines(err: str) -> list[str]:
    """stderr without the INFO log lines."""
    return [line for line in err.splitlines() if line and not line.startswith("INFO ")]


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes()
            for p in sorted(directory.rglob("*")) if p.is_file()}


def leftovers(*directories: Path) -> list[str]:
    return [p.name for d in directories if d.is_dir() for p in d.rglob("*")
            if p.name.startswith((".tmp-", ".work-"))]


def cli_run(*args: str, limit: int | None = None, **kwargs: object) -> subprocess.CompletedProcess:
    """``python -m pipeline ARGS`` in a child process; ``limit``: its file-size limit in bytes
    (RLIMIT_FSIZE, SIGXFSZ ignored so that a write past it fails with EFBIG)."""

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        assert limit is not None
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          preexec_fn=limited if limit is not None else None, **kwargs)


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "good.jsonl")


# --- every code of the README's table -------------------------------------------------------


def readme_codes() -> list[int]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### Exit codes", 1)[1].split("\n## ", 1)[0]
    return [int(m) for m in re.findall(r"^\| (\d+) \|", section, flags=re.M)]


def test_the_readme_table_and_the_docstring_list_the_codes_tested_here() -> None:
    codes = [EXIT_OK, EXIT_REJECTED, EXIT_ERROR, EXIT_GATE, EXIT_INTERNAL, EXIT_BUSY,
             EXIT_INTERRUPTED]
    assert readme_codes() == codes == [0, 1, 2, 3, 4, 5, 130]
    doc = cli.__doc__ or ""
    assert [int(c) for c in re.findall(r"^\* (\d+) ", doc, flags=re.M)] == codes


def test_each_exit_code(tmp_path: Path, good: Path, monkeypatch: pytest.MonkeyPatch,
                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    right = write_jsonl(tmp_path / "right.jsonl", n=40)
    assert main(["evaluate", "--input", str(right), "--out", str(out), *FAST]) == EXIT_OK
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "b", "model": "m", "question": 7, "reference": "r", '
                   '"response": "r"}\n', encoding="utf-8")
    assert main(["evaluate", "--input", str(bad), "--out", str(tmp_path / "o1"),
                 *FAST]) == EXIT_REJECTED
    assert main(["evaluate", "--input", str(good), "--out", str(good), *FAST]) == EXIT_ERROR
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text("".join(
        json.dumps({"id": f"q{i}", "model": "m", "question": f"question {i}?",
                    "reference": f"answer {i}", "response": "something else"}) + "\n"
        for i in range(40)), encoding="utf-8")
    worse = tmp_path / "worse"
    assert main(["evaluate", "--input", str(wrong), "--out", str(worse), *FAST]) == EXIT_OK
    assert main(["compare", str(out), str(worse), "--resamples", "10",
                 "--max-drop", "answer_f1=0.01"]) == EXIT_GATE
    store = Store(tmp_path / "store")
    with store.lock():
        assert main(["evaluate", "--input", str(good), "--store", str(store.root),
                     *FAST]) == EXIT_BUSY

    def bug(args: object) -> int:
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(cli.stats, "run", bug)
    capsys.readouterr()
    assert main(["stats", str(out)]) == EXIT_INTERNAL
    assert "Traceback" in capsys.readouterr().err

    def ctrl_c(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli.stats, "run", ctrl_c)
    assert main(["stats", str(out)]) == EXIT_INTERRUPTED
    assert error_lines(capsys.readouterr().err) == [
        "interrupted: stopped before the command finished; earlier outputs are as they were "
        "and this command's temporary files are removed"
    ]


# --- the environment: full disks, file-size limits, paths -----------------------------------


def test_a_file_size_limit_exits_2_naming_the_output_and_keeps_the_earlier_run(
    tmp_path: Path, good: Path
) -> None:
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(good), "--out", str(out), *FAST]) == EXIT_OK
    before = snapshot(out)
    big = tmp_path / "big.jsonl"
    rng = random.Random(0)  # texts that do not compress: the new files outgrow the limit

    def text(words: int) -> str:
        return " ".join(f"{rng.getrandbits(40):x}" for _ in range(words))

    big.write_text("".join(
        json.dumps({"id": f"q{i}", "model": "m", "question": text(10), "reference": text(20),
                    "response": text(30)}) + "\n"
        for i in range(500)), encoding="utf-8")  # 330 kB of text, 5 x the limit
    done = cli_run("evaluate", "--input", str(big), "--out", str(out), *FAST, limit=60_000)
    assert done.returncode == EXIT_ERROR, done.stderr
    lines = error_lines(done.stderr)
    assert len(lines) == 1 and re.fullmatch(
        rf"error: (cannot write {out}|{out}/[a-z_.]+): File too large", lines[0]
    ), lines
    assert snapshot(out) == before
    assert leftovers(out) == []


@pytest.fixture
def small_disk(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A 1 MiB tmpfs (root only, where mounting is allowed)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True
    ).returncode != 0:
        pytest.skip("needs root and a mountable tmpfs")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_full_disk_exits_2_naming_the_output_and_keeps_the_earlier_run(
    tmp_path: Path, good: Path, small_disk: Path
) -> None:
    out = small_disk / "out"
    assert main(["evaluate", "--input", str(good), "--out", str(out), *FAST]) == EXIT_OK
    before = snapshot(out)
    rng = random.Random(1)
    big = tmp_path / "big.jsonl"
    big.write_text("".join(
        json.dumps({"id": f"q{i}", "model": "m", "question": f"{rng.getrandbits(64):x}?",
                    "reference": f"{rng.getrandbits(256):x}",
                    "response": " ".join(f"{rng.getrandbits(64):x}" for _ in range(20))})
        + "\n" for i in range(6000)), encoding="utf-8")
    done = cli_run("evaluate", "--input", str(big), "--out", str(out), *FAST)
    assert done.returncode == EXIT_ERROR, done.stderr
    lines = error_lines(done.stderr)
    assert len(lines) == 1 and re.fullmatch(
        rf"error: (cannot write {out}|{out}/[a-z_.]+): No space left on device", lines[0]
    ), lines
    assert snapshot(out) == before
    assert leftovers(out) == []


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (OSError(28, "No space left on device"), "cannot write out: No space left on device"),
        (OSError(122, "Disk quota exceeded"), "cannot write out: Disk quota exceeded"),
        (IsADirectoryError(21, "Is a directory", "cfg"), "cfg: Is a directory"),
        (PermissionError(13, "Permission denied", "/x/y"), "/x/y: Permission denied"),
        # polars and DuckDB carry the operating system's words in their own exceptions
        (pl.exceptions.ComputeError("parquet: underlying IO error: File too large (os error "
                                    "27)"), "cannot write out: File too large"),
        (RuntimeError('IO Error: Could not write file "out/eval.duckdb": No space left on '
                      'device'), "out/eval.duckdb: No space left on device"),
        (OSError(28, "No space left on device",
                 f"out/{owned_name('.tmp-', 'scores.parquet')}"),
         "out/scores.parquet: No space left on device"),
    ],
)
def test_environment_errors_are_one_line_naming_the_path_and_cause(
    exc: BaseException, expected: str
) -> None:
    assert environment_error(exc, Path("out")) == expected


def test_a_bug_is_not_an_environment_error() -> None:
    assert environment_error(KeyError("metric"), Path("out")) is None
    wrapped = ValueError("outer")
    wrapped.__cause__ = OSError(28, "No space left on device")
    assert environment_error(wrapped, None) == "No space left on device"


def test_public_path_names_the_target_of_a_temporary_file() -> None:
    assert public_path(f"a/{owned_name('.work-')}/records.parquet") == "a"
    assert public_path("a/.tmp-notes") == "a/.tmp-notes"


@pytest.mark.parametrize(
    ("setup", "expected"),
    [
        ("directory", "error: {cfg}: is a directory, not a config file"),
        ("latin-1", "error: {cfg}: not UTF-8 text (byte 14); TOML is UTF-8"),
        ("answer-5", "error: {cfg}: [answer] must be a table"),
        ("cache-file", "error: {tmp}/a-file is a file, not a directory (the embedding cache: "
                       "[embedding] cache_dir)"),
        ("stopwords", "error: {cfg}: [keywords] stopwords file {tmp}/stop.txt is not UTF-8 "
                      "text (byte 4)"),
        ("synonyms", "error: {cfg}: [keywords] synonyms file {tmp}/syn.tsv is not UTF-8 text "
                     "(byte 0)"),
    ],
)
def test_config_faults_exit_2_with_one_line(
    tmp_path: Path, good: Path, capsys: pytest.CaptureFixture[str], setup: str, expected: str
) -> None:
    cfg = tmp_path / "cfg.toml"
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    (tmp_path / "stop.txt").write_bytes(b"the\n\xe9t\xe9\n")
    (tmp_path / "syn.tsv").write_bytes(b"\xff\xfe")
    text = {
        "latin-1": None, "directory": None,
        "answer-5": "answer = 5\n",
        "cache-file": '[embedding]\ncache_dir = "a-file"\n',
        "stopwords": '[keywords]\nstopwords = "stop.txt"\n',
        "synonyms": '[keywords]\nsynonyms = "syn.tsv"\n',
    }[setup]
    if setup == "directory":
        cfg.mkdir()
    elif setup == "latin-1":
        cfg.write_bytes(b"[answer]\n# caf\xe9\n")
    else:
        assert text is not None
        cfg.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    code = main(["evaluate", "--input", str(good), "--out", str(out), "--config", str(cfg),
                 *FAST])
    assert code == EXIT_ERROR
    assert error_lines(capsys.readouterr().err) == [expected.format(cfg=cfg, tmp=tmp_path)]
    assert not out.exists()


def test_export_below_a_file_exits_2(tmp_path: Path, good: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(good), "--out", str(out), *FAST]) == EXIT_OK
    capsys.readouterr()
    assert main(["export", str(out), "--out", str(good / "x.tsv")]) == EXIT_ERROR
    assert error_lines(capsys.readouterr().err) == [
        f"error: {good} is a file, not a directory (output path {good}/x.tsv)"
    ]


# --- a closed stdout ------------------------------------------------------------------------


def read_one_line(*args: str) -> tuple[int, str, str]:
    """Run the CLI with stdout on a pipe whose reader takes one line and goes away."""
    child = subprocess.Popen([sys.executable, "-m", "pipeline", *args], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stderr is not None
    first = child.stdout.readline()
    child.stdout.close()
    err = child.stderr.read()
    return child.wait(timeout=300), first, err


def test_a_closed_stdout_after_the_commit_keeps_the_run_and_its_code(
    tmp_path: Path, good: Path
) -> None:
    store = tmp_path / "store"
    many = write_jsonl(tmp_path / "many.jsonl", n=300)  # the summary is as long for any n
    code, first, err = read_one_line("evaluate", "--input", str(many), "--store", str(store),
                                     "--run-id", "r1", *FAST)
    assert code == EXIT_OK, err
    assert first.startswith("run r1: read 300 rows")
    assert "Traceback" not in err and "BrokenPipe" not in err
    assert (store / "eval_run=r1").is_dir()  # committed
    code, first, err = read_one_line("query", str(store), "select * from range(200000)",
                                     "--format", "csv")
    assert (code, first, err) == (EXIT_OK, "range\n", "")


# --- Ctrl-C ---------------------------------------------------------------------------------

#: A plug-in metric that presses Ctrl-C on its own process while the run scores (its first call
#: is the check of user metrics on a sample, before the run).
CTRL_C_PLUGIN = '''
import os
import signal

import polars as pl

import pipeline

CALLS = []


@pipeline.metric(name="ctrl_c", kind="count", needs=("response",), batch=True)
def ctrl_c(response: pl.Series) -> pl.Series:
    CALLS.append(len(response))
    if len(CALLS) == 2:
        os.kill(os.getpid(), signal.SIGINT)
    return response.str.len_chars()
'''


@pytest.mark.parametrize("target", ["out", "store"])
def test_ctrl_c_during_a_run_exits_130_with_one_line_and_leaves_nothing(
    tmp_path: Path, good: Path, target: str
) -> None:
    plugin = tmp_path / "ctrl_c_plugin.py"
    plugin.write_text(CTRL_C_PLUGIN, encoding="utf-8")
    where = tmp_path / target
    # The earlier run (in this process: only the interrupted one needs its own).
    assert main(["evaluate", "--input", str(good), f"--{target}", str(where), *FAST]) == EXIT_OK
    before = snapshot(where)
    many = write_jsonl(tmp_path / "many.jsonl", n=500, model="other")
    done = cli_run("evaluate", "--input", str(many), f"--{target}", str(where), "--plugin",
                   str(plugin), "--no-progress", "--metrics", "answer,ctrl_c",
                   "--resamples", "10")
    assert done.returncode == EXIT_INTERRUPTED, done.stderr
    assert error_lines(done.stderr) == [
        "interrupted: stopped before the command finished; earlier outputs are as they were "
        "and this command's temporary files are removed"
    ]
    after = snapshot(where)
    if target == "store":  # the aborted run is kept for inspection in _failed/, as for a kill
        after = {k: v for k, v in after.items() if not k.startswith(("_failed/", "_lock"))}
        before = {k: v for k, v in before.items() if not k.startswith("_lock")}
    assert after == before
    assert leftovers(where, tmp_path) == []


def test_ctrl_c_while_the_modules_are_imported_is_held_for_main(
    tmp_path: Path, good: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with deferred_interrupts():
        signal.raise_signal(signal.SIGINT)  # no KeyboardInterrupt here
    assert EARLY == [signal.SIGINT]
    assert main(["validate", "--input", str(good)]) == EXIT_INTERRUPTED
    assert EARLY == []
    assert capsys.readouterr().out == ""


def test_duckdb_s_interrupt_is_an_interrupt(
    tmp_path: Path, good: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted_query(args: object) -> int:  # what DuckDB raises after a SIGINT
        raise RuntimeError("Query interrupted")

    monkeypatch.setattr(cli.stats, "run", interrupted_query)
    assert main(["stats", str(tmp_path)]) == EXIT_INTERRUPTED


def test_ctrl_c_during_a_query_is_an_interrupt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted_query(*args: object, **kwargs: object) -> None:
        raise RuntimeError("Query interrupted")  # what DuckDB raises after a SIGINT

    monkeypatch.setattr(cli.query, "query_relation", interrupted_query)
    assert main(["query", str(tmp_path), "select 1"]) == EXIT_INTERRUPTED


# --- inputs: truncated mid-run, absurd records, whitespace ----------------------------------


def parquet_input(tmp_path: Path, rows: int = 6000) -> Path:
    path = tmp_path / "in.parquet"
    pl.DataFrame({
        "id": [f"q{i}" for i in range(rows)], "model": ["m"] * rows,
        "question": [f"question {i}?" for i in range(rows)],
        "reference": [f"answer {i}" for i in range(rows)],
        "response": [f"answer {i}" for i in range(rows)],
    }).write_parquet(path, row_group_size=1000)
    return path


def test_a_parquet_file_cut_while_it_is_read_is_refused(tmp_path: Path) -> None:
    path = parquet_input(tmp_path)
    chunks = readers.iter_records(path, Config(), 1000)
    assert next(chunks).height == 1000
    os.truncate(path, path.stat().st_size // 2)
    with pytest.raises(InputError, match=r"in\.parquet: the file changed while it was read "
                                         r"\(was \d+ bytes, now \d+\)"):
        list(chunks)


def test_a_parquet_file_damaged_in_place_is_refused_without_a_panic(tmp_path: Path) -> None:
    """Same size and time, damaged bytes: polars panics (a BaseException); the reader says
    which file, in one line."""
    path = parquet_input(tmp_path)
    chunks = readers.iter_records(path, Config(), 1000)
    next(chunks)
    stat = path.stat()
    with open(path, "r+b") as handle:
        handle.seek(stat.st_size // 2)
        handle.write(b"\xff" * 4096)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(InputError, match=r"in\.parquet: cannot read Parquet data: ") as caught:
        list(chunks)
    assert "\n" not in str(caught.value)


def test_a_parquet_input_cut_during_a_run_exits_2_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = parquet_input(tmp_path, rows=20_000)
    slices = readers.parquet_slices

    def cut_after_the_first(groups: list[tuple[int, int]], rows: int):  # type: ignore[no-untyped-def]
        for number, piece in enumerate(slices(groups, 1000)):
            if number == 1:
                os.truncate(path, path.stat().st_size // 2)
            yield piece

    monkeypatch.setattr(readers, "parquet_slices", cut_after_the_first)
    code = main(["evaluate", "--input", str(path), "--out", str(tmp_path / "out"), *FAST])
    assert code == EXIT_ERROR
    lines = error_lines(capsys.readouterr().err)
    assert len(lines) == 1 and lines[0].startswith(
        f"error: {path}: the file changed while it was read"
    ), lines


def test_an_absurd_jsonl_line_is_rejected_without_being_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(record_limits, "MAX_RECORD_BYTES", 4096)
    monkeypatch.setattr(record_limits, "SCAN_BYTES", 1024)
    path = write_jsonl(tmp_path / "in.jsonl", n=4)
    lines = path.read_text(encoding="utf-8").splitlines()
    long = json.dumps({"id": "long", "model": "m", "question": "q?", "reference": "r",
                       "response": "x" * 20_000})
    path.write_text("\n".join([lines[0], long, *lines[1:], " " * 10_000, ""]),
                    encoding="utf-8")
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(path), "--out", str(out), *FAST]) == EXIT_OK
    rejected = pl.read_parquet(out / "rejected.parquet")
    assert rejected.select("row_number", "reason").rows() == [
        (1, "line 2: 0.0 MiB, more than the 0 MiB a record may hold (docs/input-integrity.md)")
    ]
    assert json.loads(rejected["raw"][0]) == {"line_bytes": len(long)}
    assert pl.read_parquet(out / "scores.parquet").height == 4


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".json"])
def test_a_row_with_absurd_text_is_rejected_in_every_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    monkeypatch.setattr(record_limits, "MAX_RECORD_BYTES", 2**20)
    frame = pl.DataFrame({"id": ["a", "b"], "model": ["m", "m"], "question": ["q?", "q?"],
                          "reference": ["r", "r"], "response": ["r", "x" * (3 * 2**20)]})
    path = tmp_path / f"in{suffix}"
    {".parquet": frame.write_parquet, ".csv": frame.write_csv,
     ".json": lambda p: p.write_text(json.dumps(frame.to_dicts()), encoding="utf-8")
     }[suffix](path)
    read = readers.read_records(path, Config())
    problems = read[readers.READER_PROBLEM].to_list()
    assert problems == [None, "the row holds 3.0 MiB of text, more than the 1 MiB a record "
                              "may hold (docs/input-integrity.md)"]
    assert read["response"].to_list() == ["r", None]  # the text goes no further


def peak_rss_mb(*args: str) -> tuple[int, float]:
    """Exit code and peak RSS (MiB) of ``rag-eval ARGS`` in a fresh process."""
    code = ("import resource, sys; from pipeline.cli import main; "
            f"code = main({list(args)!r}); "
            "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    return done.returncode, float(done.stdout.split()[-1])


def test_a_whitespace_file_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    path = tmp_path / "blank.jsonl"
    with open(path, "wb") as handle:
        for _ in range(160):
            handle.write((b" " * 1023 + b"\n") * 1024)  # 160 MiB of blank lines
    baseline_code, baseline = peak_rss_mb("metrics", "--format", "markdown")
    code, peak = peak_rss_mb("validate", "--input", str(path))
    assert (baseline_code, code) == (EXIT_OK, EXIT_ERROR)
    assert peak < baseline + 40, (peak, baseline)  # was about 3 x the file


# --- export: streamed, atomic, its leftovers cleaned ----------------------------------------


def test_export_in_many_slices_equals_the_table_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline import export as export_module

    source = write_jsonl(tmp_path / "in.jsonl", n=2500)
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(source), "--out", str(out), *FAST]) == EXIT_OK
    whole = {fmt: tmp_path / f"whole.{fmt}" for fmt in ("tsv", "csv", "parquet")}
    for fmt, target in whole.items():
        assert main(["export", str(out), "--format", fmt, "--out", str(target)]) == EXIT_OK
    monkeypatch.setattr(export_module, "EXPORT_BATCH_BYTES", 1)  # slices of 1,000 rows
    assert len(list(export_module.export_batches(out))) == 3
    for fmt, target in whole.items():
        sliced = tmp_path / f"sliced.{fmt}"
        assert main(["export", str(out), "--format", fmt, "--out", str(sliced)]) == EXIT_OK
        if fmt == "parquet":
            assert pl.read_parquet(sliced).equals(pl.read_parquet(target))
            assert pl.read_parquet(sliced).equals(export_module.export_table(out))
        else:
            assert sliced.read_bytes() == target.read_bytes()


def test_a_killed_export_leaves_a_file_the_next_command_removes(tmp_path: Path,
                                                                good: Path) -> None:
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(good), "--out", str(out), *FAST]) == EXIT_OK
    dead = subprocess.Popen([sys.executable, "-c", ""])
    dead.wait()
    left = out / re.sub(r"[0-9]+@", f"{dead.pid}@", owned_name(".tmp-", "export.tsv"), count=1)
    left.write_bytes(b"half an export")
    assert main(["stats", str(out), "--resamples", "10"]) == EXIT_OK  # any command writing there
    assert not left.exists()
    left.write_bytes(b"half an export")
    assert main(["export", str(out)]) == EXIT_OK
    assert leftovers(out) == []
