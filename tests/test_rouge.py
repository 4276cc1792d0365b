"""ROUGE-1/2/L parity with the ``rouge-score`` package: golden rows, property tests, invariants."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import polars as pl
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.stem import porter
from rouge_score import rouge_scorer, tokenize

from pipeline.metrics.lexical import rouge
from pipeline.metrics.lexical.rouge import (
    lcs_length,
    ngram_overlap,
    rouge_fmeasure,
    rouge_precision,
    rouge_recall,
)
from pipeline.text import rouge_tokenize
from pipeline.text.rouge_tokenize import rouge_tokens

GOLDEN = Path(__file__).parent / "golden" / "rouge_adversarial.jsonl"
TYPES = ("rouge1", "rouge2", "rougeL")
SCORES = ("precision", "recall", "fmeasure")


def statistics(pred: pl.Expr, ref: pl.Expr) -> dict[str, pl.Expr]:
    """Sufficient statistics of every ROUGE type, named ``{type}_{overlap|n_pred|n_ref}``."""
    stats: dict[str, pl.Expr] = {}
    for name, n in (("rouge1", 1), ("rouge2", 2)):
        overlap, n_pred, n_ref = ngram_overlap(pred, ref, n)
        stats |= {f"{name}_overlap": overlap, f"{name}_n_pred": n_pred, f"{name}_n_ref": n_ref}
    stats["rougeL_overlap"] = lcs_length(pred, ref)
    stats["rougeL_n_pred"] = pred.list.len().cast(pl.Int64)
    stats["rougeL_n_ref"] = ref.list.len().cast(pl.Int64)
    return stats


def score(
    references: list[str | None], predictions: list[str | None], *, stem: bool
) -> pl.DataFrame:
    """Tokens, then statistics, then scores: each stage stored as columns, as the pipeline does."""
    frame = pl.DataFrame(
        {"reference": references, "prediction": predictions},
        schema={"reference": pl.String, "prediction": pl.String},
    )
    scores: dict[str, pl.Expr] = {}
    for name in TYPES:
        counts = [pl.col(f"{name}_{s}") for s in ("overlap", "n_pred", "n_ref")]
        scores[f"{name}_precision"] = rouge_precision(*counts)
        scores[f"{name}_recall"] = rouge_recall(*counts)
        scores[f"{name}_fmeasure"] = rouge_fmeasure(*counts)
    return (
        frame.lazy()
        .with_columns(
            ref=rouge_tokens(pl.col("reference"), stem=stem),
            pred=rouge_tokens(pl.col("prediction"), stem=stem),
        )
        .with_columns(**statistics(pl.col("pred"), pl.col("ref")))
        .with_columns(**scores)
        .collect()
    )


def package_scores(
    references: list[str], predictions: list[str], *, stem: bool
) -> list[dict[str, tuple[float, float, float]]]:
    scorer = rouge_scorer.RougeScorer(list(TYPES), use_stemmer=stem)
    return [
        {k: tuple(v) for k, v in scorer.score(target=r, prediction=p).items()}
        for r, p in zip(references, predictions, strict=True)
    ]


def ours(frame: pl.DataFrame) -> list[dict[str, tuple[float, float, float]]]:
    rows = frame.select(f"{t}_{s}" for t in TYPES for s in SCORES).iter_rows(named=True)
    return [{t: tuple(row[f"{t}_{s}"] for s in SCORES) for t in TYPES} for row in rows]


def golden_rows() -> list[dict]:
    return [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(("stem", "key"), [(False, "scores"), (True, "scores_stemmed")])
def test_golden_rows_equal_rouge_score(stem, key):
    rows = golden_rows()
    refs, preds = [r["reference"] for r in rows], [r["prediction"] for r in rows]
    got = ours(score(refs, preds, stem=stem))
    expected = package_scores(refs, preds, stem=stem)
    for row, mine, theirs in zip(rows, got, expected, strict=True):
        # Bit-identical to the package, and the package still agrees with the committed values.
        assert mine == theirs, row["note"]
        assert {t: list(v) for t, v in theirs.items()} == row[key], row["note"]


def test_golden_rows_cover_the_adversarial_cases():
    rows = golden_rows()
    lengths = [len(tokenize.tokenize(r["reference"], None)) for r in rows]
    assert max(lengths) > 200 and {64, 65, 128, 129} <= set(lengths)
    assert any(r["reference"] == r["prediction"] == "" for r in rows)
    assert any("\u212a" in r["reference"] for r in rows)


# Words that exercise the tokenizer and the stemmer, plus arbitrary text (surrogates excluded).
WORDS = [
    "the", "The", "THE", "a", "cat", "cats", "running", "runs", "ran", "run", "generously",
    "organization", "dying", "skies", "1990s", "3,000", "COVID-19", "don't", "x\u00b2",
    "\u212aelvin", "\u0130stanbul", "caf\u00e9", "cafe\u0301", "Stra\u00dfe",
    "\u039f\u0394\u039f\u03a3", "\u5317\u4eac", "\uff11\uff12", "snake_case", "--", "!!!",
    "", " ", "\t", "\n", "\u00a0",
]
word = st.sampled_from(WORDS) | st.text(
    st.characters(exclude_categories=("Cs",)), max_size=6
)
text = st.lists(word, max_size=150).map(" ".join)
# Whole columns per example (hypothesis draws lists near their minimum size): as many rows as
# before are compared with the package at a fraction of the polars runs.
pair_texts = st.lists(st.tuples(text, text), min_size=6, max_size=15)


@settings(max_examples=examples(50), deadline=None)
@given(pairs=pair_texts, stem=st.booleans())
def test_scores_equal_rouge_score(pairs, stem):
    refs, preds = [r for r, _ in pairs], [p for _, p in pairs]
    assert ours(score(refs, preds, stem=stem)) == package_scores(refs, preds, stem=stem)


@settings(max_examples=examples(70), deadline=None)
@given(texts=st.lists(text, min_size=8, max_size=20), stem=st.booleans())
def test_tokens_equal_rouge_score_tokenizer(texts, stem):
    stemmer = porter.PorterStemmer() if stem else None
    frame = pl.DataFrame({"t": texts}, schema={"t": pl.String})
    got = frame.select(rouge_tokens(pl.col("t"), stem=stem)).to_series().to_list()
    assert [list(t) for t in got] == [tokenize.tokenize(t, stemmer) for t in texts]


def _lcs_oracle(a: list[str], b: list[str]) -> int:
    return rouge_scorer._lcs_table(b, a)[-1][-1] if a and b else 0


@settings(max_examples=examples(40), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from("abcde"), max_size=320),
            st.lists(st.sampled_from("abcdef"), max_size=320),
        ),
        min_size=1,
        max_size=5,
    )
)
def test_lcs_of_long_sequences_equals_dynamic_programming(pairs):
    frame = pl.DataFrame(
        {"p": [p for p, _ in pairs], "r": [r for _, r in pairs]},
        schema={"p": pl.List(pl.String), "r": pl.List(pl.String)},
    )
    got = frame.select(lcs_length(pl.col("p"), pl.col("r"))).to_series().to_list()
    assert got == [_lcs_oracle(p, r) for p, r in pairs]


def test_lcs_mixes_word_widths_in_one_batch():
    pairs = [
        (list("ab" * k), list("ba" * k + "c" * k)) for k in (1, 31, 32, 33, 64, 65, 150, 260)
    ]
    pairs += [([], list("abc")), (list("abc"), []), ([], [])]
    frame = pl.DataFrame({"p": [p for p, _ in pairs], "r": [r for _, r in pairs]})
    got = frame.select(lcs_length(pl.col("p"), pl.col("r"))).to_series().to_list()
    assert got == [_lcs_oracle(p, r) for p, r in pairs]


def _ngram_oracle(a: list[str], b: list[str], n: int) -> tuple[int, int, int]:
    ca = collections.Counter(tuple(a[i : i + n]) for i in range(len(a) - n + 1))
    cb = collections.Counter(tuple(b[i : i + n]) for i in range(len(b) - n + 1))
    return sum((ca & cb).values()), sum(ca.values()), sum(cb.values())


@settings(max_examples=examples(100), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from("abc"), max_size=40),
            st.lists(st.sampled_from("abcd"), max_size=40),
        ),
        min_size=1,
        max_size=6,
    ),
    st.integers(1, 5),
)
def test_ngram_statistics_equal_counters(pairs, n):
    frame = pl.DataFrame(
        {"p": [p for p, _ in pairs], "r": [r for _, r in pairs]},
        schema={"p": pl.List(pl.String), "r": pl.List(pl.String)},
    )
    overlap, n_pred, n_ref = ngram_overlap(pl.col("p"), pl.col("r"), n)
    got = frame.select(overlap.alias("o"), n_pred.alias("np"), n_ref.alias("nr")).rows()
    assert got == [_ngram_oracle(p, r, n) for p, r in pairs]


def test_sufficient_statistics_by_hand():
    out = score(["the cat sat on the cat"], ["The cat, the cat sat."], stem=False)
    # Unigrams: the 2, cat 2, sat 1 shared. Bigrams: "the cat" twice and "cat sat" once.
    # LCS: "the cat the cat".
    assert out.select(
        "rouge1_overlap", "rouge1_n_pred", "rouge1_n_ref",
        "rouge2_overlap", "rouge2_n_pred", "rouge2_n_ref",
        "rougeL_overlap", "rougeL_n_pred", "rougeL_n_ref",
    ).row(0) == (5, 5, 6, 3, 4, 5, 4, 5, 6)
    assert out["rouge2_precision"].item() == 3 / 4
    assert out["rouge2_recall"].item() == 3 / 5
    assert out["rougeL_fmeasure"].item() == 2 * (4 / 5) * (4 / 6) / (4 / 5 + 4 / 6)
    for column in out.columns:
        if column.endswith("_overlap") or column.endswith("_n_pred") or column.endswith("_n_ref"):
            assert out.schema[column] == pl.Int64


@pytest.mark.parametrize("stem", [False, True])
def test_identity_gives_one(stem):
    texts = ["Paris", "The cat sat on the mat.", "running runs " * 40, "a b a b a b"]
    out = score(texts, texts, stem=stem)
    for t in ("rouge1", "rougeL"):
        for s in SCORES:
            assert out[f"{t}_{s}"].to_list() == [1.0] * len(texts)
    # A single token has no bigram: the package scores ROUGE-2 as 0 there.
    assert out["rouge2_fmeasure"].to_list() == [0.0, 1.0, 1.0, 1.0]


def test_empty_sides_score_zero():
    out = score(["", "", "cat", "!!!"], ["", "cat", "", "?"], stem=False)
    for t in TYPES:
        for s in SCORES:
            assert out[f"{t}_{s}"].to_list() == [0.0] * 4


def test_null_text_gives_null_statistics_and_scores():
    out = score(["the cat", None, "a"], ["the cat", "a", None], stem=True)
    for column in ("rouge1_overlap", "rouge2_overlap", "rougeL_overlap", "rougeL_fmeasure"):
        assert out[column].to_list()[1:] == [None, None]
    assert out["rouge1_fmeasure"].to_list()[0] == 1.0


def test_empty_frame():
    out = score([], [], stem=True)
    assert out.height == 0 and out.schema["rougeL_overlap"] == pl.Int64


def test_small_key_and_chunk_limits_give_the_same_statistics(monkeypatch):
    # Forces renumbering of n-gram codes and many LCS chunks per length bucket.
    rows = golden_rows()
    refs, preds = [r["reference"] for r in rows], [r["prediction"] for r in rows]
    expected = score(refs, preds, stem=False)
    monkeypatch.setattr(rouge, "_KEY_LIMIT", 64)
    monkeypatch.setattr(rouge, "_MAX_CELLS", 64)
    assert score(refs, preds, stem=False).equals(expected)
    overlap, _, _ = ngram_overlap(pl.col("p"), pl.col("r"), 3)
    frame = pl.DataFrame({"p": [list("abcabcab")], "r": [list("cabcab")]})
    assert frame.select(overlap).item() == _ngram_oracle(list("abcabcab"), list("cabcab"), 3)[0]


def test_invalid_n_is_rejected():
    with pytest.raises(ValueError, match="n >= 1"):
        ngram_overlap(pl.col("p"), pl.col("r"), 0)


def test_null_tokens_inside_a_list_are_rejected():
    frame = pl.DataFrame({"p": [["a", None]], "r": [["a"]]})
    with pytest.raises(ValueError, match="null tokens"):
        frame.select(lcs_length(pl.col("p"), pl.col("r")))


def test_invalid_stems_are_dropped(monkeypatch):
    # No known Porter stem leaves [a-z0-9]+, but the package's final filter is reproduced.
    monkeypatch.setitem(rouge_tokenize._STEMS, "zzzzz", "")
    monkeypatch.setitem(rouge_tokenize._STEMS, "yyyyy", "y-y")
    got = pl.select(rouge_tokens(pl.lit("zzzzz cats yyyyy"), stem=True)).item().to_list()
    assert got == ["cat"]


def test_stems_are_cached_once_per_word():
    pl.select(rouge_tokens(pl.lit("unusualwordings unusualwordings"), stem=True))
    assert rouge_tokenize._STEMS["unusualwordings"] == porter.PorterStemmer().stem(
        "unusualwordings"
    )
    assert "cat" not in rouge_tokenize._STEMS  # three characters: never stemmed


def test_dense_ids_share_ids_across_sides():
    ids, pred_len, ref_len, bound = rouge._dense_ids(
        pl.Series([["b", "a"], []]), pl.Series([["a"], ["c", "b"]])
    )
    assert ids.tolist()[:2] == [ids[4], ids[2]] and ids[3] not in ids[:3]
    assert pred_len.tolist() == [2, 0] and ref_len.tolist() == [1, 2] and bound >= 3
