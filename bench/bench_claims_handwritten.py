"""The grounding rule on hand-labeled claims in five languages.

The claims are in bench/data/claims_handwritten.jsonl.

Each claim (an answer sentence as an LLM writes it, no citation marker) is scored as a run
scores a response: ``contexts = [passage]``, its question, the default rule and the default
embedding backend (MiniLM). A claim is judged
supported when every claim of its response is. Per language: accuracy over all claims,
precision and recall of "supported", accuracy on the paraphrased and framed claims, and the
share of counterfactual claims judged supported (lower is better).

    python bench/bench_claims_handwritten.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.embed import make_embedder
from pipeline.metrics.embedding.grounding import grounding_counts

CLAIMS = Path(__file__).resolve().parent / "data" / "claims_handwritten.jsonl"
LANGUAGES = ("en", "zh", "de", "fr", "es")


def judged(claims: pl.DataFrame) -> pl.DataFrame:
    """``claims`` with ``said``: whether the rule judges the claim supported."""
    frame = claims.select(pl.col("claim").alias("response"),
                          pl.concat_list("passage").alias("contexts"), "question", "lang")
    embedder = make_embedder("minilm", cache_dir=None)
    out = grounding_counts(frame, embedder)
    said = (out["n_supported"] == out["n_sentences"]).alias("said")
    return claims.with_columns(said, out["unsupported"].alias("unsupported"))


def scores(frame: pl.DataFrame) -> dict[str, float]:
    truth = pl.col("label") == "supported"
    said = pl.col("said")
    row = frame.select(
        pl.len().alias("n"),
        (said == truth).mean().alias("accuracy"),
        ((said & truth).sum() / said.sum()).alias("precision"),
        ((said & truth).sum() / truth.sum()).alias("recall"),
        (said == truth).filter(pl.col("kind").is_in(["paraphrase", "frame"])).mean()
        .alias("paraphrase_accuracy"),
        said.filter(pl.col("kind") == "counterfactual").mean()
        .alias("counterfactual_supported"),
    ).row(0, named=True)
    return {key: float(value) for key, value in row.items()}


def main() -> int:
    claims = judged(pl.read_ndjson(CLAIMS))
    print(f"{'lang':<5} {'n':>4} {'acc':>6} {'P':>6} {'R':>6} {'para.':>6} {'counterf.':>9}")
    for lang in LANGUAGES:
        got = scores(claims.filter(pl.col("lang") == lang))
        print(f"{lang:<5} {got['n']:>4.0f} {got['accuracy']:6.3f} {got['precision']:6.3f} "
              f"{got['recall']:6.3f} {got['paraphrase_accuracy']:6.3f} "
              f"{got['counterfactual_supported']:9.3f}")
    wrong = claims.filter(pl.col("said") != (pl.col("label") == "supported"))
    for row in wrong.iter_rows(named=True):
        print(f"  wrong {row['id']} ({row['kind']}): {row['claim']} {row['unsupported']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
