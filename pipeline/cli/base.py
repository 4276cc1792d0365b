"""The light floor of the command line: exit codes, argument types, errors of the
environment, interrupts and a closed stdout. It imports the standard library only, so that
``rag-eval --version``, ``--help`` and ``query`` do not pay for polars or the metric registry
(docs/benchmarks.md, start-up). Where it must recognise an exception or a file name of a heavier
library (DuckDB's interrupt, :mod:`pipeline.io.atomic`'s temporary names), it looks that module
up in ``sys.modules`` instead of importing it: such an exception or name can only exist once the
module that makes it has been imported."""

from __future__ import annotations

import argparse
import contextlib
import errno
import logging
import math
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

log = logging.getLogger("pipeline")

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_ERROR = 2
EXIT_GATE = 3
EXIT_INTERNAL = 4
EXIT_BUSY = 5
#: 128 + SIGINT, as a shell reports a process ended by Ctrl-C.
EXIT_INTERRUPTED = 130
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
            return f"{_public_path(path)}: {cause}"
        if target is not None and code in _WRITE_ERRNOS:
            return f"cannot write {target}: {cause}"
        return f"{target}: {cause}" if target is not None else cause
    return None


def interrupted(exc: BaseException) -> bool:
    """True when ``exc`` stands for an interrupt: DuckDB takes the ``KeyboardInterrupt`` of a
    SIGINT during a query and raises ``RuntimeError("Query interrupted")`` (or its
    ``InterruptException``) instead."""
    duckdb = sys.modules.get("duckdb")  # no DuckDB exception before DuckDB is imported
    kinds = (KeyboardInterrupt,) if duckdb is None else (KeyboardInterrupt,
                                                          duckdb.InterruptException)
    return any(
        isinstance(link, kinds)
        or (isinstance(link, RuntimeError) and str(link) == "Query interrupted")
        for link in _chain(exc)
    )


def _public_path(path: str) -> str:
    """:func:`pipeline.io.atomic.public_path` of ``path`` once that module is loaded (no
    temporary file of its naming exists before), else ``path``."""
    atomic = sys.modules.get("pipeline.io.atomic")
    return path if atomic is None else str(atomic.public_path(path))


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


# --- printing ---------------------------------------------------------------------------------


def print_error(args: argparse.Namespace, message: str) -> None:
    """One error line: on stderr, or as a logged error with ``--log-format json``."""
    if args.log_format == "json":
        log.error("%s", message)
    else:
        print(f"error: {message}", file=sys.stderr)


