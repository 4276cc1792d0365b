"""``rag-eval metrics``: the registered metrics, as a table or the docs' Markdown."""

from __future__ import annotations

import argparse
from typing import Any

import polars as pl

from pipeline.cli.common import EXIT_OK, print_frame
from pipeline.metrics.registry import REGISTRY, markdown_table

NAME = "metrics"
EXAMPLES = """\
  rag-eval metrics
  rag-eval metrics --format markdown"""


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    me: argparse.ArgumentParser = subparsers.add_parser(NAME, help="list the registered metrics")
    me.add_argument("--format", choices=("table", "markdown"), default="table")
    return me


def run(args: argparse.Namespace) -> int:
    if args.format == "markdown":
        print(markdown_table())
        return EXIT_OK
    table = pl.DataFrame(
        {
            "metric": list(REGISTRY),
            "family": [s.family for s in REGISTRY.values()],
            "dtype": [str(s.dtype) for s in REGISTRY.values()],
            "description": [s.description for s in REGISTRY.values()],
        }
    )
    print_frame(table, "table")
    return EXIT_OK
