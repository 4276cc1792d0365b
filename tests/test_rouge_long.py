"""ROUGE-L on huge texts (issue 29, point 9): one long response against a short reference
steps through the short list, rows longer than the numpy word path use one Python integer,
and a row whose two lists are both huge is left null instead of running for hours."""

from __future__ import annotations

import random
import time

import numpy as np
import polars as pl
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.metrics.lexical import rouge
from pipeline.metrics.lexical.rouge import lcs_length, rouge_statistics


def lcs_oracle(a: list[str], b: list[str]) -> int:
    """The textbook dynamic programme, one row of the table at a time."""
    if not a or not b:
        return 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if x == y else max(previous[j], current[-1]))
        previous = current
    return previous[-1]


def lcs(pairs: list[tuple[list[str], list[str]]]) -> list[int | None]:
    frame = pl.DataFrame({"p": [p for p, _ in pairs], "r": [r for _, r in pairs]},
                         schema={"p": pl.List(pl.String), "r": pl.List(pl.String)})
    return frame.select(lcs_length(pl.col("p"), pl.col("r"))).to_series().to_list()


tokens = st.lists(st.sampled_from("abcd"), max_size=40)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.tuples(tokens, tokens), min_size=1, max_size=6))
def test_wide_and_swapped_rows_equal_the_oracle(pairs) -> None:
    # Any row longer than 8 tokens takes the Python-integer path here.
    saved = rouge._WIDE_TOKENS
    rouge._WIDE_TOKENS = 8
    try:
        got = lcs(pairs)
    finally:
        rouge._WIDE_TOKENS = saved
    assert got == [lcs_oracle(p, r) for p, r in pairs]


def test_long_rows_of_both_paths_equal_the_oracle() -> None:
    rng = random.Random(7)
    pairs = []
    for long, short in [(5000, 3), (3, 5000), (4500, 700), (300, 4200), (64, 65)]:
        pairs.append(([rng.choice("abcdefgh") for _ in range(long)],
                      [rng.choice("abcdefgh") for _ in range(short)]))
    assert lcs(pairs) == [lcs_oracle(p, r) for p, r in pairs]


def test_a_huge_response_against_a_short_reference_is_fast() -> None:
    response = ["paris", "is", "the", "capital", "of", "france"] * 300_000  # 1.8M tokens
    reference = ["the", "capital", "of", "france", "is", "paris"]
    start = time.perf_counter()
    frame = pl.DataFrame({"p": [response], "r": [reference]})
    stats = frame.select(rouge_statistics(pl.col("p"), pl.col("r"))).item()
    assert time.perf_counter() - start < 5  # was a Python step per response token (minutes)
    assert stats == {"overlap_1": 6, "overlap_2": 3, "lcs": 6}


def test_a_row_over_the_cell_limit_is_null_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(rouge, "MAX_LCS_CELLS", 100)
    pairs = [(["a"] * 20, ["a"] * 20), (["a"] * 5, ["a", "b"])]
    assert lcs(pairs) == [None, 1]
    assert "ROUGE-L: 1 row(s)" in caplog.text


def test_the_wide_path_keeps_masks_within_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rouge, "_WIDE_MASK_BYTES", 1)  # no mask kept: computed every step
    inner = np.array([1, 2, 3, 1, 2, 3] * 1000)
    outer = np.array([3, 2, 1, 3])
    assert rouge._lcs_wide(outer, inner) == lcs_oracle(
        [str(x) for x in outer], [str(x) for x in inner]
    )
