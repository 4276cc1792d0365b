"""ordered_map: results in input order, several calls at once, errors raised at their turn."""

from __future__ import annotations

import threading
import time

import pytest

from pipeline.io.background import ordered_map


def test_results_keep_input_order_when_calls_finish_out_of_order() -> None:
    def slow_first(x: int) -> int:
        time.sleep(0.05 if x % 2 == 0 else 0.0)
        return x * 10

    assert list(ordered_map(slow_first, range(6))) == [(x, x * 10) for x in range(6)]


def test_two_calls_run_at_once() -> None:
    both_started = threading.Barrier(2, timeout=5)

    def meet(x: int) -> int:
        both_started.wait()  # would time out (BrokenBarrierError) if calls ran one by one
        return x

    assert [r for _, r in ordered_map(meet, range(4), workers=2)] == [0, 1, 2, 3]


def test_one_worker_runs_on_the_callers_thread() -> None:
    caller = threading.get_ident()
    assert [r for _, r in ordered_map(lambda _: threading.get_ident(), range(3), 1)] == [caller] * 3


def test_an_error_is_raised_when_its_item_comes() -> None:
    seen = []

    def fail_on_three(x: int) -> int:
        if x == 3:
            raise ValueError("bad item 3")
        return x

    with pytest.raises(ValueError, match="bad item 3"):
        for item, _ in ordered_map(fail_on_three, range(6)):
            seen.append(item)
    assert seen == [0, 1, 2]
