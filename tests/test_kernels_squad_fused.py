"""The fused answer EM/F1 path (``answer.answer_scores``, kernel ``squad_em_f1``) against the
official SQuAD v2 script.

Under ``[answer] scorer = "squad-v2"`` answer EM/F1 of pure ASCII rows come from one compiled
kernel over the texts' buffers; rows holding any non-ASCII text (response, reference or an
alternative) go through the token expressions. The oracle is tests/oracles.py
(``squad_scores``: ``get_raw_scores``' maximum over the gold answers), on batches that mix both
kinds of rows, null and empty candidates, null responses and long token lists (the hash path).
"""

from __future__ import annotations

import polars as pl
from conftest import examples, records
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import squad_scores

from pipeline.config import Config
from pipeline.metrics.qa.answer import _scores_by_tokens, answer_scores
from pipeline.scoring import score_frame

ASCII = [
    "a", "an", "the", "The", "cat", "Cat.", "dog", "x", "x-y", "a-n", "t.h.e", "!", "",
    " ", "\t", "_", "it's", "42", "\x1c",
]
UNICODE = ["é", "ΟΔΟΣ", "北", "\u00a0", "\u3000", "İ", "ß", "\u212a", "\u2014", "café"]
ascii_text = st.lists(st.sampled_from(ASCII), max_size=12).map(" ".join)
long_text = st.lists(st.sampled_from(["cat", "dog", "x", "the", "y", "z"]),
                     min_size=9, max_size=40).map(" ".join)
mixed_text = st.lists(st.sampled_from(ASCII + UNICODE), max_size=8).map(" ".join)
text = ascii_text | long_text | mixed_text | st.characters(max_codepoint=0x7F)
row = st.tuples(
    st.none() | text,  # reference
    st.none() | st.lists(st.none() | text, max_size=4),  # references
    st.none() | text,  # response
)


def _score(rows: list[tuple[str | None, list[str | None] | None, str | None]]) -> pl.DataFrame:
    frame = records([{"reference": g, "references": refs, "response": p} for g, refs, p in rows])
    config = Config(metrics=("answer_em", "answer_f1"), strip_citation_markers=False,
                    answer_scorer="squad-v2")
    return score_frame(frame, config).collect()


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(row, min_size=1, max_size=30))
def test_fused_em_f1_equal_official_script(rows):
    out = _score(rows)
    for (reference, references, response), em, f1 in zip(
        rows, out["answer_em"], out["answer_f1"], strict=True
    ):
        if response is None:
            assert em is None and f1 is None
            continue
        golds = [g for g in [reference, *(references or [])] if g is not None]
        expected_em, expected_f1 = squad_scores(golds, response)
        assert em == expected_em, (golds, response)
        assert f1 == float(expected_f1), (golds, response)  # bit-for-bit


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(row, min_size=1, max_size=20), st.integers(1, 4))
def test_kernel_equals_token_expressions_with_fewer_candidates(rows, n_candidates):
    """Only the first ``n_candidates - 1`` alternatives count, on both paths alike."""
    frame = pl.DataFrame(
        {"response": [r[2] for r in rows], "reference": [r[0] for r in rows],
         "references": [r[1] for r in rows]},
        schema={"response": pl.String, "reference": pl.String,
                "references": pl.List(pl.String)},
    )
    fused = frame.select(
        answer_scores(pl.col("response"), pl.col("reference"), pl.col("references"),
                      n_candidates).struct.unnest()
    )
    assert fused.equals(_scores_by_tokens(frame, n_candidates))


def test_empty_and_null_candidates():
    rows = [
        ("", ["", None], ""),  # every candidate empty: scored against "", response empty
        ("the", None, "cat"),  # reference normalizes to empty: against "", response not
        (None, None, "a"),  # no candidate, response normalizes to empty
        ("", ["Cat!"], "the cat"),  # the empty reference is skipped
        ("café", ["cat"], "cat"),  # a non-ASCII candidate: the token expressions
    ]
    out = _score(rows)
    assert out["answer_em"].to_list() == [1, 0, 1, 1, 1]
    assert out["answer_f1"].to_list() == [1.0, 0.0, 1.0, 1.0, 1.0]


def test_empty_batch():
    frame = pl.DataFrame(schema={"response": pl.String, "reference": pl.String,
                                 "references": pl.List(pl.String)})
    out = frame.select(answer_scores(pl.col("response"), pl.col("reference"),
                                     pl.col("references"), 3))
    assert out.height == 0
