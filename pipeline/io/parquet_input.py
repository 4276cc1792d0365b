"""Parquet input: the stored dtypes, read column by column (the large-data path, no per-row
Python), and read in slices of row groups of bounded size (:func:`parquet_slices`) by
:func:`pipeline.io.readers.iter_records`; :func:`parquet_keys_unique` tells whether a file's
keys are unique from its data alone."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from pipeline.config import Config
from pipeline.io.canonical import _finish, _first_line, _require, extra_columns
from pipeline.io.columns import (
    plan_columns,
)
from pipeline.schema import (
    RECORD_SCHEMA,
    InputError,
)


def _read_parquet(path: Path, source: str, config: Config,
                  keep: Sequence[str] | None = (), missing_ok: bool = False) -> pl.DataFrame:
    try:
        schema = pl.read_parquet_schema(path)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputError(f"{source}: not a readable Parquet file: {exc}") from exc
    plan = _require(schema, source, config)
    extras = extra_columns(schema, plan, source, keep, missing_ok=missing_ok)
    try:
        frame = pl.read_parquet(path, columns=[*plan.sources, *extras])
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
        raise InputError(f"{source}: cannot read Parquet data: {_first_line(exc)}") from exc
    return _finish(frame, plan, source, extras=extras)


#: A row group up to this many times ``chunk_rows`` (and :data:`MAX_GROUP_BYTES`) is read as one
#: chunk rather than in slices, each of which would decode the whole group again.
MAX_GROUP_CHUNKS = 4
MAX_GROUP_BYTES = 256 * 2**20


#: The first slice of a file holds at most this many rows: the run scores them while the rest
#: of the first row group is read. polars stops decoding a group at the end of a slice (25,000
#: rows of a 250,000-row group of the benchmark's records: 0.04-0.07 s, the whole group
#: 0.14-0.28 s), so on 1M short rows the first batch starts 0.38 s after the engine instead of
#: about 1 s (docs/benchmarks.md).
FIRST_SLICE_ROWS = 25_000


def parquet_slices(groups: Sequence[tuple[int, int]], chunk_rows: int,
                   first_rows: int = FIRST_SLICE_ROWS) -> Iterator[tuple[int, int]]:
    """``(offset, rows)`` slices of a file with row groups ``groups`` (rows, uncompressed bytes).

    Small consecutive groups are joined up to ``chunk_rows``; a group of up to
    :data:`MAX_GROUP_CHUNKS` chunks (and :data:`MAX_GROUP_BYTES`) is one slice; a larger group is
    cut into ``chunk_rows`` slices, bounding memory at the price of decoding it once per slice.
    The first slice is cut after ``first_rows`` rows (:data:`FIRST_SLICE_ROWS`).

    >>> list(parquet_slices([(30, 1), (30, 1), (50, 1), (250, 1), (500, 1)], 100, 40))
    [(0, 40), (40, 20), (60, 50), (110, 250), (360, 100), (460, 100), (560, 100), (660, 100), \
(760, 100)]
    """
    slices = _group_slices(groups, chunk_rows)
    offset, rows = next(slices, (0, 0))
    if rows > first_rows:
        yield offset, first_rows
        offset, rows = offset + first_rows, rows - first_rows
    if rows:
        yield offset, rows
    yield from slices


def _group_slices(groups: Sequence[tuple[int, int]], chunk_rows: int
                  ) -> Iterator[tuple[int, int]]:
    """:func:`parquet_slices` without the cut of the first slice.

    >>> list(_group_slices([(30, 1), (30, 1), (50, 1), (250, 1), (500, 1)], 100))
    [(0, 60), (60, 50), (110, 250), (360, 100), (460, 100), (560, 100), (660, 100), (760, 100)]
    """
    offset = start = 0
    for rows, n_bytes in groups:
        if offset > start and offset - start + rows > chunk_rows:
            yield start, offset - start
            start = offset
        if rows > chunk_rows:
            if offset > start:
                yield start, offset - start
            if rows <= MAX_GROUP_CHUNKS * chunk_rows and n_bytes <= MAX_GROUP_BYTES:
                yield offset, rows
            else:
                for cut in range(offset, offset + rows, chunk_rows):
                    yield cut, min(chunk_rows, offset + rows - cut)
            start = offset + rows
        offset += rows
    if offset > start:
        yield start, offset - start


def parquet_keys_unique(path: str | Path, config: Config, keys: Sequence[str]) -> bool:
    """True when no two rows of the Parquet file ``path`` share their raw ``keys`` values.

    Reads only the key columns. Answers False (so that the caller checks keys after
    validation) whenever raw and canonical values might not correspond one to one: a file that
    is not Parquet, or a key column stored in another dtype than its canonical one (``"0.5"``
    and ``"0.50"`` differ as text but not as numbers). When it answers True, the validated
    keys are unique too, since validation never changes a value of a canonical dtype.

    A key column the file is labelled with (``--model``) but also holds answers False (nulls
    take the label); a derived ``id`` is unique within the other keys by construction
    (:mod:`pipeline.io.derived_ids`), so such a file answers True once the dtypes agree.
    """
    source = os.fspath(path)
    if Path(source).suffix.lower() != ".parquet":
        return False
    try:
        schema = pl.scan_parquet(source, hive_partitioning=False).collect_schema()
        plan = plan_columns(schema, source, config)
    except (pl.exceptions.PolarsError, OSError, InputError):
        return False
    labels = config.input_labels.get(source, {})
    if any(name in labels for name in plan.canonical if name in keys):
        return False
    present = {src: name for src, name in plan.pairs if name in keys}
    if any(schema[src] != RECORD_SCHEMA[name] for src, name in present.items()):
        return False
    if "id" in keys and "id" not in plan.canonical:
        return True
    if not present:
        return pq.ParquetFile(source).metadata.num_rows <= 1
    # Distinct hashes of the keys (polars' in-process hash): equal counts prove the keys
    # distinct; a hash collision can only answer False, which is always safe.
    key = pl.struct(list(present)).hash()
    try:
        distinct = (
            pl.scan_parquet(source, hive_partitioning=False)
            .select(key.n_unique() == pl.len()).collect().item()
        )
    except (pl.exceptions.PolarsError, OSError):
        return False
    return bool(distinct)
