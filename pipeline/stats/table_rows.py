"""The rows of the tables in table order: the typed slice columns of a slice's cells (null
outside the slice), the metrics by name, chunks of about
:data:`~pipeline.stats.budgets.FRAME_ROWS` rows, and :class:`_Frames`, the tables collected
in memory (:func:`~pipeline.stats.intervals.interval_table`,
:func:`~pipeline.stats.comparisons.comparison_table`)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import polars as pl

from pipeline.stats import budgets
from pipeline.stats.coding import _Layout
from pipeline.stats.slices import slice_name
from pipeline.stats.tables import comparison_schema, interval_schema, metric_columns, metric_name


def _nullable(values: np.ndarray) -> pl.Series:
    return pl.Series(values, dtype=pl.Float64, nan_to_null=True)


def _value_series(layout: _Layout, column: str) -> pl.Series:
    return pl.Series(column, layout.values[column], dtype=layout.dtypes[column])


def _cell_order(layout: _Layout, columns: Sequence[str]) -> tuple[list[np.ndarray], np.ndarray]:
    """The codes of each cell of a slice (one array per slice column, cells in
    :meth:`_Layout.cells` order) and the cells in the order of the tables (by the slice
    columns in the order of :attr:`_Layout.key_columns`, values ascending)."""
    shape = [len(layout.values[c]) for c in columns]
    codes = [np.asarray(a, dtype=np.int64)
             for a in np.unravel_index(np.arange(math.prod(shape)), shape)] if columns else []
    ranked = [c for c in layout.key_columns if c in columns]
    order = (np.lexsort([codes[list(columns).index(c)] for c in reversed(ranked)])
             if columns else np.zeros(1, dtype=np.int64))
    return codes, order


def _key_columns(
    layout: _Layout, columns: Sequence[str], codes: Sequence[np.ndarray], cells: np.ndarray
) -> dict[str, pl.Series]:
    """``slice`` and the typed slice columns (null outside the slice) of rows of ``cells``."""
    out = {"slice": pl.Series("slice", [slice_name(columns)], dtype=pl.String)
           .gather(np.zeros(cells.size, dtype=np.int64))}
    for c in layout.key_columns:
        if c in columns:
            out[c] = _value_series(layout, c).gather(codes[list(columns).index(c)][cells])
        else:
            out[c] = pl.Series(c, [None], dtype=layout.dtypes[c]).gather(
                np.zeros(cells.size, dtype=np.int64))
    return out


def _in_table_order(groups: np.ndarray, m: int, metric_order: np.ndarray, present: np.ndarray
                    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(group, metric) of the rows of ``groups`` (in table order), metrics by name, where
    ``present[group, metric]``; in chunks of about :data:`budgets.FRAME_ROWS` rows."""
    step = max(1, budgets.FRAME_ROWS // max(m, 1))
    for start in range(0, groups.size, step):
        g = np.repeat(groups[start : start + step], m)
        j = np.tile(metric_order, g.size // max(m, 1))
        keep = present[g, j]
        if keep.any():
            yield g[keep], j[keep]


def _metric_order(layout: _Layout) -> tuple[np.ndarray, pl.Series]:
    names = [metric_name(m) for m in layout.metrics]
    order = np.array(sorted(range(len(names)), key=names.__getitem__), dtype=np.int64)
    return order, pl.Series("metric", names, dtype=pl.String)


def _has_stats_columns(lf: pl.LazyFrame) -> bool:
    schema = lf.collect_schema()
    return "model" in schema and "id" in schema and bool(metric_columns(schema))


def _interval_schema_of(layout: _Layout) -> dict[str, pl.DataType]:
    return interval_schema({c: layout.dtypes[c] for c in layout.key_columns})


def _comparison_schema_of(layout: _Layout) -> dict[str, pl.DataType]:
    return comparison_schema({c: layout.dtypes[c] for c in layout.key_columns})


class _Frames:
    """Frames collected per section (a slice of the intervals; one for the comparisons), in
    memory: the table is the sections in order of their names."""

    def __init__(self, schema: Mapping[str, pl.DataType]) -> None:
        self.schema = dict(schema)
        self.sections: dict[str, list[pl.DataFrame]] = {}

    def add(self, section: str, frame: pl.DataFrame) -> None:
        self.sections.setdefault(section, []).append(frame)

    def finish(self) -> pl.DataFrame:
        frames = [f for name in sorted(self.sections) for f in self.sections[name]]
        return pl.concat([pl.DataFrame(schema=self.schema), *frames], how="vertical")
