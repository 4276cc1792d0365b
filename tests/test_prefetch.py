"""pipeline.io.background.Prefetch: order, bounded look-ahead, errors and early exits.

The look-ahead bound is what keeps a run's memory to two chunks of records (the one scored and
the one read meanwhile): an item counts from the moment the worker starts making it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from pipeline.io.background import Prefetch


class Counted:
    """A source that records how many items were started and not yet taken back."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.started = 0
        self.lock = threading.Lock()

    def __iter__(self) -> Iterator[int]:
        for k in range(self.n):
            with self.lock:
                self.started += 1
            yield k


@pytest.mark.parametrize("depth", [1, 2])
def test_the_worker_makes_at_most_depth_items_beyond_the_one_held(depth: int) -> None:
    source = Counted(12)
    taken = 0
    for item in Prefetch(iter(source), depth=depth):
        assert item == taken
        taken += 1
        time.sleep(0.02)  # the worker has time to run ahead as far as it may
        with source.lock:
            assert source.started - taken <= depth
    assert taken == 12


def test_an_error_of_the_source_is_raised_in_the_consumer_after_the_items_before() -> None:
    def failing() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("bad chunk")

    seen = []
    with pytest.raises(ValueError, match="bad chunk"):
        for item in Prefetch(failing()):
            seen.append(item)
    assert seen == [1, 2]


def test_an_early_exit_stops_the_worker() -> None:
    source = Counted(1000)
    prefetch = Prefetch(iter(source))
    for item in prefetch:
        if item == 3:
            break
    assert not prefetch._thread.is_alive()
    assert source.started <= 5


def test_an_empty_source() -> None:
    assert list(Prefetch(iter(()))) == []
