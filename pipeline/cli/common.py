"""What the commands share: exit codes, argument pieces, the configuration from flags, progress
bars and printing frames, the headline and rejection reasons."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl
from tqdm import tqdm

# The light pieces (exit codes, argument types, errors, stdout) and the frame printers live in
# base and frames, which ``query`` uses without this module; re-exported for the commands.
from pipeline.cli.base import (  # noqa: F401
    EXIT_BUSY,
    EXIT_ERROR,
    EXIT_GATE,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REJECTED,
    AppendSource,
    HelpFormatter,
    Label,
    environment_error,
    finite,
    flush_standard_streams,
    fraction,
    interrupted,
    non_negative,
    non_negative_float,
    output_target,
    positive,
    print_error,
    seconds,
    tolerate_closed_stdout,
)
from pipeline.cli.frames import (  # noqa: F401
    ONE_DECIMAL_COLUMNS,
    PERCENT_COLUMNS,
    fit_columns,
    json_nested,
    print_fitted,
    print_frame,
    print_text_table,
    readable,
    say,
    terminal_width,
)
from pipeline.config import Config, ConfigError, load_config
from pipeline.drivers import rejection_reasons
from pipeline.io.atomic import remove_stale
from pipeline.io.readers import record_count
from pipeline.metrics.user import load_plugins
from pipeline.metrics.user import resolve as resolve_metrics
from pipeline.stats import DEFAULT_RESAMPLES, DEFAULT_SEED
from pipeline.views import HEADLINE_NOTES, headline_columns, query_views

log = logging.getLogger("pipeline")

#: Kinds of rejection reason the line of an ``evaluate`` run lists, most rows first.
TOP_REASONS = 5

#: Printed under the headline table when it shows faithfulness: what its numbers mean.
FAITHFULNESS_NOTE = (
    "faithfulness: the share of a response's claims that its passages support (0: none, 1: "
    "all; docs/grounding.md), null without passages or claims; overlap: the share of its "
    "sentences supported. Under [compat] preset core-rag: min(1, 0.6 + 0.4 x overlap)."
)


def add_stats_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--resamples", type=non_negative, default=DEFAULT_RESAMPLES,
                   help=f"bootstrap resamples (default {DEFAULT_RESAMPLES}; 0: no intervals)")
    p.add_argument("--seed", type=non_negative, default=DEFAULT_SEED,
                   help=f"seed of the resampling (default {DEFAULT_SEED})")


def add_inputs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--input", action=AppendSource, default=[], type=Path, metavar="PATH",
                   help="records file: .parquet .jsonl .json .csv .tsv (repeatable); "
                        "RAGAS and Hugging Face datasets layouts are read as they are "
                        "(docs/input-formats.md)")
    p.add_argument("--model", action=Label, metavar="NAME",
                   help="model of every row of the --input just before it (for files "
                        "without a model column; a row whose own model differs is "
                        "rejected)")
    p.add_argument("--run-label", dest="run", action=Label, metavar="NAME",
                   help="`run` column (seed, prompt version) of every row of the --input "
                        "just before it, as --model; not the store's --run-id")
    p.add_argument("--pair", action=AppendSource, default=[], nargs=2, type=Path,
                   metavar=("PREDICTIONS", "REFERENCES"),
                   help="legacy predictions + references/gold JSON files (repeatable)")
    p.add_argument("--column", action="append", default=[], metavar="CANONICAL=NAME",
                   help="read canonical column CANONICAL from the files' column NAME, e.g. "
                        "response=answer (repeatable; over the config's [columns])")
    p.add_argument("--config", type=Path, help="TOML configuration file")
    add_plugin_option(p)


def add_plugin_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="import a plug-in of user-defined metrics (@pipeline.metric functions): "
                        "a module name, found in the current directory or the installed "
                        "packages, or the path of a .py file (repeatable; after the config's "
                        "[plugins] modules; docs/custom-metrics.md)")


# --- the configuration from flags ---------------------------------------------------------------


def input_labels(args: argparse.Namespace) -> dict[str, dict[str, str]]:
    """``--model`` / ``--run-label`` of each ``--input``, by the path as given."""
    found: dict[str, dict[str, str]] = {}
    for (dest, index), entry in (getattr(args, "labels", None) or {}).items():
        if dest != "input":
            flags = ", ".join(f"--{name.replace('run', 'run-label')}" for name in entry)
            raise ConfigError(
                f"{flags} labels an --input; a --pair takes its model from the predictions' "
                "model field or file name"
            )
        path = os.fspath(args.input[index])
        if found.get(path, entry) != entry:
            raise ConfigError(f"{path} is given twice with different labels")
        found[path] = entry
    return found


def column_mapping(items: Sequence[str]) -> dict[str, str]:
    """``--column CANONICAL=NAME`` entries as a mapping."""
    mapping: dict[str, str] = {}
    for item in items:
        canonical, sep, name = item.partition("=")
        if not sep or not canonical.strip() or not name:
            raise ConfigError(
                f"--column expects CANONICAL=NAME (e.g. response=answer), got {item!r}"
            )
        mapping[canonical.strip()] = name
    return mapping


def config_from_args(args: argparse.Namespace) -> Config:
    """The configuration of ``--config`` and the flags over it, with its plug-ins' metrics;
    unknown metrics and user metrics that cannot run fail here, before anything is read."""
    metrics = None
    if getattr(args, "metrics", None):
        metrics = tuple(m for m in args.metrics.split(",") if m.strip())
    config = load_config(
        args.config,
        metrics=metrics,
        embedding_backend=getattr(args, "embedding_backend", None),
        embedding_cache_dir=getattr(args, "cache_dir", None),
        columns=column_mapping(getattr(args, "column", [])),
        input_labels=input_labels(args) or None,
    )
    config = load_plugins(with_plugins(config, getattr(args, "plugin", None) or ()))
    resolve_metrics(config)  # fail before reading anything
    return config


def with_plugins(config: Config, modules: Sequence[str]) -> Config:
    """``config`` with the ``--plugin`` modules after its ``[plugins] modules`` (each once)."""
    if not modules:
        return config
    return replace(config, plugins=tuple(dict.fromkeys([*config.plugins, *modules])))


def require_inputs(args: argparse.Namespace) -> None:
    if not args.input and not args.pair:
        raise ConfigError("give at least one --input PATH or --pair PREDICTIONS REFERENCES")


def input_rows(args: argparse.Namespace) -> int | None:
    """The rows the inputs hold when the metadata tells (Parquet files only), else None."""
    counts = [record_count(path) for path in args.input]
    if args.pair or any(count is None for count in counts):
        return None
    return sum(count for count in counts if count is not None)


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


@contextlib.contextmanager
def progress_bars(
    hidden: bool, total: int | None = None
) -> Iterator[Callable[[str, int], None]]:
    """One tqdm bar per stage of a run (reading, scoring) on stderr, shown on a terminal only.

    ``total``: the rows of the inputs, when known, for both bars; rejected rows are never
    scored, so the scoring bar's total becomes the rows it counted when the run ends."""
    bars: dict[str, Any] = {}

    def update(stage: str, rows: int) -> None:
        if stage not in bars:
            bars[stage] = tqdm(unit="rows", desc=stage, disable=True if hidden else None,
                               file=sys.stderr, unit_scale=True, total=total)
        bars[stage].update(rows)

    try:
        yield update
    finally:
        for bar in bars.values():
            if bar.total is not None and bar.n < bar.total:
                bar.total = bar.n
                bar.refresh()
            bar.close()


def print_rejections(files: str | Path) -> None:
    """The kinds of rejection reason with the most rows (values masked), and where the rows
    and their full reasons are."""
    reasons = rejection_reasons(files)
    print("rejected rows by reason:")
    for reason, rows in reasons.head(TOP_REASONS).iter_rows():
        print(f"{rows:>9}  {reason}")
    rest = reasons.slice(TOP_REASONS)
    if rest.height:
        kinds = "1 other reason" if rest.height == 1 else f"{rest.height} other reasons"
        print(f"{rest['rows'].sum():>9}  ({kinds})")
    print(f"rejected rows and reasons: {files}")


#: The model cell of rows without a model (no ``model`` column and no ``--model``).
NO_MODEL = "(none)"


def print_headline(directory: Path, *, wide: bool = False) -> None:
    """The headline view (:func:`pipeline.views.headline_columns`, as many as the terminal
    holds; all with ``wide``), a line per count or warning column shown, and the RGB summary
    when the run has RGB rows. Rows without a model show :data:`NO_MODEL`. A run that scored
    no row prints one line instead. The signatures are logged at info level (``-v``); every
    output file keeps them (the ``signature`` column)."""
    print()
    frames = query_views(directory, {"headline": "select * from headline order by model",
                                     "rgb": "select * from rgb_summary order by model",
                                     "tokenless": "select * from tokenless_rows"})
    headline, rgb = frames["headline"], frames["rgb"]
    if headline.height == 0 or headline["n"].sum() == 0:
        print("no row was scored: no headline to show")
        return
    headline = headline.with_columns(pl.col("model").fill_null(NO_MODEL))
    columns = headline_columns(headline)
    print_fitted(headline.select(columns), wide=wide, percent=sorted(PERCENT_COLUMNS),
                 one_decimal=sorted(ONE_DECIMAL_COLUMNS),
                 more="rag-eval evaluate --wide, the report, or the headline view")
    if "faithfulness" in columns:
        say(FAITHFULNESS_NOTE)
    for column, note in HEADLINE_NOTES.items():
        if column in columns:
            say(note)
    for note in tokenless_notes(frames["tokenless"]):
        log.info("tokenless rows: %s", note)
        say(note)
    for signature in headline["signature"].drop_nulls().unique(maintain_order=True):
        log.info("signature: %s", signature)
    if rgb.height:
        rgb = rgb.with_columns(pl.col("model").fill_null(NO_MODEL))
        print("\nRGB robustness (% of rows, docs/rgb.md):")
        rates = [c for c in rgb.columns if c not in ("model", "n", "signature")]
        print_fitted(rgb.drop("signature"), wide=wide, one_decimal=rates,
                     more="--wide, or the rgb_summary view")


def tokenless_notes(tokenless: pl.DataFrame) -> list[str]:
    """One line per metric whose tokenizer found no token in some rows (view tokenless_rows).

    >>> tokenless_notes(pl.DataFrame({"metric": ["rouge", "bleu"], "n_rows": [30, 30],
    ...     "n_without_tokens": [23, 0], "n_reference_without_tokens": [20, 0],
    ...     "n_response_without_tokens": [5, 0]}))
    ['ROUGE: 23 of 30 rows without tokens (reference 20, response 5); scores 0 there']
    """
    return [
        f"{row['metric'].upper()}: {row['n_without_tokens']} of {row['n_rows']} rows without "
        f"tokens (reference {row['n_reference_without_tokens']}, response "
        f"{row['n_response_without_tokens']}); scores 0 there"
        for row in tokenless.iter_rows(named=True) if row["n_without_tokens"]
    ]


def without_empty_columns(frame: pl.DataFrame, keep: Sequence[str] = ()) -> pl.DataFrame:
    """``frame`` without the columns that are null on every row (the RAG columns of a run
    without passages, ``overall_score`` when the composites did not run), except ``keep``."""
    if frame.height == 0:
        return frame
    return frame.select(
        c for c in frame.columns if c in keep or frame[c].null_count() < frame.height
    )
