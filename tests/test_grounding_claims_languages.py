"""The grounding rule on the hand-labeled claims of five languages
(bench/data/claims_handwritten.jsonl, bench/bench_claims_handwritten.py): paraphrases, frames,
counterfactual, baseless and same-topic claims, each scored as a response without markers
against its one passage.

The floors are the levels this version reaches (docs/grounding.md gives the figures and the
targets): German, French and Spanish meet the 0.90 of issue 33; the hand-written English and
Chinese paraphrases are harder than the RGB claims they join.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from bench_claims_handwritten import CLAIMS, judged, scores

from pipeline.metrics.embedding.support import claim_support


@pytest.fixture(scope="module")
def claims() -> pl.DataFrame:
    return judged(pl.read_ndjson(CLAIMS))


@pytest.mark.parametrize(("lang", "floor"), [("de", 0.90), ("fr", 0.90), ("es", 0.90),
                                             ("en", 0.85), ("zh", 0.55)])
def test_accuracy_per_language(claims, lang, floor):
    got = scores(claims.filter(pl.col("lang") == lang))
    assert got["accuracy"] >= floor, got


def test_counterfactual_names_and_numbers_are_caught(claims):
    # A changed number, name, nationality or opposite word is never supported.
    caught = claims.filter(pl.col("id").is_in(["es-003", "es-014", "fr-049", "de-007"]))
    assert caught.height == 4 and not caught["said"].any(), caught.select("id", "said").rows()


def _support(claim: str, passage: str, lang: str = "en") -> tuple[bool, list[str]]:
    pairs = pl.DataFrame({"claim": [claim], "evidence": [passage], "question": [""],
                          "lang": [lang], "_row": [0]})
    stated, reasons = claim_support(pairs, tau_lex=0.5).select("stated", "reasons").row(0)
    return stated, reasons


@pytest.mark.parametrize(("claim", "passage", "lang", "stated"), [
    ("The battery lasts up to three hours.", "The battery lasts up to 180 minutes.", "en", True),
    ("The battery lasts up to 1.5 hours.", "The battery lasts up to 90 minutes.", "en", True),
    ("The battery lasts up to four hours.", "The battery lasts up to 180 minutes.", "en", False),
    ("Die Fahrt dauert 120 Minuten.", "Die Fahrt dauert zwei Stunden.", "de", True),
])
def test_durations_read_in_either_unit(claim, passage, lang, stated):
    assert _support(claim, passage, lang)[0] is stated


@pytest.mark.parametrize(("claim", "passage", "stated"), [
    # The passage ranks the superlative second: stating it outright is a different fact.
    ("2023 was the warmest year on record in Spain.",
     "2023 was the second warmest year on record in Spain.", False),
    ("2023 fue el año más cálido en España.", "2023 fue el segundo año más cálido en España.",
     False),
    # Said outright elsewhere in the passage, or ranked in the claim too: no conflict.
    ("Paris is the largest city of France.",
     "Paris is the largest city of France; Marseille is the second largest city.", True),
    ("2023 was the second warmest year in Spain.",
     "2023 was the second warmest year in Spain.", True),
    # A comparison ("más cálido que") is not a ranking.
    ("Solo 2022 fue más cálido que 2023.",
     "2023 fue el segundo año más cálido; solo 2022 fue más cálido que 2023.", True),
])
def test_a_ranked_superlative_is_not_stated_outright(claim, passage, stated):
    got, reasons = _support(claim, passage, "es" if "fue" in claim else "en")
    assert got is stated, reasons
    if not stated:
        assert any("rank" in reason for reason in reasons)


def test_a_duration_in_the_wrong_unit_is_named_as_such():
    stated, reasons = _support("The battery lasts three hours.", "The battery lasts 3 minutes.")
    assert not stated
    assert reasons == ["number 180 (a duration in the other unit) not in the passages"]
