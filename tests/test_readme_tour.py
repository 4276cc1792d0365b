"""The README's five-minute tour is a test: its commands run on the sample, in order, exactly as
written, in one bash shell, as a newcomer runs them after ``make evaluate``.

The commands are the ``sh`` block after the ``<!-- tour: ... -->`` marker of README.md. They run
in a scratch directory holding a copy of ``data/sample`` and a link ``.venv`` to this checkout's
virtual environment (the one ``make evaluate`` made; it is not installed again), with a ``PATH``
that does not hold ``rag-eval``: the block's own ``source .venv/bin/activate`` must put it
there. Every command must exit 0 (``compare`` of a run against the same rows: the gate passes).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Printed between two commands, to split the output per command.
MARK = "@@tour-command-done@@"
#: A PATH with the system's tools and no virtual environment.
BARE_PATH = "/usr/local/bin:/usr/bin:/bin"


def tour_lines() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- tour:[^>]*-->\n```sh\n(.*?)```", text, flags=re.DOTALL)
    assert match is not None, "README.md has no tour block"
    return [line for line in match.group(1).splitlines() if line.strip()]


def run_block(lines: list[str], cwd: Path, env: dict[str, str]) -> list[str]:
    """``lines`` as one bash script (stopping at the first failure); the stdout of each."""
    script = "set -e\n" + "".join(f"{line}\necho {MARK}\n" for line in lines)
    done = subprocess.run(["bash", "-c", script], cwd=cwd, capture_output=True, text=True,
                          check=False, env=env)
    outputs = done.stdout.split(MARK + "\n")
    failed = lines[len(outputs) - 1] if done.returncode else None
    assert done.returncode == 0, (failed, done.stdout[-2000:], done.stderr[-2000:])
    return outputs[: len(lines)]


@pytest.fixture
def fresh_clone(tmp_path: Path) -> Path:
    """The sample data and ``.venv`` (a link to this checkout's) in a scratch directory."""
    if not (ROOT / ".venv" / "bin" / "activate").is_file():
        pytest.skip("no .venv in the checkout: run `make evaluate` first")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "sample").symlink_to(ROOT / "data" / "sample")
    (tmp_path / ".venv").symlink_to(ROOT / ".venv")
    return tmp_path


def test_the_tour_runs_as_written(fresh_clone: Path) -> None:
    lines = tour_lines()
    assert lines[0].startswith("source .venv/bin/activate")
    env = {"PATH": BARE_PATH, "HOME": str(Path.home()), "LANG": "C.UTF-8"}
    # without the README's first line, the tool is not found: the line is needed
    missing = subprocess.run(["bash", "-c", lines[1]], cwd=fresh_clone, capture_output=True,
                             text=True, check=False, env=env)
    assert missing.returncode == 127 and "rag-eval: command not found" in missing.stderr
    outputs = run_block(lines, fresh_clone, env)
    commands = [line.split()[1] if line.startswith("rag-eval ") else "" for line in lines]
    assert commands.count("query") >= 3 and "compare" in commands
    assert (fresh_clone / "out" / "tour" / "report.html").is_file()
    texts = next(o for line, o in zip(lines, outputs, strict=True) if "texts" in line)
    assert "passage" in texts and "sentence" in texts
    assert "regression gate passed" in outputs[commands.index("compare")]
    rows = pl.read_parquet(ROOT / "data" / "sample" / "records.parquet").height
    assert str(rows) in outputs[-1].replace(",", "")  # the second store run reused every row
