"""Statistics at scale: `write_stats` with 1,000 models and with 100k categories, and the HTML
report of 20k rows in 1,000 categories, each in a fresh child process (peak RSS and wall time
from ``os.wait4``, as :data:`common.LAUNCHER` measures them).

The scores are synthetic and deterministic (generation is not measured): every model answers
every question once per noise level; a question's category, question type and the scores
depend on the seed only. Eight mean metrics, two of them 0/1 (``answer_em``, ``abstained``):
the intervals, the paired bootstrap, the sign-flip and McNemar tests all run. The report case
scores generated records with `rag-eval evaluate --metrics answer,citation,abstention` (measured
too), then draws `rag-eval report`.

Target, reported and never asserted: peak RSS under 2 GiB in every case.

    python bench/bench_stats_scale.py [--cases models,categories,report] [--workdir DIR]
        [--resamples 1000] [--pythonpath TREE] [--json results.json]

``--pythonpath TREE`` runs the children against another checkout (e.g. an earlier commit
unpacked with ``git archive``) to measure it the same way; ``--models`` / ``--categories``
shrink the cases for such a run (the earlier code needs far more memory).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from common import LAUNCHER  # noqa: E402 - the shared measuring launcher

RSS_LIMIT_GIB = 2.0
NOISE_LEVELS = (0.0, 0.4)
QUESTION_TYPES = ("fact", "multi-hop", "comparison")
#: The mean metrics of the generated scores and their dtypes (as the registry has them).
METRICS: dict[str, pl.DataType] = {
    "answer_em": pl.Int8(), "answer_f1": pl.Float64(), "citation_precision": pl.Float64(),
    "citation_recall": pl.Float64(), "citation_f1": pl.Float64(), "abstained": pl.Int8(),
    "faithfulness": pl.Float64(), "latency_ms": pl.Float64(),
}
#: (models, questions, categories) of the two `write_stats` cases.
MODELS_CASE = (1_000, 300, 10)
CATEGORIES_CASE = (3, 200_000, 100_000)
#: (rows, categories, models) of the report case.
REPORT_CASE = (20_000, 1_000, 4)


def scores_frame(models: int, questions: int, categories: int, seed: int = 0) -> pl.DataFrame:
    """A scores table: ``models x questions x len(NOISE_LEVELS)`` rows, key (id, model, run,
    noise_level) unique, question ``i`` in category ``i % categories``."""
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.0, 0.15, models)
    difficulty = rng.normal(0.0, 0.2, questions)
    n_noise = len(NOISE_LEVELS)
    model = np.repeat(np.arange(models), questions * n_noise)
    question = np.tile(np.repeat(np.arange(questions), n_noise), models)
    noise = np.tile(np.array(NOISE_LEVELS), models * questions)
    rows = model.size
    f1 = np.clip(0.55 + skill[model] - difficulty[question] - 0.3 * noise
                 + rng.normal(0.0, 0.2, rows), 0.0, 1.0)
    width = len(str(models - 1))
    return pl.DataFrame({
        "id": pl.Series(np.char.add("q", question.astype(str))),
        "model": pl.Series(np.char.add("model-", np.char.zfill(model.astype(str), width))),
        "run": pl.repeat("run-1", rows, eager=True),
        "noise_level": noise,
        "category": pl.Series(np.char.add("cat-", (question % categories).astype(str))),
        "question_type": pl.Series(np.array(QUESTION_TYPES)[question % len(QUESTION_TYPES)]),
        "task": pl.repeat(None, rows, dtype=pl.String, eager=True),
        "answer_em": (f1 > 0.8).astype(np.int8),
        "answer_f1": f1,
        "citation_precision": np.clip(f1 + rng.normal(0.0, 0.1, rows), 0.0, 1.0),
        "citation_recall": np.clip(f1 + rng.normal(0.0, 0.1, rows), 0.0, 1.0),
        "citation_f1": np.clip(f1 + rng.normal(0.0, 0.05, rows), 0.0, 1.0),
        "abstained": (rng.random(rows) < 0.05).astype(np.int8),
        "faithfulness": np.where(rng.random(rows) < 0.1, np.nan,
                                 np.clip(0.6 + 0.4 * f1, 0.0, 1.0)),
        "latency_ms": rng.gamma(2.0, 400.0, rows),
    }).with_columns(pl.col("faithfulness").fill_nan(None)).cast(METRICS)  # type: ignore[arg-type]


def report_records(rows: int, categories: int, models: int, seed: int = 0) -> list[dict]:
    """Records for `evaluate`: ``rows`` rows over ``models`` models and ``categories``
    categories (each question once per model)."""
    rng = np.random.default_rng(seed)
    questions = rows // models
    records = []
    for m in range(models):
        for q in range(questions):
            answer = f"answer {q}"
            right = rng.random() < 0.4 + 0.1 * m
            records.append({
                "id": f"q{q}", "model": f"model-{m}", "category": f"cat-{q % categories}",
                "question": f"What is thing {q}?", "reference": answer,
                "response": f"{answer} [1]" if right else "something else [2]",
                "contexts": [f"thing {q} is {answer}", "unrelated passage"],
                "citations": [1] if right else [2], "gold_citations": [1],
            })
    return records


def measure(cmd: list[str], log: Path, pythonpath: Path) -> dict[str, Any]:
    """Run ``cmd`` in a child; its wall seconds, peak RSS (GiB) and exit status."""
    result = log.with_suffix(".json")
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    subprocess.run([sys.executable, "-S", "-c", LAUNCHER, str(result), str(log), *cmd],
                   cwd=pythonpath, check=True, env=env)
    measured = json.loads(result.read_text())
    return {"seconds": measured["seconds"], "peak_rss_gib": measured["peak_rss_mib"] / 1024,
            "returncode": measured["returncode"]}


#: The child of a `write_stats` case: prints the table sizes and the pairing as JSON.
STATS_CHILD = """
import json, sys
from pathlib import Path
from pipeline.stats import write_stats
summary = write_stats(Path(sys.argv[1]), resamples=int(sys.argv[2]), seed=0)
print(json.dumps({"intervals": summary.intervals, "comparisons": summary.comparisons,
                  "pairing": getattr(summary, "pairing_reason", "all pairs")}))
"""


def stats_case(name: str, frame: pl.DataFrame, work: Path, resamples: int,
               pythonpath: Path) -> dict[str, Any]:
    out = work / name
    out.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(out / "scores.parquet")
    log = work / f"{name}.log"
    result = measure([sys.executable, "-c", STATS_CHILD, str(out), str(resamples)], log,
                     pythonpath)
    result.update(case=name, rows=frame.height, models=frame["model"].n_unique(),
                  categories=frame["category"].n_unique(), ids=frame["id"].n_unique())
    lines = log.read_text().strip().splitlines()
    if result["returncode"] == 0 and lines:
        result.update(json.loads(lines[-1]))
    else:
        result["error"] = "\n".join(lines[-5:])
    return result


def report_case(work: Path, resamples: int, pythonpath: Path, rows: int, categories: int,
                models: int) -> list[dict[str, Any]]:
    source = work / "report-records.jsonl"
    source.write_text("".join(json.dumps(r) + "\n"
                              for r in report_records(rows, categories, models)),
                      encoding="utf-8")
    out = work / "report-run"
    shutil.rmtree(out, ignore_errors=True)
    results = []
    for step, cmd in (
        ("report: evaluate", ["evaluate", "--input", str(source), "--out", str(out), "--metrics",
                              "answer,citation,abstention", "--resamples", str(resamples),
                              "--no-progress"]),
        ("report: report", ["report", str(out), "--out", str(work / "report.html")]),
    ):
        log = work / f"{step.replace(': ', '-')}.log"
        result = measure([sys.executable, "-m", "pipeline", *cmd], log, pythonpath)
        result.update(case=step, rows=rows, models=models, categories=categories)
        if result["returncode"] not in (0, 1):
            result["error"] = "\n".join(log.read_text().strip().splitlines()[-5:])
        results.append(result)
    html = work / "report.html"
    if html.exists():
        results[-1]["html_mib"] = html.stat().st_size / 2**20
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="models,categories,report")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--models", type=int, default=MODELS_CASE[0],
                        help="models of the models case")
    parser.add_argument("--categories", type=int, default=CATEGORIES_CASE[2],
                        help="categories of the categories case (2 questions each)")
    parser.add_argument("--pythonpath", type=Path, default=ROOT,
                        help="the checkout the children import pipeline from")
    parser.add_argument("--json", type=Path, help="write the results here")
    args = parser.parse_args(argv)
    cases = args.cases.split(",")
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-stats-"))
    work.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    if "models" in cases:
        _, questions, categories = MODELS_CASE
        frame = scores_frame(args.models, questions, categories)
        results.append(stats_case("models", frame, work, args.resamples, args.pythonpath))
    if "categories" in cases:
        models, _, _ = CATEGORIES_CASE
        frame = scores_frame(models, 2 * args.categories, args.categories, seed=1)
        results.append(stats_case("categories", frame, work, args.resamples, args.pythonpath))
    if "report" in cases:
        rows, categories, models = REPORT_CASE
        results += report_case(work, args.resamples, args.pythonpath, rows, categories, models)
    print(f"{'case':<18}{'rows':>10}{'models':>8}{'categories':>12}{'seconds':>10}"
          f"{'peak RSS GiB':>14}  tables")
    for r in results:
        tables = (f"{r.get('intervals', '')} intervals, {r.get('comparisons', '')} comparisons"
                  if "intervals" in r else r.get("error", ""))
        print(f"{r['case']:<18}{r['rows']:>10,}{r['models']:>8,}{r['categories']:>12,}"
              f"{r['seconds']:>10.1f}{r['peak_rss_gib']:>14.2f}  {tables}")
        if "pairing" in r:
            print(f"{'':<18}{r['pairing']}")
    over = [r["case"] for r in results if r["peak_rss_gib"] >= RSS_LIMIT_GIB]
    print(f"target: peak RSS under {RSS_LIMIT_GIB} GiB: "
          + ("met" if not over else f"missed by {', '.join(over)}"))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
