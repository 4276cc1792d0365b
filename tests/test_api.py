"""The Python API (issue 27): ``pipeline.score`` on every kind of data gives the command line's
scores, rejected rows come back with their reasons, ``evaluate`` + ``open_run`` + the ``Run``
methods work on an output directory and a store run, ``import pipeline`` stays light, and every
example of docs/python-api.md runs."""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

import pipeline
from pipeline.api import Compared, Counts, Run, Scored, evaluate, open_run
from pipeline.cli import main
from pipeline.config import Config, ConfigError
from pipeline.io.layout import SCORES_FILE
from pipeline.metrics import user
from pipeline.schema import InputError
from pipeline.views import QueryRefused

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample" / "records.parquet"
METRICS = ["answer", "citation"]
#: Columns that name where a row came from: the CLI's file, or ``<data>`` in memory.
PROVENANCE = ("source",)
FAST = {"metrics": METRICS, "resamples": 20}


@pytest.fixture(scope="module")
def cli_scores(tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    """``scores.parquet`` of ``rag-eval evaluate`` on the sample (answer and citation)."""
    out = tmp_path_factory.mktemp("cli") / "out"
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "evaluate", "--input", str(SAMPLE), "--out",
         str(out), "--metrics", ",".join(METRICS), "--no-stats", "--no-progress"],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )
    assert done.returncode == 0, done.stderr
    return pl.read_parquet(out / SCORES_FILE)


class Dataset:
    """A stand-in for Hugging Face ``datasets.Dataset``: its rows are ``data.table`` (Arrow)
    unless an indices mapping picks some, which ``with_format("arrow")[:]`` gathers."""

    def __init__(self, table: pa.Table, indices: list[int] | None = None) -> None:
        self.data = SimpleNamespace(table=table)
        self._indices = None if indices is None else pa.table({"indices": indices})
        self._format: str | None = None

    def select(self, indices: list[int]) -> Dataset:
        return Dataset(self.data.table, indices)

    def with_format(self, kind: str) -> Dataset:
        formatted = Dataset(self.data.table)
        formatted._indices, formatted._format = self._indices, kind
        return formatted

    def __getitem__(self, key: slice) -> pa.Table:
        assert self._format == "arrow" and key == slice(None)
        table: pa.Table = self.data.table
        return table if self._indices is None else table.take(self._indices["indices"])


#: The texts ``Scored.scores`` holds beside the columns of ``scores.parquet``.
TEXTS = ["question", "reference", "response", "contexts"]


def _cli_columns(scored: pl.DataFrame, expected: pl.DataFrame) -> pl.DataFrame:
    """``scored`` (``Scored.scores``) as ``scores.parquet``: its texts follow ``row_number``."""
    cut = expected.columns.index("row_number") + 1
    assert scored.columns == [*expected.columns[:cut], *TEXTS, *expected.columns[cut:]]
    return scored.select(expected.columns)


def _same_scores(scored: pl.DataFrame, expected: pl.DataFrame) -> None:
    """Equal keys and metric columns (``source`` names the input, which differs)."""
    scored = _cli_columns(scored, expected)
    assert_frame_equal(scored.drop(PROVENANCE), expected.drop(PROVENANCE))


# --- score ----------------------------------------------------------------------------------------


def test_score_of_a_path_is_the_clis_scores_exactly(cli_scores: pl.DataFrame) -> None:
    scored = pipeline.score(str(SAMPLE), metrics=METRICS)
    assert isinstance(scored, Scored)
    assert_frame_equal(_cli_columns(scored.scores, cli_scores), cli_scores)
    records = pl.read_parquet(SAMPLE)
    assert scored.scores.select(["id", *TEXTS]).equals(records.select(["id", *TEXTS]))
    assert scored.rejected.height == 0
    assert scored.signature == cli_scores["signature"][0]


@pytest.mark.parametrize("kind", ["polars", "lazy", "pandas", "arrow", "dataset"])
def test_score_of_in_memory_data_gives_the_clis_scores(cli_scores: pl.DataFrame,
                                                       kind: str) -> None:
    data: object = {
        "polars": lambda: pl.read_parquet(SAMPLE),
        "lazy": lambda: pl.scan_parquet(SAMPLE),
        "pandas": lambda: pd.read_parquet(SAMPLE),
        "arrow": lambda: pq.read_table(SAMPLE),
        "dataset": lambda: Dataset(pq.read_table(SAMPLE)),
    }[kind]()
    scored = pipeline.score(data, metrics=",".join(METRICS))
    _same_scores(scored.scores, cli_scores)
    assert scored.scores["source"].unique().to_list() == ["<data>"]


def test_score_reads_only_the_rows_a_dataset_selects(cli_scores: pl.DataFrame) -> None:
    picked = [5, 0, 42, 7]
    scored = pipeline.score(Dataset(pq.read_table(SAMPLE)).select(picked), metrics=METRICS)
    expected = cli_scores[picked].with_columns(pl.int_range(4, dtype=pl.Int64).alias("row_number"))
    _same_scores(scored.scores, expected)


def _tricky() -> pl.DataFrame:
    """Two good rows, a null response, a repeated key and a citation out of range."""
    return pl.DataFrame([
        {"id": "g1", "question": "Capital of France?", "reference": "Paris",
         "response": "Paris", "contexts": None, "citations": None},
        {"id": "b1", "question": "?", "reference": "x", "response": None, "contexts": None,
         "citations": None},
        {"id": "g1", "question": "again?", "reference": "x", "response": "x", "contexts": None,
         "citations": None},
        {"id": "b2", "question": "?", "reference": "x", "response": "x", "contexts": ["one"],
         "citations": [3]},
        {"id": "g2", "question": "Who wrote Dune?", "reference": "Frank Herbert",
         "response": "Herbert", "contexts": None, "citations": None},
    ]).with_columns(model=pl.lit("m"))


def test_rejected_rows_come_back_with_their_reasons(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="pipeline.api"):
        scored = pipeline.score(_tricky(), metrics=["answer", "citation"])
    assert scored.scores["id"].to_list() == ["g1", "g2"]
    assert scored.rejected.select("source", "row_number", "id", "reason").rows() == [
        ("<data>", 1, "b1", "response: is null (required)"),
        ("<data>", 2, "g1", "duplicate id 'g1' (first at row 0)"),
        ("<data>", 3, "b2", "citations: [3] outside 1..1 (the number of contexts)"),
    ]
    assert scored.rejected["raw"].str.contains('"id":').all()
    assert "3 of 5 rows rejected" in caplog.text


def test_rejected_rows_equal_the_clis(tmp_path: Path) -> None:
    source = tmp_path / "tricky.jsonl"
    _tricky().write_ndjson(source)
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(source), "--out", str(out),
                              "--metrics", "answer,citation", "--no-stats",
                              "--no-progress"]) == 0
    scored = pipeline.score(source, metrics=METRICS)
    cli = pl.read_parquet(out / SCORES_FILE)
    assert_frame_equal(_cli_columns(scored.scores, cli), cli)
    assert_frame_equal(scored.rejected, pl.read_parquet(out / "rejected.parquet"))


def test_score_fills_optional_columns_and_reads_layouts() -> None:
    minimal = pl.DataFrame({"question": ["Capital of France?"], "reference": ["Paris"],
                            "response": ["Paris"]})
    scored = pipeline.score(minimal, metrics=["answer", "citation", "rouge_l"])
    assert re.fullmatch(r"q[0-9a-f]{16}", scored.scores["id"][0])  # derived, as a file's
    assert scored.scores.select("answer_em", "citation_f1", "rouge_l").rows() == [(1, None, 1.0)]
    ragas = pl.DataFrame({"user_input": ["Capital?"], "response": ["Paris"],
                          "reference": ["Paris"], "retrieved_contexts": [["Paris is..."]]})
    assert pipeline.score(ragas, metrics="answer").scores["answer_f1"].to_list() == [1.0]
    mapped = pipeline.score(minimal.rename({"response": "answer"}), metrics="answer",
                            columns={"response": "answer"})
    assert mapped.scores["answer_em"].to_list() == [1]


def test_score_takes_a_config_object_or_file(tmp_path: Path) -> None:
    frame = pl.DataFrame({"id": ["a"], "question": ["?"], "reference": ["Paris"],
                          "response": ["Paris [1]"]})
    stripped = pipeline.score(frame, metrics="answer_em", config=Config())
    kept = pipeline.score(frame, metrics="answer_em",
                          config=Config(strip_citation_markers=False))
    assert stripped.scores["answer_em"].to_list() == [1]
    assert kept.scores["answer_em"].to_list() == [0]
    assert kept.signature != stripped.signature
    toml = tmp_path / "eval.toml"
    toml.write_text('[metrics]\nselect = ["answer_f1"]\n', encoding="utf-8")
    from_file = pipeline.score(frame, config=toml)
    assert [c for c in from_file.scores.columns if c.startswith("answer")] == ["answer_f1"]


def test_score_refuses_what_it_cannot_read() -> None:
    with pytest.raises(TypeError, match="polars, pandas or pyarrow"):
        pipeline.score({"question": ["?"]})
    with pytest.raises(InputError, match="holds no records"):
        pipeline.score(pl.DataFrame(schema={"question": pl.String, "reference": pl.String,
                                            "response": pl.String}))
    with pytest.raises(InputError, match="response"):
        pipeline.score(pl.DataFrame({"question": ["?"], "reference": ["x"]}))
    with pytest.raises(ValueError, match="nope"):
        pipeline.score(pl.DataFrame({"question": ["?"], "reference": ["x"], "response": ["x"]}),
                       metrics=["nope"])
    with pytest.raises(TypeError):
        pipeline.score(pl.DataFrame({"question": ["?"], "reference": ["x"], "response": ["x"]}),
                       metrics=[42])


# --- evaluate, open_run, Run ----------------------------------------------------------------------


def test_evaluate_writes_what_the_cli_writes_and_the_run_reads_it(
    tmp_path: Path, cli_scores: pl.DataFrame
) -> None:
    queries = {"headline": "select * from headline order by model",
               "intervals": "select * from intervals order by all"}
    run = evaluate(SAMPLE, tmp_path / "out", **FAST, queries=queries)
    assert isinstance(run, Run) and run.store is None
    for name, sql in queries.items():  # answered during the build, as the database answers
        assert_frame_equal(run.answers[name], run.query(sql))
    assert run.answers["headline"].height == 3 and run.answers["intervals"].height > 0
    assert run.counts == Counts(read=1650, scored=1650, reused=0, rejected=0)
    assert_frame_equal(pl.read_parquet(tmp_path / "out" / SCORES_FILE), cli_scores)
    opened = open_run(tmp_path / "out")
    assert opened == run and opened.counts == run.counts
    assert_frame_equal(opened.scores.collect(), cli_scores)
    assert opened.rejected.height == 0
    headline = opened.headline()
    assert headline["model"].to_list() == ["atlas-7b", "borealis-13b", "cirrus-70b"]
    assert opened.query("select count(*) as n from scores").item() == 1650
    with pytest.raises(QueryRefused):
        opened.query("copy scores to 'x.csv'")
    stats = opened.stats(by=["question_type"], resamples=10, seed=3)
    assert stats.summary is not None and stats.summary.resamples == 10
    assert "question_type" in stats.summary.slices and stats.intervals.height > 0
    assert_frame_equal(stats.intervals, pl.read_parquet(tmp_path / "out" / "intervals.parquet"))
    assert opened.export(tmp_path / "flat.parquet") == 1650
    assert pl.read_parquet(tmp_path / "flat.parquet").height == 1650
    assert opened.export(tmp_path / "out" / "flat.csv", neutralize_formulas=False) == 1650


def test_in_memory_data_is_evaluated_through_a_temporary_file(tmp_path: Path) -> None:
    frame = _tricky()
    run = evaluate(frame.lazy(), tmp_path / "out", metrics="answer", stats=False)
    assert run.counts == Counts(read=5, scored=2, reused=0, rejected=3)
    assert run.rejected["reason"].to_list() == pipeline.score(frame).rejected["reason"].to_list()
    assert not Path(run.scores.select("source").collect().item(0, 0)).exists()  # removed


def test_compare_and_report_with_a_gate(tmp_path: Path) -> None:
    records = pl.read_parquet(SAMPLE).gather_every(3)  # every model and category
    # the gate reads answer scores: the hashed embedding backend spares the model's inference
    fast = {**FAST, "embedding_backend": "hashed"}
    base = evaluate(records, tmp_path / "base", **fast)
    worse = records.with_columns(
        response=pl.when(pl.col("model") == "cirrus-70b").then(pl.lit("I am not sure."))
        .otherwise(pl.col("response"))
    )
    new = evaluate(worse, tmp_path / "new", **fast)
    same = new.compare(new)
    assert isinstance(same, Compared) and same.passed
    result = new.compare(base, out=tmp_path / "new" / "compare")
    comparison, passed = result
    assert not passed
    assert [f.split(" fell")[0] for f in comparison.failures] == [
        "cirrus-70b: answer_em", "cirrus-70b: answer_f1"
    ]
    assert (tmp_path / "new" / "compare" / "deltas.parquet").is_file()
    assert new.compare(base, max_drop={"answer_f1": 1.0}).passed
    with pytest.raises(ConfigError, match="nope"):
        new.compare(base, max_drop={"nope": 0.1})
    report = new.report(tmp_path / "report.html", baseline=tmp_path / "base")
    assert "Run comparison" in report.read_text(encoding="utf-8")


@pipeline.metric(kind="score", description="Shorter responses score higher.")
def brevity(response: pl.Expr) -> pl.Expr:
    return 1.0 / (1.0 + response.str.len_chars())


def test_a_user_metric_is_scored_and_gated(tmp_path: Path) -> None:
    records = pl.read_parquet(SAMPLE).head(300)
    scored = pipeline.score(records, metrics=["answer_f1", brevity])
    expected = records.select(1.0 / (1.0 + pl.col("response").str.len_chars()))
    assert scored.scores["brevity"].to_list() == expected.to_series().to_list()
    base = evaluate(records, tmp_path / "base", metrics=["answer_f1", brevity], resamples=20)
    longer = records.with_columns(response=pl.col("response") + " and a much longer tail")
    new = evaluate(longer, tmp_path / "new", metrics=["answer_f1", brevity], resamples=20)
    comparison, passed = new.compare(base, max_drop={"brevity": 0.0})
    assert not passed and all(" brevity fell by " in f for f in comparison.failures)


def test_a_store_run(tmp_path: Path) -> None:
    store = tmp_path / "store"
    hashed = "hashed"  # the store's bookkeeping, not the embedding model, is under test
    first = evaluate(SAMPLE, store=store, run_id="r1", **FAST, embedding_backend=hashed)
    second = evaluate(pl.read_parquet(SAMPLE).head(100), store=store, run_id="r2",
                      metrics=METRICS, stats=False, embedding_backend=hashed)
    assert (first.run_id, first.store, first.path) == ("r1", store, store / "eval_run=r1")
    assert second.counts == Counts(read=100, scored=0, reused=100, rejected=0)
    latest = open_run(store)
    assert latest.run_id == "r2" and latest.counts == second.counts
    run = open_run(store, run="r1")
    assert run.counts == first.counts
    checked_out = run.checkout(tmp_path / "r1")
    assert_frame_equal(run.scores.collect(), checked_out.scores.collect())
    assert run.rejected.height == 0
    assert run.headline()["n"].to_list() == [550, 550, 550]
    assert latest.query("select count(*) from scores").item() == 100
    assert run.query("select count(*) from scores").item() == 1650
    before = sorted(p.name for p in run.path.iterdir())
    stats = run.stats(resamples=10)
    assert stats.summary is None and stats.intervals.height > 0
    assert sorted(p.name for p in run.path.iterdir()) == before  # a committed run never changes
    assert run.export(tmp_path / "r1.tsv") == 1650
    assert run.compare(checked_out).passed
    assert run.report(tmp_path / "r1.html").is_file()
    with pytest.raises(InputError, match="no committed run 'r9'; runs: r1, r2"):
        open_run(store, run="r9")


def test_evaluate_refuses_conflicting_targets(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"out \(an output directory\) or store"):
        evaluate(SAMPLE)
    with pytest.raises(ConfigError, match="store runs only"):
        evaluate(SAMPLE, tmp_path / "out", run_id="x")
    with pytest.raises(ConfigError, match="report needs an output directory"):
        evaluate(SAMPLE, store=tmp_path / "store", report=tmp_path / "r.html")
    with pytest.raises(ConfigError, match="store="):
        evaluate(SAMPLE, tmp_path / "out", engine="spark")
    with pytest.raises(InputError, match=r"no scores\.parquet here"):
        open_run(tmp_path)
    assert not (tmp_path / "out").exists() and not (tmp_path / "store").exists()


# --- the package: light, lazy names ---------------------------------------------------------------


def test_import_pipeline_is_light() -> None:
    code = (
        "import sys\n"
        "import pipeline\n"
        "assert 'pipeline.api' not in sys.modules\n"
        "import pipeline.api\n"
        "heavy = ('duckdb', 'onnxruntime', 'matplotlib', 'pandas')\n"
        "heavy = [m for m in heavy if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "assert pipeline.score is pipeline.api.score and pipeline.Run is pipeline.api.Run\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr


def test_pipeline_evaluate_is_the_api_function() -> None:
    import pipeline.drivers  # the run drivers' module: no longer pipeline.evaluate

    assert pipeline.evaluate is pipeline.api.evaluate
    assert pipeline.drivers.evaluate is not pipeline.evaluate
    code = (  # in a fresh interpreter, the drivers imported first
        "import pipeline.drivers, pipeline.api\n"
        "import pipeline\n"
        "assert pipeline.evaluate is pipeline.api.evaluate, pipeline.evaluate\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr


def test_the_package_names() -> None:
    for name in ("score", "evaluate", "open_run", "Run", "Scored", "metric"):
        assert name in pipeline.__all__ and callable(getattr(pipeline, name))
    assert pipeline.metric is user.metric
    with pytest.raises(AttributeError, match="no_such_name"):
        pipeline.no_such_name  # noqa: B018


def test_a_store_run_reads_real_model_names_and_names_damaged_runs(tmp_path: Path) -> None:
    long_name = "m" * 300  # hashed into its partition directory (docs/results-store.md)
    frame = pl.DataFrame({"id": ["q1", "q2"], "question": ["a?", "b?"],
                          "reference": ["x", "y"], "response": ["x", "z"],
                          "model": [long_name, "short"]})
    run = evaluate(frame, store=tmp_path / "store", metrics=["answer_em"], stats=False)
    assert sorted(run.scores.collect()["model"].to_list()) == [long_name, "short"]
    (run.path / "manifest.json").write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match="damaged"):
        open_run(tmp_path / "store", run=run.run_id)
