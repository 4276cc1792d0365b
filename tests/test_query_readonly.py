"""`rag-eval query` is read-only: hostile statements are refused, files keep their bytes.

Issue 16, point 1: a `COPY` onto a committed store's Parquet file cut the run while its manifest
still counted the old rows. Every statement below is refused with exit 2 and a one-line reason,
on a run directory and on a results store; ordinary reads still work (docs/query-security.md).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipeline.cli import EXIT_ERROR, EXIT_OK, main
from pipeline.query import fetch_frame
from pipeline.views import QueryRefused, run_query

ROWS = [
    {"id": "q1", "model": "m1", "question": "Capital of France?", "reference": "Paris",
     "response": "Paris [1]", "contexts": ["Paris is the capital."], "gold_citations": [1]},
    {"id": "q2", "model": "m1", "question": "Who wrote it?", "reference": "Hugo",
     "response": "Victor Hugo", "contexts": ["Hugo wrote it."]},
    {"id": "q1", "model": "m2", "question": "Capital of France?", "reference": "Paris",
     "response": "Lyon", "contexts": ["Paris is the capital."]},
]
#: The committed file a hostile COPY aims at, relative to the run directory or the store.
COMMITTED = {"run": "scores.parquet", "store": "eval_run=r1/scores/model=m1/part-0.parquet"}
TYPE_REFUSED = ("error: query refused: {kind} statements are not allowed ({reason}); a query is "
                "one select, describe, show, summarize or set statement")
WRITES = "it writes to the database"
#: (SQL with {dir}, {outside} and {committed} to fill in, statement type, reason).
REFUSED_TYPES = [
    ("copy (select 1 as x) to '{committed}' (format parquet)", "COPY",
     "COPY writes or reads files"),
    ("copy scores to '{committed}' (format parquet)", "COPY", "COPY writes or reads files"),
    ("copy (select 1) to '{dir}/new.csv'", "COPY", "COPY writes or reads files"),
    ("copy (select 1) to '{outside}/x.csv'", "COPY", "COPY writes or reads files"),
    ("export database '{dir}/dump'", "EXPORT", "EXPORT DATABASE writes files"),
    ("explain analyze copy (select 1) to '{dir}/y.csv'", "EXPLAIN",
     "EXPLAIN ANALYZE runs the statement it explains"),
    ("attach '{outside}/evil.duckdb' as evil (read_only false)", "ATTACH",
     "ATTACH opens another database"),
    ("attach '{dir}/eval.duckdb' as again (read_only false)", "ATTACH",
     "ATTACH opens another database"),
    ("install httpfs", "LOAD", "INSTALL and LOAD add extensions"),
    ("load httpfs", "LOAD", "INSTALL and LOAD add extensions"),
    ("create table t as select 1 as x", "CREATE", WRITES),
    ("create temp table t as select 1 as x", "CREATE", WRITES),
    ("insert into scores select * from scores", "INSERT", WRITES),
    ("pragma enable_profiling", "PRAGMA", "a pragma can change settings or run other statements"),
]
#: Settings that would undo the restrictions: DuckDB refuses them, the configuration is locked.
LOCKED_SETTINGS = ["enable_external_access", "allowed_directories", "lock_configuration",
                   "allowed_configs", "autoload_known_extensions"]
LOCKED_VALUES = {"allowed_directories": "['/']", "allowed_configs": "['enable_external_access']"}


def _evaluate(*args: str) -> None:
    assert main(["evaluate", *args, "--no-progress", "--embedding-backend", "hashed",
                 "--no-stats"]) == EXIT_OK


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One run directory ``run``, a store ``store`` with runs r1 and r2, and ``outside``."""
    root = tmp_path_factory.mktemp("hostile")
    source = root / "in" / "answers.jsonl"
    source.parent.mkdir()
    source.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    _evaluate("--input", str(source), "--out", str(root / "run"))
    for run_id in ("r1", "r2"):
        _evaluate("--input", str(source), "--store", str(root / "store"), "--run-id", run_id)
    (root / "outside").mkdir()
    (root / "outside" / "secret.txt").write_text("not yours\n", encoding="utf-8")
    for target in ("run", "store"):  # a link inside that points outside
        (root / target / "link.txt").symlink_to(root / "outside" / "secret.txt")
    scores = pl.read_parquet(root / "run" / "scores.parquet")
    scores.write_parquet(root / "outside" / "copy.parquet")
    return root


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` and the SHA-256 of its bytes."""
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*")) if path.is_file()
    }


def fill(sql: str, root: Path, target: str) -> str:
    directory = (root / target).resolve()
    return sql.format(dir=directory.as_posix(), outside=(root / "outside").resolve().as_posix(),
                      committed=(directory / COMMITTED[target]).as_posix())


def refused(root: Path, target: str, sql: str, capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``sql`` through the CLI, check exit 2, no output and untouched files; return stderr."""
    before = snapshot(root)
    capsys.readouterr()
    assert main(["query", str(root / target), sql]) == EXIT_ERROR
    out, err = capsys.readouterr()
    assert out == ""
    assert snapshot(root) == before
    return err


@pytest.mark.parametrize("target", ["run", "store"])
@pytest.mark.parametrize(("template", "kind", "reason"), REFUSED_TYPES,
                         ids=[f"{kind}:{sql[:24]}" for sql, kind, _ in REFUSED_TYPES])
def test_statements_that_write_or_reach_out_are_refused(
    root: Path, target: str, template: str, kind: str, reason: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    err = refused(root, target, fill(template, root, target), capsys)
    assert err == TYPE_REFUSED.format(kind=kind, reason=reason) + "\n"


@pytest.mark.parametrize("target", ["run", "store"])
@pytest.mark.parametrize(("sql", "n"), [
    ("select 1; select 2", 2),
    ("select 1; copy (select 1 as x) to '{committed}' (format parquet)", 2),
    ("set variable eval_run = 'r1'; select 1; select 2", 3),
    ("", 0),
    ("-- only a comment", 0),
])
def test_exactly_one_statement_per_call(
    root: Path, target: str, sql: str, n: int, capsys: pytest.CaptureFixture[str]
) -> None:
    err = refused(root, target, fill(sql, root, target), capsys)
    assert err == (f"error: query refused: {n} SQL statements given; a query runs exactly one "
                   "statement\n")


@pytest.mark.parametrize("target", ["run", "store"])
@pytest.mark.parametrize("path", [
    "/etc/hostname",
    "{outside}/secret.txt",
    "{dir}/../outside/secret.txt",
    "{dir}/../in/answers.jsonl",
    "in/answers.jsonl",
    "{dir}/link.txt",
    "https://example.com/x.csv",
])
def test_files_outside_the_directory_cannot_be_read(
    root: Path, target: str, path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = fill(path, root, target)
    err = refused(root, target, f"select * from read_text('{path}')", capsys)
    directory = (root / target).resolve()
    assert err == (f'error: query refused: Permission Error: Cannot access file "{path}" - file '
                   "system operations are disabled by configuration (a query reads only files "
                   f"under {directory})\n")


@pytest.mark.parametrize("target", ["run", "store"])
def test_a_glob_does_not_follow_a_link_outside(
    root: Path, target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    directory = (root / target).resolve()
    err = refused(root, target, f"select content from read_text('{directory}/*.txt')", capsys)
    assert err == (f'error: query refused: Permission Error: Cannot access file "{directory}/'
                   'link.txt" - file system operations are disabled by configuration (a query '
                   f"reads only files under {directory})\n")


@pytest.mark.parametrize("target", ["run", "store"])
def test_parquet_outside_the_directory_cannot_be_read(
    root: Path, target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = fill("{outside}/copy.parquet", root, target)
    err = refused(root, target, f"select count(*) from read_parquet('{path}')", capsys)
    assert err.startswith(f'error: query refused: Permission Error: Cannot access file "{path}"')
    assert err.count("\n") == 1


@pytest.mark.parametrize("setting", LOCKED_SETTINGS)
def test_the_restrictions_cannot_be_switched_off(
    root: Path, setting: str, capsys: pytest.CaptureFixture[str]
) -> None:
    value = LOCKED_VALUES.get(setting, "true" if setting != "lock_configuration" else "false")
    err = refused(root, "store", f"set {setting} = {value}", capsys)
    # DuckDB before 2.0.1 doubled the quotes around the option's name.
    assert re.fullmatch(
        f'error: query failed: Invalid Input Error: Cannot change configuration option '
        f'("{{1,2}}){setting}\\1 - the configuration has been locked\n', err
    )


def test_refused_copy_leaves_the_committed_run_whole(root: Path) -> None:
    """The issue's case: the store's part file keeps its bytes and the manifest's row count."""
    store = root / "store"
    part = store / COMMITTED["store"]
    before = part.read_bytes()
    sql = f"copy (select 1 as x) to '{part.resolve().as_posix()}' (format parquet)"
    with pytest.raises(QueryRefused, match=r"^query refused: COPY statements are not allowed"):
        run_query(store, sql)
    assert part.read_bytes() == before
    manifest = json.loads((store / "eval_run=r1" / "manifest.json").read_text(encoding="utf-8"))
    scored = pl.read_parquet(store / "eval_run=r1" / "scores" / "*" / "*.parquet").height
    assert scored == manifest["counts"]["scored"] == len(ROWS)


def test_refusal_is_one_line_without_traceback(root: Path) -> None:
    part = (root / "store" / COMMITTED["store"]).resolve().as_posix()
    before = snapshot(root)
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", "query", str(root / "store"),
         f"copy (select 1 as x) to '{part}' (format parquet)"],
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == EXIT_ERROR
    assert result.stdout == ""
    assert result.stderr == TYPE_REFUSED.format(kind="COPY",
                                                reason="COPY writes or reads files") + "\n"
    assert snapshot(root) == before


# --- ordinary reads still work -----------------------------------------------------------------

def query_csv(directory: Path, sql: str, capsys: pytest.CaptureFixture[str], *extra: str
              ) -> list[str]:
    capsys.readouterr()
    assert main(["query", str(directory), sql, "--format", "csv", *extra]) == EXIT_OK
    out, err = capsys.readouterr()
    assert err == ""
    return out.splitlines()


@pytest.mark.parametrize("target", ["run", "store"])
def test_views_and_settings_still_work(
    root: Path, target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(root)
    directory = root / target
    assert query_csv(directory, "select model, n from headline order by model", capsys) == [
        "model,n", "m1,2", "m2,1"]
    assert query_csv(directory, "select column_name from (describe scores) limit 2",
                     capsys) == ["column_name", "id", "model"]
    assert query_csv(directory, "set threads = 1", capsys) == ["Success"]
    assert snapshot(root) == before


def test_run_files_can_be_read_directly(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = (root / "run").resolve().as_posix()
    sql = f"select count(*) as n from read_parquet('{run}/scores.parquet')"
    assert query_csv(root / "run", sql, capsys) == ["n", "3"]
    assert query_csv(root / "run", f"select count(*) as n from glob('{run}/*.parquet')",
                     capsys) == ["n", "3"]


def test_store_files_and_runs_can_be_read(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = root / "store"
    pattern = f"{store.resolve().as_posix()}/eval_run=*/scores/model=*/*.parquet"
    assert query_csv(store, f"select count(*) as n from read_parquet('{pattern}')", capsys) == [
        "n", "6"]
    assert query_csv(store, "select eval_run, count(*) as n from scores group by all order by all",
                     capsys, "--run", "all") == ["eval_run,n", "r1,3", "r2,3"]
    assert query_csv(store, "select distinct eval_run from scores", capsys, "--run", "r1") == [
        "eval_run", "r1"]
    assert query_csv(store, "select eval_run from runs order by eval_run", capsys) == [
        "eval_run", "r1", "r2"]


@pytest.mark.parametrize("target", ["run", "store"])
def test_database_stays_usable_by_other_read_only_clients(root: Path, target: str) -> None:
    with duckdb.connect(str(root / target / "eval.duckdb"), read_only=True) as con:
        assert con.execute("select model, n from headline order by model").fetchall() == [
            ("m1", 2), ("m2", 1)]


def test_fetch_frame_gives_the_frame_of_pl() -> None:
    """The Arrow stream that ``rag-eval query`` reads (no pyarrow) gives ``.pl()``'s frame:
    the same dtypes and values for scalars, lists, structs, maps, decimals and times; a type
    polars cannot read (an interval) is polars' error, as through ``.pl()``, not a panic."""
    con = duckdb.connect()
    sql = ("select range as i, range::tinyint as t, 123::hugeint as h, 1.5::decimal(10, 2) as d, "
           "'a' || range as s, null as n, [range, 2] as l, {'x': range, 'y': 'b'} as st, "
           "map {'k': range} as m, date '2024-01-02' as day, "
           "timestamptz '2024-01-02 03:04:05+00' as tz, 2.5::float as f, [[1.5]] as nested, "
           "'ab'::blob as b, range % 2 = 0 as even from range(3)")
    expected = con.sql(sql).pl()
    got = fetch_frame(con.sql(sql))
    assert got.schema == expected.schema
    assert got.equals(expected)
    assert got["st"].to_list()[2] == {"x": 2, "y": "b"}
    empty = fetch_frame(con.sql("select 1 as a where false"))
    assert (empty.height, empty.schema) == (0, pl.Schema({"a": pl.Int32}))
    with pytest.raises(pl.exceptions.ComputeError, match="month_day_nano_interval"):
        fetch_frame(con.sql("select interval 3 day as span"))
