"""``rag-eval export``: the per-row results with their texts as one table
(:meth:`pipeline.api.Run.export`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pipeline.api import Run
from pipeline.cli.errors import EXIT_OK
from pipeline.cli.leftovers import remove_leftovers
from pipeline.cli.options import COMMAND_HELP

NAME = "export"
EXAMPLES = """\
  rag-eval export out
  rag-eval export out --format csv --out results.csv"""


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    ex: argparse.ArgumentParser = subparsers.add_parser(
        NAME, help=COMMAND_HELP[NAME]
    )
    ex.add_argument("dir", type=Path, help="output directory of an evaluate run")
    ex.add_argument("--format", choices=("tsv", "csv", "parquet"), default="tsv")
    ex.add_argument("--out", type=Path, help="target file (default: DIR/export.FORMAT)")
    ex.add_argument("--layout", choices=("wide", "enhanced-framework"), default="wide",
                    help="wide: every column of the run (default); enhanced-framework: the "
                         "51-column TSV of the enhanced text evaluation framework "
                         "(docs/compat.md)")
    ex.add_argument("--no-neutralize-formulas", dest="neutralize_formulas",
                    action="store_false",
                    help="csv/tsv: write text cells that start with = + - @ tab or carriage "
                         "return unchanged (default: put ' before them so a spreadsheet shows "
                         "them as text instead of running them as formulas)")
    return ex


def run(args: argparse.Namespace) -> int:
    remove_leftovers(args)
    target = args.out or args.dir / f"export.{args.format}"
    rows = Run(args.dir).export(target, format=args.format, layout=args.layout,
                                neutralize_formulas=args.neutralize_formulas)
    print(f"wrote {rows} rows to {target}")
    return EXIT_OK
