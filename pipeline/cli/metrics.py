"""``rag-eval metrics``: the built-in metrics, then the user-defined ones (``--config``'s
``[metrics.NAME]`` tables, its plug-ins and ``--plugin`` modules, and every installed package's
entry point), each with where it is defined, as a table or Markdown."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Sequence
from dataclasses import replace
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.cli.errors import EXIT_OK
from pipeline.cli.flags import add_plugin_option, config_from_args
from pipeline.cli.frames import terminal_width
from pipeline.cli.options import COMMAND_HELP
from pipeline.config import UserMetricDef
from pipeline.metrics.registry import REGISTRY, markdown_table
from pipeline.metrics.spec import MetricSpec
from pipeline.metrics.user import ENTRY_POINT_GROUP, installed_metrics, user_specs

NAME = "metrics"
EXAMPLES = """\
  rag-eval metrics
  rag-eval metrics --format markdown
  rag-eval metrics --config rag-eval.toml --plugin my_metrics   # with your own metrics"""
#: ``origin`` of a built-in metric, and of a user metric from a ``[metrics.NAME]`` table.
BUILT_IN = "built-in"
CONFIG = "config"


def add_arguments(subparsers: Any) -> argparse.ArgumentParser:
    me: argparse.ArgumentParser = subparsers.add_parser(
        NAME, help=COMMAND_HELP[NAME],
        description="The built-in metrics, then the user-defined ones (family user): the "
                    "[metrics.NAME] tables of --config, the metrics of its [plugins] modules and "
                    "of --plugin modules, and those of every installed package's entry point "
                    "(scored when a run selects them). The origin column says where each is "
                    "defined: built-in, config, plug-in MODULE or package NAME.",
    )
    me.add_argument("--format", choices=("table", "markdown"), default="table",
                    help="a table (default) or Markdown: the catalogue of docs/metrics.md, then "
                         "the user-defined metrics in a table of their own")
    me.add_argument("--config", type=Path,
                    help="TOML configuration file whose user-defined metrics and plug-ins to list")
    add_plugin_option(me)
    return me


def run(args: argparse.Namespace) -> int:
    specs, origins = user_metrics(args)
    if args.format == "markdown":
        print(markdown_table())
        if specs:
            print("\nUser-defined metrics:\n")
            print(markdown_table(specs, origins=origins))
        return EXIT_OK
    listed = [*REGISTRY.values(), *specs]
    table = pl.DataFrame(
        {
            "metric": [s.name for s in listed],
            "family": [s.family for s in listed],
            "origin": [origins.get(s.name, BUILT_IN) for s in listed],
            "kind": [str(s.kind) for s in listed],
            "dtype": [str(s.dtype) for s in listed],
            "description": [s.description for s in listed],
        }
    )
    print_catalogue(table)
    return EXIT_OK


def print_catalogue(table: pl.DataFrame) -> None:
    """One entry per metric: its name with family, kind, dtype and origin, then its whole
    description wrapped to the terminal's width (a table would cut it)."""
    width = max(terminal_width(), 40)
    for row in table.iter_rows(named=True):
        print(f"{row['metric']}  ({row['family']}, {row['kind']}, {row['dtype']}, "
              f"{row['origin']})")
        print(textwrap.fill(row["description"], width=width, initial_indent="    ",
                            subsequent_indent="    ", break_on_hyphens=False))


def user_metrics(args: argparse.Namespace) -> tuple[tuple[MetricSpec, ...], dict[str, str]]:
    """The user-defined metrics to list, each checked as a run checks it (a broken one fails
    with one line), and where each is defined (metric -> origin): those of the configuration
    with its plug-ins, then the installed packages' that it does not define."""
    config = config_from_args(args)
    defined = {d.name for d in config.user_metrics}
    installed = tuple(d for d in installed_metrics() if d.name not in defined)
    definitions = (*config.user_metrics, *installed)
    specs = user_specs(replace(config, user_metrics=definitions))
    origins = {d.name: origin(d, config.plugins) for d in definitions}
    return specs, origins


def origin(definition: UserMetricDef, plugins: Sequence[str]) -> str:
    """Where ``definition`` comes from: ``config`` (SQL), ``plug-in MODULE`` (as given to
    ``--plugin`` or in ``[plugins] modules``), ``package NAME`` (an installed distribution's
    entry point), else its module."""
    if definition.sql is not None:
        return CONFIG
    module = str(definition.module)
    for plugin in plugins:
        name = Path(plugin).stem if plugin.endswith(".py") else plugin
        if module == name or module.startswith(name + "."):
            return f"plug-in {plugin}"
    for point in entry_points(group=ENTRY_POINT_GROUP):
        if module == point.module or module.startswith(point.module + "."):
            dist = point.dist
            return f"package {dist.name}" if dist is not None else f"entry point {point.name}"
    return f"module {module}"
