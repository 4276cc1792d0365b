"""Hallucination detection on RAGTruth's human labels: how often the grounding rule is right.

Reads the development split of RAGTruth (``../shared/data/ragtruth/ragtruth_dev.parquet``,
README beside it: 1,198 responses of six LLMs to QA, Summary and Data2txt prompts, with the
hallucinated spans human annotators marked) and scores every response **as written** (no
citation markers; ``contexts`` = the passages the LLM saw, ``question`` = the QA question,
empty for the other tasks) with ``pipeline.score`` and its default grounding rule, exactly as
``rag-eval evaluate`` would. A response is flagged when ``hallucination`` is 1 (at least one
unsupported claim).

Prints and writes (``--out``, JSON) response-level precision, recall and F1 per task, per
source model, per split (``test-dev`` rows of the official test set, ``train`` rows), overall,
the flag-everything line of the same rows, the published figures (full RAGTruth test set,
from the README beside the data), and sentence-level precision: the share of flagged
sentences that overlap a labeled span.

    python bench/bench_ragtruth.py [--data PATH] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pipeline

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/data/ragtruth/ragtruth_dev.parquet"

#: Published response-level F1 on the full RAGTruth test set (README beside the data).
PUBLISHED = {
    "flag every response (trivial)": (30.2, 78.3, 37.0, 51.8),
    "RAGAS faithfulness": (35.7, 61.9, 40.8, 52.0),
    "TruLens groundedness": (36.6, 79.0, 44.5, 60.4),
    "prompt gpt-4-turbo": (45.6, 78.3, 47.6, 63.4),
    "Luna (DeBERTa-large, fine-tuned)": (51.3, 75.9, 52.5, 65.4),
    "LettuceDetect large (trained on RAGTruth)": (70.2, 88.5, 59.7, 79.2),
}


def score(data: pl.DataFrame) -> pl.DataFrame:
    """``data`` with ``flagged``, ``n_claims`` and ``unsupported`` (the sentences as written),
    scored by ``pipeline.score`` with the default grounding rule."""
    records = data.select(
        pl.col("question").fill_null(""), "response", pl.col("passages").alias("contexts"),
        pl.lit("").alias("reference"), "model",
    )
    scored = pipeline.score(records, metrics=["hallucination", "n_sentences",
                                              "unsupported_sentences"])
    if scored.rejected.height:
        raise SystemExit(f"{scored.rejected.height} rows rejected: {scored.rejected.head(3)}")
    scores = scored.scores.sort("row_number")
    return data.with_columns(
        (scores["hallucination"] == 1).alias("flagged"),
        scores["n_sentences"].alias("n_claims"),
        scores["unsupported_sentences"].list.eval(
            pl.element().str.extract(r'^"(.*)" — ', 1)
        ).alias("unsupported"),
    )


def prf(frame: pl.DataFrame, flag: str = "flagged") -> dict[str, float]:
    """Response-level precision, recall and F1 (%) of ``flag`` against ``hallucinated``."""
    tp = frame.filter(pl.col(flag) & pl.col("hallucinated")).height
    fp = frame.filter(pl.col(flag) & ~pl.col("hallucinated")).height
    fn = frame.filter(~pl.col(flag) & pl.col("hallucinated")).height
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"n": frame.height, "precision": 100 * precision, "recall": 100 * recall,
            "f1": 100 * f1}


def sentence_precision(frame: pl.DataFrame) -> dict[str, float]:
    """The share of flagged sentences (found in the response as written) that overlap a
    labeled hallucinated span."""
    flagged = frame.select(
        pl.int_range(pl.len()).alias("_r"), "response", "labels",
        pl.col("unsupported").alias("sentence"),
    ).explode("sentence").drop_nulls("sentence").with_columns(
        pl.col("response").str.find(pl.col("sentence"), literal=True).alias("start")
    ).drop_nulls("start").with_columns(
        (pl.col("start") + pl.col("sentence").str.len_chars()).alias("end")
    )
    spans = flagged.select("_r", "start", "end", "labels").with_row_index("_s").explode(
        "labels"
    ).unnest("labels", separator=".").with_columns(
        ((pl.col("labels.start") < pl.col("end")) & (pl.col("labels.end") > pl.col("start")))
        .fill_null(False).alias("hit")
    ).group_by("_s").agg(pl.col("hit").any())
    hits = int(spans["hit"].sum())
    return {"flagged_sentences": spans.height,
            "precision": 100 * hits / spans.height if spans.height else 0.0}


def report(frame: pl.DataFrame) -> dict[str, object]:
    """Every table of the benchmark as plain data."""
    everything = frame.with_columns(pl.lit(True).alias("all"))
    out: dict[str, object] = {"overall": prf(frame), "overall_flag_all": prf(everything, "all")}
    for column in ("task_type", "split", "model"):
        out[column] = {
            str(key): {"rule": prf(group), "flag_all": prf(group.with_columns(
                pl.lit(True).alias("all")), "all")}
            for (key,), group in frame.sort(column).group_by(column, maintain_order=True)
        }
    out["task_by_split"] = {
        f"{task} / {split}": {"rule": prf(group), "flag_all": prf(group.with_columns(
            pl.lit(True).alias("all")), "all")}
        for (task, split), group in frame.sort("task_type", "split").group_by(
            "task_type", "split", maintain_order=True)
    }
    out["sentence_level"] = sentence_precision(frame)
    out["faithful_with_no_claim"] = frame.filter(
        ~pl.col("hallucinated") & (pl.col("n_claims") == 0)).height
    return out


def print_tables(result: dict[str, object], seconds: float) -> None:
    def line(name: str, rule: dict[str, float], trivial: dict[str, float] | None) -> str:
        text = (f"{name:<34} {rule['n']:>5} {rule['precision']:6.1f} {rule['recall']:6.1f} "
                f"{rule['f1']:6.1f}")
        return text + (f"   {trivial['f1']:6.1f}" if trivial else "")

    print(f"{'slice':<34} {'n':>5} {'P':>6} {'R':>6} {'F1':>6}   flag-all F1")
    print(line("all", result["overall"], result["overall_flag_all"]))  # type: ignore[arg-type]
    for key in ("task_type", "task_by_split", "split", "model"):
        for name, value in result[key].items():  # type: ignore[attr-defined]
            print(line(f"{key.split('_')[0]} {name}", value["rule"], value["flag_all"]))
    sentence = result["sentence_level"]
    print(f"sentence level: {sentence['flagged_sentences']} flagged sentences, "  # type: ignore[index]
          f"{sentence['precision']:.1f} % overlap a labeled span")  # type: ignore[index]
    print(f"scored in {seconds:.1f} s")
    print("\npublished (full RAGTruth test set), F1: QA / Data2txt / Summary / all")
    for name, (qa, d2t, summary, overall) in PUBLISHED.items():
        print(f"  {name:<44} {qa:5.1f} {d2t:5.1f} {summary:5.1f} {overall:5.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    if not args.data.exists():
        print(f"skipped: {args.data} not found (the RAGTruth dev split of ../shared)")
        return 0
    data = pl.read_parquet(args.data)
    start = time.perf_counter()
    scored = score(data)
    seconds = time.perf_counter() - start
    result = report(scored)
    result["seconds"] = seconds
    print_tables(result, seconds)
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
