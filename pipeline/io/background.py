"""Overlap reading, scoring and writing on separate threads, in order, in bounded memory.

polars, pyarrow and DuckDB release the GIL while they work, so a chunk can be read and
validated on one thread while the previous one is scored on the main thread and the one before
is written on a third. :class:`Prefetch` runs an iterator ahead of its consumer;
:class:`BackgroundWriter` runs write calls in submission order. Both hold at most ``depth``
pending items, so memory stays bounded, and both re-raise a worker's exception in the caller.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")

_DONE = object()


class _Failure:
    def __init__(self, error: BaseException) -> None:
        self.error = error


class Prefetch(Generic[T]):
    """Iterate ``source`` on a background thread, at most ``depth`` items ahead.

    An item counts from the moment the worker starts making it until the consumer takes it, so
    at most ``depth`` items are made or waiting while the consumer holds one (with chunks of
    records, ``depth + 1`` chunks in memory).

    >>> list(Prefetch(iter(range(5))))
    [0, 1, 2, 3, 4]
    """

    def __init__(self, source: Iterator[T], depth: int = 1) -> None:
        self._items: queue.Queue[object] = queue.Queue()
        self._slots = threading.Semaphore(depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(source,), daemon=True,
                                        name="rag-eval-prefetch")
        self._thread.start()

    def _run(self, source: Iterator[T]) -> None:
        try:
            while self._slot():
                item = next(source, _DONE)
                self._items.put(item)
                if item is _DONE:
                    return
        except BaseException as exc:  # handed to the consumer, raised there
            self._items.put(_Failure(exc))

    def _slot(self) -> bool:
        """Wait until fewer than ``depth`` items are made or waiting; False once stopped."""
        while not self._stop.is_set():
            if self._slots.acquire(timeout=0.1):
                return True
        return False

    def __iter__(self) -> Iterator[T]:
        try:
            while True:
                item = self._items.get()
                self._slots.release()
                if item is _DONE:
                    return
                if isinstance(item, _Failure):
                    raise item.error
                yield item  # type: ignore[misc]
        finally:
            self.close()

    def close(self) -> None:
        """Stop the worker (after an early exit of the consumer) and wait for it."""
        self._stop.set()
        self._thread.join()


class BackgroundWriter:
    """Run write calls on one background thread, in the order they were submitted.

    ``submit`` blocks while ``depth`` calls are pending; the first failure is re-raised by the
    next ``submit`` or by :meth:`close`, after which nothing more is written.

    >>> done = []
    >>> with BackgroundWriter() as writer:
    ...     writer.submit(lambda: done.append(1))
    ...     writer.submit(lambda: done.append(2))
    >>> done
    [1, 2]
    """

    def __init__(self, depth: int = 2) -> None:
        self._calls: queue.Queue[Callable[[], object] | None] = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name="rag-eval-writer")
        self._thread.start()

    def _run(self) -> None:
        while True:
            call = self._calls.get()
            if call is None:
                return
            if self._error is None:
                try:
                    call()
                except BaseException as exc:  # re-raised on the caller's thread
                    self._error = exc

    def submit(self, call: Callable[[], object]) -> None:
        """Queue ``call``; raise the error of an earlier call, if any."""
        self._raise()
        self._calls.put(call)

    def close(self) -> None:
        """Wait for every submitted call; raise the first error."""
        if self._thread.is_alive():
            self._calls.put(None)
            self._thread.join()
        self._raise()

    def _raise(self) -> None:
        if self._error is not None:
            raise self._error

    def __enter__(self) -> BackgroundWriter:
        return self

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> None:
        if exc_type is None:
            self.close()
            return
        # The body's exception is the one to report; still wait for the thread.
        with contextlib.suppress(BaseException):
            self.close()
