"""The steps every reader shares: the file's columns renamed to their canonical names
(``config.columns`` or a known layout, :mod:`pipeline.io.columns`; SQuAD-style answer
columns), the required columns checked, the input's other columns dropped with a warning or
kept (``keep``), the provenance columns added, and :data:`JSON_VALUE`, the struct of a JSON
column whose values do not all have the expected JSON type. A file that is empty or only
whitespace is refused first (:func:`check_file`)."""

from __future__ import annotations

import codecs
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import polars as pl

from pipeline.config import Config
from pipeline.io import record_limits
from pipeline.io.columns import (
    ColumnPlan,
    layout_names,
    plan_columns,
)
from pipeline.io.layout import RUN_PARTITION
from pipeline.schema import (
    PROVENANCE_SCHEMA,
    READER_SCHEMA,
    RECORD_SCHEMA,
    ROW_COLUMN,
    SOURCE_COLUMN,
    InputError,
)

#: The readers' logger (its records name ``pipeline.io.readers``, as before the split).
log = logging.getLogger("pipeline.io.readers")


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


#: A format's reader: (path, source as given, config, columns to keep, whether a kept name
#: may be absent from the file) -> the frame.
Reader = Callable[[Path, str, Config, Sequence[str] | None, bool], pl.DataFrame]


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
    order mark), read :data:`record_limits.SCAN_BYTES` at a time: a gigabyte of blank lines is
    refused without being held."""
    try:
        with open(path, "rb") as handle:
            chunk = handle.read(record_limits.SCAN_BYTES)
            if chunk.startswith(codecs.BOM_UTF8):
                chunk = chunk[len(codecs.BOM_UTF8):]
            while chunk:
                if chunk.strip():
                    return False
                chunk = handle.read(record_limits.SCAN_BYTES)
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


def _first_line(exc: BaseException) -> str:
    """The first line of an exception's message (a Rust panic's runs on for pages)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
