"""``rag-eval compare``: run B against baseline run A, with the regression gate
(:meth:`pipeline.api.Run.compare`)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.api import Run, check_gate_metrics
from pipeline.cli.common import (
    EXIT_GATE,
    EXIT_OK,
    add_stats_options,
    non_negative,
    print_frame,
    print_text_table,
    readable,
)
from pipeline.compare import DEFAULT_MAX_DROP
from pipeline.config import ConfigError
from pipeline.io.atomic import check_output_dir

NAME = "compare"
EXAMPLES = """\
  rag-eval compare baseline_out new_out
  rag-eval compare baseline_out new_out --max-drop answer_f1=0.01 --max-regressed-items 5"""
#: Metrics ``compare`` prints (every metric is in its Parquet output).
HEADLINE_DELTAS = ("answer_em", "answer_f1", "citation_f1_macro", "faithfulness", "overlap",
                   "abstain_rate", "rgb_correct")


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    co: argparse.ArgumentParser = subparsers.add_parser(
        NAME, help="compare run B against baseline run A; gate regressions"
    )
    co.add_argument("run_a", type=Path, help="baseline run directory")
    co.add_argument("run_b", type=Path, help="new run directory")
    co.add_argument("--out", type=Path, metavar="DIR",
                    help="write deltas and item lists as Parquet here (default: RUN_B/compare)")
    co.add_argument("--max-drop", action="append", default=[], metavar="METRIC=X",
                    help="gate: fail when a model's mean METRIC falls by more than X with its "
                         "95%% interval below 0; METRIC is a built-in metric or a user-defined "
                         "metric both runs scored (repeatable; default: "
                         + ", ".join(f"{m}={x:g}" for m, x in DEFAULT_MAX_DROP.items()) + ")")
    co.add_argument("--max-regressed-items", type=non_negative, metavar="N",
                    help="gate: fail when more than N items regressed")
    co.add_argument("--force", action="store_true",
                    help="compare even when the runs' signatures differ")
    add_stats_options(co)
    return co


def max_drops(items: list[str]) -> dict[str, float]:
    """``--max-drop METRIC=X`` entries as a mapping (the default gate without any). Which
    names the gate knows depends on the runs (:func:`pipeline.api.check_gate_metrics`)."""
    drops = dict(DEFAULT_MAX_DROP)
    if items:
        drops = {}
        for item in items:
            metric, sep, value = item.partition("=")
            try:
                drops[metric.strip()] = float(value)
            except ValueError:
                sep = ""
            if not sep or not metric.strip() or not math.isfinite(drops[metric.strip()]):
                raise ConfigError(f"--max-drop expects METRIC=NUMBER (a finite number), got "
                                  f"{item!r}")
    return drops


def run(args: argparse.Namespace) -> int:
    out = check_output_dir(args.out or args.run_b / "compare")  # before the gate's flags
    drops = max_drops(args.max_drop)
    run_b = Run(args.run_b)
    check_gate_metrics(drops, run_b, Run(args.run_a), what="--max-drop")
    comparison, passed = run_b.compare(
        args.run_a, max_drop=drops,
        max_regressed_items=args.max_regressed_items, force=args.force,
        resamples=args.resamples, seed=args.seed, out=out,
    )
    overall = comparison.deltas.filter(pl.col("slice") == "all")
    headline = overall.filter(pl.col("metric").is_in(list(HEADLINE_DELTAS))).sort("model", "metric")
    print(f"{comparison.n_compared} items compared (same id, model, noise level and task in "
          "both runs)")
    print_text_table(readable(headline.select(
        "model", "metric", "n_pairs", "mean_a", "mean_b", "delta", "ci_low", "ci_high",
        "p_adjusted",
    )))
    print(
        f"{comparison.regressed.select('id', 'model', 'noise_level', 'task').unique().height} "
        f"items regressed, {comparison.new_items.height} new, "
        f"{comparison.missing_items.height} missing -> {out}"
    )
    if comparison.regressed.height:
        print_frame(comparison.regressed.head(20), "table")
    if not passed:
        print("regression gate FAILED:\n  " + "\n  ".join(comparison.failures))
        return EXIT_GATE
    print("regression gate passed")
    return EXIT_OK
