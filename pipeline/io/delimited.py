"""CSV and TSV input (RFC 4180 quoting): every column as text, no inference; an empty cell
is ``""`` in the required text columns and null in every optional column. A row whose field
count differs from the header's, whose quoting is malformed, or that the file ends inside is
still a row, carrying its problem (:data:`~pipeline.schema.READER_PROBLEM`), so that it is
rejected rather than lost; text must be UTF-8."""

from __future__ import annotations

import codecs
import csv
import io
import json
import operator
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.csv as pa_csv

from pipeline.config import Config
from pipeline.io.canonical import Reader, _finish, _require, extra_columns
from pipeline.schema import (
    READER_PROBLEM,
    READER_RAW,
    RECORD_SCHEMA,
    REQUIRED_COLUMNS,
    InputError,
)

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
