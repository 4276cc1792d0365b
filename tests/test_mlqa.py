"""Answer EM/F1 by the official MLQA v1 script: an oracle transcribed from
``mlqa_evaluation_v1.py`` (facebookresearch/MLQA), golden rows and property tests."""

from __future__ import annotations

import functools
import json
import re
import string
import sys
import unicodedata
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from conftest import examples, records
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import squad_scores

from pipeline.config import Config
from pipeline.metrics.qa.answer_mlqa import (
    answer_scores,
    is_latin_text,
    mlqa_exact,
    mlqa_f1,
    squad_rows,
)
from pipeline.scoring import score_frame
from pipeline.text.mlqa import (
    SPACELESS_RANGES,
    mlqa_normalized,
    mlqa_tokens,
    mlqa_tokens_each,
    punctuation_class,
    spaceless_class,
)

GOLDEN = Path(__file__).parent / "golden" / "squad_adversarial.jsonl"

# --- The oracle: mlqa_evaluation_v1.py, one row at a time ------------------------------------

@functools.cache
def punct() -> frozenset[str]:
    """The script's ``PUNCT``, built when a test first needs it (a pass over every code point,
    about 1 s: not while each worker collects the tests)."""
    return frozenset({
        chr(i) for i in range(sys.maxunicode) if unicodedata.category(chr(i)).startswith("P")
    }.union(string.punctuation))
WHITESPACE_LANGS = ["en", "es", "hi", "vi", "de", "ar"]
MIXED_SEGMENTATION_LANGS = ["zh"]


def mixed_segmentation(text: str) -> list[str]:
    segs_out: list[str] = []
    temp_str = ""
    for char in text:
        if re.search(r"[\u4e00-\u9fa5]", char) or char in punct():
            if temp_str != "":
                segs_out.extend(temp_str.split())
                temp_str = ""
            segs_out.append(char)
        else:
            temp_str += char
    if temp_str != "":
        segs_out.extend(temp_str.split())
    return segs_out


def _spaceless(ch: str) -> bool:
    return any(a <= ord(ch) <= b for a, b in SPACELESS_RANGES) and not ch.isspace()


def extension_segmentation(text: str) -> list[str]:
    """The documented extension for codes MLQA does not know: each character of a spaceless
    script with the marks of such scripts that follow it; other runs split at whitespace."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        j = i + 1
        if _spaceless(ch):
            while (j < len(text) and _spaceless(text[j])
                   and unicodedata.category(text[j]).startswith("M")):
                j += 1
        else:
            while j < len(text) and not text[j].isspace() and not _spaceless(text[j]):
                j += 1
        out.append(text[i:j])
        i = j
    return out


def normalize_answer(s: str, lang: str | None) -> str:
    def remove_articles(text: str, lang: str | None) -> str:
        if lang == "en":
            return re.sub(r"\b(a|an|the)\b", " ", text)
        if lang == "es":
            return re.sub(r"\b(un|una|unos|unas|el|la|los|las)\b", " ", text)
        if lang == "vi":
            return re.sub(r"\b(của|là|cái|chiếc|những)\b", " ", text)
        if lang == "de":
            return re.sub(
                r"\b(ein|eine|einen|einem|eines|einer|der|die|das|den|dem|des)\b", " ", text
            )
        if lang == "ar":
            return re.sub("\\sال^|ال", " ", text)
        return text  # hi, zh; and no articles under the extension

    def white_space_fix(text: str, lang: str | None) -> str:
        if lang in WHITESPACE_LANGS:
            tokens = text.split()
        elif lang in MIXED_SEGMENTATION_LANGS:
            tokens = mixed_segmentation(text)
        else:
            tokens = extension_segmentation(text)
        return " ".join([t for t in tokens if t.strip() != ""])

    def remove_punc(text: str) -> str:
        punctuation = punct()
        return "".join(ch for ch in text if ch not in punctuation)

    return white_space_fix(remove_articles(remove_punc(s.lower()), lang), lang)


def f1_score(prediction: str, ground_truth: str, lang: str | None) -> float:
    prediction_tokens = normalize_answer(prediction, lang).split()
    ground_truth_tokens = normalize_answer(ground_truth, lang).split()
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def exact_match_score(prediction: str, ground_truth: str, lang: str | None) -> bool:
    return normalize_answer(prediction, lang) == normalize_answer(ground_truth, lang)


def mlqa_scores(golds: list[str], pred: str, lang: str | None) -> tuple[int, float]:
    """(EM, F1) as ``metric_max_over_ground_truths`` takes them."""
    exact = max(exact_match_score(pred, g, lang) for g in golds)
    f1 = max(f1_score(pred, g, lang) for g in golds)
    return int(exact), float(f1)


# --- Helpers ---------------------------------------------------------------------------------


def scores(
    golds: list[list[str]], preds: list[str], langs: list[str | None], scorer: str = "mlqa"
) -> pl.DataFrame:
    n = max(len(g) for g in golds)
    frame = pl.DataFrame(
        {"response": preds, "reference": [g[0] for g in golds],
         "references": [g[1:] or None for g in golds], "lang": langs},
        schema={"response": pl.String, "reference": pl.String,
                "references": pl.List(pl.String), "lang": pl.String},
    )
    scored = answer_scores(pl.col("response"), pl.col("reference"), pl.col("references"),
                           pl.col("lang"), scorer=scorer, n_candidates=n)  # type: ignore[arg-type]
    return frame.lazy().select(scored.struct.unnest()).rename(
        {"answer_em": "em", "answer_f1": "f1"}).collect()


def expected(golds: list[str], pred: str, lang: str | None, scorer: str) -> tuple[int, float]:
    if scorer == "squad-v2" or (scorer == "auto" and lang == "en"):
        return squad_scores(golds, pred)
    return mlqa_scores(golds, pred, lang)


# --- Golden rows -----------------------------------------------------------------------------

ZH_REFERENCE = "2022年冬奥会在北京举行。"


def test_chinese_answer_inside_sentence_gets_partial_f1():
    out = scores([[ZH_REFERENCE]], ["北京"], ["zh"])
    # 2 shared characters: precision 2/2, recall 2/10.
    assert out.row(0) == (0, (2 * 1.0 * 0.2) / (1.0 + 0.2))
    assert out["f1"].item() == pytest.approx(1 / 3, abs=1e-12)
    assert mlqa_scores([ZH_REFERENCE], "北京", "zh") == (0, out["f1"].item())
    # Whitespace tokenization (SQuAD v2) sees one token on each side.
    assert scores([[ZH_REFERENCE]], ["北京"], ["en"], "squad-v2").row(0) == (0, 0.0)


@pytest.mark.parametrize(
    ("golds", "pred", "lang", "em", "f1"),
    [
        (["北京"], "北京。", "zh", 1, 1.0),
        (["《北京》"], "北 京", "zh", 1, 1.0),
        (["北京"], "北京市", "zh", 0, 0.8),
        (["الكتاب"], "كتاب", "ar", 1, 1.0),  # every ال is a space, inside words too
        (["Der Hund"], "hund!", "de", 1, 1.0),
        (["Los Ángeles"], "ángeles", "es", 1, 1.0),
        (["của tôi"], "tôi", "vi", 1, 1.0),
        (["भारत।"], "भारत", "hi", 1, 1.0),
        (["“The” cat"], "cat", "en", 1, 1.0),  # curly quotes are PUNCT, not string.punctuation
        (["東京タワー"], "東京", "ja", 0, 2 * 1.0 * 0.4 / 1.4),
        (["กินข้าว"], "ข้าว", "th", 0, 2 * 1.0 * 0.6 / 1.6),
        ([""], "", "zh", 1, 0.0),  # MLQA: no overlap is 0, even for two empty answers
        (["the"], "", "en", 1, 0.0),
        (["a an\tthe\u3000a x"], "x", "en", 1, 1.0),  # articles one character apart
        (["the-a x"], "x", "en", 0, 2 * 0.5 / 1.5),  # punctuation goes first: "thea x"
        (["der die das den"], "", "de", 1, 0.0),
        (["", "Paris"], "Paris", "en", 1, 1.0),
        (["", "x"], "", "en", 1, 0.0),  # an empty reference is not skipped
    ],
)
def test_golden_rows(golds, pred, lang, em, f1):
    out = scores([golds], [pred], [lang])
    assert out["em"].item() == em
    assert out["f1"].item() == pytest.approx(f1, abs=1e-12)
    assert mlqa_scores(golds, pred, lang) == (em, pytest.approx(f1, abs=1e-12))


def test_empty_answers_differ_between_scorers():
    golds, preds = [["", "x"], [""]], ["", ""]
    assert scores(golds, preds, ["en", "en"], "mlqa").rows() == [(1, 0.0), (1, 0.0)]
    assert scores(golds, preds, ["en", "en"], "squad-v2").rows() == [(0, 0.0), (1, 1.0)]


def test_english_rows_through_auto_equal_registry_squad_values():
    rows = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()]
    golds = [r["references"] for r in rows]
    preds = [r["prediction"] for r in rows]
    registry = score_frame(
        records([{"reference": g[0], "references": g[1:] or None, "response": p}
                 for g, p in zip(golds, preds, strict=True)]),
        Config(metrics=("answer",), strip_citation_markers=False),
    ).collect()
    for langs in (["en"] * len(rows), [None] * len(rows)):
        out = scores(golds, preds, langs, "auto")
        assert out["em"].to_list() == registry["answer_em"].to_list()
        assert out["f1"].to_list() == registry["answer_f1"].to_list()
        assert out["em"].to_list() == [r["em"] for r in rows]


def test_auto_picks_squad_for_english_and_unknown_latin_rows():
    frame = pl.DataFrame({
        "lang": ["en", "zh", "es", None, None, "und", "und", None],
        "response": ["北京", "Paris", "Paris", "Paris", "北京", "12 !", "Москва", None],
        "reference": ["x", "x", "x", "Ça", "x", "3", "x", None],
    })
    texts = [pl.col("response"), pl.col("reference")]
    out = frame.select(
        auto=squad_rows(pl.col("lang"), texts, scorer="auto"),
        squad=squad_rows(pl.col("lang"), texts, scorer="squad-v2"),
        mlqa=squad_rows(pl.col("lang"), texts, scorer="mlqa"),
    )
    assert out["auto"].to_list() == [True, False, False, True, False, True, False, True]
    assert out["squad"].to_list() == [True] * 8
    assert out["mlqa"].to_list() == [False] * 8
    with pytest.raises(ValueError, match="unknown answer scorer"):
        squad_rows(pl.col("lang"), texts, scorer="bleu")  # type: ignore[arg-type]


def test_nulls_stay_null():
    frame = pl.DataFrame({"t": [None, "北京"], "lang": ["zh", None]},
                         schema={"t": pl.String, "lang": pl.String})
    out = frame.select(mlqa_tokens(pl.col("t"), pl.col("lang")))["t"].to_list()
    assert out[0] is None
    assert list(out[1]) == ["北", "京"]  # a null code takes the extension
    assert scores([["x"]], [None], ["zh"]).row(0) == (None, None)  # type: ignore[list-item]
    latin = frame.select(is_latin_text(pl.col("t"))).to_series().to_list()
    assert latin == [None, False]


def test_token_list_functions_agree_with_their_definitions():
    frame = pl.DataFrame({"p": [["北", "京"], ["a", "a", "b"], []],
                          "r": [["北", "京", "市"], ["a", "b", "b"], []]})
    out = frame.select(em=mlqa_exact(pl.col("p"), pl.col("r")),
                       f1=mlqa_f1(pl.col("p"), pl.col("r")))
    assert out["em"].to_list() == [0, 0, 1]
    assert out["f1"].to_list() == [0.8, (2 * (2 / 3) * (2 / 3)) / (4 / 3), 0.0]


# --- Character classes -----------------------------------------------------------------------


def test_punctuation_class_is_the_scripts_punct_on_every_code_point():
    chars = [chr(cp) for cp in range(0x110000) if not 0xD800 <= cp < 0xE000]
    flags = pl.Series(chars, dtype=pl.String).to_frame("c").select(
        pl.col("c").str.contains(f"^[{punctuation_class()}]$")
    )
    assert flags.to_series().to_list() == [c in punct() for c in chars]


def test_spaceless_class_holds_no_whitespace_and_matches_the_ranges():
    chars = [chr(cp) for a, b in SPACELESS_RANGES for cp in range(a - 1, b + 2)]
    flags = pl.Series(chars, dtype=pl.String).to_frame("c").select(
        pl.col("c").str.contains(f"^[{spaceless_class()}]$")
    )
    assert flags.to_series().to_list() == [_spaceless(c) for c in chars]
    assert not any(_spaceless(c) for c in " \u3000\u2028\xa0")


# --- Property tests against the oracle -------------------------------------------------------

LANGS: list[str | None] = ["en", "es", "de", "vi", "ar", "hi", "zh", "ja", "th", "ko", "fr",
                           "und", None]

FRAGMENTS = [
    # Latin with accents and capitals, articles of every language (and near misses)
    "The", "the", "a", "an", "A", "théâtre", "Ça", "É", "ß", "İ", "ΣΑΣ", "x_y", "_", "9",
    "a a", "the-an\tthe", "la los", "der die€das", "của là",
    "el", "La", "los", "unas", "uno", "Der", "die", "das", "des", "ein", "einem", "Eines",
    # Vietnamese, precomposed and decomposed
    "của", "là", "cái", "chiếc", "những", "Những", "cu\u0309a", "la\u0300", "tôi", "Việt",
    # Chinese: in and out of [\u4e00-\u9fa5], full-width forms
    "北京", "举行", "年", "冬奥会", "㐀", "龦", "鿿", "\U00020000", "豈", "２０２２",
    # Japanese, Korean, Thai
    "東京", "タワー", "ひらがな", "ｶﾀｶﾅ", "ﾞ", "서울", "กิน", "ข้าว", "\u0e34",
    # Arabic and Devanagari
    "ال", "الكتاب", "كتاب", "\u0627\u0644\u0644\u0647", "٣", "भारत", "हिन्दी", "।", "॥",
    # punctuation of all kinds and symbols that are not PUNCT
    *".,!?;:'\"()[]{}-_/\\@#%&*", *"$+<=>^`|~", "。", "，", "「", "」", "《", "》", "！", "？",
    "、", "・", "«", "»", "¿", "¡", "—", "–", "‐", "·", "…", "“", "”", "‘", "’", "‿", "€",
    "©", "°", "²", "½", "\u0301", "\u200b", "\u200d",
    # whitespace variety
    " ", " ", " ", "\t", "\n", "\x0b", "\x1c", "\x1f", "\x85", "\xa0", "\u2028", "\u3000",
    "\u2009",
]
mixed_text = st.lists(
    st.sampled_from(FRAGMENTS) | st.characters(exclude_categories=("Cs",)), max_size=12
).map("".join)
lang_codes = st.sampled_from(LANGS)


@settings(max_examples=examples(90), deadline=None)
@given(st.lists(st.tuples(mixed_text, lang_codes), min_size=10, max_size=40))
def test_tokens_and_normalization_equal_the_script(rows):
    texts = [t for t, _ in rows]
    langs = [lang for _, lang in rows]
    frame = pl.DataFrame({"t": texts, "lang": langs}, schema={"t": pl.String, "lang": pl.String})
    out = frame.select(
        k=mlqa_tokens(pl.col("t"), pl.col("lang")),
        n=mlqa_normalized(pl.col("t"), pl.col("lang")),
    )
    normalized = [normalize_answer(t, lang) for t, lang in rows]
    assert out["n"].to_list() == normalized
    assert [list(k) for k in out["k"].to_list()] == [n.split() for n in normalized]


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(mixed_text, min_size=1, max_size=10), st.sampled_from(LANGS[:-1]))
def test_fixed_language_equals_per_row_language(texts, lang):
    frame = pl.DataFrame({"t": texts}, schema={"t": pl.String})
    fixed = frame.select(mlqa_tokens(pl.col("t"), lang)).to_series().to_list()
    each = frame.select(mlqa_tokens_each(pl.concat_list(pl.col("t")), lang)).to_series()
    assert [list(k) for k in fixed] == [normalize_answer(t, lang).split() for t in texts]
    assert [list(k[0]) for k in each.to_list()] == [list(k) for k in fixed]


# Whole columns per example (one scoring run scores 10-30 rows): thousands of rows are compared
# with the script at a fraction of the polars calls.
@settings(max_examples=examples(65), deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.lists(mixed_text, min_size=1, max_size=3), mixed_text,
                  lang_codes.filter(lambda c: c not in ("und", None))),
        min_size=10, max_size=30,
    ),
    scorer=st.sampled_from(["mlqa", "auto"]),
)
def test_em_f1_equal_the_script(rows, scorer):
    golds = [g for g, _, _ in rows]
    langs = [lang for _, _, lang in rows]
    # Responses often share fragments with a reference, so F1 strictly between 0 and 1 occurs.
    preds = [p + g[0][: len(g[0]) // 2] if i % 2 else p for i, (g, p, _) in enumerate(rows)]
    out = scores(golds, preds, langs, scorer)
    for g, p, lang, em, f1 in zip(golds, preds, langs, out["em"], out["f1"], strict=True):
        expected_em, expected_f1 = expected(g, p, lang, scorer)
        assert em == expected_em, (g, p, lang)
        assert f1 == float(expected_f1), (g, p, lang)  # same float operations: bit for bit
