"""``rag-eval validate``: read and validate input files without scoring them."""

from __future__ import annotations

import argparse
from typing import Any

from pipeline.cli.base import COMMAND_HELP
from pipeline.cli.common import (
    EXIT_OK,
    EXIT_REJECTED,
    add_inputs,
    config_from_args,
    print_frame,
    require_inputs,
)
from pipeline.validate import load_inputs

NAME = "validate"
EXAMPLES = """\
  rag-eval validate --input runs/answers.jsonl
  rag-eval validate --input ragas.csv --model m1 --column reference=gold"""


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    va: argparse.ArgumentParser = subparsers.add_parser(
        NAME, help=COMMAND_HELP[NAME]
    )
    add_inputs(va)
    return va


def run(args: argparse.Namespace) -> int:
    require_inputs(args)
    config = config_from_args(args)
    validated = load_inputs(args.input, [tuple(p) for p in args.pair], config)
    print(
        f"read {validated.n_read} rows: {validated.records.height} valid, "
        f"{validated.rejected.height} would be rejected"
    )
    if validated.rejected.height:
        reasons = (
            validated.rejected.group_by("source", "reason")
            .len("rows")
            .sort("rows", descending=True)
        )
        print_frame(reasons, "table")
        return EXIT_REJECTED
    return EXIT_OK
