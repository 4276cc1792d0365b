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
surrogate such as ``"\\ud800"``). Such a frame carries :data:`~pipeline.schema.READER_PROBLEM` and
:data:`~pipeline.schema.READER_RAW` (see :mod:`pipeline.schema`); clean files do not. What cannot
be read as records at all (duplicate column names, a key repeated inside a JSON object, invalid
JSON) raises :class:`~pipeline.schema.InputError`. The rules: ``docs/input-integrity.md``.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import logging
import operator
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from pipeline.config import Config
from pipeline.io.columns import (  # noqa: F401 - source_names is re-exported (Spark engine)
    ColumnPlan,
    layout_names,
    missing_column_error,
    plan_columns,
    source_names,
)
from pipeline.io.derived_ids import ID_KEYS, derived_ids
from pipeline.io.layout import RUN_PARTITION
from pipeline.io.pylists import python_lists_as_json_series
from pipeline.schema import (
    PROVENANCE_SCHEMA,
    READER_PROBLEM,
    READER_RAW,
    READER_SCHEMA,
    RECORD_SCHEMA,
    REQUIRED_COLUMNS,
    ROW_COLUMN,
    SOURCE_COLUMN,
    InputError,
)

log = logging.getLogger(__name__)

#: A JSON column whose values do not all have the expected JSON type: one struct per value with
#: ``kind`` (``string``, ``int``, ``float``, ``bool``, ``list``, ``object`` or null for JSON null),
#: the value itself in the field of its kind (``int`` is null when it does not fit in Int64;
#: ``float`` also holds ints), and ``json``, the value written back as JSON text.
JSON_VALUE = pl.Struct(
    {
        "kind": pl.String(),
        "string": pl.String(),
        "int": pl.Int64(),
        "float": pl.Float64(),
        "json": pl.String(),
    }
)

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
#: A format's reader: (path, source as given, config, columns to keep, whether a kept name
#: may be absent from the file) -> the frame.
Reader = Callable[[Path, str, Config, Sequence[str] | None, bool], pl.DataFrame]

#: Most bytes of one record: a line of JSON Lines, or the text of one row of any format
#: (question, reference, response, references and contexts together), about four million
#: tokens. A longer record is rejected with the reason (a JSON Lines line is skipped in bounded
#: reads, never held whole), so one absurd row cannot take the memory and time of the run: the
#: default metrics hold about 170 bytes per byte of one huge text at once (a 15 MB response:
#: 19 s and 2.6 GB on 2 cores). docs/input-integrity.md.
MAX_RECORD_BYTES = 16 * 2**20
#: Bytes read at a time where a file is scanned rather than held (whitespace, long lines).
_SCAN_BYTES = 2**20


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
    pipeline.schema.InputError: scores.xlsx: unknown file extension '.xlsx'; supported: ...
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


# --- shared steps -------------------------------------------------------------------------------


def check_file(path: Path, source: str) -> None:
    """Raise InputError unless ``path`` is an existing, non-empty regular file."""
    if not path.exists():
        raise InputError(f"{source}: file not found")
    if not path.is_file():
        raise InputError(f"{source}: not a regular file")
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise InputError(f"{source}: cannot read the file: {exc}") from exc
    if size == 0:
        raise InputError(f"{source}: the file is empty")
    if path.suffix.lower() != ".parquet" and only_whitespace(path):
        raise InputError(f"{source}: the file contains no records (only whitespace)")


def only_whitespace(path: Path) -> bool:
    """True when the text file ``path`` holds nothing but ASCII whitespace (and a UTF-8 byte
    order mark), read :data:`_SCAN_BYTES` at a time: a gigabyte of blank lines is refused
    without being held."""
    try:
        with open(path, "rb") as handle:
            chunk = handle.read(_SCAN_BYTES)
            if chunk.startswith(codecs.BOM_UTF8):
                chunk = chunk[len(codecs.BOM_UTF8):]
            while chunk:
                if chunk.strip():
                    return False
                chunk = handle.read(_SCAN_BYTES)
    except OSError as exc:
        raise InputError(f"{path}: cannot read the file: {exc.strerror}") from exc
    return True


def _require(
    available: Iterable[str], source: str, config: Config, *, squad_answers: bool = True
) -> ColumnPlan:
    """Where each canonical column is read from (:func:`~pipeline.io.columns.plan_columns`);
    raises when a required column other than ``id`` is absent."""
    plan = plan_columns(available, source, config, squad_answers=squad_answers)
    if plan.layout or plan.answers is not None:
        log.info("%s: read with the names of a known layout: %s", source, layout_names(plan))
    return plan


#: Names an input column keeps only under a canonical column: never carried as another column.
_RESERVED = frozenset({*RECORD_SCHEMA, *PROVENANCE_SCHEMA, *READER_SCHEMA, "row_hash",
                       "signature", RUN_PARTITION})


def extra_columns(
    available: Iterable[str], plan: ColumnPlan, source: str, keep: Sequence[str] | None, *,
    missing_ok: bool = False,
) -> list[str]:
    """The input's columns that no canonical column reads (a user's ``label``) and ``keep``
    names (None: all of them; ``[columns] keep`` of the config), in the input's order. The
    others are logged as not read, so none goes silently; a name of ``keep`` that is a
    canonical or reserved column raises InputError, and so does one the input does not have,
    unless ``missing_ok`` (a run of several inputs, where another input may hold it).

    >>> plan = ColumnPlan(pairs=(("question", "question"), ("answer", "response")))
    >>> extra_columns(["question", "answer", "label", "topic"], plan, "f.csv", None)
    ['label', 'topic']
    """
    read = set(plan.sources)
    others = [name for name in dict.fromkeys(available)  # "": pandas' index, ignored
              if name and name not in read and name not in _RESERVED]
    wanted = others if keep is None else list(dict.fromkeys(keep))
    for name in wanted:
        if name not in others and not (missing_ok and name not in read | _RESERVED):
            why = ("is read as a canonical column" if name in read or name in _RESERVED
                   else "is no column of the input")
            raise InputError(f"{source}: the columns to keep ([columns] keep; keep_columns) "
                             f"name {name!r}, which {why}; other columns: "
                             f"{', '.join(others) or 'none'}")
    dropped = [name for name in others if name not in wanted]
    if dropped:
        log.warning("%s: column(s) %s are not read: no canonical column reads them and the "
                    "config's [columns] keep (rag-eval --keep-columns; pipeline.score: "
                    "keep_columns) leaves them out (docs/input-formats.md, \"Other columns\"); "
                    "name them in keep, or map one with --column CANONICAL=NAME", source,
                    ", ".join(dropped))
    return [name for name in wanted if name in others]


def _canonical(plan: ColumnPlan, schema: Mapping[str, pl.DataType]) -> list[pl.Expr]:
    """The canonical columns of ``plan`` from a frame with ``schema``: each file column under
    its canonical name, and SQuAD v2 answers as ``reference`` and ``references``."""
    columns = [pl.col(src).alias(name) for src, name in plan.pairs]
    if plan.answers is not None:
        columns += squad_answer_columns(pl.col(plan.answers), schema[plan.answers])
    return columns


def squad_answer_columns(answers: pl.Expr, dtype: pl.DataType) -> list[pl.Expr]:
    """``reference`` and ``references`` from a SQuAD v2 ``answers`` column: a struct with a
    ``text`` list (Hugging Face ``squad_v2``) or a list of texts. ``reference`` is the first
    text, ``""`` for an empty list (SQuAD v2's unanswerable question, read as unanswerable by
    :func:`pipeline.metrics.qa.abstention.is_unanswerable`); ``references`` the other texts.
    A value of another shape gives a null ``reference``, which validation rejects.

    >>> frame = pl.DataFrame({"a": [{"text": ["France", "FR"]}, {"text": []}]},
    ...                      schema={"a": pl.Struct({"text": pl.List(pl.String)})})
    >>> frame.select(squad_answer_columns(pl.col("a"), frame.schema["a"])).rows()
    [('France', ['FR']), ('', [])]
    """
    texts: pl.Expr
    if isinstance(dtype, pl.Struct) and "text" in {f.name for f in dtype.fields}:
        field = next(f for f in dtype.fields if f.name == "text")
        texts = answers.struct.field("text")
        if not (isinstance(field.dtype, pl.List) and field.dtype.inner == pl.String()):
            texts = pl.lit(None, pl.List(pl.String))
    elif isinstance(dtype, pl.List) and dtype.inner == pl.String():
        texts = answers
    else:
        texts = pl.lit(None, pl.List(pl.String))
    reference = pl.when(texts.list.len() == 0).then(pl.lit("")).otherwise(texts.list.first())
    return [reference.alias("reference"), texts.list.slice(1).alias("references")]


def _finish(frame: pl.DataFrame, plan: ColumnPlan, source: str, offset: int = 0,
            extras: Sequence[str] = ()) -> pl.DataFrame:
    """Canonical columns in schema order, then ``source`` and ``row_number`` (from ``offset``),
    then the reader's problem columns where ``frame`` has them, then the kept ``extras``."""
    problems = [c for c in READER_SCHEMA if c in frame.columns]
    return frame.select(
        *_canonical(plan, frame.schema),
        pl.lit(source, dtype=pl.String).alias(SOURCE_COLUMN),
        (pl.int_range(pl.len(), dtype=pl.Int64) + offset).alias(ROW_COLUMN),
        *problems,
        *extras,
    )


# --- what every reader does last: list reprs, derived ids, labels -------------------------------

#: List columns whose text cells may hold a Python list repr (pandas ``to_csv``).
_LIST_COLUMNS = tuple(name for name, dtype in RECORD_SCHEMA.items() if isinstance(dtype, pl.List))
#: The command-line flag of each label column, as named in reasons.
LABEL_FLAGS: dict[str, str] = {"model": "--model", "run": "--run-label"}


def _complete(
    frame: pl.DataFrame, source: str, config: Config, ids: pl.Series | None = None
) -> pl.DataFrame:
    """``frame`` (a reader's output: a whole file, or the slice of one that ``ids`` belongs to)
    with Python list reprs as JSON, the derived ``id`` where the file has none, and the file's
    labels; canonical columns in schema order, then provenance and problem columns."""
    frame = frame.with_columns(
        python_lists_as_json_series(frame[name], nested=RECORD_SCHEMA[name] == _NESTED)
        for name in _LIST_COLUMNS
        if name in frame.columns and frame.schema[name] == pl.String()
    )
    frame = _oversized(frame)
    labels = config.input_labels.get(source, {})
    if "id" not in frame.columns:
        if ids is None:
            ids = _file_ids(frame.lazy(), frame.schema, source, labels)
        unread = (
            pl.col(READER_PROBLEM).is_not_null() if READER_PROBLEM in frame.columns
            else pl.lit(False)
        )  # a record the reader could not read has no trustworthy content
        frame = frame.with_columns(pl.when(~unread).then(pl.lit(ids)).alias("id"))
    frame = _labelled(frame, labels)
    canonical = [name for name in RECORD_SCHEMA if name in frame.columns]
    rest = [c for c in frame.columns if c not in RECORD_SCHEMA]
    return frame.select(*canonical, *rest)


_NESTED = pl.List(pl.List(pl.String()))
#: The columns whose text counts toward :data:`MAX_RECORD_BYTES`.
_TEXT_COLUMNS = ("question", "reference", "response", "references", "contexts")


def _text_bytes(name: str, dtype: pl.DataType) -> pl.Expr | None:
    """UTF-8 bytes of the text of column ``name`` per row (0 for null), None for a column
    without text."""
    if dtype == pl.String():
        return pl.col(name).str.len_bytes().fill_null(0)
    if dtype == JSON_VALUE:
        return pl.col(name).struct.field("string").str.len_bytes().fill_null(0)
    if dtype == pl.List(pl.String()):
        return pl.col(name).list.eval(pl.element().str.len_bytes()).list.sum().fill_null(0)
    return None


def _oversized(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with rows holding more than :data:`MAX_RECORD_BYTES` of text marked as a
    reader problem (``the row holds 40.0 MiB of text, more than the 16 MiB a record may
    hold``); their text is dropped, so it goes no further than this check."""
    sizes = [size for name in _TEXT_COLUMNS if name in frame.columns
             if (size := _text_bytes(name, frame.schema[name])) is not None]
    if not sizes:
        return frame
    total = frame.select(pl.sum_horizontal(sizes).cast(pl.Int64)).to_series()
    if total.max() is None or int(total.max()) <= MAX_RECORD_BYTES:  # type: ignore[arg-type]
        return frame
    over = total > MAX_RECORD_BYTES
    problem = pl.when(pl.lit(over)).then(pl.format(
        "the row holds {} MiB of text, more than the {} MiB a record may hold "
        "(docs/input-integrity.md)", (pl.lit(total) / 2**20).round(1),
        pl.lit(MAX_RECORD_BYTES // 2**20),
    ))
    earlier = [pl.col(READER_PROBLEM)] if READER_PROBLEM in frame.columns else []
    joined = pl.concat_str([*earlier, problem], separator="; ", ignore_nulls=True)
    raw: pl.Expr = pl.when(pl.lit(over)).then(
        pl.lit('{"text_bytes":') + pl.lit(total).cast(pl.String) + pl.lit("}")
    )
    if READER_RAW in frame.columns:
        raw = pl.coalesce(pl.col(READER_RAW), raw)
    dropped = [
        pl.when(pl.lit(over)).then(None).otherwise(pl.col(name)).alias(name)
        for name in _TEXT_COLUMNS if name in frame.columns
    ]
    return frame.with_columns(
        *dropped, pl.when(joined != "").then(joined).alias(READER_PROBLEM), raw.alias(READER_RAW)
    )


def _text_of(name: str, dtype: pl.DataType) -> pl.Expr:
    """A raw column's values that are text (null elsewhere)."""
    if dtype == pl.String():
        return pl.col(name)
    if isinstance(dtype, (pl.Categorical, pl.Enum)):
        return pl.col(name).cast(pl.String)
    if dtype == JSON_VALUE:
        return pl.col(name).struct.field("string")
    return pl.lit(None, pl.String)


def _file_ids(
    frame: pl.LazyFrame, schema: Mapping[str, pl.DataType], source: str,
    labels: Mapping[str, str],
) -> pl.Series:
    """The derived ids of a whole file (``frame``: its canonical columns as read)."""
    question, reference = (
        _text_of(name, schema[name]) if name in schema else pl.lit(None, pl.String)
        for name in ("question", "reference")
    )
    # A labelled column holds one value on every row that is not rejected: not a key part.
    keys = [pl.col(name) for name in ID_KEYS if name in schema and name not in labels]
    ids, repeats = derived_ids(frame, question, reference, keys, pl.col(ROW_COLUMN))
    log.info("%s: no 'id' column: ids derived from question and reference "
             "(docs/input-formats.md#derived-ids)", source)
    if repeats:
        log.warning(
            "%s: %d row(s) repeat the question and reference of an earlier row with the same "
            "model, run, noise level and task; their derived ids end in #2, #3, ... "
            "(docs/input-formats.md#derived-ids)", source, repeats,
        )
    return ids


def _labelled(frame: pl.DataFrame, labels: Mapping[str, str]) -> pl.DataFrame:
    """``frame`` with each label's column set to it; a row whose own value differs is a reader
    problem (``model: 'a' in the file differs from --model 'b'``) and keeps its value."""
    found: list[pl.Expr] = []
    columns: list[pl.Expr] = []
    for name, value in labels.items():
        if name not in frame.columns:
            columns.append(pl.lit(value, pl.String).alias(name))
            continue
        dtype = frame.schema[name]
        raw = pl.col(name)
        given = raw.struct.field("kind").is_not_null() if dtype == JSON_VALUE else raw.is_not_null()
        text = _text_of(name, dtype)
        differs = given & (text.is_null() | (text != value))
        shown = pl.when(text.is_not_null()).then(pl.format("'{}'", text)).otherwise(
            pl.lit("a value that is not text")
        )
        found.append(pl.when(differs).then(
            pl.format(f"{name}: {{}} in the file differs from {LABEL_FLAGS[name]} {value!r}",
                      shown)
        ))
        if dtype == JSON_VALUE:
            label = pl.struct(
                pl.lit("string").alias("kind"), pl.lit(value).alias("string"),
                pl.lit(None, pl.Int64).alias("int"), pl.lit(None, pl.Float64).alias("float"),
                pl.lit(json.dumps(value, ensure_ascii=False)).alias("json"),
            )
            columns.append(pl.when(given).then(raw).otherwise(label).alias(name))
        else:
            kept = raw if dtype == pl.String() else raw.cast(pl.String, strict=False)
            columns.append(pl.when(given).then(kept).otherwise(pl.lit(value)).alias(name))
    if not labels:
        return frame
    frame = frame.with_columns(columns)
    if not found:
        return frame
    earlier = [pl.col(READER_PROBLEM)] if READER_PROBLEM in frame.columns else []
    joined = pl.concat_str([*earlier, *found], separator="; ", ignore_nulls=True)
    problem = pl.when(joined != "").then(joined).alias(READER_PROBLEM)
    raw_text = pl.col(READER_RAW) if READER_RAW in frame.columns else pl.lit(None, pl.String)
    return frame.with_columns(problem, raw_text.alias(READER_RAW))


# --- Parquet ------------------------------------------------------------------------------------


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


def _first_line(exc: BaseException) -> str:
    """The first line of an exception's message (a Rust panic's runs on for pages)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


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
    # batch iterator they leave no memory behind between chunks (measured: flat RSS). A slice
    # decodes every row group it touches whole, so slices follow row-group boundaries.
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
            yield _complete(chunk, source, config,
                            None if ids is None else ids.slice(offset, rows))
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as exc:
        _unchanged(Path(source), source, before)
        raise InputError(f"{source}: cannot read Parquet data: {_first_line(exc)}") from exc


#: A row group up to this many times ``chunk_rows`` (and :data:`MAX_GROUP_BYTES`) is read as one
#: chunk rather than in slices, each of which would decode the whole group again.
MAX_GROUP_CHUNKS = 4
MAX_GROUP_BYTES = 256 * 2**20


def parquet_slices(groups: Sequence[tuple[int, int]], chunk_rows: int) -> Iterator[tuple[int, int]]:
    """``(offset, rows)`` slices of a file with row groups ``groups`` (rows, uncompressed bytes).

    Small consecutive groups are joined up to ``chunk_rows``; a group of up to
    :data:`MAX_GROUP_CHUNKS` chunks (and :data:`MAX_GROUP_BYTES`) is one slice; a larger group is
    cut into ``chunk_rows`` slices, bounding memory at the price of decoding it once per slice.

    >>> list(parquet_slices([(30, 1), (30, 1), (50, 1), (250, 1), (500, 1)], 100))
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


# --- CSV and TSV --------------------------------------------------------------------------------

#: Bytes after which a quoted field may open (and before which one may close), besides the
#: separator: the two line-break characters.
_LINE_BREAK_BYTES = (ord("\n"), ord("\r"))
_QUOTE_BYTE = ord('"')
#: Bytes checked at a time for UTF-8 (a bounded slice of the file is decoded at once).
_UTF8_CHUNK = 16 * 2**20


@dataclass(frozen=True)
class _Record:
    """One record of a delimited file as Python's ``csv`` module reads it."""

    line: int  #: the line it starts on (1-based)
    fields: list[str] | None  #: None when the record cannot be split into fields
    problem: str | None  #: why ``fields`` is None
    text: str  #: as in the file, without the line break that ends it
    terminated: bool  #: whether a line break ends it (all but a file's cut last record)


def _delimited(separator: str) -> Reader:
    kind = "TSV" if separator == "\t" else "CSV"

    def read(path: Path, source: str, config: Config,
             keep: Sequence[str] | None = (), missing_ok: bool = False) -> pl.DataFrame:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(f"{source}: cannot read the file: {exc}") from exc
        _check_utf8(data, source)
        with _unlimited_csv_fields():
            header = _header(data, separator, source, kind)
            # a delimited file holds SQuAD v2 answers as a repr: not read as that layout
            plan = _require(header, source, config, squad_answers=False)
            extras = extra_columns(header, plan, source, keep, missing_ok=missing_ok)
            columns = [*plan.sources, *extras]
            frame = _read_regular(data, separator, columns, source, kind)
            if frame is None:
                frame = _read_rows(data, separator, header, columns)
        frame = _finish(frame, plan, source, extras=extras)
        # A delimited file cannot tell an empty cell from a missing value: required text keeps
        # "" (a valid, empty answer), optional columns read an empty cell as missing.
        optional = [c for c in frame.columns if c in RECORD_SCHEMA and c not in REQUIRED_COLUMNS]
        return frame.with_columns(
            pl.when(pl.col(c) != "").then(pl.col(c)).alias(c) for c in optional
        )

    return read


def _check_utf8(data: bytes, source: str) -> None:
    """Raise InputError unless ``data`` is UTF-8, decoding a bounded slice at a time."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    try:
        for offset in range(0, len(data), _UTF8_CHUNK):
            decoder.decode(view[offset : offset + _UTF8_CHUNK])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        try:  # again at once, for the position of the bad byte in the whole file
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{source}: not UTF-8 text: {exc}") from exc
        raise  # pragma: no cover - a slice cannot fail where the whole file decodes


@contextmanager
def _unlimited_csv_fields() -> Iterator[None]:
    """Lift the ``csv`` module's 128 KiB field limit (a long context is longer) meanwhile."""
    previous = csv.field_size_limit(sys.maxsize)
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def _records(lines: Iterable[str], separator: str) -> Iterator[_Record]:
    """The records of a delimited file given as lines with their line breaks (``\\n``, ``\\r\\n``
    or ``\\r``), blank lines skipped, read by Python's ``csv`` module with RFC 4180 quoting
    (``strict``: ``"a"b`` is an error, not ``ab``).

    A record whose quoting is malformed, or inside whose quoted field the file ends, comes with
    ``fields`` None and the problem; the reader then goes on at the next line.
    """
    consumed: list[str] = []
    exhausted = False

    def feed() -> Iterator[str]:
        nonlocal exhausted
        for line in lines:
            consumed.append(line)
            yield line
        exhausted = True

    reader = csv.reader(feed(), delimiter=separator, strict=True)
    while True:
        start = reader.line_num + 1
        fields: list[str] | None
        problem = None
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            fields = None
            problem = (
                "the file ends inside a quoted field" if exhausted
                else f"malformed quoting: {exc}"
            )
        raw = "".join(consumed)
        consumed.clear()
        # A line break at the end of a quoted field the file ends inside is part of the field.
        text = raw if exhausted else raw.removesuffix("\n").removesuffix("\r")
        if fields != []:  # [] is a blank line
            yield _Record(start, fields, problem, text, terminated=text != raw)


def _text_lines(data: bytes) -> Iterator[str]:
    """The lines of UTF-8 ``data`` with their line breaks, decoded as they are read."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="")


def _header(data: bytes, separator: str, source: str, kind: str) -> list[str]:
    """The column names of the first record; InputError when it is malformed or repeats one."""
    record = next(_records(_text_lines(data), separator), None)
    if record is None:
        raise InputError(f"{source}: the file contains no records")
    if record.fields is None:
        raise InputError(f"{source}: line {record.line}: malformed {kind} header: "
                         f"{record.problem}")
    header = record.fields
    first: dict[str, int] = {}
    for position, name in enumerate(header, start=1):
        if name in first:
            raise InputError(
                f"{source}: duplicate column name {name!r} in the header "
                f"(columns {first[name]} and {position})"
            )
        first[name] = position
    return header


def _read_regular(
    data: bytes, separator: str, sources: Sequence[str], source: str, kind: str
) -> pl.DataFrame | None:
    """The columns ``sources``, parsed by Arrow's CSV reader (as text, on several threads),
    or None unless that provably gives what :func:`_records` would: every record ends with a
    line break, every quote sits where RFC 4180 puts one (:func:`_regular_quotes`) and every
    record has the header's field count (Arrow calls ``invalid_row_handler`` otherwise)."""
    if not data.endswith((b"\n", b"\r")) or not _regular_quotes(data, separator):
        return None
    ragged = False

    def on_invalid_row(row: pa_csv.InvalidRow) -> str:
        nonlocal ragged
        ragged = True
        return "skip"

    def read(block_size: int | None) -> pa.Table:
        return pa_csv.read_csv(
            pa.py_buffer(data),
            read_options=pa_csv.ReadOptions(block_size=block_size) if block_size else None,
            parse_options=pa_csv.ParseOptions(
                delimiter=separator, newlines_in_values=True, invalid_row_handler=on_invalid_row
            ),
            convert_options=pa_csv.ConvertOptions(
                include_columns=list(sources),
                column_types=dict.fromkeys(sources, pa.string()),
                strings_can_be_null=False,
            ),
        )

    try:
        try:
            table = read(None)
        except pa.ArrowInvalid as exc:
            if "straddl" not in str(exc):
                raise
            # A record longer than Arrow's block (1 MiB): the file as one block.
            ragged = False
            table = read(min(len(data) + 1, 2**31 - 1))
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{source}: malformed {kind} file: {exc}") from exc
    if ragged:
        return None
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    return frame


def _regular_quotes(data: bytes, separator: str) -> bool:
    """True when every ``"`` in ``data`` opens a field, closes one, or is one of the two quotes
    of an escaped ``""`` inside a quoted field, and no quoted field runs to the end of the file.

    Quotes then pair up in order: the 1st, 3rd, ... open a field (after a separator, a line
    break, the start of the file or a closing quote it escapes with), the 2nd, 4th, ... close
    one (before a separator, a line break, the end of the file or the quote it escapes).

    >>> _regular_quotes(b'a,"say ""hi"", then",d\\n', ","), _regular_quotes(b'a,b"c\\n', ",")
    (True, False)
    """
    buffer = np.frombuffer(data, dtype=np.uint8)
    quotes = np.flatnonzero(buffer == _QUOTE_BYTE)
    if quotes.size % 2:
        return False
    opening, closing = quotes[0::2], quotes[1::2]
    bounds = np.array([ord(separator), *_LINE_BREAK_BYTES], dtype=np.uint8)
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    opens = (opening == start) | np.isin(buffer[np.maximum(opening - 1, 0)], bounds)
    opens[1:] |= opening[1:] == closing[:-1] + 1
    closes = (closing == buffer.size - 1) | np.isin(
        buffer[np.minimum(closing + 1, buffer.size - 1)], bounds
    )
    closes[:-1] |= closing[:-1] + 1 == opening[1:]
    return bool(opens.all() and closes.all())


def _read_rows(
    data: bytes, separator: str, header: Sequence[str], sources: Sequence[str]
) -> pl.DataFrame:
    """The columns ``sources``, record by record (:func:`_records`), for files that
    :func:`_read_regular` does not take. Records that cannot be read get their problem
    (``line 7: expected 5 fields as in the header, got 3``) and text; their columns are null."""
    position = {name: index for index, name in enumerate(header)}
    indices = [position[src] for src in sources]
    pick: Callable[[list[str]], tuple[str, ...]] = (
        operator.itemgetter(*indices) if len(indices) > 1 else lambda f: (f[indices[0]],)
    )
    nothing = (None,) * len(sources)
    rows: list[tuple[str | None, ...]] = []
    problems: list[str | None] = []
    texts: list[str | None] = []
    records = _records(_text_lines(data), separator)
    next(records)  # the header
    for record in records:
        found = _record_problems(record, len(header))
        if found or record.fields is None:
            rows.append(nothing)
            problems.append(f"line {record.line}: {'; '.join(found)}")
            texts.append(json.dumps({"text": record.text}, ensure_ascii=False,
                                    separators=(",", ":")))
        else:
            rows.append(pick(record.fields))
            problems.append(None)
            texts.append(None)
    frame = pl.DataFrame(rows, schema=dict.fromkeys(sources, pl.String()), orient="row")
    if any(problem is not None for problem in problems):
        frame = frame.with_columns(
            pl.Series(READER_PROBLEM, problems, pl.String),
            pl.Series(READER_RAW, texts, pl.String),
        )
    return frame


def _record_problems(record: _Record, width: int) -> list[str]:
    """Why ``record`` cannot be read as a row of a file whose header has ``width`` fields."""
    if record.fields is None:
        return [str(record.problem)]
    found = []
    if len(record.fields) != width:
        found.append(f"expected {width} fields as in the header, got {len(record.fields)}")
    if not record.terminated:
        found.append("the file ends inside this row (no line break after it)")
    return found


# --- JSON and JSON Lines ------------------------------------------------------------------------

#: A ``\\uXXXX`` escape of a UTF-16 surrogate that is not half of a pair: the only way a JSON
#: text in UTF-8 can hold a string that UTF-8 cannot encode. (An escaped backslash before it
#: matches too; that only makes the values be checked.)
_LONE_SURROGATE_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)
#: A lone surrogate in decoded text (a valid pair decodes to one character outside the range).
_SURROGATE = re.compile("[\ud800-\udfff]")


class _RepeatedKey(ValueError):
    """A key that occurs twice in one JSON object."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` that raises :class:`_RepeatedKey` instead of keeping the last value."""
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return obj


#: Parses JSON like ``json.loads``, but refuses an object that repeats a key.
_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)


class _Repeated(dict[str, Any]):
    """An object that repeats a key (see :func:`_repeated_element`)."""


def _repeated_element(text: str) -> int | None:
    """Index of the first element of the JSON array ``text`` holding an object that repeats a
    key (read again on that error only, to name the element)."""
    def mark(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        return _Repeated(obj) if len(obj) != len(pairs) else obj

    def holds(value: Any) -> bool:
        if isinstance(value, dict):
            return isinstance(value, _Repeated) or any(holds(v) for v in value.values())
        return isinstance(value, list) and any(holds(v) for v in value)

    value = json.loads(text, object_pairs_hook=mark)
    return next((i for i, item in enumerate(value) if holds(item)), None)


def _read_text(path: Path, source: str) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: not UTF-8 text: {exc}") from exc
    except OSError as exc:
        raise InputError(f"{source}: cannot read the file: {exc}") from exc


def _jsonl_lines(path: Path, source: str) -> Iterator[tuple[int, str | None, int]]:
    """The lines of a JSON Lines file as ``(number, text, bytes)``, read a line at a time;
    blank lines are skipped. A line of more than :data:`MAX_RECORD_BYTES` is read past in
    bounded pieces and comes with ``text`` None (a longer line of only whitespace is blank).
    A line ends at ``\n``, ``\r\n`` or a lone ``\r``, as in text mode."""
    number = 0
    try:
        with open(path, "rb") as handle:
            first = True
            while piece := handle.readline(MAX_RECORD_BYTES + 1):
                if first and piece.startswith(codecs.BOM_UTF8):
                    piece = piece[len(codecs.BOM_UTF8):]
                first = False
                if len(piece) > MAX_RECORD_BYTES and not piece.endswith(b"\n"):
                    size, blank = _skip_line(handle, piece)
                    number += 1
                    if not blank:
                        yield number, None, size
                    continue
                for line in piece.removesuffix(b"\n").removesuffix(b"\r").split(b"\r"):
                    number += 1
                    if line.strip():
                        yield number, _decoded(line, source, number), len(line)
    except OSError as exc:
        raise InputError(f"{source}: cannot read the file: {exc.strerror}") from exc


def _skip_line(handle: Any, piece: bytes) -> tuple[int, bool]:
    """Read past the rest of the line ``piece`` starts, :data:`_SCAN_BYTES` at a time; its
    bytes and whether it is only whitespace."""
    size, blank = len(piece), not piece.strip()
    while not piece.endswith(b"\n"):
        piece = handle.readline(_SCAN_BYTES)
        if not piece:
            break
        size += len(piece)
        blank = blank and not piece.strip()
    return size - piece.endswith(b"\n") - piece.endswith(b"\r\n"), blank


def _decoded(line: bytes, source: str, number: int) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: line {number}: not UTF-8 text: {exc}") from exc


def _read_jsonl(path: Path, source: str, config: Config,
                keep: Sequence[str] | None = (), missing_ok: bool = False) -> pl.DataFrame:
    objects: list[dict[str, Any]] = []
    check: list[int] = []  # objects whose line may hold a lone surrogate
    too_long: dict[int, tuple[str, str]] = {}  # object index -> (problem, raw)
    for number, line, size in _jsonl_lines(path, source):
        if line is None:
            too_long[len(objects)] = (
                f"line {number}: {size / 2**20:.1f} MiB, more than the "
                f"{MAX_RECORD_BYTES // 2**20} MiB a record may hold (docs/input-integrity.md)",
                json.dumps({"line_bytes": size}),
            )
            objects.append({})
            continue
        try:
            value = _DECODER.decode(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{source}: line {number}: invalid JSON: {exc.msg} (column {exc.colno})"
            ) from exc
        except _RepeatedKey as exc:
            raise InputError(
                f"{source}: line {number}: duplicate key {exc.key!r} in a JSON object"
            ) from exc
        if not isinstance(value, dict):
            raise InputError(
                f"{source}: line {number}: expected a JSON object, got {json_kind(value)}"
            )
        if _LONE_SURROGATE_ESCAPE.search(line):
            check.append(len(objects))
        objects.append(value)
    if not objects:
        raise InputError(f"{source}: the file contains no records")
    if len(too_long) == len(objects):
        raise InputError(f"{source}: {next(iter(too_long.values()))[0]}; the file holds no "
                         "other record")
    return _objects_frame(objects, source, config, check, too_long, keep, missing_ok)


def _read_json(path: Path, source: str, config: Config,
               keep: Sequence[str] | None = (), missing_ok: bool = False) -> pl.DataFrame:
    text = _read_text(path, source)
    objects = _json_array(text, source)
    check = range(len(objects)) if _LONE_SURROGATE_ESCAPE.search(text) else range(0)
    return _objects_frame(objects, source, config, check, keep=keep, missing_ok=missing_ok)


def load_json_array(path: Path, source: str) -> tuple[list[dict[str, Any]], range]:
    """Parse a file holding one JSON array of objects (an empty array is an error); with the
    indices of the objects that may hold a lone surrogate, to search with
    :func:`without_lone_surrogates` (all of them when the text escapes one, else none)."""
    text = _read_text(path, source)
    objects = _json_array(text, source)
    return objects, range(len(objects)) if _LONE_SURROGATE_ESCAPE.search(text) else range(0)


def _json_array(text: str, source: str) -> list[dict[str, Any]]:
    if not text.strip():
        raise InputError(f"{source}: the file is empty")
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from exc
    except _RepeatedKey as exc:
        where = _repeated_element(text)
        raise InputError(
            f"{source}: duplicate key {exc.key!r} in a JSON object"
            + (f" (array element {where})" if where is not None else "")
        ) from exc
    if not isinstance(value, list):
        raise InputError(
            f"{source}: expected a JSON array of objects, got {json_kind(value)} "
            "(use .jsonl for one object per line)"
        )
    if not value:
        raise InputError(f"{source}: the file contains no records")
    for index, item in enumerate(value):
        if not isinstance(item, dict):
            raise InputError(
                f"{source}: array element {index} is {json_kind(item)}, expected an object"
            )
    return value


def _objects_frame(
    objects: list[dict[str, Any]], source: str, config: Config, check: Iterable[int],
    unread: Mapping[int, tuple[str, str]] | None = None, keep: Sequence[str] | None = (),
    missing_ok: bool = False,
) -> pl.DataFrame:
    """The frame of parsed JSON ``objects``; those listed in ``check`` are searched for text
    that UTF-8 cannot encode and, where they hold some, become rows with a reader problem;
    ``unread`` gives the problem and raw text of objects that could not be read at all; the
    keys ``keep`` names are kept (:func:`_extra_series`)."""
    keys = list(dict.fromkeys(key for obj in objects for key in obj))
    plan = _require(keys, source, config)
    extras = extra_columns(keys, plan, source, keep, missing_ok=missing_ok)
    read = plan.pairs if plan.answers is None else (*plan.pairs, (plan.answers, "reference"))
    objects, unreadable = without_lone_surrogates(objects, read, check)
    targets = _json_targets(plan.pairs)
    if plan.answers is not None:  # SQuAD v2: the texts of each answers object
        objects = [{**obj, plan.answers: squad_answer_texts(obj.get(plan.answers))}
                   for obj in objects]
        targets[plan.answers] = pl.List(pl.String())
    frame = json_columns(objects, targets)
    if extras:
        frame = frame.with_columns(_extra_series(name, [obj.get(name) for obj in objects])
                                   for name in extras)
    frame = _finish(frame, plan, source, extras=extras)
    if unread:
        unreadable = pl.concat([unreadable, pl.DataFrame(
            {ROW_COLUMN: list(unread), READER_PROBLEM: [p for p, _ in unread.values()],
             READER_RAW: [raw for _, raw in unread.values()]},
            schema={ROW_COLUMN: pl.Int64(), **READER_SCHEMA},
        )]).sort(ROW_COLUMN)
    if unreadable.height:
        frame = frame.join(unreadable, on=ROW_COLUMN, how="left", maintain_order="left")
    return frame


def _extra_series(name: str, values: list[Any]) -> pl.Series:
    """A kept JSON key as polars infers it from its values, or its values as JSON text when
    they have no one dtype (``1`` and ``"a"``) or hold text that is not valid Unicode (a lone
    surrogate, kept as its ``\\ud800`` escape rather than lost)."""
    try:
        return pl.Series(name, values, strict=True)
    except (TypeError, ValueError, OverflowError, UnicodeEncodeError,
            pl.exceptions.PolarsError):
        return pl.Series(name, [None if v is None else _json_text(v) for v in values],
                         pl.String)


def _json_text(value: object) -> str:
    """``value`` as JSON text, non-ASCII characters as written unless some text of it is not
    valid Unicode (then every non-ASCII character escaped)."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value)
    return text


def squad_answer_texts(value: object) -> list[str] | None:
    """The answer texts of one parsed SQuAD v2 ``answers`` value: its ``text`` list, or the
    value itself when it is a list of texts; None for any other shape.

    >>> squad_answer_texts({"text": ["France"], "answer_start": [159]}), squad_answer_texts([])
    (['France'], [])
    """
    if isinstance(value, dict):
        value = value.get("text")
    if isinstance(value, list) and all(isinstance(text, str) for text in value):
        return value
    return None


def _json_targets(pairs: Sequence[tuple[str, str]]) -> dict[str, pl.DataType | None]:
    """Key -> the dtype of its canonical column(s) for :func:`json_columns` (None when a key is
    read as canonical columns of different dtypes: its values are then kept with their kinds)."""
    dtypes: dict[str, set[pl.DataType]] = {}
    for src, name in pairs:
        dtypes.setdefault(src, set()).add(RECORD_SCHEMA[name])
    return {src: next(iter(found)) if len(found) == 1 else None for src, found in dtypes.items()}


def without_lone_surrogates(
    objects: list[dict[str, Any]], pairs: Sequence[tuple[str, str]], check: Iterable[int]
) -> tuple[list[dict[str, Any]], pl.DataFrame]:
    """``objects`` with every value read (``pairs``: key, canonical name) that holds a lone
    surrogate set to null, and a frame of ``row_number``, :data:`READER_PROBLEM` and
    :data:`READER_RAW` for those objects (only the indices in ``check`` are searched).

    The problem names each such column (``response: text that cannot be encoded as UTF-8
    (lone surrogate \\ud800)``); the raw text is the object's canonical values as JSON, a lone
    surrogate written as its ``\\uXXXX`` escape.
    """
    order = {name: index for index, name in enumerate(RECORD_SCHEMA)}
    columns = sorted(pairs, key=lambda item: order[item[1]])
    rows: list[int] = []
    problems: list[str] = []
    raws: list[str] = []
    cleaned = objects
    for index in check:
        obj = objects[index]
        found: dict[tuple[str, str], str] = {}
        for src, name in columns:
            text = json.dumps(obj.get(src), ensure_ascii=False)
            surrogate = _SURROGATE.search(text)
            if surrogate is not None:
                found[src, name] = (
                    f"{name}: text that cannot be encoded as UTF-8 "
                    f"(lone surrogate \\u{ord(surrogate.group()):04x})"
                )
        if not found:
            continue
        if cleaned is objects:
            cleaned = list(objects)
        unreadable_keys = {src for src, _ in found}
        cleaned[index] = {
            key: None if key in unreadable_keys else value for key, value in obj.items()
        }
        rows.append(index)
        problems.append("; ".join(found.values()))
        raw = json.dumps(
            {name: obj.get(src) for src, name in columns}, ensure_ascii=False,
            separators=(",", ":"),
        )
        raws.append(raw.encode("utf-8", "backslashreplace").decode("utf-8"))
    unreadable = pl.DataFrame(
        {ROW_COLUMN: rows, READER_PROBLEM: problems, READER_RAW: raws},
        schema={ROW_COLUMN: pl.Int64(), **READER_SCHEMA},
    )
    return cleaned, unreadable


def json_kind(value: object) -> str | None:
    """The JSON type of a parsed value, as named in rejection reasons (None for null)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "object"


def json_columns(
    objects: list[dict[str, Any]], targets: Mapping[str, pl.DataType | None]
) -> pl.DataFrame:
    """One column per key in ``targets`` from parsed JSON objects (absent key -> null).

    A column gets a plain dtype only when that loses nothing (see :func:`_plain_dtype`);
    otherwise (and always for a target of None) it is a :data:`JSON_VALUE` struct.
    """
    columns = []
    for key, target in targets.items():
        values = [obj.get(key) for obj in objects]
        plain = None if target is None else _plain_dtype(values, target)
        if plain is not None:
            columns.append(pl.Series(key, values, dtype=plain))
        else:
            columns.append(_json_value_series(key, values))
    return pl.DataFrame(columns)


def _fits_int64(value: object) -> bool:
    return json_kind(value) == "int" and _INT64_MIN <= value <= _INT64_MAX  # type: ignore[operator]


def _plain_dtype(values: list[Any], target: pl.DataType) -> pl.DataType | None:
    """The dtype that holds ``values`` exactly when all have the JSON type ``target`` expects.

    Floats for an integer column stay Float64 (validation accepts exactly integral ones); a mix
    of ints and floats there, or anything else, gets None (-> a JSON_VALUE struct).
    """
    kinds = {json_kind(v) for v in values} - {None}
    if not kinds:
        return target
    if target == pl.String():
        return target if kinds == {"string"} else None
    if target == pl.Float64():
        return target if kinds <= {"int", "float"} else None
    if target == pl.Int64():
        if kinds == {"float"}:
            return pl.Float64()
        exact = kinds == {"int"} and all(_fits_int64(v) for v in values if v is not None)
        return target if exact else None
    if isinstance(target, pl.List) and kinds == {"list"}:
        items = [item for value in values if value is not None for item in value]
        if target.inner == pl.Int64():
            return target if all(_fits_int64(item) for item in items) else None
        if target.inner == pl.String():
            return target if all(isinstance(item, str) for item in items) else None
    return None


def _json_value_series(name: str, values: list[Any]) -> pl.Series:
    kinds = [json_kind(v) for v in values]
    return pl.DataFrame(
        {
            "kind": kinds,
            "string": [v if isinstance(v, str) else None for v in values],
            "int": [v if _fits_int64(v) else None for v in values],
            "float": [float(v) if json_kind(v) in ("int", "float") else None for v in values],
            "json": [None if v is None else json.dumps(v, ensure_ascii=False) for v in values],
        },
        schema={field.name: field.dtype for field in JSON_VALUE.fields},
    ).to_struct(name)


READERS: dict[str, Reader] = {
    ".parquet": _read_parquet,
    ".jsonl": _read_jsonl,
    ".ndjson": _read_jsonl,
    ".json": _read_json,
    ".csv": _delimited(","),
    ".tsv": _delimited("\t"),
}
