"""Phase timing of a run: each phase logs its wall seconds once, as text and as JSON fields.

``with phase("scoring"):`` logs ``phase scoring: 1.23 s`` on the ``pipeline.phases`` logger when
the block ends. The record carries ``fields = {"phase": "scoring", "seconds": 1.23}``, which the
JSON log format (:mod:`pipeline.logs`) writes as top-level keys, so a scheduler or the benchmark
reads the breakdown without parsing text. :class:`PhaseTimer` also keeps the figures for callers
that report them (the CLI prints none of them by default).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

log = logging.getLogger("pipeline.phases")

#: The phases of ``evaluate``, in run order (the benchmark prints them in this order).
#: ``engine`` is the wall time of reading, validating, scoring and writing; inside it, the
#: local engine overlaps ``read+validate``, ``scoring`` and ``writing`` on three threads, so
#: those are busy seconds of each thread and may add up to more than ``engine``. ``views``
#: includes ``statistics``, which run beside the views that do not read them.
PHASES: tuple[str, ...] = (
    "engine", "read+validate", "corpus", "scoring", "writing", "statistics", "views", "report",
)


@dataclass
class PhaseTimer:
    """Wall seconds per phase name, summed when a phase runs more than once.

    Phases that overlap on several threads (reading, scoring and writing in the single-pass
    engine) each count their own busy time, so their sum can exceed the run's wall time.
    """

    seconds: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the block as phase ``name`` and log it when the block ends (also on error)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            self.add(name, elapsed)
            log_phase(name, elapsed)

    def add(self, name: str, elapsed: float) -> None:
        """Count ``elapsed`` seconds to phase ``name`` without logging (interleaved phases)."""
        with self._lock:
            self.seconds[name] = self.seconds.get(name, 0.0) + elapsed

    def log_all(self, names: tuple[str, ...]) -> None:
        """Log the phases ``names`` that were counted with :meth:`add`."""
        for name in names:
            if name in self.seconds:
                log_phase(name, self.seconds[name])


def log_phase(name: str, elapsed: float) -> None:
    """One ``phase NAME: S s`` record with ``fields`` for the JSON log format."""
    log.info("phase %s: %.2f s", name, elapsed,
             extra={"fields": {"phase": name, "seconds": round(elapsed, 4)}})


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Time one block as phase ``name`` (a timer of its own)."""
    with PhaseTimer().phase(name):
        yield
