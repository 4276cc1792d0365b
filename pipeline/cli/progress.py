"""Progress of a run on the terminal: one tqdm bar per stage (reading, scoring) on stderr,
shown on a terminal only."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from tqdm import tqdm


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
