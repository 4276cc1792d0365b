"""``rag-eval stats``: recompute a run's bootstrap intervals and paired model comparisons
(:meth:`pipeline.api.Run.stats`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pipeline.api import Run
from pipeline.cli.errors import EXIT_OK
from pipeline.cli.flags import add_stats_options
from pipeline.cli.leftovers import remove_leftovers
from pipeline.cli.options import COMMAND_HELP

NAME = "stats"
EXAMPLES = """\
  rag-eval stats out --by question_type,noise_level
  rag-eval stats out --resamples 2000 --seed 7"""


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    st: argparse.ArgumentParser = subparsers.add_parser(
        NAME, help=COMMAND_HELP[NAME],
        description="Recompute intervals.parquet and comparisons.parquet of DIR: per model over "
        "all rows, each noise level and category (comparisons: also each RGB task), plus each "
        "--by slice, and rebuild its views (docs/statistics.md).",
        epilog="example: rag-eval stats out --by question_type,noise_level, then rag-eval "
        "query out \"select model, mean, ci_low, ci_high from intervals where question_type = "
        "'multi-hop' and noise_level = 0.4 and metric = 'answer_f1' order by mean desc\"",
    )
    st.add_argument("dir", type=Path, help="output directory of an evaluate run")
    st.add_argument("--by", action="append", default=[], metavar="COLUMN[,COLUMN...]",
                    help="also a slice of these columns of the scores, e.g. "
                         "question_type,noise_level (repeatable: one slice each)")
    add_stats_options(st)
    return st


def run(args: argparse.Namespace) -> int:
    remove_leftovers(args)
    summary = Run(args.dir).stats(by=args.by, resamples=args.resamples, seed=args.seed).summary
    assert summary is not None  # an output directory's statistics are written
    print(
        f"{summary.intervals} intervals -> {summary.intervals_path}\n"
        f"{summary.comparisons} paired comparisons ({summary.significant} significant after "
        f"Holm) -> {summary.comparisons_path}\n"
        f"slices: {'; '.join(summary.slices)}\n"
        f"resamples {summary.resamples}, seed {summary.seed}"
    )
    return EXIT_OK
