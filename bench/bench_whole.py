"""Whole-run benchmark: `rag-eval evaluate` against per-row reference programs, as users run them.

For each work item and data shape, two child processes read the same records Parquet file and
write Parquet: ``python -m pipeline --log-format json evaluate`` (statistics on, as by default)
and a per-row reference program (``bench/reference_programs.py``: the official SQuAD v2
functions with set-based citation P/R/F1, ``rouge-score``, ``sacrebleu``). Their scores are joined
on ``row_number`` and must agree (integers exactly, floats within 1e-9); any disagreement makes
the exit status 1, since a fast wrong answer is worthless.

Wall time and peak RSS of each child come from ``os.wait4``, called by a small launcher process
(``ru_maxrss`` of a child includes the peak of the process it was exec'ed from, so measuring
from this process would count its own data generation). The pipeline's phase lines
(``{"phase": ..., "seconds": ...}`` on stderr) are printed beside the totals when present.

Each rag-eval run is timed twice: first *cold*, with an empty numba cache (``NUMBA_CACHE_DIR``
of its own, so the compiled text kernels are compiled in that run, as on a fresh install), then
*warm* (the kernels loaded from that cache, as on every later run), three times by default
(``--repeats``): the ratio is that of the median warm run, the table lists the fastest and
slowest beside it, and the peak RSS is the highest of the three. On the 2-core machine the
benchmark runs on, one run of a few seconds moved by up to a third from one minute to the next
(docs/benchmarks.md), while the reference programs' minute-long runs average over such swings.
Python writes the package's bytecode as it imports it, as an installed copy has it (pip compiles
it at install): where ``PYTHONDONTWRITEBYTECODE`` is set (some environments set it), each run
would compile the package's modules from source again, 0.22 s a process no user pays.

Data (deterministic, generated with numpy/pyarrow and not timed): 1M *short* rows (references
of 1–5 words), 1M *medium* rows (~30-word responses, references of 2–10 words) and 200k *long*
rows (references and responses of 40–120 words).
Targets, reported and not asserted: reference time / rag-eval time of at least 15× for EM/F1 +
citations (short; issue 13) and 10× (medium; issue 36), ROUGE 10× (short, medium) and 20×
(long), BLEU 15× (short, medium; issue 36) and 5× (long); peak RSS ≤ 1.5 GiB at 1M rows;
statistics ≤ 15 % of the wall time; with ``--families``, every metric family at ≥ 50k rows/s
on the short rows. With ``--baseline COMMIT`` the medium rows are also scored by a git worktree
of that commit (warm, the same metrics) and both scoring phases are printed.

    python bench/bench_whole.py [--short-rows 1000000] [--medium-rows 1000000]
        [--long-rows 200000] [--only em,rouge,bleu] [--baseline 7067551] [--families]
        [--repeats 3]
        [--workdir DIR] [--keep] [--json PATH] [--markdown PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "bench") not in sys.path:
    sys.path.insert(0, str(ROOT / "bench"))

from bench_scale import (  # noqa: E402
    ABSTENTIONS,
    ARROW_SCHEMA,
    CATEGORIES,
    GROUP,
    MODELS,
    NOISE_LEVELS,
    RUN,
    UNANSWERABLE_REFERENCE,
    _concat,
    _join,
    _list,
    _numbered,
    _words,
    vocabulary,
)
from common import LAUNCHER  # noqa: E402  (a sibling script, not a package)

DEFAULT_SHORT_ROWS = 1_000_000
DEFAULT_MEDIUM_ROWS = 1_000_000
DEFAULT_LONG_ROWS = 200_000
FLOAT_TOLERANCE = 1e-9
RSS_LIMIT_MIB = 1.5 * 1024
RSS_TARGET_ROWS = 1_000_000
STATS_SHARE_TARGET = 0.15
FAMILY_RATE_TARGET = 50_000
EXAMPLES = 5
PHASES = ("engine", "read+validate", "corpus", "scoring", "writing", "statistics", "views",
          "report")
#: Phases that run inside ``engine`` (they overlap on threads: busy seconds, not wall).
ENGINE_PARTS = ("read+validate", "corpus", "scoring", "writing")


# --- work items ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Work:
    """One comparison: the metrics `evaluate` scores and the reference program that redoes them."""

    key: str
    label: str
    metrics: tuple[str, ...]
    #: Columns compared: those of the reference program's output (pipeline names).
    exact: tuple[str, ...]
    floats: tuple[str, ...]
    #: Target ratio (reference seconds / rag-eval seconds) per data shape.
    targets: dict[str, float]


WORKS: dict[str, Work] = {
    "em": Work(
        "em", "EM/F1 + citation P/R/F1",
        ("answer_em", "answer_f1", "citation_precision", "citation_recall", "citation_f1"),
        exact=("answer_em", "citation_n_pred", "citation_n_gold", "citation_n_correct"),
        floats=("answer_f1", "citation_precision", "citation_recall", "citation_f1"),
        targets={"short": 15.0, "medium": 10.0},
    ),
    "rouge": Work("rouge", "ROUGE-1/2/L", ("rouge_1", "rouge_2", "rouge_l"), exact=(),
                  floats=("rouge_1", "rouge_2", "rouge_l"),
                  targets={"short": 10.0, "medium": 10.0, "long": 20.0}),
    "bleu": Work("bleu", "BLEU (sacreBLEU sentence)", ("bleu",), exact=(), floats=("bleu",),
                 targets={"short": 15.0, "medium": 15.0, "long": 5.0}),
}


# --- data ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Shape:
    """Word counts of the generated references and responses (inclusive ranges)."""

    name: str
    reference_words: tuple[int, int]
    response_words: tuple[int, int]
    chunk_rows: int


SHORT = Shape("short", (1, 5), (1, 8), 250_000)
MEDIUM = Shape("medium", (2, 10), (20, 40), 100_000)
LONG = Shape("long", (40, 120), (40, 120), 50_000)


def generate_chunk(vocab: pa.Array, first_question: int, n_rows: int, seed: int, shape: Shape
                   ) -> pa.Table:
    """``n_rows`` records from question ``first_question`` on (``GROUP`` rows a question).

    A response keeps the reference's word at each position with probability 0.85 - 0.7 * noise
    (another word otherwise) and has its own length; 15-35 % are exact copies, a few abstain,
    half of those that cite carry ``[n]`` / ``[n, m]`` markers. Long texts end in a full stop.
    """
    rng = np.random.default_rng([seed, 2, first_question])
    nv = len(vocab)
    nq = -(-n_rows // GROUP)
    qid = first_question + np.arange(nq)
    (r_lo, r_hi), (p_lo, p_hi) = shape.reference_words, shape.response_words
    sentence = r_hi > 8
    # Question level.
    unanswerable = rng.random(nq) < 0.05
    q_words, q_len = _words(rng, nv, nq, 4, 10)
    question = _concat("What is the ", _join(vocab, q_words, q_len), "?")
    r_words, r_len = _words(rng, nv, nq, r_lo, r_hi)
    answer = _join(vocab, r_words, r_len)
    if sentence:
        answer = _concat(answer, ".")
    reference = pc.if_else(pa.array(unanswerable), UNANSWERABLE_REFERENCE, answer)
    with_refs = (rng.random(nq) < 0.25) & ~unanswerable
    alias = _concat("the ", pc.utf8_lower(answer))
    pairs = np.stack([np.arange(nq), nq + np.arange(nq)], axis=1).ravel()  # answer, alias
    references = _list(pa.concat_arrays([answer, alias]).take(pa.array(pairs)), np.full(nq, 2),
                       null=~with_refs)
    n_ctx = rng.integers(2, 4, size=nq)
    gold = rng.integers(1, n_ctx + 1)  # 1-based
    ctx_q = np.repeat(np.arange(nq), n_ctx)
    position = np.arange(len(ctx_q)) - np.repeat(np.cumsum(n_ctx) - n_ctx, n_ctx) + 1
    c_words, c_len = _words(rng, nv, len(ctx_q), 24, 36)
    passages = _join(vocab, c_words, c_len)
    with_answer = pc.binary_join_element_wise(passages, answer.take(pa.array(ctx_q)), " ")
    is_gold = (position == gold[ctx_q]) & ~unanswerable[ctx_q]
    contexts = _list(pc.if_else(pa.array(is_gold), with_answer, passages), n_ctx)
    gold_citations = _list(pa.array(gold[~unanswerable], pa.int64()), (~unanswerable).astype(int))
    category = rng.integers(0, len(CATEGORIES), size=nq)
    # Row level: q is the question of each row; model and noise level cycle within it.
    row = np.arange(n_rows)
    q = row // GROUP
    take_q = pa.array(q)
    model = row % len(MODELS)
    noise = np.asarray(NOISE_LEVELS)[(row // len(MODELS)) % len(NOISE_LEVELS)]
    width = max(r_hi, p_hi)
    resp_len = rng.integers(p_lo, p_hi + 1, size=n_rows)
    other = (nv * rng.random((n_rows, width)) ** 2.5).astype(np.int64)
    aligned = np.zeros((n_rows, width), dtype=np.int64)
    aligned[:, :r_hi] = r_words[q]
    keep = ((np.arange(width)[None, :] < r_len[q][:, None])
            & (rng.random((n_rows, width)) >= 0.15 + 0.7 * noise[:, None]))
    response = _join(vocab, np.where(keep, aligned, other), resp_len)
    del other, aligned, keep
    if sentence:
        response = _concat(response, ".")
    roll = rng.random(n_rows)
    exact = roll < 0.15 + 0.2 * (1 - noise)
    abstain = (roll > 0.97 - 0.05 * noise) | (unanswerable[q] & (roll > 0.5))
    response = pc.if_else(pa.array(exact), answer.take(take_q), response)
    idk = pa.array(ABSTENTIONS).take(pa.array(rng.integers(0, len(ABSTENTIONS), size=n_rows)))
    response = pc.if_else(pa.array(abstain), idk, response)
    # Citations: null on 30 % of rows (then parsed from markers); else gold, another, or none.
    kind = rng.integers(0, 5, size=n_rows)  # 0-2 gold, 3 other, 4 none
    cited = np.where(kind == 3, gold[q] % n_ctx[q] + 1, gold[q])
    citations = _list(pa.array(cited[kind != 4], pa.int64()), (kind != 4).astype(np.int64),
                      null=rng.random(n_rows) < 0.3)
    cited_text = pc.cast(pa.array(cited), pa.string())
    pair = _concat(pc.cast(pa.array(gold[q]), pa.string()), ", ", cited_text)
    marker_body = pc.if_else(pa.array((kind == 3) & (rng.random(n_rows) < 0.5)), pair, cited_text)
    marker = (kind != 4) & ~abstain & (rng.random(n_rows) < 0.5)
    response = pc.if_else(pa.array(marker), _concat(response, " [", marker_body, "]"), response)
    prompt = (60 + 1.3 * (q_len[q] + np.bincount(ctx_q, c_len, minlength=nq)[q] + 8 * n_ctx[q])
              ).astype(np.int64)
    completion = (1.3 * resp_len + 1).astype(np.int64)
    latency = (200 + 0.4 * prompt + 15 * completion) * np.exp(rng.normal(0, 0.15, n_rows))
    columns = {
        "id": _numbered("q", qid, 8).take(take_q),
        "question": question.take(take_q),
        "reference": reference.take(take_q),
        "response": response,
        "references": references.take(take_q),
        "citations": citations,
        "gold_citations": gold_citations.take(take_q),
        "contexts": contexts.take(take_q),
        "category": pa.array(CATEGORIES).take(pa.array(category[q])),
        "model": pa.array(MODELS).take(pa.array(model)),
        "run": pa.array([RUN] * n_rows),
        "noise_level": pa.array(noise, pa.float64()),
        "question_type": pc.if_else(pa.array(unanswerable[q]), "impossible", "fact"),
        "doc_id": _numbered("doc-", qid // 4, 7).take(take_q),
        "prompt_tokens": pa.array(prompt, pa.int64()),
        "completion_tokens": pa.array(completion, pa.int64()),
        "total_tokens": pa.array(prompt + completion, pa.int64()),
        "latency_ms": pa.array(np.round(latency, 1), pa.float64()),
    }
    return pa.Table.from_pydict(columns, schema=ARROW_SCHEMA)


def generate(path: Path, n_rows: int, shape: Shape, seed: int = 0) -> Path:
    """Write ``n_rows`` deterministic records of ``shape`` to ``path``, chunk by chunk."""
    vocab = vocabulary(np.random.default_rng([seed, 0]))
    per_chunk = max(1, shape.chunk_rows // GROUP)  # whole questions per chunk
    with pq.ParquetWriter(path, ARROW_SCHEMA) as writer:
        for first in range(0, -(-n_rows // GROUP), per_chunk):
            rows = min(per_chunk * GROUP, n_rows - first * GROUP)
            writer.write_table(generate_chunk(vocab, first, rows, seed, shape),
                               row_group_size=rows)
    return path


# --- measurement ---------------------------------------------------------------------------------

def run_measured(cmd: Sequence[str], log: Path, *, cwd: Path = ROOT,
                 env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``cmd`` (output to ``log``); wall seconds, peak RSS MiB, exit status, phase seconds."""
    result = log.with_suffix(".measure.json")
    subprocess.run([sys.executable, "-S", "-c", LAUNCHER, str(result), str(log), *cmd],
                   cwd=cwd, check=True, env={**os.environ, **(env or {})})
    measured: dict[str, Any] = json.loads(result.read_text())
    measured["phases"] = phases(log)
    return measured


def phases(log: Path) -> dict[str, float]:
    """Seconds per phase from the JSON log lines that carry ``phase`` and ``seconds``."""
    found: dict[str, float] = {}
    for line in log.read_text(errors="replace").splitlines():
        if not line.startswith("{"):
            continue
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict) and "phase" in entry and "seconds" in entry:
            name = str(entry["phase"])
            found[name] = found.get(name, 0.0) + float(entry["seconds"])
    return found


def evaluate_command(data: Path, out: Path, metrics: Sequence[str], *,
                     extra: Sequence[str] = ()) -> list[str]:
    """`rag-eval --log-format json evaluate` of one run; statistics on, as by default."""
    return [sys.executable, "-m", "pipeline", "--log-format", "json", "evaluate",
            "--input", str(data), "--out", str(out), "--metrics", ",".join(metrics),
            "--no-progress", *extra]


def reference_command(program: str, data: Path, out: Path) -> list[str]:
    return [sys.executable, str(ROOT / "bench" / "reference_programs.py"), program,
            "--input", str(data), "--out", str(out)]


def failed(label: str, measured: dict[str, Any], log: Path) -> str | None:
    """None when the child succeeded, else a one-line error (its log's tail goes to stderr)."""
    if measured["returncode"] == 0:
        return None
    tail = log.read_text(errors="replace")[-3000:]
    print(f"{tail}\n{label}: exit status {measured['returncode']}", file=sys.stderr)
    last = tail.strip().splitlines()[-1:] or [""]
    return f"{label} exited with status {measured['returncode']}: {last[0][:300]}"


# --- agreement -----------------------------------------------------------------------------------

def compare(work: Work, data: Path, out: Path, reference: Path, n_rows: int) -> dict[str, Any]:
    """Per compared column: rows that disagree, with a few examples (texts included)."""
    problems: list[str] = []
    scores = out / "scores.parquet"
    rejected = out / "rejected.parquet"
    n_rejected = pq.ParquetFile(rejected).metadata.num_rows if rejected.exists() else 0
    if n_rejected:
        problems.append(f"rag-eval rejected {n_rejected} rows")
    columns = [*work.exact, *work.floats]
    ours = pl.read_parquet(scores, columns=["row_number", *columns])
    theirs = pl.read_parquet(reference)
    for name, frame in (("rag-eval", ours), ("reference", theirs)):
        if frame.height != n_rows or frame["row_number"].n_unique() != n_rows:
            problems.append(f"{name} wrote {frame.height} rows "
                            f"({frame['row_number'].n_unique()} distinct) for {n_rows}")
    joined = ours.join(theirs, on="row_number", how="full", suffix="_ref", coalesce=True)
    disagreements: dict[str, int] = {}
    examples: dict[str, list[dict[str, Any]]] = {}
    for column in columns:
        a, b = pl.col(column), pl.col(f"{column}_ref")
        if column in work.exact:
            same = a.eq_missing(b)
        else:
            close = (a - b).abs() <= FLOAT_TOLERANCE
            same = pl.when(a.is_null() | b.is_null()).then(a.is_null() & b.is_null()) \
                .otherwise(close)  # NaN compares unequal: a NaN score is never agreement
        bad = joined.filter(~same).select("row_number", column, f"{column}_ref")
        disagreements[column] = bad.height
        if bad.height:
            rows = bad.head(EXAMPLES)
            texts = (pl.scan_parquet(data).with_row_index("row_number")
                     .with_columns(pl.col("row_number").cast(pl.Int64))
                     .join(rows.lazy(), on="row_number")
                     .select("row_number", "response", "reference", "references", "citations",
                             "gold_citations")
                     .collect())
            examples[column] = rows.join(texts, on="row_number").to_dicts()
    agree = not problems and not any(disagreements.values())
    return {"agree": agree, "problems": problems, "disagreements": disagreements,
            "examples": examples}


def report_disagreement(label: str, check: dict[str, Any]) -> None:
    for problem in check["problems"]:
        print(f"  {label}: {problem}", file=sys.stderr)
    for column, count in check["disagreements"].items():
        if count:
            print(f"  {label}: {column}: {count:,} rows disagree; first ones:", file=sys.stderr)
            for example in check["examples"].get(column, []):
                print(f"    {example}", file=sys.stderr)


# --- the benchmark -------------------------------------------------------------------------------

def median_run(runs: Sequence[tuple[dict[str, Any], Path]]) -> tuple[dict[str, Any], Path]:
    """The run of median wall time among ``runs`` (measure, log), with every run's seconds
    (``runs_seconds``) and the highest peak RSS of them all (``peak_rss_mib``); a failed run,
    if any, instead of the median (its failure is the result)."""
    failures = [run for run in runs if run[0]["returncode"] != 0]
    ordered = sorted(runs, key=lambda run: run[0]["seconds"])
    chosen, log = failures[0] if failures else ordered[(len(ordered) - 1) // 2]
    return {**chosen, "runs_seconds": [run[0]["seconds"] for run in runs],
            "peak_rss_mib": max(run[0]["peak_rss_mib"] for run in runs)}, log


def bench_work(work: Work, shape: Shape, data: Path, n_rows: int, workdir: Path,
               keep: bool, baseline: Path | None = None, repeats: int = 3) -> dict[str, Any]:
    """One work item on one data file: rag-eval cold, then warm ``repeats`` times (the median
    run is the figure), the reference program, the agreement check (of the last warm run's
    output); with ``baseline`` (a worktree), its run too."""
    tag = f"{work.key}-{shape.name}"
    out = workdir / f"out-{tag}"
    numba_cache = workdir / f"numba-cache-{tag}"
    shutil.rmtree(numba_cache, ignore_errors=True)
    # The cold run starts without compiled kernels and without view templates (kept under
    # $XDG_CACHE_HOME/rag-eval/views); the warm runs find both, as a user's second run does.
    user_cache = workdir / f"cache-{tag}"
    shutil.rmtree(user_cache, ignore_errors=True)
    kernels = {"NUMBA_CACHE_DIR": str(numba_cache), "XDG_CACHE_HOME": str(user_cache)}
    shutil.rmtree(out, ignore_errors=True)
    cold = run_measured(evaluate_command(data, out, work.metrics),
                        workdir / f"rag-eval-{tag}-cold.log", env=kernels)
    print(f"  rag-eval  {tag} (cold): {cold['seconds']:.1f} s, {cold['peak_rss_mib']:.0f} MiB",
          flush=True)
    warm_runs = []
    for k in range(repeats):
        shutil.rmtree(out, ignore_errors=True)
        log = workdir / f"rag-eval-{tag}-warm{k + 1}.log"
        warm_runs.append((run_measured(evaluate_command(data, out, work.metrics), log,
                                       env=kernels), log))
        print(f"  rag-eval  {tag} (warm {k + 1}/{repeats}): {warm_runs[-1][0]['seconds']:.1f} s, "
              f"{warm_runs[-1][0]['peak_rss_mib']:.0f} MiB", flush=True)
    ours, ours_log = median_run(warm_runs)
    then = None
    if baseline is not None:
        then_out = workdir / f"out-{tag}-baseline"
        shutil.rmtree(then_out, ignore_errors=True)
        then = run_measured(evaluate_command(data, then_out, work.metrics),
                            workdir / f"rag-eval-{tag}-baseline.log", cwd=baseline,
                            env={"PYTHONPATH": str(baseline)})
        shutil.rmtree(then_out, ignore_errors=True)
        print(f"  baseline  {tag}: {then['seconds']:.1f} s, scoring "
              f"{then['phases'].get('scoring', float('nan')):.2f} s against "
              f"{ours['phases'].get('scoring', float('nan')):.2f} s", flush=True)
    ref_out = workdir / f"reference-{tag}.parquet"
    ref_log = workdir / f"reference-{tag}.log"
    ref = run_measured(reference_command(work.key, data, ref_out), ref_log)
    print(f"  reference {tag}: {ref['seconds']:.1f} s, {ref['peak_rss_mib']:.0f} MiB",
          flush=True)
    errors = [e for e in (failed(f"rag-eval {tag}", ours, ours_log),
                          failed(f"reference {tag}", ref, ref_log)) if e]
    if errors:
        check = {"agree": False, "problems": errors, "disagreements": {}, "examples": {}}
    else:
        check = compare(work, data, out, ref_out, n_rows)
    if not check["agree"]:
        report_disagreement(tag, check)
    if not keep:
        shutil.rmtree(out, ignore_errors=True)
        ref_out.unlink(missing_ok=True)
    target = work.targets.get(shape.name)
    ratio = ref["seconds"] / ours["seconds"]  # of failed runs too; `agree` says FAILED
    statistics = ours["phases"].get("statistics")
    return {
        "work": work.key, "label": work.label, "shape": shape.name, "rows": n_rows,
        "metrics": list(work.metrics),
        "rag_eval": {**ours, "rows_per_s": n_rows / ours["seconds"]},
        "rag_eval_cold": {**cold, "rows_per_s": n_rows / cold["seconds"]},
        "cold_ratio": ref["seconds"] / cold["seconds"], "baseline": then,
        "reference": {**ref, "rows_per_s": n_rows / ref["seconds"]},
        "ratio": ratio, "target_ratio": target,
        "ratio_ok": None if target is None else ratio >= target,
        "rss_ok": ours["peak_rss_mib"] <= RSS_LIMIT_MIB,
        "statistics_share": None if statistics is None else statistics / ours["seconds"],
        "agree": check["agree"], "check": {k: v for k, v in check.items() if k != "examples"},
        "examples": check["examples"],
    }


def families() -> dict[str, tuple[str, ...]]:
    """Metric families of the registry (imported here only: the CLI lists the same)."""
    sys.path.insert(0, str(ROOT))
    from pipeline.metrics.registry import FAMILIES

    return dict(FAMILIES)


def bench_families(data: Path, n_rows: int, workdir: Path) -> list[dict[str, Any]]:
    """One `evaluate` per metric family on ``data`` (hashed embeddings, a cache of its own)."""
    results = []
    extra = ["--embedding-backend", "hashed", "--cache-dir", str(workdir / "embedding-cache")]
    for family, names in families().items():
        out = workdir / f"out-family-{family}"
        shutil.rmtree(out, ignore_errors=True)
        log = workdir / f"rag-eval-family-{family}.log"
        measured = run_measured(evaluate_command(data, out, [family], extra=extra), log)
        error = failed(f"family {family}", measured, log)
        shutil.rmtree(out, ignore_errors=True)
        rate = n_rows / measured["seconds"]
        statistics = measured["phases"].get("statistics")
        results.append({
            "family": family, "metrics": len(names), "rows": n_rows, **measured,
            "rows_per_s": rate, "rate_ok": error is None and rate >= FAMILY_RATE_TARGET,
            "rss_ok": measured["peak_rss_mib"] <= RSS_LIMIT_MIB,
            "statistics_share": None if statistics is None else statistics / measured["seconds"],
            "error": error,
        })
        print(f"  family {family}: {measured['seconds']:.1f} s, {rate:,.0f} rows/s, "
              f"{measured['peak_rss_mib']:.0f} MiB", flush=True)
    return results


# --- output --------------------------------------------------------------------------------------

def _yes(flag: bool | None) -> str:
    return "-" if flag is None else ("yes" if flag else "NO")


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{share:.1%}"


WORK_HEADER = ("work", "data", "rows", "rag-eval s", "warm runs s", "cold s", "rows/s", "RSS MiB",
               "ref s",
               "ref rows/s", "ref RSS MiB", "ratio", "cold ratio", "target", "met", "stats %",
               "agree")


def work_cells(r: dict[str, Any]) -> list[str]:
    ours, ref = r["rag_eval"], r["reference"]
    target = "-" if r["target_ratio"] is None else f"≥{r['target_ratio']:g}×"
    ran = ours["returncode"] == 0 and ref["returncode"] == 0
    agree = "yes" if r["agree"] else ("NO" if ran else "FAILED")
    cold = r["rag_eval_cold"]
    runs = ours.get("runs_seconds", [ours["seconds"]])
    return [r["label"], r["shape"], f"{r['rows']:,}", f"{ours['seconds']:.1f}",
            f"{min(runs):.1f}–{max(runs):.1f}", f"{cold['seconds']:.1f}",
            f"{ours['rows_per_s']:,.0f}", f"{ours['peak_rss_mib']:.0f}",
            f"{ref['seconds']:.1f}", f"{ref['rows_per_s']:,.0f}", f"{ref['peak_rss_mib']:.0f}",
            f"{r['ratio']:.1f}×", f"{r['cold_ratio']:.1f}×", target, _yes(r["ratio_ok"]),
            _pct(r["statistics_share"]), agree]


FAMILY_HEADER = ("family", "metrics", "rows", "wall s", "rows/s", "RSS MiB", "stats %",
                 "≥50k rows/s")


def family_cells(r: dict[str, Any]) -> list[str]:
    return [r["family"], str(r["metrics"]), f"{r['rows']:,}", f"{r['seconds']:.1f}",
            f"{r['rows_per_s']:,.0f}", f"{r['peak_rss_mib']:.0f}", _pct(r["statistics_share"]),
            "FAILED" if r["error"] else _yes(r["rate_ok"])]


def text_table(header: Sequence[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(row[k]) for row in rows)) for k, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) if k == 0 else h.rjust(w)
                       for k, (h, w) in enumerate(zip(header, widths, strict=True)))]
    for row in rows:
        lines.append("  ".join(c.ljust(w) if k == 0 else c.rjust(w)
                               for k, (c, w) in enumerate(zip(row, widths, strict=True))))
    return "\n".join(lines)


def markdown_table(header: Sequence[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def phase_line(r: dict[str, Any]) -> str:
    found = r["rag_eval"]["phases"]
    if not found:
        return f"  {r['work']}-{r['shape']}: no phase lines in the log"
    order = [p for p in PHASES if p in found] + sorted(set(found) - set(PHASES))
    # The engine's parts overlap on its threads; the statistics run beside the views (inside
    # the views phase): both are busy seconds, not added to the wall time.
    inside = {p for p in ENGINE_PARTS if "engine" in found}
    inside |= {"statistics"} if "views" in found else set()
    parts = ", ".join(
        f"{p} {found[p]:.2f}" + (" busy" if p in inside else "") for p in order
    )
    total = sum(v for p, v in found.items() if p not in inside)
    wall = r["rag_eval"]["seconds"]
    share = r["statistics_share"]
    verdict = "" if share is None else (
        f"; statistics {share:.1%} of wall (target ≤{STATS_SHARE_TARGET:.0%}: "
        f"{'yes' if share <= STATS_SHARE_TARGET else 'NO'})")
    return (f"  {r['work']}-{r['shape']}: {parts}, outside phases (start-up, imports) "
            f"{wall - total:.2f} s of {wall:.2f} s wall{verdict}")


def baseline_lines(works: list[dict[str, Any]], commit: str | None) -> list[str]:
    """One line per run that has a baseline run: both scoring phases and wall times."""
    lines = []
    for r in works:
        then = r.get("baseline")
        if not then:
            continue
        now_s = r["rag_eval"]["phases"].get("scoring", float("nan"))
        then_s = then["phases"].get("scoring", float("nan"))
        verdict = "faster" if now_s < then_s else "NOT faster"
        lines.append(f"* {r['label']} ({r['shape']}): scoring {now_s:.2f} s against "
                     f"{then_s:.2f} s at {commit} ({verdict}); whole process "
                     f"{r['rag_eval']['seconds']:.1f} s against {then['seconds']:.1f} s")
    return lines


def summary_lines(works: list[dict[str, Any]], fams: list[dict[str, Any]]) -> list[str]:
    lines = []
    big = [r for r in works if r["rows"] >= RSS_TARGET_ROWS]
    if big:
        worst = max(r["rag_eval"]["peak_rss_mib"] for r in big)
        lines.append(f"peak RSS ≤ 1.5 GiB at ≥{RSS_TARGET_ROWS:,} rows: "
                     f"{'yes' if worst <= RSS_LIMIT_MIB else 'NO'} (max {worst:.0f} MiB)")
    else:
        lines.append(f"peak RSS target (≤ 1.5 GiB) applies at {RSS_TARGET_ROWS:,} rows: "
                     "not measured at this size")
    targets = [r for r in works if r["ratio_ok"] is not None]
    if targets:
        lines.append(f"ratio targets met: {sum(r['ratio_ok'] for r in targets)}/{len(targets)}")
    if fams:
        slow = [r["family"] for r in fams if not r["rate_ok"]]
        lines.append(f"families below {FAMILY_RATE_TARGET:,} rows/s or failed: "
                     f"{', '.join(slow) if slow else 'none'}")
    lines.append("scores agree: " + ("yes" if all(r["agree"] for r in works) else "NO"))
    return lines


#: Bytes the fresh-memory probe allocates and touches once.
PROBE_BYTES = 2**30
PROBE = (
    "import time, numpy as np\n"
    "start = time.perf_counter()\n"
    f"np.ones({PROBE_BYTES // 8})\n"
    "print(time.perf_counter() - start)\n"
)


def fresh_memory_rate() -> float:
    """GB/s at which a new process gets fresh memory (1 GiB allocated and written once).

    Most of it is the kernel's page faults. On the development machine (a virtual machine)
    this rate moved between 0.6 and 3.9 GB/s within minutes, and a whole run touches 1.5-2 GB
    of fresh pages where the per-row programs touch a third of that: the ratios move with it
    (docs/benchmarks.md, tenth session). Printed before and after the runs, to read them by."""
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         check=True)
    return PROBE_BYTES / float(out.stdout) / 1e9


def environment() -> dict[str, Any]:
    versions: dict[str, str | None] = {}
    for package in ("polars", "pyarrow", "duckdb", "rouge-score", "sacrebleu", "numpy"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {"python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "versions": versions}


# --- driver --------------------------------------------------------------------------------------

def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short-rows", type=int, default=DEFAULT_SHORT_ROWS,
                        help="rows of short records (references of 1-5 words); 0 skips them")
    parser.add_argument("--medium-rows", type=int, default=DEFAULT_MEDIUM_ROWS,
                        help="rows of ~30-word responses (references of 2-10 words); 0 skips them")
    parser.add_argument("--baseline", metavar="COMMIT",
                        help="also score the medium rows with a git worktree of COMMIT "
                             "(e.g. 7067551) and print both scoring phases")
    parser.add_argument("--long-rows", type=int, default=DEFAULT_LONG_ROWS,
                        help="rows of long records (40-120 words); 0 skips them")
    parser.add_argument("--only", default=",".join(WORKS),
                        type=lambda s: [x.strip() for x in s.split(",") if x.strip()],
                        help=f"comma-separated work items of {', '.join(WORKS)}")
    parser.add_argument("--families", action="store_true",
                        help="also time `evaluate` per metric family on the short rows (long)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="warm rag-eval runs per work item; the median is the figure "
                             "(default 3: a single run of a few seconds moves by up to a third "
                             "on a shared machine, docs/benchmarks.md)")
    parser.add_argument("--workdir", type=Path, help="data and outputs (default: a temp dir)")
    parser.add_argument("--keep", action="store_true",
                        help="keep data and outputs (kept data is reused with the same --workdir)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated data")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write results as JSON")
    parser.add_argument("--markdown", type=Path, metavar="PATH",
                        help="also write the tables as Markdown (for the README)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.only) - set(WORKS))
    if unknown:
        parser.error(f"--only: unknown work items {', '.join(unknown)} (of {', '.join(WORKS)})")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    if args.families and args.short_rows <= 0:
        parser.error("--families needs short rows")
    return args


def data_file(workdir: Path, shape: Shape, n_rows: int, seed: int) -> Path:
    path = workdir / f"records-{shape.name}-{n_rows}-seed{seed}.parquet"
    if not path.exists():
        start = time.perf_counter()
        partial = path.with_suffix(".partial")
        generate(partial, n_rows, shape, seed=seed)
        partial.rename(path)
        print(f"generated {n_rows:,} {shape.name} rows in {time.perf_counter() - start:.1f} s: "
              f"{path}", flush=True)
    return path


def run(args: argparse.Namespace, workdir: Path) -> tuple[list[dict[str, Any]],
                                                          list[dict[str, Any]]]:
    works: list[dict[str, Any]] = []
    fams: list[dict[str, Any]] = []
    tree = None
    if args.baseline and args.medium_rows > 0:
        tree = workdir / "baseline-tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree),
                        args.baseline], check=True, capture_output=True)
    try:
        for shape, n_rows in ((SHORT, args.short_rows), (MEDIUM, args.medium_rows),
                              (LONG, args.long_rows)):
            if n_rows <= 0:
                continue
            data = data_file(workdir, shape, n_rows, args.seed)
            for key in args.only:
                works.append(bench_work(WORKS[key], shape, data, n_rows, workdir, args.keep,
                                        baseline=tree if shape is MEDIUM else None,
                                        repeats=args.repeats))
            if shape is SHORT and args.families:
                fams = bench_families(data, n_rows, workdir)
            if not args.keep:
                data.unlink(missing_ok=True)
    finally:
        if tree is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                           check=False, capture_output=True)
    return works, fams



def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached, as installed (above)
    created = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="bench-whole-")) if created else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    memory = [fresh_memory_rate()]
    try:
        works, fams = run(args, workdir)
    finally:
        if created and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    memory.append(fresh_memory_rate())
    memory_line = ("fresh memory of a new process (1 GiB written once), before and after the "
                   f"runs: {memory[0]:.2f} and {memory[1]:.2f} GB/s")
    work_rows = [work_cells(r) for r in works]
    family_rows = [family_cells(r) for r in fams]
    print("\nrag-eval evaluate vs per-row reference programs (statistics on; ratio = reference "
          "s / rag-eval s)")
    if work_rows:
        print(text_table(WORK_HEADER, work_rows))
        print("phases of the rag-eval runs (s):")
        for r in works:
            print(phase_line(r))
        lines = baseline_lines(works, args.baseline)
        if lines:
            print(f"scoring phase against {args.baseline} (same machine, same run):")
            print("\n".join(lines))
    if family_rows:
        print(f"\nrag-eval evaluate per metric family ({fams[0]['rows']:,} short rows, "
              "hashed embeddings, statistics on)")
        print(text_table(FAMILY_HEADER, family_rows))
    summary = [*summary_lines(works, fams), memory_line]
    print()
    print("\n".join(summary))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {"short_rows": args.short_rows, "medium_rows": args.medium_rows,
                   "long_rows": args.long_rows, "seed": args.seed, "baseline": args.baseline,
                   "environment": environment(), "works": works, "families": fams,
                   "summary": summary}
        args.json.write_text(json.dumps(payload, indent=2, default=str) + "\n",
                             encoding="utf-8")
    if args.markdown is not None:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        parts = [markdown_table(WORK_HEADER, work_rows)] if work_rows else []
        lines = baseline_lines(works, args.baseline)
        if lines:
            parts.append(f"Scoring phase against `{args.baseline}`:\n\n" + "\n".join(lines))
        if family_rows:
            parts.append(markdown_table(FAMILY_HEADER, family_rows))
        parts.append(memory_line[0].upper() + memory_line[1:] + ".")
        args.markdown.write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    ok = all(r["agree"] for r in works) and not any(r["error"] for r in fams)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
