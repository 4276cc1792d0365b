"""BLEU parity: sentence BLEU with sacrebleu (bit for bit), textbook BLEU with a Python oracle."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
import sacrebleu
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from sacrebleu.metrics.bleu import BLEU
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from pipeline.metrics.lexical.bleu import (
    bleu,
    bleu_statistics,
    sentence_bleu,
    statistic_names,
    textbook_bleu,
)
from pipeline.text.tokenize_13a import tokens_13a

GOLDEN = Path(__file__).parent / "golden" / "bleu_adversarial.jsonl"
TOKENIZER_13A = Tokenizer13a()


def sacrebleu_score(hypothesis: str, reference: str) -> float:
    """The reference value: sacrebleu's sentence BLEU on the 0..1 scale (may exceed 1 by 4e-16)."""
    return sacrebleu.sentence_bleu(hypothesis, [reference]).score / 100


def expected_bleu(hypothesis: str, reference: str) -> float:
    """What ``bleu`` returns: sacrebleu's value, clipped at 1.0 (the documented convention)."""
    return min(sacrebleu_score(hypothesis, reference), 1.0)


def sacrebleu_tokens(text: str) -> list[str]:
    return TOKENIZER_13A(text.rstrip()).split()


def textbook_oracle(hypothesis: str, reference: str) -> float:
    """Textbook BLEU-4 as documented in ``textbook_bleu``, one row at a time."""
    hyp, ref = hypothesis.lower().split(), reference.lower().split()
    log_sum = 0.0
    for n in range(1, 5):
        hyp_grams = Counter(tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1))
        ref_grams = Counter(tuple(ref[i : i + n]) for i in range(len(ref) - n + 1))
        matched = sum((hyp_grams & ref_grams).values())
        precision = matched / sum(hyp_grams.values()) if matched else 0.0001
        term = 0.25 * math.log(precision)
        log_sum = term if n == 1 else log_sum + term
    if not hyp:
        brevity = 0.0
    elif len(hyp) < len(ref):
        brevity = math.exp(1 - len(ref) / len(hyp))
    else:
        brevity = 1.0
    return brevity * math.exp(log_sum)


def pairs(hyps: list[str], refs: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"h": hyps, "r": refs}, schema={"h": pl.String, "r": pl.String})


def scores(hyps: list[str], refs: list[str]) -> pl.DataFrame:
    h, r = pl.col("h"), pl.col("r")
    return pairs(hyps, refs).select(bleu=bleu(h, r), textbook=textbook_bleu(h, r))


def golden_rows() -> list[dict]:
    return [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()]


def test_golden_rows_equal_sacrebleu_bit_for_bit():
    rows = golden_rows()
    hyps, refs = [r["hypothesis"] for r in rows], [r["reference"] for r in rows]
    out = scores(hyps, refs)["bleu"].to_list()
    for row, got in zip(rows, out, strict=True):
        # The committed value is sacrebleu's; ours equals it except the 4e-16 clip at 1.0.
        assert sacrebleu_score(row["hypothesis"], row["reference"]) == row["bleu"], row["note"]
        assert got == min(row["bleu"], 1.0), row["note"]
        assert got == pytest.approx(row["bleu"], abs=1e-15), row["note"]


def test_golden_rows_scored_one_at_a_time():
    """A batch of one row takes the same arithmetic as a long batch."""
    for row in golden_rows()[:12]:
        got = scores([row["hypothesis"]], [row["reference"]])["bleu"].item()
        assert got == min(row["bleu"], 1.0), row["note"]


def test_golden_tokens_equal_tokenizer_13a():
    texts = [t for row in golden_rows() for t in (row["hypothesis"], row["reference"])]
    out = pl.DataFrame({"t": texts}).select(tokens_13a(pl.col("t"))).to_series().to_list()
    for text, tokens in zip(texts, out, strict=True):
        assert list(tokens) == sacrebleu_tokens(text), repr(text)


def test_statistics_equal_sacrebleu_counts():
    rows = golden_rows()
    frame = pairs([r["hypothesis"] for r in rows], [r["reference"] for r in rows])
    tokens = frame.select(h=tokens_13a(pl.col("h")), r=tokens_13a(pl.col("r")))
    stats = tokens.select(**bleu_statistics(pl.col("h"), pl.col("r")))
    assert stats.columns == statistic_names()
    assert all(dtype == pl.Int64 for dtype in stats.dtypes)
    for row, got in zip(rows, stats.iter_rows(), strict=True):
        ref = sacrebleu.sentence_bleu(row["hypothesis"], [row["reference"]])
        assert list(got) == [*ref.counts, *ref.totals, ref.sys_len, ref.ref_len], row["note"]


def test_corpus_bleu_from_summed_statistics():
    rows = golden_rows()
    hyps, refs = [r["hypothesis"] for r in rows], [r["reference"] for r in rows]
    tokens = pairs(hyps, refs).select(h=tokens_13a(pl.col("h")), r=tokens_13a(pl.col("r")))
    stats = tokens.select(**bleu_statistics(pl.col("h"), pl.col("r")))
    summed = {name: pl.col(name).sum() for name in stats.columns}
    got = stats.select(sentence_bleu(summed, effective_order=False)).item()
    assert got == sacrebleu.corpus_bleu(hyps, [refs]).score / 100


def test_edge_cases_and_nulls():
    frame = pairs(["", "", "a b c", "a b c d", None, "a", ""],
                  ["", "a b", "", "a b c d", "a", None, None])
    got = frame.select(b=bleu(pl.col("h"), pl.col("r")), t=textbook_bleu(pl.col("h"), pl.col("r")))
    assert got.to_series(0).to_list() == [0.0, 0.0, 0.0, 1.0, None, None, None]
    # Textbook: empty hypothesis -> BP 0; empty reference -> every precision floored.
    assert got.to_series(1).to_list() == [0.0, 0.0, pytest.approx(0.0001), 1.0, None, None, None]


def compute_bleu(stats: tuple[int, ...], effective_order: bool) -> float:
    """sacrebleu's own ``BLEU.compute_bleu`` of one row of statistics, on the 0..1 scale."""
    counts, totals, sys_len, ref_len = stats[:4], stats[4:8], stats[8], stats[9]
    score = BLEU.compute_bleu(list(counts), list(totals), sys_len, ref_len, smooth_method="exp",
                              effective_order=effective_order).score
    return min(score / 100, 1.0)


@st.composite
def statistics_rows(draw: st.DrawFn) -> tuple[int, ...]:
    """Consistent BLEU statistics: totals from the hypothesis length, matches within them."""
    hyp_len = draw(st.integers(0, 60) | st.integers(0, 10**9))
    ref_len = draw(st.integers(0, 60) | st.integers(0, 10**9))
    totals = [max(hyp_len - n + 1, 0) for n in range(1, 5)]
    matches = [draw(st.integers(0, total)) for total in totals]
    return (*matches, *totals, hyp_len, ref_len)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(statistics_rows(), min_size=1, max_size=40), st.booleans())
def test_score_kernel_equals_compute_bleu_bit_for_bit(rows, effective_order):
    """The compiled score (:func:`sentence_bleu`) against sacrebleu's ``compute_bleu`` itself,
    over statistics of any size (corpus sums included)."""
    frame = pl.DataFrame(rows, schema=statistic_names(), orient="row")
    stats = {name: pl.col(name) for name in frame.columns}
    got = frame.select(sentence_bleu(stats, effective_order=effective_order)).to_series()
    assert got.to_list() == [compute_bleu(row, effective_order) for row in rows]


def test_literal_reference_is_broadcast():
    frame = pl.DataFrame({"h": ["the cat sat on the mat", "a dog", ""]})
    reference = "the cat sat on a mat"
    got = frame.select(bleu(pl.col("h"), pl.lit(reference))).to_series().to_list()
    assert got == [expected_bleu(h, reference) for h in frame["h"]]
    tokens = frame.select(h=tokens_13a(pl.col("h")))
    stats = tokens.select(**bleu_statistics(pl.col("h"), pl.lit(["the", "cat"])))
    assert stats["matches_1"].to_list() == [2, 0, 0]
    assert stats["matches_2"].to_list() == [1, 0, 0]


def test_identity_gives_one():
    texts = ["the cat sat down", "It's 3.5-4 &amp; (so) on.", "a a a a a a", "北 京 ٣ x-y é"]
    out = scores(texts, texts)
    assert out["bleu"].to_list() == [1.0] * len(texts)
    assert out["textbook"].to_list() == [1.0] * len(texts)


def test_textbook_golden_value():
    out = scores(["the cat sits on the mat"], ["the cat is on the mat"])
    assert round(out["textbook"].item(), 4) == 0.0595
    assert out["textbook"].item() == textbook_oracle(
        "the cat sits on the mat", "the cat is on the mat"
    )


def test_textbook_short_hypothesis_floors_missing_orders():
    # One matching token: p1 = 1, p2..p4 have no n-grams and are floored; BP = exp(1 - 3).
    got = scores(["Cat"], ["the cat sat"])["textbook"].item()
    assert got == pytest.approx(math.exp(1 - 3) * 0.0001**0.75, rel=1e-12)


TRICKY = [
    *"aAb.,-0123456789 !?'\"()[]{}<>/\\&;:@#$%^*+=~`|_",
    *["\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u00a0"],
    *["\u2009", "\u2028", "\u3000", "\u180e", "\u200b", "\x00", "\u0301"],
    *["\u0663", "\u00b2", "\uff11", "\u00e9", "\u5317", "\U0001f431", "\u0130", "\u00df"],
    *["&amp;", "&quot;", "&lt;", "&gt;", "<skipped>", "-\n", "...", "1,000", "3.5"],
]
WORDS = ["the", "The", "cat", "sat", "on", "mat", "a", "x-y", "3-4", "1.5", "U.S.", "it's", ","]
tricky_text = st.lists(
    st.sampled_from(TRICKY) | st.characters(exclude_categories=("Cs",)), max_size=24
).map("".join)
word_text = st.lists(st.sampled_from(WORDS), max_size=14).map(" ".join)
any_text = tricky_text | word_text


# Whole columns per example (10-30 rows in one polars run): thousands of rows are compared with
# sacrebleu and the oracle at a fraction of the polars calls.
@settings(max_examples=examples(45), deadline=None)
@given(st.lists(st.tuples(any_text, any_text), min_size=10, max_size=30))
def test_bleu_and_textbook_equal_sacrebleu_and_oracle(rows):
    hyps, refs = [h for h, _ in rows], [r for _, r in rows]
    out = scores(hyps, refs)
    for h, r, got, textbook in zip(hyps, refs, out["bleu"], out["textbook"], strict=True):
        assert got == expected_bleu(h, r), (h, r)
        assert textbook == textbook_oracle(h, r), (h, r)


@settings(max_examples=examples(42), deadline=None)
@given(st.lists(st.tuples(word_text, word_text), min_size=10, max_size=30))
def test_bleu_equals_sacrebleu_on_overlapping_word_texts(rows):
    """Texts over a small vocabulary: many matches and repeated n-grams at every order."""
    hyps, refs = [h for h, _ in rows], [r for _, r in rows]
    out = scores(hyps, refs)
    for h, r, got, textbook in zip(hyps, refs, out["bleu"], out["textbook"], strict=True):
        assert got == expected_bleu(h, r), (h, r)
        assert textbook == textbook_oracle(h, r), (h, r)


@settings(max_examples=examples(70), deadline=None)
@given(st.lists(any_text, min_size=10, max_size=40))
def test_tokens_equal_tokenizer_13a(texts):
    out = pl.DataFrame({"t": texts}, schema={"t": pl.String}).select(tokens_13a(pl.col("t")))
    assert [list(t) for t in out.to_series().to_list()] == [sacrebleu_tokens(t) for t in texts]
