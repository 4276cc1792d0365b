"""What every reader does last (:func:`_complete`): a text cell of a list column written as a
Python list repr becomes the JSON array it denotes (:mod:`pipeline.io.pylists`); a file
without ``id`` gets ids derived from each row's content (:mod:`pipeline.io.derived_ids`); the
labels given for the file on the command line (``--model``, ``--run-label``) fill the
``model`` and ``run`` columns, a row whose own value differs rejected with the reason; and a
row holding more text than :data:`~pipeline.io.record_limits.MAX_RECORD_BYTES` is rejected."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping

import polars as pl

from pipeline.config import Config
from pipeline.io import record_limits
from pipeline.io.canonical import JSON_VALUE
from pipeline.io.derived_ids import ID_KEYS, derived_ids
from pipeline.io.pylists import python_lists_as_json_series
from pipeline.schema import (
    READER_PROBLEM,
    READER_RAW,
    RECORD_SCHEMA,
    ROW_COLUMN,
)

#: The readers' logger (its records name ``pipeline.io.readers``, as before the split).
log = logging.getLogger("pipeline.io.readers")


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
#: The columns whose text counts toward :data:`record_limits.MAX_RECORD_BYTES`.
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
    """``frame`` with rows holding more than :data:`record_limits.MAX_RECORD_BYTES` of text
    marked as a reader problem (``the row holds 40.0 MiB of text, more than the 16 MiB a record may
    hold``); their text is dropped, so it goes no further than this check."""
    sizes = [size for name in _TEXT_COLUMNS if name in frame.columns
             if (size := _text_bytes(name, frame.schema[name])) is not None]
    if not sizes:
        return frame
    total = frame.select(pl.sum_horizontal(sizes).cast(pl.Int64)).to_series()
    if total.max() is None or int(total.max()) <= record_limits.MAX_RECORD_BYTES:  # type: ignore[arg-type]
        return frame
    over = total > record_limits.MAX_RECORD_BYTES
    problem = pl.when(pl.lit(over)).then(pl.format(
        "the row holds {} MiB of text, more than the {} MiB a record may hold "
        "(docs/input-integrity.md)", (pl.lit(total) / 2**20).round(1),
        pl.lit(record_limits.MAX_RECORD_BYTES // 2**20),
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
