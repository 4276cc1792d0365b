"""Shared benchmark plumbing: child-process measurement with peak memory, table printing."""

from __future__ import annotations

import multiprocessing as mp
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def peak_rss_mib() -> float:
    """This process's peak resident memory (VmHWM; unlike ru_maxrss it restarts at exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _child(target: Callable[..., dict[str, float]], args: tuple[Any, ...], queue: Any) -> None:
    result = target(*args)
    result["peak_rss_mib"] = peak_rss_mib()
    queue.put(result)


def measure(target: Callable[..., dict[str, float]], *args: Any) -> dict[str, float]:
    """Run ``target(*args)`` in a fresh spawned process; its result plus ``peak_rss_mib``."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    process = ctx.Process(target=_child, args=(target, args, queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def random_texts(rng: np.random.Generator, vocab: np.ndarray, n: int, lo: int, hi: int
                 ) -> list[str]:
    """``n`` texts of ``lo..hi`` words drawn from ``vocab`` (data generation, not measured)."""
    lengths = rng.integers(lo, hi + 1, size=n)
    flat = vocab[rng.integers(0, len(vocab), size=int(lengths.sum()))].tolist()
    out, start = [], 0
    for length in lengths.tolist():
        out.append(" ".join(flat[start:start + length]))
        start += length
    return out


def print_table(rows: list[tuple[str, int, dict[str, float]]]) -> None:
    """One line per (label, rows, measurement): rows/s, seconds and peak memory."""
    print(f"{'implementation':<44}{'rows':>10}{'rows/s':>12}{'seconds':>10}{'peak RSS MiB':>14}")
    for label, n, result in rows:
        rate = n / result["seconds"]
        print(f"{label:<44}{n:>10,}{rate:>12,.0f}{result['seconds']:>10.2f}"
              f"{result['peak_rss_mib']:>14.0f}")


def check_agree(label: str, ours: float, reference: float, rel: float = 1e-9) -> None:
    """Stop the benchmark when two checksums differ: a fast wrong answer is worthless."""
    if abs(ours - reference) > rel * max(1.0, abs(reference)):
        raise SystemExit(f"{label}: implementations disagree: {ours!r} vs {reference!r}")


#: Launcher run with ``python -S -c``: starts the command, waits with ``os.wait4`` and writes wall
#: seconds, peak RSS and exit status as JSON. Its own small footprint is the floor of the peak.
LAUNCHER = """
import json, os, subprocess, sys, time
result, log, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(log, "wb") as out:
    start = time.perf_counter()
    child = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
with open(result, "w") as f:
    json.dump({"seconds": seconds, "peak_rss_mib": usage.ru_maxrss / 1024,
               "returncode": os.waitstatus_to_exitcode(status)}, f)
"""


def against_baseline(baseline: str, args: Sequence[str], work: Path, rounds: int = 3,
                     warm_up: bool = True) -> dict[str, Any]:
    """``rag-eval ARGS --out OUT`` with this tree and with a git worktree of ``baseline``,
    alternating, ``rounds`` times each (after one warm-up round that fills the embedding cache,
    when ``warm_up``): the best wall seconds and CPU seconds (user + system of the child, steadier
    on a busy machine) of each side, and the slowdown of this tree."""
    tree = work / "baseline"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), baseline],
                   check=True, capture_output=True)
    wall: dict[str, list[float]] = {"current": [], "baseline": []}
    cpu: dict[str, list[float]] = {"current": [], "baseline": []}
    try:
        for attempt in range(rounds + int(warm_up)):
            for name, where in (("baseline", tree), ("current", ROOT)):
                start = time.perf_counter()
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run(
                    [sys.executable, "-m", "pipeline", *args,
                     "--out", str(work / f"out-{name}-{attempt}")],
                    cwd=where, check=True, capture_output=True,
                    env={"XDG_CACHE_HOME": str(work / "cache"), "PATH": "/usr/bin:/bin",
                         "PYTHONPATH": str(where)},
                )
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if attempt or not warm_up:
                    wall[name].append(time.perf_counter() - start)
                    cpu[name].append(after.ru_utime + after.ru_stime
                                     - before.ru_utime - before.ru_stime)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                       check=False, capture_output=True)
    current, base = min(wall["current"]), min(wall["baseline"])
    current_cpu, base_cpu = min(cpu["current"]), min(cpu["baseline"])
    return {"current_s": current, "baseline_s": base, "slowdown": current / base - 1.0,
            "baseline": baseline, "current_cpu_s": current_cpu, "baseline_cpu_s": base_cpu,
            "cpu_slowdown": current_cpu / base_cpu - 1.0}


def baseline_line(label: str, s: dict[str, Any]) -> str:
    """One sentence of an :func:`against_baseline` result."""
    return (f"{label}: {s['current_s']:.2f} s wall / {s['current_cpu_s']:.2f} CPU-s against "
            f"{s['baseline_s']:.2f} s / {s['baseline_cpu_s']:.2f} CPU-s at {s['baseline']} "
            f"({s['slowdown'] * 100:+.1f} % wall, {s['cpu_slowdown'] * 100:+.1f} % CPU).")
