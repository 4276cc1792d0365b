"""``rag-eval validate``: read and validate input files without scoring them."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

from pipeline.cli.errors import EXIT_OK, EXIT_REJECTED
from pipeline.cli.flags import add_inputs, config_from_args, require_inputs
from pipeline.cli.frames import print_frame
from pipeline.cli.options import COMMAND_HELP
from pipeline.config import Config
from pipeline.validate import load_inputs

NAME = "validate"
EXAMPLES = """\
  rag-eval validate --input runs/answers.jsonl
  rag-eval validate --input ragas.csv --model m1 --column reference=gold
  rag-eval validate --input labelled.csv --keep-columns label"""


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    va: argparse.ArgumentParser = subparsers.add_parser(
        NAME, help=COMMAND_HELP[NAME]
    )
    add_inputs(va)
    add_keep_columns(va)
    return va


def column_names(value: str) -> tuple[str, ...]:
    """``--keep-columns`` as column names: comma-separated, blanks around each ignored; an
    empty value names none.

    >>> column_names("label, topic"), column_names("")
    (('label', 'topic'), ())
    """
    return tuple(name for name in (item.strip() for item in value.split(",")) if name)


def add_keep_columns(p: argparse.ArgumentParser) -> None:
    """``--keep-columns``, for the commands that read inputs (``evaluate``, ``validate``)."""
    p.add_argument("--keep-columns", type=column_names, default=None, metavar="NAME[,NAME...]",
                   help="the inputs' other columns (no canonical column reads them: a "
                        "`label`) to carry into texts.parquet and the texts view; an empty "
                        "value keeps none (default: the config's [columns] keep, else all; "
                        "docs/input-formats.md)")


def with_keep_columns(config: Config, args: argparse.Namespace) -> Config:
    """``config`` with ``--keep-columns`` over its ``[columns] keep`` (as given, when given)."""
    if args.keep_columns is None:
        return config
    return replace(config, keep_columns=args.keep_columns)


def run(args: argparse.Namespace) -> int:
    require_inputs(args)
    config = with_keep_columns(config_from_args(args), args)
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
