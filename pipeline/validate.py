"""Validate records read from input files: cast to the canonical schema or reject with a reason.

Every row read ends up in exactly one of two tables, so ``records.height + rejected.height ==
n_read`` always holds:

* ``records``: the columns of :data:`pipeline.schema.RECORD_SCHEMA` in their canonical dtypes
  (optional columns absent from the input are typed nulls), then ``source`` and ``row_number``.
* ``rejected``: :data:`pipeline.schema.REJECTED_SCHEMA`; ``reason`` lists every problem of the row
  joined with ``"; "`` and ``raw`` is the row as read, as JSON text (canonical column names).

Nothing is coerced. The rules, checked with polars expressions over whole columns:

* Required text (``id``, ``question``, ``reference``, ``response``) must be a string; ``""`` is
  valid, null is not. Every text column rejects values of another type
  (``question: expected string, got int``).
* Integer columns (token counts) take integers, or floats that are exactly integral with
  ``|x| <= 2**53`` (``12.0`` is 12, ``12.5`` is rejected). Number columns (``noise_level``,
  ``latency_ms``) take ints and floats but not NaN or infinity. Booleans and strings in typed
  files (Parquet, JSON) are rejected. Text (CSV, TSV, or a Parquet string column) is parsed
  strictly: ``[+-]digits`` or a decimal number with optional exponent; ``nan``, ``inf``, ``1,5``
  and ``12 tokens`` are rejected. Token counts and latency must not be negative.
* List columns take lists whose elements all have the element type (integers for
  ``citations`` / ``gold_citations``, with the integral-float rule; strings for ``contexts`` /
  ``references``); a null element is rejected. Text cells hold a JSON array (``[1, 2]``,
  ``["a", "b"]``); an empty cell is a missing list.
* ``citations`` and ``gold_citations`` numbers are 1-based passage numbers: at least 1 on every
  row, and in ``1..len(contexts)`` on rows whose ``contexts`` is present.
* A record the reader could not read (:data:`pipeline.schema.READER_PROBLEM`: a ragged CSV row,
  a lone surrogate in JSON) is rejected with the reader's reason and ``raw`` alone.
* Within one file the key (``id``, ``model``, ``run``, ``noise_level``) is unique among the rows
  that pass every other check: the first occurrence is kept and later ones are rejected as
  ``duplicate id 'X' (first at row N)``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl
from polars.datatypes import DataTypeClass

from pipeline.config import Config
from pipeline.io.pairs import read_prediction_pair
from pipeline.io.readers import JSON_VALUE, iter_records, missing_column_error, read_records
from pipeline.schema import (
    PROVENANCE_SCHEMA,
    READER_PROBLEM,
    READER_RAW,
    READER_SCHEMA,
    RECORD_SCHEMA,
    REJECTED_SCHEMA,
    REQUIRED_COLUMNS,
    RGB_ANSWERED_TASKS,
    RGB_TASKS,
    ROW_COLUMN,
    SOURCE_COLUMN,
    InputError,
)

log = logging.getLogger(__name__)

#: Columns that must not be negative.
NON_NEGATIVE_COLUMNS: tuple[str, ...] = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "latency_ms",
)
#: Citation columns whose numbers index ``contexts`` (1-based).
CITATION_COLUMNS: tuple[str, ...] = ("citations", "gold_citations")
#: Columns that identify a record within one file.
KEY: tuple[str, ...] = ("id", "model", "run", "noise_level", "task")

#: Largest magnitude up to which every integral float is exactly one integer.
MAX_EXACT_FLOAT = 2.0**53
#: Longest quoted input shown in a reason.
MAX_QUOTED = 60

_REASON = "__reason"
_BAD = "__bad"
_DUPLICATE = "__duplicate"
_FIRST = "__first"
#: Reason of a duplicate key: the id, then the row of the first valid row with that key. The
#: ``{}`` placeholders suit both polars ``pl.format`` and DuckDB ``format``.
DUPLICATE_REASON = "duplicate id '{}' (first at row {})"
_WS = r"[ \t\n\r]*"  # JSON whitespace only; json_decode rejects anything else
_INT_TEXT = r"^[+-]?\d+$"
_NUMBER_TEXT = r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$"
_JSON_INT = r"-?(?:0|[1-9]\d*)(?:\.0+)?"
_JSON_STRING = (
    r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]'
    r"|\\u(?:[0-9a-cA-CefEF][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2})"
    r'|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2})*"'
)


def _json_array(item: str) -> str:
    return rf"^{_WS}\[{_WS}(?:{item}(?:{_WS},{_WS}{item})*)?{_WS}\]{_WS}$"


_INT_LIST_TEXT = _json_array(_JSON_INT)
_STRING_LIST_TEXT = _json_array(_JSON_STRING)
_STRING_LIST = _STRING_LIST_TEXT.removeprefix("^").removesuffix("$")
_STRING_LISTS_TEXT = _json_array(_STRING_LIST)
#: Nested list columns: a list of non-empty lists of strings (``answer_groups``).
GROUPS = pl.List(pl.List(pl.String()))


@dataclass(frozen=True)
class Validated:
    """Valid records and rejected rows of one or more inputs; ``n_read`` counts both.
    ``extras``: the input's other columns that the reader kept (a user's ``label``), one row per
    row of ``records`` in the same order (no columns when none was kept)."""

    records: pl.DataFrame
    rejected: pl.DataFrame
    n_read: int
    extras: pl.DataFrame = field(default_factory=pl.DataFrame)
    #: The input the rows come from, as given ("" for several).
    source: str = ""


def validate_records(
    frame: pl.DataFrame, path: str, config: Config, *, check_duplicates: bool = True
) -> Validated:
    """Cast ``frame`` (as returned by a reader) to the canonical schema, rejecting bad rows.

    Rows whose key (:data:`KEY`) an earlier valid row holds are rejected as duplicates unless
    ``check_duplicates`` is false (the streaming engine checks whole files instead, see
    :func:`pipeline.engines.local.stream_scores`). The reader's other columns (kept ones) are
    returned apart, as :attr:`Validated.extras`. Raises
    :class:`~pipeline.schema.MissingColumnError` when a required column is absent.
    """
    available = [c for c in frame.columns if c not in PROVENANCE_SCHEMA]
    for column in REQUIRED_COLUMNS:
        if column not in frame.columns:
            raise missing_column_error(column, path, available, config)
    frame = _with_provenance(frame, path)
    present = [c for c in RECORD_SCHEMA if c in frame.columns]
    schema = frame.schema

    values: dict[str, pl.Expr] = {}
    problems: dict[str, list[_Problem]] = {}
    for column in present:
        values[column], problems[column] = _parse(column, schema[column], RECORD_SCHEMA[column])
    # First the cheap part over every row: values and a flag per problem; the reasons (string
    # formatting) are then computed for the flagged rows only.
    lazy = frame.lazy().with_columns(
        *(expr.alias(_value(c)) for c, expr in values.items()),
        *(_flagged(found).alias(_flag(c)) for c, found in problems.items()),
    )
    flagged = [
        pl.col(_flag(c)) | _flagged(_value_checks(c, present, lambda name: pl.col(_flag(name))))
        for c in present
    ]
    if READER_PROBLEM in frame.columns:  # records the reader could not read (CSV, JSON only)
        flagged.append(pl.col(READER_PROBLEM).is_not_null())
    lazy = lazy.with_columns(pl.any_horizontal(flagged).alias(_BAD))
    if check_duplicates:
        keys = [pl.col(_value(c)) for c in KEY if c in present]
        first = pl.when(~pl.col(_BAD)).then(pl.col(ROW_COLUMN)).min().over(keys)
        lazy = lazy.with_columns(
            (~pl.col(_BAD) & (pl.col(ROW_COLUMN) != first)).alias(_DUPLICATE),
            first.alias(_FIRST),
        ).with_columns(pl.col(_BAD) | pl.col(_DUPLICATE))
    # In memory: the auto engine hands back every column in two chunks, which each reader of
    # the records downstream (row hashes, texts, kernels) would copy into one.
    checked = lazy.collect(engine="in-memory")
    good = checked.filter(~pl.col(_BAD))
    bad = checked.filter(pl.col(_BAD))
    if bad.height:  # reasons planned only for a chunk that has bad rows (10 ms a chunk)
        bad = _with_reasons(bad, problems, present, check_duplicates)
    else:
        bad = bad.with_columns(pl.lit(None, pl.String).alias(_REASON))
    unexplained = bad.filter(pl.col(_REASON).is_null())  # a flag whose message is null
    if unexplained.height:
        good = pl.concat([good, unexplained.select(good.columns)]).sort(ROW_COLUMN)
        bad = bad.filter(pl.col(_REASON).is_not_null())
    records = good.select(
        *(
            (pl.col(_value(c)) if c in present else pl.lit(None)).cast(dtype).alias(c)
            for c, dtype in RECORD_SCHEMA.items()
        ),
        pl.col(SOURCE_COLUMN),
        pl.col(ROW_COLUMN),
    )
    known = {*RECORD_SCHEMA, *PROVENANCE_SCHEMA, *READER_SCHEMA}
    extras = good.select(name for name in frame.columns if name not in known)
    raw = _raw(present, schema)
    if READER_RAW in bad.columns:
        raw = pl.coalesce(pl.col(READER_RAW), raw)
    rejected = bad.select(
        pl.col(SOURCE_COLUMN),
        pl.col(ROW_COLUMN),
        pl.col(_value("id")).alias("id"),
        pl.col(_REASON).alias("reason"),
        raw.alias("raw"),
    ).cast(pl.Schema(REJECTED_SCHEMA))
    log.info("%s: %d rows read, %d valid, %d rejected", path, frame.height, good.height, bad.height)
    return Validated(records=records, rejected=rejected, n_read=frame.height, extras=extras,
                     source=path)


def _with_reasons(
    rows: pl.DataFrame, problems: dict[str, list[_Problem]], present: Sequence[str],
    check_duplicates: bool,
) -> pl.DataFrame:
    """``rows`` (the flagged ones) with ``_REASON``: every problem of the row, joined."""
    lazy = rows.lazy().with_columns(
        _join([p.message_where_found() for p in found]).alias(_problem(c))
        for c, found in problems.items()
    )
    lazy = lazy.with_columns(
        _join([
            pl.col(_problem(c)),
            *(
                p.message_where_found() for p in _value_checks(
                    c, present, lambda name: pl.col(_problem(name)).is_not_null()
                )
            ),
        ]).alias(_problem(c))
        for c in present
    )
    lazy = lazy.with_columns(_join([pl.col(_problem(c)) for c in present]).alias(_REASON))
    if READER_PROBLEM in rows.columns:  # the reader's reason alone: its row has no real columns
        lazy = lazy.with_columns(pl.coalesce(READER_PROBLEM, _REASON).alias(_REASON))
    if check_duplicates:
        lazy = lazy.with_columns(
            pl.when(pl.col(_DUPLICATE))
            .then(pl.format(DUPLICATE_REASON, pl.col(_value("id")), pl.col(_FIRST)))
            .otherwise(pl.col(_REASON))
            .alias(_REASON)
        )
    return lazy.collect(engine="in-memory")


def raw_json(frame: pl.DataFrame, path: str) -> pl.Series:
    """Each row of ``frame`` (as returned by a reader) as the ``raw`` JSON of rejected rows."""
    frame = _with_provenance(frame, path)
    present = [c for c in RECORD_SCHEMA if c in frame.columns]
    return frame.select(_raw(present, frame.schema).alias("raw"))["raw"]


def iter_validated(
    inputs: Sequence[Path], pairs: Sequence[tuple[Path, Path]], config: Config, chunk_rows: int
) -> Iterator[Validated]:
    """Validated chunks of every input, for a run in bounded memory.

    Each chunk is validated on its own, without the duplicate-key check, which needs the whole
    file: the driver runs it afterwards (:func:`pipeline.engines.local.stream_scores`) and takes the
    ``raw`` JSON of duplicates from :func:`iter_raw`. Pairs are read whole.

    The inputs' other columns that ``config.keep_columns`` names (None: all) come in
    :attr:`Validated.extras`; a named column one input lacks is left to the caller (null
    there), and a name that no input has raises :class:`~pipeline.schema.InputError` once every
    input has been read.
    """
    keep = config.keep_columns
    seen: set[str] = set()
    for path in inputs:
        for chunk in iter_records(path, config, chunk_rows, keep, missing_ok=len(inputs) > 1):
            checked = validate_records(chunk, str(path), config, check_duplicates=False)
            seen.update(checked.extras.columns)
            yield checked
    unknown = [name for name in keep or () if name not in seen]
    if unknown and inputs:
        raise InputError(
            f"[columns] keep names {', '.join(map(repr, unknown))}, which no input has "
            f"({', '.join(map(str, inputs))}); other columns kept: "
            f"{', '.join(sorted(seen)) or 'none'}"
        )
    for predictions, references in pairs:
        pair = read_prediction_pair(predictions, references, config)
        checked = validate_records(
            pair.records, str(predictions), config, check_duplicates=False
        )
        yield Validated(
            records=checked.records,
            rejected=pl.concat([checked.rejected, pair.rejected]),
            n_read=checked.n_read + pair.rejected.height,
        )


def iter_raw(
    inputs: Sequence[Path], pairs: Sequence[tuple[Path, Path]], config: Config, chunk_rows: int,
    rows: pl.DataFrame,
) -> Iterator[pl.DataFrame]:
    """``source``, ``row_number`` and ``raw`` of the input rows listed in ``rows`` (a frame of
    ``source`` and ``row_number``), re-read chunk by chunk from the files that hold them."""
    wanted = set(rows[SOURCE_COLUMN].unique().to_list())

    def pick(frame: pl.DataFrame, path: str) -> pl.DataFrame:
        frame = _with_provenance(frame, path).join(
            rows.select(SOURCE_COLUMN, ROW_COLUMN), on=[SOURCE_COLUMN, ROW_COLUMN], how="semi"
        )
        return frame.select(SOURCE_COLUMN, ROW_COLUMN).with_columns(raw_json(frame, path))

    for path in inputs:
        if str(path) in wanted:  # read as the run read it: the same warnings, no new error
            for chunk in iter_records(path, config, chunk_rows, config.keep_columns,
                                      missing_ok=True):
                yield pick(chunk, str(path))
    for predictions, references in pairs:
        if str(predictions) in wanted:
            yield pick(read_prediction_pair(predictions, references, config).records,
                       str(predictions))


def load_inputs(
    inputs: Sequence[Path], pairs: Sequence[tuple[Path, Path]], config: Config
) -> Validated:
    """Read and validate every records file and every legacy (predictions, references) pair;
    the inputs' other columns are read as a run reads them (``config.keep_columns``, the same
    warnings and errors; a name that no input of several has is not checked here)."""
    parts: list[Validated] = []
    for path in inputs:
        frame = read_records(path, config, config.keep_columns, missing_ok=len(inputs) > 1)
        parts.append(validate_records(frame, str(path), config))
    for predictions, references in pairs:
        pair = read_prediction_pair(predictions, references, config)
        checked = validate_records(pair.records, str(predictions), config)
        parts.append(
            Validated(
                records=checked.records,
                rejected=pl.concat([checked.rejected, pair.rejected]),
                n_read=checked.n_read + pair.rejected.height,
            )
        )
    return Validated(
        records=pl.concat(
            [p.records for p in parts]
            or [pl.DataFrame(schema={**RECORD_SCHEMA, **PROVENANCE_SCHEMA})]
        ),
        rejected=pl.concat([p.rejected for p in parts] or [pl.DataFrame(schema=REJECTED_SCHEMA)]),
        n_read=sum(p.n_read for p in parts),
    )


# --- per-column parsing: (value in the canonical dtype or null, problems) -----------------------


def _parse(column: str, dtype: pl.DataType, target: pl.DataType) -> tuple[pl.Expr, list[_Problem]]:
    col = pl.col(column)
    if isinstance(dtype, pl.Array):
        col, dtype = col.arr.to_list(), pl.List(dtype.inner)
    if dtype == pl.Null():
        return col.cast(target), []
    if target == pl.String():
        return _text(column, col, dtype)
    if target in (pl.Int64(), pl.Float64()):
        return _number(column, col, dtype, integer=target == pl.Int64())
    if target == GROUPS:
        return _groups(column, col, dtype)
    if isinstance(target, pl.List):
        return _list(column, col, dtype, target)
    raise AssertionError(f"no parser for canonical dtype {target}")  # pragma: no cover


def _text(column: str, col: pl.Expr, dtype: pl.DataType) -> tuple[pl.Expr, list[_Problem]]:
    if dtype == pl.String() or isinstance(dtype, (pl.Categorical, pl.Enum)):
        return col.cast(pl.String), []
    if dtype == JSON_VALUE:
        kind = col.struct.field("kind")
        wrong = kind.is_not_null() & (kind != "string")
        return col.struct.field("string"), [_when(wrong, _got(column, "string", kind))]
    return pl.lit(None, pl.String), [
        _when(col.is_not_null(), _got(column, "string", pl.lit(_kind(dtype))))
    ]


def _number(
    column: str, col: pl.Expr, dtype: pl.DataType, *, integer: bool
) -> tuple[pl.Expr, list[_Problem]]:
    expected = "an integer" if integer else "a finite number"
    target = pl.Int64 if integer else pl.Float64

    def from_float(x: pl.Expr) -> pl.Expr:
        return _exact_int(x) if integer else pl.when(x.is_finite()).then(x)

    if dtype.is_integer():
        value = col.cast(target, strict=False)
        shown = col.cast(pl.String)
    elif dtype.is_float() or dtype.is_decimal():
        value = from_float(col.cast(pl.Float64))
        shown = col.cast(pl.String)
    elif dtype == pl.String():
        text = col.str.strip_chars()
        number = pl.when(text.str.contains(_NUMBER_TEXT)).then(text.cast(pl.Float64, strict=False))
        if integer:
            whole = pl.when(text.str.contains(_INT_TEXT)).then(text.cast(pl.Int64, strict=False))
            value = pl.coalesce(whole, from_float(number))
        else:
            value = from_float(number)
        col = pl.when(text != "").then(text)  # a blank cell is a missing value
        shown = _quoted(text)
    elif dtype == JSON_VALUE:
        kind = col.struct.field("kind")
        as_int = col.struct.field("int")
        as_float = col.struct.field("float")
        if integer:
            value = pl.when(kind == "int").then(as_int).otherwise(from_float(as_float))
        else:
            value = from_float(as_float)
        as_json = col.struct.field("json")
        shown = (
            pl.when(kind.is_in(["int", "float"]))
            .then(as_json)
            .when(kind == "string")
            .then(pl.format("string {}", as_json))
            .otherwise(kind)
        )
        col = kind
    else:
        value = pl.lit(None, target)
        shown = pl.lit(_kind(dtype))
    return value, [_when(col.is_not_null() & value.is_null(), _got(column, expected, shown))]


def _list(
    column: str, col: pl.Expr, dtype: pl.DataType, target: pl.List
) -> tuple[pl.Expr, list[_Problem]]:
    integers = target.inner == pl.Int64()
    expected = "a list of integers" if integers else "a list of strings"
    value: pl.Expr
    text: pl.Expr
    if dtype == pl.String():
        text = pl.when(col.str.strip_chars() != "").then(col)  # a blank cell is a missing list
        value = _decode(text, target)
        shown = _quoted(text)
        return value, [_when(text.is_not_null() & value.is_null(), _got(column, expected, shown))]
    if dtype == JSON_VALUE:
        kind = col.struct.field("kind")
        text = col.struct.field("json")
        value = pl.when(kind == "list").then(_decode(text, target))
        shown = pl.when(kind == "list").then(_quoted(text)).otherwise(kind)
        return value, [_when(kind.is_not_null() & value.is_null(), _got(column, expected, shown))]
    if not isinstance(dtype, pl.List):
        shown = pl.lit(_kind(dtype))
        return pl.lit(None, target), [_when(col.is_not_null(), _got(column, expected, shown))]

    inner = dtype.inner
    if integers and inner.is_integer():
        value = col.cast(target, strict=False)
    elif integers and inner.is_float():
        value = col.list.eval(_exact_int(pl.element()))
    elif not integers and (inner == pl.String() or isinstance(inner, (pl.Categorical, pl.Enum))):
        value = col.cast(target)
    else:  # only an empty list of another element type is acceptable
        value = pl.when(col.list.len() == 0).then(pl.lit([], dtype=target))
        shown = pl.lit(f"list of {_kind(inner)}")
        return value, [_when(col.list.len() > 0, _got(column, expected, shown))]
    complete = _no_null_element(value)
    shown = pl.format("[{}]", _join_elements(col))
    return pl.when(complete).then(value), [
        _when(col.is_not_null() & ~complete, _got(column, expected, shown))
    ]


def _groups(column: str, col: pl.Expr, dtype: pl.DataType) -> tuple[pl.Expr, list[_Problem]]:
    """A list of groups of alternatives: every group a non-empty list of non-null strings.

    Accepted as a nested list column or as JSON text (``[["Paris"], ["1912", "in 1912"]]``).
    """
    expected = "a list of non-empty lists of strings"
    value: pl.Expr
    if dtype == pl.String() or dtype == JSON_VALUE:
        if dtype == JSON_VALUE:
            kind = col.struct.field("kind")
            text = pl.when(kind == "list").then(col.struct.field("json"))
            shown = pl.when(kind == "list").then(_quoted(text)).otherwise(kind)
            present = kind.is_not_null()
        else:
            text = pl.when(col.str.strip_chars() != "").then(col)
            shown = _quoted(text)
            present = text.is_not_null()
        parsed = pl.when(text.str.contains(_STRING_LISTS_TEXT)).then(text).str.json_decode(GROUPS)
        value = pl.when(_complete_groups(parsed)).then(parsed)
        return value, [_when(present & value.is_null(), _got(column, expected, shown))]
    inner = dtype.inner if isinstance(dtype, pl.List) else None
    if not (isinstance(inner, pl.List) and _as_text(inner.inner)):
        shown = pl.lit(_kind(dtype) if not isinstance(dtype, pl.List) else str(dtype).lower())
        return pl.lit(None, GROUPS), [_when(col.is_not_null(), _got(column, expected, shown))]
    value = col.cast(GROUPS)
    complete = _complete_groups(value)
    shown = pl.lit("a null or empty group or a null alternative")
    return pl.when(complete).then(value), [
        _when(col.is_not_null() & ~complete, _got(column, expected, shown))
    ]


def _complete_groups(groups: pl.Expr) -> pl.Expr:
    """Every group is non-empty and has no null alternative (false for a null list)."""
    element = pl.element()
    ok = (element.list.len() > 0) & _no_null_element(element)
    return groups.list.eval(ok.fill_null(False)).list.all().fill_null(False)


def _decode(text: pl.Expr, target: pl.List) -> pl.Expr:
    """JSON array text -> list; null unless the text is an array of the exact element type.

    ``str.json_decode`` converts ``1.5`` and ``true`` to integers and raises on malformed text,
    so only text matching a strict pattern reaches it; elements too large for Int64 decode to
    null and are caught by the caller's completeness check.
    """
    pattern = _INT_LIST_TEXT if target.inner == pl.Int64() else _STRING_LIST_TEXT
    decoded = pl.when(text.str.contains(pattern)).then(text).str.json_decode(target)
    return pl.when(_no_null_element(decoded)).then(decoded)


def _no_null_element(lists: pl.Expr) -> pl.Expr:
    """True where a list holds no null element (null for a null list).

    Counts nulls inside each list instead of copying it without them (a tenth of the time on
    lists of strings).
    """
    return lists.list.eval(pl.element().null_count()).list.first() == 0


# --- checks on parsed values --------------------------------------------------------------------


def _value_checks(
    column: str, present: Sequence[str], explained: Callable[[str], pl.Expr]
) -> list[_Problem]:
    """Checks of a parsed value; ``explained(name)`` is true where column ``name`` already
    has a type problem (a flag in the first pass, a reason in the second)."""
    value = pl.col(_value(column))
    checks: list[_Problem] = []
    if column in REQUIRED_COLUMNS:
        # a null that is not already explained by a type problem
        checks.append(
            _when(
                value.is_null() & ~explained(column),
                pl.lit(f"{column}: is null (required)"),
            )
        )
    if column == "task":
        unknown = value.is_not_null() & ~value.is_in(RGB_TASKS)
        message = pl.format(f"task: unknown task {{}}; known: {', '.join(RGB_TASKS)}",
                            _quoted(value))
        checks.append(_when(unknown, message))
        groups = pl.col(_value("answer_groups")) if "answer_groups" in present else pl.lit(None)
        answered = value.is_in(RGB_ANSWERED_TASKS) & groups.is_null()
        checks.append(_when(
            answered & ~explained("answer_groups")
            if "answer_groups" in present else answered,
            pl.format("task: {} rows need answer_groups", value),
        ))
    if column in NON_NEGATIVE_COLUMNS:
        negative = pl.format(f"{column}: must not be negative, got {{}}", value)
        checks.append(_when(value < 0, negative))
    for items, aligned in (("context_ids", "contexts"), ("relevance", "relevant_ids")):
        if column == items and aligned in present:
            n = pl.col(_value(aligned)).list.len()
            checks.append(_when(
                value.is_not_null() & n.is_not_null() & (value.list.len() != n),
                pl.format(f"{items}: {{}} values for {{}} {aligned} (one each)",
                          value.list.len(), n),
            ))
    if column == "relevance":
        checks.append(_when(value.list.min() < 0, pl.format(
            "relevance: [{}] must be >= 0 (grades are gains)", _join_elements(value))))
    if column in CITATION_COLUMNS:
        shown = _join_elements(value)
        below = value.list.min() < 1  # passage numbers are 1-based, with or without contexts
        if "contexts" in present:
            n = pl.col(_value("contexts")).list.len()
            outside = n.is_not_null() & (below | (value.list.max() > n))
            checks.append(
                _when(
                    outside,
                    pl.format(f"{column}: [{{}}] outside 1..{{}} (the number of contexts)",
                              shown, n),
                )
            )
            below = below & n.is_null()
        checks.append(
            _when(below, pl.format(f"{column}: [{{}}] must be >= 1 (passage numbers are 1-based)",
                                   shown))
        )
    return checks


def _exact_int(x: pl.Expr) -> pl.Expr:
    """Float -> Int64 when exactly integral and within ``MAX_EXACT_FLOAT``; otherwise null."""
    exact = x.is_finite() & (x == x.floor()) & (x.abs() <= MAX_EXACT_FLOAT)
    return pl.when(exact).then(x.cast(pl.Int64, strict=False))


# --- raw rows and helpers -----------------------------------------------------------------------


def _raw(columns: Sequence[str], schema: pl.Schema) -> pl.Expr:
    """The row as read, as one JSON object (canonical names; JSON_VALUE columns as in the file)."""
    fragments = []
    for column in columns:
        dtype = schema[column]
        if dtype == JSON_VALUE:
            value = pl.col(column).struct.field("json").fill_null("null")
            fragments.append(pl.format(f'"{column}":{{}}', value))
            continue
        col = _json_writable(pl.col(column), dtype)
        encoded = pl.struct(col.alias(column)).struct.json_encode()  # {"column":value}
        fragments.append(encoded.str.strip_prefix("{").str.strip_suffix("}"))
    return pl.format("{{{}}}", pl.concat_str(fragments, separator=","))


def _json_writable(col: pl.Expr, dtype: pl.DataType | DataTypeClass) -> pl.Expr:
    """``col`` in a dtype that ``json_encode`` can write (it cannot write Binary, for one)."""
    if _plain_json(dtype):
        return col
    if dtype == pl.Binary():
        return col.bin.encode("base64")
    if isinstance(dtype, (pl.List, pl.Array)) and _as_text(dtype.inner):
        return col.cast(pl.List(pl.String))
    if _as_text(dtype):
        return col.cast(pl.String)
    return pl.lit(f"<{dtype}>")


def _plain_json(dtype: pl.DataType | DataTypeClass) -> bool:
    if isinstance(dtype, (pl.List, pl.Array)):
        return _plain_json(dtype.inner)
    if isinstance(dtype, pl.Struct):
        return all(_plain_json(f.dtype) for f in dtype.fields)
    return dtype.is_numeric() or dtype in (pl.String(), pl.Boolean(), pl.Null())


def _as_text(dtype: pl.DataType | DataTypeClass) -> bool:
    """Dtypes whose values cast to String without failing."""
    return (
        _plain_json(dtype)
        or dtype.is_temporal()
        or dtype.is_decimal()
        or isinstance(dtype, (pl.Categorical, pl.Enum))
    )


def _with_provenance(frame: pl.DataFrame, path: str) -> pl.DataFrame:
    source = pl.col(SOURCE_COLUMN) if SOURCE_COLUMN in frame.columns else pl.lit(path)
    row = pl.col(ROW_COLUMN) if ROW_COLUMN in frame.columns else pl.int_range(pl.len())
    return frame.with_columns(
        source.cast(pl.String).alias(SOURCE_COLUMN), row.cast(pl.Int64).alias(ROW_COLUMN)
    )


def _kind(dtype: pl.DataType | DataTypeClass) -> str:
    """A dtype named with the JSON vocabulary of reasons (``int``, ``list``, ...)."""
    if dtype.is_integer():
        return "int"
    if dtype.is_float():
        return "float"
    if dtype == pl.Boolean():
        return "bool"
    if dtype == pl.String():
        return "string"
    if isinstance(dtype, (pl.List, pl.Array)):
        return "list"
    if isinstance(dtype, pl.Struct):
        return "object"
    return str(dtype).lower()


def _join_elements(lists: pl.Expr) -> pl.Expr:
    """``1, 2, null``: list elements as text, for reasons."""
    return lists.list.eval(pl.element().cast(pl.String).fill_null("null")).list.join(", ")


def _got(column: str, expected: str, shown: pl.Expr) -> pl.Expr:
    return pl.format(f"{column}: expected {expected}, got {{}}", shown.fill_null("null"))


def _quoted(text: pl.Expr) -> pl.Expr:
    short = (
        pl.when(text.str.len_chars() > MAX_QUOTED)
        .then(pl.format("{}...", text.str.slice(0, MAX_QUOTED - 3)))
        .otherwise(text)
    )
    return pl.format("'{}'", short)


@dataclass(frozen=True)
class _Problem:
    """A check: rows where ``condition`` holds are rejected with ``message``."""

    condition: pl.Expr
    message: pl.Expr

    def message_where_found(self) -> pl.Expr:
        return pl.when(self.condition).then(self.message)


def _when(condition: pl.Expr, message: pl.Expr) -> _Problem:
    return _Problem(condition, message)


def _flagged(problems: Sequence[_Problem]) -> pl.Expr:
    """True where any of ``problems`` holds (a null condition does not)."""
    if not problems:
        return pl.lit(False)
    return pl.any_horizontal(p.condition.fill_null(False) for p in problems)


def _join(problems: Sequence[pl.Expr]) -> pl.Expr:
    """Problems joined with "; ", or null when there are none."""
    if not problems:
        return pl.lit(None, pl.String)
    joined = pl.concat_str(problems, separator="; ", ignore_nulls=True)
    return pl.when(joined != "").then(joined)


def _value(column: str) -> str:
    return f"__value_{column}"


def _flag(column: str) -> str:
    return f"__flag_{column}"


def _problem(column: str) -> str:
    return f"__problem_{column}"
