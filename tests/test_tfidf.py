"""TF-IDF relevance: the worked example, hand-computed pairs and a per-row Counter oracle."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.metrics.lexical.tfidf import (
    DocumentFrequencies,
    IdfTable,
    SpilledDocumentFrequencies,
    tfidf_relevance,
    tfidf_tokens,
)

GOLDEN = json.loads(
    (Path(__file__).parent / "golden" / "tfidf_worked_example.json").read_text("utf-8")
)
CORPUS = pl.Series(GOLDEN["corpus"])


# --- oracle: one text at a time with Counter and math.log -------------------------------------
def oracle_tokens(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.lower())


def oracle_idf(texts: list[str | None]) -> dict[str, float]:
    documents = {t for t in texts if t is not None}
    df = Counter(word for text in documents for word in set(oracle_tokens(text)))
    return {word: math.log(len(documents) / n) for word, n in df.items()}


def oracle_cosine(question: str, response: str, idf: dict[str, float]) -> float:
    def vector(text: str) -> dict[str, float]:
        tokens = oracle_tokens(text)
        return {w: n / len(tokens) * idf.get(w, 0.0) for w, n in Counter(tokens).items()}

    q, r = vector(question), vector(response)
    dot = sum(weight * r.get(word, 0.0) for word, weight in q.items())
    q_norm = math.sqrt(sum(w * w for w in q.values()))
    r_norm = math.sqrt(sum(w * w for w in r.values()))
    return 0.0 if q_norm == 0 or r_norm == 0 else min(dot / (q_norm * r_norm), 1.0)


# --- helpers ---------------------------------------------------------------------------------
def score(questions, responses, table: IdfTable) -> list[float | None]:
    frame = pl.DataFrame({"q": questions, "r": responses}, schema={"q": pl.String, "r": pl.String})
    return frame.select(tfidf_relevance(pl.col("q"), pl.col("r"), table)).to_series().to_list()


# --- golden ----------------------------------------------------------------------------------
def test_worked_example_is_three_sevenths():
    table = IdfTable.from_texts(CORPUS)
    assert score([CORPUS[0]], [CORPUS[1]], table)[0] == pytest.approx(3 / 7, abs=1e-15)


def test_golden_pairs():
    table = IdfTable.from_texts(CORPUS)
    idf = oracle_idf(GOLDEN["corpus"])
    pairs = GOLDEN["pairs"]
    values = score([p["question"] for p in pairs], [p["response"] for p in pairs], table)
    for pair, value in zip(pairs, values, strict=True):
        assert value == pytest.approx(pair["score"], abs=1e-15), pair["note"]
        assert oracle_cosine(pair["question"], pair["response"], idf) == pytest.approx(
            pair["score"], abs=1e-15
        ), pair["note"]


def test_idf_table_of_the_worked_example():
    table = IdfTable.from_texts(CORPUS)
    ln2 = math.log(2)
    assert table.n_documents == 4
    assert table.idf_of("the") == 0.0
    assert table.idf_of("cat") == pytest.approx(ln2, abs=1e-15)
    assert table.idf_of("sits") == pytest.approx(2 * ln2, abs=1e-15)
    assert table.idf_of("unseen") == 0.0
    assert table.to_dict() == pytest.approx(oracle_idf(GOLDEN["corpus"]), abs=1e-15)
    assert table.table.columns == ["word", "df", "idf"]


def test_repeated_texts_count_once():
    repeated = pl.concat([CORPUS, CORPUS, CORPUS.head(2), pl.Series([None], dtype=pl.String)])
    table = IdfTable.from_texts(repeated)
    assert table.n_documents == 4
    assert table.to_dict() == IdfTable.from_texts(CORPUS).to_dict()


def test_batches_equal_one_pass():
    frequencies = DocumentFrequencies()
    frequencies.add(CORPUS.head(2))
    frequencies.add(CORPUS.slice(1))  # "the cat is on the mat" is seen again
    frequencies.add(pl.Series([], dtype=pl.String))
    assert frequencies.n_documents == 4
    assert frequencies.idf().to_dict() == IdfTable.from_texts(CORPUS).to_dict()


def test_empty_table_and_empty_texts_score_zero():
    empty = IdfTable.from_texts(pl.Series([], dtype=pl.String))
    assert empty.n_documents == 0 and empty.table.height == 0
    assert score(["a b"], ["a b"], empty) == [0.0]
    table = IdfTable.from_texts(pl.Series(["", "a", "b"]))  # "" is a document
    assert table.n_documents == 3
    assert score(["", "a", ""], ["a", "", ""], table) == [0.0, 0.0, 0.0]


def test_nulls_propagate():
    table = IdfTable.from_texts(CORPUS)
    assert score([None, "cat", None], ["cat", None, None], table) == [None, None, None]


def test_literal_question_broadcasts():
    table = IdfTable.from_texts(CORPUS)
    frame = pl.DataFrame({"r": ["cat", "mat", "the"]})
    out = frame.select(tfidf_relevance(pl.lit("cat"), pl.col("r"), table)).to_series()
    assert out.to_list() == [1.0, 0.0, 0.0]


def test_streaming_engine_matches_eager():
    table = IdfTable.from_texts(CORPUS)
    frame = pl.DataFrame({"q": list(CORPUS) * 50, "r": list(reversed(CORPUS)) * 50})
    expr = tfidf_relevance(pl.col("q"), pl.col("r"), table)
    eager = frame.select(expr).to_series()
    streamed = frame.lazy().select(expr).collect(engine="streaming").to_series()
    assert streamed.to_list() == eager.to_list()


def test_from_frequencies_checks_counts():
    for df in (3, 0):
        with pytest.raises(ValueError, match=r"document frequencies must lie in \[1, 2\]"):
            IdfTable.from_frequencies(pl.DataFrame({"word": ["a"], "df": [df]}), n_documents=2)


def test_tokens():
    text = pl.lit("Don't STOP_me: Café-42, naïve 3.5")
    tokens = pl.select(tfidf_tokens(text)).item().to_list()
    assert tokens == ["don", "t", "stop", "me", "café", "42", "naïve", "3", "5"]


# --- properties ------------------------------------------------------------------------------
WORDS = ["the", "The", "cat", "CAT", "mat", "a", "b", "café", "Über", "42", "x_y", "dog", "on"]
SEPARATORS = [" ", ", ", "-", "  ", "!", "\n", "'"]
texts = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=7).map(
    lambda parts: "".join(word + sep for word, sep in parts)
)


# Corpora of 6-20 pairs (hypothesis draws lists near their minimum size): as many pairs as
# before against the oracle, in larger corpora, at a fraction of the polars runs.
@settings(max_examples=examples(95), deadline=None)
@given(st.lists(st.tuples(texts, texts), min_size=6, max_size=20), st.lists(texts, max_size=4))
def test_equals_oracle(pairs, extra):
    questions, responses = [p[0] for p in pairs], [p[1] for p in pairs]
    corpus = questions + responses + extra
    table = IdfTable.from_texts(pl.Series(corpus, dtype=pl.String))
    idf = oracle_idf(corpus)
    assert table.to_dict() == pytest.approx(idf, abs=1e-12)
    expected = [oracle_cosine(q, r, idf) for q, r in pairs]
    assert score(questions, responses, table) == pytest.approx(expected, abs=1e-12)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(texts, max_size=12), st.integers(min_value=1, max_value=5))
def test_batched_frequencies_equal_one_pass(corpus, n_batches):
    series = pl.Series(corpus, dtype=pl.String)
    frequencies = DocumentFrequencies()
    for k in range(n_batches):
        # Interleaved slices; a batch past the end re-adds everything (all already seen).
        frequencies.add(series.gather_every(n_batches, offset=k) if k < len(series) else series)
    one_pass = IdfTable.from_texts(series)
    assert frequencies.n_documents == one_pass.n_documents
    assert frequencies.idf().to_dict() == one_pass.to_dict()


@settings(max_examples=examples(40), deadline=None)
@given(st.lists(st.one_of(st.none(), texts), max_size=12), st.integers(min_value=1, max_value=4))
def test_spilled_frequencies_equal_in_memory(tmp_path_factory, corpus, n_batches):
    series = pl.Series(corpus, dtype=pl.String)
    spilled = SpilledDocumentFrequencies(tmp_path_factory.mktemp("df") / "words.parquet")
    in_memory = DocumentFrequencies()
    for k in range(n_batches):
        batch = series.gather_every(n_batches, offset=k) if k < len(series) else series
        spilled.add(batch)
        in_memory.add(batch)
    got, expected = spilled.idf(), in_memory.idf()
    assert got.n_documents == expected.n_documents
    assert got.table.equals(expected.table)


def test_spilled_frequencies_of_nothing(tmp_path):
    table = SpilledDocumentFrequencies(tmp_path / "words.parquet").idf()
    assert (table.n_documents, table.table.height) == (0, 0)
