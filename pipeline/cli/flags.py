"""The flags several commands share and the configuration they make: the inputs (``--input``
with its labels, ``--pair``, ``--column``, ``--config``), ``--plugin``, the statistics'
``--resamples`` and ``--seed``; :func:`config_from_args` turns them into the one frozen
:class:`~pipeline.config.Config` of the run (the TOML file, the flags over it, the plug-ins'
metrics), and fails on an unknown metric before anything is read."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from pipeline.cli.options import AppendSource, Label, non_negative
from pipeline.config import Config, ConfigError, load_config
from pipeline.io.readers import record_count
from pipeline.metrics.user import load_plugins
from pipeline.metrics.user import resolve as resolve_metrics
from pipeline.stats import DEFAULT_RESAMPLES, DEFAULT_SEED


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
