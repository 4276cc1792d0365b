"""``rag-eval evaluate``: score records into an output directory or a results store, print the
run's line, its rejection reasons and the headline (through :func:`pipeline.api.evaluate`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from pipeline import api
from pipeline.cli.errors import EXIT_OK, EXIT_REJECTED, print_error
from pipeline.cli.flags import (
    add_inputs,
    add_stats_options,
    config_from_args,
    input_rows,
    require_inputs,
)
from pipeline.cli.headline import HEADLINE_QUERIES, print_headline, print_rejections
from pipeline.cli.leftovers import remove_leftovers
from pipeline.cli.options import COMMAND_HELP, fraction, positive, seconds
from pipeline.cli.progress import progress_bars
from pipeline.cli.validate import add_keep_columns, with_keep_columns
from pipeline.config import Config, ConfigError
from pipeline.io.atomic import OutputPathError, check_output_dir, check_output_file
from pipeline.phases import phase

NAME = "evaluate"
EXAMPLES = """\
  rag-eval evaluate --input runs/answers.jsonl --out out
  rag-eval evaluate --input gpt4o.csv --model gpt-4o --input llama.csv --model llama-3 --out out
  rag-eval evaluate --input ragas.parquet --model m1 --out out   # RAGAS / HF datasets export
  rag-eval evaluate --input data.csv --column response=answer --column id=qid --out out
  rag-eval evaluate --input a.parquet --out out --report report.html
  rag-eval evaluate --input labelled.csv --out out --keep-columns label   # slice by label
  rag-eval evaluate --input a.parquet --store store --run-id baseline
  rag-eval -v evaluate --input a.jsonl --out out --metrics answer,citation   # with info logs"""


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    ev: argparse.ArgumentParser = subparsers.add_parser(
        NAME, help=COMMAND_HELP[NAME]
    )
    add_inputs(ev)
    add_keep_columns(ev)
    target = ev.add_mutually_exclusive_group(required=True)
    target.add_argument("--out", type=Path, help="output directory of this run")
    target.add_argument("--store", type=Path, metavar="DIR",
                        help="results store: add this run to it (docs/results-store.md)")
    ev.add_argument("--run-id", metavar="NAME",
                    help="name of the run in the store (default: UTC start time + random)")
    ev.add_argument("--force", action="store_true",
                    help="store: score every row again instead of reusing unchanged rows")
    ev.add_argument("--lock-wait", type=seconds, default=0.0, metavar="SECONDS",
                    help="store: wait this long for another run's lock (default 0: fail at once)")
    ev.add_argument("--engine", choices=("local", "spark"), default="local",
                    help="local (default, streaming on this machine) or spark (with --store)")
    ev.add_argument("--spark-master", default="local[2]", metavar="URL",
                    help="Spark master for --engine spark (default local[2])")
    ev.add_argument("--no-stats", action="store_true",
                    help="skip bootstrap intervals and paired comparisons (docs/statistics.md)")
    ev.add_argument("--stats-by", action="append", default=[], metavar="COLUMN[,COLUMN...]",
                    help="also intervals and comparisons per these columns, e.g. "
                         "question_type,noise_level (repeatable; as `rag-eval stats --by`)")
    ev.add_argument("--metrics", help="comma-separated metric or family names (default: all)")
    ev.add_argument("--batch-rows", type=positive, default=None,
                    help="most rows scored per batch (fewer for long texts)")
    ev.add_argument("--max-rejected", type=fraction, metavar="FRACTION",
                    help="exit 1 when more than this share (0 to 1) of the rows read is "
                         "rejected (default: no limit; a run that scores no row always exits "
                         "1); the outputs are written either way, to inspect")
    ev.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    ev.add_argument("--wide", action="store_true",
                    help="print every headline column (default: the most important ones that "
                         "fit the terminal's width, COLUMNS or 100)")
    ev.add_argument("--embedding-backend", metavar="SPEC",
                    help="minilm (default), static (fast screening, docs/embeddings.md), hashed, "
                         "or sentence-transformers:<name or path>")
    ev.add_argument("--cache-dir", type=Path, metavar="DIR",
                    help="embedding cache (default: $XDG_CACHE_HOME/rag-eval/embeddings)")
    add_stats_options(ev)
    ev.add_argument("--report", type=Path, metavar="FILE",
                    help="also write the HTML report to FILE")
    return ev


def run(args: argparse.Namespace) -> int:
    remove_leftovers(args)
    require_inputs(args)
    config = with_keep_columns(config_from_args(args), args)
    if args.cache_dir is not None:
        check_output_dir(args.cache_dir)
    elif (cache := config.embedding_cache_dir) is not None and cache.is_file():
        raise OutputPathError(f"{cache} is a file, not a directory (the embedding cache: "
                              "[embedding] cache_dir)")
    if args.engine == "spark" or args.store is not None:
        return _evaluate_store(args, config)
    if args.run_id or args.force or args.lock_wait:
        raise ConfigError("--run-id, --force and --lock-wait apply to --store runs only")
    if args.report is not None:  # before the run, which checks --out itself
        check_output_file(args.report)
    with progress_bars(args.no_progress, input_rows(args)) as progress:
        done = api.evaluate(
            args.input, args.out, config=config, pairs=[tuple(p) for p in args.pair],
            batch_rows=args.batch_rows, on_progress=progress, resamples=args.resamples,
            seed=args.seed, stats=not args.no_stats, stats_by=args.stats_by,
            queries=HEADLINE_QUERIES,
        )
    counts = done.counts
    print(
        f"read {counts.read} rows: scored {counts.scored}, rejected {counts.rejected} "
        f"-> {done.path}"
    )
    if counts.rejected:
        print_rejections(done.rejected_files)
    print_headline(done.path, wide=args.wide, frames=done.answers)
    if args.report is not None:
        with phase("report"):
            report = done.report(args.report)
        print(f"\nreport: {report}")
    return _outcome(args, counts.read, counts.scored, counts.rejected)


def _evaluate_store(args: argparse.Namespace, config: Config) -> int:
    if args.store is None:
        raise ConfigError("--engine spark writes a results store: give --store DIR")
    if args.report is not None:
        raise ConfigError("--report needs an --out directory; for a store run use "
                          "`rag-eval report` on an --out run")
    check_output_dir(args.store)
    if args.engine == "spark":
        if args.pair:
            raise ConfigError("--engine spark reads Parquet --input files only, not --pair")
        if config.input_labels:
            raise ConfigError("--model and --run-label apply to the local engine; with "
                              "--engine spark give the files a model (or run) column")
        if args.stats_by:
            raise ConfigError("--stats-by needs statistics, which --engine spark runs do not "
                              "write; run `rag-eval stats` on a checkout of the run")
        done = api.evaluate(
            args.input, store=args.store, config=config, engine="spark",
            spark_master=args.spark_master, run_id=args.run_id, lock_wait=args.lock_wait,
            force=args.force,
        )
    else:
        with progress_bars(args.no_progress, input_rows(args)) as progress:
            done = api.evaluate(
                args.input, store=args.store, config=config, run_id=args.run_id,
                force=args.force, lock_wait=args.lock_wait, pairs=[tuple(p) for p in args.pair],
                batch_rows=args.batch_rows, on_progress=progress, resamples=args.resamples,
                seed=args.seed, stats=not args.no_stats, stats_by=args.stats_by,
            )
    counts = done.counts
    print(
        f"run {done.run_id}: read {counts.read} rows: scored {counts.scored}, "
        f"reused {counts.reused}, rejected {counts.rejected} -> {done.path}"
    )
    if counts.rejected:
        print_rejections(done.rejected_files)
    print_headline(args.store, wide=args.wide)
    return _outcome(args, counts.read, counts.scored + counts.reused, counts.rejected)


def _outcome(args: argparse.Namespace, n_read: int, n_results: int, n_rejected: int) -> int:
    """EXIT_REJECTED (with one line on stderr) when a run has no row with scores
    (``n_results``) or rejected more than ``--max-rejected`` of the rows it read."""
    if n_results == 0:
        failure = f"no row was scored ({n_rejected} of {n_read} rows rejected)"
    elif args.max_rejected is not None and n_rejected / n_read > args.max_rejected:
        failure = (
            f"{n_rejected} of {n_read} rows rejected ({n_rejected / n_read:.2%}), more than "
            f"--max-rejected {args.max_rejected:g}"
        )
    else:
        return EXIT_OK
    print_error(args, f"{failure}; the outputs are written")
    return EXIT_REJECTED
