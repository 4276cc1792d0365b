"""Temporary files that killed processes left behind: removed from the directories a command
writes into before it writes (:func:`pipeline.io.atomic.remove_stale`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pipeline.cli.errors import output_target
from pipeline.io.atomic import remove_stale


def remove_leftovers(args: argparse.Namespace) -> list[Path]:
    """Remove the temporary files that killed processes left in the directories this command
    writes into (:func:`pipeline.io.atomic.remove_stale`); ``evaluate`` and the store do it
    for their own directories."""
    directories: list[Path] = []
    target = output_target(args)
    if args.command in ("export", "report", "ingest-rgb") and target is not None:
        directories.append(target.parent)
    elif args.command in ("checkout", "compare", "stats") and target is not None:
        directories.append(target)
    if args.command == "compare" and args.out is None:
        directories.append(Path(args.run_b) / "compare")
    report = getattr(args, "report", None)
    if args.command == "evaluate" and isinstance(report, Path):
        directories.append(report.parent)
    removed: list[Path] = []
    for directory in directories:
        removed += remove_stale(directory)
    return removed
