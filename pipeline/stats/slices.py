"""Slices of the scores: a tuple of columns (``()`` is ``all``), named ``all`` or by its
columns joined by commas (``question_type,noise_level``), written on the command line as
``COLUMN[,COLUMN...]``. A requested slice is checked against the scores' columns: not ``model``
(every row is per model) nor ``id`` (the cluster), plain values, named unlike a column of the
tables; a slice repeated as a set of columns is that slice (:func:`check_slices`). A slice
column keeps its type in the tables (the contract's types for the record columns, a
categorical as text)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import polars as pl

from pipeline.metrics.registry import REGISTRY
from pipeline.schema import InputError
from pipeline.stats.tables import (
    _KEY_DTYPES,
    _NOT_SLICES,
    ALL,
    SLICE_COLUMNS,
    comparison_schema,
    interval_schema,
)


def slice_name(columns: Sequence[str]) -> str:
    """The name of a slice: ``all`` for no column, else its columns joined by commas.

    >>> slice_name(()), slice_name(("question_type", "noise_level"))
    ('all', 'question_type,noise_level')
    """
    return ",".join(columns) if columns else ALL


def parse_slice(text: str) -> tuple[str, ...]:
    """The columns of a slice written as ``COLUMN[,COLUMN...]`` (``all``: no column).

    >>> parse_slice("question_type, noise_level")
    ('question_type', 'noise_level')
    """
    columns = tuple(c.strip() for c in text.split(","))
    if columns == (ALL,):
        return ()
    if not all(columns):
        raise InputError(f"a slice is COLUMN[,COLUMN...]; got {text!r}")
    return columns


def _sliceable(dtype: pl.DataType) -> bool:
    return not dtype.is_nested() and not isinstance(dtype, pl.Object | pl.Binary)


def _key_dtype(column: str, dtype: pl.DataType | None) -> pl.DataType:
    """The type of a slice column in the tables (and of its values while coding)."""
    if column in _KEY_DTYPES or dtype is None:
        return _KEY_DTYPES.get(column, pl.String())
    if isinstance(dtype, pl.Categorical | pl.Enum):
        return pl.String()
    return dtype


def check_slices(
    scores_schema: Mapping[str, pl.DataType], by: Iterable[str | Sequence[str]]
) -> tuple[tuple[str, ...], ...]:
    """The requested slices ``by`` (each a tuple of columns, or a text for :func:`parse_slice`)
    checked against the scores: every column exists, is not ``model`` or ``id``, holds plain
    values and is named unlike a column of the tables; a column repeated within a slice is an
    error, a slice repeated (as a set) is dropped.

    An unknown column raises :class:`~pipeline.schema.InputError` naming the columns a slice
    may use.

    >>> check_slices({"id": pl.String(), "question_type": pl.String(),
    ...               "noise_level": pl.Float64()}, ["question_type,noise_level"])
    (('question_type', 'noise_level'),)
    """
    reserved = set(interval_schema({})) | set(comparison_schema({}))
    available = [c for c, dtype in scores_schema.items()
                 if c not in _NOT_SLICES and c not in reserved and _sliceable(dtype)]
    slices: list[tuple[str, ...]] = []
    seen: set[frozenset[str]] = set()
    for given in by:
        columns = parse_slice(given) if isinstance(given, str) else tuple(given)
        if len(set(columns)) != len(columns):
            raise InputError(f"slice {slice_name(columns)!r} names a column twice")
        for column in columns:
            if column in _NOT_SLICES:
                raise InputError(
                    f"{column!r} cannot be a slice column: every interval is per model and "
                    "every comparison a pair of models, and the id is what is resampled"
                )
            if column not in available:
                problem = ("is not a column of the scores" if column not in scores_schema
                           else "cannot be a slice column")
                keys = [c for c in available if c not in REGISTRY]
                metrics = len(available) - len(keys)
                raise InputError(
                    f"slice column {column!r} {problem}; available: {', '.join(keys)}"
                    + (f" (and the {metrics} metric columns)" if metrics else "")
                )
        if frozenset(columns) not in seen:
            seen.add(frozenset(columns))
            slices.append(columns)
    return tuple(slices)


def _empty_keys(lf: pl.LazyFrame, by: Iterable[str | Sequence[str]]) -> dict[str, pl.DataType]:
    """The slice columns of the empty tables of scores without metrics (``by`` checked)."""
    schema = lf.collect_schema()
    columns = dict.fromkeys((*SLICE_COLUMNS, *(c for s in check_slices(schema, by) for c in s)))
    return {c: _key_dtype(c, schema.get(c)) for c in columns}
