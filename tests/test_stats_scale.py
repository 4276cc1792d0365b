"""Statistics at scale: which pairs the comparisons hold, blocked computation, bounded memory.

The pairing rule (all pairs up to ``max_all_pairs`` models, then each model against one
baseline) on generated model counts; the blocked, sparse and streamed computation against the
same computation in one block, on small tables in both resampling regimes; and a run of 300
models in a child process whose address space is capped with ``RLIMIT_AS`` (no wall-clock
assertion).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from math import comb
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

import pipeline.stats
from pipeline.config import Config
from pipeline.drivers import evaluate
from pipeline.report import Limits, write_report
from pipeline.report.data import load_run
from pipeline.report.limits import cap
from pipeline.schema import InputError
from pipeline.stats import (
    MAX_ALL_PAIRS,
    PAIRING_ALL,
    PAIRING_BASELINE,
    comparison_table,
    interval_table,
    write_stats,
)
from pipeline.stats.coding import stats_columns

ROOT = Path(__file__).resolve().parent.parent
KEYS: dict[str, pl.DataType] = {
    "id": pl.String(), "model": pl.String(), "run": pl.String(), "category": pl.String(),
    "noise_level": pl.Float64(), "question_type": pl.String(), "task": pl.String(),
}
METRICS: dict[str, pl.DataType] = {
    "answer_em": pl.Int8(), "answer_f1": pl.Float64(), "latency_ms": pl.Float64(),
}
INTERVAL_KEYS = ["slice", "model", "noise_level", "category", "question_type", "task", "metric"]
COMPARISON_KEYS = ["model_a", "model_b", "slice", "noise_level", "category", "question_type",
                   "task", "metric"]


def generated(models: int, questions: int, seed: int = 0, *, missing: float = 0.1,
              categories: int = 3) -> pl.DataFrame:
    """Every model answers every question at two noise levels; model ``m{i}`` gets a skill
    that grows with ``i`` (so the last model has the best answer_f1); some values missing."""
    rng = np.random.default_rng(seed)
    rows = models * questions * 2
    model = np.repeat(np.arange(models), questions * 2)
    question = np.tile(np.repeat(np.arange(questions), 2), models)
    f1 = np.clip(0.3 + 0.4 * model / max(models, 1) + rng.normal(0, 0.2, rows), 0, 1)
    frame = pl.DataFrame({
        "id": [f"q{q:04d}" for q in question],
        "model": [f"m{i:03d}" for i in model],
        "run": [None] * rows,
        "category": [f"c{q % categories}" for q in question],
        "noise_level": np.tile([0.0, 0.4], models * questions),
        "question_type": [["fact", "multi-hop"][q % 2] for q in question],
        "task": [None] * rows,
        "answer_em": (f1 > 0.6).astype(np.int8),
        "answer_f1": np.where(rng.random(rows) < missing, np.nan, f1),
        "latency_ms": rng.gamma(2.0, 300.0, rows),
    }, schema_overrides={**KEYS, **METRICS})
    return frame.with_columns(pl.col("answer_f1").fill_nan(None))


def pairs_of(table: pl.DataFrame) -> set[tuple[str, str]]:
    return set(table.select("model_a", "model_b").unique().iter_rows())


# --------------------------------------------------------------------------- the pairing rule


@pytest.mark.parametrize("models, limit", [(1, 20), (2, 20), (5, 20), (5, 5), (6, 5), (9, 2),
                                           (21, 20), (4, 0)])
def test_number_of_comparisons_follows_the_rule(models: int, limit: int) -> None:
    frame = generated(models, 6, seed=models)
    table = comparison_table(frame, resamples=0, max_all_pairs=limit)
    pairs = pairs_of(table)
    if models <= limit:
        assert len(pairs) == comb(models, 2)
        assert table["pairing"].unique().to_list() in ([], [PAIRING_ALL])
        assert table["baseline"].null_count() == table.height
    else:
        assert len(pairs) == models - 1
        assert table["pairing"].unique().to_list() == [PAIRING_BASELINE]
        (baseline,) = table["baseline"].unique().to_list()
        assert all(baseline in pair for pair in pairs)  # each model against the baseline
        means = frame.group_by("model").agg(pl.col("answer_f1").mean())
        assert baseline == means.sort("answer_f1", "model", descending=[True, False])["model"][0]
    assert all(a < b for a, b in pairs)  # model_a < model_b under either rule
    # one row per (pair, slice, metric) with pairs: the rows of each slice of each pair
    assert table.select(COMPARISON_KEYS).is_unique().all()


def test_default_limit_and_a_named_baseline() -> None:
    frame = generated(MAX_ALL_PAIRS + 1, 4)
    assert len(pairs_of(comparison_table(frame, resamples=0))) == MAX_ALL_PAIRS
    assert len(pairs_of(comparison_table(frame.filter(pl.col("model") != "m000"),
                                         resamples=0))) == comb(MAX_ALL_PAIRS, 2)
    named = comparison_table(frame, resamples=0, baseline="m003")
    assert named["baseline"].unique().to_list() == ["m003"]
    assert pairs_of(named) == {("m003", f"m{i:03d}") if i > 3 else (f"m{i:03d}", "m003")
                               for i in range(MAX_ALL_PAIRS + 1) if i != 3}
    with pytest.raises(InputError, match="baseline model 'nope' is not a model"):
        comparison_table(frame, resamples=0, baseline="nope")
    with pytest.raises(ValueError, match="max_all_pairs"):
        comparison_table(frame, resamples=0, max_all_pairs=-1)


def test_a_lower_is_better_primary_metric_picks_the_lowest() -> None:
    frame = generated(4, 5).drop("answer_f1", "answer_em")  # latency_ms: lower is better
    table = comparison_table(frame, resamples=0, max_all_pairs=2)
    means = frame.group_by("model").agg(pl.col("latency_ms").mean()).sort("latency_ms")
    assert table["baseline"].unique().to_list() == [means["model"][0]]


@pytest.mark.parametrize("exact_max_ids", [10_000, 4])
def test_baseline_rows_equal_the_all_pairs_rows(exact_max_ids: int) -> None:
    """A pair's rows do not depend on which rule chose it (nor on the other pairs)."""
    frame = generated(6, 12, seed=3)
    options = {"resamples": 200, "seed": 4, "exact_max_ids": exact_max_ids, "buckets": 64,
               "by": ["question_type"]}
    everything = comparison_table(frame, **options)
    against = comparison_table(frame, **options, max_all_pairs=3)
    (baseline,) = against["baseline"].unique().to_list()
    involved = everything.filter((pl.col("model_a") == baseline)
                                 | (pl.col("model_b") == baseline))
    assert_frame_equal(against.drop("pairing", "baseline"),
                       involved.drop("pairing", "baseline"))


def test_write_stats_records_and_logs_the_rule(tmp_path: Path, caplog) -> None:
    frame = generated(5, 4)
    frame.write_parquet(tmp_path / "scores.parquet")
    with caplog.at_level("INFO", logger="pipeline.stats"):
        summary = write_stats(tmp_path, resamples=10, max_all_pairs=3)
    assert (summary.pairing, summary.baseline) == (PAIRING_BASELINE, "m004")
    assert "more than 3: each model against the baseline 'm004'" in caplog.text
    written = pl.read_parquet(summary.comparisons_path)
    assert written.height == summary.comparisons
    assert written["pairing"].unique().to_list() == [PAIRING_BASELINE]
    assert len(pairs_of(written)) == 4


# --------------------------------------------------------------------------- blocked = unblocked


def both_tables(frame: pl.DataFrame, **options) -> tuple[pl.DataFrame, pl.DataFrame]:
    pairing = {k: options.pop(k) for k in ("max_all_pairs", "baseline") if k in options}
    return interval_table(frame, **options), comparison_table(frame, **options, **pairing)


REGIMES = [
    pytest.param({"exact_max_ids": 10_000}, id="exact"),
    pytest.param({"exact_max_ids": 4, "buckets": 64}, id="bucketed-64"),
    pytest.param({"exact_max_ids": 4, "buckets": 1024}, id="bucketed-1024"),
]


@pytest.mark.parametrize("regime", REGIMES)
def test_blocks_of_one_model_equal_one_block(regime, monkeypatch) -> None:
    """Blocks of models and pairs, and resampling sub-blocks, do not change a number."""
    frame = pl.concat([generated(4, 25, seed=7), generated(4, 25, seed=7).head(3)])  # duplicates
    options = {"resamples": 300, "seed": 2, "by": ["question_type,noise_level"], **regime,
               "max_all_pairs": 3}
    whole = both_tables(frame, **options)
    # one model, pair or group a block
    monkeypatch.setattr(pipeline.stats.budgets, "BLOCK_BYTES", 1)
    for got, want in zip(both_tables(frame, **options), whole, strict=True):
        assert_frame_equal(got, want)


@pytest.mark.parametrize("regime", REGIMES)
def test_sparse_sums_equal_dense_sums(regime, monkeypatch) -> None:
    """Summing only the cells that have rows gives the sums of the dense grid (in the exact
    regime bit for bit where every cell has two clusters or more, else to rounding)."""
    frame = generated(3, 30, seed=11, categories=5)
    options = {"resamples": 200, "seed": 9, "by": ["question_type"], **regime}
    monkeypatch.setattr(pipeline.stats.budgets, "DENSE_CELLS", 2**40)
    dense = both_tables(frame, **options)
    monkeypatch.setattr(pipeline.stats.budgets, "DENSE_CELLS", 0)
    sparse = both_tables(frame, **options)
    for got, want in zip(sparse, dense, strict=True):
        assert_frame_equal(got, want, check_exact=False, rel_tol=1e-12, abs_tol=1e-15)
    if regime["exact_max_ids"] > 100:
        assert_frame_equal(sparse[0], dense[0])  # the intervals: identical


@pytest.mark.parametrize("ratio", [1, 2**20])
def test_gathered_buckets_close_to_dense_columns(ratio, monkeypatch) -> None:
    """Resampling a group from its own buckets or from a dense column: the same bootstrap."""
    frame = generated(3, 40, seed=5, categories=8)
    options = {"resamples": 300, "seed": 1, "exact_max_ids": 4, "buckets": 1024}
    want = both_tables(frame, **options)
    # 1: all dense; big: gathered
    monkeypatch.setattr(pipeline.stats.budgets, "SPARSE_RATIO", ratio)
    for got, expected in zip(both_tables(frame, **options), want, strict=True):
        assert_frame_equal(got, expected, check_exact=False, rel_tol=1e-9, abs_tol=1e-12)


def test_a_group_does_not_depend_on_the_other_groups() -> None:
    """Bucketed: a model's intervals are the same with or without the other models."""
    frame = generated(5, 30, seed=2)
    options = {"resamples": 200, "seed": 3, "exact_max_ids": 4, "buckets": 128}
    alone = interval_table(frame.filter(pl.col("model") == "m002"), **options)
    together = interval_table(frame, **options).filter(pl.col("model") == "m002")
    assert_frame_equal(alone, together)


def test_streamed_files_equal_the_tables_in_order(tmp_path: Path, monkeypatch) -> None:
    frame = generated(4, 20, seed=8)
    frame.write_parquet(tmp_path / "scores.parquet")
    monkeypatch.setattr(pipeline.stats.budgets, "FRAME_ROWS", 7)  # many frames and row groups
    monkeypatch.setattr(pipeline.stats.budgets, "BLOCK_BYTES", 1)
    options = {"resamples": 50, "seed": 6, "by": ["question_type"]}
    summary = write_stats(tmp_path, **options)
    intervals = pl.read_parquet(summary.intervals_path)
    comparisons = pl.read_parquet(summary.comparisons_path)
    assert pq.ParquetFile(summary.intervals_path).num_row_groups > 10
    assert_frame_equal(intervals, interval_table(frame, **options))
    assert_frame_equal(comparisons, comparison_table(frame, **options))
    assert intervals.equals(intervals.sort(INTERVAL_KEYS, nulls_last=True))
    assert comparisons.equals(comparisons.sort(COMPARISON_KEYS, nulls_last=True))
    assert summary.significant == comparisons["significant"].sum()
    assert not list(tmp_path.glob(".tmp-*"))  # the section files are gone


@pytest.mark.parametrize("exact_max_ids", [10_000, 8])
def test_one_sweep_of_passes_for_both_tables(exact_max_ids, tmp_path: Path,
                                             monkeypatch) -> None:
    """Above PASS_ROWS rows, both tables from one sweep of the passes: as each on its own."""
    frame = generated(3, 40, seed=6)
    frame.write_parquet(tmp_path / "scores.parquet")
    monkeypatch.setattr(pipeline.stats.budgets, "PASS_ROWS", 50)  # 240 rows: 5 passes
    options = {"resamples": 100, "seed": 1, "exact_max_ids": exact_max_ids, "buckets": 64}
    summary = write_stats(tmp_path, **options)
    assert_frame_equal(pl.read_parquet(summary.intervals_path), interval_table(frame, **options))
    assert_frame_equal(pl.read_parquet(summary.comparisons_path),
                       comparison_table(frame, **options))


def test_scores_file_read_once_in_memory_as_from_the_frame(tmp_path: Path) -> None:
    """Up to PASS_ROWS rows the file's statistics columns are read once into memory: the
    columns they do not use (texts, hashes, a column no slice names) are left out, a
    requested slice's column is kept, and the tables are those of the whole frame."""
    frame = generated(3, 30, seed=2).with_columns(
        shard=pl.Series([f"s{i % 2}" for i in range(180)]),
        raw=pl.lit("a long text no statistic reads"),
        row_hash=pl.lit(b"0123456789abcdef"),
    )
    assert stats_columns(frame.schema, by=["shard"]) == [
        "id", "model", "run", "category", "noise_level", "question_type", "task",
        "answer_em", "answer_f1", "latency_ms", "shard",
    ]
    assert "shard" not in stats_columns(frame.schema)
    frame.write_parquet(tmp_path / "scores.parquet")
    options = {"resamples": 100, "seed": 3, "by": ["shard"]}
    summary = write_stats(tmp_path, **options)
    assert_frame_equal(pl.read_parquet(summary.intervals_path), interval_table(frame, **options))
    assert_frame_equal(pl.read_parquet(summary.comparisons_path),
                       comparison_table(frame, **options))
    with pytest.raises(InputError, match="nope"):
        write_stats(tmp_path, by=["nope"])


def test_many_categories_in_blocks(monkeypatch) -> None:
    """A slice of many cells (2,000 categories) in blocks: every cell, as in one block."""
    frame = generated(2, 4_000, seed=4, categories=2_000, missing=0.0)
    options = {"resamples": 100, "seed": 0}
    whole = both_tables(frame, **options)
    assert whole[0].filter(slice="category")["category"].n_unique() == 2_000
    assert whole[1].filter(slice="category").height == 2_000 * 3
    monkeypatch.setattr(pipeline.stats.budgets, "BLOCK_BYTES", 2**16)
    for got, want in zip(both_tables(frame, **options), whole, strict=True):
        assert_frame_equal(got, want)


# --------------------------------------------------------------------------- bounded memory


CHILD = textwrap.dedent("""
    import json, resource, sys
    from pathlib import Path
    import polars as pl
    from pipeline.stats import write_stats

    def vm_bytes():
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
        raise SystemExit("no VmSize")

    pl.scan_parquet(sys.argv[1]).head(1).collect()  # start polars' threads before the cap
    limit = vm_bytes() + int(float(sys.argv[2]) * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    summary = write_stats(Path(sys.argv[1]).parent, resamples=200, seed=0)
    print(json.dumps({"intervals": summary.intervals, "comparisons": summary.comparisons,
                      "pairing": summary.pairing, "baseline": summary.baseline}))
""")


def test_300_models_within_an_address_space_cap(tmp_path: Path) -> None:
    """300 models x 300 questions (bucketed): all pairs would be 44,850 pairs (the previous
    all-pairs arrays: ~30 GiB); against the baseline it runs within 2.5 GiB of address space
    above what the interpreter had mapped."""
    frame = generated(300, 300, seed=1, missing=0.05)
    frame.write_parquet(tmp_path / "scores.parquet")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1",
           "POLARS_MAX_THREADS": "2", "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "scores.parquet"), "2.5"],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    best = frame.group_by("model").agg(pl.col("answer_f1").mean()).sort("answer_f1")["model"]
    assert (result["pairing"], result["baseline"]) == (PAIRING_BASELINE, best[-1])
    comparisons = pl.read_parquet(tmp_path / "comparisons.parquet")
    assert comparisons.height == result["comparisons"]
    assert len(pairs_of(comparisons)) == 299
    slices = 1 + 2 + 3  # all, two noise levels, three categories (no task)
    assert comparisons.filter(metric="answer_f1").height == 299 * slices
    intervals = pl.read_parquet(tmp_path / "intervals.parquet")
    assert intervals.filter(slice="all", metric="answer_f1").height == 300
    assert intervals.height == result["intervals"]



# --------------------------------------------------------------------------- the report's caps


def section(doc: str, section_id: str) -> str:
    match = re.search(rf'<section id="{section_id}">(.*?)</section>', doc, re.DOTALL)
    assert match is not None, f"no section {section_id}"
    return match.group(1)


@pytest.fixture(scope="module")
def wide_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """12 models (model-00 with the fewest rows) x 24 questions in 12 categories."""
    tmp = tmp_path_factory.mktemp("wide")
    records = []
    for m in range(12):
        for q in range(24 if m else 12):
            answer = f"answer {q}"
            records.append({
                "id": f"q{q:02d}", "model": f"model-{m:02d}",
                "category": f"cat-{q % 12:02d}" if q < 20 else "cat-00",
                "question": f"What is thing {q}?", "reference": answer,
                "response": answer if (q + m) % 3 else "something else",
            })
    source = tmp / "records.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    out = tmp / "out"
    evaluate([source], out, Config(metrics=("answer_f1", "answer_em")), resamples=20)
    return out


def test_report_sections_draw_at_most_the_limits(wide_run: Path, tmp_path: Path) -> None:
    target = write_report(wide_run, tmp_path / "report.html",
                          limits=Limits(models=4, categories=3, comparison_rows=5))
    doc = target.read_text(encoding="utf-8")
    categories = section(doc, "categories")
    assert "Drawn: the 3 categories with the most rows of 12; the other 9 are left out" in \
        categories
    assert "cat-00" in categories and "cat-11" not in categories  # cat-00 has the most rows
    for section_id in ("distributions", "worst", "comparisons"):
        assert "Drawn: the 4 models with the most rows of 12; the other 8 are left out" in \
            section(doc, section_id)
    worst = section(doc, "worst")
    assert "model-01" in worst and "model-00" not in worst  # fewest rows; ties: report order
    comparisons = section(doc, "comparisons")
    assert comparisons.count("<tr") - 1 == 5  # header row + the first five
    assert "rows after the first 5 in this order are left out" in comparisons
    # the tables of one row per model keep every model
    assert "model-00" in section(doc, "headline")
    # under the default limits nothing is left out: no section gets a note
    data = load_run(wide_run)
    default = cap(data)
    assert default.notes == {} and default.data.models == data.models


def test_report_limits_are_checked() -> None:
    for bad in ({"models": 0}, {"categories": -1}, {"comparison_rows": 1.5}):
        with pytest.raises(ValueError, match="report limit"):
            Limits(**bad)


def test_zero_resamples_when_bucketed_and_gathered() -> None:
    frame = generated(3, 40, seed=9, categories=20)  # 2 questions a category: few buckets
    intervals, comparisons = both_tables(frame, resamples=0, exact_max_ids=4, buckets=1024)
    assert intervals["ci_low"].is_null().all() and intervals["ci_high"].is_null().all()
    assert comparisons.filter(test="paired permutation")["p_value"].is_null().all()
    assert comparisons.filter(test="mcnemar exact")["p_value"].is_not_null().all()
