"""How the scores are coded before they are summed (:class:`_Layout`): the cluster of each
id, the key columns as small integers, and the grids the slices are summed on.

The cluster: an id (its rank, a null id first) when the scores have at most
:data:`~pipeline.stats.tables.EXACT_MAX_IDS` distinct ids, else its md5 bucket
(:func:`bucket_of`: the top ``log2(buckets)`` bits of md5 of the UTF-8 id, stable across
library versions). A key column's code is the rank of its value among the sorted non-null
values, null last. The default slices of a table come from one fine grid over their columns
(each slice a sum over the others), each requested slice from its own grid (:func:`_grids`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from pipeline.schema import InputError
from pipeline.stats.slices import _key_dtype, check_slices, slice_name
from pipeline.stats.tables import (
    BUCKETS,
    COMPARISON_SLICES,
    INTERVAL_SLICES,
    MAX_SLICE_CELLS,
    SLICE_COLUMNS,
    binary_columns,
    metric_columns,
)
from pipeline.text.kernels.buffers import string_buffers
from pipeline.text.kernels.md5 import md5_first_words


def _check_buckets(buckets: int) -> None:
    if not (8 <= buckets <= 2**16 and buckets & (buckets - 1) == 0):
        raise ValueError(f"buckets must be a power of two in [8, 65536], got {buckets!r}")


def bucket_of(ids: pl.Series, buckets: int = BUCKETS) -> pl.Series:
    """The bucket of each id: the top ``log2(buckets)`` bits of the first 4 bytes of md5 (UTF-8).

    Equal to ``int(hashlib.md5(id.encode()).hexdigest()[:8], 16) >> (32 - log2(buckets))``
    (:func:`~pipeline.text.kernels.md5.md5_first_words`), so stable across versions of polars,
    DuckDB and Python. A null id goes to bucket 0.

    >>> bucket_of(pl.Series(["q1", None]), 4096).to_list()
    [4083, 0]
    """
    _check_buckets(buckets)
    offsets, data, valid = string_buffers(ids.cast(pl.String))
    shift = np.uint32(32 - (buckets.bit_length() - 1))
    codes = md5_first_words(offsets, data) >> shift
    codes[~valid] = 0
    return pl.Series("cluster", codes, dtype=pl.UInt32)


def stable_order(codes: np.ndarray, size: int) -> np.ndarray:
    """``np.argsort(codes, kind="stable")`` of codes in ``[0, size)``: as ``uint16`` where they
    fit, which numpy sorts by radix (11 ms for a million rows, 24 ms as ``int64``).

    >>> stable_order(np.array([2, 0, 1, 0]), 3).tolist()
    [1, 3, 2, 0]
    """
    return np.argsort(codes.astype(np.uint16) if size <= 2**16 else codes, kind="stable")


@dataclass(frozen=True)
class _Grid:
    """Slices computed from one fine grid: ``columns`` are its axes, each slice a subset."""

    columns: tuple[str, ...]
    slices: tuple[tuple[str, ...], ...]


def _grids(
    defaults: tuple[tuple[str, ...], ...], requested: tuple[tuple[str, ...], ...]
) -> tuple[_Grid, ...]:
    """One grid for the default slices, one per requested slice that is not a default."""
    grids = [_Grid(tuple(dict.fromkeys(c for s in defaults for c in s)), defaults)]
    known = {frozenset(s) for s in defaults}
    for columns in requested:
        if frozenset(columns) not in known:
            known.add(frozenset(columns))
            grids.append(_Grid(columns, (columns,)))
    return tuple(grids)


@dataclass(frozen=True)
class _Layout:
    """What a pass needs to code rows: the clusters, the dictionaries of the key columns."""

    mapping: pl.DataFrame  # id, idx (rank of the id, null first), cluster; one row per id
    exact: bool  # clusters are ids (idx), else md5 buckets
    clusters: int  # number of cluster codes
    #: Key columns coded as small integers (each value its rank among the non-null values,
    #: null last) -> their sorted non-null values ([] if the column is absent).
    values: dict[str, list[Any]]
    dtypes: dict[str, pl.DataType]  # key column -> its type while coding and in the tables
    key_columns: tuple[str, ...]  # the typed slice columns of the tables, in order
    interval_grids: tuple[_Grid, ...]
    comparison_grids: tuple[_Grid, ...]
    metrics: list[str]
    binary: np.ndarray
    rows: int
    model_rows: np.ndarray  # rows per model code (null model last)

    def size(self, column: str) -> int:
        """Codes of a key column: its values and null."""
        return len(self.values[column]) + 1

    def cells(self, columns: Sequence[str]) -> list[tuple[Any, ...]]:
        """Every combination of non-null values of ``columns``, in the order of the grids."""
        return list(itertools.product(*(self.values[c] for c in columns)))

    def n_cells(self, columns: Sequence[str]) -> int:
        """The number of combinations of non-null values of ``columns``."""
        return math.prod(len(self.values[c]) for c in columns)


def _key_sets(requested: tuple[tuple[str, ...], ...]) -> tuple[
    tuple[_Grid, ...], tuple[_Grid, ...], tuple[str, ...], tuple[str, ...]
]:
    """The interval and comparison grids of the default and ``requested`` slices, the columns
    coded as small integers, and the key columns of the tables."""
    interval_grids = _grids(INTERVAL_SLICES, requested)
    comparison_grids = _grids(COMPARISON_SLICES, requested)
    used = [c for grid in (*interval_grids, *comparison_grids) for c in grid.columns]
    coded = tuple(dict.fromkeys(("model", "run", "noise_level", "task", *used)))
    key_columns = tuple(dict.fromkeys((*SLICE_COLUMNS, *used)))
    return interval_grids, comparison_grids, coded, key_columns


def stats_columns(schema: pl.Schema, by: Iterable[str | Sequence[str]] = ()) -> list[str]:
    """The columns of the scores the statistics read (those of ``schema``): ``id``, the coded
    and key columns of the default slices and those of ``by``, and the metrics.

    >>> stats_columns(pl.Schema({"id": pl.String(), "model": pl.String(),
    ...                          "answer_em": pl.Int8(), "raw": pl.String()}))
    ['id', 'model', 'answer_em']
    """
    _, _, coded, key_columns = _key_sets(check_slices(schema, by))
    wanted = {"id", *coded, *key_columns, *metric_columns(schema)}
    return [c for c in schema if c in wanted]


def _layout(
    lf: pl.LazyFrame, exact_max_ids: int, buckets: int, by: Iterable[str | Sequence[str]] = ()
) -> _Layout:
    _check_buckets(buckets)
    schema = lf.collect_schema()
    requested = check_slices(schema, by)
    interval_grids, comparison_grids, coded, key_columns = _key_sets(requested)
    dtypes = {c: _key_dtype(c, schema.get(c)) for c in dict.fromkeys((*coded, *key_columns))}
    present = [c for c in coded if c in schema]
    ids, per_model, *dictionaries = pl.collect_all(
        [
            lf.select(pl.col("id").unique()),
            lf.group_by(pl.col("model").cast(dtypes["model"])).agg(pl.len().alias("rows")),
            *(lf.select(pl.col(c).cast(dtypes[c]).drop_nulls().unique()) for c in present),
        ],
        engine="streaming",
    )
    values = {c: frame[c].sort().to_list() for c, frame in zip(present, dictionaries, strict=True)}
    values = {c: values.get(c, []) for c in coded}
    for columns in requested:
        cells = math.prod(len(values[c]) for c in columns)
        if cells > MAX_SLICE_CELLS:
            counts = ", ".join(f"{c}: {len(values[c])}" for c in columns)
            raise InputError(
                f"slice {slice_name(columns)!r} has {cells} combinations of values ({counts} "
                f"distinct values); at most {MAX_SLICE_CELLS}"
            )
    code_of = {model: code for code, model in enumerate(values["model"])}
    model_rows = np.zeros(len(values["model"]) + 1, dtype=np.int64)
    for model, n in per_model.iter_rows():
        model_rows[code_of.get(model, len(values["model"]))] += n
    id_values = ids["id"].sort(nulls_last=False)  # the order of the exact bootstrap's ranks
    idx = pl.Series("idx", np.arange(id_values.len(), dtype=np.uint32))
    exact = id_values.len() <= exact_max_ids
    cluster = idx.rename("cluster") if exact else bucket_of(id_values, buckets)
    binary_set = set(binary_columns(schema))
    metrics = metric_columns(schema)
    return _Layout(
        mapping=pl.DataFrame([id_values, idx, cluster]),
        exact=exact,
        clusters=id_values.len() if exact else buckets,
        values=values,
        dtypes=dtypes,
        key_columns=key_columns,
        interval_grids=interval_grids,
        comparison_grids=comparison_grids,
        metrics=metrics,
        binary=np.array([m in binary_set for m in metrics], dtype=bool),
        rows=int(model_rows.sum()),
        model_rows=model_rows,
    )
