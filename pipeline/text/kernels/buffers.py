"""Polars string columns as Arrow buffers for compiled kernels, and kernel results back.

A string column becomes ``(offsets, data, valid)``: ``int64`` offsets of length ``n + 1`` into
``data`` (the UTF-8 bytes, ``uint8``) and a ``bool`` validity mask (False where the value is
null). Views of the Arrow memory where Arrow allows it, so a kernel reads the column in place.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

import numba
import numpy as np
import polars as pl
import pyarrow as pa

#: Decorator of every kernel: compiled without the interpreter, cached on disk.
kernel = numba.njit(cache=True, nogil=True)


@kernel
def _identity(value: int) -> int:  # pragma: no cover - compiled
    return value


def start_kernels_in_background() -> threading.Thread:
    """Set numba's compiler target up on a daemon thread, and return the thread.

    The first kernel a process calls, even one loaded from the disk cache, first loads numba's
    typing and lowering registries (0.3-0.4 s; :func:`set_target_up`). A run starts this while
    its first chunk is read (polars, outside the interpreter lock), so the first batch finds the
    target ready and loads each kernel it needs in milliseconds. Calling a kernel meanwhile
    waits for numba's compiler lock: never a second set-up, never a wrong result.
    """
    thread = threading.Thread(target=set_target_up, name="numba-target", daemon=True)
    thread.start()
    return thread


#: The module numba's target set-up imports to learn whether a BLAS is there
#: (``numba.np.arraymath._check_blas``): it imports all of ``scipy.linalg`` first, 0.2 s of one
#: core on the path to the first batch of every process where scipy is installed (the set-up:
#: 0.49-0.58 s with it, 0.29-0.42 s without).
SCIPY_BLAS = "scipy.linalg.cython_blas"


def set_target_up() -> None:
    """numba's target set-up (the first kernel call of the process), with scipy's BLAS module
    hidden while it runs unless scipy's ``linalg`` is already imported.

    No kernel calls BLAS. numba asks again when a function that needs BLAS is compiled
    (``np.dot`` and the ``linalg`` functions import it then); the one answer kept from the
    set-up picks the inner product of ``np.convolve`` and ``np.correlate`` (a loop without a
    BLAS). The module is visible again once the set-up ends.
    """
    hidden = "scipy.linalg" not in sys.modules and SCIPY_BLAS not in sys.modules
    if hidden:
        sys.modules[SCIPY_BLAS] = None  # type: ignore[assignment]
    try:
        _identity(0)
    finally:
        if hidden and SCIPY_BLAS in sys.modules and sys.modules[SCIPY_BLAS] is None:
            del sys.modules[SCIPY_BLAS]


_EMPTY_BYTES = np.zeros(0, dtype=np.uint8)


def string_buffers(column: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(offsets, data, valid)`` of a String column (one chunk; nulls have empty spans)."""
    array: Any = column.cast(pl.String).rechunk().to_arrow()
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if array.type != pa.large_string():
        array = array.cast(pa.large_string())
    n = len(array)
    _, offsets_buffer, data_buffer = array.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64, count=n + 1 + array.offset)
    offsets = offsets[array.offset :]
    data = _EMPTY_BYTES if data_buffer is None else np.frombuffer(data_buffer, dtype=np.uint8)
    valid = (
        np.ones(n, dtype=np.bool_)
        if array.null_count == 0
        else array.is_valid().to_numpy(zero_copy_only=False)
    )
    return offsets, data, valid


def arrow_array(values: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    """A numpy array of numbers or booleans as an Arrow array over the same memory (booleans
    are bit-packed), null where ``valid`` is False.

    Built from buffers, not by ``pa.array``: that imports pandas (0.25 s) to inspect a numpy
    argument."""
    values = np.ascontiguousarray(values)
    if values.dtype == np.bool_:
        data, dtype = np.packbits(values, bitorder="little"), pa.bool_()
    else:
        data, dtype = values, pa.from_numpy_dtype(values.dtype)
    mask = None
    if valid is not None and not bool(valid.all()):
        mask = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(dtype, len(values), [mask, pa.py_buffer(data)])


def arrow_series(name: str, array: pa.Array) -> pl.Series:
    """``array`` as a polars column named ``name``, sharing its buffers.

    Through a record batch, not ``pl.Series(name, array)``: that first imports
    ``pyarrow.compute`` (polars' ``coerce_arrow``), 40-90 ms under the interpreter lock in a
    run that never calls it, on the reading thread while the first chunk is read.

    >>> arrow_series("h", pa.array([b"\\x00\\x01", None], pa.binary())).to_list()
    [b'\\x00\\x01', None]
    """
    frame = pl.from_arrow(pa.RecordBatch.from_arrays([array], names=[name]))
    assert isinstance(frame, pl.DataFrame)
    return frame.to_series()


def strings_from_buffers(
    name: str, offsets: np.ndarray, data: np.ndarray, valid: np.ndarray | None = None
) -> pl.Series:
    """A String column from kernel output buffers (``valid`` False gives null)."""
    mask = None
    if valid is not None and not bool(valid.all()):
        mask = pa.py_buffer(np.packbits(valid, bitorder="little"))
    array = pa.LargeStringArray.from_buffers(
        len(offsets) - 1,
        pa.py_buffer(offsets.astype(np.int64, copy=False)),
        pa.py_buffer(data),
        mask,
    )
    return arrow_series(name, array)


def with_nulls(name: str, values: np.ndarray, valid: np.ndarray) -> pl.Series:
    """``values`` (a numpy array of numbers) as a polars column, null where ``valid`` is False."""
    if bool(valid.all()):
        return pl.Series(name, values)
    return arrow_series(name, arrow_array(values, valid))


def with_wide_rows(
    text: pl.Series,
    ascii_result: pl.Series,
    wide: np.ndarray,
    fallback: Callable[[pl.Expr], pl.Expr],
) -> pl.Series:
    """``ascii_result`` (a kernel's, for the ASCII rows) with the ``wide`` rows (a non-ASCII
    character) computed by the expression ``fallback`` over ``text`` (the others null to it)."""
    if not wide.any():
        return ascii_result
    frame = pl.DataFrame({"text": text, "fast": ascii_result, "wide": wide})
    wide_text = pl.when(pl.col("wide")).then(pl.col("text"))
    routed = pl.when(pl.col("wide")).then(fallback(wide_text)).otherwise(pl.col("fast"))
    return frame.select(routed).to_series().alias(text.name)
