"""TF-IDF relevance of the enhanced text evaluation framework (preset ``enhanced-framework``).

Reproduces ``RelevanceEvaluator._calculate_tfidf_relevance`` of that framework
(docs/compat.md): scikit-learn 1.3.0's ``TfidfVectorizer(stop_words='english')`` with its
defaults (lowercase, token pattern ``(?u)\\b\\w\\w+\\b``, ``smooth_idf``, no sublinear tf, l2
norm) is fitted once on a fixed eight-document corpus
(``pipeline/data/enhanced-framework.tfidf_corpus.txt``), then transforms
``[preprocess_text(question), preprocess_text(response)]``; the score is the cosine of the two
rows. So the value depends on the two texts alone, not on the evaluated corpus.

* Vocabulary: the corpus documents' tokens (``(?u)\\b\\w\\w+\\b`` of the lowercased text) that
  are not in scikit-learn's ``ENGLISH_STOP_WORDS``
  (``pipeline/data/enhanced-framework.stopwords_en.txt``); ``idf(w) = ln((1 + n) / (1 + df(w)))
  + 1`` over its ``n = 8`` documents. Every word of that corpus occurs in one document, so all 28
  have idf ``ln 4.5 + 1``.
* Words of a text: ``preprocess_text``, i.e. ``re.sub(r"[^\\w\\s]", "", text.lower())`` split
  at whitespace (:func:`pipeline.text.tokenize.punctuation_deleted_words`): "physics." is
  ``physics``, "machine-learning" the unknown ``machinelearning``. Its words are whole ``\\w``
  runs, so scikit-learn's token pattern keeps them as they are (dropping one-character words,
  which are not in the vocabulary anyway); words outside the vocabulary are ignored.
* Score: ``dot(q, r) / (|q| |r|)`` of the vectors ``count(w) * idf(w)``, at most 1.0 against
  rounding; 0.0 when either vector is zero (no vocabulary word: most texts); null when either
  text is null (the framework's ``preprocess_text`` would make it ""; the pipeline's texts are
  never null where this metric runs).

Polars expressions only: each text is tokenized once, its vocabulary words become integer keys
(word id and side) in one list per row, and one ``list.eval`` sorts them, takes the run lengths
(the counts) and sums the weights (about 3 s per 100,000 rows).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping
from functools import cache

import polars as pl

from pipeline.rules.files import read_text
from pipeline.text.tokenize import punctuation_deleted_words

#: The fixed corpus and stop words the framework's vectorizer is fitted with.
CORPUS_FILE = "enhanced-framework.tfidf_corpus.txt"
STOPWORDS_FILE = "enhanced-framework.stopwords_en.txt"
#: scikit-learn's default ``token_pattern``.
SKLEARN_TOKEN_PATTERN = r"(?u)\b\w\w+\b"


def _lines(name: str) -> list[str]:
    """The non-empty lines of a bundled file that are not ``#`` comments."""
    text, _ = read_text(None, name)
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def smooth_idf(documents: list[str], stop_words: frozenset[str]) -> dict[str, float]:
    """``word -> idf`` of ``TfidfVectorizer(stop_words=...)`` fitted on ``documents`` with
    scikit-learn's defaults, sorted by word (its vocabulary order).

    >>> smooth_idf(["the cat sat", "a cat"], frozenset({"the"}))
    {'cat': 1.0, 'sat': 1.4054651081081644}
    """
    frequencies: Counter[str] = Counter()
    for document in documents:
        tokens = re.findall(SKLEARN_TOKEN_PATTERN, document.lower())
        frequencies.update({token for token in tokens if token not in stop_words})
    n = len(documents)
    return {word: math.log((1 + n) / (1 + df)) + 1 for word, df in sorted(frequencies.items())}


@cache
def framework_idf() -> dict[str, float]:
    """The idf of the framework's fixed corpus (``pipeline/data/`` files, read once)."""
    return smooth_idf(_lines(CORPUS_FILE), frozenset(_lines(STOPWORDS_FILE)))


def framework_tfidf_relevance(
    question: pl.Expr, response: pl.Expr, idf: Mapping[str, float] | None = None
) -> pl.Expr:
    """Cosine of the question's and the response's TF-IDF vectors over the fixed corpus
    (Float64 in [0, 1]), as the module docstring defines it; ``idf`` defaults to
    :func:`framework_idf`.

    >>> import polars as pl
    >>> q = pl.lit("What is machine learning?")
    >>> r = pl.lit("Machine learning is a kind of artificial intelligence.")
    >>> round(pl.select(framework_tfidf_relevance(q, r)).item(), 4)  # 2 / (sqrt 2 * sqrt 4)
    0.7071
    >>> pl.select(framework_tfidf_relevance(q, pl.lit("It is a kind of statistics."))).item()
    0.0
    """
    weights = framework_idf() if idf is None else idf
    words = list(weights)
    # Each side tokenized once: its vocabulary words as keys 2 * word id (question) and
    # 2 * word id + 1 (response), in one list per row.
    ids = {word: 2 * i for i, word in enumerate(words)}
    keys = pl.concat_list(
        punctuation_deleted_words(question).list.eval(
            pl.element().replace_strict(ids, default=None, return_dtype=pl.Int64).drop_nulls()
        ),
        punctuation_deleted_words(response).list.eval(
            pl.element().replace_strict(ids, default=None, return_dtype=pl.Int64).drop_nulls() + 1
        ),
    )
    # Sorted, equal keys form runs (the counts) and a word's question run directly precedes
    # its response run.
    runs = pl.element().sort().rle()
    key = runs.struct.field("value")
    idf_of = pl.Series([weights[word] for word in words for _ in (0, 1)], dtype=pl.Float64)
    weight = runs.struct.field("len").cast(pl.Float64) * pl.lit(idf_of).gather(key)
    is_q = key % 2 == 0
    q_norm = (weight.pow(2) * is_q.cast(pl.Float64)).sum().sqrt()
    r_norm = (weight.pow(2) * (~is_q).cast(pl.Float64)).sum().sqrt()
    both = (is_q & (key.shift(-1) == key + 1)).fill_null(False).cast(pl.Float64)
    dot = (weight * weight.shift(-1).fill_null(0.0) * both).sum()
    norms = q_norm * r_norm
    cosine = pl.when(norms > 0).then((dot / norms).clip(upper_bound=1.0)).otherwise(0.0)
    return keys.list.eval(cosine).list.first()
