"""Exit codes and failures of the command line: the code of each outcome, the one line for an
error the environment caused (a full disk, a path that is a directory, a missing permission:
exit 2, not a traceback), interrupts (DuckDB turns a Ctrl-C into its own error), what a
command writes (named when an error gives no path), and the error line itself.

The standard library only, so that ``rag-eval --version``, ``--help`` and ``query`` do not
pay for polars or the metric registry (docs/benchmarks.md, start-up). Where it must recognise
an exception or a file name of a heavier library (DuckDB's interrupt,
:mod:`pipeline.io.atomic`'s temporary names), it looks that module up in ``sys.modules``
instead of importing it: such an exception or name can only exist once the module that makes
it has been imported."""

from __future__ import annotations

import argparse
import errno
import logging
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger("pipeline")

EXIT_OK = 0
EXIT_REJECTED = 1
EXIT_ERROR = 2
EXIT_GATE = 3
EXIT_INTERNAL = 4
EXIT_BUSY = 5
#: 128 + SIGINT, as a shell reports a process ended by Ctrl-C.
EXIT_INTERRUPTED = 130


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


def print_error(args: argparse.Namespace, message: str) -> None:
    """One error line: on stderr, or as a logged error with ``--log-format json``."""
    if args.log_format == "json":
        log.error("%s", message)
    else:
        print(f"error: {message}", file=sys.stderr)
