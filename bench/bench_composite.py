"""Throughput of the whole metric catalogue, category-aware composites included.

Scores the answer benchmark's generated table (``bench_answer_metrics.generate``: short answers,
citations) with a question and a category per row, through every registered metric: what
``evaluate`` computes, batch by batch. Embeddings use the dependency-free ``hashed`` backend so
the figure measures our code, not the neural model (``bench_embeddings.py`` measures that).

    python bench/bench_composite.py [--rows 1000000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import polars as pl
from bench_answer_metrics import generate
from common import measure

CATEGORIES = ("Factual", "Explanatory", "Instructional", "Instruction", "Creative", "Sensitive",
              "unknown")
QUESTIONS = ("What is the capital of France?", "How do I bake the cake?",
             "Why does the river freeze early?", "Write a poem about the tower.",
             "What dose is safe for adults?")


def table(n: int) -> pl.DataFrame:
    index = pl.int_range(n, eager=True)
    return generate(n).with_columns(
        pl.lit(pl.Series(CATEGORIES)).get(index % len(CATEGORIES)).alias("category"),
        pl.lit(pl.Series(QUESTIONS)).get(index % len(QUESTIONS)).alias("question"),
    )


def everything(path: str) -> dict[str, float]:
    from pipeline.config import Config
    from pipeline.engines.local import batch_rows_for
    from pipeline.metrics.registry import resolve
    from pipeline.scoring import prepare_inputs, score_frame
    from pipeline.text.charclasses import lowercase_mismatches, space_class, word_class

    word_class(), space_class(), lowercase_mismatches()  # one-off start-up, not per row
    frame = pl.read_parquet(path)
    config = Config(embedding_backend="hashed")
    start = time.perf_counter()
    inputs = prepare_inputs(frame, config, resolve(None))
    batch_rows = batch_rows_for(frame)
    total = 0.0
    for offset in range(0, frame.height, batch_rows):
        scored = score_frame(frame.slice(offset, batch_rows), config, inputs=inputs).collect()
        total += scored["composite_quality"].sum()
    return {"seconds": time.perf_counter() - start, "checksum": total,
            "columns": float(scored.width)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "bench.parquet")
        table(args.rows).write_parquet(path)
        result = measure(everything, path)
    print(f"all {int(result['columns'])} output columns (every registered metric, hashed "
          f"embeddings) on {args.rows:,} rows: {args.rows / result['seconds']:,.0f} rows/s, "
          f"{result['seconds']:.1f} s, peak RSS {result['peak_rss_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
