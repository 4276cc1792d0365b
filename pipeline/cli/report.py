"""``rag-eval report``: the self-contained HTML report of a run
(:meth:`pipeline.api.Run.report`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pipeline.api import Run
from pipeline.cli.errors import EXIT_OK
from pipeline.cli.leftovers import remove_leftovers
from pipeline.cli.options import COMMAND_HELP

NAME = "report"
EXAMPLES = """\
  rag-eval report out --out report.html
  rag-eval report new_out --out report.html --compare baseline_out"""


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    rp: argparse.ArgumentParser = subparsers.add_parser(
        NAME, help=COMMAND_HELP[NAME]
    )
    rp.add_argument("dir", type=Path, help="output directory of an evaluate run")
    rp.add_argument("--out", type=Path, required=True, metavar="FILE", help="report.html")
    rp.add_argument("--compare", type=Path, metavar="OTHER_DIR",
                    help="baseline run: add a run comparison section")
    rp.add_argument("--force", action="store_true",
                    help="compare even when the runs' signatures differ")
    return rp


def run(args: argparse.Namespace) -> int:
    remove_leftovers(args)
    report = Run(args.dir).report(args.out, baseline=args.compare, force=args.force)
    print(f"report: {report}")
    return EXIT_OK
