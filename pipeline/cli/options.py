"""Argument pieces every command's parser uses: the one-line help of each command (listed by
``--help`` without importing the commands), the help formatter, the actions that tie a label
(``--model``) to the input before it, and the argument types (finite, non-negative, positive
numbers, fractions, durations). The standard library only (as :mod:`pipeline.cli.errors`)."""

from __future__ import annotations

import argparse
import math
from typing import Any

#: The one-line help of each command (``rag-eval --help`` lists them without importing the
#: commands' modules).
COMMAND_HELP = {
    "evaluate": "score records and build the DuckDB views",
    "validate": "check input files without scoring them",
    "query": "run SQL against the views of an output directory",
    "checkout": "copy a run of a results store into an output directory (for report, "
                "compare, export, stats)",
    "export": "write the per-row results with texts as one table",
    "ingest-rgb": "build evaluation records from RGB benchmark files",
    "stats": "bootstrap intervals and paired model comparisons of a run",
    "compare": "compare run B against baseline run A; gate regressions",
    "report": "write a self-contained HTML report of a run",
    "metrics": "list the built-in and user-defined metrics",
}


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """:class:`argparse.RawDescriptionHelpFormatter` by paragraph (blank-line separated): a
    paragraph with line breaks (the examples) is kept as written, a one-line paragraph (a
    description) is wrapped as by the default formatter."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = []
        for paragraph in text.split("\n\n"):
            if "\n" in paragraph:
                paragraphs.append(super()._fill_text(paragraph, width, indent))
            else:
                paragraphs.append(argparse.HelpFormatter._fill_text(self, paragraph, width, indent))
        return "\n\n".join(paragraphs)


class AppendSource(argparse.Action):
    """``--input``, ``--pair``, ``--outputs``: appended, and remembered as the input that a
    following label (``--model``, ``--run-label``, ``--noise-rate``) belongs to."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        items = [*(getattr(namespace, self.dest, None) or []), values]
        setattr(namespace, self.dest, items)
        namespace.last_source = (self.dest, len(items) - 1)


class Label(argparse.Action):
    """``--model NAME`` and the like: a label of the input given just before it, kept in
    ``labels[(option dest, index)][column]``."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        last = getattr(namespace, "last_source", None)
        if last is None:
            parser.error(f"{option_string} labels the input given just before it: write it "
                         "after that input's path (--input PATH --model NAME)")
        labels = dict(getattr(namespace, "labels", None) or {})
        entry = dict(labels.get(last, {}))
        if self.dest in entry:
            parser.error(f"{option_string} is given twice for the same input")
        entry[self.dest] = values
        labels[last] = entry
        namespace.labels = labels


def finite(text: str) -> float:
    """A finite number (NaN and infinities refused).

    >>> finite("0.5"), finite("1e3")
    (0.5, 1000.0)
    """
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def seconds(text: str) -> float:
    """A finite number of seconds, 0 or more."""
    value = finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {text!r}")
    return value


def non_negative_float(text: str) -> float:
    """A finite number, 0 or more."""
    value = finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text!r}")
    return value


def non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a number from 0 to 1, got {text!r}")
    return value
