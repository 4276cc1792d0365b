"""The compiled BLEU and ROUGE kernels against the reference packages themselves.

``bleu.text_statistics`` and ``bleu.bleu`` against ``sacrebleu`` (13a, and the per-row choice of
``auto``), ``rouge.rouge_text_statistics`` against ``rouge_score`` (with and without the stemmer,
every tokenizer of :mod:`pipeline.text.rouge_tokenize`), on ASCII, mixed and empty or null texts.
"""

from __future__ import annotations

import collections
import sys

import polars as pl
import pytest
import sacrebleu
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score import rouge_scorer, tokenize
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

from pipeline.metrics.lexical import bleu, rouge
from pipeline.text.kernels.bleu import SPACE_POINTS
from pipeline.text.rouge_tokenize import rouge_tokens_for
from pipeline.text.tokenize_13a import tokens_13a
from pipeline.text.tokenize_sacrebleu import bleu_tokens

# Words that exercise 13a (entities, '<skipped>', '-\n', digits around '.', ',' and '-'),
# rouge-score (case, the Kelvin sign, dotted I) and wide whitespace, and arbitrary text.
WORDS = [
    "the", "The", "cat", "cats", "running", "a", "3.5", "1,000", "2019.", "U.S.", "x-", "-\n",
    "\n", "&amp;", "&quot;", "&lt;b&gt;", "<skipped>", "(so)", "don't", "e-mail", "-", ",", ".",
    "\u212aelvin", "\u0130stanbul", "caf\u00e9", "\u6771\u4eac", "\u3000", "\u00a0", "\u2028",
    "\x1c", "\t", "", "Stra\u00dfe", "--", "1-2", "a.b,c",
]
ASCII_WORDS = [word for word in WORDS if word.isascii()]
word = st.sampled_from(WORDS) | st.text(st.characters(exclude_categories=("Cs",)), max_size=5)
ascii_word = st.sampled_from(ASCII_WORDS) | st.text(
    st.characters(min_codepoint=0, max_codepoint=127), max_size=5
)
mixed_text = st.lists(word, max_size=25).map(" ".join)
ascii_text = st.lists(ascii_word, max_size=25).map(" ".join)
any_text = st.one_of(mixed_text, ascii_text, st.none())
# Whole columns per example (10-30 rows in one polars run): as many rows as before are compared
# with the packages at a fraction of the polars calls.
pairs = st.lists(st.tuples(any_text, any_text), min_size=10, max_size=30)
SCORERS = {stem: rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=stem)
           for stem in (False, True)}


def frame(rows: list[tuple[str | None, str | None]]) -> pl.DataFrame:
    return pl.DataFrame({"hyp": [h for h, _ in rows], "ref": [r for _, r in rows]},
                        schema={"hyp": pl.String, "ref": pl.String})


def ngram_overlap(a: list[str], b: list[str], n: int) -> int:
    count_a = collections.Counter(tuple(a[i : i + n]) for i in range(len(a) - n + 1))
    count_b = collections.Counter(tuple(b[i : i + n]) for i in range(len(b) - n + 1))
    return sum(min(count, count_b[gram]) for gram, count in count_a.items())


def sacrebleu_statistics(hyp: str, ref: str) -> dict[str, int]:
    # ``[hyp_len, ref_len, *correct, *total]`` of ``BLEU._compute_segment_statistics``.
    stats = sacrebleu.BLEU(effective_order=True)._extract_corpus_statistics([hyp], [[ref]])[0]
    tokens = Tokenizer13a()
    assert stats[0] == len(tokens(hyp.rstrip()).split())
    return {**{f"matches_{n}": int(stats[1 + n]) for n in range(1, 5)},
            "hyp_len": int(stats[0]), "ref_len": int(stats[1])}


def rouge_expected(hyp: str, ref: str, tokens: object) -> dict[str, int]:
    pred_tokens, ref_tokens = tokens(hyp), tokens(ref)  # type: ignore[operator]
    lcs = 0
    if pred_tokens and ref_tokens:
        lcs = rouge_scorer._lcs_table(ref_tokens, pred_tokens)[-1][-1]
    return {"overlap_1": ngram_overlap(pred_tokens, ref_tokens, 1),
            "overlap_2": ngram_overlap(pred_tokens, ref_tokens, 2),
            "lcs": lcs, "n_pred": len(pred_tokens), "n_ref": len(ref_tokens)}


def test_space_points_are_the_interpreters() -> None:
    spaces = tuple(c for c in range(sys.maxunicode + 1) if chr(c).isspace())
    assert spaces == SPACE_POINTS


@settings(max_examples=examples(40), deadline=None)
@given(rows=pairs)
def test_bleu_statistics_and_scores_equal_sacrebleu(rows) -> None:
    data = frame(rows)
    stats = data.select(s=bleu.text_statistics(pl.col("hyp"), pl.col("ref"))).unnest("s")
    scores = data.select(bleu.bleu(pl.col("hyp"), pl.col("ref"))).to_series()
    # A null side scores as the token-list path always did (0.0 against an empty text).
    listed = data.select(bleu._scored(pl.col("hyp"), pl.col("ref"), tokens_13a,
                                      bleu.sentence_bleu)).to_series()
    assert scores.equals(listed)
    for (hyp, ref), got, score in zip(rows, stats.iter_rows(named=True), scores, strict=True):
        if hyp is None or ref is None:
            assert got["matches_1"] is None
            assert (got["hyp_len"] is None) == (hyp is None)
            assert (got["ref_len"] is None) == (ref is None)
            continue
        assert got == sacrebleu_statistics(hyp, ref)
        assert score == min(sacrebleu.sentence_bleu(hyp, [ref]).score / 100, 1.0)


@settings(max_examples=examples(20), deadline=None)
@given(rows=pairs, data=st.data())
def test_auto_bleu_statistics_equal_the_expression_tokens(rows, data) -> None:
    langs = data.draw(st.lists(st.sampled_from(["en", "zh", "ja", None, "ko", "fr"]),
                               min_size=len(rows), max_size=len(rows)))
    table = frame(rows).with_columns(lang=pl.Series(langs, dtype=pl.String))
    lang = pl.col("lang")
    got = table.select(
        s=bleu.text_statistics(pl.col("hyp"), pl.col("ref"), "auto", lang)
    ).unnest("s")
    tokens = table.select(h=bleu_tokens(pl.col("hyp"), "auto", lang),
                          r=bleu_tokens(pl.col("ref"), "auto", lang))
    expected = tokens.select(
        **bleu.bleu_statistics(pl.col("h"), pl.col("r"))
    ).select(got.columns)
    assert got.equals(expected)


@settings(max_examples=examples(40), deadline=None)
@given(rows=pairs, stem=st.booleans())
def test_rouge_statistics_equal_rouge_score(rows, stem) -> None:
    got = frame(rows).select(
        s=rouge.rouge_text_statistics(pl.col("hyp"), pl.col("ref"), "rouge-score", stem=stem)
    ).unnest("s")
    scorer = SCORERS[stem]
    for (hyp, ref), row in zip(rows, got.iter_rows(named=True), strict=True):
        if hyp is None or ref is None:
            assert row["overlap_1"] is None and row["lcs"] is None
            assert (row["n_pred"] is None) == (hyp is None)
            continue
        assert row == rouge_expected(hyp, ref, scorer._tokenizer.tokenize)


@settings(max_examples=examples(20), deadline=None)
@given(rows=pairs, stem=st.booleans(), tokenizer=st.sampled_from(["auto", "unicode"]),
       data=st.data())
def test_rouge_statistics_of_every_tokenizer_equal_the_expression(rows, stem, tokenizer, data
                                                                  ) -> None:
    langs = data.draw(st.lists(st.sampled_from(["en", "zh", "und", None, "ru"]),
                               min_size=len(rows), max_size=len(rows)))
    table = frame(rows).with_columns(lang=pl.Series(langs, dtype=pl.String))
    lang = pl.col("lang")
    got = table.select(s=rouge.rouge_text_statistics(
        pl.col("hyp"), pl.col("ref"), tokenizer, lang, stem)).unnest("s")
    tokens = table.select(p=rouge_tokens_for(pl.col("hyp"), tokenizer, lang, stem),
                          r=rouge_tokens_for(pl.col("ref"), tokenizer, lang, stem))
    for (p, r), row in zip(tokens.iter_rows(), got.iter_rows(named=True), strict=True):
        if p is None or r is None:
            assert row["overlap_1"] is None
            continue
        assert row == rouge_expected(p, r, lambda side: side)  # already tokens


def test_rouge_scores_of_ascii_rows_equal_the_package() -> None:
    rows = [("The cats ran!", "the cat runs"), ("", ""), ("a b c", ""), ("x", "X"),
            ("\u212aelvin", "kelvin"), ("Running fast, running far", "run far fast")]
    for stem in (False, True):
        got = frame(rows).select(
            s=rouge.rouge_text_statistics(pl.col("hyp"), pl.col("ref"), stem=stem)
        ).unnest("s")
        for (hyp, ref), row in zip(rows, got.iter_rows(named=True), strict=True):
            expected = SCORERS[stem].score(target=ref, prediction=hyp)
            f1 = row["overlap_1"] and 2 * row["overlap_1"] / (row["n_pred"] + row["n_ref"])
            assert f1 == pytest.approx(expected["rouge1"].fmeasure)


def test_long_rows_cross_word_boundaries() -> None:
    words = [f"w{k % 97}" for k in range(300)]
    hyp, ref = " ".join(words), " ".join(reversed(words[:150])) + " " + " ".join(words[100:])
    got = frame([(hyp, ref)]).select(
        s=rouge.rouge_text_statistics(pl.col("hyp"), pl.col("ref"))
    ).unnest("s").row(0, named=True)
    assert got == rouge_expected(hyp, ref, lambda text: tokenize.tokenize(text, None))


def test_lcs_over_the_cell_limit_is_null(monkeypatch: pytest.MonkeyPatch,
                                         caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(rouge, "MAX_LCS_CELLS", 10)
    got = frame([("a b c d", "a b c d"), ("a b", "a b")]).select(
        s=rouge.rouge_text_statistics(pl.col("hyp"), pl.col("ref"))
    ).unnest("s")
    assert got["lcs"].to_list() == [None, 2]
    assert got["overlap_1"].to_list() == [4, 2]
    assert "ROUGE-L" in caplog.text


def test_empty_batches_and_literals() -> None:
    empty = frame([]).select(
        b=bleu.text_statistics(pl.col("hyp"), pl.col("ref")),
        r=rouge.rouge_text_statistics(pl.col("hyp"), pl.col("ref")),
    )
    assert empty.height == 0
    literal = frame([("a b", "a"), ("b", None)]).select(
        s=rouge.rouge_text_statistics(pl.col("hyp"), pl.lit("a b"))
    ).unnest("s")
    assert literal["overlap_1"].to_list() == [2, 1]


def test_token_list_statistics_equal_the_numpy_kernels() -> None:
    table = pl.DataFrame({"p": [["a", "b", "a"], [], None, ["x"] * 70],
                          "r": [["b", "a"], ["a"], ["a"], ["x"] * 65]})
    got = table.select(s=rouge.rouge_token_statistics(pl.col("p"), pl.col("r"))).unnest("s")
    old = table.select(s=rouge.rouge_statistics(pl.col("p"), pl.col("r"))).unnest("s")
    assert got.select(old.columns).equals(old)
    assert got["n_pred"].to_list() == [3, 0, None, 70]
