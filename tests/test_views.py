"""DuckDB views: they build, their grain is unique, known aggregates match hand-computed values.

The hand-made ``scores.parquet`` below is small enough to check every aggregate by hand; the
property test compares micro/macro citation averages with a pure-Python oracle on rows scored
by the real citation metrics.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
from conftest import examples, records
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import citation_prf

from pipeline import drivers
from pipeline.config import Config
from pipeline.io.layout import TEXTS_FILE
from pipeline.metrics.registry import REGISTRY
from pipeline.schema import KEY_COLUMNS, REJECTED_SCHEMA, InputError
from pipeline.scoring import score_frame
from pipeline.stats import write_stats
from pipeline.views import (
    DB_FILE,
    OPTIONAL_FILES,
    REJECTED_FILE,
    SCORES_FILE,
    SOURCE_MACROS,
    ViewBuildError,
    _reading_statistics,
    build_and_answer,
    build_views,
    connect,
    default_queries_dir,
    load_views,
    parse_grain,
    run_query,
)

VIEWS = load_views(default_queries_dir())
STAGING = {"scores", "rejected", "stored_texts", "intervals", "model_comparison", "runs"}

SCORES_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String(), "model": pl.String(), "run": pl.String(), "category": pl.String(),
    "noise_level": pl.Float64(), "question_type": pl.String(), "task": pl.String(),
    "language": pl.String(), "lang": pl.String(), "source": pl.String(),
    "row_number": pl.Int64(),
    **{name: spec.dtype for name, spec in REGISTRY.items()},
    "signature": pl.String(),
}

# Columns: id model category noise_level | em f1 strict | n_pred n_gold n_correct P R F1 |
#          abstained abstention_correct insufficient_context_detected idk | tokens latency
_ROWS = [
    ("a0", "A", "x", 0.0, 1, 1.0, 1, 1, 1, 1, 1.0, 1.0, 1.0, 0, None, None, 0, 100, 10.0),
    ("a1", "A", "x", 0.5, 0, 0.5, 0, 4, 1, 1, 0.25, 1.0, 0.4, 0, None, None, 0, 200, 20.0),
    ("a2", "A", "y", 0.5, 0, 0.0, 0, 0, 0, 0, 1.0, 1.0, 1.0, 1, 1, 1, 1, None, 40.0),
    ("a3", "A", None, None, 0, 0.0, 0, None, None, None, None, None, None, 0, 0, None, 0, 300,
     30.0),
    ("b0", "B", "x", 0.0, 1, 1.0, 1, 0, 2, 0, 0.0, 0.0, 0.0, 0, None, None, 0, 50, 5.0),
    ("b1", "B", "x", 0.0, 1, 1.0, 0, 0, 0, 0, 1.0, 1.0, 1.0, 0, None, None, 0, 70, 7.0),
    ("c0", "C", "x", 0.0, 0, 0.2, 0, 0, 0, 0, 1.0, 1.0, 1.0, 0, None, None, 0, None, None),
    ("n0", None, "x", 0.0, 0, 0.0, 0, None, None, None, None, None, None, 0, None, None, 0, None,
     None),
]
_ROW_COLUMNS = (
    "id", "model", "category", "noise_level", "answer_em", "answer_f1", "answer_em_strict",
    "citation_n_pred", "citation_n_gold", "citation_n_correct", "citation_precision",
    "citation_recall", "citation_f1", "abstained", "abstention_correct",
    "insufficient_context_detected", "idk_with_citation", "total_tokens", "latency_ms",
)
SIGNATURE = "rag-eval|v:test"


def scores_frame() -> pl.DataFrame:
    rows = [dict(zip(_ROW_COLUMNS, row, strict=True)) for row in _ROWS]
    for i, row in enumerate(rows):
        row.update(run="r1", question_type=None, source="in.jsonl", row_number=i,
                   signature=SIGNATURE, **_COMPOSITES[i])
    return pl.DataFrame(rows, schema=SCORES_SCHEMA)


# Category-aware columns of the rows of _ROWS, in order.
_COMPOSITES = [
    {"scoring_category": c, "category_known": k, "overall_score": o, "passed_accuracy": pa,
     "primary_failure_mode": f, "suggestions": s}
    for c, k, o, pa, f, s in [
        ("Factual", 1, 0.9, 1, "pass", ["Response meets all quality criteria"]),
        ("Factual", 1, 0.5, 0, "partial_accuracy", ["Verify numerical information",
                                                    "Be more concise"]),
        ("Creative", 1, 0.2, 0, "refusal_to_answer", ["Be more concise"]),
        ("Factual", 0, 0.4, 0, "partial_accuracy", ["Be more concise"]),
        ("Factual", 1, 0.8, 1, "pass", ["Response meets all quality criteria"]),
        ("Factual", 1, 0.6, 1, "pass", ["Response meets all quality criteria"]),
        ("Factual", 1, 0.3, 0, "factual_error", ["Verify numerical information"]),
        ("Factual", 0, None, None, "pass", []),
    ]
]


def rejected_frame() -> pl.DataFrame:
    return pl.DataFrame(
        [
            ("in.jsonl", 9, "x9", "missing column 'response'", '{"id": "x9"}'),
            ("in.jsonl", 4, "x4", "missing column 'response'", '{"id": "x4"}'),
            ("other.csv", 0, None, "invalid JSON", "{oops"),
        ],
        schema=REJECTED_SCHEMA,
        orient="row",
    )


def write_outputs(out_dir: Path, scores: pl.DataFrame | None = None) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    scores = scores_frame() if scores is None else scores
    scores.write_parquet(out_dir / SCORES_FILE)
    rejected_frame().write_parquet(out_dir / REJECTED_FILE)
    scores.select(
        "source", "row_number", "id",
        pl.concat_str(pl.lit("question "), pl.col("id")).alias("question"),
        pl.lit("Paris").alias("reference"), pl.lit("Paris [1].").alias("response"),
        pl.concat_list(pl.lit("Paris is the capital."), pl.col("id")).alias("contexts"),
    ).write_parquet(out_dir / TEXTS_FILE)
    write_stats(out_dir, resamples=50, seed=0)
    return out_dir


def rows_by(frame: pl.DataFrame, *keys: str) -> dict[Any, dict[str, Any]]:
    """Rows of ``frame`` keyed by the values of ``keys`` (a single value for one key)."""
    out = {}
    for row in frame.iter_rows(named=True):
        key = row[keys[0]] if len(keys) == 1 else tuple(row[k] for k in keys)
        out[key] = row
    return out


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = write_outputs(tmp_path_factory.mktemp("eval"))
    build_views(directory)
    return directory


@pytest.fixture(scope="module")
def by_model(out_dir: Path) -> dict[Any, dict[str, Any]]:
    return rows_by(run_query(out_dir, "select * from by_model"), "model")


# --- building ---------------------------------------------------------------------------------


def test_every_view_builds(out_dir: Path) -> None:
    with connect(out_dir) as con:
        built = {
            name: comment
            for name, comment in con.execute(
                "select view_name, comment from duckdb_views() where not internal"
            ).fetchall()
        }
        for view in VIEWS:
            con.execute(f"select * from {view.name}").fetchall()
    assert built == {view.name: f"grain: {view.grain}" for view in VIEWS}
    assert {"scores", "rejected", "by_model", "by_model_noise", "by_model_category", "headline",
            "headline_em", "rejections_by_reason"} <= set(built)


# The rgb_* views select RGB rows only, which these scores lack, no two models here answered
# the same question (model_comparison is empty), and a plain output directory has no store runs;
# tests/test_rgb_views.py, tests/test_compare.py and tests/test_store.py check those grains on
# data that has them; these scores have no failure stage (tests/test_retrieval_e2e.py).
@pytest.mark.parametrize(
    "view",
    [v for v in VIEWS
     if not v.name.startswith("rgb_")
     and v.name not in ("model_comparison", "runs", "by_failure_stage")],
    ids=lambda v: v.name,
)
def test_grain_is_unique(out_dir: Path, view: Any) -> None:
    columns = ", ".join(view.grain_columns)
    with connect(out_dir) as con:
        row = con.execute(
            f"select count(*), count(distinct row({columns})) from {view.name}"
        ).fetchone()
    assert row is not None
    n, distinct = row
    assert n > 0
    assert n == distinct


def test_statistics_beside_the_views_give_the_same_database(out_dir: Path,
                                                            tmp_path: Path) -> None:
    """Statistics written while the views that do not read them are built: every view reads
    the same rows as in a database built after them, and the queries answered during the
    build (one of them reading the statistics) equal the same queries afterwards."""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    for name in (SCORES_FILE, REJECTED_FILE, TEXTS_FILE):
        shutil.copy(out_dir / name, fresh / name)
    order: list[str] = []

    def statistics() -> None:
        order.append("statistics")
        write_stats(fresh, resamples=50, seed=0)

    queries = {"headline": "select * from headline order by model",
               "ci": "select * from headline_ci order by model",
               "tokenless": "select * from tokenless_rows"}
    target, answers = build_and_answer(fresh, queries, statistics=statistics)
    assert order == ["statistics"] and target == fresh / DB_FILE
    for name, sql in queries.items():
        assert answers[name].equals(run_query(fresh, sql)), name
        assert answers[name].equals(run_query(out_dir, sql)), name
    assert answers["ci"].height == answers["headline"].height > 0
    late = _reading_statistics(VIEWS)  # the views created after the statistics
    assert {"intervals", "model_comparison", "headline_ci"} <= late and "headline" not in late
    for name in sorted(late | {"scores", "by_model"}):
        sql = f'select * from "{name}"'
        assert run_query(fresh, sql).sort(pl.all()).equals(
            run_query(out_dir, sql).sort(pl.all())), name


def test_a_failing_query_leaves_the_database_in_place(out_dir: Path, tmp_path: Path) -> None:
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    for name in (SCORES_FILE, REJECTED_FILE, TEXTS_FILE):
        shutil.copy(out_dir / name, fresh / name)
    with pytest.raises(InputError, match=r"query 'bad' over the views of .* failed"):
        build_and_answer(fresh, {"n": "select count(*) as n from scores",
                                 "bad": "select * from no_such_view"},
                         statistics=lambda: write_stats(fresh, resamples=20, seed=0))
    assert (fresh / DB_FILE).is_file()
    assert run_query(fresh, "select count(*) as n from intervals").item() > 0


def test_statistics_error_fails_the_build(tmp_path: Path) -> None:
    directory = tmp_path / "run"
    directory.mkdir()
    scores_frame().write_parquet(directory / SCORES_FILE)
    rejected_frame().write_parquet(directory / REJECTED_FILE)

    def statistics() -> None:
        raise RuntimeError("statistics failed")

    with pytest.raises(RuntimeError, match="statistics failed"):
        build_views(directory, statistics=statistics)
    assert not (directory / DB_FILE).exists()


def test_dependency_order() -> None:
    names = [view.name for view in VIEWS]
    assert {view.name for view in VIEWS if not view.depends_on} == STAGING
    for position, view in enumerate(VIEWS):
        assert set(view.depends_on) <= set(names[:position]), view.name
    assert dict((v.name, v.depends_on) for v in VIEWS)["headline"] == ("by_model",)


def test_sql_files_follow_the_house_style() -> None:
    keywords = re.compile(r"\b(SELECT|FROM|WHERE|GROUP|ORDER|JOIN|WITH|AS|CASE|WHEN|UNION)\b")
    for view in VIEWS:
        code = re.sub(r"--[^\n]*|'(?:[^']|'')*'", " ", view.sql)
        reads_files = any(
            name in code for name in ("read_parquet", "eval_data_dir", *SOURCE_MACROS)
        )
        assert reads_files == (view.name in STAGING), view.name
        assert not keywords.search(code), f"{view.name}: keywords are lowercase"
        assert code.rstrip().endswith("select * from final"), view.name


def test_db_works_from_another_working_directory(
    out_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "somewhere" / "else"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    relative = os.path.relpath(out_dir / DB_FILE, elsewhere)
    with duckdb.connect(relative, read_only=True) as con:
        n = con.execute("select sum(n) from headline").fetchone()
        data_dir = con.execute("select eval_data_dir()").fetchone()
    assert n == (len(_ROWS),)
    assert data_dir == (out_dir.resolve().as_posix(),)


def test_copied_directory_reads_its_own_files(out_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(out_dir, copy)
    scores_frame().filter(pl.col("model") == "B").write_parquet(copy / SCORES_FILE)
    assert run_query(copy, "select model, n from headline").rows() == [("B", 2)]
    assert run_query(copy, "select eval_data_dir() as d").item() == copy.resolve().as_posix()
    assert run_query(out_dir, "select sum(n) as n from headline").item() == len(_ROWS)


def test_connect_builds_a_missing_database(tmp_path: Path) -> None:
    write_outputs(tmp_path)
    assert run_query(tmp_path, "select count(*) as n from scores").item() == len(_ROWS)
    assert (tmp_path / DB_FILE).is_file()


def test_missing_outputs_are_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no scores\.parquet"):
        build_views(tmp_path)
    with pytest.raises(InputError, match=r"no scores\.parquet"):
        run_query(tmp_path / "nowhere", "select 1")


def test_file_names_match_the_evaluate_driver() -> None:
    assert (SCORES_FILE, REJECTED_FILE) == (drivers.SCORES_FILE, drivers.REJECTED_FILE)


# --- failures name the file and keep the previous database ----------------------------------


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def queries(tmp_path: Path) -> Path:
    return Path(shutil.copytree(default_queries_dir(), tmp_path / "queries"))


@pytest.fixture
def built(tmp_path: Path) -> Path:
    directory = write_outputs(tmp_path / "out")
    build_views(directory)
    return directory


def assert_build_fails(built: Path, queries: Path, pattern: str) -> None:
    before = digest(built / DB_FILE)
    with pytest.raises(ViewBuildError, match=pattern):
        build_views(built, queries)
    assert digest(built / DB_FILE) == before
    expected = [DB_FILE, SCORES_FILE, REJECTED_FILE, TEXTS_FILE, *OPTIONAL_FILES.values()]
    assert sorted(p.name for p in built.iterdir()) == sorted(expected)
    assert run_query(built, "select count(*) as n from headline").item() == 4


def test_broken_view_names_its_file(built: Path, queries: Path) -> None:
    (queries / "zz_broken.sql").write_text(
        "-- grain: one row per model\nselect bm.no_such_column from by_model as bm\n"
    )
    assert_build_fails(built, queries, r"zz_broken\.sql.*no_such_column")


def test_unparsable_view_names_its_file(built: Path, queries: Path) -> None:
    (queries / "by_model.sql").write_text("-- grain: one row per model\nselect from where\n")
    assert_build_fails(built, queries, r"by_model\.sql: SQL does not parse")


def test_missing_grain_line(built: Path, queries: Path) -> None:
    (queries / "no_grain.sql").write_text("select 1 as model\n")
    assert_build_fails(built, queries, r"no_grain\.sql: the first line must state the grain")


def test_grain_columns_must_exist(built: Path, queries: Path) -> None:
    (queries / "wrong_grain.sql").write_text(
        "-- grain: one row per (model, run)\nselect bm.model from by_model as bm\n"
    )
    assert_build_fails(built, queries, r"wrong_grain\.sql: grain column\(s\) run")


def test_one_statement_per_file(built: Path, queries: Path) -> None:
    (queries / "two.sql").write_text("-- grain: one row per x\nselect 1 as x; select 2 as x;\n")
    assert_build_fails(built, queries, r"two\.sql: a view file must hold exactly one select")


def test_circular_references(built: Path, queries: Path) -> None:
    (queries / "loop_a.sql").write_text("-- grain: one row per x\nselect * from loop_b\n")
    (queries / "loop_b.sql").write_text("-- grain: one row per x\nselect * from loop_a\n")
    assert_build_fails(built, queries, r"circular references among views: loop_a\.sql, loop_b")


def test_names_in_comments_and_strings_are_not_dependencies(queries: Path) -> None:
    (queries / "quoted.sql").write_text(
        "-- grain: one row per model\n-- unlike headline, ...\n"
        "select 'by_model_noise' as model /* by_model_category */ from by_model\n"
    )
    view = {v.name: v for v in load_views(queries)}["quoted"]
    assert view.depends_on == ("by_model",)


def test_aliases_and_qualified_columns_are_not_dependencies(queries: Path) -> None:
    (queries / "aliased.sql").write_text(
        "-- grain: one row per model\n"
        "select bm.model, bm.headline, 1 as by_model_noise, 2 AS\n  rejected from by_model as bm\n"
    )
    view = {v.name: v for v in load_views(queries)}["aliased"]
    assert view.depends_on == ("by_model",)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("-- grain: one row per model", ("model",)),
        ("-- grain: one row per (model, noise_level)", ("model", "noise_level")),
        ("-- grain: one row per (source, row_number), i.e. one row", ("source", "row_number")),
    ],
)
def test_parse_grain(line: str, expected: tuple[str, ...]) -> None:
    assert parse_grain(Path("v.sql"), line + "\nselect 1")[1] == expected


# --- staging ---------------------------------------------------------------------------------


def test_staging_scores_exposes_the_contract(out_dir: Path) -> None:
    duck_types = {pl.Int8(): "TINYINT", pl.Int64(): "BIGINT", pl.Float64(): "DOUBLE",
                  pl.String(): "VARCHAR", pl.List(pl.String()): "VARCHAR[]"}
    with connect(out_dir) as con:
        described = con.execute("describe scores").fetchall()
    expected = [*KEY_COLUMNS, *REGISTRY, "signature"]
    assert sorted(name for name, *_ in described) == sorted([*expected, "row_hash", "eval_run"])
    types = {name: kind for name, kind, *_ in described}
    for name in expected:
        assert types[name] == duck_types[SCORES_SCHEMA[name]], name


def test_absent_metric_columns_become_typed_nulls(tmp_path: Path) -> None:
    subset = scores_frame().select(*KEY_COLUMNS, "answer_f1", "signature")
    write_outputs(tmp_path, subset)
    build_views(tmp_path)
    with connect(tmp_path) as con:
        for view in VIEWS:
            con.execute(f"select * from {view.name}").fetchall()
        scores_types = dict(con.execute("select column_name, data_type from "
                                        "information_schema.columns where table_name = 'scores'"
                                        ).fetchall())
    assert scores_types["citation_n_pred"] == "BIGINT"
    assert scores_types["abstained"] == "TINYINT"
    row = rows_by(run_query(tmp_path, "select * from by_model"), "model")["A"]
    assert row["answer_f1"] == pytest.approx(0.375)
    assert row["citation_f1_micro"] is None
    assert row["citation_f1_macro"] is None
    assert row["n_citation_scored"] == 0
    assert row["p50_latency_ms"] is None


def test_extra_columns_pass_through_staging(tmp_path: Path) -> None:
    write_outputs(tmp_path, scores_frame().with_columns(pl.lit(7).alias("future_metric")))
    assert run_query(tmp_path, "select sum(future_metric) as s from scores").item() == 7 * len(
        _ROWS
    )


def test_an_output_directory_binds_its_scores_once(tmp_path: Path) -> None:
    """In an output directory the ``scores`` view is the projection of its file that
    queries/scores.sql gives there (the union with the typed contract, which a store needs, is
    bound once): the same columns, types, order and rows; and a file with other columns,
    written after the views were built, is read as it is."""
    write_outputs(tmp_path, scores_frame().select(*KEY_COLUMNS, "answer_f1", "signature")
                  .with_columns(pl.lit(7).alias("future_metric")))
    build_views(tmp_path)
    as_written = next(view for view in VIEWS if view.name == "scores")
    with connect(tmp_path) as con:
        sql = con.execute("select sql from duckdb_views() where view_name = 'scores'").fetchone()
        union = con.extract_statements(as_written.sql)[0].query
        bound = (con.execute("describe scores").fetchall(),
                 con.execute("select * from scores").fetchall())
        unioned = (con.execute(f"describe {union}").fetchall(), con.execute(union).fetchall())
    assert sql is not None and "union" not in sql[0].lower()
    assert bound == unioned
    assert [name for name, *_ in bound[0]][-2:] == ["eval_run", "future_metric"]
    write_outputs(tmp_path, scores_frame())  # every metric column, no future_metric
    assert run_query(tmp_path, "select sum(citation_n_pred) as n from scores").item() == 5
    with pytest.raises(duckdb.BinderException, match="future_metric"):
        run_query(tmp_path, "select future_metric from scores")


def test_real_scorer_output_builds(tmp_path: Path) -> None:
    """scores from the actual driver, for all metrics and for a --metrics subset."""
    rows = [
        {"model": "m", "reference": "Paris", "response": "Paris", "citations": [1],
         "gold_citations": [1],
         "contexts": ["Paris is the capital."], "latency_ms": 12.0, "total_tokens": 30},
        {"model": "m", "reference": "It is not mentioned in the document.",
         "response": "I don't know.", "gold_citations": [], "latency_ms": 8.0},
    ]
    for metrics in (None, ("answer_f1",)):
        directory = tmp_path / str(metrics)
        directory.mkdir()
        score_frame(records(rows), Config(metrics=metrics)).collect().write_parquet(
            directory / SCORES_FILE
        )
        rejected_frame().write_parquet(directory / REJECTED_FILE)
        headline = run_query(directory, "select * from headline").to_dicts()
        assert len(headline) == 1
        assert headline[0]["n"] == 2
        assert headline[0]["answer_f1"] == pytest.approx(0.5)
        assert headline[0]["signature"] == Config().signature()
        if metrics is None:
            assert headline[0]["citation_f1_macro"] == pytest.approx(1.0)
            assert headline[0]["abstain_rate"] == pytest.approx(0.5)
            assert headline[0]["p50_latency_ms"] == pytest.approx(10.0)


# --- aggregates ------------------------------------------------------------------------------


def test_by_model_answer_metrics(by_model: dict[Any, dict[str, Any]]) -> None:
    a = by_model["A"]
    assert a["n"] == 4
    assert a["answer_em"] == pytest.approx(0.25)
    assert a["answer_f1"] == pytest.approx((1.0 + 0.5) / 4)
    assert a["answer_em_strict"] == pytest.approx(0.25)
    assert by_model["B"]["answer_em_strict"] == pytest.approx(0.5)
    assert by_model[None]["n"] == 1  # rows without a model form their own group


def test_micro_and_macro_citation_precision_differ(by_model: dict[Any, dict[str, Any]]) -> None:
    a = by_model["A"]
    # a3 has no gold citations: excluded from both averages
    assert a["n_citation_scored"] == 3
    assert a["citation_precision_macro"] == pytest.approx((1.0 + 0.25 + 1.0) / 3)
    assert a["citation_recall_macro"] == pytest.approx(1.0)
    assert a["citation_f1_macro"] == pytest.approx((1.0 + 0.4 + 1.0) / 3)
    assert (a["citation_n_pred"], a["citation_n_gold"], a["citation_n_correct"]) == (5, 2, 2)
    assert a["citation_precision_micro"] == pytest.approx(2 / 5)
    assert a["citation_recall_micro"] == pytest.approx(2 / 2)
    assert a["citation_f1_micro"] == pytest.approx(2 * 0.4 * 1.0 / 1.4)


def test_micro_citation_zero_denominators(by_model: dict[Any, dict[str, Any]]) -> None:
    # B: nothing predicted, two gold passages -> 0.0, as for a single such row
    b = by_model["B"]
    assert (b["citation_precision_micro"], b["citation_recall_micro"],
            b["citation_f1_micro"]) == (0.0, 0.0, 0.0)
    assert b["citation_precision_macro"] == pytest.approx(0.5)
    # C: nothing predicted, nothing gold -> 1.0
    c = by_model["C"]
    assert (c["citation_precision_micro"], c["citation_recall_micro"],
            c["citation_f1_micro"]) == (1.0, 1.0, 1.0)
    # no row with gold citations -> null, never a made-up score
    none = by_model[None]
    assert none["n_citation_scored"] == 0
    assert none["citation_precision_micro"] is None
    assert none["citation_f1_micro"] is None


def test_abstention_aggregates_ignore_nulls(by_model: dict[Any, dict[str, Any]]) -> None:
    a = by_model["A"]
    assert a["abstain_rate"] == pytest.approx(0.25)
    assert a["abstention_accuracy"] == pytest.approx(0.5)  # mean of (1, 0), not (1, 0) / 4
    assert a["n_unanswerable"] == 2
    assert a["insufficient_context_rate"] == pytest.approx(1.0)
    assert a["n_insufficient_context"] == 1
    assert a["n_idk_with_citation"] == 1
    b = by_model["B"]
    assert b["abstention_accuracy"] is None
    assert b["n_unanswerable"] == 0
    assert b["n_idk_with_citation"] == 0


def test_usage_aggregates(by_model: dict[Any, dict[str, Any]]) -> None:
    a = by_model["A"]
    assert a["mean_total_tokens"] == pytest.approx(200.0)  # null tokens of a2 skipped
    assert a["p50_latency_ms"] == pytest.approx(25.0)  # median of 10, 20, 30, 40
    assert by_model["B"]["p50_latency_ms"] == pytest.approx(6.0)
    assert by_model["C"]["p50_latency_ms"] is None
    assert a["signature"] == SIGNATURE


def test_by_model_noise(out_dir: Path) -> None:
    rows = rows_by(run_query(out_dir, "select * from by_model_noise"), "model", "noise_level")
    assert set(rows) == {("A", 0.0), ("A", 0.5), ("A", None), ("B", 0.0), ("C", 0.0),
                         (None, 0.0)}
    mid = rows[("A", 0.5)]
    assert mid["n"] == 2
    assert mid["answer_f1"] == pytest.approx(0.25)
    assert mid["citation_precision_micro"] == pytest.approx(1 / 4)
    assert mid["citation_precision_macro"] == pytest.approx((0.25 + 1.0) / 2)
    assert mid["p50_latency_ms"] == pytest.approx(30.0)
    assert rows[("A", None)]["n"] == 1


def test_by_model_category(out_dir: Path) -> None:
    rows = rows_by(run_query(out_dir, "select * from by_model_category"), "model", "category")
    assert set(rows) == {("A", "x"), ("A", "y"), ("A", None), ("B", "x"), ("C", "x"),
                         (None, "x")}
    assert rows[("A", "x")]["answer_f1"] == pytest.approx(0.75)
    assert rows[("A", "y")]["abstention_accuracy"] == pytest.approx(1.0)
    assert "noise_level" not in run_query(out_dir, "select * from by_model_category").columns


def test_slices_add_up_to_the_model(out_dir: Path) -> None:
    totals = run_query(
        out_dir,
        "select s.slice, s.model, sum(s.n) as n, sum(s.citation_n_correct) as correct "
        "from metrics_by_slice as s group by s.slice, s.model",
    )
    per_model = totals.group_by("model").agg(pl.col("n").n_unique(), pl.col("correct").n_unique())
    assert per_model["n"].to_list() == [1] * per_model.height
    assert per_model["correct"].to_list() == [1] * per_model.height


def test_headline(out_dir: Path, by_model: dict[Any, dict[str, Any]]) -> None:
    headline = run_query(out_dir, "select * from headline order by model")
    assert headline.columns == ["model", "n", "answer_f1", "faithfulness", "overlap",
                                "citation_f1_macro", "abstain_rate", "abstention_accuracy",
                                "n_unanswerable", "overall_score", "p50_latency_ms",
                                "mean_total_tokens", "empty_response_rate", "n_grounding",
                                "n_no_passages", "n_idk_with_citation", "idk_check",
                                "answer_in_context", "recall_at_5", "reciprocal_rank",
                                "signature"]
    renamed = {"empty_response_rate": "empty_response"}
    for row in headline.iter_rows(named=True):
        for column, value in row.items():
            if column != "idk_check":
                expected = by_model[row["model"]][renamed.get(column, column)]
                # counts and rates of what a run may lack are null rather than 0
                if column in ("n_unanswerable", "empty_response_rate") and expected == 0:
                    expected = None
                assert value == expected, (row["model"], column)
    # the sanity count must be 0: model A has one row whose "I don't know" cites a passage
    checks = dict(zip(headline["model"], headline["idk_check"], strict=True))
    assert checks == {"A": "WARNING: IDK+citation must be 0", "B": "ok", "C": "ok", None: "ok"}
    em = rows_by(run_query(out_dir, "select * from headline_em"), "model")
    assert em["A"]["answer_em"] == pytest.approx(0.25)
    assert em["B"]["answer_em_strict"] == pytest.approx(0.5)


def test_rejections_by_reason(out_dir: Path) -> None:
    rows = rows_by(run_query(out_dir, "select * from rejections_by_reason"), "source", "reason")
    missing = rows[("in.jsonl", "missing column 'response'")]
    assert (missing["n_rows"], missing["first_row_number"], missing["first_id"]) == (2, 4, "x4")
    assert rows[("other.csv", "invalid JSON")]["n_rows"] == 1
    assert run_query(out_dir, "select count(*) as n from rejected").item() == 3


def test_run_query_statement_without_result(out_dir: Path) -> None:
    assert run_query(out_dir, "set threads = 1").is_empty()


# --- the SQL cookbook stays true -------------------------------------------------------------

COOKBOOK = Path(__file__).resolve().parent.parent / "docs" / "sql-cookbook.md"


def test_cookbook_lists_every_view_with_its_grain() -> None:
    text = COOKBOOK.read_text(encoding="utf-8")
    listed = dict(re.findall(r"^\| `(\w+)` \| (one row per [^|]*?)(?::[^|]*)? \|", text, re.M))
    assert set(listed) == {view.name for view in VIEWS}
    for view in VIEWS:
        assert view.grain.startswith(listed[view.name]), view.name


def test_cookbook_recipes_run(out_dir: Path, tmp_path: Path) -> None:
    other = write_outputs(tmp_path / "run2")
    build_views(other)
    blocks = re.findall(r"```sql\n(.*?)```", COOKBOOK.read_text(encoding="utf-8"), re.S)
    assert len(blocks) >= 6
    with connect(out_dir) as con:
        for block in blocks:
            for statement in con.extract_statements(block.replace("out/run2", str(other))):
                con.execute(statement.query).fetchall()


# --- property: micro and macro citation averages against an oracle --------------------------

_citation_sets = st.lists(st.integers(1, 4), max_size=4)
# Eight models per frame, so each view query checks many small groups (empty ones included)
# against the oracle: ~60 groups in 10 queries, where 25 queries over two models checked ~40.
_rows = st.lists(
    st.tuples(st.sampled_from([f"m{k}" for k in range(1, 9)]), _citation_sets,
              st.one_of(st.none(), _citation_sets)),
    min_size=10,
    max_size=40,
)


@pytest.fixture(scope="module")
def property_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = write_outputs(tmp_path_factory.mktemp("property"))
    build_views(directory)
    return directory


def oracle_micro(pairs: list[tuple[list[int], list[int]]]) -> tuple[float, float, float]:
    n_pred = sum(len(set(p)) for p, _ in pairs)
    n_gold = sum(len(set(g)) for _, g in pairs)
    n_correct = sum(len(set(p) & set(g)) for p, g in pairs)
    precision = n_correct / n_pred if n_pred else float(n_gold == 0)
    recall = n_correct / n_gold if n_gold else float(n_pred == 0)
    f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
    return precision, recall, f1


@settings(max_examples=examples(10), deadline=None)
@given(rows=_rows)
def test_citation_averages_match_oracle(property_dir: Path, rows: list[Any]) -> None:
    scored = score_frame(
        records([
            {"model": model, "reference": "r", "response": "x", "citations": pred,
             "gold_citations": gold}
            for model, pred, gold in rows
        ]),
        Config(metrics=("citation",)),
    ).collect()
    scored.write_parquet(property_dir / SCORES_FILE)
    got = rows_by(run_query(property_dir, "select * from by_model"), "model")
    for model in {m for m, _, _ in rows}:
        pairs = [(p, g) for m, p, g in rows if m == model and g is not None]
        row = got[model]
        assert row["n_citation_scored"] == len(pairs)
        if not pairs:
            assert row["citation_f1_micro"] is None
            assert row["citation_f1_macro"] is None
            continue
        micro = (row["citation_precision_micro"], row["citation_recall_micro"],
                 row["citation_f1_micro"])
        assert micro == pytest.approx(oracle_micro(pairs), abs=1e-12)
        per_row = [citation_prf(p, g) for p, g in pairs]
        macro = tuple(math.fsum(r[k] for r in per_row) / len(per_row) for k in range(3))
        assert (row["citation_precision_macro"], row["citation_recall_macro"],
                row["citation_f1_macro"]) == pytest.approx(macro, abs=1e-12)


def test_grounding_rouge_and_paired_aggregates(tmp_path: Path) -> None:
    grounded = scores_frame().with_columns(
        pl.Series("overlap", [1.0, 0.5, 1.0, None, None, None, None, None]),
        pl.Series("faithfulness", [1.0, 0.8, 1.0, None, None, None, None, None]),
        pl.Series("n_sentences", [2, 2, 1, None, None, None, None, None], dtype=pl.Int64),
        pl.Series("n_supported", [2, 1, 1, None, None, None, None, None], dtype=pl.Int64),
        pl.Series("rouge_1_overlap", [2, 0, None, None, None, None, None, None], dtype=pl.Int64),
        pl.Series("rouge_1_pred", [4, 3, None, None, None, None, None, None], dtype=pl.Int64),
        pl.Series("rouge_1_ref", [2, 1, None, None, None, None, None, None], dtype=pl.Int64),
    )
    write_outputs(tmp_path, grounded)
    a = rows_by(run_query(tmp_path, "select * from by_model"), "model")["A"]
    assert a["overlap"] == pytest.approx(2.5 / 3)
    assert a["faithfulness"] == pytest.approx(2.8 / 3)
    assert a["overlap_micro"] == pytest.approx(4 / 5)
    assert a["rouge_1_micro"] == pytest.approx(0.4)  # P = 2/7, R = 2/3
    headline = rows_by(run_query(tmp_path, "select * from headline"), "model")["A"]
    assert headline["faithfulness"] == pytest.approx(2.8 / 3)
    paired = rows_by(run_query(tmp_path, "select * from paired_analysis"), "model")
    assert set(paired) == {"A", "B", "C", None}
    row = paired["A"]
    assert (row["n_grounded_correct"], row["n_grounded_wrong"], row["n_ungrounded_correct"],
            row["n_ungrounded_wrong"]) == (2, 1, 0, 0)
    assert row["share_grounded_wrong"] == pytest.approx(1 / 3)
    assert row["mean_tokens_answered"] == pytest.approx(200.0)
    assert row["mean_tokens_abstained"] is None  # the abstaining row has no token count
    assert row["p50_latency_ms_abstained"] == pytest.approx(40.0)
    assert paired["B"]["n_grounded_correct"] == 0  # no grounding scores


def test_category_failure_and_suggestion_views(out_dir: Path) -> None:
    by_category = rows_by(run_query(out_dir, "select * from by_category"),
                          "model", "scoring_category")
    a = by_category[("A", "Factual")]
    assert (a["n"], a["n_category_fallback"]) == (3, 1)
    assert a["overall_score"] == pytest.approx((0.9 + 0.5 + 0.4) / 3)
    assert a["pass_rate_accuracy"] == pytest.approx(1 / 3)
    assert a["pass_rate_overall"] == pytest.approx(1 / 3)
    assert by_category[("A", "Creative")]["n"] == 1

    modes = rows_by(run_query(out_dir, "select * from failure_modes"),
                    "model", "scoring_category", "primary_failure_mode")
    assert modes[("A", "Factual", "partial_accuracy")]["n"] == 2
    assert modes[("A", "Factual", "partial_accuracy")]["share"] == pytest.approx(2 / 3)
    assert modes[("C", "Factual", "factual_error")]["share"] == pytest.approx(1.0)

    top = rows_by(run_query(out_dir, "select * from suggestions_top"), "model", "suggestion")
    assert top[("A", "Be more concise")]["n"] == 3
    assert top[("A", "Be more concise")]["rank"] == 1
    assert top[("A", "Be more concise")]["share_of_rows"] == pytest.approx(3 / 4)
    assert top[("A", "Verify numerical information")]["rank"] == 3  # ties broken by text
    assert (None, "Response meets all quality criteria") not in top  # the null model had none


def test_stats_views_are_empty_without_their_files(tmp_path: Path) -> None:
    directory = tmp_path / "no_stats"
    directory.mkdir()
    scores_frame().write_parquet(directory / SCORES_FILE)
    rejected_frame().write_parquet(directory / REJECTED_FILE)
    build_views(directory)
    assert run_query(directory, "select count(*) from intervals").item() == 0
    assert run_query(directory, "select count(*) from model_comparison").item() == 0
    ci = run_query(directory, "select * from headline_ci order by model")
    assert ci.height == 4 and ci["answer_f1_low"].null_count() == 4


def test_texts_view_joins_the_scores_and_keeps_the_passages(out_dir: Path) -> None:
    rows = run_query(out_dir, (
        "select s.id, s.model, t.question, t.contexts, t.contexts[2] as second "
        "from scores s join texts t using (source, row_number) order by s.source, s.row_number"
    ))
    scores = pl.read_parquet(out_dir / SCORES_FILE)
    assert rows.height == scores.height
    assert rows["question"].to_list() == [f"question {i}" for i in scores["id"].to_list()]
    assert rows["second"].to_list() == scores["id"].to_list()
