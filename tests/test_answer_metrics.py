"""Answer EM/F1 parity with the official SQuAD v2 script: golden rows and property tests."""

from __future__ import annotations

import itertools
import json
import re
import string
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from conftest import examples, records
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import normalize_answer, squad_scores, strict_exact

from pipeline.config import Config
from pipeline.metrics.qa.answer import multiset_overlap
from pipeline.scoring import score_frame
from pipeline.text.charclasses import lowercase_mismatches, space_class, word_class
from pipeline.text.normalize import (
    ascii_lower_remove_punctuation,
    collapse_whitespace,
    python_lower,
    squad_normalize,
)
from pipeline.text.tokenize import squad_tokens, squad_tokens_ascii, squad_tokens_unicode

GOLDEN = Path(__file__).parent / "golden" / "squad_adversarial.jsonl"
ANSWER_METRICS = ("answer",)


def score(golds: list[list[str]], preds: list[str], *, strip: bool = False) -> pl.DataFrame:
    """Answer metrics by the SQuAD v2 rules on every row (``[answer] scorer = "squad-v2"``:
    under the default ``auto`` a row of another script is scored by MLQA's rules, see
    test_mlqa.py); marker stripping is off so the raw text is compared with the script."""
    rows = [
        {"reference": g[0], "references": g[1:] or None, "response": p}
        for g, p in zip(golds, preds, strict=True)
    ]
    config = Config(metrics=ANSWER_METRICS, strip_citation_markers=strip,
                    answer_scorer="squad-v2")
    return score_frame(records(rows), config).collect()


def golden_rows() -> list[dict]:
    return [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()]


def test_golden_rows_match_expected_and_oracle():
    rows = golden_rows()
    out = score([r["references"] for r in rows], [r["prediction"] for r in rows])
    for row, em, f1, strict in zip(
        rows, out["answer_em"], out["answer_f1"], out["answer_em_strict"], strict=True
    ):
        assert (em, strict) == (row["em"], row["em_strict"]), row["note"]
        assert f1 == pytest.approx(row["f1"], abs=1e-12), row["note"]
        # The oracle (official script) agrees with the committed golden values.
        assert squad_scores(row["references"], row["prediction"]) == (
            row["em"], pytest.approx(row["f1"], abs=1e-12)
        )


@pytest.mark.parametrize(
    ("reference", "prediction", "em", "f1"),
    [
        ("insufficient context", "insufficient context", 1, 1.0),
        ("Paris", "Paris, France", 0, 2 / 3),
        ("cat cat cat", "cat", 0, 0.5),
        ("x x y", "x y y", 0, 2 / 3),
        ("the", "", 1, 1.0),
        ("Paris", "", 0, 0.0),
    ],
)
def test_hand_computed_values(reference, prediction, em, f1):
    out = score([[reference]], [prediction])
    assert out["answer_em"].item() == em
    assert out["answer_f1"].item() == pytest.approx(f1, abs=1e-15)


def test_citation_markers_are_stripped_before_answer_metrics():
    golds, preds = [["Paris"], ["Paris"], ["x [1]"]], ["Paris [1].", "Paris [1, 2][3]", "x"]
    stripped = score(golds, preds, strip=True)
    assert stripped["answer_em"].to_list() == [1, 1, 0]  # references keep their text
    assert stripped["answer_em_strict"].to_list() == [0, 1, 0]  # "paris ." / "paris" / "x"
    kept = score(golds, preds, strip=False)
    assert kept["answer_em"].to_list() == [0, 0, 0]
    assert kept["answer_f1"].to_list()[0] == pytest.approx(2 / 3)


def test_strict_em_keeps_punctuation_and_articles():
    out = score([["SparseSwaps"], ["The cat."], ["a  b"]], ["sparseSwaps", "cat", "A B"])
    assert out["answer_em_strict"].to_list() == [1, 0, 1]
    assert out["answer_em"].to_list() == [1, 1, 1]


TRICKY = [
    *"aAnNtThHeE .,!?'\"-_()[]\t\n\u00a0\u0301\u200b\x1c\u2014é",
    *["ΟΔΟΣ", "İ", "ß", "ǅ", "\ua7cb", "北", "²", "٣", "‿"],
    # Unicode whitespace the kernel must leave to the Unicode rules; letters whose lowercase
    # differs in CPython's tables.
    *["\x85", "\u2028", "\u3000", "É", "Ωmega", "\u212a"],
]
tricky_text = st.lists(
    st.sampled_from(TRICKY) | st.characters(exclude_categories=("Cs",)), max_size=14
).map("".join)
words = st.lists(st.sampled_from(["a", "an", "the", "cat", "Cat", "dog.", "x", "x-y", "The"]),
                 max_size=8).map(" ".join)
# The ASCII fast path (the compiled tokenizer) must agree with the general path and the script
# on every ASCII text: articles whole and inside words, punctuation that joins words ("a-n" is
# "an"), every ASCII whitespace, control characters.
ASCII_TRICKY = [
    *"aAnNtThHeE _-.,!'09\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x00\x01\x1b\x7f",
    "a a", "the_the", "a-an", "a-n", "t.h.e", "An", "THE", "an.", "a\x1fa", "a\x01an", "them",
    "tha", "ann", "The cat", "x", "x x",
]
ascii_text = st.lists(
    st.sampled_from(ASCII_TRICKY) | st.characters(max_codepoint=0x7F), max_size=16
).map("".join)
answer_text = tricky_text | words | ascii_text


# Whole columns per example (one scoring run scores 10-30 rows), so the script is compared
# on thousands of rows at a fraction of the polars calls.
# Whole columns per example: 45 examples of 30-90 rows check as many rows as 135 of 10-30, at
# a third of the scoring calls (each plans the metric expressions again).
@settings(max_examples=examples(45), deadline=None)
@given(st.lists(st.tuples(st.lists(answer_text, min_size=1, max_size=4), answer_text),
                min_size=30, max_size=90))
def test_em_f1_equal_official_script(rows):
    golds = [g for g, _ in rows]
    preds = [p for _, p in rows]
    out = score(golds, preds)
    for g, p, em, f1, strict in zip(
        golds, preds, out["answer_em"], out["answer_f1"], out["answer_em_strict"], strict=True
    ):
        expected_em, expected_f1 = squad_scores(g, p)
        assert em == expected_em, (g, p)
        assert f1 == float(expected_f1), (g, p)  # bit-for-bit: same float operations
        assert strict == strict_exact(g, p), (g, p)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(tricky_text | words, min_size=1, max_size=20))
def test_normalize_and_tokens_equal_official_script(texts):
    frame = pl.DataFrame({"t": texts}, schema={"t": pl.String})
    out = frame.select(n=squad_normalize(pl.col("t")), k=squad_tokens(pl.col("t")))
    assert out["n"].to_list() == [normalize_answer(t) for t in texts]
    assert [list(k) for k in out["k"].to_list()] == [normalize_answer(t).split() for t in texts]


# Every str.isspace character, plain spaces weighted up, and a few non-space characters.
whitespace_heavy = st.text(
    alphabet=st.sampled_from([" ", " ", " ", "\t", "\n", "\x0b", "\x1c", "\x1f", "\x85",
                              "\xa0", "\u2028", "\u3000", "x", "é", "_", "\x01"]),
    max_size=12,
)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(whitespace_heavy, min_size=1, max_size=20))
def test_collapse_whitespace_equals_split_join(texts):
    frame = pl.DataFrame({"t": [*texts, None]}, schema={"t": pl.String})
    out = frame.select(collapse_whitespace(pl.col("t")))["t"].to_list()
    assert out == [" ".join(t.split()) for t in texts] + [None]


def test_python_lower_matches_cpython_on_every_code_point():
    chars = [chr(cp) for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]
    lowered = pl.Series(chars, dtype=pl.String).to_frame("c").select(python_lower(pl.col("c")))
    assert lowered.to_series().to_list() == [c.lower() for c in chars]


def test_shield_survives_private_use_text():
    text = "\U000f0000\U000f0100 \ua7cb \U000f0000"
    assert pl.select(python_lower(pl.lit(text))).item() == text.lower()
    assert isinstance(lowercase_mismatches(), tuple)


def test_character_classes_match_cpython():
    chars = [chr(cp) for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]
    series = pl.Series(chars, dtype=pl.String).to_frame("c")
    flags = series.select(
        w=pl.col("c").str.contains(f"^[{word_class()}]$"),
        s=pl.col("c").str.contains(f"^[{space_class()}]$"),
    )
    word = re.compile(r"\w")
    assert flags["w"].to_list() == [bool(word.match(c)) for c in chars]
    assert flags["s"].to_list() == [c.isspace() for c in chars]


def _ascii_paths(texts: list[str]) -> pl.DataFrame:
    frame = pl.DataFrame({"t": texts}, schema={"t": pl.String})
    return frame.select(
        fast=squad_tokens_ascii(pl.col("t")),
        full=squad_tokens_unicode(pl.col("t")),
        routed=squad_tokens(pl.col("t")),
        folded=ascii_lower_remove_punctuation(pl.col("t")),
    )


def _check_ascii_paths(texts: list[str]) -> None:
    out = _ascii_paths(texts)
    expected = [normalize_answer(t).split() for t in texts]
    for column in ("fast", "full", "routed"):
        assert [list(k) for k in out[column].to_list()] == expected, column
    exclude = set(string.punctuation)
    assert out["folded"].to_list() == [
        "".join(ch for ch in t.lower() if ch not in exclude) for t in texts
    ]


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(ascii_text, min_size=1, max_size=20))
def test_ascii_fast_path_equals_full_path_and_official_script(texts):
    _check_ascii_paths(texts)


def test_ascii_fast_path_exhaustive_on_short_texts():
    ascii_chars = [chr(cp) for cp in range(128)]
    up_to_two = ["".join(p) for n in range(3) for p in itertools.product(ascii_chars, repeat=n)]
    four = ["".join(p) for p in itertools.product("aAnthe _.\x01\x1f", repeat=4)]
    _check_ascii_paths(up_to_two + four)


def test_routing_keeps_rows_and_nulls_in_place():
    texts = ["The cat", None, "Ωmega the Ö", "", "\u212a a K", "a\u00a0an b", "x x", None]
    out = pl.DataFrame({"t": texts}, schema={"t": pl.String}).select(
        k=squad_tokens(pl.col("t")), low=python_lower(pl.col("t"))
    )
    assert [None if k is None else list(k) for k in out["k"].to_list()] == [
        None if t is None else normalize_answer(t).split() for t in texts
    ]
    assert out["low"].to_list() == [None if t is None else t.lower() for t in texts]


token_lists = st.lists(st.sampled_from(["x", "y", "z", "x\x001", "\x00"]), max_size=7)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(token_lists, token_lists), min_size=1, max_size=20))
def test_multiset_overlap_equals_counter_intersection(pairs):
    frame = pl.DataFrame(
        {"a": [a for a, _ in pairs] + [None, ["x"]], "b": [b for _, b in pairs] + [["x"], None]},
        schema={"a": pl.List(pl.String), "b": pl.List(pl.String)},
    )
    out = frame.select(multiset_overlap(pl.col("a"), pl.col("b"))).to_series().to_list()
    assert out == [sum((Counter(a) & Counter(b)).values()) for a, b in pairs] + [None, None]
