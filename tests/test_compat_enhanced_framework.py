"""Preset ``enhanced-framework`` (issue 18): the enhanced text evaluation framework's worked
examples and reference rows, number for number, and its 51-column TSV (docs/compat.md).

The reference rows are the framework's own output as its documentation shows it
(``tests/golden/compat_enhanced_framework.json``: ten rows with all 51 columns, twenty rows with
their relevance columns, and the worked examples; ``compat_enhanced_framework.tsv``: the ten rows
as its pandas-written TSV). Every column is computed from the texts, on every row: content
coverage and keyword overlap with WordNet's lemmas and synonyms (pipeline/text/wordnet.py),
TF-IDF relevance with its vectorizer's fixed corpus, semantic similarity and relevance with its
float32 all-MiniLM-L6-v2 (backend minilm-f32, the preset's default), and the composites on top;
`evaluate` then `export --layout enhanced-framework` writes its TSV byte for byte. The overall
layer is also checked on the rows' own component values.
"""

from __future__ import annotations

import ast
import csv
import json
import math
import re
from collections import Counter
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from conftest import examples, records
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.cli import main
from pipeline.config import Config, load_config
from pipeline.embed import CachedEmbedder, EmbeddingCache
from pipeline.export import (
    ENHANCED_FRAMEWORK_COLUMNS,
    python_float_text,
    python_list_text,
    python_round,
    python_str_repr,
)
from pipeline.io.layout import SCORES_FILE, TEXTS_FILE
from pipeline.metrics.composite.overall import INPUT_COLUMNS, overall_scores
from pipeline.metrics.composite.relevance_composite import canonical_category
from pipeline.metrics.embedding.semantic import semantic_similarity
from pipeline.metrics.lexical.bleu import bleu_statistics, matched_orders_bleu, textbook_bleu
from pipeline.metrics.lexical.framework_tfidf import framework_idf, framework_tfidf_relevance
from pipeline.metrics.lexical.keywords import content_coverage, keywords, load_synonym_table
from pipeline.metrics.lexical.tfidf import IdfTable, tfidf_relevance
from pipeline.rules import load_rules
from pipeline.scoring import score_frame
from pipeline.text.tokenize import punctuation_deleted_words

GOLDEN = Path(__file__).parent / "golden"
REFERENCE = json.loads((GOLDEN / "compat_enhanced_framework.json").read_text("utf-8"))
EXAMPLES = REFERENCE["examples"]
COLUMNS: list[str] = REFERENCE["columns"]
ROWS = [dict(zip(COLUMNS, row, strict=True)) for row in REFERENCE["rows"]]
RELEVANCE_ROWS = [
    dict(zip(REFERENCE["relevance_columns"], row, strict=True))
    for row in REFERENCE["relevance_rows"]
]
TSV = GOLDEN / "compat_enhanced_framework.tsv"
PRESET = "enhanced-framework"
RULES = load_rules(preset=PRESET)

#: Metrics computed from the texts, and their columns in the framework's TSV.
NUMBERS = {
    "rouge_1": "accuracy_rouge_1",
    "rouge_2": "accuracy_rouge_2",
    "bleu_matched_orders": "accuracy_bleu_score",
    "numeric_accuracy": "accuracy_numeric_accuracy",
    "content_coverage": "accuracy_content_coverage",
    "keyword_overlap": "relevance_keyword_overlap",
    "tfidf_relevance": "relevance_tfidf_relevance",
    "intent_match": "relevance_intent_match",
    "refusal_score": "relevance_refusal_score",
    "depth_score": "relevance_depth_score",
    "bias_severity": "safety_bias_severity",
    "perspective_balance": "safety_perspective_balance",
    "safety_score": "safety_safety_score",
    "fluency_score": "quality_fluency_score",
    "coherence_score": "quality_coherence_score",
    "conciseness_score": "quality_conciseness_score",
    "readability_score": "quality_readability_score",
    "composite_quality": "composite_quality",
}
LABELS = {
    "length_feedback": "quality_length_feedback",
    "quality_feedback": "quality_feedback",
    "safety_feedback": "safety_feedback",
}
FLAGS = {"length_ok": "quality_length_ok", "has_bias_risk": "safety_has_bias_risk",
         "is_refusal": "is_refusal"}
#: Metrics that need no embedding model (nor, under the preset, corpus statistics).
TEXT_METRICS = (
    "quality", "safety", "rouge_1", "rouge_2", "bleu_matched_orders", "bleu_textbook",
    "numeric_accuracy", "content_coverage", "keyword_overlap", "tfidf_relevance", "intent_match",
    "refusal_score", "is_refusal", "depth_score", "relevance_adjustment",
)


def score_texts(rows: list[dict], preset: str | None = PRESET) -> list[dict]:
    frame = records([
        {key: row.get(key) for key in ("question", "reference", "response", "category")}
        | {"id": str(row.get("id", i)), "model": "m"}
        for i, row in enumerate(rows)
    ])
    config = Config(metrics=TEXT_METRICS, compat_preset=preset, embedding_cache_dir=None)
    return score_frame(frame, config).collect().to_dicts()


# --- the ten reference rows, from their texts --------------------------------------------------
def test_reference_rows_from_their_texts():
    scored = score_texts(ROWS)
    for row, got in zip(ROWS, scored, strict=True):
        label = f"row {row['id']}"
        for metric, column in NUMBERS.items():
            assert round(got[metric], 4) == float(row[column]), (label, metric)
        for metric, column in LABELS.items():
            assert got[metric] == row[column], (label, metric)
        for metric, column in FLAGS.items():
            assert str(bool(got[metric])) == row[column], (label, metric)
        assert got["bias_categories"] == ast.literal_eval(row["safety_bias_categories"]), label


def test_row_one_word_count_conciseness_and_quality():
    """Issue 18: 12 words, not 14 ("Île-de-France" is one word), conciseness 0.9417, one
    sentence scores coherence 1.0, composite quality 0.7883: rows 1-3 pass quality."""
    scored = score_texts(ROWS[:3])
    assert scored[0]["length_feedback"] == "Appropriate length (12 words, ideal: 10-100)"
    assert round(scored[0]["conciseness_score"], 4) == 0.9417
    assert round(scored[0]["composite_quality"], 4) == 0.7883
    assert all(row["coherence_score"] == 1.0 for row in scored)
    assert all(row["composite_quality"] >= RULES.overall.passing["quality"] for row in scored)


def test_keywords_as_the_framework_finds_them():
    """Issue 18's last gap: WordNet. Row 2: "wrote" stays wrote as a noun, so "written" does
    not find it (2 of 3); row 9: "describe" is one of its stopwords (2 of 3); row 10: "ocean"
    is found by "sea", a member of its synset (1 of 3; coverage 3 of 10); row 7: its words
    ("350°F" is 350f, "10-12" 1012), 24 of 32 keywords. The default (simplemma, our
    stopwords and words, our 90 groups) gives other numbers on all four."""
    rows = [ROWS[i] for i in (1, 6, 8, 9)]
    preset, default = score_texts(rows), score_texts(rows, None)
    assert [round(r["keyword_overlap"], 4) for r in preset] == [0.6667, 0.4286, 0.6667, 0.3333]
    assert [round(r["content_coverage"], 4) for r in preset] == [0.6667, 0.75, 0.3, 0.3]
    assert [round(r["keyword_overlap"], 4) for r in default] == [1.0, 0.4286, 0.5, 0.0]
    assert [round(r["content_coverage"], 4) for r in default] == [0.6667, 0.8, 0.35, 0.2]


def test_framework_keywords_edges():
    """Its coverage is 0.0 without reference keywords (the default: 1.0, nothing to cover);
    its keyword overlap looks synonyms up only for a question of fewer than 20 keywords."""
    topics = [f"topic{n}" for n in range(19)]
    rows = [{"question": question, "reference": reference, "response": "The sea.",
             "category": "Factual"}
            for question, reference in (("The and of?", "The of."),
                                        (f"ocean {' '.join(topics[:18])}?", "ocean"),
                                        (f"ocean {' '.join(topics)}?", "ocean"))]
    empty, nineteen, twenty = score_texts(rows)
    assert (empty["content_coverage"], empty["keyword_overlap"]) == (0.0, 0.0)
    assert score_texts(rows[:1], None)[0]["content_coverage"] == 1.0
    assert nineteen["content_coverage"] == twenty["content_coverage"] == 1.0
    assert nineteen["keyword_overlap"] == 1 / 19 and twenty["keyword_overlap"] == 0.0


# --- the twenty rows' relevance ----------------------------------------------------------------
def test_reference_relevance_rows():
    scored = score_texts(RELEVANCE_ROWS)
    for row, got in zip(RELEVANCE_ROWS, scored, strict=True):
        label = f"row index {row['row']}"
        for metric in ("keyword_overlap", "tfidf_relevance", "intent_match", "refusal_score",
                       "depth_score"):
            assert round(got[metric], 4) == float(row[f"relevance_{metric}"]), (label, metric)
        weights = RULES.relevance.composite_weights
        composite = (
            weights["semantic_relevance"] * float(row["relevance_semantic_relevance"])
            + weights["tfidf_relevance"] * got["tfidf_relevance"]
            + weights["keyword_overlap"] * float(row["relevance_keyword_overlap"])
            + weights["intent_match"] * got["intent_match"]
            + got["relevance_adjustment"]
            - RULES.relevance.refusal_penalty * got["refusal_score"]
        )
        composite = min(1.0, max(0.0, composite))
        # The reference's components are rounded to 4 places: one unit of the last place.
        assert composite == pytest.approx(float(row["composite_relevance"]), abs=1.5e-4), label
        band = next(text for low, text in RULES.relevance.feedback if composite >= low)
        assert band == row["relevance_feedback"] == row["relevance_feedback.1"], label
        passed = composite >= RULES.overall.passing["relevance"]
        assert str(passed) == row["passed_relevance"], label


def score_semantic(rows: list[dict]) -> list[dict]:
    """Semantic and relevance-composite columns under the preset, with its default backend."""
    frame = records([
        {key: row.get(key) for key in ("question", "reference", "response", "category")}
        | {"id": str(i), "model": "m"}
        for i, row in enumerate(rows)
    ])
    config = Config(metrics=("semantic_similarity", "relevance_composite"),
                    compat_preset=PRESET, embedding_cache_dir=None)
    assert config.embedding_backend == "minilm-f32"
    return score_frame(frame, config).collect().to_dicts()


def test_semantic_scores_of_every_reference_row():
    """Its float32 MiniLM, clamped to [0, 1] as its similarity() does: all 10 similarities and
    all 30 relevances (10 + 20 rows) to its 4 places."""
    for row, got in zip(ROWS, score_semantic(ROWS), strict=True):
        assert round(got["semantic_similarity"], 4) == float(
            row["accuracy_semantic_similarity"]), row["id"]
        assert round(got["semantic_relevance"], 4) == float(
            row["relevance_semantic_relevance"]), row["id"]


def test_relevance_rows_from_their_texts():
    """The 20 relevance rows: semantic relevance, composite relevance, feedback and pass flag,
    all from the texts."""
    for row, got in zip(RELEVANCE_ROWS, score_semantic(RELEVANCE_ROWS), strict=True):
        label = f"row index {row['row']}"
        assert round(got["semantic_relevance"], 4) == float(
            row["relevance_semantic_relevance"]), label
        assert round(got["composite_relevance"], 4) == float(row["composite_relevance"]), label
        assert got["relevance_feedback"] == row["relevance_feedback"], label


def test_the_reference_tsv_from_the_texts(tmp_path: Path):
    """One config line, the texts of its ten rows in, its 51-column TSV out, byte for byte:
    every score, composite, flag, failure mode, suggestion and feedback is the framework's."""
    config = tmp_path / "eval.toml"
    config.write_text('[compat]\npreset = "enhanced-framework"\n', encoding="utf-8")
    source = tmp_path / "in.jsonl"
    source.write_text("".join(
        json.dumps({key: row[key] for key in ("id", "category", "question", "reference",
                                              "response")} | {"model": "tool"}) + "\n"
        for row in ROWS
    ), encoding="utf-8")
    out, target = tmp_path / "out", tmp_path / "tool.tsv"
    assert main(["evaluate", "--input", str(source), "--out", str(out), "--config", str(config),
                 "--no-progress", "--no-stats"]) == 0
    assert main(["export", str(out), "--layout", "enhanced-framework", "--out", str(target)]) == 0
    assert target.read_bytes() == TSV.read_bytes()


def test_overall_layer_reads_rounded_inputs_under_the_preset():
    """The framework passes round(x, 4) values on: two of its ten rows have overall scores
    (0.4276 and 0.5794) that only rounded composites give (unrounded: 0.4277 and 0.5793)."""
    assert RULES.overall.round_digits == 4 and load_rules().overall.round_digits is None
    values = {"composite_relevance": 0.123456, "safety_score": 1.0, "composite_quality": 0.5,
              "scoring_category": "Factual"}
    frame = pl.DataFrame([values])
    columns = {name: pl.lit(0.0) for name in INPUT_COLUMNS if name not in values}
    columns |= {"answer_em": pl.lit(0, pl.Int8), "is_refusal": pl.lit(0, pl.Int8),
                "bias_categories": pl.lit([], pl.List(pl.String)), "rouge_1": pl.lit(0.00025)}
    weights = RULES.overall.category_weights["Factual"]
    accuracy = RULES.overall.accuracy_weights["rouge_1"] * 0.00025
    got = frame.select(**overall_scores(columns=columns, rules=RULES.overall)).row(0, named=True)
    assert got["composite_accuracy"] == pytest.approx(accuracy, abs=1e-15)  # unrounded
    assert got["overall_score"] == pytest.approx(
        weights["accuracy"] * round(accuracy, 4) + weights["relevance"] * 0.1235
        + weights["safety"] * 1.0 + weights["quality"] * 0.5, abs=1e-15)


def test_preset_reads_its_input_once(tmp_path: Path, monkeypatch):
    """Its TF-IDF relevance reads its fixed corpus, so under the preset nothing needs the run's
    document frequencies: one pass over the input, no first pass (without the preset, two)."""
    from pipeline.engines import local
    from pipeline.metrics.registry import resolve
    from pipeline.scoring import needs_corpus

    specs = resolve(("tfidf_relevance",))
    assert needs_corpus(Config(), specs)
    assert not needs_corpus(Config(compat_preset=PRESET), specs)

    first_passes: list[object] = []
    read_and_validate = local._read_and_validate

    def first_pass(*args, **kwargs):
        first_passes.append(args[0])
        return read_and_validate(*args, **kwargs)

    monkeypatch.setattr(local, "_read_and_validate", first_pass)
    source = tmp_path / "in.parquet"  # Parquet: its keys are checked unique without a pass
    pl.DataFrame([{key: row[key] for key in ("question", "reference", "response")}
                  | {"id": str(row["row"]), "model": "tool"} for row in RELEVANCE_ROWS]
                 ).write_parquet(source)
    config = tmp_path / "eval.toml"
    config.write_text('[compat]\npreset = "enhanced-framework"\n', encoding="utf-8")
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(source), "--out", str(out), "--config", str(config),
                 "--metrics", "tfidf_relevance", "--no-progress", "--no-stats"]) == 0
    got = pl.read_parquet(out / SCORES_FILE)["tfidf_relevance"].round(4).to_list()
    assert got == [float(row["relevance_tfidf_relevance"]) for row in RELEVANCE_ROWS]
    assert first_passes == []
    assert main(["evaluate", "--input", str(source), "--out", str(tmp_path / "default"),
                 "--metrics", "tfidf_relevance", "--no-progress", "--no-stats"]) == 0
    assert len(first_passes) == 1


# --- the overall layer on the reference rows' components ---------------------------------------
def overall_inputs(row: dict) -> dict:
    number = float
    return {
        "semantic_similarity": number(row["accuracy_semantic_similarity"]),
        "rouge_1": number(row["accuracy_rouge_1"]),
        "content_coverage": number(row["accuracy_content_coverage"]),
        "numeric_accuracy": number(row["accuracy_numeric_accuracy"]),
        "rouge_2": number(row["accuracy_rouge_2"]),
        "answer_em": int(number(row["accuracy_exact_match"])),
        "bleu_matched_orders": number(row["accuracy_bleu_score"]),
        "composite_relevance": number(row["composite_relevance"]),
        "safety_score": number(row["safety_safety_score"]),
        "composite_quality": number(row["composite_quality"]),
        "is_refusal": int(row["is_refusal"] == "True"),
        "refusal_score": number(row["relevance_refusal_score"]),
        "intent_match": number(row["relevance_intent_match"]),
        "bias_categories": ast.literal_eval(row["safety_bias_categories"]),
        "perspective_balance": number(row["safety_perspective_balance"]),
        "coherence_score": number(row["quality_coherence_score"]),
        "conciseness_score": number(row["quality_conciseness_score"]),
        "fluency_score": number(row["quality_fluency_score"]),
        "category": row["category"],
    }


def test_reference_rows_overall_layer():
    """Suggestions (texts, groups, thresholds), composite accuracy with the framework's BLEU,
    accuracy feedback, overall score and feedback, pass flags and failure modes of all ten."""
    schema = {name: pl.Float64 for name in INPUT_COLUMNS if name != "scoring_category"}
    schema |= {"answer_em": pl.Int8, "is_refusal": pl.Int8,
               "bias_categories": pl.List(pl.String), "category": pl.String}
    frame = pl.DataFrame([overall_inputs(row) for row in ROWS], schema=schema).with_columns(
        scoring_category=canonical_category(pl.col("category"), rules=RULES.relevance)
    )
    out = frame.select(**overall_scores(rules=RULES.overall)).to_dicts()
    for row, got in zip(ROWS, out, strict=True):
        label = f"row {row['id']}"
        for column in ("composite_accuracy", "overall_score"):
            assert got[column] == pytest.approx(float(row[column]), abs=1.5e-4), (label, column)
        assert got["suggestions"] == ast.literal_eval(row["improvement_suggestions"]), label
        for column in ("accuracy_feedback", "primary_failure_mode", "overall_feedback"):
            assert got[column] == row[column], (label, column)
        for area in ("accuracy", "relevance", "safety", "quality"):
            assert str(bool(got[f"passed_{area}"])) == row[f"passed_{area}"], (label, area)


def test_default_suggestions_differ_only_by_the_documented_choices():
    """Issue 18 found 6 of the 10 rows with other suggestions. The default rules now give the
    framework's texts; two rows still differ, by choices docs/compat.md states: the default
    spells bias categories with spaces (row 6) and names wrong numbers whatever the accuracy
    (row 7, numeric accuracy 0.4545 with accuracy 0.6181)."""
    # its rows are answered, answerable questions (the default rules read these flags)
    answered = {"abstained": 0, "unanswerable": 0, "empty_response": 0}
    inputs = [overall_inputs(row) | {"bleu": float(row["accuracy_bleu_score"])} | answered
              for row in ROWS]
    schema = {name: pl.Float64 for name in INPUT_COLUMNS if name != "scoring_category"}
    schema |= {"answer_em": pl.Int8, "is_refusal": pl.Int8,
               "bias_categories": pl.List(pl.String), "category": pl.String}
    default = load_rules()
    frame = pl.DataFrame(inputs, schema=schema).with_columns(
        scoring_category=canonical_category(pl.col("category"), rules=default.relevance)
    )
    got = frame.select(overall_scores(rules=default.overall)["suggestions"]).to_series()
    differ = {}
    for row, found in zip(ROWS, got.to_list(), strict=True):
        if found != ast.literal_eval(row["improvement_suggestions"]):
            differ[row["id"]] = found
    assert differ == {
        "6": ["Provide more specific and accurate information", "Avoid climate change",
              "Improve logical flow with transition words"],
        "7": ["Verify numerical information", "Improve logical flow with transition words"],
    }


# --- worked examples of its documentation ------------------------------------------------------
def test_worked_example_bleu():
    """Appendix: p = 5/6, 3/5, 1/4, 0/3, BP 1, BLEU 0.0595 with 0.0001 for p4 (bleu_textbook).
    Its reference TSV's BLEU averages only the matching orders: 0.5 here (docs/compat.md)."""
    example = EXAMPLES["bleu"]
    texts = pl.DataFrame({"hyp": [example["candidate"]], "ref": [example["reference"]]})
    stats = texts.select(
        **bleu_statistics(punctuation_deleted_words(pl.col("hyp")),
                          punctuation_deleted_words(pl.col("ref")))
    ).row(0, named=True)
    assert [stats[f"matches_{n}"] for n in range(1, 5)] == example["matches"]
    assert [stats[f"totals_{n}"] for n in range(1, 5)] == example["totals"]
    got = texts.select(
        textbook=textbook_bleu(pl.col("hyp"), pl.col("ref")),
        matched=matched_orders_bleu(pl.col("hyp"), pl.col("ref")),
    ).row(0, named=True)
    assert round(got["textbook"], 4) == example["printed"] == example["bleu_textbook"]
    assert got["matched"] == pytest.approx(example["bleu_matched_orders"], abs=1e-15)
    assert example["bleu_matched_orders"] == pytest.approx((5 / 6 * 3 / 5 * 1 / 4) ** (1 / 3))


def test_worked_example_rouge():
    """Appendix: ROUGE-2 0.600; its ROUGE-1 0.800 counts distinct words, while its reference
    TSV counts every word (row 1: 0.6667 = 6 matches of 12 and 6 words) as rouge-score does:
    5 of 6 words here (the TSV wins, docs/compat.md)."""
    example = EXAMPLES["rouge"]
    got = score_texts([{"question": "q?", "reference": example["reference"],
                        "response": example["candidate"], "category": "Factual"}])[0]
    assert got["rouge_2"] == pytest.approx(example["printed"]["rouge_2"], abs=1e-12)
    for metric in ("rouge_1", "rouge_2"):
        assert got[metric] == pytest.approx(example["preset"][metric], abs=1e-12)


class _ToyBackend:
    """The appendix's 3-D sentence vectors."""

    name = "toy"
    model_id = "enhanced-framework-appendix"
    dim = 3

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def encode(self, texts: list[str]) -> np.ndarray:
        rows = np.array([self.vectors[t] for t in texts], dtype=np.float64)
        return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_worked_example_semantic_similarity():
    """Appendix: cosine of [0.8, 0.5, 0.3] and [0.9, 0.4, 0.2] is about 0.985."""
    example = EXAMPLES["semantic_similarity"]
    backend = _ToyBackend({example["reference"]: example["reference_vector"],
                           example["candidate"]: example["candidate_vector"]})
    embedder = CachedEmbedder(backend, EmbeddingCache(None))
    got = semantic_similarity(pl.Series([example["candidate"]]), pl.Series([example["reference"]]),
                              embedder).item()
    assert round(got, 3) == example["printed"]


def test_worked_example_tfidf():
    """Appendix: idf = log(N / df) over its four documents: 3 / 7, which it prints as 0.433
    after dividing rounded intermediates (0.0405 / 0.0936)."""
    example = EXAMPLES["tfidf"]
    table = IdfTable.from_texts(pl.Series(example["corpus"]))
    frame = pl.DataFrame({"q": [example["question"]], "r": [example["response"]]})
    got = frame.select(tfidf_relevance(pl.col("q"), pl.col("r"), table)).item()
    assert got == pytest.approx(example["exact"], abs=1e-15)
    assert got == pytest.approx(example["printed"], abs=0.005)


# --- its TF-IDF relevance: the vectorizer fitted on its fixed corpus ---------------------------
#: RelevanceEvaluator._initialize_tfidf_corpus of its src/evaluate.py, verbatim.
FRAMEWORK_CORPUS = [
    "machine learning artificial intelligence",
    "climate change global warming",
    "programming python java",
    "science biology chemistry physics",
    "history world events",
    "mathematics algebra geometry calculus",
    "literature books poetry",
    "business economics finance",
]
SKLEARN_STOP_WORDS = frozenset(
    line for line in (Path(__file__).parents[1] / "pipeline/data"
                      / "enhanced-framework.stopwords_en.txt").read_text("utf-8").splitlines()
    if line and not line.startswith("#")
)


def sklearn_analyzer(text: str) -> list[str]:
    """TfidfVectorizer(stop_words='english')'s default analyzer."""
    return [t for t in re.findall(r"(?u)\b\w\w+\b", text.lower()) if t not in SKLEARN_STOP_WORDS]


def framework_idf_oracle() -> dict[str, float]:
    df = Counter(word for doc in FRAMEWORK_CORPUS for word in set(sklearn_analyzer(doc)))
    n = len(FRAMEWORK_CORPUS)
    return {word: math.log((1 + n) / (1 + d)) + 1 for word, d in df.items()}


def framework_tfidf_oracle(question: str, response: str) -> float:
    """_calculate_tfidf_relevance: transform the preprocessed texts, l2-normalise, cosine."""
    idf = framework_idf_oracle()
    vectors = []
    for text in (question, response):
        preprocessed = re.sub(r"\s+", " ", re.sub(r"[^\w\s]", "", text.lower())).strip()
        counts = Counter(w for w in sklearn_analyzer(preprocessed) if w in idf)
        weights = {w: c * idf[w] for w, c in counts.items()}
        norm = math.sqrt(sum(v * v for v in weights.values()))
        vectors.append({w: v / norm for w, v in weights.items()} if norm else {})
    q, r = vectors
    return sum(v * r.get(w, 0.0) for w, v in q.items())


def test_framework_idf_is_its_vectorizers():
    assert framework_idf_oracle() == pytest.approx(framework_idf(), rel=0, abs=0)
    assert len(framework_idf()) == 28 and len(SKLEARN_STOP_WORDS) == 318


def test_tfidf_signature_names_its_idf():
    assert "|tfidf:corpus-distinct|" in Config().signature()
    assert "|tfidf:framework-fixed-corpus|" in Config(compat_preset=PRESET).signature()


def test_framework_tfidf_edges():
    frame = pl.DataFrame(
        {"q": ["", "Physics?", None, "PHYSICS and Python", "machine-learning"],
         "r": ["physics", "", "physics", "physics, python; physics!", "machine learning"]},
        schema={"q": pl.String, "r": pl.String},
    )
    got = frame.select(framework_tfidf_relevance(pl.col("q"), pl.col("r"))).to_series()
    assert got.to_list()[:3] == [0.0, 0.0, None]
    assert got[3] == pytest.approx(3 / math.sqrt(10), abs=1e-15)  # (1, 1) . (2, 1)
    assert got[4] == 0.0  # "machinelearning" is no word of its corpus


#: Words of its corpus and others, glued by punctuation or split by any whitespace.
TFIDF_TEXTS = st.lists(
    st.sampled_from([*framework_idf(), "Physics", "MACHINE", "the", "a", "is", "x", "python's",
                     "physic\u0301s", "boo\u212aS", "machine-learning", "(java).", "\t", "\u00a0",
                     "\x1fworld", "history_", ",", "-", "?", "é"]),
    max_size=16,
).map(" ".join)


# Whole columns per example (hypothesis draws lists near their minimum size, so the minimum
# sets the batch): as many rows as before against the oracle, at a fraction of the polars runs.
@settings(max_examples=examples(80), deadline=None)
@given(st.lists(st.tuples(TFIDF_TEXTS, TFIDF_TEXTS), min_size=8, max_size=20))
def test_framework_tfidf_relevance_equals_oracle(pairs):
    frame = pl.DataFrame({"q": [q for q, _ in pairs], "r": [r for _, r in pairs]})
    got = frame.select(framework_tfidf_relevance(pl.col("q"), pl.col("r"))).to_series()
    for value, (q, r) in zip(got, pairs, strict=True):
        assert value == pytest.approx(min(1.0, framework_tfidf_oracle(q, r)), abs=1e-12), (q, r)


@pytest.mark.parametrize("preset", [PRESET, None])
def test_worked_example_multi_word_synonyms(preset):
    """Its SYNONYMS: "convert sunlight to generate electricity" and "transform solar energy to
    produce power" cover each other fully, with the preset's groups and the default's."""
    example = EXAMPLES["synonyms"]
    table = load_synonym_table(bundled=f"{preset}.synonyms.tsv" if preset else "synonyms.tsv")
    left, right = example["a"], example["b"]
    frame = pl.DataFrame({"a": [left, right], "b": [right, left]}).select(
        a=keywords(pl.col("a"), phrases=table.phrases),
        b=keywords(pl.col("b"), phrases=table.phrases),
    )
    assert frame["a"][1].to_list() == example["keywords_b"]
    covered = frame.select(content_coverage(pl.col("a"), pl.col("b"), table)).to_series()
    assert covered.to_list() == [example["coverage"]] * 2
    unaided = frame.select(content_coverage(pl.col("a"), pl.col("b"), {})).to_series()
    assert unaided.to_list() == [example["without_synonyms"]] * 2
    rows = [{"question": "q?", "reference": a, "response": b, "category": "Factual"}
            for a, b in ((left, right), (right, left))]  # the run: the framework's keywords
    assert [r["content_coverage"] for r in score_texts(rows, preset)] == [example["coverage"]] * 2


def test_preset_synonyms_keep_its_groups_apart():
    """"power" is in its groups of electricity and of energy: both are synonyms of power, not of
    each other."""
    table = load_synonym_table(bundled=f"{PRESET}.synonyms.tsv")
    pairs = [("power", "energy"), ("energy", "power"), ("power", "electricity"),
             ("energy", "electricity"), ("electricity", "energy")]
    frame = pl.DataFrame({"r": [a for a, _ in pairs], "q": [b for _, b in pairs]}).select(
        content_coverage(keywords(pl.col("r"), phrases=table.phrases),
                         keywords(pl.col("q"), phrases=table.phrases), table)
    )
    assert frame.to_series().to_list() == [1.0, 1.0, 1.0, 0.0, 0.0]
    rows = [{"question": "q?", "reference": a, "response": b, "category": "Factual"}
            for a, b in pairs]  # the run: WordNet's synsets do not join them either
    assert [r["content_coverage"] for r in score_texts(rows)] == [1.0, 1.0, 1.0, 0.0, 0.0]


@pytest.mark.parametrize("which", ["preset", "default"])
def test_worked_example_bias_and_refusal_lists(which):
    """Its BIAS_PATTERNS: "Women are emotional" is gender_stereotypes (B_c in its example); its
    refusal pattern_list has "against rules". Both hold in the default rules too."""
    bias, refusal = EXAMPLES["bias"], EXAMPLES["refusal"]
    rows = [{"question": "Why?", "response": text, "category": "Factual"}
            for text in (bias["response"], refusal["response"])]
    women, rules = score_texts(rows, PRESET if which == "preset" else None)
    for metric, value in bias[which].items():
        assert women[metric] == pytest.approx(value) if isinstance(value, float) else value
    assert rules["refusal_score"] == refusal["refusal_score"]
    assert rules["is_refusal"] == refusal["is_refusal"]


def test_perspective_balance_only_on_sensitive_rows():
    """The TSV's row 6 has "always" and no balanced indicator, yet balance 1.0: the preset
    checks balance on Sensitive rows; a neutral text is balanced."""
    text = "Everyone always agrees. All of it is settled."
    rows = [{"question": "q?", "response": text, "category": c}
            for c in ("Factual", "Sensitive")] + [
        {"question": "q?", "response": "Rain is wet.", "category": "Sensitive"}]
    factual, sensitive, neutral = score_texts(rows)
    assert factual["perspective_balance"] == 1.0 and factual["bias_categories"] == []
    assert sensitive["perspective_balance"] == 0.0
    assert sensitive["bias_categories"] == ["unbalanced_perspective"]
    assert neutral["perspective_balance"] == 1.0


# --- oracles of the framework's text helpers ---------------------------------------------------
TEXTS = st.text(
    alphabet=st.sampled_from([*"aAz09 -'’.,!?\t\n_é²ÎßK\u00a0\u2028", "İ", "ﬁ"]),
    max_size=30,
)


@settings(max_examples=examples(75), deadline=None)
@given(st.lists(TEXTS, min_size=8, max_size=20))
def test_punctuation_deleted_words_equal_preprocess_text(texts):
    got = pl.DataFrame({"t": texts}).select(punctuation_deleted_words(pl.col("t"))).to_series()
    assert [list(w) for w in got] == [re.sub(r"[^\w\s]", "", t.lower()).split() for t in texts]


def matched_orders_oracle(hyp: str, ref: str) -> float:
    """Its TSV's BLEU: case-sensitive split, geometric mean over the orders that match."""
    h, r = hyp.split(), ref.split()
    logs = []
    for n in range(1, 5):
        hc = Counter(tuple(h[i:i + n]) for i in range(len(h) - n + 1))
        rc = Counter(tuple(r[i:i + n]) for i in range(len(r) - n + 1))
        matches = sum(min(c, rc[g]) for g, c in hc.items())
        if matches == 0:
            break
        logs.append(math.log(matches / sum(hc.values())))
    if not logs:
        return 0.0
    bp = 1.0 if len(h) > len(r) else math.exp(1 - len(r) / len(h))
    return bp * math.exp(sum(logs) / len(logs))


WORDS = st.lists(st.sampled_from(["the", "The", "cat", "sat", "on", "mat", "a", "x,"]),
                 max_size=12).map(" ".join)


@settings(max_examples=examples(55), deadline=None)
@given(st.lists(st.tuples(WORDS, WORDS), min_size=8, max_size=20))
def test_matched_orders_bleu_equals_oracle(pairs):
    frame = pl.DataFrame({"h": [h for h, _ in pairs], "r": [r for _, r in pairs]})
    got = frame.select(matched_orders_bleu(pl.col("h"), pl.col("r"))).to_series().to_list()
    assert got == [matched_orders_oracle(h, r) for h, r in pairs]


@settings(max_examples=examples(80), deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False)
                | st.floats(min_value=-2.0**40, max_value=2.0**40)
                | st.integers(-40000, 40000).map(lambda k: k / 20000),
                min_size=8, max_size=30))
def test_python_round_and_float_text_equal_python(values):
    frame = pl.DataFrame({"x": values}, schema={"x": pl.Float64})
    rounded = frame.select(python_round(pl.col("x"))).to_series().to_list()
    assert [repr(v) for v in rounded] == [repr(round(v, 4)) for v in values]
    text = frame.select(python_float_text(pl.col("x"))).to_series().to_list()
    assert text == [repr(round(v, 4)) for v in values]


@settings(max_examples=examples(72), deadline=None)
@given(st.lists(st.lists(st.text(alphabet=st.sampled_from(
    list("ab '\"\\_\t\n\r\x00\x7f\xa0\xadé中\u2028\u200b")), max_size=8), max_size=4),
    min_size=6, max_size=15))
def test_python_list_text_equals_repr(lists):
    frame = pl.DataFrame({"l": lists}, schema={"l": pl.List(pl.String)})
    assert frame.select(python_list_text(pl.col("l"))).to_series().to_list() == [
        repr(items) for items in lists
    ]
    flat = [text for items in lists for text in items]
    if flat:
        got = pl.DataFrame({"t": flat}).select(python_str_repr(pl.col("t"))).to_series()
        assert got.to_list() == [repr(t) for t in flat]


# --- export --layout enhanced-framework --------------------------------------------------------
def _typed(column: str, kind: str, text: str) -> object:
    if kind == "bool":
        return int(text == "True")
    if kind == "list":
        return ast.literal_eval(text)
    if kind == "number":
        return float(text)
    return text


def write_run(out: Path, rows: list[dict], signature: str) -> None:
    """An output directory whose scores hold the reference rows' own values."""
    scores, texts = [], []
    for n, row in enumerate(rows):
        values: dict[str, object] = {
            "id": row["id"], "model": "tool", "run": "reference", "category": row["category"],
            "noise_level": None, "question_type": None, "source": "reference.tsv",
            "row_number": n, "signature": signature,
        }
        for name, source, kind in ENHANCED_FRAMEWORK_COLUMNS:
            if source in ("id", "category", "question", "reference", "response"):
                continue
            source = "bleu_matched_orders" if source == "{bleu}" else source
            values[source] = _typed(source, kind, row[name])
        values["answer_em"] = int(float(row["accuracy_exact_match"]))
        scores.append(values)
        texts.append({"source": "reference.tsv", "row_number": n, "id": row["id"],
                      **{k: row[k] for k in ("question", "reference", "response")}})
    out.mkdir(parents=True, exist_ok=True)
    frame = pl.DataFrame(scores, infer_schema_length=None).with_columns(
        pl.col(c).cast(pl.Int8)
        for c in ("answer_em", "has_bias_risk", "length_ok", "is_refusal",
                  "passed_accuracy", "passed_relevance", "passed_safety", "passed_quality")
    )
    frame.write_parquet(out / SCORES_FILE)
    pl.DataFrame(texts).write_parquet(out / TEXTS_FILE)


SIGNATURE = "rag-eval|v:test|comp:00000000|compat:enhanced-framework"


def test_export_layout_writes_the_reference_tsv(tmp_path: Path, capsys):
    write_run(tmp_path / "run", ROWS, SIGNATURE)
    target = tmp_path / "tool.tsv"
    assert main(["export", str(tmp_path / "run"), "--layout", "enhanced-framework",
                 "--out", str(target)]) == 0
    assert "wrote 10 rows" in capsys.readouterr().out
    assert target.read_bytes() == TSV.read_bytes()


def test_reference_tsv_header_as_pandas_reads_it():
    """Its header repeats five feedback names; pandas reads them as NAME.1 (its notebook)."""
    with TSV.open(newline="", encoding="utf-8") as handle:
        header, *body = list(csv.reader(handle, delimiter="\t"))
    assert len(header) == 51 and [name for name, _, _ in ENHANCED_FRAMEWORK_COLUMNS] == header
    seen: Counter[str] = Counter()
    mangled = []
    for name in header:
        mangled.append(f"{name}.{seen[name]}" if seen[name] else name)
        seen[name] += 1
    assert mangled == COLUMNS
    assert body == REFERENCE["rows"]


def test_export_layout_neutralizes_text_not_numbers(tmp_path: Path):
    hostile = dict(ROWS[0], response="=HYPERLINK(1)", relevance_semantic_relevance="-0.0369",
                   overall_feedback="-bad")
    write_run(tmp_path / "run", [hostile], SIGNATURE)
    for flag, response, feedback in (([], "'=HYPERLINK(1)", "'-bad"),
                                     (["--no-neutralize-formulas"], "=HYPERLINK(1)", "-bad")):
        target = tmp_path / f"out{len(flag)}.tsv"
        assert main(["export", str(tmp_path / "run"), "--layout", "enhanced-framework",
                     "--out", str(target), *flag]) == 0
        with target.open(newline="", encoding="utf-8") as handle:
            header, cells = list(csv.reader(handle, delimiter="\t"))
        row = dict(zip(header, cells, strict=False))
        assert row["response"] == response
        assert row["overall_feedback"] == feedback
        assert row["relevance_semantic_relevance"] == "-0.0369"


def test_export_layout_bleu_column_follows_the_signature(tmp_path: Path):
    """Without the preset, composite_accuracy weighs sacreBLEU: the layout writes bleu."""
    write_run(tmp_path / "run", ROWS[:1], "rag-eval|v:test|comp:00000000")
    target = tmp_path / "out.tsv"
    assert main(["export", str(tmp_path / "run"), "--layout", "enhanced-framework",
                 "--out", str(target)]) == 2  # the run has no bleu column
    frame = pl.read_parquet(tmp_path / "run" / SCORES_FILE).with_columns(bleu=pl.lit(0.25))
    frame.write_parquet(tmp_path / "run" / SCORES_FILE)
    assert main(["export", str(tmp_path / "run"), "--layout", "enhanced-framework",
                 "--out", str(target)]) == 0
    with target.open(newline="", encoding="utf-8") as handle:
        header, cells = list(csv.reader(handle, delimiter="\t"))
    assert dict(zip(header, cells, strict=False))["accuracy_bleu_score"] == "0.25"


def test_export_layout_is_a_tsv(tmp_path: Path, capsys):
    write_run(tmp_path / "run", ROWS[:1], SIGNATURE)
    assert main(["export", str(tmp_path / "run"), "--layout", "enhanced-framework",
                 "--format", "csv"]) == 2
    assert "enhanced-framework layout is a TSV" in capsys.readouterr().err


# --- end to end: one config line ---------------------------------------------------------------
def test_one_config_line_gives_the_framework_numbers(tmp_path: Path):
    config = tmp_path / "eval.toml"
    config.write_text('[compat]\npreset = "enhanced-framework"\n', encoding="utf-8")
    loaded = load_config(config)
    assert loaded.rules.overall.bleu_input == "bleu_matched_orders"
    assert loaded.rules.digest == RULES.digest != load_rules().digest
    assert loaded.keyword_digest() != load_config().keyword_digest()
    source = tmp_path / "in.jsonl"
    source.write_text("".join(
        json.dumps({key: row[key] for key in ("id", "category", "question", "reference",
                                              "response")} | {"model": "tool"}) + "\n"
        for row in ROWS[:3]
    ), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(source), "--out", str(out), "--config", str(config),
                 "--no-progress", "--embedding-backend", "hashed"]) == 0
    target = tmp_path / "tool.tsv"
    assert main(["export", str(out), "--layout", "enhanced-framework", "--out", str(target)]) == 0
    with target.open(newline="", encoding="utf-8") as handle:
        header, *body = list(csv.reader(handle, delimiter="\t"))
    for cells, row in zip(body, ROWS[:3], strict=True):
        got = dict(zip(header, cells, strict=False))  # the last of a repeated name
        for column in ("accuracy_rouge_1", "accuracy_rouge_2", "accuracy_bleu_score",
                       "quality_length_feedback", "quality_conciseness_score",
                       "composite_quality", "safety_perspective_balance", "quality_length_ok",
                       "relevance_tfidf_relevance"):
            assert got[column] == row[column], (row["id"], column)
