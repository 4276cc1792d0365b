"""Throughput of our ROUGE-1/2/L and BLEU against rouge-score and sacrebleu, per row, in one run.

Both sides score the same generated tables: 1,000,000 short rows (3-15 words) and 100,000 long
rows (80-200 words). Each measurement runs in its own child process, so peak memory is measured
separately. The reference packages are slow on long rows (rouge-score's LCS is quadratic Python),
so on the long table they score the first ``--reference-rows-long`` rows; rows/s stay comparable,
and the scores of those rows are checked to agree with ours.

    python bench/bench_lexical.py [--rows 1000000] [--long-rows 100000] [--reference-rows-long 5000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
from common import check_agree, measure, print_table, random_texts

ROUGE = ("rouge_1", "rouge_2", "rouge_l")


def vocabulary(rng: np.random.Generator, size: int = 400) -> np.ndarray:
    """Made-up words from syllables, some capitalised, plus punctuation and numbers."""
    syllables = np.array(["ka", "lo", "mi", "ren", "tas", "vo", "el", "dru", "sen", "pa", "or"])
    parts = rng.integers(0, len(syllables), size=(size, 3))
    lengths = rng.integers(1, 4, size=size)
    words = ["".join(syllables[p[:k]]) for p, k in zip(parts, lengths, strict=True)]
    words[: size // 10] = [w.capitalize() for w in words[: size // 10]]
    extras = ["the", "a", "of", "and", ",", ".", "3.5", "1,234", "(", ")", "-", "don't", "1889"]
    return np.array(words + extras)


def generate(n: int, lo: int, hi: int, seed: int) -> pl.DataFrame:
    """References and responses that share part of their words (deterministic)."""
    from pipeline.schema import PROVENANCE_SCHEMA, RECORD_SCHEMA

    rng = np.random.default_rng(seed)
    vocab = vocabulary(rng)
    references = random_texts(rng, vocab, n, lo, hi)
    others = random_texts(rng, vocab, n, lo, hi)
    cut = rng.random(n)
    responses = [  # the reference's head followed by other words: partial overlap
        " ".join(r.split()[: int(len(r.split()) * c)] + o.split()[int(len(o.split()) * c):])
        for r, o, c in zip(references, others, cut, strict=True)
    ]
    columns = {"id": [f"q{i}" for i in range(n)], "question": [""] * n,
               "reference": references, "response": responses,
               "source": ["bench"] * n, "row_number": list(range(n))}
    schema = {**RECORD_SCHEMA, **PROVENANCE_SCHEMA}
    return pl.DataFrame(columns).select(
        pl.col(name).cast(dtype) if name in columns else pl.lit(None, dtype=dtype).alias(name)
        for name, dtype in schema.items()
    )


def ours(path: str, metrics: tuple[str, ...], head: int) -> dict[str, float]:
    """Our registry metrics, batch by batch; checksums over all rows and over the first ``head``."""
    from pipeline.config import Config
    from pipeline.engines.local import batch_rows_for
    from pipeline.metrics.registry import resolve
    from pipeline.scoring import prepare_inputs, score_frame
    from pipeline.text.charclasses import lowercase_mismatches, space_class, word_class

    word_class(), space_class(), lowercase_mismatches()  # one-off start-up, not per row
    frame = pl.read_parquet(path)
    config = Config(metrics=metrics)
    start = time.perf_counter()
    inputs = prepare_inputs(frame, config, resolve(metrics))
    sums = []
    batch_rows = batch_rows_for(frame)  # as `evaluate` batches: by rows and by text bytes
    for offset in range(0, frame.height, batch_rows):
        scored = score_frame(frame.slice(offset, batch_rows), config, inputs=inputs).collect()
        sums.append(scored.select(pl.sum_horizontal(metrics).alias("s"))["s"])
    elapsed = time.perf_counter() - start
    per_row = pl.concat(sums)
    return {"seconds": elapsed, "checksum": float(per_row[:head].sum())}


def rouge_score_per_row(path: str, head: int) -> dict[str, float]:
    """``rouge_score.RougeScorer`` one row at a time."""
    from rouge_score import rouge_scorer

    frame = pl.read_parquet(path, columns=["reference", "response"]).head(head)
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)
    start = time.perf_counter()
    total = 0.0
    for ref, resp in frame.iter_rows():
        scores = scorer.score(ref, resp)
        total += scores["rouge1"].fmeasure + scores["rouge2"].fmeasure + scores["rougeL"].fmeasure
    return {"seconds": time.perf_counter() - start, "checksum": total}


def sacrebleu_per_row(path: str, head: int) -> dict[str, float]:
    """``sacrebleu.sentence_bleu`` one row at a time (score / 100)."""
    from sacrebleu import sentence_bleu

    frame = pl.read_parquet(path, columns=["reference", "response"]).head(head)
    start = time.perf_counter()
    total = 0.0
    for ref, resp in frame.iter_rows():
        total += sentence_bleu(resp, [ref]).score / 100
    return {"seconds": time.perf_counter() - start, "checksum": total}


def compare(label: str, path: str, n: int, reference_rows: int) -> None:
    head = min(n, reference_rows)
    r_ours = measure(ours, path, ROUGE, head)
    r_ref = measure(rouge_score_per_row, path, head)
    b_ours = measure(ours, path, ("bleu",), head)
    b_ref = measure(sacrebleu_per_row, path, head)
    check_agree(f"ROUGE ({label})", r_ours["checksum"], r_ref["checksum"])
    check_agree(f"BLEU ({label})", b_ours["checksum"], b_ref["checksum"])
    print(f"\n{label}")
    print_table([
        ("ours: ROUGE-1/2/L (polars + numpy LCS)", n, r_ours),
        ("rouge-score, per row", head, r_ref),
        ("ours: sentence BLEU (polars)", n, b_ours),
        ("sacrebleu.sentence_bleu, per row", head, b_ref),
    ])
    rouge_ratio = (n / r_ours["seconds"]) / (head / r_ref["seconds"])
    bleu_ratio = (n / b_ours["seconds"]) / (head / b_ref["seconds"])
    print(f"speed-up: ROUGE {rouge_ratio:.1f}x, BLEU {bleu_ratio:.1f}x "
          f"(scores agree on the {head:,} rows both scored)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--long-rows", type=int, default=100_000)
    parser.add_argument("--reference-rows-long", type=int, default=5_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        short, long = str(Path(tmp) / "short.parquet"), str(Path(tmp) / "long.parquet")
        t0 = time.perf_counter()
        generate(args.rows, 3, 15, seed=1).write_parquet(short)
        generate(args.long_rows, 80, 200, seed=2).write_parquet(long)
        print(f"generated {args.rows:,} short and {args.long_rows:,} long rows "
              f"in {time.perf_counter() - t0:.1f}s")
        compare(f"short rows (3-15 words), {args.rows:,}", short, args.rows, args.rows)
        compare(f"long rows (80-200 words), {args.long_rows:,}", long, args.long_rows,
                args.reference_rows_long)


if __name__ == "__main__":
    main()
