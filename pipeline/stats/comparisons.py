"""``comparisons.parquet``: per (model_a, model_b, slice, slice columns, metric) the paired
difference of means over questions both models answered, its paired cluster bootstrap
interval, the exact McNemar test (binary metrics) or the paired sign-flip permutation test
(others), and Holm's adjustment over one family of rows of one (pair, metric): the default
slices together, each requested slice on its own. Rows are paired on
(id, run, noise_level, task), nulls equal; a key under which a model has several rows is left
out (a warning). The definition of the table is in :mod:`pipeline.stats`."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from pipeline.stats.budgets import _pair_blocks
from pipeline.stats.closed_forms import mcnemar_exact_p
from pipeline.stats.coding import _Layout, _layout, stable_order
from pipeline.stats.multiple_testing import holm
from pipeline.stats.pairing import Pairing, _check_max_all_pairs, _pairing
from pipeline.stats.passes import _Rows
from pipeline.stats.resampling import (
    _bucket_resampled,
    _bucket_signs,
    _bucket_weights,
    _check_resamples,
    _exact_resampled,
    _rng,
)
from pipeline.stats.slices import _empty_keys, slice_name
from pipeline.stats.sums import _grid_sums, _grid_totals, _Sums
from pipeline.stats.table_rows import (
    _cell_order,
    _comparison_schema_of,
    _Frames,
    _has_stats_columns,
    _in_table_order,
    _key_columns,
    _metric_order,
    _nullable,
)
from pipeline.stats.tables import (
    ALPHA,
    BUCKETS,
    CORRECTION,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    EXACT_MAX_IDS,
    MAX_ALL_PAIRS,
    PAIR_KEYS,
    TEST_MCNEMAR,
    TEST_PERMUTATION,
    comparison_schema,
)

#: The logger of the whole package (its records name ``pipeline.stats``, as before the split).
log = logging.getLogger("pipeline.stats")


def comparison_table(
    scores: pl.DataFrame | pl.LazyFrame, *, resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED, exact_max_ids: int = EXACT_MAX_IDS, buckets: int = BUCKETS,
    by: Iterable[str | Sequence[str]] = (), max_all_pairs: int = MAX_ALL_PAIRS,
    baseline: str | None = None,
) -> pl.DataFrame:
    """Paired differences and tests for every pair of models (up to ``max_all_pairs`` models;
    beyond, each model against ``baseline`` or the best model, see :class:`Pairing`), overall,
    per noise level, category and task, and per slice of ``by`` (each a tuple of columns of the
    scores, or ``"COLUMN,COLUMN"``).

    Grain: one row per (model_a, model_b, slice, slice columns, metric); see the module
    docstring. Rows with a null model take part in no comparison.
    """
    _check_resamples(resamples)
    _check_max_all_pairs(max_all_pairs)
    lf = scores.lazy()
    by = tuple(by)
    if not _has_stats_columns(lf):
        return pl.DataFrame(schema=comparison_schema(_empty_keys(lf, by)))
    source = _Rows(lf, _layout(lf, exact_max_ids, buckets, by))
    pairing = _pairing(source, max_all_pairs, baseline)
    sink = _Frames(_comparison_schema_of(source.layout))
    for frame in _comparison_frames(source, pairing, resamples, seed):
        sink.add("", frame)
    return sink.finish()


def _keyed(codes: Mapping[str, np.ndarray], layout: _Layout, models: np.ndarray
           ) -> tuple[dict[int, tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """Per model of ``models``: its pairing keys (ascending; ``id`` rank, then run, noise level
    and task codes) that it has one row under, and those rows; and per model the rows that
    share a key with another row of the model (left out)."""
    n_noise, n_task = layout.size("noise_level"), layout.size("task")
    space = layout.size("run") * n_noise * n_task
    variant = (codes["run"] * n_noise + codes["noise_level"]) * n_task + codes["task"]
    if layout.mapping.height * space < 2**62:
        key = codes["idx"] * space + variant
    else:
        _, key = np.unique(np.stack([codes["idx"], variant], axis=1), axis=0,
                           return_inverse=True)
        key = key.ravel()
    order = stable_order(codes["model"], layout.size("model"))
    starts = np.searchsorted(codes["model"][order], np.arange(layout.size("model") + 1))
    keyed: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    duplicates = np.zeros(layout.size("model"), dtype=np.int64)
    for i in models.tolist():
        rows = order[starts[i] : starts[i + 1]]
        by_key = np.argsort(key[rows], kind="stable")
        unique, first, count = _runs(key[rows][by_key])
        duplicates[i] = int(count[count > 1].sum())
        keyed[i] = (unique[count == 1], rows[by_key][first[count == 1]])
    return keyed, duplicates


def _common(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions in ``a`` and in ``b`` (both ascending, without repeats) of the values they
    share, ascending: ``np.intersect1d(a, b, assume_unique=True, return_indices=True)[1:]``
    by binary search instead of sorting both again (16 -> 10 ms for two models of 333k keys).

    >>> [p.tolist() for p in _common(np.array([1, 3, 5, 9]), np.array([3, 4, 9, 12]))]
    [[1, 3], [0, 2]]
    """
    at = np.searchsorted(b, a)
    found = at < b.size
    found[found] = b[at[found]] == a[found]
    return np.flatnonzero(found), at[found]


def _runs(ordered: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(ordered, return_index=True, return_counts=True)`` of a sorted array, without
    sorting it again: each run's value, first index and length.

    >>> [a.tolist() for a in _runs(np.array([3, 3, 5, 7, 7, 7]))]
    [[3, 5, 7], [0, 2, 3], [2, 1, 3]]
    """
    starts = np.empty(ordered.size, dtype=np.bool_)
    starts[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    first = np.flatnonzero(starts)
    return ordered[first], first, np.diff(first, append=ordered.size)


@dataclass
class _PairSums:
    """A pair's statistics per comparison grid: per slice its entries (one list per pass) and
    its totals (4 x metrics x cells: sums of a and b, McNemar's discordant pairs)."""

    entries: list[list[list[_Sums]]]
    totals: list[list[np.ndarray]]


def _pair_pass(
    codes: Mapping[str, np.ndarray], values: Sequence[np.ndarray], rows_a: np.ndarray,
    rows_b: np.ndarray, layout: _Layout, into: _PairSums,
) -> None:
    """Add the statistics of the paired rows (``rows_a[i]`` of model a with ``rows_b[i]`` of
    model b) of one pass to ``into``."""
    columns = list(dict.fromkeys(c for grid in layout.comparison_grids for c in grid.columns))
    pair_codes = {c: codes[c][rows_a] for c in (*(c for c in columns if c in PAIR_KEYS),
                                                 "cluster")}
    for c in columns:
        if c not in PAIR_KEYS:  # model a's value, else model b's
            code_a = codes[c][rows_a]
            pair_codes[c] = np.where(code_a < layout.size(c) - 1, code_a, codes[c][rows_b])
    sums: list[tuple[np.ndarray, np.ndarray | None]] = []
    totals: list[list[np.ndarray]] = []
    for j, column in enumerate(values):
        a, b = column[rows_a], column[rows_b]
        diff = a - b  # NaN unless both values are there
        both = ~np.isnan(diff)
        if both.all():  # the common case: no masking
            sums.append((diff, None))
            totals.append([a, b])
        else:
            sums.append((np.where(both, diff, 0.0), both.astype(np.float64)))
            totals.append([np.where(both, a, 0.0), np.where(both, b, 0.0)])
        if layout.binary[j]:
            totals[-1] += [(both & (a == x) & (b == y)).astype(np.float64)
                           for x, y in ((1, 0), (0, 1))]
    lead = np.zeros(rows_a.size, dtype=np.int64)
    for g, grid in enumerate(layout.comparison_grids):
        for part, entries in zip(into.entries[g], _grid_sums(lead, 1, pair_codes, sums, grid,
                                                             layout), strict=True):
            part.append(entries)
        for total, add in zip(into.totals[g], _grid_totals(pair_codes, totals, grid, layout),
                              strict=True):
            total += add


class _PairBlock:
    """The comparison statistics of a block of pairs, pass after pass; then their rows."""

    def __init__(self, layout: _Layout, pairs: Sequence[tuple[int, int]]) -> None:
        self.layout, self.pairs = layout, list(pairs)
        self.models = np.unique(np.array(self.pairs, dtype=np.int64).ravel())
        m = len(layout.metrics)
        self.state = {
            pair: _PairSums(
                [[[] for _ in grid.slices] for grid in layout.comparison_grids],
                [[np.zeros((4, m, layout.n_cells(c))) for c in grid.slices]
                 for grid in layout.comparison_grids],
            )
            for pair in self.pairs
        }
        #: Per model: rows that share a pairing key with another row of the model.
        self.repeated = np.zeros(layout.size("model"), dtype=np.int64)

    def add(self, codes: Mapping[str, np.ndarray], values: Sequence[np.ndarray]) -> None:
        """Add the rows of one pass (rows of other models are ignored)."""
        keyed, repeated = _keyed(codes, self.layout, self.models)
        self.repeated += repeated
        for a, b in self.pairs:
            in_a, in_b = _common(keyed[a][0], keyed[b][0])
            _pair_pass(codes, values, keyed[a][1][in_a], keyed[b][1][in_b], self.layout,
                       self.state[(a, b)])

    def frames(self, resamples: int, seed: int, weights: np.ndarray, signs: np.ndarray | None,
               pairing: Pairing) -> Iterator[pl.DataFrame]:
        numbers = _pair_numbers(self.layout, self.state, resamples, seed, weights, signs)
        self.state.clear()
        for pair in self.pairs:
            yield from _pair_rows(self.layout, pair, numbers.pop(pair), resamples, seed,
                                  pairing)


def _comparison_resampling(layout: _Layout, resamples: int, seed: int
                           ) -> tuple[np.ndarray, np.ndarray | None]:
    """The bucketed regime's weight and sign matrices (empty and None when exact)."""
    k = layout.clusters
    if layout.exact:
        return np.empty((0, k), dtype=np.int32), None
    weights = _bucket_weights(_rng(seed, "bootstrap", "buckets"), resamples, k)
    signs = _bucket_signs(_rng(seed, "permutation", "buckets"), resamples, k) if resamples else None
    return weights, signs


def _warn_repeated(layout: _Layout, blocks: Iterable[_PairBlock]) -> None:
    """One warning per model with rows left out of its comparisons (counted once a model)."""
    repeated = np.zeros(layout.size("model"), dtype=np.int64)
    counted = np.zeros(layout.size("model"), dtype=bool)
    for block in blocks:
        repeated[~counted] += block.repeated[~counted]
        counted[block.models] = True
    for model, count in zip(layout.values["model"], repeated[:-1].tolist(), strict=True):
        if count:
            log.warning(
                "model %r: %d rows share a (%s) key with another row of the model; "
                "they are left out of its paired comparisons",
                model, count, ", ".join(PAIR_KEYS),
            )


def _comparison_frames(source: _Rows, pairing: Pairing, resamples: int, seed: int
                       ) -> Iterator[pl.DataFrame]:
    """The rows of the comparisons in table order, one block of pairs at a time."""
    layout = source.layout
    weights, signs = _comparison_resampling(layout, resamples, seed)
    done = []
    for block in _pair_blocks(layout, pairing.pairs):
        statistics = _PairBlock(layout, [pairing.pairs[i] for i in block.tolist()])
        for codes, values in source.batches(statistics.models):
            statistics.add(codes, values)
            del codes, values
        yield from statistics.frames(resamples, seed, weights, signs, pairing)
        done.append(statistics)
    _warn_repeated(layout, done)


@dataclass
class _SliceNumbers:
    """One slice's numbers for one pair (cells x metrics each)."""

    columns: tuple[str, ...]
    grid: int  # the index of its grid: its Holm family
    n_pairs: np.ndarray
    totals: np.ndarray  # 4 x metrics x cells
    low: np.ndarray
    high: np.ndarray
    p_value: np.ndarray
    p_adjusted: np.ndarray


def _pair_numbers(
    layout: _Layout, state: dict[tuple[int, int], _PairSums], resamples: int, seed: int,
    weights: np.ndarray, signs: np.ndarray | None,
) -> dict[tuple[int, int], list[_SliceNumbers]]:
    """Per pair of a block, per slice (grid after grid): pairs, means, bootstrap interval,
    p-value and its Holm adjustment over the rows of one (pair, metric, grid)."""
    m, k = len(layout.metrics), layout.clusters
    jobs: list[tuple[tuple[int, int], int, tuple[str, ...], _Sums, int]] = []
    for pair, sums in state.items():
        for g, grid in enumerate(layout.comparison_grids):
            for columns, parts in zip(grid.slices, sums.entries[g], strict=True):
                jobs.append((pair, g, columns, _Sums.merged(parts, m), layout.n_cells(columns)))
                parts.clear()
    n_pairs = [np.stack([np.bincount(s.group, weights=s.counts[j], minlength=cells)
                         for j in range(m)], axis=1) for *_, s, cells in jobs]
    if layout.exact:
        results = []
        for (pair, _, columns, s, cells), n in zip(jobs, n_pairs, strict=True):
            models = [layout.values["model"][i] for i in pair]
            name, values = slice_name(columns), layout.cells(columns)

            def generators(cell: int, head: tuple = (*models, name), values: list = values
                           ) -> tuple[np.random.Generator, np.random.Generator]:
                key = (*head, *values[cell])
                return _rng(seed, "bootstrap", *key), _rng(seed, "permutation", *key)

            results.append(_exact_resampled(s, cells, n, resamples, generators))
    else:
        results = _bucket_resampled([(s, cells) for *_, s, cells in jobs], k, weights, signs)
    numbers: dict[tuple[int, int], list[_SliceNumbers]] = {pair: [] for pair in state}
    for (pair, g, columns, _, _), n, (low, high, permutation) in zip(jobs, n_pairs, results,
                                                                     strict=True):
        totals = state[pair].totals[g][layout.comparison_grids[g].slices.index(columns)]
        mcnemar = mcnemar_exact_p(totals[2].T.astype(np.int64), totals[3].T.astype(np.int64))
        numbers[pair].append(_SliceNumbers(
            columns, g, n, totals, low, high, np.where(layout.binary, mcnemar, permutation),
            np.full(n.shape, np.nan),
        ))
    for slices in numbers.values():
        for g in range(len(layout.comparison_grids)):
            family = [f for f in slices if f.grid == g]
            for j in range(m):  # Holm over the rows of one (pair, metric, family)
                adjusted = holm(np.concatenate([f.p_value[f.n_pairs[:, j] > 0, j]
                                                for f in family]))
                start = 0
                for f in family:
                    rows = np.flatnonzero(f.n_pairs[:, j] > 0)
                    f.p_adjusted[rows, j] = adjusted[start : start + rows.size]
                    start += rows.size
    return numbers


def _pair_rows(
    layout: _Layout, pair: tuple[int, int], numbers: list[_SliceNumbers], resamples: int,
    seed: int, pairing: Pairing,
) -> Iterator[pl.DataFrame]:
    """The comparison rows of one pair, in table order (slices by name)."""
    m = len(layout.metrics)
    model_a, model_b = (layout.values["model"][i] for i in pair)
    metric_order, metric_names = _metric_order(layout)
    tests = pl.Series("test", [TEST_MCNEMAR if b else TEST_PERMUTATION for b in layout.binary],
                      dtype=pl.String)
    schema = _comparison_schema_of(layout)
    for f in sorted(numbers, key=lambda f: slice_name(f.columns)):
        codes, cell_order = _cell_order(layout, f.columns)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_a, mean_b = f.totals[0].T / f.n_pairs, f.totals[1].T / f.n_pairs
        for cell, metric in _in_table_order(cell_order, m, metric_order, f.n_pairs > 0):
            binary = layout.binary[metric]
            yield pl.DataFrame({
                "model_a": pl.Series([model_a], dtype=pl.String).gather(np.zeros_like(metric)),
                "model_b": pl.Series([model_b], dtype=pl.String).gather(np.zeros_like(metric)),
                **_key_columns(layout, f.columns, codes, cell),
                "metric": metric_names.gather(metric),
                "n_pairs": pl.Series(f.n_pairs[cell, metric].astype(np.int64)),
                "mean_a": _nullable(mean_a[cell, metric]),
                "mean_b": _nullable(mean_b[cell, metric]),
                "diff": _nullable(mean_a[cell, metric] - mean_b[cell, metric]),
                "ci_low": _nullable(f.low[cell, metric]),
                "ci_high": _nullable(f.high[cell, metric]),
                "test": tests.gather(metric),
                "n_a_only": pl.Series(f.totals[2][metric, cell].astype(np.int64)),
                "n_b_only": pl.Series(f.totals[3][metric, cell].astype(np.int64)),
                "_binary": pl.Series(binary),
                "p_value": _nullable(f.p_value[cell, metric]),
                "p_adjusted": _nullable(f.p_adjusted[cell, metric]),
            }).with_columns(
                n_a_only=pl.when("_binary").then("n_a_only"),
                n_b_only=pl.when("_binary").then("n_b_only"),
                correction=pl.lit(CORRECTION, dtype=pl.String),
                significant=pl.col("p_adjusted") < ALPHA,
                resamples=pl.lit(resamples, dtype=pl.Int64),
                seed=pl.lit(seed, dtype=pl.Int64),
                pairing=pl.lit(pairing.rule, dtype=pl.String),
                baseline=pl.lit(pairing.baseline, dtype=pl.String),
            ).select(list(schema))
