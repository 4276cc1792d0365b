"""Sentence splitter: golden cases and properties (nothing lost, separately written sentences
come back apart)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.text.sentences import split_sentences

_GOLDEN_FILE = Path(__file__).parent / "golden" / "sentences_cases.jsonl"
GOLDEN = [json.loads(line) for line in _GOLDEN_FILE.read_text().splitlines() if line.strip()]


def split(texts: list[str | None]) -> list[list[str] | None]:
    frame = pl.DataFrame({"text": texts}, schema={"text": pl.String})
    return frame.select(split_sentences(pl.col("text"))).to_series().to_list()


@pytest.mark.parametrize("case", GOLDEN, ids=[c["note"] for c in GOLDEN])
def test_golden(case):
    assert split([case["text"]]) == [case["sentences"]]


def test_golden_as_one_column():
    assert split([c["text"] for c in GOLDEN]) == [c["sentences"] for c in GOLDEN]


def test_null_and_dtype():
    frame = pl.DataFrame({"text": [None, "", "A. B"]}, schema={"text": pl.String})
    out = frame.select(split_sentences(pl.col("text")))
    assert out.schema["text"] == pl.List(pl.String)
    assert out.to_series().to_list() == [None, [], ["A. B"]]


def test_private_use_input_characters_are_dropped():
    assert split(["Paris\U000f0a02 is big. It\U000f0a01 is."]) == [["Paris is big.", "It is."]]


@settings(max_examples=examples(200), deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aB3. !?\n[]1,\"'()…")), max_size=60))
def test_no_character_lost(text):
    [pieces] = split([text])
    assert all(p and p == p.strip() for p in pieces)
    assert re.sub(r"\s", "", "".join(pieces)) == re.sub(r"\s", "", text)


# Letters that spell no listed abbreviation; words of two letters or more are never initials.
_WORD = st.text(alphabet="bdghknuwy", min_size=2, max_size=6)
_SENTENCE = st.tuples(
    st.lists(_WORD, min_size=1, max_size=5),
    st.sampled_from([".", "!", "?", "?!"]),
    st.sampled_from(["", " [1]", "[2][3]", " [1, 2]"]),
).map(lambda t: " ".join([t[0][0].capitalize(), *t[0][1:]]) + t[1] + t[2])


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(_SENTENCE, min_size=1, max_size=6), st.sampled_from([" ", "  ", "\n", " \n "]))
def test_written_sentences_come_back(sentences, gap):
    assert split([gap.join(sentences)]) == [sentences]


# --- CJK: terminals end sentences without whitespace (rule 2) ---------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("北京是首都[1]。上海很大[2]。", ["北京是首都[1]。", "上海很大[2]。"]),
        ("北京是首都。[1]上海很大。[2][3]", ["北京是首都。[1]", "上海很大。[2][3]"]),
        ("北京是首都。 [1, 2] 上海很大", ["北京是首都。 [1, 2]", "上海很大"]),
        ("真的吗？！不是。", ["真的吗？！", "不是。"]),
        ("他说：“好！”[3]然后走了。", ["他说：“好！”[3]", "然后走了。"]),
        ("「行こう。」と言った。", ["「行こう。」", "と言った。"]),
        ("（注意！）下一个【重要。】再见", ["（注意！）", "下一个【重要。】", "再见"]),
        ("東京は首都です｡大阪は大きい｡", ["東京は首都です｡", "大阪は大きい｡"]),
        # The fullwidth full stop ends a sentence, but not as a decimal point.
        ("これはペンである．それは本である．", ["これはペンである．", "それは本である．"]),
        ("価格は３．５円です。次", ["価格は３．５円です。", "次"]),
        ("第1．2节", ["第1．2节"]),
        ("数字3.5。下一句", ["数字3.5。", "下一句"]),
        ("Paris is big。 It is old.", ["Paris is big。", "It is old."]),
        ("北京是首都。\n上海很大", ["北京是首都。", "上海很大"]),
        # ASCII terminals still need whitespace and a capital, digit or opener after them.
        ("Yes!北京。", ["Yes!北京。"]),
        ("。。。", ["。。。"]),
    ],
)
def test_cjk_terminals(text, expected):
    assert split([text]) == [expected]


_HAN = st.text(alphabet="北京上海首都是很大的东", min_size=1, max_size=6)
_CJK_SENTENCE = st.tuples(
    _HAN,
    st.sampled_from(["", "[1]", "[2][3]", "[1, 2]"]),
    st.sampled_from(["。", "！", "？", "？！", "．", "｡"]),
    st.sampled_from(["", "」", "”", "）", "】"]),
    st.sampled_from(["", "[1]", " [4]"]),
).map("".join)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(_CJK_SENTENCE, min_size=1, max_size=6), st.sampled_from(["", " ", "\n"]))
def test_cjk_sentences_come_back_without_spaces(sentences, gap):
    assert split([gap.join(sentences)]) == [sentences]


@settings(max_examples=examples(200), deadline=None)
@given(st.text(alphabet=st.sampled_from(list("北a3.。！？．｡」”[]1 \n０")), max_size=60))
def test_no_character_lost_in_cjk_text(text):
    [pieces] = split([text])
    assert all(p and p == p.strip() for p in pieces)
    assert re.sub(r"\s", "", "".join(pieces)) == re.sub(r"\s", "", text)
