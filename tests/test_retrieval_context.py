"""The context metrics: ALCE's STR-EM against its scorer's definition, the answer-in-context
test and rank, and the failure stage (docs/retrieval.md)."""

from __future__ import annotations

import numpy as np
import polars as pl
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import normalize_answer

from pipeline.metrics.retrieval.context import answer_positions, answer_str_em


def alce_str_em(short_answers: list[str], output: str) -> float:
    """ALCE's compute_str_em for one item whose qa_pairs each hold one short answer
    (exact_presence: a normalized answer is a substring of the normalized output)."""
    context = normalize_answer(output)
    return float(np.mean([normalize_answer(answer) in context for answer in short_answers]))


WORDS = ["the", "Eiffel", "Tower", "1889", "Paris", "a", "built", "in", "1,889", "an",
         "tower's", "Gustave", "é", "Straße", "-", "."]
text = st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.tuples(text, st.lists(text, min_size=1, max_size=4)), min_size=1,
                max_size=40))
def test_answer_str_em_equals_alce(rows):
    frame = pl.DataFrame(
        {"response": [r for r, _ in rows], "reference": [a[0] for _, a in rows],
         "references": [a[1:] for _, a in rows]},
        schema={"response": pl.String, "reference": pl.String, "references": pl.List(pl.String)})
    got = answer_str_em(frame).to_list()
    assert got == [alce_str_em(answers, response) for response, answers in rows]


def test_answer_str_em_long_answer_and_edges():
    frame = pl.DataFrame({
        "response": ["The Eiffel Tower was completed in 1889 for the World's Fair.", "Paris",
                     None],
        "reference": ["1889", None, "1889"],
        "references": [["March 1889", "Gustave Eiffel"], None, None],
    })
    got = answer_str_em(frame).to_list()
    # One of three answers ("1889") is in the long response; no answer: null; no response: 0.
    assert got == [1 / 3, None, 0.0]


def test_answer_in_context_reads_whole_words_and_ranks():
    frame = pl.DataFrame({
        "contexts": [["It opened in 18890.", "It opened in 1889."], ["北京是中国的首都。"],
                     ["The Tower is tall."], [], ["An answer: The Eiffel Tower!"]],
        "reference": ["1889", "北京", "Eiffel", "x", "Eiffel Tower"],
        "references": [None, None, ["tower"], None, None],
        "lang": ["en", "zh", "en", "en", "en"],
    })
    assert answer_positions(frame).rows() == [(1, 2), (1, 1), (1, 1), (None, None), (1, 1)]
