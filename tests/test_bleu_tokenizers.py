"""sacreBLEU's intl, zh, char and none tokenizers: tokens equal to sacrebleu's tokenizer objects,
sentence and corpus BLEU equal to ``sacrebleu.sentence_bleu`` / ``corpus_bleu`` with the same
``tokenize``, and the per-row choice of ``bleu_tokens(..., "auto", lang)``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pytest
import sacrebleu
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from sacrebleu.tokenizers.tokenizer_char import TokenizerChar
from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International
from sacrebleu.tokenizers.tokenizer_none import NoneTokenizer
from sacrebleu.tokenizers.tokenizer_zh import TokenizerZh

from pipeline.metrics.lexical.bleu import bleu_statistics, sentence_bleu, statistic_names
from pipeline.text.tokenize_13a import tokens_13a
from pipeline.text.tokenize_sacrebleu import (
    BLEU_TOKENIZE,
    TOKENIZERS,
    bleu_tokens,
    chinese_class,
    regex_property_class,
)

RGB_ZH = Path("/work/shared/data/rgb/zh_refine.json")
SACREBLEU_TOKENIZERS = {
    "13a": Tokenizer13a(),
    "intl": TokenizerV14International(),
    "zh": TokenizerZh(),
    "char": TokenizerChar(),
    "none": NoneTokenizer(),
}
NAMES = list(SACREBLEU_TOKENIZERS)


def sacrebleu_tokens(text: str, name: str) -> list[str]:
    """What sacrebleu's BLEU counts: ``tokenizer(text.rstrip()).split()``."""
    return SACREBLEU_TOKENIZERS[name](text.rstrip()).split()


def tokenized(texts: list[str | None], name: str) -> list[list[str] | None]:
    frame = pl.DataFrame({"t": texts}, schema={"t": pl.String})
    out = frame.select(TOKENIZERS[name](pl.col("t"))).to_series().to_list()
    return [None if t is None else list(t) for t in out]


def statistics(hyps: list[str], refs: list[str], name: str) -> pl.DataFrame:
    frame = pl.DataFrame({"h": hyps, "r": refs}, schema={"h": pl.String, "r": pl.String})
    tokens = frame.select(h=bleu_tokens(pl.col("h"), name), r=bleu_tokens(pl.col("r"), name))
    return tokens.select(**bleu_statistics(pl.col("h"), pl.col("r")))


def assert_bleu_equals_sacrebleu(hyps: list[str], refs: list[str], name: str) -> None:
    """Per row: statistics equal and sentence BLEU within 1e-9; corpus BLEU within 1e-9."""
    stats = statistics(hyps, refs, name)
    scores = stats.select(sentence_bleu({c: pl.col(c) for c in stats.columns})).to_series()
    for h, r, got, score in zip(hyps, refs, stats.iter_rows(), scores, strict=True):
        expected = sacrebleu.sentence_bleu(h, [r], tokenize=name)
        counts = [*expected.counts, *expected.totals, expected.sys_len, expected.ref_len]
        assert list(got) == counts, (name, h, r)
        assert score == pytest.approx(expected.score / 100, abs=1e-9), (name, h, r)
    summed = {c: pl.col(c).sum() for c in statistic_names()}
    corpus = stats.select(sentence_bleu(summed, effective_order=False)).item()
    expected_corpus = sacrebleu.corpus_bleu(hyps, [refs], tokenize=name).score / 100
    assert corpus == pytest.approx(expected_corpus, abs=1e-9), name


# --- character classes -----------------------------------------------------------------------


def _class_members(body: str, candidates: list[str]) -> set[str]:
    series = pl.Series(candidates)
    return set(series.filter(series.str.contains(f"^[{body}]$")).to_list())


def all_characters() -> list[str]:
    return [chr(cp) for cp in range(sys.maxunicode + 1) if not 0xD800 <= cp < 0xE000]


def test_chinese_class_is_is_chinese_char_on_every_code_point():
    chars = all_characters()
    expected = {ch for ch in chars if TokenizerZh._is_chinese_char(ch)}
    assert _class_members(chinese_class(), chars) == expected
    # sacrebleu's two-character bounds: U+2000 and CJK Extension B are not "Chinese".
    assert {"\u2001", "\u2a6d", "\u201c", "\u2f81"} <= expected
    assert not {"\u2000", "\u2a6e", "\U00020000", "\u9fbc"} & expected


@pytest.mark.parametrize("prop", ["P", "S", "N"])
def test_property_classes_are_the_regex_packages(prop):
    regex = pytest.importorskip("regex")
    chars = all_characters()
    expected = set(regex.findall(rf"\p{{{prop}}}", "".join(chars)))
    assert _class_members(regex_property_class(prop), chars) == expected


# --- golden tokens ---------------------------------------------------------------------------


GOLDEN = [
    "法国的首都是巴黎[1]。",
    "巴黎",
    "  .5 巴黎, 2019.  ",
    "“Bonjour,” dit-il: 1,000€ en 2019.",
    "東京は日本の首都です。",
    "서울은 한국의 수도입니다.",
    "กรุงเทพมหานคร",
    "x-y 3-4 U.S. &amp; <skipped> a-\nb",
    "𠀀𠀁 鿏 \u2028 \u3000 ，。！",
    "",
    "   ",
]


@pytest.mark.parametrize("name", NAMES)
def test_golden_tokens(name):
    assert tokenized(GOLDEN, name) == [sacrebleu_tokens(t, name) for t in GOLDEN]


def test_chinese_answer_scores_above_zero_with_zh():
    hyp, ref = "法国的首都是巴黎[1]。", "巴黎"
    assert sacrebleu.sentence_bleu(hyp, [ref]).score == 0.0  # 13a: one token each side
    stats = statistics([hyp], [ref], "zh")
    assert stats.row(0) == (2, 1, 0, 0, 12, 11, 10, 9, 12, 2)
    assert stats.select(sentence_bleu({c: pl.col(c) for c in stats.columns})).item() > 0.0
    assert_bleu_equals_sacrebleu([hyp], [ref], "zh")


def test_nulls_and_unknown_name():
    for name in BLEU_TOKENIZE:
        lang = pl.col("lang") if name == "auto" else None
        frame = pl.DataFrame({"t": [None, "a b"], "lang": ["zh", None]},
                             schema={"t": pl.String, "lang": pl.String})
        out = frame.select(bleu_tokens(pl.col("t"), name, lang)).to_series().to_list()
        assert out[0] is None, name
    with pytest.raises(ValueError, match="tokenize must be one of"):
        bleu_tokens(pl.col("t"), "ja-mecab", None)


# --- auto ------------------------------------------------------------------------------------


def test_auto_picks_the_tokenizer_of_each_rows_language():
    texts = ["巴黎。", "巴黎。", "東京 は", "서울.", "กรุง", "Hi, there.", "x.", "巴黎。"]
    langs = ["zh", "en", "ja", "ko", "th", None, "de", "zh"]
    expected_names = ["zh", "13a", "char", "char", "char", "13a", "13a", "zh"]
    frame = pl.DataFrame({"t": texts, "lang": langs})
    out = frame.select(bleu_tokens(pl.col("t"), "auto", pl.col("lang"))).to_series().to_list()
    assert [list(t) for t in out] == [
        sacrebleu_tokens(t, n) for t, n in zip(texts, expected_names, strict=True)
    ]


def test_auto_on_latin_rows_is_13a_unchanged():
    texts = ["It's 3.5-4 &amp; (so) on.\n", "", "a b", None]
    frame = pl.DataFrame({"t": texts, "lang": ["en", "en", None, "en"]},
                         schema={"t": pl.String, "lang": pl.String})
    auto = frame.select(bleu_tokens(pl.col("t"), "auto", pl.col("lang"))).to_series()
    assert auto.equals(frame.select(tokens_13a(pl.col("t"))).to_series())
    without_lang = frame.select(bleu_tokens(pl.col("t"), "auto", None)).to_series()
    assert without_lang.equals(auto)


def test_auto_broadcasts_a_literal_language():
    frame = pl.DataFrame({"t": ["巴黎。", "北京"]})
    out = frame.select(bleu_tokens(pl.col("t"), "auto", pl.lit("zh"))).to_series().to_list()
    assert [list(t) for t in out] == [["巴", "黎", "。"], ["北", "京"]]


# --- the real Chinese RGB passages -----------------------------------------------------------


def rgb_pairs() -> tuple[list[str], list[str]]:
    """(passage, answer) and (positive passage, negative passage) pairs of zh_refine.json."""
    if not RGB_ZH.exists():
        pytest.skip(f"RGB Chinese data not found at {RGB_ZH} (shared data folder absent)")
    hyps, refs = [], []
    for line in RGB_ZH.read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        answers = [a for group in item["answer"] for a in (group if isinstance(group, list)
                                                           else [group])]
        passages = item["positive"] + item["negative"]
        for i, passage in enumerate(passages):
            hyps.append(passage)
            refs.append(answers[i % len(answers)] if i % 2 else passages[(i + 1) % len(passages)])
    return hyps, refs


#: The real-data tests read a slice of the passages (sacreBLEU per row is most of their cost):
#: every third text of the 15,430 for the tokenizers, the first 1,000 pairs for BLEU.
TOKEN_STEP, BLEU_PAIRS = 3, 1000


@pytest.mark.parametrize("name", NAMES)
def test_rgb_passages_tokens(name):
    hyps, refs = rgb_pairs()
    texts = (hyps + refs)[::TOKEN_STEP]
    assert tokenized(texts, name) == [sacrebleu_tokens(t, name) for t in texts]


@pytest.mark.parametrize("name", NAMES)
def test_rgb_passages_bleu(name):
    hyps, refs = rgb_pairs()
    assert_bleu_equals_sacrebleu(hyps[:BLEU_PAIRS], refs[:BLEU_PAIRS], name)


# --- random Unicode text ---------------------------------------------------------------------


TRICKY = [
    *"aAzZ019.,-'\"()[]{}<>/\\&;:@#$%^*+=~`|_!? ",
    *["\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1f", "\x85", "\u00a0", "\u2000", "\u2001"],
    *["\u2009", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\u180e", "\u200b", "\x00"],
    # CJK, the edges of _is_chinese_char and the fullwidth forms
    *["北", "京", "的", "\u3400", "\u4db5", "\u4db6", "\u9fa5", "\u9fbb", "\u9fbc", "\u9fcf"],
    *["\U00020000", "\U0002a6d6", "\u2a6d", "\u2a6e", "\u2f80", "\u2f81", "\u2fa1", "\u2fa2"],
    *["\uff0c", "\u3002", "\uff01", "\uff11", "\uff21", "\uffef", "\ufff0", "\u3001", "\u300c"],
    # kana, Hangul, Thai, other scripts and numbers
    *["ひ", "ら", "カ", "ナ", "ｶ", "한", "국", "\u1100", "ก", "ร", "\u0e48", "\u0e50", "é", "ß"],
    *["\u0663", "\u00b2", "\u2460", "\u216b", "\u0301", "\u05d0", "\u0434", "\U0001d7ce"],
    # Unicode punctuation and symbols (some only in the newest Unicode versions)
    *["“", "”", "—", "…", "«", "»", "¿", "¡", "·", "€", "¥", "©", "°", "±", "→", "√", "♥"],
    *["\U0001f431", "\U0001f1eb", "\u2e60", "\u20c1", "\U00011de0", "\U00010ed0", "\ufbc3"],
    *["&amp;", "<skipped>", "-\n", "...", "1,000", "3.5", "2019.", ".5", ",5", "5-"],
]
WORDS = ["the", "cat", "北京", "首都", "巴黎", "東京", "서울", "กรุง", "1.5", "x-y", "，", "。"]
tricky_text = st.lists(
    st.sampled_from(TRICKY) | st.characters(exclude_categories=("Cs",)), max_size=30
).map("".join)
word_text = st.lists(st.sampled_from(WORDS), max_size=14).map(
    lambda words: "".join(w + (" " if i % 3 else "") for i, w in enumerate(words))
)
any_text = tricky_text | word_text


# Whole columns per example (10-40 rows in one polars run per tokenizer): as many rows are
# compared with sacrebleu as before, at a fraction of the polars calls.
@settings(max_examples=examples(100), deadline=None)
@given(st.lists(any_text, min_size=10, max_size=40))
def test_tokens_equal_sacrebleu_tokenizers(texts):
    for name in NAMES:
        assert tokenized(texts, name) == [sacrebleu_tokens(t, name) for t in texts], name


@settings(max_examples=examples(32), deadline=None)
@given(st.lists(st.tuples(any_text, any_text), min_size=10, max_size=30))
def test_bleu_equals_sacrebleu(rows):
    hyps, refs = [h for h, _ in rows], [r for _, r in rows]
    for name in NAMES:
        assert_bleu_equals_sacrebleu(hyps, refs, name)


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.tuples(any_text, st.sampled_from(["zh", "ja", "ko", "th", "en", None])),
                min_size=10, max_size=40))
def test_auto_equals_sacrebleu_per_row(rows):
    frame = pl.DataFrame({"t": [t for t, _ in rows], "lang": [lang for _, lang in rows]},
                         schema={"t": pl.String, "lang": pl.String})
    out = frame.select(bleu_tokens(pl.col("t"), "auto", pl.col("lang"))).to_series().to_list()
    names = {"zh": "zh", "ja": "char", "ko": "char", "th": "char"}
    for (text, lang), tokens in zip(rows, out, strict=True):
        assert list(tokens) == sacrebleu_tokens(text, names.get(lang or "", "13a")), (text, lang)
