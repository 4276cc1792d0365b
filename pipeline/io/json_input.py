"""JSON and JSON Lines input: a column is given its canonical dtype when every value in the
file already has the matching JSON type, else it becomes a
:data:`~pipeline.io.canonical.JSON_VALUE` struct that records the JSON type of each value, so
that validation can reject ``"question": 7`` instead of converting it. A key repeated inside
an object or invalid JSON raises :class:`~pipeline.schema.InputError`; a record with a lone
surrogate (``"\\ud800"``) is a row carrying its problem; a JSON Lines line longer than
:data:`~pipeline.io.record_limits.MAX_RECORD_BYTES` is skipped in bounded reads."""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.config import Config
from pipeline.io import record_limits
from pipeline.io.canonical import JSON_VALUE, _finish, _require, extra_columns
from pipeline.schema import (
    READER_PROBLEM,
    READER_RAW,
    READER_SCHEMA,
    RECORD_SCHEMA,
    ROW_COLUMN,
    InputError,
)

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


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
    blank lines are skipped. A line of more than :data:`record_limits.MAX_RECORD_BYTES` is read
    past in bounded pieces and comes with ``text`` None (a longer line of only whitespace is blank).
    A line ends at ``\n``, ``\r\n`` or a lone ``\r``, as in text mode."""
    number = 0
    try:
        with open(path, "rb") as handle:
            first = True
            while piece := handle.readline(record_limits.MAX_RECORD_BYTES + 1):
                if first and piece.startswith(codecs.BOM_UTF8):
                    piece = piece[len(codecs.BOM_UTF8):]
                first = False
                if len(piece) > record_limits.MAX_RECORD_BYTES and not piece.endswith(b"\n"):
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
    """Read past the rest of the line ``piece`` starts, :data:`record_limits.SCAN_BYTES` at a
    time; its bytes and whether it is only whitespace."""
    size, blank = len(piece), not piece.strip()
    while not piece.endswith(b"\n"):
        piece = handle.readline(record_limits.SCAN_BYTES)
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
                f"{record_limits.MAX_RECORD_BYTES // 2**20} MiB a record may hold "
                "(docs/input-integrity.md)",
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
