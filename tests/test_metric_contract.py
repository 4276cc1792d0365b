"""The metric contract comes from the registry: kinds, ``scores`` contract, slices, intervals."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from pipeline.config import Config
from pipeline.drivers import evaluate
from pipeline.metrics import registry
from pipeline.metrics.registry import REGISTRY
from pipeline.metrics.spec import AGGREGATES, MetricSpec, count, derive_kind
from pipeline.stats import binary_columns, metric_columns
from pipeline.views import (
    ViewBuildError,
    default_queries_dir,
    expand_registry_blocks,
    load_views,
    run_query,
    slice_metrics,
)

KINDS = ("score", "flag", "count", "label", "list")

#: The columns of ``by_model`` before the registry generated any (the hand-written aggregates).
BY_HAND_COLUMNS = [
    "model", "n", "answer_em", "answer_f1", "answer_em_strict", "citation_precision_macro",
    "citation_recall_macro", "citation_f1_macro", "citation_precision_micro",
    "citation_recall_micro", "citation_f1_micro", "n_citation_scored", "citation_n_pred",
    "citation_n_gold", "citation_n_correct", "abstain_rate", "abstention_accuracy",
    "n_unanswerable", "insufficient_context_rate", "n_insufficient_context",
    "n_idk_with_citation", "mean_total_tokens", "p50_latency_ms", "faithfulness", "overlap",
    "n_grounding", "n_no_passages", "overlap_micro", "n_sentences", "n_supported", "rouge_1",
    "rouge_2", "rouge_l",
    "rouge_1_micro", "rouge_2_micro", "rouge_l_micro", "bleu", "bleu_textbook",
    "numeric_accuracy", "content_coverage", "keyword_overlap", "tfidf_relevance",
    "semantic_similarity", "semantic_relevance",
]


def _views() -> dict[str, str]:
    return {view.name: view.sql for view in load_views(default_queries_dir())}


# --- kinds -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(REGISTRY))
def test_every_metric_has_a_kind_that_fits_its_dtype(name: str) -> None:
    spec = REGISTRY[name]
    assert spec.kind in KINDS
    assert spec.aggregate == AGGREGATES[spec.kind]
    if spec.kind == "flag":
        assert spec.dtype.is_integer() and (spec.lower, spec.upper) == (0, 1)
    if spec.kind == "count":
        assert spec.dtype.is_integer() and spec.higher_is_better is None


def test_kinds_keep_the_interval_metrics_of_the_dtype_rule() -> None:
    """Counts stay out of intervals exactly as the former dtype rule left them out."""
    schema = {name: spec.dtype for name, spec in REGISTRY.items()}
    former = [
        name for name, spec in REGISTRY.items() if spec.dtype.is_numeric()
        and not (spec.dtype == pl.Int64 and spec.higher_is_better is None)
    ]
    former_binary = [
        name for name in former
        if (spec := REGISTRY[name]).dtype == pl.Int8 and (spec.lower, spec.upper) == (0, 1)
    ]
    assert metric_columns(schema) == former
    assert binary_columns(schema) == former_binary
    assert {"total_tokens", "latency_ms"} <= set(former)
    assert not {"rouge_1_overlap", "citation_n_pred", "bleu_hyp_len"} & set(former)


def test_a_stated_kind_must_fit_the_dtype() -> None:
    def build(_: object) -> pl.Expr:
        return pl.lit(0.5)

    with pytest.raises(ValueError, match=r"zz_bad.*'flag'.*Float64"):
        MetricSpec("zz_bad", "test", build, pl.Float64(), "x", kind="flag")
    with pytest.raises(ValueError, match="'count'"):
        MetricSpec("zz_bad", "test", build, pl.String(), "x", lower=None, upper=None,
                   higher_is_better=None, kind="count")
    assert derive_kind(pl.List(pl.String()), None, None, None) == "list"


# --- generated SQL ---------------------------------------------------------------------------


def test_scores_contract_lists_every_registered_metric_with_its_type() -> None:
    contract = _views()["scores"]
    types = {pl.Int8(): "tinyint", pl.Int64(): "bigint", pl.Float64(): "double",
             pl.String(): "varchar", pl.List(pl.String()): "varchar[]"}
    for name, spec in REGISTRY.items():
        assert contract.count(f" as {name},\n") == 1, name
        assert f"cast(null as {types[spec.dtype]}) as {name},\n" in contract, name


def test_slice_views_aggregate_every_metric_the_file_does_not_by_hand() -> None:
    raw = (default_queries_dir() / "metrics_by_slice.sql").read_text(encoding="utf-8")
    sql = _views()["metrics_by_slice"]
    generated = {spec.name for spec in slice_metrics(raw)}
    assert generated, "the registry adds no slice column"
    for name, spec in REGISTRY.items():
        by_hand = re.search(rf"\bsr\.{name}\b", raw) is not None
        if spec.aggregate is None or by_hand:
            assert name not in generated, name
        elif not by_hand:
            assert name in generated, name
            how = "avg" if spec.aggregate == "mean" else "cast(sum"
            assert f"{how}(sr.{name})" in sql and f"mi.{name},\n" in sql, name


def test_registry_blocks_fail_loudly() -> None:
    path = Path("v.sql")
    with pytest.raises(ViewBuildError, match="unknown registry block 'nope'"):
        expand_registry_blocks(path, "select\n    -- registry: nope\n    1 as x\n")
    with pytest.raises(ViewBuildError, match="needs the table alias"):
        expand_registry_blocks(path, "select\n    -- registry: slice_columns\n    1 as x\n")
    with pytest.raises(ViewBuildError, match="'answer_f1' clashes"):
        expand_registry_blocks(
            path, "select\n  1 as answer_f1,\n  -- registry: contract\n  2 as y\n"
        )
    assert expand_registry_blocks(path, "select 1 -- registry: contract") == (
        "select 1 -- registry: contract"
    )


# --- a metric added through the registry alone -----------------------------------------------


def _len_score(_: object) -> pl.Expr:
    return (pl.col("response").str.len_chars().clip(upper_bound=100) / 100).cast(pl.Float64)


def _len_chars(_: object) -> pl.Expr:
    return pl.col("response").str.len_chars().cast(pl.Int64)


THROWAWAY = (
    MetricSpec("zz_test_len", "zz_test", _len_score, pl.Float64(),
               "Response length in characters / 100, capped at 1 (test only)."),
    count("zz_test_chars", "zz_test", _len_chars, "Response characters (test only).", needs=()),
)


@pytest.fixture
def throwaway_metrics(monkeypatch: pytest.MonkeyPatch) -> tuple[MetricSpec, ...]:
    """The registry with two extra metrics, a score and a count; nothing else is touched."""
    monkeypatch.setattr(registry, "_SPECS", (*registry._SPECS, *THROWAWAY))
    for spec in THROWAWAY:
        monkeypatch.setitem(registry.REGISTRY, spec.name, spec)
    monkeypatch.setitem(registry.FAMILIES, "zz_test", tuple(s.name for s in THROWAWAY))
    return THROWAWAY


def test_a_new_metric_reaches_scores_slices_and_intervals(
    tmp_path: Path, throwaway_metrics: tuple[MetricSpec, ...]
) -> None:
    responses = {"m1": ["Paris.", "Rome is the capital."], "m2": ["x" * 150, "Oslo"]}
    rows = [
        {"id": f"q{i}", "model": model, "question": f"Capital {i}?", "reference": "Paris",
         "response": response}
        for model, texts in responses.items() for i, response in enumerate(texts)
    ]
    source = tmp_path / "in.jsonl"
    pl.DataFrame(rows).write_ndjson(source)
    out = tmp_path / "out"
    evaluate([source], out, Config(metrics=("answer_f1", "zz_test")), resamples=20)

    types = dict(run_query(out, "select column_name, data_type from information_schema.columns "
                                "where table_name = 'scores'").rows())
    assert types["zz_test_len"] == "DOUBLE" and types["zz_test_chars"] == "BIGINT"
    scores = run_query(out, "select zz_test_chars from scores order by id, model")
    assert scores["zz_test_chars"].to_list() == [6, 150, 20, 4]

    by_model = {row["model"]: row for row in run_query(out, "select * from by_model").to_dicts()}
    assert list(run_query(out, "select * from by_model").columns[:len(BY_HAND_COLUMNS)]) == (
        BY_HAND_COLUMNS
    )
    assert by_model["m1"]["zz_test_len"] == pytest.approx((0.06 + 0.20) / 2)
    assert by_model["m2"]["zz_test_len"] == pytest.approx((1.0 + 0.04) / 2)
    assert by_model["m1"]["zz_test_chars"] == 26  # a count is summed, not averaged
    noise = run_query(out, "select * from by_model_noise")
    assert {"zz_test_len", "zz_test_chars"} <= set(noise.columns)

    intervals = pl.read_parquet(out / "intervals.parquet")
    mine = intervals.filter(pl.col("slice") == "all", pl.col("metric") == "zz_test_len")
    assert dict(zip(mine["model"], mine["mean"], strict=True)) == pytest.approx(
        {"m1": 0.13, "m2": 0.52}
    )
    assert intervals.filter(pl.col("metric") == "zz_test_chars").is_empty()
    assert set(run_query(out, "select distinct metric from intervals")["metric"]) >= {
        "zz_test_len", "answer_f1"
    }
