"""Answers as RAG systems write them: hand-written RAGAS rows without citation markers.

``tests/golden/ragas_rows.jsonl`` (README beside it) holds 29 rows in the RAGAS layout
(``question``, ``answer``, ``contexts``, ``ground_truth``): faithful paraphrases, extractive and
long answers, and answers with a wrong number, a wrong name or an added claim. They are read
through the CLI's own layout detection (``pipeline.score`` on the file) with the defaults.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

import pipeline

ROWS = Path(__file__).resolve().parent / "golden" / "ragas_rows.jsonl"


@pytest.fixture(scope="module")
def scored() -> pl.DataFrame:
    rows = [json.loads(line) for line in ROWS.read_text().splitlines() if line.strip()]
    result = pipeline.score(ROWS, metrics=["hallucination", "faithfulness",
                                           "unsupported_sentences", "n_sentences"])
    assert result.rejected.height == 0
    scores = result.scores.sort("row_number")
    return pl.DataFrame(rows).with_columns(
        scores["hallucination"], scores["faithfulness"], scores["unsupported_sentences"],
        scores["n_sentences"],
    )


def test_every_hallucinated_row_is_flagged(scored):
    missed = scored.filter(pl.col("hallucinated") & (pl.col("hallucination") != 1))
    assert missed.is_empty(), missed.select("kind", "answer").rows()


def test_at_most_one_faithful_row_is_flagged(scored):
    flagged = scored.filter(~pl.col("hallucinated") & (pl.col("hallucination") == 1))
    assert flagged.height <= 1, flagged.select("answer", "unsupported_sentences").rows()


def test_faithfulness_separates_the_rows(scored):
    # RAGAS's definition: the share of supported claims, so a faithful answer scores 1 and an
    # answer with an unsupported claim below 1; not a constant (the old 0.6 floor).
    faithful = scored.filter(~pl.col("hallucinated"))["faithfulness"]
    hallucinated = scored.filter(pl.col("hallucinated"))["faithfulness"]
    assert (faithful == 1.0).sum() >= faithful.len() - 1
    assert (hallucinated < 1.0).all()
    assert hallucinated.min() < 0.6


def test_no_sentence_needs_a_marker(scored):
    reasons = scored["unsupported_sentences"].explode().drop_nulls()
    assert not reasons.str.contains("no citation").any()
    assert (scored["n_sentences"] > 0).all()
