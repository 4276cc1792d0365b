"""Read evaluation records from Parquet, JSON Lines, JSON arrays, CSV and TSV files.

Every reader returns the file's canonical columns, renamed from the names in the file through
``config.columns`` (canonical -> name in the file), followed by the provenance columns ``source``
(the path as given) and ``row_number`` (0-based index of the record in the file). Columns that are
not canonical are dropped. Readers never cast or coerce a value; :mod:`pipeline.validate` turns the
columns into the dtypes of :data:`pipeline.schema.RECORD_SCHEMA` or rejects the row with a reason.

What a reader hands to validation, by format:

* Parquet: the stored dtypes, read column by column (the large-data path; no per-row Python).
* CSV and TSV: every column as text, no inference. An empty cell is ``""`` in the required text
  columns and null in every optional column.
* JSON and JSON Lines: a column is given its canonical dtype when every value in the file already
  has the matching JSON type. Otherwise it becomes a :data:`JSON_VALUE` struct that records the
  JSON type of each value, so that validation can reject ``"question": 7`` as
  ``question: expected string, got int`` instead of converting it.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config import Config
from pipeline.schema import (
    RECORD_SCHEMA,
    REQUIRED_COLUMNS,
    ROW_COLUMN,
    SOURCE_COLUMN,
    InputError,
    MissingColumnError,
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


def read_records(path: str | Path, config: Config) -> pl.DataFrame:
    """Read one records file, choosing the reader by extension.

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
    frame = reader(Path(source), source, config)
    if frame.height == 0:
        raise InputError(f"{source}: the file contains no records")
    log.debug("%s: read %d rows, columns %s", source, frame.height, frame.columns)
    return frame


def missing_column_error(
    column: str, path: str, available: Iterable[str], config: Config
) -> MissingColumnError:
    """The error for a required ``column`` absent from ``path``, naming the mapped source name."""
    available = list(available)
    error = MissingColumnError(column, path, available)
    mapped = config.columns.get(column)
    if mapped is not None and mapped != column:
        error.args = (
            f"{path}: required column {column!r} is missing: the config maps it to {mapped!r} "
            f'([columns] {column} = "{mapped}"), which is not in the file '
            f"(columns present: {', '.join(available) or 'none'})",
        )
    return error


def source_names(config: Config) -> dict[str, str]:
    """Canonical column name -> the name it is read from in input files.

    An unmapped canonical column is read under its own name unless that name is the source of
    another mapping (``[columns] question = "response"`` means the file's ``response`` column is
    the question, so the canonical ``response`` must be mapped too or is missing).
    """
    taken = set(config.columns.values())
    return {
        name: config.columns.get(name, name)
        for name in RECORD_SCHEMA
        if name in config.columns or name not in taken
    }


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


def _require(available: Iterable[str], source: str, config: Config) -> dict[str, str]:
    """Map each source name present to its canonical name; raise if a required one is absent."""
    available = list(available)
    present = set(available)
    wanted = source_names(config)
    for column in REQUIRED_COLUMNS:
        if wanted.get(column) not in present:
            raise missing_column_error(column, source, available, config)
    return {src: name for name, src in wanted.items() if src in present}


def _finish(
    frame: pl.DataFrame, renames: Mapping[str, str], source: str, offset: int = 0
) -> pl.DataFrame:
    """Canonical columns in schema order, then ``source`` and ``row_number`` (from ``offset``)."""
    frame = frame.select(pl.col(src).alias(name) for src, name in renames.items())
    ordered = [name for name in RECORD_SCHEMA if name in frame.columns]
    return frame.select(
        *ordered,
        pl.lit(source, dtype=pl.String).alias(SOURCE_COLUMN),
        (pl.int_range(pl.len(), dtype=pl.Int64) + offset).alias(ROW_COLUMN),
    )


# --- Parquet ------------------------------------------------------------------------------------


def _read_parquet(path: Path, source: str, config: Config) -> pl.DataFrame:
    try:
        schema = pl.read_parquet_schema(path)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputError(f"{source}: not a readable Parquet file: {exc}") from exc
    renames = _require(schema, source, config)
    try:
        frame = pl.read_parquet(path, columns=list(renames))
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputError(f"{source}: cannot read Parquet data: {exc}") from exc
    return _finish(frame, renames, source)


def iter_records(path: str | Path, config: Config, chunk_rows: int) -> Iterator[pl.DataFrame]:
    """:func:`read_records` in chunks of at most ``chunk_rows`` rows, for bounded memory.

    Parquet is read slice by slice (a lazy polars scan reads only the row groups a slice
    needs), so memory holds one chunk; the text formats (CSV, TSV, JSON Lines, JSON) are
    parsed whole, then sliced. Row numbers continue across chunks, as if the file were read at
    once.
    """
    source = os.fspath(path)
    if Path(source).suffix.lower() != ".parquet":
        frame = read_records(path, config)
        for offset in range(0, frame.height, chunk_rows):
            yield frame.slice(offset, chunk_rows)
        return
    check_file(Path(source), source)
    try:
        handle = pq.ParquetFile(source)
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{source}: not a readable Parquet file: {exc}") from exc
    renames = _require(handle.schema_arrow.names, source, config)
    n_rows = handle.metadata.num_rows
    if n_rows == 0:
        raise InputError(f"{source}: the file contains no records")
    # polars slices of one lazy scan read only the row groups they need, and unlike pyarrow's
    # batch iterator they leave no memory behind between chunks (measured: flat RSS). A slice
    # decodes every row group it touches whole, so slices follow row-group boundaries.
    scan = pl.scan_parquet(source, hive_partitioning=False).select(list(renames))
    groups = [(handle.metadata.row_group(i).num_rows, handle.metadata.row_group(i).total_byte_size)
              for i in range(handle.metadata.num_row_groups)]
    try:
        for offset, rows in parquet_slices(groups, chunk_rows):
            yield _finish(scan.slice(offset, rows).collect(), renames, source, offset)
    except (pl.exceptions.PolarsError, OSError) as exc:
        raise InputError(f"{source}: cannot read Parquet data: {exc}") from exc


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
    """
    source = os.fspath(path)
    if Path(source).suffix.lower() != ".parquet":
        return False
    try:
        schema = pl.scan_parquet(source, hive_partitioning=False).collect_schema()
    except (pl.exceptions.PolarsError, OSError):
        return False
    renames = {src: name for name, src in source_names(config).items() if name in keys}
    present = {src: name for src, name in renames.items() if src in schema}
    if any(schema[src] != RECORD_SCHEMA[name] for src, name in present.items()):
        return False
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


def _delimited(separator: str) -> Callable[[Path, str, Config], pl.DataFrame]:
    kind = "TSV" if separator == "\t" else "CSV"

    def read(path: Path, source: str, config: Config) -> pl.DataFrame:
        options: dict[str, Any] = {
            "separator": separator,
            "infer_schema": False,  # every column as text; validation parses numbers and lists
            "empty_string_is_null": False,
            "encoding": "utf8",
        }
        try:
            header = pl.read_csv(path, n_rows=0, **options).columns
            renames = _require(header, source, config)
            frame = pl.read_csv(path, columns=list(renames), **options)
        except (pl.exceptions.PolarsError, OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{source}: malformed {kind} file: {exc}") from exc
        frame = _finish(frame, renames, source)
        # A delimited file cannot tell an empty cell from a missing value: required text keeps
        # "" (a valid, empty answer), optional columns read an empty cell as missing.
        optional = [c for c in frame.columns if c in RECORD_SCHEMA and c not in REQUIRED_COLUMNS]
        return frame.with_columns(
            pl.when(pl.col(c) != "").then(pl.col(c)).alias(c) for c in optional
        )

    return read


# --- JSON and JSON Lines ------------------------------------------------------------------------


def _read_text(path: Path, source: str) -> str:
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{source}: not UTF-8 text: {exc}") from exc
    except OSError as exc:
        raise InputError(f"{source}: cannot read the file: {exc}") from exc


def _read_jsonl(path: Path, source: str, config: Config) -> pl.DataFrame:
    objects: list[dict[str, Any]] = []
    for number, line in enumerate(_read_text(path, source).splitlines(), start=1):
        if not line.strip():
            continue  # blank lines (a trailing newline, say) are not records
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(
                f"{source}: line {number}: invalid JSON: {exc.msg} (column {exc.colno})"
            ) from exc
        if not isinstance(value, dict):
            raise InputError(
                f"{source}: line {number}: expected a JSON object, got {json_kind(value)}"
            )
        objects.append(value)
    if not objects:
        raise InputError(f"{source}: the file contains no records")
    return _objects_frame(objects, source, config)


def _read_json(path: Path, source: str, config: Config) -> pl.DataFrame:
    objects = load_json_array(path, source)
    return _objects_frame(objects, source, config)


def load_json_array(path: Path, source: str) -> list[dict[str, Any]]:
    """Parse a file holding one JSON array of objects (an empty array is an error)."""
    text = _read_text(path, source)
    if not text.strip():
        raise InputError(f"{source}: the file is empty")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
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


def _objects_frame(objects: list[dict[str, Any]], source: str, config: Config) -> pl.DataFrame:
    keys = list(dict.fromkeys(key for obj in objects for key in obj))
    renames = _require(keys, source, config)
    frame = json_columns(objects, {src: RECORD_SCHEMA[name] for src, name in renames.items()})
    return _finish(frame, renames, source)


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


def json_columns(objects: list[dict[str, Any]], targets: Mapping[str, pl.DataType]) -> pl.DataFrame:
    """One column per key in ``targets`` from parsed JSON objects (absent key -> null).

    A column gets a plain dtype only when that loses nothing (see :func:`_plain_dtype`);
    otherwise it is a :data:`JSON_VALUE` struct.
    """
    columns = []
    for key, target in targets.items():
        values = [obj.get(key) for obj in objects]
        plain = _plain_dtype(values, target)
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


READERS: dict[str, Callable[[Path, str, Config], pl.DataFrame]] = {
    ".parquet": _read_parquet,
    ".jsonl": _read_jsonl,
    ".ndjson": _read_jsonl,
    ".json": _read_json,
    ".csv": _delimited(","),
    ".tsv": _delimited("\t"),
}
