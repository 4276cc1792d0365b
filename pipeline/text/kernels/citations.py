"""Citation markers (:data:`pipeline.text.markers.CITATION_MARKER`) found by a compiled kernel.

The kernel reads pure ASCII rows, where the marker pattern as polars (Rust ``regex``) runs it
means: ``[``, then numbers of 1 to 9 ASCII digits separated by ``,`` or ``;``, then ``]``, with
any run of ``\\t\\n\\v\\f\\r`` and spaces (Unicode ``White_Space``; not ``\\x1c``-``\\x1f``)
around the numbers and separators. Matches are leftmost-first and do not overlap: a failed
``[`` is skipped by one byte. A row holding any other byte is reported as *wide* and left to the
polars expression, whose ``\\s`` and ``\\d`` are Unicode classes.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.text.kernels.buffers import arrow_array, kernel, string_buffers

_MAX_DIGITS = 9


@kernel
def _is_space(c: int) -> bool:
    return c == 32 or 9 <= c <= 13


@kernel
def _is_digit(c: int) -> bool:
    return 48 <= c <= 57


@kernel
def _skip_spaces(data: np.ndarray, j: int, end: int) -> int:
    while j < end and _is_space(data[j]):
        j += 1
    return j


@kernel
def _number_end(data: np.ndarray, j: int, end: int) -> int:
    """End of the number of 1 to 9 digits at ``j``, or -1 (none, or a tenth digit follows)."""
    k = j
    while k < end and k - j < _MAX_DIGITS + 1 and _is_digit(data[k]):
        k += 1
    if k == j or k - j > _MAX_DIGITS:
        return -1
    return k


@kernel
def marker_end(data: np.ndarray, j: int, end: int) -> int:
    """End of the marker starting with the ``[`` at ``j``, or -1 when none starts there."""
    k = _number_end(data, _skip_spaces(data, j + 1, end), end)
    if k < 0:
        return -1
    while True:
        k = _skip_spaces(data, k, end)
        if k >= end:
            return -1
        c = data[k]
        if c == 93:  # ]
            return k + 1
        if c != 44 and c != 59:  # , ;
            return -1
        k = _number_end(data, _skip_spaces(data, k + 1, end), end)
        if k < 0:
            return -1


@kernel
def _row_is_wide(data: np.ndarray, start: int, end: int) -> bool:
    for j in range(start, end):  # noqa: SIM110 (a loop, not a generator, compiles in numba)
        if data[j] >= 128:
            return True
    return False


@kernel
def cited_numbers(
    offsets: np.ndarray, data: np.ndarray, valid: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct numbers of each valid ASCII row's markers, in order of first use:
    ``(list_offsets, numbers, wide)``."""
    n = len(offsets) - 1
    list_offsets = np.empty(n + 1, dtype=np.int64)
    list_offsets[0] = 0
    numbers = np.empty((offsets[n] - offsets[0]) // 2 + 1, dtype=np.int64)  # "1," per number
    wide = np.zeros(n, dtype=np.bool_)
    count = 0
    for i in range(n):
        start = offsets[i]
        end = offsets[i + 1]
        if valid[i] and _row_is_wide(data, start, end):
            wide[i] = True
        elif valid[i]:
            row_start = count
            j = start
            while j < end:
                if data[j] != 91:  # [
                    j += 1
                    continue
                stop = marker_end(data, j, end)
                if stop < 0:
                    j += 1
                    continue
                k = j + 1
                while k < stop:
                    if _is_digit(data[k]):
                        value = 0
                        while _is_digit(data[k]):
                            value = value * 10 + (data[k] - 48)
                            k += 1
                        seen = False
                        for m in range(row_start, count):
                            if numbers[m] == value:
                                seen = True
                                break
                        if not seen:
                            numbers[count] = value
                            count += 1
                    else:
                        k += 1
                j = stop
        list_offsets[i + 1] = count
    return list_offsets, numbers[:count], wide


def cited_numbers_batch(text: pl.Series) -> tuple[pl.Series, np.ndarray]:
    """Distinct marker numbers (``List[Int64]``) of the ASCII rows of a String column, null on
    the others, and the mask of the non-null rows it left out (non-ASCII)."""
    offsets, data, valid = string_buffers(text)
    list_offsets, numbers, wide = cited_numbers(offsets, data, valid)
    missing = ~valid | wide
    lists = pa.LargeListArray.from_arrays(
        arrow_array(list_offsets), arrow_array(numbers.astype(np.int64, copy=False)),
        mask=arrow_array(missing) if bool(missing.any()) else None,
    )
    return pl.Series(text.name, lists, dtype=pl.List(pl.Int64)), wide
