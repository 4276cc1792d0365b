"""The Spark engine (pipeline.engines.spark) against the single-machine engine.

Spark runs in local mode (``local[2]``), every address bound to 127.0.0.1, UI off. The module
is skipped when PySpark, pandas (PySpark's ``mapInArrow`` requires it: ``pyspark[sql]``) or
Java is missing. One session serves every test; the sample is evaluated once by each engine.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

from pipeline.config import Config
from pipeline.drivers import evaluate, evaluate_spark
from pipeline.engines.local import stream_scores
from pipeline.engines.spark import local_session
from pipeline.metrics.registry import resolve
from pipeline.metrics.user import load_plugins, sql_metric
from pipeline.schema import InputError, MissingColumnError
from pipeline.scoring import BatchScorer


def _missing() -> str | None:
    for module, why in (("pyspark", "the Spark engine needs the optional 'spark' extra"),
                        ("pandas", "PySpark's mapInArrow needs pandas (pyspark[sql])")):
        if importlib.util.find_spec(module) is None:
            return why
    return None if shutil.which("java") else "Spark needs Java 17 (.ci/install-java)"


# `make test` installs the extra and CI installs Java: there a missing piece fails the run.
if (_reason := _missing()) is not None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true: {_reason}", pytrace=False)
    pytest.skip(_reason, allow_module_level=True)

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample" / "records.parquet"
ORDER = ["source", "row_number"]
#: Every third row of the sample (all its models, categories and noise levels): the equality
#: checks hold row by row, so a slice tests them at a third of the cost.
SLICE_ROWS = 550


@pytest.fixture(scope="module")
def spark():
    session = local_session("local[2]", app_name="rag-eval-tests")
    conf = session.sparkContext.getConf()
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert conf.get("spark.ui.enabled") == "false"
    yield session
    session.stop()


@pytest.fixture(scope="module")
def config() -> Config:
    # The hashed embedding backend is deterministic and offline: no model load in the test.
    return Config(embedding_backend="hashed")


@pytest.fixture(scope="module")
def sample_runs(spark, config, tmp_path_factory):
    """(Spark summary, store root, flat output dir) for the sample data."""
    root = tmp_path_factory.mktemp("spark")
    records = root / "records.parquet"
    pl.read_parquet(SAMPLE).gather_every(3).write_parquet(records)
    summary = evaluate_spark([records], root / "store", config, spark=spark)
    evaluate([records], root / "flat", config, build_db=False, stats=False)
    return summary, root / "store", root / "flat", records


def _read(glob: Path | str, hive: bool = False) -> pl.DataFrame:
    options = ", hive_partitioning = true, hive_types = {'model': varchar}" if hive else ""
    with duckdb.connect() as db:
        frame = db.sql(f"select * from read_parquet('{glob}'{options})").pl()
    # The run directory (eval_run=<RUN>) is a hive partition too; flat files have no such column.
    return frame.drop("eval_run", strict=False)


def _same(spark_frame: pl.DataFrame, local_frame: pl.DataFrame) -> None:
    """Equal columns, dtypes and values (floats exactly), rows compared in (source, row_number)
    order: Spark writes rows in partition order."""
    assert sorted(spark_frame.columns) == sorted(local_frame.columns)
    assert_frame_equal(
        spark_frame.select(local_frame.columns).sort(ORDER),
        local_frame.sort(ORDER),
        check_exact=True,
    )


def test_sample_scores_equal_single_machine(sample_runs):
    summary, _store, flat, _records = sample_runs
    scores = _read(summary.run_dir / "scores" / "model=*" / "*.parquet", hive=True)
    local = pl.read_parquet(flat / "scores.parquet")
    assert scores.height == local.height == SLICE_ROWS
    # Every dtype survives Spark: int8 flags are ByteType, lists are ArrayType.
    _same(scores, local)
    for name in ("texts", "rejected"):
        on_spark = _read(summary.run_dir / name / "*.parquet")
        _same(on_spark, pl.read_parquet(flat / f"{name}.parquet"))
    manifest = json.loads((summary.run_dir / "manifest.json").read_text())
    assert manifest["status"] == "committed"
    assert manifest["engine"] == "spark"
    n = SLICE_ROWS
    assert manifest["counts"] == {"read": n, "scored": n, "reused": 0, "rejected": 0}
    assert (summary.n_read, summary.n_scored, summary.n_rejected) == (SLICE_ROWS, SLICE_ROWS, 0)
    # Only Parquet files in the run: no _SUCCESS markers or .crc checksums.
    assert {p.suffix for p in summary.run_dir.rglob("*") if p.is_file()} == {".parquet", ".json"}


def _bad_rows(path: Path) -> None:
    """40 sample rows with invalid values and duplicate keys (the single-machine engine reads
    them in 8-row chunks, so some duplicates are in the same chunk and some across chunks)."""
    frame = pl.read_parquet(SAMPLE).head(40)
    key = ["id", "model", "run", "noise_level", "task"]

    def copy_key(frame: pl.DataFrame, source: int, targets: list[int]) -> pl.DataFrame:
        for column in key:
            values = frame[column].to_list()
            for target in targets:
                values[target] = values[source]
            frame = frame.with_columns(pl.Series(column, values, dtype=frame[column].dtype))
        return frame

    frame = copy_key(frame, 0, [2, 20, 21])  # same chunk (2), later chunks (20, 21)
    frame = copy_key(frame, 9, [12, 30])  # first in chunk 1, again in chunk 1 and chunk 3
    noise = frame["noise_level"].to_list()
    noise[5], noise[21] = math.nan, math.inf  # invalid (21 is also a duplicate key)
    tokens = frame["prompt_tokens"].to_list()
    tokens[7] = -3
    frame = frame.with_columns(
        pl.Series("noise_level", noise), pl.Series("prompt_tokens", tokens, dtype=pl.Int64)
    )
    frame.write_parquet(path)


def test_bad_rows_rejected_as_single_machine(spark, config, tmp_path):
    source = tmp_path / "bad.parquet"
    _bad_rows(source)
    summary = evaluate_spark([source], tmp_path / "store", config, spark=spark)

    specs = resolve(config.metrics)
    schema = BatchScorer.for_config(config, specs=specs).output_schema
    with pq.ParquetWriter(tmp_path / "scores.parquet", schema) as sink:
        result, _ = stream_scores(
            [source], [], config, specs, work_dir=tmp_path / "work", sink=sink,
            rejected_target=tmp_path / "rejected.parquet",
            texts_target=tmp_path / "texts.parquet", chunk_rows=8,
        )
    rejected = _read(summary.run_dir / "rejected" / "*.parquet")
    local = pl.read_parquet(tmp_path / "rejected.parquet")
    _same(rejected, local)
    assert set(rejected["row_number"]) == {2, 5, 7, 12, 20, 21, 30}
    reasons = dict(zip(rejected["row_number"], rejected["reason"], strict=True))
    assert reasons[20].startswith("duplicate id") and reasons[20].endswith("(first at row 0)")
    assert reasons[30].endswith("(first at row 9)")
    assert (summary.n_read, summary.n_scored, summary.n_rejected) == (
        result.n_read, result.n_scored, result.n_rejected,
    ) == (40, 33, 7)
    scores = _read(summary.run_dir / "scores" / "model=*" / "*.parquet", hive=True)
    _same(scores, pl.read_parquet(tmp_path / "scores.parquet"))


def test_missing_column_is_the_readers_error(spark, config, tmp_path):
    source = tmp_path / "no_question.parquet"
    pl.read_parquet(SAMPLE).head(5).drop("question").write_parquet(source)
    with pytest.raises(MissingColumnError) as local:
        evaluate([source], tmp_path / "flat", config, build_db=False, stats=False)
    with pytest.raises(MissingColumnError) as distributed:
        evaluate_spark([source], tmp_path / "store", config, spark=spark)
    assert str(distributed.value) == str(local.value)
    assert "'question'" in str(distributed.value) and str(source) in str(distributed.value)
    assert not list((tmp_path / "store").glob("eval_run=*"))


def test_duckdb_views_read_the_spark_store(sample_runs):
    from pipeline.views import build_views, is_store, run_query

    _summary, store, flat, _records = sample_runs
    assert is_store(store)
    build_views(store)
    build_views(flat)
    on_store = run_query(store, "select * from by_model order by model")
    on_flat = run_query(flat, "select * from by_model order by model")
    assert on_store.height > 0
    # Row-level scores are equal bit for bit (above); aggregates over them may differ in the
    # last bits, because DuckDB sums the rows in file order and Spark wrote other files.
    assert_frame_equal(on_store, on_flat, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


def test_rerun_reuses_every_row(spark, config, sample_runs):
    """Unchanged inputs: every score is copied from the first run (same corpus, no refresh)."""
    first, store, _flat, records = sample_runs
    again = evaluate_spark([records], store, config, spark=spark)
    assert (again.n_read, again.n_scored, again.n_reused, again.n_rejected) == (
        SLICE_ROWS, 0, SLICE_ROWS, 0)
    assert again.reused_from == first.run_id
    manifest = json.loads((again.run_dir / "manifest.json").read_text())
    assert manifest["reused_from"] == first.run_id
    assert manifest["corpus_digest"] == json.loads(
        (first.run_dir / "manifest.json").read_text()
    )["corpus_digest"]
    _same(
        _read(again.run_dir / "scores" / "model=*" / "*.parquet", hive=True),
        _read(first.run_dir / "scores" / "model=*" / "*.parquet", hive=True),
    )


def test_user_metrics_equal_single_machine(spark, tmp_path):
    """A SQL flag of the config, a plug-in module's expression and batch metrics (shipped to
    the executors with ``addPyFile``, docs/custom-metrics.md) and an installed package's
    metrics score on Spark exactly as on one machine."""
    plugin = Path(__file__).resolve().parent / "fixtures" / "plugins" / "team_metrics.py"
    spark.sparkContext.addPyFile(str(plugin))
    config = load_plugins(Config(
        embedding_backend="hashed",
        metrics=("answer_f1", "has_url", "answer_length_ok", "mentions_reference",
                 "response_words", "digit_share"),
        user_metrics=(sql_metric("has_url", "regexp_like(response, 'https?://')", kind="flag"),),
        plugins=(str(plugin),),
    ))
    records = tmp_path / "records.parquet"
    pl.read_parquet(SAMPLE).head(200).write_parquet(records)
    summary = evaluate_spark([records], tmp_path / "store", config, spark=spark)
    evaluate([records], tmp_path / "flat", config, build_db=False, stats=False)
    scores = _read(summary.run_dir / "scores" / "model=*" / "*.parquet", hive=True)
    local = pl.read_parquet(tmp_path / "flat" / "scores.parquet")
    assert {"has_url", "answer_length_ok", "mentions_reference", "response_words",
            "digit_share"} <= set(local.columns)
    _same(scores, local)


def test_other_columns_reach_the_texts_as_single_machine(spark, config, tmp_path):
    """Two inputs with different other columns: the union, null where an input lacks one, the
    same file as the local engine's; one column with two types is the same error."""
    sample = pl.read_parquet(SAMPLE).head(6).select("question", "reference", "response")
    sample = sample.with_columns(id=pl.Series([f"s{i}" for i in range(6)]))
    first, second = tmp_path / "a.parquet", tmp_path / "b.parquet"
    sample.head(3).with_columns(label=pl.Series(["easy", "hard", "mid"])).write_parquet(first)
    sample.tail(3).with_columns(note=pl.Series(["n1", None, "n3"]), label=pl.lit("x")
                                ).write_parquet(second)
    summary = evaluate_spark([first, second], tmp_path / "store", config, spark=spark)
    evaluate([first, second], tmp_path / "flat", config, build_db=False, stats=False)
    texts = _read(summary.run_dir / "texts" / "*.parquet")
    local = pl.read_parquet(tmp_path / "flat" / "texts.parquet")
    assert local.columns[-2:] == ["label", "note"]
    assert local.select("label", "note").rows() == [
        ("easy", None), ("hard", None), ("mid", None), ("x", "n1"), ("x", None), ("x", "n3")]
    _same(texts, local)

    third = tmp_path / "c.parquet"
    sample.head(2).with_columns(label=pl.lit(1)).write_parquet(third)
    with pytest.raises(InputError, match="the kept column 'label' is Int32 here but String in"):
        evaluate_spark([first, third], tmp_path / "store", config, spark=spark)


def test_any_model_name_is_laid_out_as_the_local_engine(spark, tmp_path):
    """A model name past any file name limit, and an empty one, get the same partitions on
    Spark as on one machine, and a rerun reuses every row (moved here from the store's fault
    tests to share this module's Spark session)."""
    from pipeline.drivers import evaluate_to_store
    from pipeline.views import run_query

    names = ["org/" + "a-very-long-model-name-" * 13, "m1", ""]  # 303 characters
    source = tmp_path / "in.parquet"
    pl.DataFrame([
        {"id": f"q{i}", "model": model, "question": f"question {i}?", "reference": f"answer {i}",
         "response": f"answer {i}" if i % 2 else "no idea"}
        for model in names for i in range(2)
    ]).write_parquet(source)
    config = Config(embedding_backend="hashed", metrics=("answer",))
    local = evaluate_to_store([source], tmp_path / "local", config, run_id="r1", stats=False)
    on_spark = evaluate_spark([source], tmp_path / "spark", config, spark=spark, run_id="r1")
    again = evaluate_spark([source], tmp_path / "spark", config, spark=spark, run_id="r2")
    dirs = [sorted(p.name for p in (run.run_dir / "scores").iterdir())
            for run in (local, on_spark)]
    assert dirs[0] == dirs[1]
    assert again.n_reused == 6
    by_model = "select model, n from by_model order by model"
    assert run_query(tmp_path / "spark", by_model, run="r1").rows() == sorted(
        (name, 2) for name in names)
