"""Quoting for SQL text built by the package (DuckDB and Spark SQL share these rules)."""

from __future__ import annotations

from pathlib import Path


def sql_string(text: str) -> str:
    """``text`` as the body of a single-quoted SQL literal (quotes doubled).

    >>> sql_string("it's")
    "it''s"
    """
    return text.replace("'", "''")


def sql_literal(text: str | Path) -> str:
    """``text`` (or a path) as a single-quoted SQL literal.

    >>> sql_literal("a'b")
    "'a''b'"
    """
    return f"'{sql_string(str(text))}'"


def sql_identifier(name: str) -> str:
    '''``name`` as a double-quoted SQL identifier.

    >>> print(sql_identifier('say "hi"'))
    "say ""hi"""
    '''
    return '"' + name.replace('"', '""') + '"'
