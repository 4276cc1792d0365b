"""Throughput of the vectorized EM + F1 + citation metrics against a per-row Python baseline.

Both implementations score the same generated table (short answers, citation lists, a third of
the rows with citations only as ``[n]`` markers in the text) in one run. Each runs in its own
child process so its peak resident memory is measured separately.

    python bench/bench_answer_metrics.py [--rows 1000000] [--batch-rows 200000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
from common import measure, random_texts

WORDS = (
    "the", "a", "an", "of", "in", "river", "city", "Veloria", "Marden", "1889", "1,234", "3.5",
    "north", "bridge", "tower", "king", "queen", "inventor", "compound", "salt", "blue", "red",
    "Paris", "France", "Einstein", "theory", "year", "capital", "museum",
)
PHRASES = ("", "The answer is ", "It is ", "I think ", "")


def generate(n: int, seed: int = 0) -> pl.DataFrame:
    """A deterministic table of short references/responses with citation columns."""
    from pipeline.schema import PROVENANCE_SCHEMA, RECORD_SCHEMA

    rng = np.random.default_rng(seed)
    vocab = np.array(WORDS)
    refs = random_texts(rng, vocab, n, 1, 4)
    prefixes = rng.integers(0, len(PHRASES), size=n)
    copy = rng.random(n) < 0.4
    resp = random_texts(rng, vocab, n, 1, 6)
    responses = [
        PHRASES[p] + (r if c else s) + "."
        for p, r, s, c in zip(prefixes, refs, resp, copy, strict=True)
    ]
    gold = [sorted(set(g)) for g in rng.integers(1, 6, size=(n, 2)).tolist()]
    cited = [sorted(set(c)) for c in rng.integers(1, 6, size=(n, 2)).tolist()]
    markers = rng.random(n) < 0.33
    for i in np.flatnonzero(markers):
        responses[i] += "".join(f" [{c}]" for c in cited[i])
    columns = {
        "id": [f"q{i}" for i in range(n)],
        "question": [""] * n,
        "reference": refs,
        "response": responses,
        "citations": [None if m else c for m, c in zip(markers, cited, strict=True)],
        "gold_citations": gold,
        "source": ["bench"] * n,
        "row_number": list(range(n)),
    }
    schema = {**RECORD_SCHEMA, **PROVENANCE_SCHEMA}
    frame = pl.DataFrame(columns, schema={k: schema[k] for k in columns})
    return frame.select(
        pl.col(name) if name in columns else pl.lit(None, dtype=dtype).alias(name)
        for name, dtype in schema.items()
    )


def python_per_row(path: str) -> dict[str, float]:
    """The same definitions, one row at a time, in plain Python (official SQuAD functions)."""
    from oracles import citation_prf, compute_exact, compute_f1, parse_markers, strip_markers

    frame = pl.read_parquet(path, columns=["reference", "response", "citations",
                                           "gold_citations"])
    refs, resps = frame["reference"].to_list(), frame["response"].to_list()
    cits, golds = frame["citations"].to_list(), frame["gold_citations"].to_list()
    start = time.perf_counter()
    total = 0.0
    for ref, resp, cit, gold in zip(refs, resps, cits, golds, strict=True):
        answer = strip_markers(resp)
        em = compute_exact(ref, answer)
        f1 = compute_f1(ref, answer)
        predicted = cit if cit is not None else parse_markers(resp)
        precision, recall, cf1 = citation_prf(predicted, gold)
        total += em + f1 + precision + recall + cf1
    elapsed = time.perf_counter() - start
    return {"seconds": elapsed, "checksum": total}


def vectorized(path: str, batch_rows: int) -> dict[str, float]:
    """Our registry metrics (answer_em, answer_f1, citation family), scored batch by batch."""
    from pipeline.config import Config
    from pipeline.metrics.registry import resolve
    from pipeline.scoring import prepare_inputs, score_frame
    from pipeline.text.charclasses import lowercase_mismatches, space_class, word_class

    word_class(), space_class(), lowercase_mismatches()  # one-off start-up, not per row
    frame = pl.read_parquet(path)
    config = Config(metrics=("answer_em", "answer_f1", "citation"))
    start = time.perf_counter()
    inputs = prepare_inputs(frame, config, resolve(config.metrics))
    total = 0.0
    for offset in range(0, frame.height, batch_rows):
        scored = score_frame(frame.slice(offset, batch_rows), config, inputs=inputs).collect()
        total += scored.select(
            pl.sum_horizontal("answer_em", "answer_f1", "citation_precision",
                              "citation_recall", "citation_f1").sum()
        ).item()
    elapsed = time.perf_counter() - start
    return {"seconds": elapsed, "checksum": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--batch-rows", type=int, default=200_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "bench.parquet")
        t0 = time.perf_counter()
        generate(args.rows).write_parquet(path)
        print(f"generated {args.rows:,} rows in {time.perf_counter() - t0:.1f}s")
        ours = measure(vectorized, path, args.batch_rows)
        base = measure(python_per_row, path)
    if abs(ours["checksum"] - base["checksum"]) > 1e-6 * max(1.0, abs(base["checksum"])):
        raise SystemExit(f"implementations disagree: {ours['checksum']} vs {base['checksum']}")
    rate_ours = args.rows / ours["seconds"]
    rate_base = args.rows / base["seconds"]
    print(f"{'implementation':<34}{'rows/s':>14}{'seconds':>10}{'peak RSS MiB':>14}")
    print(f"{'vectorized (polars, batched)':<34}{rate_ours:>14,.0f}{ours['seconds']:>10.2f}"
          f"{ours['peak_rss_mib']:>14.0f}")
    print(f"{'per-row Python (official script)':<34}{rate_base:>14,.0f}{base['seconds']:>10.2f}"
          f"{base['peak_rss_mib']:>14.0f}")
    print(f"speed-up: {rate_ours / rate_base:.1f}x  (checksums agree: {ours['checksum']:.3f})")


if __name__ == "__main__":
    main()
