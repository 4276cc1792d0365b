"""An input's other columns (a user's ``label``) reach ``texts.parquet`` on every path that
writes it: the single pass, the two-pass run, a store run and its checkout (Spark: test_spark);
``[columns] keep`` chooses them; inputs whose other columns differ share one schema."""

from __future__ import annotations

import logging
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.config import Config, ConfigError, load_config
from pipeline.io.other_columns import UnionWriter
from pipeline.views import run_query

BASE = pl.DataFrame({
    "id": ["q1", "q2", "q3"],
    "question": ["Capital of France?", "Capital of Italy?", "Capital of Spain?"],
    "reference": ["Paris", "Rome", "Madrid"],
    "response": ["Paris", "Milan", "Madrid"],
})
LABELLED = BASE.with_columns(label=pl.Series(["easy", "hard", "mid"]),
                             reviewer=pl.Series([3, 7, 9]))
OTHER = pl.DataFrame({
    "id": ["p1", "p2"], "question": ["2+2?", "3+3?"], "reference": ["4", "6"],
    "response": ["4", "5"], "note": ["checked", "unsure"], "label": ["x", "y"],
})
#: Metrics that run in one pass, and metrics whose corpus statistics need two.
ONE_PASS = "answer_em"
TWO_PASS = "answer_em,tfidf_relevance"


def _write(frame: pl.DataFrame, path: Path) -> Path:
    {".parquet": frame.write_parquet, ".csv": frame.write_csv,
     ".jsonl": frame.write_ndjson}[path.suffix](path)
    return path


def _evaluate(inputs: list[Path], out: Path, metrics: str = ONE_PASS, *extra: str) -> int:
    args = ["evaluate"]
    for path in inputs:
        args += ["--input", str(path)]
    return main([*args, "--out", str(out), "--metrics", metrics, "--no-progress", "--no-stats",
                 *extra])


def _config(tmp_path: Path, text: str) -> str:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
@pytest.mark.parametrize("metrics", [ONE_PASS, TWO_PASS])
def test_the_label_reaches_texts_aligned_to_its_row(tmp_path: Path, suffix: str,
                                                    metrics: str) -> None:
    path = _write(LABELLED, tmp_path / f"records{suffix}")
    assert _evaluate([path], tmp_path / "out", metrics) == 0
    texts = pl.read_parquet(tmp_path / "out" / "texts.parquet")
    assert texts.columns == ["source", "row_number", "id", "question", "reference", "response",
                             "contexts", "label", "reviewer"]
    assert texts.select("row_number", "id", "label").rows() == [
        (0, "q1", "easy"), (1, "q2", "hard"), (2, "q3", "mid")]
    # a delimited file's cells are text, as read; Parquet and JSON keep their dtype
    assert texts["reviewer"].to_list() == (["3", "7", "9"] if suffix == ".csv" else [3, 7, 9])
    scores = pl.read_parquet(tmp_path / "out" / "scores.parquet")
    joined = scores.join(texts, on=["source", "row_number"]).sort("row_number")
    assert joined.select("id", "label", "answer_em").rows() == [
        ("q1", "easy", 1), ("q2", "hard", 0), ("q3", "mid", 1)]
    assert run_query(tmp_path / "out", "select count(*) from texts").item() == 3


@pytest.mark.parametrize("metrics", [ONE_PASS, TWO_PASS])
def test_two_inputs_with_different_columns_share_their_union(tmp_path: Path,
                                                              metrics: str) -> None:
    first = _write(LABELLED, tmp_path / "a.jsonl")
    second = _write(OTHER, tmp_path / "b.csv")
    assert _evaluate([first, second], tmp_path / "out", metrics) == 0
    texts = pl.read_parquet(tmp_path / "out" / "texts.parquet")
    assert texts.columns[7:] == ["label", "reviewer", "note"]
    assert texts.schema["reviewer"] == pl.Int64  # the first input's dtype
    assert texts.select("id", "label", "reviewer", "note").rows() == [
        ("q1", "easy", 3, None), ("q2", "hard", 7, None), ("q3", "mid", 9, None),
        ("p1", "x", None, "checked"), ("p2", "y", None, "unsure")]
    assert run_query(tmp_path / "out", "select count(*) from texts").item() == 5


def test_one_column_with_two_types_is_an_error_naming_both_inputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    first = _write(LABELLED, tmp_path / "a.parquet")
    second = _write(OTHER.with_columns(reviewer=pl.lit("alice")), tmp_path / "b.csv")
    assert _evaluate([first, second], tmp_path / "out") != 0
    assert (f"error: {second}: the kept column 'reviewer' is String here but Int64 in {first}; "
            "a kept column has one type in every input") in capsys.readouterr().err
    assert not (tmp_path / "out" / "texts.parquet").exists()
    # leaving it out with the config key runs
    config = _config(tmp_path, '[columns]\nkeep = ["label", "note"]\n')
    assert _evaluate([first, second], tmp_path / "out", ONE_PASS, "--config", config) == 0
    texts = pl.read_parquet(tmp_path / "out" / "texts.parquet")
    assert texts.columns[7:] == ["label", "note"]


def test_a_key_without_values_takes_the_type_a_later_input_gives(tmp_path: Path) -> None:
    first = _write(BASE.with_columns(score=pl.lit(None)), tmp_path / "a.jsonl")
    second = _write(BASE.with_columns(id=pl.Series(["r1", "r2", "r3"]),
                                      score=pl.Series([0.5, 1.0, None])), tmp_path / "b.jsonl")
    assert _evaluate([first, second], tmp_path / "out") == 0
    texts = pl.read_parquet(tmp_path / "out" / "texts.parquet")
    assert texts.schema["score"] == pl.Float64
    assert texts["score"].to_list() == [None, None, None, 0.5, 1.0, None]


def test_a_store_run_and_its_checkout_carry_them(tmp_path: Path) -> None:
    first = _write(LABELLED, tmp_path / "a.parquet")
    second = _write(OTHER, tmp_path / "b.jsonl")
    store = tmp_path / "store"
    assert main(["evaluate", "--input", str(first), "--input", str(second), "--store",
                 str(store), "--run-id", "r1", "--metrics", ONE_PASS, "--no-progress",
                 "--no-stats"]) == 0
    stored = pl.read_parquet(store / "eval_run=r1" / "texts" / "part-0.parquet")
    assert stored.select("id", "label", "note").rows() == [
        ("q1", "easy", None), ("q2", "hard", None), ("q3", "mid", None),
        ("p1", "x", "checked"), ("p2", "y", "unsure")]
    assert run_query(store, "select count(*) from texts").item() == 5
    assert main(["checkout", str(store), "--run", "r1", "--out", str(tmp_path / "co")]) == 0
    checked_out = pl.read_parquet(tmp_path / "co" / "texts.parquet")
    assert checked_out.select("id", "label", "reviewer", "note").equals(
        stored.select("id", "label", "reviewer", "note"))


def test_the_config_key_chooses(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(LABELLED, tmp_path / "records.jsonl")
    only = _config(tmp_path, '[columns]\nkeep = ["label"]\n')
    with caplog.at_level(logging.WARNING):
        assert _evaluate([path], tmp_path / "only", ONE_PASS, "--config", only) == 0
    assert pl.read_parquet(tmp_path / "only" / "texts.parquet").columns[7:] == ["label"]
    assert "column(s) reviewer are not read" in caplog.text
    assert "[columns] keep" in caplog.text
    none = _config(tmp_path, "[columns]\nkeep = []\n")
    assert _evaluate([path], tmp_path / "none", ONE_PASS, "--config", none) == 0
    assert pl.read_parquet(tmp_path / "none" / "texts.parquet").columns[-1] == "contexts"
    typo = _config(tmp_path, '[columns]\nkeep = ["lable"]\n')
    assert _evaluate([path], tmp_path / "typo", ONE_PASS, "--config", typo) != 0
    assert ("the columns to keep ([columns] keep; keep_columns) name 'lable', which is no "
            "column of the input; other columns: label, reviewer") in capsys.readouterr().err


def test_a_kept_name_one_input_lacks_is_null_there_and_none_having_it_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    first = _write(LABELLED, tmp_path / "a.jsonl")
    second = _write(BASE.with_columns(id=pl.Series(["r1", "r2", "r3"])), tmp_path / "b.csv")
    config = _config(tmp_path, '[columns]\nkeep = ["label"]\n')
    assert _evaluate([first, second], tmp_path / "out", ONE_PASS, "--config", config) == 0
    texts = pl.read_parquet(tmp_path / "out" / "texts.parquet")
    assert texts["label"].to_list() == ["easy", "hard", "mid", None, None, None]
    typo = _config(tmp_path, '[columns]\nkeep = ["lable"]\n')
    assert _evaluate([first, second], tmp_path / "typo", ONE_PASS, "--config", typo) != 0
    assert "[columns] keep names 'lable', which no input has" in capsys.readouterr().err
    assert not (tmp_path / "typo" / "texts.parquet").exists()


def test_config_key() -> None:
    assert load_config(data={}).keep_columns is None
    assert load_config(data={"columns": {"keep": []}}).keep_columns == ()
    config = load_config(data={"columns": {"keep": ["label"], "response": "answer"}})
    assert config.keep_columns == ("label",)
    assert config.columns == {"response": "answer"}
    assert config.signature() == Config(embedding_backend=config.embedding_backend).signature()
    with pytest.raises(ConfigError, match=r"\[columns\] keep must be a list of column names"):
        load_config(data={"columns": {"keep": "label"}})


def test_union_writer_keeps_one_file_while_the_schema_holds(tmp_path: Path) -> None:
    target = tmp_path / "t.parquet"
    writer = UnionWriter(target, {"row_number": pl.Int64()})
    for frame, source in (
        (pl.DataFrame({"row_number": [0], "a": ["x"]}), "one"),
        (pl.DataFrame({"row_number": [1]}), "two"),  # lacks a: fits, null there
        (pl.DataFrame({"row_number": [2], "b": [1.5]}), "three"),  # widens: a second segment
    ):
        writer.write(writer.conform(frame, source))
    writer.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.parquet"]
    assert pl.read_parquet(target).rows() == [(0, "x", None), (1, None, None), (2, None, 1.5)]


# --- the flag: rag-eval evaluate / validate --keep-columns ---------------------------------


def test_the_flag_chooses_over_the_config_key(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(LABELLED, tmp_path / "records.csv")
    with caplog.at_level(logging.WARNING):
        assert _evaluate([path], tmp_path / "label", ONE_PASS, "--keep-columns", "label") == 0
    texts = pl.read_parquet(tmp_path / "label" / "texts.parquet")
    assert texts.columns[6:] == ["contexts", "label"]
    assert texts["label"].to_list() == ["easy", "hard", "mid"]
    assert (f"{path}: column(s) reviewer are not read: no canonical column reads them and the "
            "config's [columns] keep (rag-eval --keep-columns; pipeline.score: keep_columns) "
            "leaves them out") in caplog.text
    caplog.clear()
    # an empty value keeps none; the flag wins over the config's key
    config = _config(tmp_path, '[columns]\nkeep = ["reviewer"]\n')
    with caplog.at_level(logging.WARNING):
        assert _evaluate([path], tmp_path / "none", ONE_PASS, "--config", config,
                         "--keep-columns", "") == 0
    assert pl.read_parquet(tmp_path / "none" / "texts.parquet").columns[-1] == "contexts"
    assert "column(s) label, reviewer are not read" in caplog.text
    assert _evaluate([path], tmp_path / "both", ONE_PASS, "--config", config,
                     "--keep-columns", "reviewer, label") == 0
    assert pl.read_parquet(tmp_path / "both" / "texts.parquet").columns[7:] == [
        "reviewer", "label"]
    # absent: the config's key, else every other column
    assert _evaluate([path], tmp_path / "config", ONE_PASS, "--config", config) == 0
    assert pl.read_parquet(tmp_path / "config" / "texts.parquet").columns[7:] == ["reviewer"]
    assert _evaluate([path], tmp_path / "all", ONE_PASS) == 0
    assert pl.read_parquet(tmp_path / "all" / "texts.parquet").columns[7:] == [
        "label", "reviewer"]
    capsys.readouterr()
    # a name no input has fails before anything is written
    assert _evaluate([path], tmp_path / "typo", ONE_PASS, "--keep-columns", "lable") == 2
    assert ("name 'lable', which is no column of the input; other columns: label, reviewer"
            in capsys.readouterr().err)
    assert not (tmp_path / "typo" / "texts.parquet").exists()


def test_validate_takes_the_flag(tmp_path: Path, caplog: pytest.LogCaptureFixture,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(LABELLED, tmp_path / "records.jsonl")
    with caplog.at_level(logging.WARNING):
        assert main(["validate", "--input", str(path), "--keep-columns", "label"]) == 0
    assert "read 3 rows: 3 valid, 0 would be rejected" in capsys.readouterr().out
    assert "column(s) reviewer are not read" in caplog.text
    assert "--keep-columns" in caplog.text
    assert main(["validate", "--input", str(path), "--keep-columns", "lable"]) == 2
    assert "name 'lable', which is no column of the input" in capsys.readouterr().err


# --- kept columns in SQL: the texts and stored_texts views ------------------------------------

DOCS = Path(__file__).resolve().parent.parent / "docs"
#: The query both docs show (docs/input-formats.md "Other columns", docs/sql-cookbook.md).
BY_LABEL = ("select t.label, avg(s.answer_f1) from scores s join texts t using (source, "
            "row_number) group by 1")
#: Two easy rows (F1 1 and 2/3: "Madrid Spain" against "Madrid") and a hard one (F1 0).
GRADED = BASE.with_columns(response=pl.Series(["Paris", "Milan", "Madrid Spain"]),
                           label=pl.Series(["easy", "hard", "easy"]))
BY_LABEL_ROWS = [("easy", pytest.approx((1 + 2 / 3) / 2)), ("hard", 0.0)]


def test_the_docs_show_the_query() -> None:
    for name in ("input-formats.md", "sql-cookbook.md"):
        assert f'rag-eval query out "{BY_LABEL}"' in (DOCS / name).read_text(encoding="utf-8")


def test_scores_join_the_kept_label_in_sql(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(GRADED.with_columns(reviewer=pl.Series([3, 7, 9])), tmp_path / "r.parquet")
    out = tmp_path / "out"
    assert _evaluate([path], out, "answer_f1") == 0
    assert sorted(run_query(out, BY_LABEL).rows()) == BY_LABEL_ROWS
    texts = run_query(out, "select * from texts order by row_number")
    assert texts.columns[-6:] == ["question", "reference", "response", "contexts", "label",
                                  "reviewer"]
    assert texts.select("id", "model", "label", "reviewer").rows() == [
        ("q1", None, "easy", 3), ("q2", None, "hard", 7), ("q3", None, "easy", 9)]
    assert run_query(out, "select * from stored_texts limit 0").columns == [
        "eval_run", "source", "row_number", "id", "question", "reference", "response",
        "contexts", "label", "reviewer"]
    capsys.readouterr()
    assert main(["query", str(out), BY_LABEL + " order by 1", "--format", "csv"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "label,avg(s.answer_f1)"
    assert [line.split(",")[0] for line in lines[1:]] == ["easy", "hard"]
    # a run that kept none has no label column in the views
    assert _evaluate([path], tmp_path / "none", "answer_f1", "--keep-columns", "") == 0
    assert run_query(tmp_path / "none", "select * from texts limit 0").columns[-1] == "contexts"


def test_scores_join_the_kept_label_on_a_store(tmp_path: Path) -> None:
    labelled = _write(GRADED, tmp_path / "a.parquet")
    plain = _write(BASE.with_columns(id=pl.Series(["p1", "p2", "p3"])), tmp_path / "b.parquet")
    store = tmp_path / "store"
    for path, run_id in ((labelled, "r1"), (plain, "r2")):
        assert main(["evaluate", "--input", str(path), "--store", str(store), "--run-id",
                     run_id, "--metrics", "answer_f1", "--no-progress", "--no-stats"]) == 0
    assert sorted(run_query(store, BY_LABEL, run="r1").rows()) == BY_LABEL_ROWS
    # the latest run (r2) kept none; every run: the union, null in r2
    assert "label" not in run_query(store, "select * from texts limit 0").columns
    every = run_query(store, "select t.eval_run, t.label, avg(s.answer_f1) from scores s join "
                             "texts t using (eval_run, source, row_number) group by 1, 2 "
                             "order by 1, 2", run="all")
    assert every.rows() == [("r1", "easy", pytest.approx((1 + 2 / 3) / 2)), ("r1", "hard", 0.0),
                            ("r2", None, pytest.approx(2 / 3))]  # Milan for Rome
    assert run_query(store, "select count(*), count(label) from stored_texts",
                     run="all").row(0) == (6, 3)
