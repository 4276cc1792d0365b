"""The compiled SQuAD v2 kernels (pipeline.text.kernels.squad) against the official script.

The oracle is tests/oracles.py (``normalize_answer``/``get_tokens``/``squad_scores`` of
evaluate-v2.0.py, line for line). Each kernel is checked directly over whole columns and through
the expressions that wrap it (``squad_tokens``, ``multiset_overlap``, answer EM/F1 on golden
rows); the property test of answer EM/F1 through the registry on these same pieces is
test_answer_metrics.py::test_em_f1_equal_official_script.
"""

from __future__ import annotations

from collections import Counter

import polars as pl
import pytest
from conftest import examples, records
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import get_tokens, normalize_answer, squad_scores

from pipeline.config import Config
from pipeline.metrics.qa.answer import multiset_overlap
from pipeline.scoring import score_frame
from pipeline.text.kernels.squad import (
    list_buffers,
    multiset_overlap_batch,
    squad_tokens_batch,
)
from pipeline.text.tokenize import squad_tokens

# Pieces that exercise every branch of the ASCII tokenizer: articles whole and inside words,
# punctuation that joins words ("a-n" is "an"), every ASCII whitespace, control characters.
ASCII_PIECES = [
    *"aAnNtThHeE _-.,!'09\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x00\x01\x1b\x7f",
    "a a", "the_the", "a-an", "a-n", "t.h.e", "An", "THE", "an.", "a\x1fa", "a\x01an", "them",
    "tha", "ann", "The cat", "x", "x x",
]
# Non-ASCII pieces: Unicode whitespace (\x85, \xa0, \u2028, \u3000), letters whose lowercase
# differs in CPython's tables, word characters that make "a" part of a word, combining marks.
WIDE_PIECES = ["\x85", "\xa0", "\u2028", "\u3000", "é", "É", "İ", "ΟΔΟΣ", "ß", "北", "²",
               "\u0301", "\u200b", "\u2014", "Ωmega", "\u212a"]

ascii_text = st.lists(
    st.sampled_from(ASCII_PIECES) | st.characters(max_codepoint=0x7F), max_size=16
).map("".join)
mixed_text = st.lists(
    st.sampled_from(ASCII_PIECES + WIDE_PIECES) | st.characters(exclude_categories=("Cs",)),
    max_size=16,
).map("".join)
maybe_null = st.none() | ascii_text | mixed_text


def tokens_of(texts: list[str | None]) -> list[list[str] | None]:
    series = pl.Series("t", texts, dtype=pl.String)
    return pl.select(squad_tokens(pl.lit(series))).to_series().to_list()


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(maybe_null, min_size=8, max_size=40))
def test_kernel_and_squad_tokens_equal_official_script(texts):
    # The kernel tokenizes exactly the ASCII rows and flags the others as wide; the expression
    # (kernel, then the Unicode rules on the wide rows) equals the script on every row.
    expected = [None if t is None else normalize_answer(t).split() for t in texts]
    tokens, wide = squad_tokens_batch(pl.Series("t", texts, dtype=pl.String))
    assert wide.tolist() == [t is not None and not t.isascii() for t in texts]
    assert tokens.to_list() == [e if t is not None and t.isascii() else None
                                for t, e in zip(texts, expected, strict=True)]
    assert tokens_of(texts) == expected


def test_squad_tokens_on_sliced_and_chunked_columns():
    texts = ["The cat", "x é the", None, "A b", "", "an\x85an", "b-a-d"] * 3
    chunked = pl.concat([pl.Series("t", texts[:5]), pl.Series("t", texts[5:])], rechunk=False)
    for column in (chunked, chunked.slice(4, 9), chunked.slice(1, 0)):
        out = pl.select(squad_tokens(pl.lit(column))).to_series().to_list()
        assert out == [None if t is None else normalize_answer(t).split()
                       for t in column.to_list()]


def test_squad_tokens_inside_list_eval():
    frame = pl.DataFrame(
        {"refs": [["The cat", "Ünïcode the Straße"], None, [], ["a", "an\x1fthe"]]},
        schema={"refs": pl.List(pl.String)},
    )
    out = frame.select(pl.col("refs").list.eval(squad_tokens(pl.element()))).to_series()
    assert out.to_list() == [[["cat"], ["ünïcode", "straße"]], None, [], [[], []]]


@pytest.mark.parametrize(("text", "tokens"), [
    ("", []),
    ("   ", []),
    ("a an the", []),
    ("A an-the\x1fthe\x01an, Anne", ["anthe", "\x01", "anne"]),
    ("the_the", ["thethe"]),
    ("t.h.e cat", ["cat"]),  # punctuation goes first: "the" is then an article
    ("an\x01the", ["\x01"]),
    ("a\x1ca\x1db\x1ec\x1fd", ["b", "c", "d"]),
    ("an\x85cat", ["cat"]),  # \x85 is whitespace to str.split and a non-word to \b
    ("x\xa0the\xa0y", ["x", "y"]),
    ("Ωmega the Ö", ["ωmega", "ö"]),
    ("\u212a a K", ["k", "k"]),  # KELVIN SIGN lowercases to k
    ("THE Eiffel-Tower!", ["eiffeltower"]),
])
def test_golden_tokens(text, tokens):
    assert tokens_of([text]) == [tokens]
    assert get_tokens(text) == tokens or text == ""  # the oracle agrees (get_tokens("") == [])


token = st.sampled_from(["x", "y", "z", "xy", "x\x00", "", "é", "\x01", "yx"])
token_lists = st.lists(token, max_size=40)


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.tuples(token_lists | st.none(), token_lists | st.none()),
                min_size=1, max_size=20))
def test_overlap_kernel_equals_counter_intersection(pairs):
    # Lists up to 40 tokens: both the all-pairs path and the hashed path are taken.
    left = pl.Series("a", [a for a, _ in pairs], dtype=pl.List(pl.String))
    right = pl.Series("b", [b for _, b in pairs], dtype=pl.List(pl.String))
    out = multiset_overlap_batch(left, right).to_list()
    assert out == [None if a is None or b is None else sum((Counter(a) & Counter(b)).values())
                   for a, b in pairs]


def test_overlap_on_long_repetitive_lists():
    a = ["w"] * 500 + [f"t{i}" for i in range(300)] + ["w", "v"] * 50
    b = ["w"] * 120 + [f"t{i}" for i in range(0, 600, 2)] + ["v"] * 70
    frame = pl.DataFrame({"a": [a, b, a[:9]], "b": [b, a, b[:8]]})
    out = frame.select(multiset_overlap(pl.col("a"), pl.col("b"))).to_series().to_list()
    expected = [sum((Counter(x) & Counter(y)).values()) for x, y in zip(
        frame["a"].to_list(), frame["b"].to_list(), strict=True)]
    assert out == expected == [120 + 150 + 50, 120 + 150 + 50, 8]


def test_list_buffers_of_sliced_column_with_nulls():
    column = pl.Series("a", [["x"], None, ["yy", "z"], [], ["w"]]).slice(1, 4)
    list_offsets, valid, offsets, data = list_buffers(column)
    assert list_offsets.tolist() == [0, 0, 2, 2, 3]
    assert valid.tolist() == [False, True, True, True]
    assert bytes(data[offsets[0]:offsets[-1]]) == b"yyzw"


def score(golds: list[list[str]], preds: list[str]) -> pl.DataFrame:
    rows = [{"reference": g[0], "references": g[1:] or None, "response": p}
            for g, p in zip(golds, preds, strict=True)]
    config = Config(metrics=("answer_em", "answer_f1"), strip_citation_markers=False,
                    answer_scorer="squad-v2")
    return score_frame(records(rows), config).collect()


# (golds, prediction, EM, F1), worked out by hand from evaluate-v2.0.py.
GOLDEN = [
    (["The Eiffel Tower"], "eiffel tower!", 1, 1.0),
    (["a", "the"], "", 1, 1.0),  # every gold empty: scored against ""
    (["a", "the"], "An", 1, 1.0),
    (["a", "the"], "x", 0, 0.0),
    (["", "cat"], "the cat", 1, 1.0),  # an empty gold is skipped when another is not
    (["cat dog dog"], "cat cat dog", 0, 2 / 3),
    (["cat"], "a\x1fcat", 1, 1.0),
    (["cat"], "an\x85cat", 1, 1.0),
    (["thethe"], "the_the", 1, 1.0),
    (["ünïcode straße"], "Ünïcode the Straße", 1, 1.0),
    (["x y z w"], "x", 0, 0.4),
    (["dog", "cat sat"], "cat", 0, 2 / 3),
    (["Paris"], "", 0, 0.0),
]


def test_golden_rows():
    out = score([g for g, *_ in GOLDEN], [p for _, p, *_ in GOLDEN])
    for (golds, pred, em, f1), got_em, got_f1 in zip(
        GOLDEN, out["answer_em"], out["answer_f1"], strict=True
    ):
        assert squad_scores(golds, pred) == (em, pytest.approx(f1, abs=1e-15))
        assert got_em == em, (golds, pred)
        assert got_f1 == pytest.approx(f1, abs=1e-15), (golds, pred)
