"""Sufficient statistics: per (group, cluster) the sums and counts of each metric (for the
comparisons the sums of ``a - b`` and the pairs with both values), and per cell the totals of
``a``, ``b`` and McNemar's discordant pairs. Float sums are added by ``np.bincount`` in row
order, then over the fine cells of a slice cell, so the same input gives the same sums, dense
or sparse (:data:`~pipeline.stats.budgets.DENSE_CELLS`)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pipeline.stats import budgets
from pipeline.stats.coding import _Grid, _Layout


def _row_weights(values: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray | None]]:
    """Per metric the weights of its sums and of its counts (None: every row counts)."""
    weights: list[tuple[np.ndarray, np.ndarray | None]] = []
    for column in values:
        missing = np.isnan(column)
        if missing.any():
            weights.append((np.where(missing, 0.0, column), (~missing).astype(np.float64)))
        else:
            weights.append((column, None))
    return weights


def _fine_codes(
    codes: Mapping[str, np.ndarray], grid: _Grid, layout: _Layout, length: int
) -> np.ndarray:
    """The cell of each of ``length`` rows in ``grid``: its codes of the grid's columns in
    mixed radix (null last on every axis)."""
    fine = np.zeros(length, dtype=np.int64)
    for column in grid.columns:
        fine = fine * layout.size(column) + codes[column]
    return fine


def _marginals(fine: np.ndarray, lead: int, grid: _Grid, layout: _Layout) -> list[np.ndarray]:
    """The slices of ``grid`` from its dense fine cells.

    ``fine`` is ``(*lead axes, *grid sizes, clusters)`` with the null code last on every grid
    axis. One array per slice, ``(*lead axes, cells, clusters)``: the sums over the grid's other
    columns for every combination of non-null codes of the slice's columns (row-major in the
    slice's column order, as :meth:`_Layout.cells`).
    """
    parts = []
    for columns in grid.slices:
        keep = [grid.columns.index(c) for c in columns]
        drop = tuple(lead + a for a in range(len(grid.columns)) if a not in keep)
        part = fine.sum(axis=drop) if drop else fine
        kept = sorted(keep)  # the order of the remaining axes
        part = np.moveaxis(part, [lead + kept.index(a) for a in keep],
                           [lead + i for i in range(len(keep))])
        for i, column in enumerate(columns):
            part = np.take(part, np.arange(layout.size(column) - 1), axis=lead + i)
        parts.append(part.reshape(*part.shape[:lead], -1, part.shape[-1]))
    return parts


def _slice_cells_of(
    fine: np.ndarray, columns: Sequence[str], grid: _Grid, layout: _Layout
) -> tuple[np.ndarray, np.ndarray]:
    """For fine cell codes of ``grid``: whether each is in a cell of the slice ``columns``
    (no null in them) and that cell (row-major over the slice's columns, as
    :meth:`_Layout.cells`)."""
    digits: dict[str, np.ndarray] = {}
    rest = fine
    for column in reversed(grid.columns):
        rest, digits[column] = np.divmod(rest, layout.size(column))
    inside = np.ones(fine.size, dtype=bool)
    cell = np.zeros(fine.size, dtype=np.int64)
    for column in columns:
        inside &= digits[column] < layout.size(column) - 1
        cell = cell * (layout.size(column) - 1) + digits[column]
    return inside, cell


@dataclass
class _Sums:
    """Sufficient statistics of one slice for a block of groups, sparse over clusters: one entry
    per (group, cluster) that has rows, sorted by group, then cluster. ``sums`` and ``counts``
    are metrics x entries (for comparisons: the sums of ``a - b`` and the pairs with both
    values), ``rows`` the rows (paired keys) of each entry."""

    group: np.ndarray
    cluster: np.ndarray
    sums: np.ndarray
    counts: np.ndarray
    rows: np.ndarray

    @staticmethod
    def merged(parts: Sequence[_Sums], metrics: int, ordered: bool = False) -> _Sums:
        """The entries of several passes (disjoint clusters) in order; ``ordered``: the parts
        hold consecutive groups, in order."""
        if not parts:
            empty = np.empty(0, dtype=np.int64)
            return _Sums(empty, empty, np.empty((metrics, 0)), np.empty((metrics, 0)),
                         np.empty(0))
        if len(parts) == 1:
            return parts[0]
        group = np.concatenate([p.group for p in parts])
        cluster = np.concatenate([p.cluster for p in parts])
        order = np.arange(group.size) if ordered else np.lexsort((cluster, group))
        return _Sums(
            group[order], cluster[order],
            np.concatenate([p.sums for p in parts], axis=1)[:, order],
            np.concatenate([p.counts for p in parts], axis=1)[:, order],
            np.concatenate([p.rows for p in parts])[order],
        )

    def starts(self, groups: int) -> tuple[np.ndarray, np.ndarray]:
        """Each group's first entry and number of entries."""
        nnz = np.bincount(self.group, minlength=groups)
        return np.concatenate([[0], np.cumsum(nnz)[:-1]]).astype(np.int64), nnz


def _grid_sums(
    lead: np.ndarray, n_lead: int, codes: Mapping[str, np.ndarray],
    weights: Sequence[tuple[np.ndarray, np.ndarray | None]], grid: _Grid, layout: _Layout,
) -> list[_Sums]:
    """Sums and counts per (lead, slice cell) group and cluster of rows, for each slice of
    ``grid``; ``lead`` is each row's model in the block (or 0: one pair), ``weights`` per metric
    as :func:`_row_weights`.

    Rows are first added per fine cell of the grid (every grid column, null included) and
    cluster, in row order (``np.bincount``); a slice's entry is the sum of its fine cells in
    ascending order. A grid of at most :data:`budgets.DENSE_CELLS` cells x clusters is summed on a
    dense array, as numpy sums over the axes of the other columns; beyond, only the fine cells
    that have rows are kept (the same sums where there are two clusters or more).
    """
    k, m = layout.clusters, len(weights)
    if lead.size == 0:
        return [_Sums.merged([], m) for _ in grid.slices]
    sizes = [layout.size(c) for c in grid.columns]
    n_fine = math.prod(sizes)
    fine = _fine_codes(codes, grid, layout, lead.size)
    key = (lead * n_fine + fine) * k + codes["cluster"]
    out = []
    if n_fine * k <= budgets.DENSE_CELLS:
        size = n_lead * n_fine * k
        rows = np.bincount(key, minlength=size).astype(np.float64)
        sums, counts = np.empty((m, size)), np.empty((m, size))
        for j, (w, c) in enumerate(weights):
            sums[j] = np.bincount(key, weights=w, minlength=size)
            counts[j] = rows if c is None else np.bincount(key, weights=c, minlength=size)
        shape = (n_lead, *sizes, k)
        parts = zip(_marginals(sums.reshape(m, *shape), 2, grid, layout),
                    _marginals(counts.reshape(m, *shape), 2, grid, layout),
                    _marginals(rows.reshape(1, *shape), 2, grid, layout), strict=True)
        for part_sums, part_counts, part_rows in parts:
            occupied = part_rows[0] > 0  # n_lead x cells x clusters
            group, cell, cluster = np.nonzero(occupied)
            out.append(_Sums(group * occupied.shape[1] + cell, cluster,
                             part_sums[:, occupied], part_counts[:, occupied],
                             part_rows[0][occupied]))
        return out
    unique, inverse = np.unique(key, return_inverse=True)
    fine_rows = np.bincount(inverse, minlength=unique.size).astype(np.float64)
    fine_sums, fine_counts = np.empty((m, unique.size)), np.empty((m, unique.size))
    for j, (w, c) in enumerate(weights):
        fine_sums[j] = np.bincount(inverse, weights=w, minlength=unique.size)
        fine_counts[j] = (fine_rows if c is None
                          else np.bincount(inverse, weights=c, minlength=unique.size))
    rest, cluster_u = np.divmod(unique, k)
    lead_u, fine_u = np.divmod(rest, n_fine)
    for columns in grid.slices:
        inside, cell = _slice_cells_of(fine_u, columns, grid, layout)
        target = (lead_u[inside] * layout.n_cells(columns) + cell[inside]) * k + cluster_u[inside]
        entries, slot = np.unique(target, return_inverse=True)
        group, cluster = np.divmod(entries, k)
        sums, counts = np.empty((m, entries.size)), np.empty((m, entries.size))
        for j in range(m):  # in ascending fine order, as the dense sums
            sums[j] = np.bincount(slot, weights=fine_sums[j][inside], minlength=entries.size)
            counts[j] = np.bincount(slot, weights=fine_counts[j][inside], minlength=entries.size)
        out.append(_Sums(group, cluster, sums, counts,
                         np.bincount(slot, weights=fine_rows[inside], minlength=entries.size)))
    return out


def _grid_totals(
    codes: Mapping[str, np.ndarray], weights: Sequence[Sequence[np.ndarray]], grid: _Grid,
    layout: _Layout,
) -> list[np.ndarray]:
    """Per slice of ``grid``: the sums (``4 x metrics x cells``) of the rows' ``weights`` (per
    metric up to four arrays: a, b, then the McNemar pairs (1, 0) and (0, 1)), over fine cells
    in row order, then over the fine cells of a slice cell (dense as numpy sums, up to
    :data:`budgets.DENSE_CELLS` fine cells; else in ascending order)."""
    m = len(weights)
    sizes = [layout.size(c) for c in grid.columns]
    n_fine = math.prod(sizes)
    fine = _fine_codes(codes, grid, layout, codes["cluster"].size)
    if n_fine <= budgets.DENSE_CELLS:
        totals = np.zeros((4, m, n_fine))
        for j, arrays in enumerate(weights):
            for t, w in enumerate(arrays):
                totals[t, j] = np.bincount(fine, weights=w, minlength=n_fine)
        return [part[..., 0] for part in
                _marginals(totals.reshape(4, m, *sizes, 1), 2, grid, layout)]
    unique, inverse = np.unique(fine, return_inverse=True)
    totals = np.zeros((4, m, unique.size))
    for j, arrays in enumerate(weights):
        for t, w in enumerate(arrays):
            totals[t, j] = np.bincount(inverse, weights=w, minlength=unique.size)
    out = []
    for columns in grid.slices:
        inside, cell = _slice_cells_of(unique, columns, grid, layout)
        cells = layout.n_cells(columns)
        part = np.zeros((4, m, cells))
        for t, j in itertools.product(range(4), range(m)):
            part[t, j] = np.bincount(cell[inside], weights=totals[t, j][inside], minlength=cells)
        out.append(part)
    return out


def _cluster_totals(s: _Sums, groups: int, clusters: int) -> tuple[np.ndarray, np.ndarray]:
    """Per (group, metric) the counts and sums over the ``clusters`` (groups x metrics each).

    Sums are added as numpy adds a dense row of every cluster (pairwise summation): directly
    where a group has at most two clusters (one rounding in any order), on dense rows for more;
    counts are whole numbers.
    """
    m = s.sums.shape[0]
    first, nnz = s.starts(groups)
    n, total = np.zeros((groups, m)), np.zeros((groups, m))
    few = nnz[s.group] <= 2
    for j in range(m):
        n[:, j] = np.bincount(s.group, weights=s.counts[j], minlength=groups)
        total[:, j] = np.bincount(s.group[few], weights=s.sums[j, few], minlength=groups)
    many = np.flatnonzero(nnz > 2)
    step = max(1, budgets.BLOCK_BYTES // (8 * max(m * clusters, 1)))
    for start in range(0, many.size, step):
        chosen = many[start : start + step]
        entry = np.repeat(first[chosen], nnz[chosen]) + _ranks(nnz[chosen])
        dense = np.zeros((chosen.size, m, clusters))
        local = np.repeat(np.arange(chosen.size), nnz[chosen])
        dense[local, :, s.cluster[entry]] = s.sums[:, entry].T
        total[chosen] = dense.sum(axis=2)
    return n, total


def _ranks(lengths: np.ndarray) -> np.ndarray:
    """0, 1, ..., n - 1 for each n of ``lengths``, concatenated."""
    ends = np.cumsum(lengths)
    return np.arange(int(ends[-1]) if ends.size else 0) - np.repeat(ends - lengths, lengths)
