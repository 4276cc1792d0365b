"""What the commands share: exit codes, argument pieces, the configuration from flags, progress
bars and printing frames, the headline and rejection reasons."""

from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import math
import os
import re
import shutil
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

import duckdb
import polars as pl
from tqdm import tqdm

from pipeline.config import Config, ConfigError, load_config
from pipeline.drivers import rejection_reasons
from pipeline.io.atomic import public_path, remove_stale
from pipeline.io.readers import record_count
from pipeline.metrics.user import load_plugins
from pipeline.metrics.user import resolve as resolve_metrics
from pipeline.stats import DEFAULT_RESAMPLES, DEFAULT_SEED
from pipeline.views import HEADLINE_NOTES, headline_columns, query_views

log = logging.getLogger("pipeline")

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_ERROR = 2
EXIT_GATE = 3
EXIT_INTERNAL = 4
EXIT_BUSY = 5
#: 128 + SIGINT, as a shell reports a process ended by Ctrl-C.
EXIT_INTERRUPTED = 130
#: Kinds of rejection reason the line of an ``evaluate`` run lists, most rows first.
TOP_REASONS = 5

#: Printed under the headline table when it shows faithfulness: what its 0.6 baseline means.
FAITHFULNESS_NOTE = (
    "faithfulness = min(1, 0.6 + 0.4 x overlap): an answer with no supported sentence still "
    "scores 0.6 (a baseline); overlap is the share of supported sentences. 0.0 marks no answer "
    "(an abstention, or by default an empty response) to an answerable question."
)


# --- argument pieces ----------------------------------------------------------------------------


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


# --- failures of the environment, interrupts, leftovers and a closed stdout ----------------------

#: ``errno`` values that describe the machine or the paths given, not a bug: exit 2.
ENVIRONMENT_ERRNOS = frozenset({
    errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM,
    errno.EISDIR, errno.ENOTDIR, errno.ENOENT, errno.EEXIST, errno.ENOTEMPTY, errno.EMFILE,
    errno.ENFILE, errno.ENAMETOOLONG, errno.ELOOP, errno.EIO, errno.ENOMEM, errno.ESTALE,
    errno.ETXTBSY, errno.EBUSY, errno.EXDEV,
})
#: Those that say a write did not fit: the message names the output the command writes.
_WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT, errno.EROFS})
#: How Rust (polars) and DuckDB report an operating-system error in their messages.
_OS_ERROR_CODE = re.compile(r"\(os error (\d+)\)")
_QUOTED_FILE = re.compile(r'file "([^"]+)"')


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling, once each."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _os_error(exc: BaseException) -> tuple[int, str | None] | None:
    """The environment ``errno`` of ``exc`` and the path it names, if it has one: an
    ``OSError``, or a library error whose message carries the operating system's text."""
    if isinstance(exc, OSError) and exc.errno in ENVIRONMENT_ERRNOS:
        filename = exc.filename
        return exc.errno, None if filename is None else os.fsdecode(filename)
    text = str(exc)
    found = _OS_ERROR_CODE.search(text)
    code = int(found[1]) if found else next(
        (code for code in sorted(ENVIRONMENT_ERRNOS) if os.strerror(code) in text), None
    )
    if code is None or code not in ENVIRONMENT_ERRNOS:
        return None
    quoted = _QUOTED_FILE.search(text)
    return code, quoted[1] if quoted else None


def environment_error(
    exc: BaseException, target: Path | None, *, writes_only: bool = False
) -> str | None:
    """One line for an exception caused by the environment (a full disk, a file-size limit,
    a path that is a directory, a missing permission), naming the path and the cause; None
    for anything else (a bug). ``target``: what the command writes, named when the error
    gives no path; ``writes_only``: only a write that did not fit (a full disk, a quota, a
    file-size limit, a read-only file system).

    >>> environment_error(OSError(28, "No space left on device"), Path("out"))
    'cannot write out: No space left on device'
    >>> environment_error(IsADirectoryError(21, "Is a directory", "cfg"), None)
    'cfg: Is a directory'
    >>> environment_error(ValueError("a bug"), None) is None
    True
    """
    for link in _chain(exc):
        found = _os_error(link)
        if found is None:
            continue
        code, path = found
        if writes_only and code not in _WRITE_ERRNOS:
            continue
        cause = os.strerror(code)
        if path is not None:
            return f"{public_path(path)}: {cause}"
        if target is not None and code in _WRITE_ERRNOS:
            return f"cannot write {target}: {cause}"
        return f"{target}: {cause}" if target is not None else cause
    return None


def interrupted(exc: BaseException) -> bool:
    """True when ``exc`` stands for an interrupt: DuckDB takes the ``KeyboardInterrupt`` of a
    SIGINT during a query and raises ``RuntimeError("Query interrupted")`` (or its
    ``InterruptException``) instead."""
    return any(
        isinstance(link, (KeyboardInterrupt, duckdb.InterruptException))
        or (isinstance(link, RuntimeError) and str(link) == "Query interrupted")
        for link in _chain(exc)
    )


def output_target(args: argparse.Namespace) -> Path | None:
    """What the command writes (named in an error that gives no path), if anything."""
    for name in ("out", "store"):
        value = getattr(args, name, None)
        if isinstance(value, Path):
            return value
    if args.command == "export":
        return Path(args.dir) / f"export.{args.format}"
    directory = getattr(args, "dir", None)
    return directory if isinstance(directory, Path) and args.command == "stats" else None


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


class _ClosedPipeTolerant:
    """``sys.stdout`` that survives its reader going away (``rag-eval ... | head``): after
    the first ``BrokenPipeError`` the rest of the output goes to ``os.devnull`` (the recipe of
    Python's ``signal`` documentation, "Note on SIGPIPE"), so the command still finishes its
    work and exits with its own code."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._closed = False

    def write(self, text: str) -> int:
        if not self._closed:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._reader_gone()
        return len(text)

    def flush(self) -> None:
        if not self._closed:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._reader_gone()

    def _reader_gone(self) -> None:
        self._closed = True
        log.info("stdout was closed by its reader; the rest of the output is dropped")
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def tolerate_closed_stdout() -> Iterator[None]:
    """Meanwhile, a closed stdout does not fail the command (:class:`_ClosedPipeTolerant`)."""
    previous = sys.stdout
    wrapper = _ClosedPipeTolerant(previous)
    sys.stdout = wrapper
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            wrapper.flush()
        sys.stdout = previous


def flush_standard_streams() -> None:
    """Flush stdout and stderr, ignoring a reader that went away."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


# --- printing -----------------------------------------------------------------------------------


def print_error(args: argparse.Namespace, message: str) -> None:
    """One error line: on stderr, or as a logged error with ``--log-format json``."""
    if args.log_format == "json":
        log.error("%s", message)
    else:
        print(f"error: {message}", file=sys.stderr)


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


def json_nested(frame: pl.DataFrame) -> pl.DataFrame:
    """List and struct columns as JSON text (``["a","b"]``), which CSV can hold; null stays
    null."""
    nested = [name for name, dtype in frame.schema.items() if dtype.is_nested()]
    return frame.with_columns(
        pl.when(pl.col(name).is_not_null())
        .then(pl.struct(pl.col(name).alias("v")).struct.json_encode()
              .str.strip_prefix('{"v":').str.strip_suffix("}"))
        .alias(name)
        for name in nested
    )


def print_frame(frame: pl.DataFrame, fmt: str) -> None:
    """``frame`` on stdout as a table, CSV (nested columns as JSON text) or JSON lines."""
    if fmt == "csv":
        sys.stdout.write(json_nested(frame).write_csv())
    elif fmt == "json":
        sys.stdout.write(frame.write_ndjson())
    else:
        with pl.Config(
            tbl_rows=-1, tbl_cols=-1, tbl_width_chars=240, tbl_hide_dataframe_shape=True,
            fmt_str_lengths=80, float_precision=4, tbl_hide_column_data_types=True,
        ):
            print(frame)


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


#: Terminal width when neither ``COLUMNS`` nor the terminal says.
DEFAULT_WIDTH = 100
#: Headline columns shown as percentages (rates of rows).
PERCENT_COLUMNS = frozenset({"abstain_rate", "abstention_accuracy", "empty_response_rate"})
#: Headline columns shown with one decimal (milliseconds, tokens).
ONE_DECIMAL_COLUMNS = frozenset({"p50_latency_ms", "mean_total_tokens"})


def terminal_width() -> int:
    """``COLUMNS``, else the terminal's width, else :data:`DEFAULT_WIDTH`."""
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns


def readable(frame: pl.DataFrame, percent: Sequence[str] = (),
             one_decimal: Sequence[str] = ()) -> pl.DataFrame:
    """``frame`` with its numbers as text for reading: ``percent`` columns (shares 0..1) as
    ``12.3%``, ``one_decimal`` columns with one decimal, other floats with three, integers as
    they are; null as an empty cell. ``-0.000`` is written ``0.000``.

    >>> readable(pl.DataFrame({"f1": [0.12345, -1e-9], "rate": [0.1234, None]}),
    ...          percent=["rate"]).rows()
    [('0.123', '12.3%'), ('0.000', '')]
    """
    def text(name: str, dtype: pl.DataType) -> pl.Expr:
        column = pl.col(name)
        if not dtype.is_numeric():
            return column.cast(pl.String).fill_null("")
        if name in percent:
            share = (column * 100).round(1).abs().pipe(_signed, column * 100, 1)
            return (share + pl.lit("%")).fill_null("")
        if dtype.is_float():
            digits = 1 if name in one_decimal else 3
            return column.round(digits).abs().pipe(_signed, column, digits).fill_null("")
        return column.cast(pl.String).fill_null("")

    return frame.select(text(name, dtype).alias(name) for name, dtype in frame.schema.items())


def _signed(magnitude: pl.Expr, value: pl.Expr, digits: int) -> pl.Expr:
    """``magnitude`` (rounded, absolute) as text with ``digits`` decimals, ``-`` only where
    the rounded value is not zero (no ``-0.000``)."""
    body = magnitude.cast(pl.String)
    whole = body.str.split(".").list.get(0, null_on_oob=True)
    fraction = body.str.split(".").list.get(1, null_on_oob=True).fill_null("")
    padded = whole + pl.lit(".") + fraction.str.pad_end(digits, "0").str.slice(0, digits)
    negative = (value.round(digits) < 0) & (magnitude > 0)
    return pl.when(negative).then(pl.lit("-") + padded).otherwise(padded)


def fit_columns(frame: pl.DataFrame, width: int, keep: int = 1) -> tuple[pl.DataFrame, list[str]]:
    """The leading columns of a text ``frame`` whose table fits ``width`` characters (at least
    the first ``keep``), and the names of the columns left out.

    >>> shown, hidden = fit_columns(pl.DataFrame({"model": ["a"], "x": ["1"], "y": ["2"]}), 14)
    >>> shown.columns, hidden
    (['model', 'x'], ['y'])
    """
    used, shown = 1, []
    for k, name in enumerate(frame.columns):
        longest = max([len(name), *(len(v) for v in frame[name].to_list() if v is not None)])
        if k >= keep and used + longest + 3 > width:
            break
        used += longest + 3
        shown.append(name)
    return frame.select(shown), [c for c in frame.columns if c not in shown]


def print_text_table(frame: pl.DataFrame) -> None:
    """A frame of text cells as a table, no cell cut and no header wrapped."""
    with pl.Config(
        tbl_rows=-1, tbl_cols=-1, tbl_width_chars=65_000, tbl_hide_dataframe_shape=True,
        fmt_str_lengths=10_000, tbl_hide_column_data_types=True,
        tbl_cell_numeric_alignment="RIGHT",
    ):
        print(frame)


def print_fitted(frame: pl.DataFrame, *, wide: bool, percent: Sequence[str] = (),
                 one_decimal: Sequence[str] = (), more: str = "--wide") -> None:
    """``frame`` formatted for reading, with as many columns as the terminal holds (all with
    ``wide``), and one line naming the columns left out."""
    text = readable(frame, percent, one_decimal)
    shown, hidden = (text, []) if wide else fit_columns(text, terminal_width())
    print_text_table(shown)
    if hidden:
        say(f"(+{len(hidden)} more: {', '.join(hidden)}; {more})")


def say(text: str) -> None:
    """``text`` on stdout, wrapped to the terminal's width."""
    print(textwrap.fill(text, width=max(terminal_width(), 40), break_on_hyphens=False))


def print_headline(directory: Path, *, wide: bool = False) -> None:
    """The headline view (:func:`pipeline.views.headline_columns`, as many as the terminal
    holds; all with ``wide``), a line per count or warning column shown, the signatures, and
    the RGB summary when the run has RGB rows."""
    print()
    frames = query_views(directory, {"headline": "select * from headline order by model",
                                     "rgb": "select * from rgb_summary order by model",
                                     "tokenless": "select * from tokenless_rows"})
    headline, rgb = frames["headline"], frames["rgb"]
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
    for signature in headline["signature"].unique(maintain_order=True):
        print(f"signature: {signature}")
    if rgb.height:
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
