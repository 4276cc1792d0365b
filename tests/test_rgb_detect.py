"""Lenient RGB checks: hand-built cases per phrase family, a rejection oracle, nulls."""

from __future__ import annotations

import polars as pl
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.metrics.robustness.rgb_detect import (
    CHINESE_REJECTION,
    DEFAULT_PRIMARY_REJECTIONS,
    rgb_error_detected,
    rgb_rejected,
    rgb_rejection_phrase,
)
from pipeline.rules.rgb import DEFAULT_SECONDARY_REJECTIONS

GROUPS = pl.List(pl.List(pl.String))


def rejection(responses, *, chinese=False, **kwargs):
    frame = pl.DataFrame({"r": responses}, schema={"r": pl.String})
    out = frame.select(
        rgb_rejected(pl.col("r"), chinese=chinese, **kwargs).alias("x"),
        rgb_rejection_phrase(pl.col("r"), chinese=chinese, **kwargs).alias("p"),
    )
    assert out.schema["x"] == pl.Int8
    assert out.schema["p"] == pl.String
    return out["x"].to_list(), out["p"].to_list()


def detected(responses, fakes, **kwargs):
    frame = pl.DataFrame({"r": responses, "f": fakes}, schema={"r": pl.String, "f": pl.String})
    out = frame.select(rgb_error_detected(pl.col("r"), pl.col("f"), **kwargs).alias("x"))
    assert out.schema["x"] == pl.Int8
    return out["x"].to_list()


# --- rejection -----------------------------------------------------------------------------------


def test_primary_phrases_and_first_in_list_order_is_reported():
    full = DEFAULT_PRIMARY_REJECTIONS[0]
    flags, phrases = rejection([full.upper() + ".", "We can not answer this.", "I CANNOT ANSWER"])
    assert flags == [1, 1, 1]
    # The full sentence also contains "can not answer"; the earlier list entry wins.
    assert phrases == [full, "can not answer", "cannot answer"]


def test_primary_is_reported_before_secondary():
    flags, phrases = rejection(["I don't know, so I cannot answer."])
    assert flags == [1]
    assert phrases == ["cannot answer"]


@pytest.mark.parametrize("phrase", DEFAULT_SECONDARY_REJECTIONS)
def test_each_secondary_phrase(phrase):
    flags, phrases = rejection([f"Well, {phrase.upper()} here."])
    assert flags == [1]
    assert phrases == [phrase]


def test_curly_apostrophe_and_whitespace_are_folded():
    flags, phrases = rejection(["I don’t know", "I’m  not\nsure", "I ‘m not sure"])
    assert flags == [1, 1, 0]
    assert phrases == ["i don't know", "i'm not sure", None]


def test_chinese_phrase_only_on_chinese_sets():
    text = "文档中信息不足。"
    assert rejection([text], chinese=False) == ([0], [None])
    assert rejection([text], chinese=True) == ([1], [CHINESE_REJECTION])


def test_chinese_as_a_column():
    frame = pl.DataFrame({"r": ["信息不足", "信息不足", "信息不足"], "zh": [True, False, None]})
    out = frame.select(rgb_rejected(pl.col("r"), chinese=pl.col("zh")).alias("x"))
    assert out["x"].to_list() == [1, 0, 0]


def test_configured_lists_replace_the_defaults_and_empty_phrases_are_ignored():
    kwargs = {"primary": ["No Idea"], "secondary": ["", "  "]}
    flags, phrases = rejection(["no idea at all", "I cannot answer"], **kwargs)
    assert flags == [1, 0]
    assert phrases == ["No Idea", None]


def test_no_rejection_and_nulls():
    assert rejection(["Paris is the capital.", "", None]) == ([0, 0, None], [None, None, None])


_FRAGMENTS = [
    "can not answer",
    "cannot",
    "answer",
    "i don't know",
    "I DON’T",
    "know",
    "unable to",
    "not",
    "mentioned",
    "provided",
    "信息不足",
    "信息",
    "insufficient information in documents",
    "i'm not sure",
    "does not provide",
    "no relevant",
    "paris",
    "1990",
]


def _oracle(text: str | None, phrases: list[str]) -> str | None:
    if text is None:
        return None

    def fold(s: str) -> str:
        for curly, straight in [
            ("\u2019", "'"),
            ("\u2018", "'"),
            ("\u02bc", "'"),
            ("\u201c", '"'),
            ("\u201d", '"'),
        ]:
            s = s.replace(curly, straight)
        return " ".join(s.lower().split())

    folded = fold(text)
    return next((p for p in phrases if fold(p) and fold(p) in folded), None)


# Batches of 8-25 texts (hypothesis draws lists near their minimum size): as many texts as
# before against the oracle, at a third of the polars runs.
@settings(max_examples=examples(20), deadline=None)
@given(
    texts=st.lists(
        st.one_of(
            st.none(),
            st.lists(st.sampled_from(_FRAGMENTS), max_size=5).flatmap(
                lambda parts: st.lists(
                    st.sampled_from([" ", "  ", "\n", ", ", ""]),
                    min_size=len(parts),
                    max_size=len(parts),
                ).map(lambda seps: "".join(p + s for p, s in zip(parts, seps, strict=True)))
            ),
            st.text(max_size=20),
        ),
        min_size=8,
        max_size=25,
    ),
    chinese=st.booleans(),
)
def test_rejection_matches_pure_python_oracle(texts, chinese):
    phrases = [*DEFAULT_PRIMARY_REJECTIONS, *DEFAULT_SECONDARY_REJECTIONS]
    if chinese:
        phrases.append(CHINESE_REJECTION)
    expected = [_oracle(t, phrases) for t in texts]
    flags, found = rejection(texts, chinese=chinese)
    assert found == expected
    assert flags == [
        None if t is None else int(p is not None) for t, p in zip(texts, expected, strict=True)
    ]


# --- error detection -----------------------------------------------------------------------------


def test_error_keywords_match_whole_words_only():
    responses = [
        "There is an ERROR in the document.",
        "The terror attack happened in 1990.",
        "The documents contain errors.",
        "That claim is not true.",
        "Actually, it was 2004.",
        "The answer should be 2004.",
        "It happened in 1990.",
    ]
    assert detected(responses, ["1990"] * len(responses)) == [1, 0, 0, 1, 1, 1, 0]


def test_error_by_fake_answer_forms():
    responses = ["It was not Paris but Lyon.", "PARIS is wrong.", "Paris it is.", "Not Paris!"]
    assert detected(responses, ["Paris"] * 4, keywords=[]) == [1, 1, 0, 1]


def test_fake_answer_is_folded_and_null_or_empty_fake_disables_only_those_forms():
    assert detected(["It’s not  Don’t   Stop"], ["don't stop"], keywords=[]) == [1]
    assert detected(["not paris", "not paris, wrong"], [None, ""]) == [0, 1]


def test_error_detection_null_response():
    assert detected([None, "wrong"], ["x", None]) == [None, 1]
