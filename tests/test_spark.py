"""The Spark engine (pipeline.engines.spark) against the single-machine engine.

Spark runs in local mode (``local[2]``), every address bound to 127.0.0.1, UI off. The module
is skipped when PySpark, pandas (PySpark's ``mapInArrow`` requires it: ``pyspark[sql]``) or
Java is missing. One session serves every test, and a Spark job costs seconds however small
its input, so each job serves several tests: the sample with 40 bad rows ahead of it is
evaluated once by each engine, with every kind of user metric; two small inputs with other
columns and odd model names once by each engine and once more on Spark (the rerun).
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline.config import Config
from pipeline.drivers import StoreRunSummary, evaluate, evaluate_spark, evaluate_to_store
from pipeline.engines.local import stream_scores
from pipeline.engines.spark import local_session
from pipeline.io.parquet_options import ContractWriter
from pipeline.metrics.registry import FAMILIES
from pipeline.metrics.user import load_plugins, resolve, sql_metric
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
#: The 40 bad rows of :func:`_bad_rows`, then every third row of the rest of the sample (all its
#: models, categories and noise levels): the equality checks hold row by row, so a slice tests
#: them at a third of the cost, and a Spark job costs seconds however small its input, so the
#: bad rows share the sample's job.
BAD_ROWS, SLICE_ROWS = 40, 537
READ = BAD_ROWS + SLICE_ROWS
REJECTED = 7
SCORED = READ - REJECTED


#: JVM options of the tests' session: the client compiler only and the serial collector. The
#: module's jobs are small, and the JVM's full optimizing compiler and parallel collector cost
#: more CPU than they give back on them (measured on this file: 80 -> 51 CPU-s, 49 -> 41 s).
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


@pytest.fixture(scope="module")
def spark():
    # PySpark's context replaces the SIGINT handler (Ctrl-C cancels its jobs) and keeps it
    # after it stops: the test files the worker runs next get Python's own back.
    interrupt = signal.getsignal(signal.SIGINT)
    with pytest.MonkeyPatch.context() as patch:  # read when the JVM starts, not after
        patch.setenv("JAVA_TOOL_OPTIONS", TEST_JVM_OPTIONS)
        session = local_session("local[2]", app_name="rag-eval-tests")
    conf = session.sparkContext.getConf()
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert conf.get("spark.ui.enabled") == "false"
    yield session
    session.stop()
    signal.signal(signal.SIGINT, interrupt)


PLUGIN = Path(__file__).resolve().parent / "fixtures" / "plugins" / "team_metrics.py"


@pytest.fixture(scope="module")
def config(spark) -> Config:
    """Every built-in metric (the hashed embedding backend is deterministic and offline: no
    model load) and every kind of user metric: a SQL flag of the config, a plug-in module's
    expression and batch metrics (shipped to the executors with ``addPyFile``,
    docs/custom-metrics.md) and an installed package's metrics (the family ``user``). Every
    run of the module uses it, so each comparison with one machine checks them all."""
    spark.sparkContext.addPyFile(str(PLUGIN))
    return load_plugins(Config(
        embedding_backend="hashed",
        metrics=(*FAMILIES, "user"),
        user_metrics=(sql_metric("has_url", "regexp_like(response, 'https?://')", kind="flag"),),
        plugins=(str(PLUGIN),),
    ))


@pytest.fixture(scope="module")
def sample_runs(spark, config, tmp_path_factory):
    """(Spark summary, store root, flat output dir, input, output dir of the local engine read
    in 8-row chunks) for the bad rows and the sample slice, in one file."""
    root = tmp_path_factory.mktemp("spark")
    records = root / "records.parquet"
    _bad_rows(root / "bad.parquet")
    pl.concat([
        pl.read_parquet(root / "bad.parquet"),
        pl.read_parquet(SAMPLE).slice(BAD_ROWS).gather_every(3),
    ]).write_parquet(records)
    summary = evaluate_spark([records], root / "store", config, spark=spark)
    evaluate([records], root / "flat", config, build_db=False, stats=False)

    chunked = root / "chunked"
    chunked.mkdir()
    specs = resolve(config)
    schema = BatchScorer.for_config(config, specs=specs).output_schema
    with ContractWriter(chunked / "scores.parquet", schema) as sink:
        result, _ = stream_scores(
            [records], [], config, specs, work_dir=root / "work", sink=sink,
            rejected_target=chunked / "rejected.parquet",
            texts_target=chunked / "texts.parquet", chunk_rows=8,
        )
    assert (result.n_read, result.n_scored, result.n_rejected) == (READ, SCORED, REJECTED)
    return summary, root / "store", root / "flat", records, chunked


def _read(glob: Path | str, hive: bool = False) -> pl.DataFrame:
    options = (", hive_partitioning = true, hive_types = {'model': varchar}, union_by_name = true"
               if hive else "")
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
    summary, _store, flat, _records, _chunked = sample_runs
    scores = _read(summary.run_dir / "scores" / "model=*" / "*.parquet", hive=True)
    local = pl.read_parquet(flat / "scores.parquet")
    assert scores.height == local.height == SCORED
    # User metrics of every kind (the config fixture) score on Spark exactly as on one machine.
    assert {"has_url", "answer_length_ok", "mentions_reference", "response_words",
            "digit_share"} <= set(local.columns)
    # Every dtype survives Spark: int8 flags are ByteType, lists are ArrayType.
    _same(scores, local)
    for name in ("texts", "rejected"):
        on_spark = _read(summary.run_dir / name / "*.parquet")
        _same(on_spark, pl.read_parquet(flat / f"{name}.parquet"))
    manifest = json.loads((summary.run_dir / "manifest.json").read_text())
    assert manifest["status"] == "committed"
    assert manifest["engine"] == "spark"
    assert manifest["counts"] == {
        "read": READ, "scored": SCORED, "reused": 0, "rejected": REJECTED}
    assert (summary.n_read, summary.n_scored, summary.n_rejected) == (READ, SCORED, REJECTED)
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


def test_bad_rows_rejected_as_single_machine(sample_runs) -> None:
    summary, _store, flat, _records, chunked = sample_runs
    rejected = _read(summary.run_dir / "rejected" / "*.parquet")
    # The local engine read the file in 8-row chunks (duplicates within and across chunks).
    _same(rejected, pl.read_parquet(chunked / "rejected.parquet"))
    _same(rejected, pl.read_parquet(flat / "rejected.parquet"))
    assert set(rejected["row_number"]) == {2, 5, 7, 12, 20, 21, 30}
    reasons = dict(zip(rejected["row_number"], rejected["reason"], strict=True))
    assert reasons[20].startswith("duplicate id") and reasons[20].endswith("(first at row 0)")
    assert reasons[30].endswith("(first at row 9)")
    assert (summary.n_read, summary.n_scored, summary.n_rejected) == (READ, SCORED, REJECTED)
    scores = _read(summary.run_dir / "scores" / "model=*" / "*.parquet", hive=True)
    _same(scores, pl.read_parquet(chunked / "scores.parquet"))


#: Model names of the small inputs: past any file name limit (303 characters), plain, empty.
NAMES = ["org/" + "a-very-long-model-name-" * 13, "m1", ""]


def _other_columns(first: Path, second: Path) -> None:
    """Two 3-row inputs with different other columns (``label``; ``note`` and ``label``), two
    rows of each name of :data:`NAMES` across them."""
    sample = pl.read_parquet(SAMPLE).head(6).select("question", "reference", "response")
    sample = sample.with_columns(id=pl.Series([f"s{i}" for i in range(6)]),
                                 model=pl.Series([name for name in NAMES for _ in range(2)]))
    sample.head(3).with_columns(label=pl.Series(["easy", "hard", "mid"])).write_parquet(first)
    sample.tail(3).with_columns(note=pl.Series(["n1", None, "n3"]), label=pl.lit("x")
                                ).write_parquet(second)


@dataclass(frozen=True)
class OddRuns:
    """The inputs of :func:`_other_columns` evaluated on Spark twice (the second run reuses the
    first) and once by the local engine into a store."""

    first: Path
    second: Path
    on_spark: StoreRunSummary
    again: StoreRunSummary
    local: StoreRunSummary


@pytest.fixture(scope="module")
def odd_runs(spark, config, tmp_path_factory) -> OddRuns:
    """Other columns and odd model names in one input set: one Spark job (and the rerun)
    serves the tests of both and of reuse."""
    root = tmp_path_factory.mktemp("odd")
    first, second = root / "a.parquet", root / "b.parquet"
    _other_columns(first, second)
    on_spark = evaluate_spark([first, second], root / "spark", config, spark=spark, run_id="r1")
    again = evaluate_spark([first, second], root / "spark", config, spark=spark, run_id="r2")
    local = evaluate_to_store([first, second], root / "local", config, run_id="r1", stats=False)
    return OddRuns(first, second, on_spark, again, local)


def _scores(run: StoreRunSummary) -> pl.DataFrame:
    return _read(run.run_dir / "scores" / "model=*" / "*.parquet", hive=True)


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

    _summary, store, flat, _records, _chunked = sample_runs
    assert is_store(store)
    build_views(store)
    build_views(flat)
    on_store = run_query(store, "select * from by_model order by model")
    on_flat = run_query(flat, "select * from by_model order by model")
    assert on_store.height > 0
    # Row-level scores are equal bit for bit (above); aggregates over them may differ in the
    # last bits, because DuckDB sums the rows in file order and Spark wrote other files.
    assert_frame_equal(on_store, on_flat, check_exact=False, rel_tol=1e-12, abs_tol=1e-12)


def test_other_columns_reach_the_texts_as_single_machine(spark, config, odd_runs: OddRuns,
                                                         tmp_path) -> None:
    """Two inputs with different other columns: the union, null where an input lacks one, the
    same file as the local engine's; one column with two types is the same error."""
    texts = _read(odd_runs.on_spark.run_dir / "texts" / "*.parquet")
    local = _read(odd_runs.local.run_dir / "texts" / "*.parquet")
    assert local.columns[-2:] == ["label", "note"]
    assert local.sort(ORDER).select("label", "note").rows() == [
        ("easy", None), ("hard", None), ("mid", None), ("x", "n1"), ("x", None), ("x", "n3")]
    _same(texts, local)
    _same(_scores(odd_runs.on_spark), _scores(odd_runs.local))

    third = tmp_path / "c.parquet"
    pl.read_parquet(odd_runs.first).head(2).with_columns(label=pl.lit(1)).write_parquet(third)
    with pytest.raises(InputError, match="the kept column 'label' is Int32 here but String in"):
        evaluate_spark([odd_runs.first, third], tmp_path / "store", config, spark=spark)


def test_any_model_name_is_laid_out_as_the_local_engine(odd_runs: OddRuns) -> None:
    """A model name past any file name limit, and an empty one, get the same partitions on
    Spark as on one machine, and a rerun reuses every row (moved here from the store's fault
    tests to share this module's Spark session)."""
    from pipeline.views import run_query

    dirs = [sorted(p.name for p in (run.run_dir / "scores").iterdir())
            for run in (odd_runs.local, odd_runs.on_spark)]
    assert dirs[0] == dirs[1]
    assert len(dirs[0]) == len(NAMES)
    assert odd_runs.again.n_reused == 6
    by_model = "select model, n from by_model order by model"
    assert run_query(odd_runs.on_spark.run_dir.parent, by_model, run="r1").rows() == sorted(
        (name, 2) for name in NAMES)


def test_rerun_reuses_every_row(odd_runs: OddRuns) -> None:
    """Unchanged inputs: every score is copied from the first run (same corpus, no refresh),
    hashed partitions of long model names included."""
    first, again = odd_runs.on_spark, odd_runs.again
    assert (again.n_read, again.n_scored, again.n_reused, again.n_rejected) == (6, 0, 6, 0)
    assert again.reused_from == first.run_id
    manifest = json.loads((again.run_dir / "manifest.json").read_text())
    assert manifest["reused_from"] == first.run_id
    assert manifest["corpus_digest"] == json.loads(
        (first.run_dir / "manifest.json").read_text()
    )["corpus_digest"]
    _same(_scores(again), _scores(first))
