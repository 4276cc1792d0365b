"""The README's five-minute tour is a test: its commands run on the sample, in order.

The commands are the ``sh`` block after the ``<!-- tour: ... -->`` marker of README.md; each
runs as ``python -m pipeline`` in a scratch directory holding a copy of ``data/sample``, and
must exit 0 (``compare`` of a run against the same rows: 0, the gate passes).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def tour_commands() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- tour:[^>]*-->\n```sh\n(.*?)```", text, flags=re.DOTALL)
    assert match is not None, "README.md has no tour block"
    return [shlex.split(line) for line in match.group(1).splitlines() if line.strip()]


def test_the_tour_runs_on_the_sample(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "data" / "sample", tmp_path / "data" / "sample")
    env = {**os.environ, "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME")
           or str(Path.home() / ".cache")}
    outputs = []
    commands = tour_commands()
    assert [c[1] for c in commands].count("query") >= 3 and "compare" in [c[1] for c in commands]
    for command in commands:
        assert command[0] == "rag-eval", command
        done = subprocess.run([sys.executable, "-m", "pipeline", *command[1:]], cwd=tmp_path,
                              capture_output=True, text=True, check=False, env=env)
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
        outputs.append(done.stdout)
    assert (tmp_path / "out" / "tour" / "report.html").is_file()
    texts = next(o for c, o in zip(commands, outputs, strict=True) if "texts" in " ".join(c))
    assert "passage" in texts and "sentence" in texts
    assert "regression gate passed" in outputs[[c[1] for c in commands].index("compare")]
    runs = outputs[-1]
    assert "1650" in runs.replace(",", "")  # the second store run reused every row

