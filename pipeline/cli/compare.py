"""``rag-eval compare``: run B against baseline run A, with the regression gate
(:meth:`pipeline.api.Run.compare`)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.api import Run, check_gate_metrics
from pipeline.cli.errors import EXIT_GATE, EXIT_OK
from pipeline.cli.flags import add_stats_options
from pipeline.cli.frames import print_text_table, readable, terminal_width
from pipeline.cli.leftovers import remove_leftovers
from pipeline.cli.options import COMMAND_HELP, non_negative, non_negative_float
from pipeline.compare import DEFAULT_ITEM_DROP, DEFAULT_MAX_DROP
from pipeline.config import ConfigError
from pipeline.io.atomic import check_output_dir
from pipeline.stats import metric_name

NAME = "compare"
EXAMPLES = """\
  rag-eval compare baseline_out new_out
  rag-eval compare baseline_out new_out --max-drop answer_f1=0.01 --max-regressed-items 5"""
#: Metrics ``compare`` prints (every metric is in its Parquet output), besides the gated ones.
HEADLINE_DELTAS = ("answer_em", "answer_f1", "citation_f1_macro", "faithfulness", "overlap",
                   "abstain_rate", "rgb_correct")
#: Regressed items printed at most (largest drops first; the Parquet file has them all).
ITEMS_SHOWN = 20
#: Characters of a text printed with a regressed item (the terminal's width, at most this).
TEXT_CHARS = 160


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    co: argparse.ArgumentParser = subparsers.add_parser(
        NAME, help=COMMAND_HELP[NAME]
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
    co.add_argument("--item-drop", type=non_negative_float, default=DEFAULT_ITEM_DROP,
                    metavar="X",
                    help="an item regressed in a metric (a score or 0/1 flag with a better "
                         "direction, user metrics too) that fell by more than X in that "
                         f"direction (default {DEFAULT_ITEM_DROP:g}: a flag 1 -> 0, an F1 "
                         "0.33 -> 0.25; 0: any drop)")
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
    remove_leftovers(args)
    out = check_output_dir(args.out or args.run_b / "compare")  # before the gate's flags
    drops = max_drops(args.max_drop)
    run_b = Run(args.run_b)
    check_gate_metrics(drops, run_b, Run(args.run_a), what="--max-drop")
    comparison, passed = run_b.compare(
        args.run_a, max_drop=drops,
        max_regressed_items=args.max_regressed_items, force=args.force,
        resamples=args.resamples, seed=args.seed, out=out, item_drop=args.item_drop,
    )
    overall = comparison.deltas.filter(pl.col("slice") == "all")
    shown = [*HEADLINE_DELTAS, *(metric_name(m) for m in drops if metric_name(m) not in
                                 HEADLINE_DELTAS)]
    headline = overall.filter(pl.col("metric").is_in(shown)).sort("model", "metric")
    print(f"{comparison.n_compared} items compared (same id, model, noise level and task in "
          "both runs)")
    print_text_table(readable(headline.select(
        "model", "metric", "n_pairs", "mean_a", "mean_b", "delta", "ci_low", "ci_high",
        "p_adjusted",
    )))
    regressed = comparison.regressed
    n_items = regressed.select("id", "model", "noise_level", "task").unique().height
    print(
        f"{n_items} items regressed (a metric fell by more than {args.item_drop:g}), "
        f"{comparison.new_items.height} new, {comparison.missing_items.height} missing -> {out}"
    )
    for line in regressed_lines(regressed, width=min(terminal_width(), TEXT_CHARS)):
        print(line)
    if not passed:
        print("regression gate FAILED:\n  " + "\n  ".join(comparison.failures))
        return EXIT_GATE
    print("regression gate passed")
    return EXIT_OK


def regressed_lines(regressed: pl.DataFrame, *, width: int = TEXT_CHARS,
                    limit: int = ITEMS_SHOWN) -> list[str]:
    """The regressed items for reading, the largest drop first: per item its key, each metric
    that fell (before -> after), then the question, reference and both responses cut to
    ``width`` characters; at most ``limit`` items, then a line saying how many more.

    >>> frame = pl.DataFrame({"id": ["q1"], "model": ["m"], "noise_level": [None],
    ...     "task": [None], "metric": ["answer_f1"], "before": [1.0], "after": [0.25],
    ...     "drop": [0.75], "question": ["When was it built?"], "reference": ["1889"],
    ...     "response_a": ["In 1889."], "response_b": ["In 1899."]})
    >>> for line in regressed_lines(frame):
    ...     print(line)
    <BLANKLINE>
    q1  model m
      answer_f1 1.000 -> 0.250
      question:   When was it built?
      reference:  1889
      response A: In 1889.
      response B: In 1899.
    """
    if regressed.height == 0:
        return []
    key = ["id", "model", "noise_level", "task"]
    items = regressed.group_by(key, maintain_order=True).agg(
        pl.col("drop").max().alias("_worst"),
        pl.col("metric", "before", "after"),
        pl.col("question", "reference", "response_a", "response_b").first(),
    ).sort("_worst", "model", "id", descending=[True, False, False], nulls_last=True)
    lines: list[str] = []
    for item in items.head(limit).iter_rows(named=True):
        where = f"{item['id']}  model {item['model']}"
        if item["noise_level"] is not None:
            where += f"  noise {item['noise_level']:g}"
        if item["task"] is not None:
            where += f"  task {item['task']}"
        lines += ["", where]
        lines += [f"  {metric} {before:.3f} -> {after:.3f}"
                  for metric, before, after in zip(item["metric"], item["before"],
                                                   item["after"], strict=True)]
        for label, name in (("question:  ", "question"), ("reference: ", "reference"),
                            ("response A:", "response_a"), ("response B:", "response_b")):
            if item[name] is not None:
                lines.append(clip(f"  {label} {one_line(item[name])}", width))
    if items.height > limit:
        lines += ["", f"(+{items.height - limit} more regressed items in "
                      "regressed_items.parquet)"]
    return lines


def one_line(text: str) -> str:
    """``text`` with its runs of white space (line breaks too) as one space."""
    return " ".join(text.split())


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters, the last one an ellipsis when cut.

    >>> clip("abcdef", 4), clip("abc", 4)
    ('abc…', 'abc')
    """
    return text if len(text) <= width else text[: width - 1] + "…"
