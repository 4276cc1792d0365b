"""What the open engine costs (issue 27): a user SQL metric, and the in-memory Python API.

    python bench/bench_user_metrics.py [--rows 1000000] [--rounds 2] [--json PATH]

* **A user SQL metric**: ``rag-eval evaluate --metrics answer`` (statistics on, as users run it)
  against the same run with one more metric, the SQL flag ``has_url`` of a config's
  ``[metrics.has_url]``, on the short rows of ``bench/bench_whole.py``; alternating, best of
  ``rounds`` each, whole processes. Target: at most 10 % more wall time.
* **``pipeline.score`` in memory**: the answer family of the same rows, already in memory as a
  polars DataFrame, scored by :func:`pipeline.score` in this process, against ``rag-eval
  evaluate --metrics answer --no-stats`` on the file less the time to read that file
  (``pl.read_parquet``, measured in this process). Target: the API at least as fast.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_whole import SHORT, generate  # noqa: E402

import pipeline  # noqa: E402

CONFIG = """
[metrics.has_url]
sql = "regexp_like(response, 'https?://')"
kind = "flag"
description = "The response contains a URL."
"""


def run_cli(args: list[str], work: Path) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one ``rag-eval`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pipeline", *args, "--no-progress"], cwd=ROOT,
                   check=True, capture_output=True,
                   env={"XDG_CACHE_HOME": str(work / "cache"), "PATH": "/usr/bin:/bin"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def bench_sql_metric(data: Path, work: Path, rounds: int) -> dict[str, Any]:
    config = work / "user.toml"
    config.write_text(CONFIG, encoding="utf-8")
    base = ["evaluate", "--input", str(data), "--out", str(work / "out")]
    sides = {
        "answer": [*base, "--metrics", "answer"],
        "answer + has_url": [*base, "--metrics", "answer,has_url", "--config", str(config)],
    }
    wall: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(rounds):
        for name, args in sides.items():
            seconds, busy = run_cli(args, work)
            wall[name].append(seconds)
            cpu[name].append(busy)
    best = {name: min(values) for name, values in wall.items()}
    best_cpu = {name: min(values) for name, values in cpu.items()}
    return {
        "wall_s": best, "cpu_s": best_cpu,
        "overhead_wall": best["answer + has_url"] / best["answer"] - 1,
        "overhead_cpu": best_cpu["answer + has_url"] / best_cpu["answer"] - 1,
    }


def bench_api(data: Path, work: Path, rounds: int) -> dict[str, Any]:
    reading, api = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        frame = pl.read_parquet(data)
        reading.append(time.perf_counter() - start)
        start = time.perf_counter()
        scored = pipeline.score(frame, metrics=["answer"])
        api.append(time.perf_counter() - start)
        assert scored.scores.height == frame.height
        del frame, scored
    cli = [run_cli(["evaluate", "--input", str(data), "--out", str(work / "api-cli"),
                    "--metrics", "answer", "--no-stats"], work)[0] for _ in range(rounds)]
    return {"api_s": min(api), "cli_s": min(cli), "read_s": min(reading),
            "cli_less_read_s": min(cli) - min(reading)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-user-") as tmp:
        work = Path(tmp)
        data = generate(work / "short.parquet", args.rows, SHORT)
        sql = bench_sql_metric(data, work, args.rounds)
        api = bench_api(data, work, args.rounds)
    result = {"rows": args.rows, "rounds": args.rounds, "sql_metric": sql, "api": api}
    print(f"{args.rows:,} short rows, best of {args.rounds}, whole processes (statistics on):")
    for name, seconds in sql["wall_s"].items():
        print(f"  evaluate --metrics {name:<18} {seconds:7.2f} s wall, "
              f"{sql['cpu_s'][name]:7.2f} s CPU")
    print(f"  a user SQL metric adds {sql['overhead_wall']:+.1%} wall, "
          f"{sql['overhead_cpu']:+.1%} CPU (target <= +10 %)")
    print(f"pipeline.score(frame, metrics=['answer']) in memory: {api['api_s']:.2f} s; "
          f"rag-eval evaluate --no-stats {api['cli_s']:.2f} s less reading "
          f"{api['read_s']:.2f} s = {api['cli_less_read_s']:.2f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
