"""Per-row reference programs: what a user writes without the pipeline, to time and to check it.

Each program reads the records Parquet file in row batches with pyarrow, loops over the rows in
Python calling the reference implementation, and writes one Parquet row per input row
(``row_number``, 0-based as in the pipeline's ``scores.parquet``, then the metric columns):

* ``em``: the official SQuAD v2 script (``evaluate-v2.0.py``: ``normalize_answer``,
  ``get_tokens``, ``compute_exact``, ``compute_f1``, the max over gold answers of
  ``get_raw_scores``), copied below line for line, plus set-based citation precision, recall and
  F1. The conventions are those of ``answer_em`` / ``answer_f1`` / ``citation_*`` in
  docs/metrics.md: citation markers are removed from the response before answer scoring, the gold
  answers are ``reference`` plus every element of ``references``, predicted citations are the
  ``citations`` column or else the markers parsed from the raw response, empty/empty scores 1.0,
  one side empty 0.0, null ``gold_citations`` gives nulls.
* ``rouge``: ``rouge_score.rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"],
  use_stemmer=False).score(target=reference, prediction=response)`` F-measures.
* ``bleu``: ``sacrebleu`` sentence BLEU (``BLEU(effective_order=True).sentence_score``, the object
  ``sacrebleu.sentence_bleu`` builds on every call, built once here): 13a tokens, exp smoothing,
  effective order; score / 100.

    python bench/reference_programs.py {em,rouge,bleu} --input records.parquet --out ref.parquet
"""

from __future__ import annotations

import argparse
import collections
import re
import string
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

BATCH_ROWS = 65_536

#: A bracketed group of citation numbers: ``[3]``, ``[1, 2]``, ``[1; 4]`` (docs/metrics.md).
CITATION_MARKER = re.compile(r"\[\s*\d{1,9}(?:\s*[,;]\s*\d{1,9})*\s*\]")
_DIGITS = re.compile(r"\d+")


# --- the official SQuAD v2 evaluation script (evaluate-v2.0.py) -------------------------------

def normalize_answer(s: str) -> str:
    """Lower text and remove punctuation, articles and extra whitespace."""

    def remove_articles(text: str) -> str:
        regex = re.compile(r"\b(a|an|the)\b", re.UNICODE)
        return re.sub(regex, " ", text)

    def white_space_fix(text: str) -> str:
        return " ".join(text.split())

    def remove_punc(text: str) -> str:
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    def lower(text: str) -> str:
        return text.lower()

    return white_space_fix(remove_articles(remove_punc(lower(s))))


def get_tokens(s: str) -> list[str]:
    if not s:
        return []
    return normalize_answer(s).split()


def compute_exact(a_gold: str, a_pred: str) -> int:
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold: str, a_pred: str) -> float:
    gold_toks = get_tokens(a_gold)
    pred_toks = get_tokens(a_pred)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        # If either is no-answer, then F1 is 1 if they agree, 0 otherwise
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    f1 = (2 * precision * recall) / (precision + recall)
    return f1


def raw_scores(candidates: Sequence[str], a_pred: str) -> tuple[int, float]:
    """``get_raw_scores`` for one question: max EM and F1 over the gold answers."""
    gold_answers = [a for a in candidates if normalize_answer(a)]
    if not gold_answers:
        # For unanswerable questions, only correct answer is empty string
        gold_answers = [""]
    exact = max(compute_exact(a, a_pred) for a in gold_answers)
    f1 = max(compute_f1(a, a_pred) for a in gold_answers)
    return exact, float(f1)


# --- set-based citation precision / recall / F1 -----------------------------------------------

def predicted_citations(citations: list[int] | None, response: str) -> set[int]:
    """The ``citations`` list where present, else the numbers inside ``[n]`` markers."""
    if citations is not None:
        return set(citations)
    return {int(d) for marker in CITATION_MARKER.findall(response)
            for d in _DIGITS.findall(marker)}


def citation_scores(predicted: set[int], gold: list[int] | None
                    ) -> tuple[int | None, int | None, int | None,
                               float | None, float | None, float | None]:
    """(n_pred, n_gold, n_correct, precision, recall, F1); nulls without gold."""
    if gold is None:
        return None, None, None, None, None, None
    gold_set = set(gold)
    n_pred, n_gold = len(predicted), len(gold_set)
    n_correct = len(predicted & gold_set)
    precision = n_correct / n_pred if n_pred else float(n_gold == 0)
    recall = n_correct / n_gold if n_gold else float(n_pred == 0)
    f1 = 0.0 if precision + recall == 0 else (2 * precision * recall) / (precision + recall)
    return n_pred, n_gold, n_correct, precision, recall, f1


# --- the programs ------------------------------------------------------------------------------

def strip_markers(response: str) -> str:
    """The response that answer, ROUGE and BLEU scoring compare (``Paris [1].`` -> ``Paris .``)."""
    return CITATION_MARKER.sub("", response)


def em_program() -> tuple[list[str], pa.Schema, Callable[[dict[str, Any]], tuple[Any, ...]]]:
    columns = ["response", "reference", "references", "citations", "gold_citations"]
    schema = pa.schema([
        ("answer_em", pa.int8()), ("answer_f1", pa.float64()),
        ("citation_n_pred", pa.int64()), ("citation_n_gold", pa.int64()),
        ("citation_n_correct", pa.int64()), ("citation_precision", pa.float64()),
        ("citation_recall", pa.float64()), ("citation_f1", pa.float64()),
    ])

    def score(row: dict[str, Any]) -> tuple[Any, ...]:
        candidates = [row["reference"], *(row["references"] or [])]
        exact, f1 = raw_scores(candidates, strip_markers(row["response"]))
        predicted = predicted_citations(row["citations"], row["response"])
        return (exact, f1, *citation_scores(predicted, row["gold_citations"]))

    return columns, schema, score


def rouge_program() -> tuple[list[str], pa.Schema, Callable[[dict[str, Any]], tuple[Any, ...]]]:
    from rouge_score import rouge_scorer

    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False)
    schema = pa.schema([("rouge_1", pa.float64()), ("rouge_2", pa.float64()),
                        ("rouge_l", pa.float64())])

    def score(row: dict[str, Any]) -> tuple[Any, ...]:
        s = scorer.score(row["reference"], strip_markers(row["response"]))
        return s["rouge1"].fmeasure, s["rouge2"].fmeasure, s["rougeL"].fmeasure

    return ["response", "reference"], schema, score


def bleu_program() -> tuple[list[str], pa.Schema, Callable[[dict[str, Any]], tuple[Any, ...]]]:
    from sacrebleu.metrics import BLEU

    bleu = BLEU(effective_order=True)  # sentence_bleu's settings: 13a, exp smoothing
    schema = pa.schema([("bleu", pa.float64())])

    def score(row: dict[str, Any]) -> tuple[Any, ...]:
        return (bleu.sentence_score(strip_markers(row["response"]), [row["reference"]]).score
                / 100,)

    return ["response", "reference"], schema, score


PROGRAMS = {"em": em_program, "rouge": rouge_program, "bleu": bleu_program}


def rows(path: Path, columns: list[str]) -> Iterator[list[dict[str, Any]]]:
    """The records of ``path`` as lists of row dicts, one list per batch."""
    for batch in pq.ParquetFile(path).iter_batches(batch_size=BATCH_ROWS, columns=columns):
        yield batch.to_pylist()


def run(program: str, data: Path, out: Path) -> int:
    """Score every row of ``data`` with ``program``; the number of rows written to ``out``."""
    columns, metrics, score = PROGRAMS[program]()
    schema = pa.schema([pa.field("row_number", pa.int64()), *metrics])
    n = 0
    with pq.ParquetWriter(out, schema) as writer:
        for batch in rows(data, columns):
            scored = [score(row) for row in batch]
            arrays = [pa.array(range(n, n + len(batch)), pa.int64())]
            arrays += [pa.array([s[k] for s in scored], field.type)
                       for k, field in enumerate(metrics)]
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
            n += len(batch)
    return n


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("program", choices=sorted(PROGRAMS))
    parser.add_argument("--input", type=Path, required=True, help="records Parquet file")
    parser.add_argument("--out", type=Path, required=True, help="scores Parquet file")
    args = parser.parse_args(argv)
    n = run(args.program, args.input, args.out)
    print(f"{args.program}: {n} rows -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
