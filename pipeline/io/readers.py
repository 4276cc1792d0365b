"""Read evaluation records from Parquet, JSON Lines, JSON arrays, CSV and TSV files.

Every reader returns the file's canonical columns, renamed from the names in the file through
``config.columns`` (canonical -> name in the file) or a known layout's names
(:mod:`pipeline.io.columns`: RAGAS, Hugging Face ``datasets`` exports), followed by the
provenance columns ``source`` (the path as given) and ``row_number`` (0-based index of the record
in the file). The input's other columns are dropped with a warning that names them, unless the
caller asks to keep them (``keep``: :func:`read_records`, :func:`read_frame`); kept, they follow
the provenance columns as read. Readers never cast or coerce a value;
:mod:`pipeline.validate` turns the columns into the dtypes of
:data:`pipeline.schema.RECORD_SCHEMA` or rejects the row with a reason.

Three things every reader does last (:func:`_complete`): a text cell of a list column written as
a Python list repr (pandas ``to_csv``) becomes the JSON array it denotes
(:mod:`pipeline.io.pylists`); a file without ``id`` gets ids derived from each row's content
(:mod:`pipeline.io.derived_ids`); and the labels given for the file on the command line
(``--model``, ``--run-label``: ``config.input_labels``) fill the ``model`` and ``run`` columns,
a row whose own value differs being rejected with the reason.

What a reader hands to validation, by format:

* Parquet: the stored dtypes, read column by column (the large-data path; no per-row Python).
* CSV and TSV: every column as text, no inference. An empty cell is ``""`` in the required text
  columns and null in every optional column.
* JSON and JSON Lines: a column is given its canonical dtype when every value in the file already
  has the matching JSON type. Otherwise it becomes a :data:`JSON_VALUE` struct that records the
  JSON type of each value, so that validation can reject ``"question": 7`` as
  ``question: expected string, got int`` instead of converting it.

A record the reader cannot read is still a row, so that it is rejected rather than lost or
guessed at: a CSV or TSV row whose field count differs from the header's, whose quoting is
malformed, or that the file ends inside; a JSON record with text that is not valid Unicode (a lone
surrogate such as ``"\ud800"``). Such a frame carries :data:`~pipeline.schema.READER_PROBLEM` and
:data:`~pipeline.schema.READER_RAW` (see :mod:`pipeline.schema`); clean files do not. What cannot
be read as records at all (duplicate column names, a key repeated inside a JSON object, invalid
JSON) raises :class:`~pipeline.schema.InputError`. The rules: ``docs/input-integrity.md``.

Where each part lives: the steps every reader shares (canonical names, required and other
columns) in :mod:`pipeline.io.canonical`; what every reader does last in
:mod:`pipeline.io.completion`; one module per layout: :mod:`pipeline.io.parquet_input`,
:mod:`pipeline.io.delimited` (CSV, TSV), :mod:`pipeline.io.json_input` (JSON, JSON Lines);
the size limits of a record in :mod:`pipeline.io.record_limits`. This module holds the entry
points (:func:`read_records`, :func:`read_frame`, :func:`iter_records`,
:func:`record_count`) and :data:`READERS`, the reader of each file suffix.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config import Config
from pipeline.io.canonical import JSON_VALUE as JSON_VALUE
from pipeline.io.canonical import Reader, _canonical, _finish, _first_line, _require
from pipeline.io.canonical import check_file as check_file
from pipeline.io.canonical import extra_columns as extra_columns
from pipeline.io.columns import missing_column_error as missing_column_error
from pipeline.io.columns import source_names as source_names
from pipeline.io.completion import _complete, _file_ids
from pipeline.io.delimited import _delimited
from pipeline.io.json_input import _read_json, _read_jsonl
from pipeline.io.json_input import json_columns as json_columns
from pipeline.io.json_input import json_kind as json_kind
from pipeline.io.json_input import load_json_array as load_json_array
from pipeline.io.json_input import without_lone_surrogates as without_lone_surrogates
from pipeline.io.parquet_input import _read_parquet, parquet_slices
from pipeline.io.parquet_input import parquet_keys_unique as parquet_keys_unique
from pipeline.schema import READER_PROBLEM as READER_PROBLEM
from pipeline.schema import ROW_COLUMN, InputError

#: The readers' logger (its records name ``pipeline.io.readers``, as before the split).
log = logging.getLogger("pipeline.io.readers")


def read_records(
    path: str | Path, config: Config, keep: Sequence[str] | None = (), *,
    missing_ok: bool = False,
) -> pl.DataFrame:
    """Read one records file, choosing the reader by extension; ``keep``: the file's other
    columns to keep after the provenance columns (None: every one; :func:`extra_columns`, with
    ``missing_ok``).

    Raises :class:`~pipeline.schema.InputError` for an unknown extension, a missing, unreadable,
    malformed or empty file, and :class:`~pipeline.schema.MissingColumnError` when a required
    column is absent.

    >>> read_records("scores.xlsx", Config())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    pipeline.errors.InputError: scores.xlsx: unknown file extension '.xlsx'; supported: ...
    """
    source = os.fspath(path)
    suffix = Path(source).suffix.lower()
    reader = READERS.get(suffix)
    if reader is None:
        raise InputError(
            f"{source}: unknown file extension {suffix!r}; supported: {', '.join(READERS)}"
        )
    check_file(Path(source), source)
    frame = reader(Path(source), source, config, keep, missing_ok)
    if frame.height == 0:
        raise InputError(f"{source}: the file contains no records")
    frame = _complete(frame, source, config)
    log.debug("%s: read %d rows, columns %s", source, frame.height, frame.columns)
    return frame


def read_frame(
    frame: pl.DataFrame | pl.LazyFrame, source: str, config: Config,
    keep: Sequence[str] | None = (),
) -> pl.DataFrame:
    """An in-memory frame read as :func:`read_records` reads a Parquet file with its columns:
    the canonical columns (``config.columns``, known layouts, SQuAD answers), ``source`` (as
    given, the name its rows are reported under), ``row_number``, Python list reprs as JSON,
    derived ids and ``config.input_labels`` of ``source``, then the columns ``keep`` names
    (None: every other column). Only the columns it reads are collected from a LazyFrame.

    Raises :class:`~pipeline.schema.MissingColumnError` when a required column is absent and
    :class:`~pipeline.schema.InputError` for a frame without rows.

    >>> read_frame(pl.DataFrame({"user_input": ["Capital of France?"], "response": ["Paris"],
    ...     "reference": ["Paris"], "extra": [1]}), "<data>", Config()).columns[:5]
    ['id', 'question', 'reference', 'response', 'source']
    """
    lazy = frame.lazy()
    names = lazy.collect_schema().names()
    plan = _require(names, source, config)
    extras = extra_columns(names, plan, source, keep)
    found = lazy.select(*plan.sources, *extras).collect()
    if found.height == 0:
        raise InputError(f"{source}: the data holds no records")
    return _complete(_finish(found, plan, source, extras=extras), source, config)


def record_count(path: str | Path) -> int | None:
    """The number of records of a Parquet file, from its metadata (nothing else is read); None
    for the text formats, whose records are known only once parsed, and unreadable files."""
    if Path(path).suffix.lower() != ".parquet":
        return None
    try:
        return int(pq.ParquetFile(path).metadata.num_rows)
    except (pa.ArrowException, OSError):
        return None


def _unchanged(path: Path, source: str, before: os.stat_result) -> None:
    """Raise InputError when the file at ``path`` is no longer the one first read: replaced,
    cut short or written to while the run reads it slice by slice."""
    try:
        now = path.stat()
    except OSError as exc:
        raise InputError(f"{source}: the file went away while it was read: {exc.strerror}") from exc
    if (now.st_ino, now.st_size, now.st_mtime_ns) != (
        before.st_ino, before.st_size, before.st_mtime_ns
    ):
        raise InputError(
            f"{source}: the file changed while it was read (was {before.st_size} bytes, now "
            f"{now.st_size}): run again once it stays put"
        )


def iter_records(
    path: str | Path, config: Config, chunk_rows: int, keep: Sequence[str] | None = (), *,
    missing_ok: bool = False,
) -> Iterator[pl.DataFrame]:
    """:func:`read_records` in chunks of at most ``chunk_rows`` rows, for bounded memory, with
    the other columns ``keep`` names (:func:`extra_columns`).

    Parquet is read slice by slice (a lazy polars scan reads only the row groups a slice
    needs), so memory holds one chunk; the text formats (CSV, TSV, JSON Lines, JSON) are
    parsed whole, then sliced. Row numbers continue across chunks, as if the file were read at
    once.
    """
    source = os.fspath(path)
    if Path(source).suffix.lower() != ".parquet":
        frame = read_records(path, config, keep, missing_ok=missing_ok)
        for offset in range(0, frame.height, chunk_rows):
            yield frame.slice(offset, chunk_rows)
        return
    check_file(Path(source), source)
    try:
        before = Path(source).stat()
        handle = pq.ParquetFile(source)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{source}: not a readable Parquet file: {exc}") from exc
    plan = _require(handle.schema_arrow.names, source, config)
    extras = extra_columns(handle.schema_arrow.names, plan, source, keep, missing_ok=missing_ok)
    n_rows = handle.metadata.num_rows
    if n_rows == 0:
        raise InputError(f"{source}: the file contains no records")
    # polars slices of one lazy scan read only the row groups they need, and unlike pyarrow's
    # batch iterator they leave no memory behind between chunks (measured: flat RSS). Slices
    # follow row-group boundaries, but for the first (parquet_slices: polars 2 decodes a group
    # only as far as a slice reaches into it).
    scan = pl.scan_parquet(source, hive_partitioning=False).select(*plan.sources, *extras)
    groups = [(handle.metadata.row_group(i).num_rows, handle.metadata.row_group(i).total_byte_size)
              for i in range(handle.metadata.num_row_groups)]
    try:
        ids = None
        if "id" not in plan.canonical:  # derived over the whole file, as the file streams by
            canonical = scan.select(
                *_canonical(plan, scan.collect_schema()),
                pl.int_range(pl.len(), dtype=pl.Int64).alias(ROW_COLUMN),
            )
            ids = _file_ids(canonical, canonical.collect_schema(), source,
                            config.input_labels.get(source, {}))
        for offset, rows in parquet_slices(groups, chunk_rows):
            _unchanged(Path(source), source, before)  # a cut file makes polars panic
            chunk = _finish(scan.slice(offset, rows).collect(), plan, source, offset, extras)
            chunk = _complete(chunk, source, config,
                              None if ids is None else ids.slice(offset, rows))
            # A row group read whole goes on in chunks of ``chunk_rows``: the first rows are
            # validated and scored while the rest of the group waits (views, no copies).
            for start in range(0, chunk.height, chunk_rows):
                yield chunk.slice(start, chunk_rows)
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
        _unchanged(Path(source), source, before)
        raise InputError(f"{source}: cannot read Parquet data: {_first_line(exc)}") from exc


READERS: dict[str, Reader] = {
    ".parquet": _read_parquet,
    ".jsonl": _read_jsonl,
    ".ndjson": _read_jsonl,
    ".json": _read_json,
    ".csv": _delimited(","),
    ".tsv": _delimited("\t"),
}
