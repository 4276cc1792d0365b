"""``rag-eval checkout``: copy a run of a results store into an output directory (the function
:meth:`pipeline.api.Run.checkout` calls)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pipeline.cli.errors import EXIT_OK
from pipeline.cli.leftovers import remove_leftovers
from pipeline.cli.options import COMMAND_HELP
from pipeline.store import checkout_run

NAME = "checkout"
EXAMPLES = """\
  rag-eval checkout store --out run1
  rag-eval checkout store --run 20240101T120000Z-ab12 --out run1"""


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    co: argparse.ArgumentParser = subparsers.add_parser(
        NAME, help=COMMAND_HELP[NAME]
    )
    co.add_argument("store", type=Path, help="results store (evaluate --store)")
    co.add_argument("--run", metavar="RUN", help="the run (default: the latest); DIR then holds "
                    "this run whole, or the earlier one if the checkout fails")
    co.add_argument("--out", required=True, type=Path, help="output directory to write")
    return co


def run(args: argparse.Namespace) -> int:
    remove_leftovers(args)
    done = checkout_run(args.store, args.run, args.out)
    print(f"run {done.run_id} of {args.store} checked out -> {done.out_dir}")
    return EXIT_OK
