"""Every ``python`` block of docs/python-api.md runs, in order, on the bundled sample data, in a
fresh interpreter where pandas cannot be imported (the install does not bring it), so the page
cannot rot."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "python-api.md"
SAMPLE = ROOT / "data" / "sample" / "records.parquet"

#: Runs the blocks (a JSON list, argv[1]) in one namespace, with `import pandas` refused.
RUNNER = """
import importlib.abc, json, sys

class NoPandas(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError("No module named 'pandas'", name=name)
        return None

sys.meta_path.insert(0, NoPandas())
namespace = {"__name__": "python_api_doc"}
for number, block in enumerate(json.loads(sys.argv[1]), 1):
    print(f"--- example {number}", flush=True)
    exec(compile(block, f"python-api.md example {number}", "exec"), namespace)
"""


def test_every_python_block_of_the_docs_runs(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert len(blocks) >= 10
    (tmp_path / "data" / "sample").mkdir(parents=True)
    (tmp_path / "data" / "sample" / "records.parquet").symlink_to(SAMPLE)
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, json.dumps(blocks)], cwd=tmp_path, capture_output=True,
        text=True, check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert f"--- example {len(blocks)}" in done.stdout
