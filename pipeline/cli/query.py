"""``rag-eval query``: one read-only SQL statement over the views of a run or a store (the
function :meth:`pipeline.api.Run.query` runs, with ``--run`` for a store's runs).

It reads through :mod:`pipeline.query` (DuckDB) and prints the rows of the plain column types
without polars (:mod:`pipeline.cli.rows`); polars is imported only for other types, and the view
builder, :mod:`pipeline.views` with the metric registry, only when the database must be
(re)built, so a query of an up-to-date database starts fast (docs/benchmarks.md, start-up)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pipeline.cli.errors import EXIT_ERROR, EXIT_OK, interrupted
from pipeline.cli.options import COMMAND_HELP
from pipeline.cli.rows import print_rows, printable
from pipeline.errors import InputError
from pipeline.query import Builder, fetch_frame, query_relation

NAME = "query"
EXAMPLES = """\
  rag-eval query out "select * from headline"
  rag-eval query out "select id, suggestions from scores limit 5" --format csv
  rag-eval query store "select * from runs" --run all"""


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    qu: argparse.ArgumentParser = subparsers.add_parser(
        NAME, help=COMMAND_HELP[NAME],
        description="Run one read-only SQL statement against the views of DIR. "
        "It reads only the files under DIR and writes nothing: COPY, ATTACH, "
        "INSTALL, LOAD, writes, settings and several statements are refused "
        "with exit 2 (docs/query-security.md).",
    )
    qu.add_argument("dir", type=Path, help="output directory of an evaluate run, or a store")
    qu.add_argument("sql", help='one SQL statement, e.g. "select * from by_model"')
    qu.add_argument("--run", metavar="RUN",
                    help="store: the run every view reads ('all': every committed run; "
                    "default: latest); an unknown or damaged run exits 2, listing the runs")
    qu.add_argument("--format", choices=("table", "csv", "json"), default="table")
    return qu


def view_builder() -> Builder:
    """The builder of :mod:`pipeline.views`, imported now: called only when the views must be
    (re)built."""
    from pipeline import views  # lazy: the metric registry, user metrics and statistics (0.4 s)

    return views.BUILDER


def run(args: argparse.Namespace) -> int:
    try:
        with query_relation(args.dir, args.sql, run=args.run, builder=view_builder) as relation:
            if relation is not None and printable(relation):
                print_rows(relation, args.format)
                return EXIT_OK
            result = fetch_frame(relation)
    except InputError:
        raise
    except Exception as exc:  # DuckDB reports SQL errors with their own exception types
        if interrupted(exc):  # Ctrl-C during the query: exit 130 (pipeline.cli.main)
            raise
        print(f"error: query failed: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print_result(result, args.format)
    return EXIT_OK


def print_result(result: object, fmt: str) -> None:
    """A result of other column types, printed by polars (imported now)."""
    from pipeline.cli.frames import print_frame  # lazy: polars, for these types only

    print_frame(result, fmt)  # type: ignore[arg-type]
