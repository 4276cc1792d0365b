"""ROUGE on every script: the ``unicode`` tokenizer and ``auto`` routing against ``rouge-score``.

The reference is ``rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], tokenizer=T)`` where
``T.tokenize(text)`` is the regex below, written here independently of the module.
"""

from __future__ import annotations

import re

import polars as pl
import pytest
import regex
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer, tokenize

from pipeline.metrics.lexical.rouge import (
    rouge_fmeasure,
    rouge_precision,
    rouge_recall,
    rouge_statistics,
)
from pipeline.text import rouge_tokenize
from pipeline.text.rouge_tokenize import rouge_tokens, rouge_tokens_for, unicode_rouge_tokens

TYPES = ("rouge1", "rouge2", "rougeL")
SCORES = ("precision", "recall", "fmeasure")
_C = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0e7f"
_PATTERN = re.compile(f"[{_C}]|[^\\W_{_C}]+")


class UnicodeTokenizer:
    """Kana, CJK ideographs and Thai one token per character, other scripts runs of letters and
    digits; no stemming."""

    def tokenize(self, text: str) -> list[str]:
        return _PATTERN.findall(text.lower())


# A letter or digit of a script other than Latin (Common and Inherited belong to all scripts).
_NON_LATIN = regex.compile(r"[[\p{L}\p{N}]--[\p{Latin}\p{Common}\p{Inherited}]]", regex.V1)


class AutoTokenizer:
    """``auto`` without a language: rouge-score's tokenizer for Latin text, else the above."""

    def tokenize(self, text: str) -> list[str]:
        if _NON_LATIN.search(text):
            return UnicodeTokenizer().tokenize(text)
        return tokenize.tokenize(text, None)


SCORER = rouge_scorer.RougeScorer(list(TYPES), tokenizer=UnicodeTokenizer())


def package_scores(refs: list[str], preds: list[str]) -> list[dict[str, tuple[float, ...]]]:
    return [{k: tuple(v) for k, v in SCORER.score(target=r, prediction=p).items()}
            for r, p in zip(refs, preds, strict=True)]


def ours(
    refs: list[str | None], preds: list[str | None], tokenizer: str = "unicode",
    langs: list[str | None] | None = None,
) -> list[dict[str, tuple[float, ...]]]:
    """Tokens, statistics and scores, each stage stored as columns as the pipeline does."""
    frame = pl.DataFrame(
        {"reference": refs, "prediction": preds, "lang": langs or [None] * len(refs)},
        schema={"reference": pl.String, "prediction": pl.String, "lang": pl.String},
    )
    lang = None if langs is None else pl.col("lang")
    n_pred = {1: pl.col("p").list.len(), 2: (pl.col("p").list.len() - 1).clip(lower_bound=0)}
    n_ref = {1: pl.col("r").list.len(), 2: (pl.col("r").list.len() - 1).clip(lower_bound=0)}
    stats = pl.col("s").struct
    counts = {
        "rouge1": (stats.field("overlap_1"), n_pred[1], n_ref[1]),
        "rouge2": (stats.field("overlap_2"), n_pred[2], n_ref[2]),
        "rougeL": (stats.field("lcs"), n_pred[1], n_ref[1]),
    }
    out = (
        frame.lazy()
        .with_columns(
            r=rouge_tokens_for(pl.col("reference"), tokenizer, lang),
            p=rouge_tokens_for(pl.col("prediction"), tokenizer, lang),
        )
        .with_columns(s=rouge_statistics(pl.col("p"), pl.col("r")))
        .select(
            pl.struct(
                precision=rouge_precision(*c), recall=rouge_recall(*c),
                fmeasure=rouge_fmeasure(*c),
            ).alias(t)
            for t, c in counts.items()
        )
        .collect()
    )
    rows = out.iter_rows(named=True)
    return [{t: tuple(row[t][s] for s in SCORES) for t in TYPES} for row in rows]


def tokens(texts: list[str | None], tokenizer: str, lang: list[str | None] | None = None,
           *, stem: bool = False) -> list[list[str] | None]:
    frame = pl.DataFrame({"t": texts, "lang": lang or [None] * len(texts)},
                         schema={"t": pl.String, "lang": pl.String})
    expr = rouge_tokens_for(pl.col("t"), tokenizer, None if lang is None else pl.col("lang"),
                            stem=stem)
    return [None if t is None else list(t) for t in frame.select(expr).to_series().to_list()]


# --- golden rows -----------------------------------------------------------------------------
def test_pattern_is_the_documented_one():
    assert _PATTERN.pattern == rouge_tokenize.UNICODE_TOKEN_PATTERN


@pytest.mark.parametrize(
    ("reference", "prediction", "expected"),
    [
        # (rouge1 F, rouge2 F, rougeL F), from the reference package with the tokenizer above.
        ("东京", "东京", (1.0, 1.0, 1.0)),
        ("Москва — столица России", "Столица России — Москва", (1.0, 0.5, 2 / 3)),
        ("Москва", "москва!", (1.0, 0.0, 1.0)),
        ("法国的首都是巴黎。", "巴黎", (4 / 10, 1 / 4, 4 / 10)),
        ("東京は日本の首都です", "日本の首都は東京", (16 / 18, 10 / 16, 10 / 18)),
        ("กรุงเทพ", "กรุงเทพฯ", (14 / 15, 12 / 13, 14 / 15)),
        ("", "", (0.0, 0.0, 0.0)),
        ("东京", "", (0.0, 0.0, 0.0)),
    ],
)
def test_golden_rows(reference, prediction, expected):
    [mine] = ours([reference], [prediction])
    [theirs] = package_scores([reference], [prediction])
    assert mine == theirs
    assert tuple(mine[t][2] for t in TYPES) == pytest.approx(expected, abs=1e-15)


def test_rouge_score_tokenizer_scores_non_latin_text_zero():
    """Why the tokenizer exists: the package's own tokenizer keeps only [a-z0-9]."""
    assert ours(["东京"], ["东京"], "rouge-score")[0]["rouge1"] == (0.0, 0.0, 0.0)
    assert ours(["东京"], ["东京"], "auto")[0]["rouge1"] == (1.0, 1.0, 1.0)


def test_tokens_of_every_script():
    text = "东京 Tōkyō_X ２０２４年 Привет! Ελλάδα ไทย العربية ΟΔΟΣ ガ・ー ①"
    assert tokens([text], "unicode") == [[
        "东", "京", "tōkyō", "x", "２０２４", "年", "привет", "ελλάδα", "ไ", "ท", "ย",
        "العربية", "οδος", "ガ", "・", "ー", "①",
    ]]
    assert tokens([text], "rouge-score") == [["t", "ky", "x"]]


def test_null_and_empty():
    assert tokens([None, "", "!!"], "unicode") == [None, [], []]
    assert tokens([None, "", "!!"], "auto") == [None, [], []]
    assert tokens([None, "东京"], "auto", [None, None]) == [None, ["东", "京"]]


def test_unknown_tokenizer_is_refused():
    with pytest.raises(ValueError, match="unknown ROUGE tokenizer 'spacy'"):
        rouge_tokens_for(pl.col("t"), "spacy", None)


# --- auto ------------------------------------------------------------------------------------
ENGLISH = ["The cats' 2 dogs-running!", "Café au lait, naïve résumé.", "state-of-the-art 1990s",
           "", "\u212aelvin \u0130stanbul", "Tokyo (东京) is big."]


@pytest.mark.parametrize("stem", [False, True])
def test_auto_is_rouge_score_on_english_rows(stem):
    """lang "en" (or Latin text without lang): exactly today's tokens, stemming included."""
    frame = pl.DataFrame({"t": ENGLISH})
    today = frame.select(rouge_tokens(pl.col("t"), stem=stem)).to_series()
    by_lang = tokens(ENGLISH, "auto", ["en"] * len(ENGLISH), stem=stem)
    assert by_lang == [list(t) for t in today]
    latin = ENGLISH[:-1]
    assert tokens(latin, "auto", stem=stem) == [list(t) for t in today[:-1]]


def test_auto_routes_by_lang_else_by_script():
    texts = ["东京 Tōkyō", "东京 Tōkyō", "Tōkyō", "Tōkyō", "Москва", "Москва", "Tōkyō"]
    langs = ["zh", "en", "de", None, "ru", None, "ja"]
    assert tokens(texts, "auto", langs) == [
        ["东", "京", "tōkyō"],  # zh: unicode
        ["t", "ky"],  # en: rouge-score, even with Han in it
        ["t", "ky"],  # de is Latin script
        ["t", "ky"],  # null lang: Latin script
        ["москва"],
        ["москва"],  # null lang: the text's script decides
        ["tōkyō"],  # ja: unicode
    ]
    # und: no letter of a detected script (Georgian); the text decides, as without lang.
    assert tokens(["თბილისი 2", "12 !"], "auto", ["und", "und"]) == [["თბილისი", "2"], ["12"]]
    no_lang = ["东京 Tōkyō", "Tōkyō", "Москва", "Tōkyō ①", "x²"]
    assert tokens(no_lang, "auto") == [["东", "京", "tōkyō"], ["t", "ky"], ["москва"],
                                       ["t", "ky"], ["x"]]


# --- properties ------------------------------------------------------------------------------
MIXED = (
    "东京北京法国的首都是巴黎日本国"  # Han
    "ひらがなカタカナー・ヶ"  # kana
    "กรุงเทพฯ ไทย"  # Thai, vowel signs included
    "МоскваПРИВЕТё"  # Cyrillic
    "ΑθήναΣσς"  # Greek (final sigma)
    "العربية"  # Arabic
    "éèçÉßİKǅ\u0301"  # accents, a combining accent, special casing
    "0123456789²٣０１"  # digits
    "_-.,;:!?()[]「」。、，！？ \t\n"  # punctuation, underscore, space
)
mixed_text = st.text(st.sampled_from(MIXED), max_size=40)
any_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)


# Whole columns per example (hypothesis draws lists near their minimum size): as many rows as
# before are compared with the package and the regex oracle at a fraction of the polars runs.
@settings(max_examples=examples(65), deadline=None)
@given(st.lists(st.tuples(mixed_text, mixed_text), min_size=10, max_size=30))
def test_scores_equal_rouge_score(pairs):
    refs, preds = [r for r, _ in pairs], [p for _, p in pairs]
    assert ours(refs, preds) == package_scores(refs, preds)


@settings(max_examples=examples(85), deadline=None)
@given(st.lists(mixed_text | any_text, min_size=10, max_size=40))
def test_tokens_equal_re(texts):
    assert tokens(texts, "unicode") == [UnicodeTokenizer().tokenize(t) for t in texts]


@settings(max_examples=examples(55), deadline=None)
@given(st.lists(mixed_text, min_size=10, max_size=40))
def test_auto_without_lang_equals_the_script_oracle(texts):
    assert tokens(texts, "auto") == [AutoTokenizer().tokenize(t) for t in texts]


@settings(max_examples=examples(35), deadline=None)
@given(st.lists(st.tuples(mixed_text, mixed_text,
                          st.sampled_from(["en", "zh", "ru", "ja", "de", "und", None])),
                min_size=8, max_size=20))
def test_auto_equals_the_chosen_package_tokenizer(rows):
    refs, preds, langs = ([r[i] for r in rows] for i in range(3))
    got = ours(refs, preds, "auto", langs)
    default = rouge_scorer.RougeScorer(list(TYPES))
    by_text = rouge_scorer.RougeScorer(list(TYPES), tokenizer=AutoTokenizer())
    for (ref, pred, lang), mine in zip(rows, got, strict=True):
        scorer = by_text if lang in (None, "und") else default if lang in ("en", "de") else SCORER
        assert mine == {k: tuple(v) for k, v in scorer.score(ref, pred).items()}


@settings(max_examples=examples(35), deadline=None)
@given(st.lists(mixed_text, min_size=8, max_size=20))
def test_identity_scores_one_when_there_are_tokens(texts):
    for text, row in zip(texts, ours(texts, texts), strict=True):
        expected = 1.0 if UnicodeTokenizer().tokenize(text) else 0.0
        assert row["rouge1"][2] == row["rougeL"][2] == expected


def test_unicode_tokens_directly():
    frame = pl.DataFrame({"t": ["Ünïcode 東京"]})
    assert frame.select(unicode_rouge_tokens(pl.col("t"))).item().to_list() == [
        "ünïcode", "東", "京"]
