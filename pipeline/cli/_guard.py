"""Ctrl-C while the command line starts: its modules take about half a second to import, and
an interrupt then would end in a traceback of the import. :func:`deferred_interrupts` holds
SIGINT meanwhile; :func:`pipeline.cli.main` then exits 130 with one line, as anywhere else.

Only the standard library is imported here, so the guard is in place before anything heavy.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

#: SIGINTs that arrived while :func:`deferred_interrupts` held them.
EARLY: list[int] = []


def _remember(signum: int, frame: FrameType | None) -> None:
    EARLY.append(signum)


@contextlib.contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Meanwhile, a SIGINT is recorded in :data:`EARLY` instead of raising
    ``KeyboardInterrupt`` (only on the main thread, and only where Python's own handler is
    installed: an application that set its own keeps it)."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    previous = signal.signal(signal.SIGINT, _remember)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
