"""Bootstrap intervals, Wilson intervals, McNemar, Holm/BH and the two stats tables."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.stats import (
    COMPARISON_SCHEMA,
    INTERVAL_SCHEMA,
    benjamini_hochberg,
    binary_columns,
    comparison_table,
    holm,
    interval_table,
    mcnemar_exact_p,
    metric_columns,
    wilson_interval,
    write_stats,
)

KEYS: dict[str, pl.DataType] = {
    "id": pl.String(),
    "model": pl.String(),
    "run": pl.String(),
    "category": pl.String(),
    "noise_level": pl.Float64(),
    "task": pl.String(),
}
METRICS: dict[str, pl.DataType] = {"answer_em": pl.Int8(), "answer_f1": pl.Float64()}


def scores(columns: dict[str, list]) -> pl.DataFrame:
    """A scores-like frame: key columns (missing ones null) plus answer_em and answer_f1."""
    height = len(next(iter(columns.values())))
    schema = {**KEYS, **METRICS}
    return pl.DataFrame(
        {name: columns.get(name, [None] * height) for name in schema}, schema=schema
    )


def exact_mcnemar(b: int, c: int) -> float:
    n, k = b + c, min(b, c)
    return min(1.0, float(2 * Fraction(sum(math.comb(n, j) for j in range(k + 1)), 2**n)))


# --------------------------------------------------------------------------- columns


def test_metric_columns_drop_counts_keep_usage():
    schema = {
        "id": pl.String(), "answer_em": pl.Int8(), "answer_f1": pl.Float64(),
        "rouge_1_overlap": pl.Int64(), "total_tokens": pl.Int64(), "latency_ms": pl.Float64(),
        "abstained": pl.Int8(), "length_feedback": pl.String(), "not_a_metric": pl.Float64(),
    }
    # Every other column of a scores table is a user-defined metric (pipeline.metrics.user):
    # a Float64 one is a score, after the registered metrics.
    assert metric_columns(schema) == [
        "answer_em", "answer_f1", "abstained", "total_tokens", "latency_ms", "not_a_metric"
    ]
    assert binary_columns(schema) == ["answer_em", "abstained"]
    assert binary_columns({**schema, "has_url": pl.Int8()})[-1] == "has_url"


# --------------------------------------------------------------------------- Wilson


def test_wilson_hand_values():
    low, high = wilson_interval(np.array([8, 0, 10, 0]), np.array([10, 10, 10, 0]))
    assert low[:3].round(4).tolist() == [0.4902, 0.0, 0.7225]
    assert high[:3].round(4).tolist() == [0.9433, 0.2775, 1.0]
    assert np.isnan(low[3]) and np.isnan(high[3])


# --------------------------------------------------------------------------- McNemar


def test_mcnemar_hand_values():
    assert mcnemar_exact_p(1, 6) == pytest.approx(2 * (1 + 7) / 128, rel=1e-12)
    assert mcnemar_exact_p(6, 1) == pytest.approx(0.125, rel=1e-12)
    assert mcnemar_exact_p(0, 0) == 1.0
    assert mcnemar_exact_p(5, 5) == 1.0
    assert mcnemar_exact_p(0, 4) == pytest.approx(2 / 16, rel=1e-12)
    assert isinstance(mcnemar_exact_p(1, 6), float)


@pytest.mark.parametrize("b, c", [(1000, 1100), (30, 70), (255, 300), (5, 250), (2000, 2600)])
def test_mcnemar_matches_exact_integer_sum(b, c):
    assert mcnemar_exact_p(b, c) == pytest.approx(exact_mcnemar(b, c), rel=1e-9)


def test_mcnemar_large_counts_near_normal_approximation():
    # z = |b - c| / sqrt(b + c) = 2: two-sided normal p = 0.0455
    p = mcnemar_exact_p(499_000, 501_000)
    assert math.isfinite(p)
    assert p == pytest.approx(math.erfc(2 / math.sqrt(2)), abs=1e-3)
    p = mcnemar_exact_p(1000, 1100)
    z = 100 / math.sqrt(2100)
    assert math.erfc(z / math.sqrt(2)) < p < math.erfc((z - 0.1) / math.sqrt(2))


def test_mcnemar_vectorized():
    p = mcnemar_exact_p(np.array([1, 0, 5, 1000]), np.array([6, 0, 5, 1100]))
    expected = [0.125, 1.0, 1.0, exact_mcnemar(1000, 1100)]
    np.testing.assert_allclose(p, expected, rtol=1e-9)
    with pytest.raises(ValueError):
        mcnemar_exact_p(-1, 3)


# --------------------------------------------------------------------------- Holm / BH


def test_holm_hand_values():
    np.testing.assert_allclose(holm(np.array([0.01, 0.04, 0.03, 0.005])), [0.03, 0.06, 0.06, 0.02])
    np.testing.assert_allclose(holm(np.array([0.01, np.nan, 0.04])), [0.02, np.nan, 0.04])
    np.testing.assert_allclose(holm(np.array([0.6, 0.9])), [1.0, 1.0])
    assert holm(np.array([])).size == 0
    assert np.isnan(holm(np.array([np.nan, np.nan]))).all()


def test_benjamini_hochberg_hand_values():
    np.testing.assert_allclose(
        benjamini_hochberg(np.array([0.01, 0.04, 0.03, 0.005])), [0.02, 0.04, 0.04, 0.02]
    )
    np.testing.assert_allclose(
        benjamini_hochberg(np.array([0.01, np.nan, 0.04])), [0.02, np.nan, 0.04]
    )
    np.testing.assert_allclose(benjamini_hochberg(np.array([0.9, 0.95])), [0.95, 0.95])
    np.testing.assert_allclose(benjamini_hochberg(np.array([0.6, 2.0])), [1.0, 1.0])


# --------------------------------------------------------------------------- intervals


def test_coverage_by_simulation():
    # 200 simulated "models" of 200 independent questions each: one by_model group each.
    sims, rows = 200, 200
    rng = np.random.default_rng(12345)
    frame = scores({
        "id": [f"q{i}" for i in range(rows)] * sims,
        "model": np.repeat([f"m{s:03d}" for s in range(sims)], rows).tolist(),
        "answer_em": (rng.random(sims * rows) < 0.3).astype(np.int8).tolist(),
        "answer_f1": rng.normal(0.5, 0.2, sims * rows).tolist(),
    })
    table = interval_table(frame, resamples=400, seed=7)
    assert table["slice"].unique().to_list() == ["all"]
    em = table.filter(pl.col("metric") == "answer_em")
    f1 = table.filter(pl.col("metric") == "answer_f1")
    assert em.height == f1.height == sims
    boot_em = ((em["ci_low"] <= 0.3) & (em["ci_high"] >= 0.3)).mean()
    wilson = ((em["wilson_low"] <= 0.3) & (em["wilson_high"] >= 0.3)).mean()
    boot_f1 = ((f1["ci_low"] <= 0.5) & (f1["ci_high"] >= 0.5)).mean()
    for coverage in (boot_em, wilson, boot_f1):
        assert 0.88 <= coverage <= 0.99
    assert f1["wilson_low"].is_null().all()


def test_interval_values_and_views():
    frame = scores({
        "id": ["a", "b", "c", "a", "b", "c", "a"],
        "model": ["m", "m", "m", "m", "m", "m", None],
        "category": ["x", "x", "y", "x", "x", "y", "x"],
        "noise_level": [0.0, 0.0, 0.0, 0.5, 0.5, None, 0.0],
        "answer_em": [1, 0, 1, 1, None, 0, 1],
        "answer_f1": [1.0, 0.5, 1.0, 0.5, 0.0, 0.0, 0.25],
    })
    table = interval_table(frame, resamples=200, seed=1)
    assert dict(table.schema) == INTERVAL_SCHEMA
    row = table.filter(slice="all", model="m", metric="answer_em").row(0, named=True)
    assert (row["n"], row["mean"]) == (5, 0.6)
    assert (row["noise_level"], row["category"]) == (None, None)
    assert (row["resamples"], row["seed"]) == (200, 1)
    assert row["method"] == "percentile bootstrap over questions"
    assert 0.0 <= row["ci_low"] <= row["mean"] <= row["ci_high"] <= 1.0
    low, high = wilson_interval(np.array([3]), np.array([5]))
    assert (row["wilson_low"], row["wilson_high"]) == (low[0], high[0])
    # the null model is its own group
    null_model = table.filter(pl.col("model").is_null(), slice="all", metric="answer_f1")
    assert null_model["mean"].to_list() == [0.25]
    # rows without a noise level are not in by_model_noise
    noise = table.filter(slice="noise_level", model="m", metric="answer_f1").sort("noise_level")
    assert noise["noise_level"].to_list() == [0.0, 0.5]
    assert noise["n"].to_list() == [3, 2]
    assert noise["mean"].to_list() == pytest.approx([2.5 / 3, 0.25])
    category = table.filter(slice="category", model="m", metric="answer_em")
    assert category.sort("category")["mean"].to_list() == [2 / 3, 0.5]
    sort_keys = ["slice", "model", "noise_level", "category", "question_type", "task", "metric"]
    assert table.equals(table.sort(sort_keys, nulls_last=True))


def test_one_question_collapses_interval():
    # Every row is the same question: resampling questions always draws the one question.
    frame = scores({
        "id": ["q"] * 40,
        "model": ["m"] * 40,
        "answer_em": [1, 0] * 20,
        "answer_f1": np.linspace(0, 1, 40).tolist(),
    })
    table = interval_table(frame, resamples=300, seed=0).filter(slice="all")
    assert table["ci_low"].to_list() == pytest.approx(table["mean"].to_list())
    assert table["ci_high"].to_list() == pytest.approx(table["mean"].to_list())


def test_clustered_interval_wider_than_independent_rows():
    rng = np.random.default_rng(3)
    values = rng.normal(0.5, 0.2, 20).repeat(10).tolist()  # 20 questions, 10 rows each
    clustered = scores({
        "id": np.repeat([f"q{i}" for i in range(20)], 10).tolist(),
        "model": ["m"] * 200, "answer_f1": values,
    })
    independent = clustered.with_columns(id=pl.format("r{}", pl.int_range(200)))

    def width(frame: pl.DataFrame) -> float:
        row = interval_table(frame, resamples=500, seed=0).filter(
            slice="all", metric="answer_f1"
        ).row(0, named=True)
        return row["ci_high"] - row["ci_low"]

    assert width(clustered) > 2.0 * width(independent)


def test_empty_and_unmeasured():
    empty = interval_table(scores({"id": []}), resamples=10)
    assert empty.height == 0 and dict(empty.schema) == INTERVAL_SCHEMA
    # a metric with no values in a group has no row
    frame = scores({"id": ["a", "b"], "model": ["m", "m"], "answer_f1": [0.1, 0.2]})
    assert interval_table(frame, resamples=10)["metric"].to_list() == ["answer_f1"]
    empty = comparison_table(scores({"id": []}), resamples=10)
    assert empty.height == 0 and dict(empty.schema) == COMPARISON_SCHEMA


# --------------------------------------------------------------------------- comparisons


def two_models() -> pl.DataFrame:
    """Model a beats b on answer_em: category x b=4, c=0; category y b=2, c=1; all b=6, c=1."""
    em_a = [1, 1, 1, 1, 0, 1, 1, 0, 0, 1]
    em_b = [0, 0, 0, 0, 0, 0, 0, 1, 0, 1]
    ids = [f"q{i}" for i in range(10)]
    category = ["x"] * 5 + ["y"] * 5
    f1 = np.linspace(0.1, 0.9, 10)
    return scores({
        "id": [*ids, *ids, "only_a"],
        "model": ["a"] * 10 + ["b"] * 10 + ["a"],
        "category": [*category, *category, "x"],
        "answer_em": [*em_a, *em_b, 0],
        "answer_f1": [*f1.tolist(), *(f1 - 0.05).tolist(), 0.0],
    })


def test_comparison_mcnemar_and_holm_by_hand():
    table = comparison_table(two_models(), resamples=500, seed=0)
    assert dict(table.schema) == COMPARISON_SCHEMA
    em = table.filter(metric="answer_em").sort("slice", "category", nulls_last=True)
    assert em.select("slice", "category").rows() == [("all", None), ("category", "x"),
                                                     ("category", "y")]
    assert em["n_pairs"].to_list() == [10, 5, 5]  # "only_a" has no partner
    assert em["n_a_only"].to_list() == [6, 4, 2]
    assert em["n_b_only"].to_list() == [1, 0, 1]
    assert em["test"].unique().to_list() == ["mcnemar exact"]
    assert em["p_value"].to_list() == pytest.approx([0.125, 0.125, 1.0])
    assert em["p_adjusted"].to_list() == pytest.approx([0.375, 0.375, 1.0])
    assert em["significant"].to_list() == [False, False, False]
    assert em["correction"].unique().to_list() == ["holm"]
    overall = em.row(0, named=True)
    assert (overall["mean_a"], overall["mean_b"]) == (0.7, 0.2)
    assert overall["diff"] == pytest.approx(0.5)
    assert 0 <= overall["ci_low"] <= overall["diff"] <= overall["ci_high"]


def test_comparison_permutation_metric():
    table = comparison_table(two_models(), resamples=500, seed=0)
    f1 = table.filter(metric="answer_f1", slice="all").row(0, named=True)
    assert f1["test"] == "paired permutation"
    assert (f1["n_a_only"], f1["n_b_only"]) == (None, None)
    assert f1["diff"] == pytest.approx(0.05)
    assert f1["ci_low"] == pytest.approx(0.05) and f1["ci_high"] == pytest.approx(0.05)
    # every question favours a by the same amount: only the all-plus/all-minus flips tie
    assert f1["p_value"] == pytest.approx((1 + 500 * 2 / 1024) / 501, abs=0.01)


def test_permutation_p_approximates_exact_enumeration():
    # 6 questions with differences 1..6: exactly 2 of the 64 sign patterns reach |sum| = 21.
    frame = scores({
        "id": [f"q{i}" for i in range(6)] * 2,
        "model": ["a"] * 6 + ["b"] * 6,
        "answer_f1": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0] + [0.0] * 6,
    })
    p = comparison_table(frame, resamples=4000, seed=5)["p_value"].item()
    assert p == pytest.approx(2 / 64, abs=0.01)


def test_comparison_pairs_on_keys_with_nulls_equal_and_noise_slices():
    frame = scores({
        "id": ["q1", "q1", "q2", "q1", "q1", "q2"],
        "model": ["a", "a", "a", "b", "b", "b"],
        "noise_level": [0.2, 0.4, None, 0.2, 0.4, None],
        "task": [None, None, "noise_robustness", None, None, "noise_robustness"],
        "answer_f1": [1.0, 0.5, 0.8, 0.0, 0.5, 0.8],
    })
    table = comparison_table(frame, resamples=50, seed=0)
    assert table.select("slice", "noise_level", "task", "n_pairs").rows() == [
        ("all", None, None, 3), ("noise_level", 0.2, None, 1), ("noise_level", 0.4, None, 1),
        ("task", None, "noise_robustness", 1),
    ]

def test_comparison_leaves_out_ambiguous_keys(caplog):
    frame = scores({
        "id": ["q1", "q1", "q2", "q1", "q2"],
        "model": ["a", "a", "a", "b", "b"],
        "answer_f1": [1.0, 0.0, 0.5, 0.2, 0.1],
    })
    table = comparison_table(frame, resamples=20, seed=0)
    assert table.select("n_pairs", "mean_a", "mean_b").rows() == [(1, 0.5, 0.1)]
    assert "left out of its paired comparisons" in caplog.text


# --------------------------------------------------------------------------- resamples, files


def test_zero_resamples_keeps_closed_forms():
    frame = two_models()
    intervals = interval_table(frame, resamples=0)
    assert intervals["ci_low"].is_null().all() and intervals["ci_high"].is_null().all()
    assert intervals.filter(metric="answer_em")["wilson_low"].is_not_null().all()
    comparisons = comparison_table(frame, resamples=0)
    assert comparisons["ci_low"].is_null().all()
    assert comparisons.filter(metric="answer_f1")["p_value"].is_null().all()
    em = comparisons.filter(metric="answer_em").sort("slice", "category", nulls_last=True)
    assert em["p_adjusted"].to_list() == pytest.approx([0.375, 0.375, 1.0])
    assert (comparisons["resamples"] == 0).all()


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_bad_resamples(bad, tmp_path):
    with pytest.raises(ValueError):
        interval_table(two_models(), resamples=bad)
    with pytest.raises(ValueError):
        comparison_table(two_models(), resamples=bad)
    with pytest.raises(ValueError):
        write_stats(tmp_path, resamples=bad)


def test_write_stats_deterministic(tmp_path: Path):
    frame = pl.concat([
        two_models(),
        two_models().filter(pl.col("model") == "b").with_columns(
            model=pl.lit("c"), answer_f1=pl.col("answer_f1") * 0.5
        ),
    ])
    runs = {}
    for name, seed in (("one", 3), ("two", 3), ("other", 4)):
        out = tmp_path / name
        out.mkdir()
        frame.write_parquet(out / "scores.parquet")
        summary = write_stats(out, resamples=200, seed=seed)
        assert summary.intervals == pl.read_parquet(summary.intervals_path).height
        assert summary.comparisons == pl.read_parquet(summary.comparisons_path).height
        runs[name] = out
    for file in ("intervals.parquet", "comparisons.parquet"):
        assert (runs["one"] / file).read_bytes() == (runs["two"] / file).read_bytes()
    one = pl.read_parquet(runs["one"] / "intervals.parquet")
    other = pl.read_parquet(runs["other"] / "intervals.parquet")
    assert one["mean"].equals(other["mean"])
    assert not one["ci_low"].equals(other["ci_low"])
    assert not list(tmp_path.glob("*/.tmp-*"))


def test_write_stats_missing_scores(tmp_path: Path):
    with pytest.raises(ValueError, match="missing"):
        write_stats(tmp_path)


def test_percentile_matches_numpy_linear():
    from pipeline.stats import _percentile_interval

    rng = np.random.default_rng(0)
    means = rng.normal(size=(500, 6))
    means[rng.random(means.shape) < 0.3] = np.nan
    means[:, 4] = np.nan
    means[:498, 5] = np.nan
    low, high = _percentile_interval(means)
    with np.errstate(invalid="ignore"), pytest.warns(RuntimeWarning):
        expected = np.nanpercentile(means, [2.5, 97.5], axis=0, method="linear")
    np.testing.assert_allclose(low, expected[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(high, expected[1], rtol=1e-12, atol=1e-12)


def test_models_without_common_questions_have_no_comparisons():
    frame = scores({"id": ["q1", "q2"], "model": ["a", "b"], "answer_em": [1, 0]})
    assert comparison_table(frame, resamples=10).height == 0
    assert interval_table(frame, resamples=10).height == 2


# --------------------------------------------------------------------------- sufficient statistics


def seeded(seed: int, *key) -> np.random.Generator:
    """The generator of one group: SeedSequence([seed, first four words of sha256(JSON key)])."""
    import hashlib
    import json

    digest = hashlib.sha256(json.dumps(key).encode()).digest()
    return np.random.default_rng(np.random.SeedSequence([seed, *np.frombuffer(digest[:16], "<u4")]))


def cluster_bootstrap(ids: list, values: np.ndarray, rng: np.random.Generator, resamples: int):
    """Oracle: the exact percentile cluster bootstrap of a mean (ids drawn with replacement)."""
    order = sorted(set(ids), key=lambda i: (i is not None, i))  # null first, then ascending
    index = np.array([order.index(i) for i in ids])
    present = ~np.isnan(values)
    sums = np.bincount(index, np.where(present, values, 0.0), len(order))
    counts = np.bincount(index, present.astype(float), len(order))
    draws = rng.integers(0, len(order), size=(resamples, len(order)), dtype=np.int32)
    weights = np.stack([np.bincount(row, minlength=len(order)) for row in draws])
    means = (weights @ sums) / (weights @ counts)
    return np.percentile(means, [2.5, 97.5], method="linear")


def clustered(n_ids: int, seed: int = 0) -> pl.DataFrame:
    """Two models x three noise levels x n_ids questions with a strong per-question effect."""
    rng = np.random.default_rng(seed)
    effect = rng.normal(0.0, 0.25, n_ids)
    rows = 2 * 3 * n_ids
    ids = np.tile(np.arange(n_ids), 6)
    f1 = np.clip(0.5 + effect[ids] + rng.normal(0, 0.1, rows) + np.repeat([0, 0.02], 3 * n_ids),
                 0, 1)
    return scores({
        "id": [f"q{i}" for i in ids],
        "model": np.repeat(["a", "b"], 3 * n_ids).tolist(),
        "noise_level": np.tile(np.repeat([0.0, 0.3, 0.6], n_ids), 2).tolist(),
        "category": [f"c{i % 3}" for i in ids],
        "answer_em": (rng.random(rows) < 0.3 + 0.4 * (effect[ids] > 0)).astype(np.int8).tolist(),
        "answer_f1": f1.tolist(),
    })


def test_intervals_equal_exact_cluster_bootstrap_oracle():
    frame = clustered(40).with_columns(
        answer_f1=pl.when(pl.int_range(pl.len()) % 7 == 0).then(None).otherwise("answer_f1")
    )
    table = interval_table(frame, resamples=300, seed=11)
    for slice_name, model, noise, category in [("all", "a", None, None),
                                               ("noise_level", "b", 0.3, None),
                                               ("category", "a", None, "c1")]:
        rows = frame.filter(pl.col("model") == model)
        if noise is not None:
            rows = rows.filter(pl.col("noise_level") == noise)
        if category is not None:
            rows = rows.filter(pl.col("category") == category)
        values = rows.select(pl.col("answer_em", "answer_f1").cast(pl.Float64)).to_numpy()
        means = []
        key = [v for v in (noise, category) if v is not None]
        rng = seeded(11, "interval", slice_name, model, *key)
        state = rng.bit_generator.state
        for j, metric in enumerate(["answer_em", "answer_f1"]):
            rng.bit_generator.state = state  # one draw matrix serves every metric of a group
            low, high = cluster_bootstrap(rows["id"].to_list(), values[:, j], rng, 300)
            got = table.filter(slice=slice_name, model=model, metric=metric).filter(
                pl.col("noise_level").eq_missing(noise), pl.col("category").eq_missing(category)
            ).row(0, named=True)
            assert (got["ci_low"], got["ci_high"]) == pytest.approx((low, high), rel=1e-12)
            means.append(got["mean"])
        assert means == pytest.approx(np.nanmean(values, axis=0).tolist(), rel=1e-12)


def test_comparisons_equal_exact_cluster_bootstrap_oracle():
    frame = clustered(30)
    table = comparison_table(frame, resamples=400, seed=2)
    for slice_name, value, rows in [
        ("all", None, frame),
        ("noise_level", 0.3, frame.filter(pl.col("noise_level") == 0.3)),
    ]:
        values = [] if value is None else [value]
        a = rows.filter(model="a").sort("id", "noise_level")
        b = rows.filter(model="b").sort("id", "noise_level")
        diffs = (a["answer_f1"] - b["answer_f1"]).to_numpy()
        low, high = cluster_bootstrap(a["id"].to_list(), diffs,
                                      seeded(2, "bootstrap", "a", "b", slice_name, *values), 400)
        got = table.filter(pl.col("noise_level").eq_missing(value), metric="answer_f1",
                           slice=slice_name).row(0, named=True)
        assert (got["ci_low"], got["ci_high"]) == pytest.approx((low, high), rel=1e-12)
        # the sign-flip test over the per-question sums of the differences
        ids = sorted(set(a["id"].to_list()))
        index = np.array([ids.index(i) for i in a["id"].to_list()])
        summed = np.bincount(index, diffs, len(ids))
        rng = seeded(2, "permutation", "a", "b", slice_name, *values)
        signs = 2.0 * rng.integers(0, 2, size=(400, len(ids)), dtype=np.int8) - 1.0
        tolerance = 1e-9 * max(1.0, np.abs(summed).sum())
        extreme = np.count_nonzero(np.abs(signs @ summed) >= abs(summed.sum()) - tolerance)
        assert got["p_value"] == pytest.approx((1 + extreme) / 401, rel=1e-12)


def test_bucket_of_is_md5():
    import hashlib

    from pipeline.stats import bucket_of

    ids = ["q1", "what is rag?", "é", ""]
    expected = [int(hashlib.md5(i.encode()).hexdigest()[:8], 16) >> (32 - 11) for i in ids]
    assert bucket_of(pl.Series(ids), 2048).to_list() == expected
    with pytest.raises(ValueError):
        bucket_of(pl.Series(ids), 1000)


def test_bucketed_close_to_exact():
    frame = clustered(1500, seed=4)
    exact = interval_table(frame, resamples=1000, seed=0)
    bucketed = interval_table(frame, resamples=1000, seed=0, exact_max_ids=100, buckets=1024)
    assert bucketed["method"].unique().to_list() == [
        "percentile bootstrap over questions, ids in 1024 md5 buckets"
    ]
    keys = ["slice", "model", "noise_level", "category", "metric"]
    assert exact.select(keys).equals(bucketed.select(keys))
    assert exact["n"].equals(bucketed["n"])
    np.testing.assert_allclose(bucketed["mean"], exact["mean"], rtol=1e-12)
    assert exact["wilson_low"].equals(bucketed["wilson_low"])
    ratio = (bucketed["ci_high"] - bucketed["ci_low"]) / (exact["ci_high"] - exact["ci_low"])
    assert ratio.min() > 0.85 and ratio.max() < 1.15
    exact_cmp = comparison_table(frame, resamples=1000, seed=0)
    bucketed_cmp = comparison_table(frame, resamples=1000, seed=0, exact_max_ids=100,
                                    buckets=1024)
    cmp_keys = ["slice", "noise_level", "category", "task", "metric", "n_pairs", "n_a_only"]
    assert exact_cmp.select(cmp_keys).equals(bucketed_cmp.select(cmp_keys))
    np.testing.assert_allclose(bucketed_cmp["diff"], exact_cmp["diff"], rtol=1e-9)
    ratio = (bucketed_cmp["ci_high"] - bucketed_cmp["ci_low"]) / (
        exact_cmp["ci_high"] - exact_cmp["ci_low"]
    )
    assert ratio.min() > 0.85 and ratio.max() < 1.15
    f1 = (exact_cmp["test"] == "paired permutation").to_numpy()
    np.testing.assert_allclose(bucketed_cmp["p_value"].to_numpy()[f1],
                               exact_cmp["p_value"].to_numpy()[f1], atol=0.05)


@pytest.mark.parametrize("exact_max_ids", [10_000, 10])
def test_lazy_input_and_passes_do_not_change_results(exact_max_ids, monkeypatch):
    import pipeline.stats

    frame = pl.concat([clustered(60), clustered(60).head(5)])  # with duplicate keys
    options = {"resamples": 200, "seed": 5, "exact_max_ids": exact_max_ids, "buckets": 64}
    eager = (interval_table(frame, **options), comparison_table(frame, **options))
    lazy = (interval_table(frame.lazy(), **options), comparison_table(frame.lazy(), **options))
    # several passes over the clusters
    monkeypatch.setattr(pipeline.stats.budgets, "PASS_ROWS", 100)
    passes = (interval_table(frame, **options), comparison_table(frame, **options))
    for got, want in zip(lazy, eager, strict=True):
        assert got.equals(want)
    # per-cluster sums do not depend on the passes; totals over passes are rounded differently
    for got, want in zip(passes, eager, strict=True):
        floats = [c for c, dtype in want.schema.items() if dtype == pl.Float64]
        assert got.drop(floats).equals(want.drop(floats))
        for column in floats:
            np.testing.assert_allclose(got[column].to_numpy(), want[column].to_numpy(),
                                       rtol=1e-12)


def test_write_stats_lazy_and_deterministic_when_bucketed(tmp_path: Path):
    frame = clustered(200)
    frame.write_parquet(tmp_path / "scores.parquet")
    runs = {}
    for name, scores_arg, seed in (("file", None, 1), ("lazy", "lazy", 1), ("again", None, 1),
                                   ("other", None, 2)):
        out = tmp_path / name
        out.mkdir()
        lazy = pl.scan_parquet(tmp_path / "scores.parquet") if scores_arg else None
        if scores_arg is None:
            frame.write_parquet(out / "scores.parquet")
        write_stats(out, resamples=300, seed=seed, scores=lazy, exact_max_ids=50, buckets=128)
        runs[name] = out
    for file in ("intervals.parquet", "comparisons.parquet"):
        assert (runs["file"] / file).read_bytes() == (runs["lazy"] / file).read_bytes()
        assert (runs["file"] / file).read_bytes() == (runs["again"] / file).read_bytes()
    one = pl.read_parquet(runs["file"] / "intervals.parquet")
    other = pl.read_parquet(runs["other"] / "intervals.parquet")
    assert one["mean"].equals(other["mean"])
    assert not one["ci_low"].equals(other["ci_low"])
