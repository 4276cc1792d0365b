"""Memory: the budgets that bound what one step of the statistics holds, and the blocks of
models (intervals) or pairs (comparisons) cut to fit them.

Sums are kept only for the (group, cluster) pairs that have rows, sorted by group
(:class:`~pipeline.stats.sums._Sums`; a grid of at most :data:`DENSE_CELLS` cells x clusters
is summed densely, with the same sums). Models (for the intervals) and model pairs (for the
comparisons) are taken a block at a time whose estimated sums fit :data:`BLOCK_BYTES`; a
block is resampled in sub-blocks of the same budget and its rows are streamed to the Parquet
file (a temporary file per slice of the intervals, joined in order at the end), so memory
does not grow with the number of models, pairs, cells or slices. Up to :data:`PASS_ROWS`
rows the coded rows are read once and kept; above, each block reads the rows of its models in
passes over disjoint sets of clusters (``cluster % passes``; both tables share the passes
when each is one block), which bounds memory by the rows of one pass; the comparisons' totals
(``mean_a``, ``mean_b``) across passes may then differ from one pass in the last bit.

The budgets are read when used (``budgets.BLOCK_BYTES``), so a test may set them on this
module. None of them changes a number of the tables.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pipeline.stats.coding import _Layout

#: Rows of the scores read in one pass (:class:`~pipeline.stats.passes._Rows`).
PASS_ROWS = 2_000_000


#: Elements of one resampling matrix (B x n_ids): 2**24 float64 = 128 MiB; with the int32
#: draws and the int64 counts behind it a chunk peaks near 320 MiB.
CHUNK_ELEMENTS = 2**24
#: Bytes of sufficient statistics (and of resampled means) one block of work holds: models
#: (pairs) are taken a block at a time, groups resampled a block at a time.
BLOCK_BYTES = 2**27
#: A grid whose cells x clusters (of one model or pair) are at most this many is summed on a
#: dense array; beyond, only the cells that have rows are kept.
DENSE_CELLS = 2**16
#: In the bucketed regime a group in at most 1/this of the buckets is resampled by gathering
#: its buckets instead of a dense column.
SPARSE_RATIO = 32
#: Columns of every resampling product (BLAS sums in an order that depends on the shape).
PRODUCT_COLUMNS = 128
#: Rows of one frame (one Parquet row group) of the tables.
FRAME_ROWS = 131_072


def _split(costs: Sequence[int], budget: int) -> list[np.ndarray]:
    """Consecutive runs of ``range(len(costs))`` whose costs add up to at most ``budget``
    (a run holds at least one)."""
    runs: list[np.ndarray] = []
    start, total = 0, 0
    for i, cost in enumerate(costs):
        if i > start and total + cost > budget:
            runs.append(np.arange(start, i))
            start, total = i, 0
        total += cost
    if start < len(costs):
        runs.append(np.arange(start, len(costs)))
    return runs


def _interval_blocks(layout: _Layout) -> list[np.ndarray]:
    """Consecutive models (codes, null last) whose statistics of every interval grid fit
    :data:`BLOCK_BYTES` together (estimated from their rows; the rows themselves are read
    :data:`PASS_ROWS` at a time)."""
    m, k = len(layout.metrics), layout.clusters
    costs = [0] * layout.size("model")
    for grid in layout.interval_grids:
        n_fine = math.prod(layout.size(c) for c in grid.columns)
        cells = [layout.n_cells(columns) for columns in grid.slices]
        for i, rows in enumerate(layout.model_rows.tolist()):
            entries = min(rows, n_fine * k) + sum(min(rows, c * k) for c in cells)
            costs[i] += entries * (2 * m + 4) * 16 + sum(cells) * m * 10 * 8
            if n_fine * k <= DENSE_CELLS:
                costs[i] += 3 * (m + 1) * n_fine * k * 8
    return _split(costs, BLOCK_BYTES)


def _pair_blocks(layout: _Layout, pairs: Sequence[tuple[int, int]]) -> list[np.ndarray]:
    """Consecutive pairs (indices into ``pairs``) whose statistics fit :data:`BLOCK_BYTES`
    together (estimated from the rows of their models)."""
    m, k = len(layout.metrics), layout.clusters
    grids = [(math.prod(layout.size(c) for c in grid.columns),
              [layout.n_cells(columns) for columns in grid.slices])
             for grid in layout.comparison_grids]
    rows = layout.model_rows.tolist()
    costs = []
    for a, b in pairs:
        paired = min(rows[a], rows[b])
        cost = 0
        for n_fine, cells in grids:
            entries = min(paired, n_fine * k) + sum(min(paired, c * k) for c in cells)
            cost += entries * (2 * m + 4) * 16 + sum(cells) * m * 16 * 8
            cost += 4 * m * (n_fine if n_fine <= DENSE_CELLS else sum(cells)) * 8
        costs.append(cost)
    return _split(costs, BLOCK_BYTES)
