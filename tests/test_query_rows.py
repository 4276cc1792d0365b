"""``rag-eval query`` prints plain-typed results without polars (pipeline.cli.rows): the same
table, CSV and JSON lines as polars prints for the same result (pipeline.cli.frames), on the
edge values of every plain type, and polars is not imported for them."""

from __future__ import annotations

import subprocess
import sys

import duckdb
import pytest

from pipeline.cli.frames import print_frame
from pipeline.cli.rows import PLAIN_TYPES, print_rows, printable
from pipeline.query import fetch_frame

TEXTS = ["'plain'", "''", "'a,b'", "'say \"hi\"'", "'line' || chr(10) || 'break'",
         "repeat('x', 79)", "repeat('y', 80)", "repeat('z', 81)", "'é東京 ok'", "' padded '",
         "'e' || chr(769) || 'x'", "'ａｂ'", "'x' || chr(8203) || 'y'", "'tab' || chr(9) || 'x'",
         "cast(null as varchar)"]
DOUBLES = ["0.1", "1.0", "-0.0", "1e-7", "2.5e-5", "0.00005", "0.00015", "1e16", "1.5e300",
           "123456.789", "-3.25", "'nan'::double", "'inf'::double", "'-inf'::double", "null",
           "1/3", "2/3", "1e-5", "1e-6", "1.2345e-7", "1e15", "123456789012345678.0", "5e-324",
           "-9.99e12", "99999999999999.0", "-99999999999999.0", "1e13", "-1e13"]
INTEGERS = ["0", "-5", "4611686018427387904", "null"]
BOOLEANS = ["true", "false", "cast(null as boolean)"]

STATEMENTS = [
    *(f"select {v} as text_value" for v in TEXTS),
    *(f"select cast({v} as double) as d" for v in DOUBLES),
    *(f"select cast({v} as bigint) as n" for v in INTEGERS),
    *(f"select {v} as flag" for v in BOOLEANS),
    *(f"select cast(7 as {t}) as x" for t in ("tinyint", "smallint", "integer", "utinyint",
                                               "usmallint", "uinteger", "ubigint")),
    "select 'atlas-7b' as model, 710 as n, 0.48337::double as answer_f1, "
    "null::double as p50_latency_ms, true as ok union all select 'b', 12, null, 3.5, false",
    "select * from range(3) where range > 5",  # no rows
    "select range as a_much_longer_column_name, range * 0.5::double as x from range(4)",
]


@pytest.mark.parametrize("fmt", ["table", "csv", "json"])
@pytest.mark.parametrize("sql", STATEMENTS)
def test_plain_results_print_as_polars_prints_them(sql: str, fmt: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    with duckdb.connect() as con:
        relation = con.sql(sql)
        assert printable(relation), relation.types
        print_rows(relation, fmt)
        ours = capsys.readouterr().out
        print_frame(fetch_frame(con.sql(sql)), fmt)
        assert ours == capsys.readouterr().out


def test_other_types_are_left_to_polars() -> None:
    with duckdb.connect() as con:
        for sql in ("select [1, 2] as l", "select {'a': 1} as s", "select 1.5::float as f",
                    "select date '2026-11-28' as d", "select 1.50::decimal(5, 2) as m",
                    "select now() as t"):
            relation = con.sql(sql)
            assert not printable(relation), sql
            assert str(relation.types[0]) not in PLAIN_TYPES


def test_a_plain_query_does_not_import_polars(tmp_path, capsys) -> None:
    """The start-up of ``rag-eval query`` (docs/benchmarks.md) has no polars in it."""
    out = tmp_path / "out"
    out.mkdir()
    code = (
        "import sys, duckdb\n"
        "from pipeline.cli.rows import print_rows\n"
        "print_rows(duckdb.sql('select 1 as n, 0.5::double as x'), 'table')\n"
        "import pipeline.cli.query\n"
        "assert 'polars' not in sys.modules, 'polars imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "0.5000" in done.stdout


def test_binary_columns_are_hex_text_in_csv(capsys: pytest.CaptureFixture[str]) -> None:
    """A view's ``row_hash`` (binary) goes through polars; CSV holds it as hex text."""
    with duckdb.connect() as con:
        relation = con.sql("select '\\xAB\\x01'::blob as row_hash, 1 as n")
        assert not printable(relation)
        print_frame(fetch_frame(relation), "csv")
    assert capsys.readouterr().out == "row_hash,n\nab01,1\n"
