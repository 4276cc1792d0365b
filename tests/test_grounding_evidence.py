"""The default grounding rule ``evidence`` (docs/grounding.md) on hand-written RAG answers, a
property against verbatim quotes, and the labeled RGB claims of bench/bench_grounding.py.

The embedding backend is the hashed one (deterministic, no model): the decisions below are
carried by the lexical evidence, which is the point of the rule.
"""

from __future__ import annotations

import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.config import Config
from pipeline.embed import CachedEmbedder, EmbeddingCache, HashedNgramBackend
from pipeline.metrics.embedding.grounding import grounding_counts
from pipeline.metrics.embedding.support import claim_support

ROOT = Path(__file__).resolve().parents[1]
RGB_DIR = ROOT.parent / "shared" / "data" / "rgb"

CHARGER = (
    "The X200 scooter ships with a standard charger. A full charge takes 4.5 hours with the "
    "standard charger and 2 hours with the fast charger. The battery lasts about 40 km."
)
SIZES = ("Fit advice: for a 95 cm chest the brand recommends size L, which fits loosely; size M "
         "fits a 90 cm chest.")
SUPER_BOWL = (
    "The game was played on February 7, 2021, at Raymond James Stadium in Tampa, Florida, the "
    "home stadium of the Buccaneers."
)
SAME_TOPIC = (
    "Official Super Bowl LVIII ticket packages are now available. Reserve your spot in Las "
    "Vegas for Super Bowl LVIII."
)
COUNTERFACTUAL = SUPER_BOWL.replace("Tampa, Florida", "Glendale, Arizona")


def judge(rows: list[dict], **kwargs) -> pl.DataFrame:
    frame = pl.DataFrame(
        [{"response": r["response"], "contexts": r["contexts"],
          "question": r.get("question")} for r in rows],
        schema={"response": pl.String, "contexts": pl.List(pl.String), "question": pl.String},
    )
    embedder = CachedEmbedder(HashedNgramBackend(), EmbeddingCache(None))
    return grounding_counts(frame, embedder, **kwargs)


def one(response: str, contexts: list[str], question: str | None = None) -> dict:
    return judge([{"response": response, "contexts": contexts, "question": question}]).row(
        0, named=True)


def test_near_verbatim_sentence_is_supported():
    # The case: judged unsupported by the whole-passage cosine at 0.65.
    row = one("A full charge takes 4.5 hours with the standard charger [1].", [CHARGER])
    assert (row["n_sentences"], row["n_supported"], row["unsupported"]) == (1, 1, [])


def test_paraphrase_with_the_facts_is_supported():
    row = one("With the standard charger, charging fully takes 4.5 hours [1].", [CHARGER],
              "How long does charging take?")
    assert row["n_supported"] == 1


def test_a_wrong_number_is_named():
    row = one("A full charge takes 6 hours with the standard charger [1].", [CHARGER])
    assert row["n_supported"] == 0
    assert row["unsupported"] == [
        '"A full charge takes 6 hours with the standard charger [1]." — number 6 not in the '
        "passages"
    ]


def test_a_wrong_size_recommendation_is_unsupported():
    row = one("For a 95 cm chest we recommend size XL [1].", [SIZES],
              "Which size should I buy for a 95 cm chest?")
    assert row["n_supported"] == 0
    assert row["unsupported"] == [
        '"For a 95 cm chest we recommend size XL [1]." — "XL" not in the passages'
    ]
    assert one("For a 95 cm chest we recommend size L [1].", [SIZES],
               "Which size should I buy for a 95 cm chest?")["n_supported"] == 1


def test_relations_between_found_values_are_not_checked():
    # A documented limit (docs/grounding.md): every value of the claim is in the passage, but
    # the passage ties them differently (XL is for a 98 cm chest, not 95 cm).
    passage = "Chest 92-97 cm: size L. Chest 98-104 cm: size XL."
    row = one("For a 97 cm chest take size XL [1].", [passage])
    assert row["n_supported"] == 1


def test_same_topic_passage_does_not_support():
    row = one("Super Bowl LV was played in Tampa, Florida [1].", [SAME_TOPIC],
              "Super Bowl 2021 location")
    assert row["n_supported"] == 0
    [reason] = row["unsupported"]
    assert '"Tampa" not in the passages; "Florida" not in the passages' in reason


def test_counterfactual_passage_does_not_support():
    claim = "The game was played at Raymond James Stadium in Tampa, Florida [1]."
    assert one(claim, [SUPER_BOWL])["n_supported"] == 1
    row = one(claim, [COUNTERFACTUAL], "Super Bowl 2021 location")
    assert row["n_supported"] == 0
    assert row["unsupported"] == [
        f'"{claim}" — "Tampa" not in the passages; "Florida" not in the passages']


def test_every_reason_of_every_sentence_is_listed():
    # An abstention is not a claim; a sentence citing two passages is read against both.
    response = ("I don't know. It has 3 moons [2]. In 1900 Paris hosted it [1]. "
                "Mars has 5 moons [1][2].")
    row = one(response, ["London hosted the games in 1908.", "Mars has 2 moons."])
    assert row["n_sentences"] == 3 and row["n_supported"] == 0
    assert row["first_unsupported"] == "It has 3 moons [2]."
    assert row["unsupported"][:2] == [
        '"It has 3 moons [2]." — number 3 not in the passages',
        '"In 1900 Paris hosted it [1]." — number 1900 not in the passages; "Paris" not in '
        "the passages; low overlap: 33% of its words in the passages, 1 specific words missing",
    ]
    assert row["unsupported"][2] == '"Mars has 5 moons [1][2]." — number 5 not in the passages'


def test_a_sentence_of_markers_only_is_no_claim():
    row = one("Paris is in France [1].\n[1]", ["Paris is in France."])
    assert (row["n_sentences"], row["n_supported"], row["unsupported"]) == (1, 1, [])


def test_citing_a_passage_that_does_not_exist():
    # Supported by the row's passage: a citation error, not a hallucination.
    row = one("Paris is in France [3].", ["Paris is in France."])
    assert (row["n_supported"], row["n_misattributed"], row["unsupported"]) == (1, 1, [])


def test_citing_the_wrong_passage_is_a_citation_error():
    row = one("Paris is in France [2].", ["Paris is in France.", "Mars has 2 moons."])
    assert (row["n_supported"], row["n_misattributed"], row["supported_by"]) == (1, 1, [1])


def test_question_words_count_as_given():
    # The claim restates the question; what it adds (the answer) is what must be in the passage.
    row = one("Who acquired Instagram: Facebook [1].",
              ["In 2012 Facebook bought the photo app for $1 billion."], "Who acquired Instagram?")
    assert row["n_supported"] == 1
    row = one("Who acquired Instagram: Apple [1].",
              ["In 2012 Facebook bought the photo app for $1 billion."], "Who acquired Instagram?")
    assert row["n_supported"] == 0


def test_chinese_characters_are_evidence():
    passage = "第六届立法会共有70个议席，经2016年9月4日的选举产生。林郑月娥为第五任行政长官。"
    assert one("第六届立法会共有70个议席[1]。", [passage])["n_supported"] == 1
    wrong = one("第六届立法会共有170个议席[1]。", [passage])
    assert wrong["n_supported"] == 0 and "number 170 not in the passage" in wrong["unsupported"][0]
    swapped = one("梁振英为第五任行政长官[1]。", [passage], "香港第五任行政长官？")
    assert swapped["n_supported"] == 0
    assert swapped["unsupported"] == [
        '"梁振英为第五任行政长官[1]。" — "梁振英" not in the passages; low overlap: 25% of its '
        "words in the passages, 0 specific words missing"]


def test_no_passage_means_grounding_does_not_apply():
    out = judge([{"response": "Paris [1].", "contexts": None},
                 {"response": "Paris [1].", "contexts": []}])
    assert out["unsupported"].to_list() == [None, None]
    assert out["first_unsupported"].to_list() == [None, None]


def test_claim_support_numbers_are_whole_numbers():
    pairs = pl.DataFrame({"claim": ["It has 70 seats.", "It grew 2.3%.", "1,361 jobs."],
                          "evidence": ["It has 170 seats.", "It grew 12.3% or 2.3%.",
                                       "1361 jobs"],
                          "question": [None, None, None], "lang": ["en"] * 3, "_row": [0, 1, 2]},
                         schema_overrides={"question": pl.String})
    reasons = claim_support(pairs, tau_lex=0.5)["reasons"].to_list()
    assert reasons == [["number 70 not in the passages"], [], []]


def test_claim_support_of_no_pairs_has_the_columns_of_some():
    pairs = pl.DataFrame({"claim": ["It has 70 seats."], "evidence": ["It has 70 seats."],
                          "question": [None], "lang": ["en"], "_row": [0]},
                         schema_overrides={"question": pl.String})
    some = claim_support(pairs, tau_lex=0.5)
    none = claim_support(pairs.clear(), tau_lex=0.5)
    assert some["stated"].to_list() == [True]
    assert none.height == 0 and none.schema == some.schema


quoted_words = st.lists(
    st.sampled_from(["Tampa", "stadium", "hosted", "2021", "the", "game", "Florida", "7",
                     "February", "buccaneers", "played", "at", "香港", "议席", "70", "共有"]),
    min_size=1, max_size=12,
)
other_words = st.lists(st.sampled_from(["Glendale", "ticket", "Vegas", "1999", "of", "a"]),
                       max_size=8)


# 5-15 rows judged in one run per example: ~100 quoted claims, at a fifth of the runs.
@settings(max_examples=examples(12), deadline=None)
@given(st.lists(st.tuples(quoted_words, other_words), min_size=5, max_size=15))
def test_a_sentence_quoted_from_its_passage_is_supported(cases):
    # Property: whatever words a passage holds, a claim that copies a run of them, cited, is
    # supported (nothing it says is missing from the passage).
    rows = [{"response": f"{' '.join(words)} [1].",
             "contexts": [" ".join([*others, *words, *others]) + "."]} for words, others in cases]
    for case, row in zip(cases, judge(rows).iter_rows(named=True), strict=True):
        # A claim of stopwords only asserts nothing (no claim); any other is supported.
        assert row["n_sentences"] in (0, 1), case
        assert row["n_supported"] == row["n_sentences"], (case, row["unsupported"])


def test_default_rule_and_thresholds_are_in_the_signature():
    assert "ground:evidence-v2|lex:0.5|" in Config().signature()
    assert "ground:" not in Config(compat_preset="core-rag").signature()
    assert Config(compat_preset="core-rag").grounding_rule == "cosine"
    assert Config(tau_lex=0.7).signature() != Config().signature()


@pytest.mark.skipif(not (RGB_DIR / "en_fact.json").exists(),
                    reason=f"RGB data folder {RGB_DIR} is absent (see the README)")
def test_rgb_claims_slice_meets_the_targets():
    # A slice of bench/bench_grounding.py: 15 claims per (language, condition), static backend.
    sys.path.insert(0, str(ROOT / "bench"))
    from bench_grounding import decisions, scores
    from grounding_claims import labeled_claims, slice_claims

    claims = slice_claims(labeled_claims(RGB_DIR), 15)
    supported = decisions(claims, "static", "evidence")
    for lang in ("en", "zh"):
        mask = (claims["lang"] == lang).to_numpy()
        got = scores(claims.filter(mask), supported[mask])
        assert got["accuracy"] >= 0.95, (lang, got)
        assert got["counterfactual_supported"] <= 0.10, (lang, got)
