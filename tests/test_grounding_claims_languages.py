"""The grounding rule on the hand-labeled claims of five languages
(bench/data/claims_handwritten.jsonl, bench/bench_claims_handwritten.py): paraphrases, frames,
counterfactual, baseless and same-topic claims, each scored as a response without markers
against its one passage.

The floors are the levels this version reaches (docs/grounding.md gives the figures and the
targets): German and French meet the 0.90 of issue 33, Spanish does not yet (0.88), and the
hand-written English and Chinese paraphrases are harder than the RGB claims they join.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from bench_claims_handwritten import CLAIMS, judged, scores


@pytest.fixture(scope="module")
def claims() -> pl.DataFrame:
    return judged(pl.read_ndjson(CLAIMS))


@pytest.mark.parametrize(("lang", "floor"), [("de", 0.90), ("fr", 0.90), ("es", 0.86),
                                             ("en", 0.85), ("zh", 0.55)])
def test_accuracy_per_language(claims, lang, floor):
    got = scores(claims.filter(pl.col("lang") == lang))
    assert got["accuracy"] >= floor, got


def test_counterfactual_names_and_numbers_are_caught(claims):
    # A changed number, name, nationality or opposite word is never supported.
    caught = claims.filter(pl.col("id").is_in(["es-003", "es-014", "fr-049", "de-007"]))
    assert caught.height == 4 and not caught["said"].any(), caught.select("id", "said").rows()
