"""Citation P/R/F1, marker parsing and abstention metrics: golden rows and oracle properties."""

from __future__ import annotations

import polars as pl
import pytest
from conftest import examples, records
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import citation_prf, parse_markers

from pipeline.config import Config
from pipeline.metrics.qa.citation import parse_citation_markers
from pipeline.scoring import score_frame


def run(rows, metrics=("citation", "abstention"), **config):
    return score_frame(records(rows), Config(metrics=metrics, **config)).collect()


@pytest.mark.parametrize(
    ("pred", "gold", "expected"),
    [
        ([], [], (1.0, 1.0, 1.0)),
        ([1], [], (0.0, 0.0, 0.0)),
        ([], [1], (0.0, 0.0, 0.0)),
        ([1, 2], [2, 3], (0.5, 0.5, 0.5)),
        ([1, 1, 2], [1], (0.5, 1.0, 2 / 3)),
        ([3], [1, 2], (0.0, 0.0, 0.0)),
        ([1, 2, 3], [1, 2, 3], (1.0, 1.0, 1.0)),
    ],
)
def test_citation_golden(pred, gold, expected):
    out = run([{"reference": "r", "response": "x", "citations": pred, "gold_citations": gold}])
    got = (out["citation_precision"].item(), out["citation_recall"].item(),
           out["citation_f1"].item())
    assert got == pytest.approx(expected, abs=1e-12)


def test_citation_counts_and_missing_gold():
    out = run([
        {"reference": "r", "response": "a [1] b [2][2]", "gold_citations": [2, 5]},
        {"reference": "r", "response": "a [1]", "gold_citations": None},
    ])
    assert out["citation_n_pred"].to_list() == [2, None]
    assert out["citation_n_gold"].to_list() == [2, None]
    assert out["citation_n_correct"].to_list() == [1, None]
    assert out["citation_f1"].to_list()[1] is None


def test_markers_used_only_when_citations_column_is_null():
    out = run([
        {"reference": "r", "response": "see [1]", "citations": [2], "gold_citations": [2]},
        {"reference": "r", "response": "see [1]", "citations": None, "gold_citations": [2]},
        {"reference": "r", "response": "see [1]", "citations": [], "gold_citations": []},
    ])
    assert out["citation_precision"].to_list() == [1.0, 0.0, 1.0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Paris [1].", [1]),
        ("Paris [1][3] and [1, 2]", [1, 3, 2]),
        ("[ 4 ; 5 ]", [4, 5]),
        ("no markers [a] [] [1.5]", []),
        ("", []),
    ],
)
def test_parse_markers(text, expected):
    assert pl.select(parse_citation_markers(pl.lit(text))).item().to_list() == expected


# Each example scores a whole batch of rows (a run costs about 0.3 s whatever its size): 25
# batches of 30-80 rows cover as many (cited, gold) pairs as 200 batches of 10 did (hypothesis
# draws lists near their minimum size, so the minimum sets the batch).
@settings(max_examples=examples(25), deadline=None)
@given(st.lists(st.tuples(
    st.lists(st.integers(1, 6), max_size=5), st.lists(st.integers(1, 6), max_size=5)
), min_size=30, max_size=80))
def test_citation_metrics_equal_oracle(pairs):
    out = run([{"reference": "r", "response": "", "citations": p, "gold_citations": g}
               for p, g in pairs], metrics=("citation",))
    for (p, g), prec, rec, f1 in zip(pairs, out["citation_precision"], out["citation_recall"],
                                     out["citation_f1"], strict=True):
        assert (prec, rec, f1) == pytest.approx(citation_prf(p, g), abs=1e-12)


marker_text = st.lists(
    st.sampled_from(["[1]", "[2, 3]", "[ 4;5 ]", "[x]", "[]", "a", " ", ".", "[", "]", "7", ","]),
    max_size=12,
).map("".join)


@settings(max_examples=examples(55), deadline=None)
@given(st.lists(marker_text, min_size=10, max_size=30))
def test_marker_parsing_equals_oracle(texts):
    frame = pl.DataFrame({"t": texts}, schema={"t": pl.String})
    parsed = frame.select(parse_citation_markers(pl.col("t"))).to_series().to_list()
    assert [list(p) for p in parsed] == [parse_markers(t) for t in texts]


def test_abstention_flags():
    rows = [
        {"reference": "It is not mentioned in the document.", "response": "I don\u2019t know."},
        {"reference": "It is not mentioned in the document.", "response": "Paris."},
        {"reference": "Paris", "response": "I DON'T   KNOW", "question_type": "fact"},
        {"reference": "Paris", "response": "Paris", "question_type": "impossible"},
        {"reference": "insufficient context", "response": "Insufficient context."},
        {"reference": "Insufficient context", "response": "It is Paris [1]."},
        {"reference": "x", "response": "I can not answer the question because of the "
                                       "insufficient information in documents"},
    ]
    out = run(rows, metrics=("abstention",))
    assert out["abstained"].to_list() == [1, 0, 1, 0, 1, 0, 1]
    # the insufficient-context token is an abstention reference too: those rows are unanswerable
    assert out["unanswerable"].to_list() == [1, 1, 0, 1, 1, 1, 0]
    assert out["abstention_correct"].to_list() == [1, 0, None, 0, 1, 0, None]
    assert out["insufficient_context_detected"].to_list() == [None] * 4 + [1, 0, None]


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("I don't know [2].", 1),
        ("I don't know. [2]", 1),
        ("I don't know. Paris is in France [2].", 0),
        ("Paris [1]. I don't know the year.", 0),
        ("It is not mentioned in the document [1][3]", 1),
        ("I don't know.", 0),
    ],
)
def test_idk_with_citation(response, expected):
    out = run([{"reference": "r", "response": response}], metrics=("idk_with_citation",))
    assert out["idk_with_citation"].item() == expected


def test_custom_phrases_and_reference_token():
    rows = [{"reference": "N/A", "response": "No idea, sorry."},
            {"reference": "N/A", "response": "It is not mentioned in the document."}]
    out = run(rows, metrics=("abstention",), abstention_phrases=("no idea",),
              abstention_reference="N/A")
    # a configured phrase adds to the refusal rule, which reads the second row (issue 34)
    assert out["abstained"].to_list() == [1, 1]
    assert out["abstention_correct"].to_list() == [1, 1]
    # without the rule the phrases alone decide, as before
    out = run(rows, metrics=("abstention",), abstention_phrases=("no idea",),
              abstention_reference="N/A", abstention_rules=False)
    assert out["abstained"].to_list() == [1, 0]
    assert out["abstention_correct"].to_list() == [1, 0]
