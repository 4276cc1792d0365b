"""One Parquet file over inputs whose other columns differ: the kept columns in a run's texts.

The readers keep an input's other columns (a user's ``label``; ``[columns] keep``,
:func:`pipeline.io.readers.extra_columns`) with the dtypes the input gives them, so two inputs
of one run may bring different columns, or one column with different dtypes.
:class:`UnionWriter` writes them under one schema, by the rule of docs/input-formats.md
("Other columns"):

* the file holds the union of the kept columns of every input, after the fixed columns, in the
  order they first appear; a row of an input without one of them holds null there;
* a column has the dtype of the first input that gives it one (a JSON key whose every value is
  null has none yet; a column that never gets one is text);
* another dtype in a later input is an :class:`~pipeline.schema.InputError` that names the
  column, both inputs and both dtypes: nothing is cast behind the user's back.

Chunks are written as they come, in bounded memory. While the schema holds, one file is
written; a chunk that widens it starts another segment, and :meth:`UnionWriter.close` copies the
segments into the target, slice by slice, under the final schema.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.io.parquet_options import parquet_writer
from pipeline.schema import InputError

log = logging.getLogger(__name__)

#: Rows per slice when segments are copied into the target.
MERGE_ROWS = 100_000
#: ``to_arrow`` as Arrow string views, polars' own layout: the table shares the frame's buffers
#: instead of copying every text into Arrow's large strings (pyarrow >= 21 writes them).
STRING_VIEWS = pl.CompatLevel.newest()


class UnionWriter:
    """``target`` (Parquet) written chunk by chunk: the ``base`` columns, then the union of the
    other columns of the chunks, by the rule of this module.

    :meth:`conform` checks a chunk and returns it as an Arrow table of the segment it belongs
    to (call it in input order); :meth:`write` writes such tables in the same order (it may run
    on another thread); :meth:`close` finishes the file.
    """

    def __init__(self, target: Path, base: Mapping[str, pl.DataType]) -> None:
        self.target = target
        self._base = dict(base)
        self._dtypes: dict[str, pl.DataType] = {}
        self._first: dict[str, str] = {}
        self._names: list[str] = []
        self._current: dict[str, pl.DataType] | None = None
        self._segments: list[Path] = []
        self._writer: pq.ParquetWriter | None = None
        self._schema: pa.Schema | None = None

    @property
    def columns(self) -> list[str]:
        """The other columns met so far, in the order they first appeared."""
        return list(self._names)

    def conform(self, frame: pl.DataFrame, source: str) -> pa.Table:
        """``frame`` (the base columns, then the other columns ``source`` kept) as a table of
        the current segment, or of a new one when it brings a column or a dtype the current
        one lacks. Raises InputError for a dtype that differs from an earlier input's."""
        for name, dtype in frame.schema.items():
            if name in self._base:
                continue
            if name not in self._names:
                self._names.append(name)
            if dtype == pl.Null():
                continue
            known = self._dtypes.get(name)
            if known is None:
                self._dtypes[name], self._first[name] = dtype, source
            elif known != dtype:
                raise InputError(
                    f"{source}: the kept column {name!r} is {dtype} here but {known} in "
                    f"{self._first[name]}; a kept column has one type in every input "
                    "(docs/input-formats.md, \"Other columns\"): give it one, or leave it out "
                    "with [columns] keep"
                )
        union = self._union()
        current = self._current
        if current is None or any(
            name not in current or current[name] != union[name] for name in frame.columns
        ):
            self._current = current = union
        # Large strings (the default) copied every text: 0.06 s and ~200 MB a 250k-row chunk
        # of short answers with their passages, held while it waited to be written.
        return _conformed(frame, current).to_arrow(compat_level=STRING_VIEWS)

    def write(self, table: pa.Table) -> None:
        """Append ``table`` (from :meth:`conform`, in the same order) to its segment."""
        if self._writer is None or table.schema != self._schema:
            if self._writer is not None:
                self._writer.close()
            path = self.target if not self._segments else self.target.with_name(
                f"{self.target.name}.{len(self._segments)}"
            )
            self._segments.append(path)
            self._writer, self._schema = parquet_writer(path, table.schema), table.schema
        self._writer.write_table(table)

    def close(self) -> None:
        """Finish the target: one segment is the target itself; several are copied into it
        under the final schema. A writer that wrote nothing leaves the base columns' empty
        file."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        final = self._union()
        if not self._segments:
            pq.write_table(pl.DataFrame(schema=final).to_arrow(), self.target,
                           compression="zstd")
            return
        if len(self._segments) == 1:
            return
        log.info("%s: %d segments of other columns joined under one schema", self.target,
                 len(self._segments))
        merged = self.target.with_name(f"{self.target.name}.merged")
        schema = pl.DataFrame(schema=final).to_arrow().schema
        with parquet_writer(merged, schema) as out:
            for path in self._segments:
                rows = pq.ParquetFile(path).metadata.num_rows
                scan = pl.scan_parquet(path, hive_partitioning=False)
                for offset in range(0, rows, MERGE_ROWS):
                    part = _conformed(scan.slice(offset, MERGE_ROWS).collect(), final)
                    out.write_table(part.to_arrow().cast(schema))
        for path in self._segments[1:]:
            path.unlink()
        os.replace(merged, self.target)

    def abort(self) -> None:
        """Close and remove every segment but the target (which the caller removes)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        for path in self._segments[1:]:
            path.unlink(missing_ok=True)
        self.target.with_name(f"{self.target.name}.merged").unlink(missing_ok=True)

    def _union(self) -> dict[str, pl.DataType]:
        return {**self._base, **{name: self._dtypes.get(name, pl.String()) for name in self._names}}


def _conformed(frame: pl.DataFrame, schema: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """``frame`` with the columns and dtypes of ``schema``: a column it lacks, or holds without
    a value, is a typed null; one read back under a kindred dtype is cast (strictly)."""
    return frame.select(
        pl.col(name) if frame.schema.get(name) == dtype
        else pl.lit(None, dtype).alias(name)
        if name not in frame.columns or frame[name].null_count() == frame.height
        else pl.col(name).cast(dtype)
        for name, dtype in schema.items()
    )


@contextmanager
def union_writer(target: Path, base: Mapping[str, pl.DataType]) -> Iterator[UnionWriter]:
    """A :class:`UnionWriter`, closed when the block ends, aborted when it raises."""
    writer = UnionWriter(target, base)
    try:
        yield writer
    except BaseException:
        writer.abort()
        raise
    writer.close()
