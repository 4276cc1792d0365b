"""Invariants over every registered metric: dtype, range, identity, selection."""

from __future__ import annotations

import polars as pl
import pytest
from conftest import records

from pipeline.config import Config
from pipeline.metrics.registry import FAMILIES, REGISTRY, UnknownMetricError, levels, resolve
from pipeline.scoring import score_frame

ROWS = [
    {"reference": "Paris", "response": "Paris [1]", "citations": None, "gold_citations": [1],
     "contexts": ["Paris is the capital."], "total_tokens": 12, "latency_ms": 5.0},
    {"reference": "the cat", "response": "a dog [2]", "gold_citations": [1], "prompt_tokens": 3,
     "completion_tokens": 4},
    {"reference": "", "response": "", "gold_citations": []},
    {"reference": "It is not mentioned in the document.", "response": "I don't know [1].",
     "question_type": "impossible", "gold_citations": []},
]


@pytest.fixture(scope="module")
def scored() -> pl.DataFrame:
    return score_frame(records(ROWS), Config()).collect()


@pytest.mark.parametrize("name", list(REGISTRY))
def test_dtype_and_range(scored, name):
    spec = REGISTRY[name]
    column = scored[name]
    assert column.dtype == spec.dtype
    values = column.drop_nulls()
    if not spec.nullable:
        assert column.null_count() == 0, name
    if spec.lower is not None and len(values):
        assert values.min() >= spec.lower
    if spec.upper is not None and len(values):
        assert values.max() <= spec.upper


@pytest.mark.parametrize(
    "name", [n for n, s in REGISTRY.items() if s.family in ("answer", "citation")
             and s.higher_is_better]
)
def test_identity_gives_maximum(name):
    rows = [{"reference": t, "response": t, "citations": c, "gold_citations": c}
            for t, c in [("Paris", [1]), ("The Eiffel Tower, 1889!", [2, 3]), ("x", [])]]
    out = score_frame(records(rows), Config(metrics=(name,))).collect()
    assert out[name].to_list() == [REGISTRY[name].upper] * 3


def test_output_columns_and_signature(scored):
    assert scored.columns[:11] == ["id", "model", "run", "category", "noise_level",
                                   "question_type", "task", "language", "lang", "source",
                                   "row_number"]
    assert set(REGISTRY) <= set(scored.columns)
    assert not [c for c in scored.columns if c.startswith("_")]
    assert scored["signature"].unique().to_list() == [Config().signature()]
    assert scored["total_tokens"].to_list() == [12, 7, None, None]


def test_selection_by_family_and_name_adds_dependencies():
    assert [s.name for s in resolve(["citation_f1"])] == [
        "citation_n_pred", "citation_n_gold", "citation_n_correct", "citation_f1"]
    assert {s.name for s in resolve(["answer"])} == set(FAMILIES["answer"])
    assert [s.name for s in resolve(["abstention_correct"])] == [
        "abstained", "unanswerable", "abstention_correct"]
    with pytest.raises(UnknownMetricError, match="meteor"):
        resolve(["meteor"])


def test_levels_put_dependencies_first():
    names = [[s.name for s in group] for group in levels(resolve(None))]
    flat = {name: i for i, group in enumerate(names) for name in group}
    for spec in resolve(None):
        for need in spec.needs:
            if need in REGISTRY:
                assert flat[need] < flat[spec.name]


def test_signature_changes_with_scoring_settings():
    base = Config().signature()
    assert Config(abstention_phrases=("nope",)).signature() != base
    assert Config(columns={"response": "answer"}).signature() == base


def test_docs_catalogue_is_in_step_with_registry():
    from pathlib import Path

    from pipeline.metrics.registry import markdown_table

    docs = (Path(__file__).parents[1] / "docs" / "metrics.md").read_text(encoding="utf-8")
    start = docs.index("<!-- metrics-table:start -->\n") + len("<!-- metrics-table:start -->\n")
    end = docs.index("<!-- metrics-table:end -->")
    assert docs[start:end].strip() == markdown_table()
