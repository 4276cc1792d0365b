"""Atomic output: write to a temporary sibling, fsync, then ``os.replace`` onto the target.

A crash at any point leaves either the previous file or the complete new one, never a partial
result. Temporary files carry a ``.tmp-`` prefix and are removed on failure.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import polars as pl


@contextlib.contextmanager
def atomic_path(target: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success move it onto ``target``.

    The temporary file lives in the same directory so the final rename is atomic on POSIX.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".tmp-{target.name}.", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()  # writers such as DuckDB want to create the file themselves
    try:
        yield tmp
        if tmp.exists():
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_parquet_atomic(frame: pl.DataFrame, target: str | Path) -> Path:
    """Write ``frame`` to ``target`` as Parquet (zstd) atomically and return the target path."""
    target = Path(target)
    with atomic_path(target) as tmp:
        frame.write_parquet(tmp, compression="zstd", statistics=True)
    return target


def sink_parquet_atomic(frame: pl.LazyFrame, target: str | Path) -> Path:
    """Stream ``frame`` into ``target`` as Parquet atomically (bounded memory for large inputs)."""
    target = Path(target)
    with atomic_path(target) as tmp:
        frame.sink_parquet(tmp, compression="zstd", statistics=True)
    return target
