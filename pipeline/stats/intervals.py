"""``intervals.parquet``: per (slice, model, slice columns, metric) the mean and count of the
non-null values, the percentile cluster bootstrap interval over questions
(:mod:`pipeline.stats.resampling`) and, for binary metrics, the Wilson score interval
(:mod:`pipeline.stats.closed_forms`). The definition of the table is in
:mod:`pipeline.stats`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np
import polars as pl

from pipeline.stats.budgets import _interval_blocks
from pipeline.stats.closed_forms import wilson_interval
from pipeline.stats.coding import _Layout, _layout
from pipeline.stats.passes import _Rows
from pipeline.stats.resampling import (
    _bucket_resampled,
    _bucket_weights,
    _check_resamples,
    _exact_resampled,
    _rng,
)
from pipeline.stats.slices import _empty_keys, slice_name
from pipeline.stats.sums import _cluster_totals, _grid_sums, _row_weights, _Sums
from pipeline.stats.table_rows import (
    _cell_order,
    _Frames,
    _has_stats_columns,
    _in_table_order,
    _interval_schema_of,
    _key_columns,
    _metric_order,
    _nullable,
)
from pipeline.stats.tables import (
    BOOTSTRAP_METHOD,
    BUCKETS,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    EXACT_MAX_IDS,
    interval_schema,
)


def interval_table(
    scores: pl.DataFrame | pl.LazyFrame, *, resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED, exact_max_ids: int = EXACT_MAX_IDS, buckets: int = BUCKETS,
    by: Iterable[str | Sequence[str]] = (),
) -> pl.DataFrame:
    """Bootstrap and Wilson intervals of every metric per model, over all rows, per noise level
    and per category, and per slice of ``by`` (each a tuple of columns of the scores, or
    ``"COLUMN,COLUMN"``).

    Grain: one row per (slice, model, slice columns, metric); see the module docstring.

    >>> scores = pl.DataFrame({"id": ["q1", "q2"], "model": ["m", "m"], "answer_em": [1, 0]})
    >>> interval_table(scores, resamples=0).select("slice", "model", "metric", "n", "mean").row(0)
    ('all', 'm', 'answer_em', 2, 0.5)
    """
    _check_resamples(resamples)
    lf = scores.lazy()
    by = tuple(by)
    if not _has_stats_columns(lf):
        return pl.DataFrame(schema=interval_schema(_empty_keys(lf, by)))
    source = _Rows(lf, _layout(lf, exact_max_ids, buckets, by))
    sink = _Frames(_interval_schema_of(source.layout))
    for section, frame in _interval_frames(source, resamples, seed):
        sink.add(section, frame)
    return sink.finish()


class _IntervalBlock:
    """The interval statistics of a block of models, pass after pass; then their rows."""

    def __init__(self, layout: _Layout, block: np.ndarray) -> None:
        self.layout, self.block = layout, block
        self.local = np.full(layout.size("model"), -1, dtype=np.int64)
        self.local[block] = np.arange(block.size)
        self.parts: list[list[list[_Sums]]] = [[[] for _ in grid.slices]
                                               for grid in layout.interval_grids]

    def add(self, codes: Mapping[str, np.ndarray], values: Sequence[np.ndarray]) -> None:
        """Add the rows of one pass (only rows of the block's models)."""
        lead = self.local[codes["model"]]
        weights = _row_weights(list(values))
        for grid, parts in zip(self.layout.interval_grids, self.parts, strict=True):
            sums = _grid_sums(lead, self.block.size, codes, weights, grid, self.layout)
            for part, entries in zip(parts, sums, strict=True):
                part.append(entries)

    def frames(self, resamples: int, seed: int, weights: np.ndarray, method: str
               ) -> Iterator[tuple[str, pl.DataFrame]]:
        """(slice name, frame) of every slice, each slice's rows of the block in table order."""
        layout, block = self.layout, self.block
        m, k = len(layout.metrics), layout.clusters
        models = [*layout.values["model"], None]
        for grid, parts in zip(layout.interval_grids, self.parts, strict=True):
            jobs = [(_Sums.merged(part, m), block.size * layout.n_cells(columns))
                    for part, columns in zip(parts, grid.slices, strict=True)]
            parts.clear()
            totals = [_cluster_totals(entries, groups, k) for entries, groups in jobs]
            if layout.exact:
                bounds = []
                for columns, (entries, groups), (n, _) in zip(grid.slices, jobs, totals,
                                                              strict=True):
                    name, cells = slice_name(columns), layout.cells(columns)

                    def generators(g: int, name: str = name, cells: list = cells
                                   ) -> tuple[np.random.Generator, None]:
                        model, cell = divmod(g, len(cells))
                        key = (name, models[block[model]], *cells[cell])
                        return _rng(seed, "interval", *key), None

                    bounds.append(_exact_resampled(entries, groups, n, resamples, generators))
            else:
                bounds = _bucket_resampled(jobs, k, weights, None)
            del jobs
            for columns, (n, total), (low, high, _) in zip(grid.slices, totals, bounds,
                                                           strict=True):
                for frame in _interval_rows(layout, columns, block, n, total, low, high,
                                            resamples, seed, method):
                    yield slice_name(columns), frame


def _interval_method(layout: _Layout, resamples: int, seed: int) -> tuple[np.ndarray, str]:
    """The bucketed regime's weight matrix (empty when exact) and the ``method`` text."""
    if layout.exact:
        return np.empty((0, layout.clusters), dtype=np.int32), BOOTSTRAP_METHOD
    weights = _bucket_weights(_rng(seed, "interval", "buckets"), resamples, layout.clusters)
    return weights, f"{BOOTSTRAP_METHOD}, ids in {layout.clusters} md5 buckets"


def _interval_frames(source: _Rows, resamples: int, seed: int
                     ) -> Iterator[tuple[str, pl.DataFrame]]:
    """The rows of the intervals as (slice name, frame): a slice's frames in table order, one
    block of models at a time."""
    weights, method = _interval_method(source.layout, resamples, seed)
    for block in _interval_blocks(source.layout):
        statistics = _IntervalBlock(source.layout, block)
        for codes, values in source.batches(block):
            statistics.add(codes, values)
            del codes, values
        yield from statistics.frames(resamples, seed, weights, method)


def _interval_rows(
    layout: _Layout, columns: tuple[str, ...], block: np.ndarray, n: np.ndarray,
    total: np.ndarray, low: np.ndarray, high: np.ndarray, resamples: int, seed: int,
    method: str,
) -> Iterator[pl.DataFrame]:
    """The interval rows of one slice for a block of models, in table order (groups x
    metrics: the counts, sums and bootstrap bounds)."""
    m = len(layout.metrics)
    cells = layout.n_cells(columns)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / n
    w_low, w_high = wilson_interval(total, n)
    codes, cell_order = _cell_order(layout, columns)
    ordered = (np.arange(block.size)[:, None] * cells + cell_order[None, :]).ravel()
    metric_order, metric_names = _metric_order(layout)
    model_names = pl.Series("model", [*layout.values["model"], None], dtype=pl.String)
    schema = _interval_schema_of(layout)
    for g, j in _in_table_order(ordered, m, metric_order, n > 0):
        binary = layout.binary[j]
        yield pl.DataFrame({
            **_key_columns(layout, columns, codes, g % cells),
            "model": model_names.gather(block[g // cells]),
            "metric": metric_names.gather(j),
            "n": pl.Series(n[g, j].astype(np.int64)),
            "mean": _nullable(mean[g, j]),
            "ci_low": _nullable(low[g, j]),
            "ci_high": _nullable(high[g, j]),
            "wilson_low": _nullable(np.where(binary, w_low[g, j], np.nan)),
            "wilson_high": _nullable(np.where(binary, w_high[g, j], np.nan)),
        }).with_columns(
            resamples=pl.lit(resamples, dtype=pl.Int64),
            seed=pl.lit(seed, dtype=pl.Int64),
            method=pl.lit(method, dtype=pl.String),
        ).select(list(schema))
