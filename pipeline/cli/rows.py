"""A query's rows on the terminal without polars: the table, CSV and JSON lines that
:func:`pipeline.cli.frames.print_frame` prints for the same result, character for character.

``rag-eval query`` spends most of its start-up importing polars (docs/benchmarks.md,
start-up), so results whose columns are all of the plain types of :data:`PLAIN_TYPES` (text,
integers, doubles, booleans: the views' columns) are printed from DuckDB's rows here; any other
type goes through polars as before (:func:`printable`). ``tests/test_query_rows.py`` checks the
three formats against polars on the views and on every plain type's edge values.
"""

from __future__ import annotations

import json
import math
import sys
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any

import duckdb

#: DuckDB types printed here (the rest go through polars).
PLAIN_TYPES = frozenset({
    "VARCHAR", "BOOLEAN", "DOUBLE", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT",
    "USMALLINT", "UINTEGER", "UBIGINT",
})
#: polars' settings of the query table (:func:`pipeline.cli.frames.print_frame`).
FLOAT_DECIMALS = 4
STRING_LENGTH = 80


def printable(relation: duckdb.DuckDBPyRelation) -> bool:
    """Whether every column of ``relation`` has a type printed here."""
    return all(str(kind) in PLAIN_TYPES for kind in relation.types)


def rows_of(relation: duckdb.DuckDBPyRelation) -> list[tuple[Any, ...]]:
    """The rows of ``relation`` (a relation runs once per fetch: all of them, as polars did)."""
    return relation.fetchall()


def print_rows(relation: duckdb.DuckDBPyRelation, fmt: str) -> None:
    """The rows of ``relation`` (of :func:`printable` types) on stdout as a table, CSV or JSON
    lines."""
    columns = relation.columns
    if fmt == "csv":
        write = sys.stdout.write
        write(",".join(_csv_text(name) for name in columns) + "\n")
        for row in rows_of(relation):
            write(",".join(_csv_cell(value) for value in row) + "\n")
    elif fmt == "json":
        keys = [json.dumps(name, ensure_ascii=False) + ":" for name in columns]
        for row in rows_of(relation):
            fields = (k + _json_value(v) for k, v in zip(keys, row, strict=True))
            sys.stdout.write("{" + ",".join(fields) + "}\n")
    else:
        print(table(columns, ([_table_cell(v) for v in row] for row in rows_of(relation))))


def table(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """Cells in polars' table layout (UTF8_FULL_CONDENSED, shape and dtypes hidden, cells left
    aligned, one space of padding).

    >>> print(table(["model", "n"], [["a", "710"]]))
    ┌───────┬─────┐
    │ model ┆ n   │
    ╞═══════╪═════╡
    │ a     ┆ 710 │
    └───────┴─────┘
    """
    body = [[cell.split("\n") for cell in row] for row in rows]  # a line break: cell lines
    widths = [max([width(name), *(width(part) for row in body for part in row[k])])
              for k, name in enumerate(columns)]

    def lines(cells: Sequence[list[str]]) -> list[str]:
        height = max((len(c) for c in cells), default=1)
        return ["│ " + " ┆ ".join(_padded(c[i] if i < len(c) else "", w)
                                   for c, w in zip(cells, widths, strict=True)) + " │"
                for i in range(height)]

    def rule(left: str, fill: str, cross: str, right: str) -> str:
        return left + cross.join(fill * (w + 2) for w in widths) + right

    return "\n".join([
        rule("┌", "─", "┬", "┐"), *lines([[name] for name in columns]),
        rule("╞", "═", "╪", "╡"), *(line for row in body for line in lines(row)),
        rule("└", "─", "┴", "┘"),
    ])


def width(text: str) -> int:
    """Terminal columns of ``text`` as the table's layout counts them: East Asian wide and
    full-width characters two, combining marks and format characters none, others one.

    >>> width("東京 ok"), width("e\u0301")
    (7, 1)
    """
    return sum(0 if unicodedata.category(c) in ("Mn", "Me", "Cf")
               else 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def _padded(text: str, columns: int) -> str:
    return text + " " * (columns - width(text))


def _table_cell(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _special(value) or _fixed(value)
    text = str(value)
    return text if len(text) <= STRING_LENGTH else text[:STRING_LENGTH] + "…"


def _fixed(value: float) -> str:
    """``value`` with :data:`FLOAT_DECIMALS` decimals as polars' table shows it: positional
    while the part before the point (sign included) has at most 14 characters, else
    scientific.

    >>> _fixed(0.48337), _fixed(-9.99e12), _fixed(1e14), _fixed(-1e13)
    ('0.4834', '-9990000000000.0000', '1.0000e14', '-1.0000e13')
    """
    text = f"{value:.{FLOAT_DECIMALS}f}"
    if len(text) - FLOAT_DECIMALS - 1 <= 14:
        return text
    mantissa, exponent = f"{value:.{FLOAT_DECIMALS}e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _special(value: float) -> str | None:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return None


def _csv_cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _special(value) or _shortest(value)
    if isinstance(value, int):
        return str(value)
    return _csv_text(str(value))


def _csv_text(text: str) -> str:
    """A text field, quoted where it holds a comma, a quote or a line break, or is empty."""
    if not text or any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def _shortest(value: float) -> str:
    """The shortest digits that read back as ``value`` (Python's ``repr``) written as polars
    writes a float: positional from 1e-5 up to 1e16 (``0.00005``, ``3.0``), else scientific
    (``1e-6``, ``1.5e+16``).

    >>> [_shortest(v) for v in (0.00005, 3.0, 1e-6, 1.5e16, -0.0, 1234.5)]
    ['0.00005', '3.0', '1e-6', '1.5e+16', '-0.0', '1234.5']
    """
    sign = "-" if math.copysign(1.0, value) < 0 else ""
    mantissa, _, exponent = repr(abs(value)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = whole + fraction
    point = len(whole) + int(exponent or 0)  # where the point falls in ``digits``
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0")
    if not digits:
        return f"{sign}0.0"
    power = point - 1
    if -5 <= power < 16:
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return f"{sign}{digits}{'0' * (point - len(digits))}.0"
        return f"{sign}{digits[:point]}.{digits[point:]}"
    tail = f".{digits[1:]}" if len(digits) > 1 else ""
    return f"{sign}{digits[0]}{tail}e{'+' if power > 0 else ''}{power}"


def _json_value(value: object) -> str:
    """A JSON value as polars' JSON lines write it (NaN and infinities as null)."""
    if isinstance(value, float):
        return "null" if _special(value) else _shortest(value)
    return json.dumps(value, ensure_ascii=False)
