"""The standard streams of a command: a stdout whose reader went away (``rag-eval ... |
head``) does not fail the command, and both streams are flushed without failing. The
standard library only (as :mod:`pipeline.cli.errors`)."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO

log = logging.getLogger("pipeline")


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
