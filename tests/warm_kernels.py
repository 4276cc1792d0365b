"""Compile the numba text kernels into their on-disk cache once, before the test workers start.

`make test` runs it beside mypy: on a fresh clone each of the two pytest workers would otherwise
compile the same kernels at the same time (about 13 CPU-s each, docs/benchmarks.md). It scores a
few sample rows, in English and Chinese, with every text rule that has a kernel of its own, and
hashes them (``row_hash``, whose kernel every evaluation runs), and puts their ids in the
statistics' md5 buckets.
Nothing it computes is checked here; the tests check the kernels against their references.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import polars as pl

import pipeline
from pipeline.config import ANSWER_SCORERS, BLEU_TOKENIZERS, ROUGE_TOKENIZERS, Config
from pipeline.scoring import row_hashes
from pipeline.stats import bucket_of

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "data" / "sample" / "records.parquet"
#: Per text rule, the metrics whose kernels read it.
RULE_METRICS = {"answer_scorer": ("answer_em", "answer_f1"), "bleu_tokenize": ("bleu",),
                "rouge_tokenizer": ("rouge_l",)}
RULE_CHOICES = {"answer_scorer": ANSWER_SCORERS, "bleu_tokenize": BLEU_TOKENIZERS,
                "rouge_tokenizer": ROUGE_TOKENIZERS}


def rows() -> pl.DataFrame:
    """Sample rows with English and Chinese answers."""
    sample = pl.read_parquet(SAMPLE).head(24)
    chinese = sample.head(4).with_columns(
        pl.col("id") + "-zh", response=pl.lit("法国的首都是巴黎，人口约两百万。"),
        reference=pl.lit("巴黎"))
    return pl.concat([sample, chinese])


def warm() -> None:
    records = rows()
    row_hashes(records)
    bucket_of(records["id"])
    base = Config(embedding_backend="hashed")
    pipeline.score(records, config=base)
    for rule, choices in RULE_CHOICES.items():
        for choice in choices:
            pipeline.score(records, config=replace(base, **{rule: choice}),
                           metrics=RULE_METRICS[rule])


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    warm()
