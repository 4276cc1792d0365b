"""Scale benchmark: `evaluate` throughput and peak memory at 1M, 5M and 10M rows.

Each size gets a synthetic, deterministic RAG record set written to Parquet chunk by chunk
(generation is not measured), then one `python -m pipeline evaluate` in a fresh child process;
the parent reads that child's wall time and peak RSS from ``os.wait4``. By default only the
metrics that need no embedding model are scored (computed from the registry); ``--embeddings``
scores everything, after an untimed warm-up run that fills a fixed embedding cache. Bootstrap
statistics are skipped (``--no-stats`` when `evaluate` offers it, else ``--resamples 0``).

Targets, reported and never asserted (exit status 0 when they are missed): rows/s within ±20 %
of the first size's figure, and peak RSS under 2 GiB, at every size.

    python bench/bench_scale.py [--sizes 1000000,5000000,10000000] [--workdir DIR] [--keep]
        [--embeddings] [--batch-rows N] [--json results.json]
    python bench/bench_scale.py --incremental --sizes 1000000   # a store run, then a re-run
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from common import LAUNCHER  # noqa: E402 - the shared measuring launcher

DEFAULT_SIZES = (1_000_000, 5_000_000, 10_000_000)
CHUNK_ROWS = 250_000
MODELS = ("model-alpha", "model-beta", "model-gamma")
RUN = "run-1"
NOISE_LEVELS = (0.0, 0.2, 0.4, 0.6, 0.8)
#: Rows per question: one per (model, noise level); the key (id, model, run, noise) is unique.
GROUP = len(MODELS) * len(NOISE_LEVELS)
CATEGORIES = ("geography", "history", "science", "medicine", "cooking", "sports", "arts", "law")
ABSTENTIONS = ("I don't know.", "I do not know the answer.",
               "I don't have enough information to answer.", "Not enough information.")
UNANSWERABLE_REFERENCE = "It is not mentioned in the document."
THROUGHPUT_TOLERANCE = 0.20
RSS_LIMIT_GIB = 2.0

#: Arrow types of the generated columns (the canonical dtypes of ``pipeline.schema``).
ARROW_SCHEMA = pa.schema([
    ("id", pa.string()), ("question", pa.string()), ("reference", pa.string()),
    ("response", pa.string()), ("references", pa.list_(pa.string())),
    ("citations", pa.list_(pa.int64())), ("gold_citations", pa.list_(pa.int64())),
    ("contexts", pa.list_(pa.string())), ("category", pa.string()), ("model", pa.string()),
    ("run", pa.string()), ("noise_level", pa.float64()), ("question_type", pa.string()),
    ("doc_id", pa.string()), ("prompt_tokens", pa.int64()), ("completion_tokens", pa.int64()),
    ("total_tokens", pa.int64()), ("latency_ms", pa.float64()),
])


# --- metric selection -------------------------------------------------------------------------

def lexical_metrics() -> list[str]:
    """Registry metrics whose ``needs`` do not reach the embedder, directly or through metrics."""
    from pipeline.metrics.registry import REGISTRY
    from pipeline.metrics.spec import NEEDS_EMBEDDER

    memo: dict[str, bool] = {}

    def embeds(name: str) -> bool:
        if name not in memo:
            needs = REGISTRY[name].needs
            memo[name] = NEEDS_EMBEDDER in needs or any(
                embeds(n) for n in needs if n in REGISTRY
            )
        return memo[name]

    return [name for name in REGISTRY if not embeds(name)]


# --- data generation ---------------------------------------------------------------------------

def vocabulary(rng: np.random.Generator, size: int = 3000) -> pa.Array:
    """Function words and numbers, then ``size`` made-up words from syllables (some capitalised)."""
    syllables = np.array(["ka", "lo", "mi", "ren", "tas", "vo", "el", "dru", "sen", "pa", "or",
                          "bi", "nu", "ter", "gal", "fi", "sho", "qua", "ix", "dem"])
    parts = syllables[rng.integers(0, len(syllables), size=(size, 4))]
    lengths = rng.integers(1, 5, size=size)
    keep = np.arange(4) < lengths[:, None]
    words = np.array(["".join(p[k]) for p, k in zip(parts, keep, strict=True)], dtype=object)
    words[: size // 20] = [w.capitalize() for w in words[: size // 20]]
    extras = ["the", "the", "a", "of", "of", "and", "in", "is", "was", "to", "by", "for", "it",
              "3.5", "1,234", "42", "1889", "2021", "12", "percent", "not", "no"]
    return pa.array(extras + words.tolist(), pa.string())  # frequent words first


def _words(rng: np.random.Generator, n_vocab: int, n: int, lo: int, hi: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """Word indices of ``n`` texts of ``lo..hi`` words: (matrix n x hi, lengths).

    Skewed towards the start of the vocabulary, roughly like word frequencies in text.
    """
    matrix = (n_vocab * rng.random((n, hi)) ** 2.5).astype(np.int64)
    return matrix, rng.integers(lo, hi + 1, size=n)


def _join(vocab: pa.Array, matrix: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """The texts whose word indices are ``matrix[i, :lengths[i]]``, joined by spaces."""
    mask = np.arange(matrix.shape[1]) < lengths[:, None]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    words = pa.ListArray.from_arrays(pa.array(offsets), vocab.take(pa.array(matrix[mask])))
    return pc.binary_join(words, " ")


def _list(values: pa.Array, lengths: np.ndarray, null: np.ndarray | None = None) -> pa.Array:
    """A list array of consecutive runs of ``values`` (``lengths`` each; null where ``null``)."""
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    mask = None if null is None else pa.array(null)
    return pa.ListArray.from_arrays(pa.array(offsets), values, mask=mask)


def _concat(*parts: pa.Array | str) -> pa.Array:
    return pc.binary_join_element_wise(*parts, "")


def _numbered(prefix: str, numbers: np.ndarray, width: int) -> pa.Array:
    return _concat(prefix, pc.utf8_lpad(pc.cast(pa.array(numbers), pa.string()), width, "0"))


def generate_chunk(vocab: pa.Array, first_question: int, n_rows: int, seed: int) -> pa.Table:
    """``n_rows`` records starting at question ``first_question`` (``GROUP`` rows a question)."""
    rng = np.random.default_rng([seed, 1, first_question])
    nv = len(vocab)
    nq = -(-n_rows // GROUP)
    qid = first_question + np.arange(nq)
    # Question level: text, reference, retrieval, category.
    unanswerable = rng.random(nq) < 0.05
    q_words, q_len = _words(rng, nv, nq, 4, 10)
    question = _concat("What is the ", _join(vocab, q_words, q_len), "?")
    r_words, r_len = _words(rng, nv, nq, 1, 8)
    answer = _join(vocab, r_words, r_len)
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
    model = row % len(MODELS)
    noise = np.asarray(NOISE_LEVELS)[(row // len(MODELS)) % len(NOISE_LEVELS)]
    take_q = pa.array(q)
    # Response: the reference's head followed by other words, an exact copy, or an abstention.
    cut = (r_len[q] * rng.random(n_rows) * (1.2 - noise)).astype(np.int64)
    o_words, o_len = _words(rng, nv, n_rows, 1, 12)
    head = np.arange(12)[None, :] < np.minimum(cut, r_len[q])[:, None]
    padded = np.zeros((n_rows, 12), dtype=np.int64)
    padded[:, :8] = r_words[q]
    resp_words = np.where(head, padded, o_words)
    resp_len = np.maximum(o_len, np.minimum(cut, r_len[q]))
    response = _join(vocab, resp_words, resp_len)
    roll = rng.random(n_rows)
    exact = roll < 0.15 + 0.2 * (1 - noise)
    abstain = (roll > 0.97 - 0.05 * noise) | (unanswerable[q] & (roll > 0.5))
    response = pc.if_else(pa.array(exact), answer.take(take_q), response)
    idk = pa.array(ABSTENTIONS).take(pa.array(rng.integers(0, len(ABSTENTIONS), size=n_rows)))
    response = pc.if_else(pa.array(abstain), idk, response)
    # Citations: null on 30 % of rows; else the gold passage, another one, or none.
    kind = rng.integers(0, 5, size=n_rows)  # 0-2 gold, 3 other, 4 none
    cited = np.where(kind == 3, gold[q] % n_ctx[q] + 1, gold[q])
    n_cited = (kind != 4).astype(np.int64)
    citations = _list(pa.array(cited[kind != 4], pa.int64()), n_cited,
                      null=rng.random(n_rows) < 0.3)
    marker = (kind != 4) & ~abstain & (rng.random(n_rows) < 0.5)
    response = pc.if_else(
        pa.array(marker),
        _concat(response, " [", pc.cast(pa.array(cited), pa.string()), "]"),
        response,
    )
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
        "run": pa.array([RUN]).take(pa.array(np.zeros(n_rows, dtype=np.int64))),
        "noise_level": pa.array(noise, pa.float64()),
        "question_type": pc.if_else(pa.array(unanswerable[q]), "impossible", "fact"),
        "doc_id": _numbered("doc-", qid // 4, 7).take(take_q),
        "prompt_tokens": pa.array(prompt, pa.int64()),
        "completion_tokens": pa.array(completion, pa.int64()),
        "total_tokens": pa.array(prompt + completion, pa.int64()),
        "latency_ms": pa.array(np.round(latency, 1), pa.float64()),
    }
    return pa.Table.from_pydict(columns, schema=ARROW_SCHEMA)


def generate(path: Path, n_rows: int, seed: int = 0, chunk_rows: int = CHUNK_ROWS) -> Path:
    """Write ``n_rows`` deterministic records to ``path`` chunk by chunk (small memory)."""
    vocab = vocabulary(np.random.default_rng([seed, 0]))
    per_chunk = max(1, chunk_rows // GROUP)  # whole questions per chunk
    with pq.ParquetWriter(path, ARROW_SCHEMA) as writer:
        for first in range(0, -(-n_rows // GROUP), per_chunk):
            rows = min(per_chunk * GROUP, n_rows - first * GROUP)
            writer.write_table(generate_chunk(vocab, first, rows, seed), row_group_size=rows)
    return path


# --- measurement --------------------------------------------------------------------------------

def evaluate_options() -> str:
    """`evaluate --help`, to pass only the options this version of the CLI has."""
    return subprocess.run([sys.executable, "-m", "pipeline", "evaluate", "--help"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout


def evaluate_command(data: Path, out: Path, *, options: str, metrics: Sequence[str] | None,
                     batch_rows: int | None, cache_dir: Path | None, config: Path | None,
                     embedding_backend: str | None, stats: bool = False) -> list[str]:
    """The `python -m pipeline evaluate` command line of one run."""
    cmd = [sys.executable, "-m", "pipeline", "evaluate", "--input", str(data), "--out", str(out)]
    if "--no-progress" in options:
        cmd.append("--no-progress")
    if metrics is not None:
        cmd += ["--metrics", ",".join(metrics)]
    if not stats:
        cmd += ["--no-stats"] if "--no-stats" in options else ["--resamples", "0"]
    if batch_rows is not None:
        cmd += ["--batch-rows", str(batch_rows)]
    if cache_dir is not None:
        cmd += ["--cache-dir", str(cache_dir)]
    if config is not None:
        cmd += ["--config", str(config)]
    if embedding_backend is not None:
        cmd += ["--embedding-backend", embedding_backend]
    return cmd


def run_measured(cmd: Sequence[str], log: Path) -> dict[str, float]:
    """Run ``cmd`` as a child; its wall seconds, peak RSS (``ru_maxrss``) and exit status.

    A small ``python -S`` launcher starts and reaps the child: ``ru_maxrss`` of a child forked
    from this process would count this process's memory (the generated data) as its own.
    """
    result = log.with_suffix(".measure.json")
    subprocess.run([sys.executable, "-S", "-c", LAUNCHER, str(result), str(log), *cmd],
                   cwd=ROOT, check=True)
    measured = json.loads(result.read_text())
    return {"seconds": measured["seconds"], "peak_rss_gib": measured["peak_rss_mib"] / 1024,
            "returncode": measured["returncode"]}


def parquet_rows(path: Path) -> int:
    return pq.ParquetFile(path).metadata.num_rows if path.exists() else -1


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Throughput spread and whether the targets hold at every measured size."""
    ok = [r for r in results if r["returncode"] == 0]
    rates = [r["rows_per_s"] for r in ok]
    if not rates:
        return {"spread": None, "throughput_ok": False, "rss_ok": False, "targets_met": False}
    base = rates[0]
    spread = (max(rates) - min(rates)) / (sum(rates) / len(rates))
    throughput_ok = all(abs(r / base - 1) <= THROUGHPUT_TOLERANCE for r in rates)
    rss_ok = all(r["peak_rss_gib"] < RSS_LIMIT_GIB for r in ok)
    complete = len(ok) == len(results)
    return {"spread": spread, "throughput_ok": throughput_ok, "rss_ok": rss_ok,
            "targets_met": complete and throughput_ok and rss_ok}


def print_results(results: list[dict[str, Any]], summary: dict[str, Any]) -> None:
    print(f"{'rows':>12}{'rows/s':>12}{'wall s':>10}{'peak RSS GiB':>14}{'scored':>12}"
          f"{'rejected':>10}")
    for r in results:
        status = "" if r["returncode"] == 0 else f"  FAILED (exit {r['returncode']})"
        print(f"{r['rows']:>12,}{r['rows_per_s']:>12,.0f}{r['seconds']:>10.1f}"
              f"{r['peak_rss_gib']:>14.2f}{r['scored']:>12,}{r['rejected']:>10,}{status}")
    if summary["spread"] is not None:
        print(f"throughput spread (max-min)/mean: {summary['spread']:.1%}")
    print(f"throughput within ±{THROUGHPUT_TOLERANCE:.0%} of the first size: "
          f"{'yes' if summary['throughput_ok'] else 'NO'}; "
          f"peak RSS < {RSS_LIMIT_GIB:g} GiB at every size: {'yes' if summary['rss_ok'] else 'NO'}")
    print(f"targets met: {'yes' if summary['targets_met'] else 'NO'}")


def bench(args: argparse.Namespace, workdir: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Generate, then measure one `evaluate` child per size; per-size results and the summary."""
    options = evaluate_options()
    metrics = None if args.embeddings else lexical_metrics()
    cache_dir = config = None
    if args.embeddings:  # a fixed cache, filled by an untimed warm-up run
        cache = workdir / "embedding-cache"
        if "--cache-dir" in options:
            cache_dir = cache
        else:
            config = workdir / "bench.toml"
            config.write_text(f'[embedding]\ncache_dir = "{cache}"\n', encoding="utf-8")
    results = []
    for size in args.sizes:
        data = workdir / f"records-{size}.parquet"
        if not data.exists():
            t0 = time.perf_counter()
            generate(data, size, seed=args.seed)
            print(f"generated {size:,} rows in {time.perf_counter() - t0:.1f}s: {data}",
                  flush=True)
        out = workdir / f"out-{size}"
        command = dict(options=options, metrics=metrics, batch_rows=args.batch_rows,
                       cache_dir=cache_dir, config=config,
                       embedding_backend=args.embedding_backend)
        if args.embeddings:
            warm = run_measured(evaluate_command(data, workdir / f"warm-{size}", **command),
                                workdir / f"warm-{size}.log")
            shutil.rmtree(workdir / f"warm-{size}", ignore_errors=True)
            if warm["returncode"] != 0:
                tail = (workdir / f"warm-{size}.log").read_text(errors="replace")[-3000:]
                raise SystemExit(f"{tail}\nthe embedding warm-up run failed")
            print(f"warmed the embedding cache in {warm['seconds']:.1f}s", flush=True)
        shutil.rmtree(out, ignore_errors=True)
        log = workdir / f"evaluate-{size}.log"
        measured = run_measured(evaluate_command(data, out, **command), log)
        result = {"rows": size, **measured, "rows_per_s": size / measured["seconds"],
                  "scored": parquet_rows(out / "scores.parquet"),
                  "rejected": parquet_rows(out / "rejected.parquet"),
                  "metrics": "all" if metrics is None else len(metrics),
                  "stats_off_by": "--no-stats" if "--no-stats" in options else "--resamples 0"}
        if measured["returncode"] != 0:
            print(log.read_text(errors="replace")[-3000:], file=sys.stderr)
        print(f"evaluated {size:,} rows in {measured['seconds']:.1f}s, "
              f"peak RSS {measured['peak_rss_gib']:.2f} GiB", flush=True)
        results.append(result)
        if not args.keep:
            data.unlink(missing_ok=True)
            shutil.rmtree(out, ignore_errors=True)
    return results, summarize(results)


def bench_incremental(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    """Per size: a first `evaluate --store` run, then a re-run of the same input into the same
    store (every row reused); wall time, peak RSS and the manifest's counts of each."""
    metrics = lexical_metrics()
    results = []
    for size in args.sizes:
        data = workdir / f"records-{size}.parquet"
        if not data.exists():
            generate(data, size, seed=args.seed)
        store = workdir / f"store-{size}"
        shutil.rmtree(store, ignore_errors=True)
        for run in ("first", "rerun"):
            cmd = [sys.executable, "-m", "pipeline", "evaluate", "--input", str(data), "--store",
                   str(store), "--run-id", run, "--metrics", ",".join(metrics), "--no-stats",
                   "--no-progress"]
            measured = run_measured(cmd, workdir / f"store-{size}-{run}.log")
            manifest = store / f"eval_run={run}" / "manifest.json"
            counts = json.loads(manifest.read_text())["counts"] if manifest.exists() else {}
            results.append({"rows": size, "run": run, **measured, **counts})
            print(f"store {run}: {size:,} rows in {measured['seconds']:.1f}s, peak RSS "
                  f"{measured['peak_rss_gib']:.2f} GiB, counts {counts}", flush=True)
        if not args.keep:
            shutil.rmtree(store, ignore_errors=True)
    return results


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)),
                        type=lambda s: [int(x) for x in s.split(",") if x.strip()],
                        help="comma-separated row counts")
    parser.add_argument("--workdir", type=Path, help="data and outputs (default: a temp dir)")
    parser.add_argument("--keep", action="store_true",
                        help="keep data and outputs (kept data is reused with the same --workdir)")
    parser.add_argument("--embeddings", action="store_true",
                        help="score the embedding metrics too (cache warmed before timing)")
    parser.add_argument("--embedding-backend", metavar="SPEC", help="passed to evaluate")
    parser.add_argument("--batch-rows", type=int, help="passed to evaluate")
    parser.add_argument("--incremental", action="store_true",
                        help="instead: a results-store run, then a re-run reusing every row")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated data")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write results as JSON")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    created = args.workdir is None
    workdir = Path(tempfile.mkdtemp(prefix="bench-scale-")) if created else args.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        if args.incremental:
            runs = bench_incremental(args, workdir)
            if args.json is not None:
                args.json.write_text(json.dumps({"incremental": runs}, indent=2) + "\n",
                                     encoding="utf-8")
            return 0 if all(r["returncode"] == 0 for r in runs) else 1
        results, summary = bench(args, workdir)
    finally:
        if created and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print()
    print_results(results, summary)
    if args.json is not None:
        payload = {"results": results, "summary": summary,
                   "embeddings": args.embeddings, "batch_rows": args.batch_rows}
        args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return 0 if all(r["returncode"] == 0 for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
