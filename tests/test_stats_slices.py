"""Slices on demand: ``rag-eval stats DIR --by COLUMNS``, typed slice keys, metric names.

Exact values on a twelve-row table worked out by hand, the exact cluster bootstrap of a
requested slice against a pure-numpy oracle, the table schemas, the names of the metrics
against the views, the errors, and the README's multi-hop recipe run as written.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal
from test_views import rejected_frame, scores_frame

from pipeline.cli import EXIT_ERROR, EXIT_OK, main
from pipeline.config import Config
from pipeline.drivers import evaluate
from pipeline.metrics.registry import REGISTRY
from pipeline.schema import InputError
from pipeline.stats import (
    COMPARISON_SCHEMA,
    INTERVAL_SCHEMA,
    MAX_SLICE_CELLS,
    METRIC_NAMES,
    comparison_table,
    holm,
    interval_table,
    mcnemar_exact_p,
    wilson_interval,
    write_stats,
)
from pipeline.views import build_views, run_query

ROOT = Path(__file__).resolve().parent.parent
SLICE = "question_type,noise_level"

KEYS: dict[str, pl.DataType] = {
    "id": pl.String(), "model": pl.String(), "run": pl.String(), "category": pl.String(),
    "noise_level": pl.Float64(), "question_type": pl.String(), "task": pl.String(),
}
METRICS: dict[str, pl.DataType] = {
    "answer_em": pl.Int8(), "answer_f1": pl.Float64(), "abstained": pl.Int8(),
}

# model, id, question_type, noise_level, answer_em, answer_f1, abstained
_ROWS = [
    ("a", "q1", "multi-hop", 0.0, 1, 1.0, 0),
    ("a", "q1", "multi-hop", 0.4, 0, 0.5, 0),
    ("a", "q2", "multi-hop", 0.0, 1, 1.0, 0),
    ("a", "q2", "multi-hop", 0.4, 0, 0.0, 1),
    ("a", "q3", "fact", 0.0, 1, 1.0, 0),
    ("a", "q3", "fact", 0.4, 1, 1.0, 0),
    ("b", "q1", "multi-hop", 0.0, 0, 0.5, 0),
    ("b", "q1", "multi-hop", 0.4, 1, 1.0, 0),
    ("b", "q2", "multi-hop", 0.0, 0, 0.25, 0),
    ("b", "q2", "multi-hop", 0.4, 1, 1.0, 0),
    ("b", "q3", "fact", 0.0, 1, 1.0, 0),
    ("b", "q3", "fact", 0.4, 0, 0.0, 1),
]


def tiny() -> pl.DataFrame:
    columns = ("model", "id", "question_type", "noise_level", "answer_em", "answer_f1",
               "abstained")
    rows = [dict(zip(columns, row, strict=True)) for row in _ROWS]
    return pl.DataFrame(
        [{**{k: None for k in KEYS}, **row} for row in rows], schema={**KEYS, **METRICS}
    )


def seeded(seed: int, *key: object) -> np.random.Generator:
    """The documented generator of one group: SeedSequence([seed, sha256(JSON key)[:16]])."""
    digest = hashlib.sha256(json.dumps(key).encode()).digest()
    return np.random.default_rng(np.random.SeedSequence([seed, *np.frombuffer(digest[:16], "<u4")]))


def cluster_bootstrap(ids: list, values: np.ndarray, rng: np.random.Generator, resamples: int):
    """Oracle: the percentile bootstrap of a mean over questions drawn with replacement."""
    order = sorted(set(ids))
    index = np.array([order.index(i) for i in ids])
    sums = np.bincount(index, values, len(order))
    counts = np.bincount(index, minlength=len(order)).astype(float)
    draws = rng.integers(0, len(order), size=(resamples, len(order)), dtype=np.int32)
    weights = np.stack([np.bincount(row, minlength=len(order)) for row in draws])
    return np.percentile((weights @ sums) / (weights @ counts), [2.5, 97.5], method="linear")


def one(frame: pl.DataFrame, **where: object) -> dict:
    rows = frame.filter(**where)
    assert rows.height == 1, rows
    return rows.row(0, named=True)


# --------------------------------------------------------------------------- exact values


def test_requested_slice_intervals_by_hand() -> None:
    table = interval_table(tiny(), resamples=1000, seed=3, by=[SLICE])
    cell = {"slice": SLICE, "question_type": "multi-hop", "noise_level": 0.4}
    a_f1 = one(table, model="a", metric="answer_f1", **cell)
    assert (a_f1["n"], a_f1["mean"]) == (2, 0.25)
    # two questions (0.5 and 0.0): resampled means 0.0, 0.25, 0.5 with chances 1/4, 1/2, 1/4,
    # so the 2.5th and 97.5th percentiles of 1,000 resamples are the extremes
    assert (a_f1["ci_low"], a_f1["ci_high"]) == (0.0, 0.5)
    assert (a_f1["category"], a_f1["task"]) == (None, None)
    b_f1 = one(table, model="b", metric="answer_f1", **cell)
    assert (b_f1["n"], b_f1["mean"], b_f1["ci_low"], b_f1["ci_high"]) == (2, 1.0, 1.0, 1.0)
    # a 0/1 metric also gets its Wilson interval; abstained is named as the views name its mean
    abstain = one(table, model="a", metric="abstain_rate", **cell)
    low, high = wilson_interval(np.array([1]), np.array([2]))
    assert (abstain["mean"], abstain["wilson_low"], abstain["wilson_high"]) == (
        0.5, low[0], high[0]
    )
    fact = one(table, model="b", metric="answer_em", slice=SLICE, question_type="fact",
               noise_level=0.0)
    assert (fact["n"], fact["mean"]) == (1, 1.0)
    # the slice has exactly the 2 x 2 cells with rows, per model and metric
    assert table.filter(slice=SLICE).height == 2 * 4 * 3
    # the defaults are there too, unchanged by the request
    default = interval_table(tiny(), resamples=1000, seed=3)
    assert_frame_equal(table.filter(pl.col("slice") != SLICE), default)


def test_requested_slice_comparisons_by_hand() -> None:
    table = comparison_table(tiny(), resamples=1000, seed=3, by=[SLICE])
    cell = {"slice": SLICE, "question_type": "multi-hop", "noise_level": 0.4}
    f1 = one(table, metric="answer_f1", **cell)
    assert (f1["model_a"], f1["model_b"], f1["n_pairs"]) == ("a", "b", 2)
    assert (f1["mean_a"], f1["mean_b"], f1["diff"]) == (0.25, 1.0, -0.75)
    assert (f1["ci_low"], f1["ci_high"]) == (-1.0, -0.5)  # differences -0.5 and -1.0
    em = one(table, metric="answer_em", **cell)
    assert (em["n_a_only"], em["n_b_only"], em["test"]) == (0, 2, "mcnemar exact")
    assert em["p_value"] == pytest.approx(0.5)  # 2 * P(Bin(2, 1/2) <= 0)
    # Holm runs over the rows of the requested slice alone ...
    rows = table.filter(slice=SLICE, metric="answer_em")
    assert rows.height == 4
    assert rows["p_adjusted"].to_list() == pytest.approx(
        holm(rows["p_value"].to_numpy()).tolist()
    )
    expected = mcnemar_exact_p(np.array([2, 0, 0, 1]), np.array([0, 2, 0, 0]))
    by_cell = rows.sort("question_type", "noise_level")  # fact 0.0, fact 0.4, mh 0.0, mh 0.4
    assert by_cell["p_value"].to_list() == pytest.approx([expected[2], expected[3],
                                                          expected[0], expected[1]])
    # ... so the default rows are those of a run without the request
    default = comparison_table(tiny(), resamples=1000, seed=3)
    assert_frame_equal(table.filter(pl.col("slice") != SLICE), default)


def test_requested_slice_equals_exact_cluster_bootstrap_oracle() -> None:
    rng = np.random.default_rng(8)
    n_ids = 12
    ids = [f"q{i:02d}" for i in range(n_ids)]
    frame = pl.DataFrame({
        "id": ids * 4,
        "model": ["a"] * 2 * n_ids + ["b"] * 2 * n_ids,
        "noise_level": ([0.0] * n_ids + [0.4] * n_ids) * 2,
        "question_type": [["fact", "multi-hop"][i % 2] for i in range(n_ids)] * 4,
        "answer_f1": rng.random(4 * n_ids),
    })
    table = interval_table(frame, resamples=400, seed=5, by=[SLICE])
    rows = frame.filter(model="b", question_type="multi-hop", noise_level=0.4)
    low, high = cluster_bootstrap(rows["id"].to_list(), rows["answer_f1"].to_numpy(),
                                  seeded(5, "interval", SLICE, "b", "multi-hop", 0.4), 400)
    got = one(table, slice=SLICE, model="b", question_type="multi-hop", noise_level=0.4)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((low, high), rel=1e-12)
    assert got["mean"] == pytest.approx(rows["answer_f1"].mean(), rel=1e-12)
    pairs = comparison_table(frame, resamples=400, seed=5, by=[SLICE])
    a = frame.filter(model="a", question_type="multi-hop", noise_level=0.4).sort("id")
    diffs = (a["answer_f1"] - rows.sort("id")["answer_f1"]).to_numpy()
    low, high = cluster_bootstrap(
        a["id"].to_list(), diffs,
        seeded(5, "bootstrap", "a", "b", SLICE, "multi-hop", 0.4), 400,
    )
    got = one(pairs, slice=SLICE, question_type="multi-hop", noise_level=0.4)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((low, high), rel=1e-12)


# --------------------------------------------------------------------------- typed keys


def test_slice_columns_keep_their_types() -> None:
    frame = tiny().with_columns(
        difficulty=pl.Series([1, 2, 1, 2, 3, 3] * 2, dtype=pl.Int64),
        domain=pl.Series(["law", "med"] * 6, dtype=pl.Categorical),
    )
    intervals = interval_table(frame, resamples=0, by=["difficulty", ("domain", "noise_level")])
    keys = {"slice": pl.String(), "model": pl.String(), "noise_level": pl.Float64(),
            "category": pl.String(), "question_type": pl.String(), "task": pl.String(),
            "difficulty": pl.Int64(), "domain": pl.String()}
    values = {k: v for k, v in INTERVAL_SCHEMA.items() if k not in keys}
    assert next(iter(values)) == "metric"
    assert list(intervals.schema.items()) == [*keys.items(), *values.items()]
    assert sorted(intervals["slice"].unique().to_list()) == [  # no category: no such rows
        "all", "difficulty", "domain,noise_level", "noise_level",
    ]
    medium = one(intervals, slice="difficulty", model="a", difficulty=2, metric="answer_f1")
    assert (medium["n"], medium["mean"], medium["noise_level"], medium["domain"]) == (
        2, 0.25, None, None
    )
    law = one(intervals, slice="domain,noise_level", model="b", domain="law", noise_level=0.0,
              metric="answer_f1")
    assert (law["n"], law["mean"]) == (3, (0.5 + 0.25 + 1.0) / 3)  # b's rows at 0.0
    assert intervals.filter(slice="domain,noise_level", model="b", domain="law",
                            noise_level=0.4).is_empty()
    comparisons = comparison_table(frame, resamples=0, by=["difficulty"])
    assert comparisons.schema["difficulty"] == pl.Int64()
    assert comparisons.filter(slice="difficulty")["difficulty"].unique().sort().to_list() == [
        1, 2, 3,
    ]
    # with nothing requested the tables have the four contract slice columns, typed
    assert dict(interval_table(tiny(), resamples=0).schema) == INTERVAL_SCHEMA
    assert dict(comparison_table(tiny(), resamples=0).schema) == COMPARISON_SCHEMA
    assert INTERVAL_SCHEMA["noise_level"] == pl.Float64()


def test_pair_takes_model_a_value_else_model_b() -> None:
    frame = tiny().with_columns(
        question_type=pl.when((pl.col("model") == "b") & (pl.col("id") == "q1"))
        .then(None)
        .when((pl.col("model") == "a") & (pl.col("id") == "q3"))
        .then(None)
        .otherwise("question_type")
    )
    table = comparison_table(frame, resamples=0, by=["question_type"])
    f1 = table.filter(slice="question_type", metric="answer_f1").sort("question_type")
    assert f1["question_type"].to_list() == ["fact", "multi-hop"]
    assert f1["n_pairs"].to_list() == [2, 4]  # q3 from b's rows, q1 from a's
    intervals = interval_table(frame, resamples=0, by=["question_type"])
    # per model, a row without a question type is in no question_type group
    a = one(intervals, slice="question_type", model="a", question_type="multi-hop",
            metric="answer_f1")
    assert a["n"] == 4
    assert intervals.filter(slice="question_type", model="a", question_type="fact").is_empty()


def test_repeated_and_default_slices_are_not_duplicated() -> None:
    once = interval_table(tiny(), resamples=50, by=[SLICE])
    again = interval_table(tiny(), resamples=50,
                           by=[SLICE, "noise_level,question_type", "noise_level", "all"])
    assert_frame_equal(once, again)


# --------------------------------------------------------------------------- errors


def test_bad_slices_are_input_errors() -> None:
    with pytest.raises(InputError, match=r"'question_typo' is not a column of the scores; "
                                         r"available: run, category, noise_level, question_type"):
        interval_table(tiny(), by=["question_typo"])
    with pytest.raises(InputError, match="'model' cannot be a slice column"):
        comparison_table(tiny(), by=["noise_level,model"])
    listed = tiny().with_columns(contexts=pl.Series([["x"]] * 12))
    with pytest.raises(InputError, match="'contexts' cannot be a slice column"):
        interval_table(listed, by=["contexts"])
    with pytest.raises(InputError, match="names a column twice"):
        interval_table(tiny(), by=["noise_level,noise_level"])
    with pytest.raises(InputError, match="COLUMN"):
        interval_table(tiny(), by=["noise_level,"])
    wide = tiny().with_columns(position=pl.int_range(pl.len()), bucket=pl.int_range(pl.len()))
    wide = pl.concat([wide.with_columns(position=pl.col("position") + 12 * k) for k in range(2)])
    with pytest.raises(InputError, match=rf"288 combinations .* at most {MAX_SLICE_CELLS}"):
        interval_table(wide, by=["position,bucket"])


# --------------------------------------------------------------------------- names and views


@pytest.fixture(scope="module")
def views_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("slices")
    scores_frame().write_parquet(out / "scores.parquet")
    rejected_frame().write_parquet(out / "rejected.parquet")
    write_stats(out, resamples=20, seed=0, by=["question_type"])
    build_views(out)
    return out


def test_interval_metrics_are_named_as_the_views_name_their_means(views_dir: Path) -> None:
    by_model = run_query(views_dir, "select * from by_model")
    intervals = run_query(views_dir, "select * from intervals where slice = 'all'")
    assert set(METRIC_NAMES.values()) <= set(by_model.columns)
    assert not set(intervals["metric"]) & set(METRIC_NAMES)  # abstained is abstain_rate
    means = dict(zip(by_model["model"], by_model.to_dicts(), strict=True))
    checked = set()
    for row in intervals.iter_rows(named=True):
        if row["metric"] in by_model.columns:
            assert row["mean"] == pytest.approx(means[row["model"]][row["metric"]], abs=1e-12)
            checked.add(row["metric"])
        else:  # a metric whose mean no view shows keeps its column name
            assert row["metric"] in REGISTRY and row["metric"] not in METRIC_NAMES
    assert {"abstain_rate", "citation_f1_macro", "mean_total_tokens", "answer_f1"} <= checked
    ci = run_query(views_dir, "select * from headline_ci where model = 'A'").row(0, named=True)
    a = intervals.filter(model="A")
    assert ci["abstain_rate_low"] == one(a, metric="abstain_rate")["wilson_low"]
    assert ci["citation_f1_macro_high"] == one(a, metric="citation_f1_macro")["ci_high"]


def test_question_type_view_has_the_by_model_columns(views_dir: Path) -> None:
    by_model = run_query(views_dir, "select * from by_model order by model")
    by_type = run_query(views_dir, "select * from by_model_question_type order by model")
    assert by_type.columns == ["model", "question_type", *by_model.columns[1:]]
    # every row of these scores has a null question type: one group per model, as by_model
    assert by_type["question_type"].null_count() == by_type.height
    assert_frame_equal(by_type.drop("question_type"), by_model, rel_tol=1e-12)
    # a null question type is in no question_type slice of the statistics
    staged = run_query(views_dir, "select * from intervals where slice = 'question_type'")
    assert staged.is_empty() and "question_type" in staged.columns


# --------------------------------------------------------------------------- the recipe


def recipe() -> list[list[str]]:
    """The two commands of the README's multi-hop recipe, as argument lists."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- recipe: multi-hop[^>]*-->\n```sh\n(.*?)```", text, re.S)
    assert block is not None
    lines = block.group(1).strip().splitlines()
    assert block.group(1) in (ROOT / "docs" / "statistics.md").read_text(encoding="utf-8")
    return [shlex.split(line) for line in lines]


def multi_hop_records() -> list[dict]:
    """Three models, 12 questions (6 multi-hop, 6 fact) at noise 0.0 and 0.4: alpha is best
    overall, beta on multi-hop questions at 0.4 (5 of 6 right, alpha 2, gamma 0)."""
    right = {
        ("alpha", "multi-hop", 0.4): 2, ("beta", "multi-hop", 0.4): 5,
        ("gamma", "multi-hop", 0.4): 0,
        ("alpha", "multi-hop", 0.0): 6, ("beta", "multi-hop", 0.0): 1,
        ("gamma", "multi-hop", 0.0): 3,
        ("alpha", "fact", 0.4): 6, ("beta", "fact", 0.4): 2, ("gamma", "fact", 0.4): 3,
        ("alpha", "fact", 0.0): 6, ("beta", "fact", 0.0): 2, ("gamma", "fact", 0.0): 3,
    }
    rows = []
    for (model, kind, noise), n_right in right.items():
        offset = 0 if kind == "multi-hop" else 6
        for k in range(6):
            answer = f"city{offset + k}"
            rows.append({
                "id": f"q{offset + k:02d}", "model": model, "question_type": kind,
                "noise_level": noise, "question": f"Where is thing {offset + k}?",
                "reference": answer, "response": answer if k < n_right else "somewhere else",
            })
    return rows


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("recipe")
    source = tmp / "answers.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in multi_hop_records()),
                      encoding="utf-8")
    out = tmp / "out"
    assert main(["evaluate", "--input", str(source), "--out", str(out), "--metrics", "answer",
                 "--no-progress", "--resamples", "50"]) == EXIT_OK
    return out


def test_readme_recipe_answers_the_multi_hop_question(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stats, query = recipe()
    assert stats[:2] == ["rag-eval", "stats"] and query[:2] == ["rag-eval", "query"]
    capsys.readouterr()
    for command in (stats, query):
        assert main([command[1], str(run_dir), *command[3:]]) == EXIT_OK
    printed = capsys.readouterr().out
    assert "question_type,noise_level" in printed  # stats lists the slices it wrote
    table = printed[printed.index("┌"):]
    assert table.index("beta") < table.index("alpha") < table.index("gamma")
    answer = run_query(run_dir, query[3])
    assert answer["model"].to_list() == ["beta", "alpha", "gamma"]
    assert answer["n"].to_list() == [6, 6, 6]
    assert answer["mean"].to_list() == pytest.approx([5 / 6, 2 / 6, 0.0], abs=1e-12)
    best = answer.row(0, named=True)
    assert best["ci_low"] < best["mean"] < best["ci_high"] <= 1.0
    # the same interval the statistics give for that slice from the scores themselves
    scores = pl.read_parquet(run_dir / "scores.parquet")
    direct = interval_table(scores, by=[SLICE]).filter(
        slice=SLICE, question_type="multi-hop", noise_level=0.4, metric="answer_f1"
    ).sort("mean", descending=True)
    assert direct.select("model", "n", "mean", "ci_low", "ci_high").equals(answer)
    # overall alpha is best: the slice changes the answer
    overall = run_query(run_dir, "select model from by_model order by answer_f1 desc")
    assert overall["model"][0] == "alpha"


def test_unknown_slice_column_exits_2_and_lists_the_columns(
    run_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = (run_dir / "intervals.parquet").read_bytes()
    assert main(["stats", str(run_dir), "--by", "question_type,noise"]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert "slice column 'noise' is not a column of the scores; available:" in err
    for column in ("noise_level", "question_type", "category", "task", "language"):
        assert column in err
    assert (run_dir / "intervals.parquet").read_bytes() == before  # nothing written
    assert main(["stats", str(run_dir), "--by", "model"]) == EXIT_ERROR
    assert "cannot be a slice column" in capsys.readouterr().err


def test_evaluate_passes_slices_through(tmp_path: Path) -> None:
    source = tmp_path / "answers.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in multi_hop_records()[:24]),
                      encoding="utf-8")
    out = tmp_path / "out"
    evaluate([source], out, Config(metrics=("answer_f1",)), resamples=10,
             stats_by=["question_type"])
    slices = run_query(out, "select distinct slice from intervals order by slice")["slice"]
    assert slices.to_list() == ["all", "noise_level", "question_type"]
