"""Uncertainty and significance for ``scores.parquet``: bootstrap intervals and paired model tests.

Both tables are computed per *slice*: a tuple of columns of the scores (``()`` is ``all``, every
row). A slice's name is ``all`` or its columns joined by commas (``question_type,noise_level``).
Every table has one typed column per slice column, named and typed as in the scores (the
contract's ``noise_level`` double, ``category``, ``question_type`` and ``task`` text; a requested
column its own type, a categorical as text), null where the column is not part of the row's
slice: :data:`SLICE_COLUMNS` always, then the other columns of the requested slices in the
order given. Rows with a null in one of their slice's columns are left out of that slice.
Metrics are named as the slice views name their mean (:data:`METRIC_NAMES`: ``abstain_rate``
is the mean of ``abstained``); a metric whose mean no view shows keeps its column name.

Two tables are written beside ``scores.parquet``:

* ``intervals.parquet`` -- grain: one row per (slice, model, slice columns, metric). Default
  slices (:data:`INTERVAL_SLICES`): ``all`` (the ``by_model`` view; a null model is its own
  group), ``noise_level`` (``by_model_noise``) and ``category`` (``by_model_category``).
  ``mean`` and ``n`` are the plain mean and count of the non-null values; ``ci_low`` /
  ``ci_high`` are the 2.5th and 97.5th percentiles (numpy ``linear``) of the resampled means of
  a percentile bootstrap over *questions*: rows are clustered by ``id`` (a question can appear
  once per noise level), ids are drawn with replacement, and a resampled mean is
  ``sum(w * id_sums) / sum(w * id_counts)``. ``wilson_low`` / ``wilson_high`` are the Wilson
  score interval (Wilson 1927) of binary metrics.
* ``comparisons.parquet`` -- grain: one row per (model_a, model_b, slice, slice columns,
  metric), ``model_a < model_b``. The pairs: every two models up to :data:`MAX_ALL_PAIRS`
  models (``pairing`` = ``all pairs``); with more, each model and one baseline (``pairing`` =
  ``baseline``, ``baseline`` its name): the model named, else the model with the best mean of
  :data:`PRIMARY_METRIC` over all its rows (:class:`Pairing`). A pair's rows are the same
  under either rule. Rows of the two models are paired on (id, run, noise_level,
  task), nulls equal; a question only one model answered is left out, and so is a key under
  which a model has several rows (which row to pair is ambiguous; a warning is logged).
  Default slices (:data:`COMPARISON_SLICES`): ``all`` and every non-null value of
  ``noise_level``, ``category`` and ``task``. A pair's value of a column that is not a pairing
  key (``category``, ``question_type``) is model a's, or model b's where a's is null.
  ``diff = mean_a - mean_b`` over pairs where both values are present, with a paired
  bootstrap interval (clustered by ``id``).
  Binary metrics are tested with the exact two-sided McNemar test (``n_a_only`` pairs where
  only model a scored 1, ``n_b_only`` the converse); other metrics with a paired permutation
  test that flips the signs of the per-question summed differences,
  ``p = (1 + #{|T*| >= |T|}) / (B + 1)``. ``p_adjusted`` is Holm's step-down adjustment over
  one family of rows of one (model_a, model_b, metric): the default slices together, and each
  requested slice on its own (so asking for a slice never changes the default rows);
  ``significant`` is ``p_adjusted < 0.05``.

Requested slices (``by``; ``rag-eval stats DIR --by question_type,noise_level``) are added to
the defaults of both tables; one equal to a default (as a set of columns) is that default. A
requested slice may have at most :data:`MAX_SLICE_CELLS` combinations of values.

Rows whose metric has no value in a group (``n == 0`` / ``n_pairs == 0``) are left out.
With ``resamples=0`` the bootstrap intervals and permutation p-values are null; Wilson
intervals and McNemar tests are still computed.

How it is computed. The scores are read once (or in a few passes, see below), only the key and
metric columns, and reduced to *sufficient statistics*: per (group, cluster) the sums and counts
of each metric, per (model pair, slice value, cluster) the sums of ``a - b`` and the number of
pairs with both values. The default slices come from one fine grid over their columns (each
slice a sum over the others), each requested slice from its own grid. Every resample is then a
matrix product over clusters; no row is held after its pass. The rule that picks the cluster is
global (one per table, from the distinct ids of all the scores):

* **Exact** (at most :data:`EXACT_MAX_IDS` = 256 distinct ids): a cluster is an id, and each
  group has its own generator ``SeedSequence([seed, *sha256(JSON group key)[:16] as 4 uint32])``
  with keys ``("interval", slice, model, *values)``, ``("bootstrap", model_a, model_b, slice,
  *values)`` and ``("permutation", ...)``, where ``values`` are the row's values of the slice's
  columns in the slice's order (JSON; a value JSON has no type for is its ``str``). Each
  resample draws the group's ids with replacement (``rng.integers``, ids in ascending order,
  a null id first) and the sign-flip test draws ``rng.integers(0, 2)`` per id: the cluster
  bootstrap computed group by group, and a group's numbers do not depend on other groups.
* **Bucketed** (more ids): ids are hashed into :data:`BUCKETS` = 1024 buckets by
  :func:`bucket_of` (the top 10 bits of md5 of the UTF-8 id, stable across library versions), and
  buckets are resampled instead of ids. One weight matrix ``W`` (resamples x buckets; each row
  the counts of ``buckets`` uniform draws, i.e. multinomial) comes from
  ``SeedSequence([seed, *sha256(["interval", "buckets"])])`` for the intervals and from
  ``["bootstrap", "buckets"]`` for the comparisons, and is applied to every group at once:
  questions are resampled jointly across slices, which is a valid cluster bootstrap since a
  bucket is a union of whole questions. A small group sees ``W`` restricted to the few buckets
  it occupies: close to the Poisson(1) bootstrap. The sign-flip test uses one sign matrix from
  ``["permutation", "buckets"]`` on the bucket sums of the per-question differences: a sum of
  independent symmetric differences is symmetric, so the test stays a valid randomization
  test. The numbers depend on the seed and the data only; ``method`` names the buckets.
  Every product with ``W`` has one shape (:data:`_PRODUCT_COLUMNS` columns, zero-padded), and a
  group in at most 1/:data:`_SPARSE_RATIO` of the buckets is resampled from its own buckets,
  so a group's numbers depend on its own sums only, not on the groups, slices or blocks
  computed beside it.

Both regimes give the same ``n``, ``mean``, Wilson intervals and McNemar tests (closed forms
over the same counts). Float sums are added by ``np.bincount`` in row order, so the same input
gives byte-identical files.

Memory. Sums are kept only for the (group, cluster) pairs that have rows, sorted by group
(:class:`_Sums`; a grid of at most :data:`_DENSE_CELLS` cells x clusters is summed densely, with
the same sums). Models (for the intervals) and model pairs (for the comparisons) are taken a
block at a time whose estimated sums fit :data:`_BLOCK_BYTES`; a block is resampled in
sub-blocks of the same budget and its rows are streamed to the Parquet file (a temporary file
per slice of the intervals, joined in order at the end), so memory does not grow with the
number of models, pairs, cells or slices. Up to :data:`PASS_ROWS` rows the coded rows are read
once and kept; above, each block reads the rows of its models in passes over disjoint sets of
clusters (``cluster % passes``; both tables share the passes when each is one block), which
bounds memory by the rows of one pass; the comparisons' totals (``mean_a``, ``mean_b``) across
passes may then differ from one pass in the last bit.

Writing. The two files are one pair, written as one step (:class:`_Staging`): both are written
in a sibling temporary directory (``.tmp-stats.<pid>@<host>.<8 hex>``, removed by the next
command once its writer is gone) and put in place only when both are complete, each by one
rename, the file it replaces kept until both are in place and put back if the second rename
fails. Both carry the same :func:`stats_id` (seed, resamples and a digest of both tables) in
their Parquet key-value metadata under :data:`STATS_ID_KEY`, so that a pair mixed by a process
killed between the two renames is told apart (:func:`check_stats_pair`).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import math
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import duckdb
import numpy as np
import polars as pl
import pyarrow.parquet as pq

from pipeline.io.atomic import (
    TMP_PREFIX,
    check_output_file,
    output_dir,
    owned_name,
    remove_stale,
)
from pipeline.io.layout import COMPARISONS_FILE, INTERVALS_FILE, SCORES_FILE
from pipeline.metrics.registry import REGISTRY
from pipeline.metrics.spec import MEAN_KINDS
from pipeline.metrics.user import scores_catalog
from pipeline.schema import RECORD_SCHEMA, InputError

__all__ = [
    "ALL",
    "COMPARISONS_FILE",
    "COMPARISON_SCHEMA",
    "COMPARISON_SLICES",
    "CONFIDENCE",
    "DEFAULT_RESAMPLES",
    "DEFAULT_SEED",
    "INTERVALS_FILE",
    "INTERVAL_SCHEMA",
    "INTERVAL_SLICES",
    "MAX_ALL_PAIRS",
    "MAX_SLICE_CELLS",
    "METRIC_NAMES",
    "PAIRING_ALL",
    "PAIRING_BASELINE",
    "PRIMARY_METRIC",
    "SLICE_COLUMNS",
    "STATS_FILES",
    "STATS_ID_KEY",
    "Pairing",
    "StatsSummary",
    "benjamini_hochberg",
    "binary_columns",
    "bucket_of",
    "check_slices",
    "check_stats_pair",
    "comparison_table",
    "holm",
    "interval_table",
    "mcnemar_exact_p",
    "metric_columns",
    "metric_name",
    "parse_slice",
    "read_stats_id",
    "slice_name",
    "stats_id",
    "wilson_interval",
    "write_stats",
]

log = logging.getLogger(__name__)

DEFAULT_RESAMPLES = 1000
DEFAULT_SEED = 0
CONFIDENCE = 0.95
#: Family-wise level of the Holm-adjusted tests.
ALPHA = 0.05
#: The normal quantile of a two-sided 95% interval.
Z_95 = 1.959963984540054


BOOTSTRAP_METHOD = "percentile bootstrap over questions"
TEST_MCNEMAR = "mcnemar exact"
TEST_PERMUTATION = "paired permutation"
CORRECTION = "holm"

#: Rows of the two models are paired on these columns (nulls equal).
PAIR_KEYS: tuple[str, ...] = ("id", "run", "noise_level", "task")
#: The name of the slice of all rows.
ALL = "all"
#: Slice columns every table has a typed column for, in this order (null where a row's slice
#: does not use them); the other columns of requested slices follow them.
SLICE_COLUMNS: tuple[str, ...] = ("noise_level", "category", "question_type", "task")
#: Default slices of the intervals (always per model): all rows, each noise level, each category.
INTERVAL_SLICES: tuple[tuple[str, ...], ...] = ((), ("noise_level",), ("category",))
#: Default slices of the comparisons: all rows, each noise level, category and RGB task.
COMPARISON_SLICES: tuple[tuple[str, ...], ...] = (
    (), ("noise_level",), ("category",), ("task",),
)
#: Most combinations of values (the product of each column's distinct non-null values) a
#: requested slice may have: its sums take groups x clusters x metrics floats.
MAX_SLICE_CELLS = 256
#: A metric's name in the tables where the slice views (``metrics_by_slice.sql``) name its mean
#: otherwise; every other metric keeps its column name.
METRIC_NAMES: Mapping[str, str] = MappingProxyType({
    "citation_precision": "citation_precision_macro",
    "citation_recall": "citation_recall_macro",
    "citation_f1": "citation_f1_macro",
    "abstained": "abstain_rate",
    "abstention_correct": "abstention_accuracy",
    "insufficient_context_detected": "insufficient_context_rate",
    "total_tokens": "mean_total_tokens",
})

#: At most this many distinct ids: the exact cluster bootstrap (one generator per group). Its
#: cost grows as groups x ids x resamples (about 15 ns per draw: 1,333 ids in 84 groups took
#: 0.9 s, more than 1M rows bucketed); beyond it ids are hashed into :data:`BUCKETS` buckets,
#: which then hold about one id each until the ids outnumber the buckets.
EXACT_MAX_IDS = 256
#: Buckets of the bucketed regime (a power of two; see :func:`bucket_of`).
BUCKETS = 1024
#: Rows of the scores read in one pass (see :class:`_Rows`).
PASS_ROWS = 2_000_000
#: Up to this many models the comparisons pair every two of them; with more, each model is
#: compared with one baseline model (``max_all_pairs`` of :func:`write_stats`).
MAX_ALL_PAIRS = 20
#: The metric whose best mean over all rows picks the baseline when none is named (without it,
#: the first metric that has a better direction, in registry order).
PRIMARY_METRIC = "answer_f1"
#: Values of the ``pairing`` column of the comparisons: every two models, or each model and
#: the ``baseline``.
PAIRING_ALL = "all pairs"
PAIRING_BASELINE = "baseline"
#: The two files :func:`write_stats` writes, in the order they are put in place.
STATS_FILES: tuple[str, ...] = (INTERVALS_FILE, COMPARISONS_FILE)
#: Key of the Parquet key-value metadata that ties the two files of one :func:`write_stats`
#: (:func:`stats_id`; :func:`check_stats_pair` compares them).
STATS_ID_KEY = "rag_eval.stats_id"

#: Elements of one resampling matrix (B x n_ids): 2**24 float64 = 128 MiB; with the int32
#: draws and the int64 counts behind it a chunk peaks near 320 MiB.
_CHUNK_ELEMENTS = 2**24
#: Bytes of sufficient statistics (and of resampled means) one block of work holds: models
#: (pairs) are taken a block at a time, groups resampled a block at a time.
_BLOCK_BYTES = 2**27
#: A grid whose cells x clusters (of one model or pair) are at most this many is summed on a
#: dense array; beyond, only the cells that have rows are kept.
_DENSE_CELLS = 2**16
#: In the bucketed regime a group in at most 1/this of the buckets is resampled by gathering
#: its buckets instead of a dense column.
_SPARSE_RATIO = 32
#: Columns of every resampling product (BLAS sums in an order that depends on the shape).
_PRODUCT_COLUMNS = 128
#: Rows of one frame (one Parquet row group) of the tables.
_FRAME_ROWS = 131_072

#: Key columns whose type the scores contract fixes (others keep the type they have).
_KEY_DTYPES: dict[str, pl.DataType] = {
    c: RECORD_SCHEMA[c] for c in ("model", "run", *SLICE_COLUMNS)
}
#: Columns a slice cannot use: the model is a key of every interval and the pair of every
#: comparison, the id is the cluster.
_NOT_SLICES: tuple[str, ...] = ("model", "id")

_INTERVAL_VALUES: dict[str, pl.DataType] = {
    "metric": pl.String(),
    "n": pl.Int64(),
    "mean": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "wilson_low": pl.Float64(),
    "wilson_high": pl.Float64(),
    "resamples": pl.Int64(),
    "seed": pl.Int64(),
    "method": pl.String(),
}
_COMPARISON_VALUES: dict[str, pl.DataType] = {
    "metric": pl.String(),
    "n_pairs": pl.Int64(),
    "mean_a": pl.Float64(),
    "mean_b": pl.Float64(),
    "diff": pl.Float64(),
    "ci_low": pl.Float64(),
    "ci_high": pl.Float64(),
    "test": pl.String(),
    "n_a_only": pl.Int64(),
    "n_b_only": pl.Int64(),
    "p_value": pl.Float64(),
    "p_adjusted": pl.Float64(),
    "correction": pl.String(),
    "significant": pl.Boolean(),
    "resamples": pl.Int64(),
    "seed": pl.Int64(),
    "pairing": pl.String(),
    "baseline": pl.String(),
}


def interval_schema(keys: Mapping[str, pl.DataType]) -> dict[str, pl.DataType]:
    """Columns of ``intervals.parquet`` with the slice columns ``keys`` (name -> dtype)."""
    return {"slice": pl.String(), "model": pl.String(), **keys, **_INTERVAL_VALUES}


def comparison_schema(keys: Mapping[str, pl.DataType]) -> dict[str, pl.DataType]:
    """Columns of ``comparisons.parquet`` with the slice columns ``keys`` (name -> dtype)."""
    return {"model_a": pl.String(), "model_b": pl.String(), "slice": pl.String(), **keys,
            **_COMPARISON_VALUES}


_DEFAULT_KEYS = {c: _KEY_DTYPES[c] for c in SLICE_COLUMNS}
#: The tables' columns with the default slices only.
INTERVAL_SCHEMA: dict[str, pl.DataType] = interval_schema(_DEFAULT_KEYS)
COMPARISON_SCHEMA: dict[str, pl.DataType] = comparison_schema(_DEFAULT_KEYS)


@dataclass(frozen=True)
class StatsSummary:
    """What :func:`write_stats` wrote."""

    intervals_path: Path
    comparisons_path: Path
    intervals: int
    comparisons: int
    significant: int
    resamples: int
    seed: int
    #: Names of the slices of the comparisons (the intervals have the same but ``task``).
    slices: tuple[str, ...] = ()
    #: Which pairs the comparisons hold (:class:`Pairing`): the rule, the baseline, and why.
    pairing: str = PAIRING_ALL
    baseline: str | None = None
    pairing_reason: str = ""


# --------------------------------------------------------------------------- columns


def metric_columns(scores_schema: Mapping[str, pl.DataType]) -> list[str]:
    """Metrics whose mean is a result (kind ``score`` or ``flag``), in registry order, then the
    user-defined ones (:func:`pipeline.metrics.user.scores_catalog`).

    Only those present in ``scores_schema`` with a numeric column. Sufficient statistics (kind
    ``count``, e.g. ``rouge_1_overlap``) are left out: their means are not scores; labels and
    lists have no mean.

    >>> metric_columns({"id": pl.String(), "answer_em": pl.Int8(), "citation_n_pred": pl.Int64()})
    ['answer_em']
    """
    columns = []
    for name, spec in scores_catalog(scores_schema).items():
        dtype = scores_schema[name]
        if not dtype.is_numeric() or spec.kind not in MEAN_KINDS:
            continue
        columns.append(name)
    return columns


def binary_columns(scores_schema: Mapping[str, pl.DataType]) -> list[str]:
    """Metrics of :func:`metric_columns` that are 0/1 flags (kind ``flag``).

    >>> binary_columns({"answer_em": pl.Int8(), "answer_f1": pl.Float64()})
    ['answer_em']
    """
    catalog = scores_catalog(scores_schema)
    return [name for name in metric_columns(scores_schema) if catalog[name].kind == "flag"]


def metric_name(column: str) -> str:
    """The name of a metric column's mean in the tables: the slice views' name for it.

    >>> metric_name("abstained"), metric_name("answer_f1")
    ('abstain_rate', 'answer_f1')
    """
    return METRIC_NAMES.get(column, column)


# --------------------------------------------------------------------------- slices


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


# --------------------------------------------------------------------------- closed forms


def wilson_interval(
    successes: np.ndarray, n: np.ndarray, z: float = Z_95
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for a binomial proportion; NaN where ``n == 0``.

    >>> low, high = wilson_interval(np.array([8]), np.array([10]))
    >>> round(float(low[0]), 4), round(float(high[0]), 4)
    (0.4902, 0.9433)
    """
    k = np.asarray(successes, dtype=np.float64)
    total = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = k / total
        z2 = z * z
        denominator = 1.0 + z2 / total
        center = (p + z2 / (2.0 * total)) / denominator
        half = z / denominator * np.sqrt(p * (1.0 - p) / total + z2 / (4.0 * total * total))
    low = np.where(total > 0, np.clip(center - half, 0.0, 1.0), np.nan)
    high = np.where(total > 0, np.clip(center + half, 0.0, 1.0), np.nan)
    return low, high


#: ln(k!) for small k, exact to double precision; Stirling's series beyond.
_LOG_FACTORIAL_TABLE = np.array([math.lgamma(k + 1.0) for k in range(256)])


def _log_factorial(k: np.ndarray) -> np.ndarray:
    x = np.asarray(k, dtype=np.float64)
    small = x < _LOG_FACTORIAL_TABLE.size
    big = np.where(small, float(_LOG_FACTORIAL_TABLE.size), x)
    inverse = 1.0 / big
    stirling = (
        big * np.log(big) - big + 0.5 * np.log(2.0 * np.pi * big)
        + inverse * (1.0 / 12.0 - inverse**2 * (1.0 / 360.0 - inverse**2 / 1260.0))
    )
    table = _LOG_FACTORIAL_TABLE[np.where(small, x, 0).astype(np.int64)]
    return np.where(small, table, stirling)


def mcnemar_exact_p(b: int | np.ndarray, c: int | np.ndarray) -> Any:
    """Two-sided exact McNemar p-value: ``min(1, 2 P(X <= min(b, c)))``, ``X ~ Bin(b + c, 1/2)``.

    ``b + c == 0`` gives 1. The lower tail is summed in log space downward from ``k = min(b, c)``
    with the ratio ``pmf(j - 1) / pmf(j) = j / (n - j + 1)``; terms more than
    ``sqrt(30 n) + 2`` steps below ``k`` are below ``e**-60`` of ``pmf(k)`` and are skipped, so
    ``n`` in the millions costs a few thousand terms. Scalars in, a float out.

    >>> round(mcnemar_exact_p(1, 6), 12)  # 2 * (1 + 7) / 2**7
    0.125
    """
    b_arr, c_arr = np.broadcast_arrays(np.asarray(b, dtype=np.int64), np.asarray(c, dtype=np.int64))
    if np.any(b_arr < 0) or np.any(c_arr < 0):
        raise ValueError("McNemar counts must not be negative")
    scalar = b_arr.ndim == 0
    n = (b_arr + c_arr).ravel()
    k = np.minimum(b_arr, c_arr).ravel()
    steps = np.minimum(k, np.ceil(np.sqrt(30.0 * n)).astype(np.int64) + 2)
    log_pmf_k = _log_factorial(n) - _log_factorial(k) - _log_factorial(n - k) - n * math.log(2.0)
    log_tail = np.empty(n.size)
    width = int(steps.max(initial=0))
    rows_per_chunk = max(1, _CHUNK_ELEMENTS // 4 // max(width, 1))
    offsets = np.arange(width)
    for start in range(0, n.size, rows_per_chunk):
        part = slice(start, start + rows_per_chunk)
        j = k[part, None] - offsets[None, :]  # pmf(j - 1) / pmf(j) for j = k, k - 1, ...
        inside = offsets[None, :] < steps[part, None]
        above = np.where(inside, n[part, None] - j + 1, 1).astype(np.float64)
        below = np.where(inside, j, 1).astype(np.float64)
        ratios = np.where(inside, np.log(below) - np.log(above), -np.inf)
        with np.errstate(invalid="ignore"):
            cumulative = np.cumsum(ratios, axis=1)
        cumulative = np.where(inside, cumulative, -np.inf)
        terms = np.concatenate([np.zeros((cumulative.shape[0], 1)), cumulative], axis=1)
        log_tail[part] = log_pmf_k[part] + np.logaddexp.reduce(terms, axis=1)
    p = np.where(n == 0, 1.0, np.minimum(1.0, 2.0 * np.exp(log_tail)))
    if scalar:
        return float(p[0])
    return p.reshape(b_arr.shape)


def _ranked(p: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Ascending order of ``p`` (NaN last), the sorted values, and the number of non-NaN values."""
    order = np.argsort(p, kind="stable")
    return order, p[order], int(np.count_nonzero(~np.isnan(p)))


def holm(p: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values; NaN stays NaN and does not count as a test.

    >>> holm(np.array([0.01, 0.04, 0.03, np.nan])).tolist()
    [0.03, 0.06, 0.06, nan]
    """
    values = np.asarray(p, dtype=np.float64)
    order, ranked, m = _ranked(values)
    adjusted_sorted = np.maximum.accumulate(
        np.minimum(1.0, (m - np.arange(ranked.size)) * np.nan_to_num(ranked, nan=0.0))
    )
    adjusted = np.empty_like(values)
    adjusted[order] = adjusted_sorted
    return np.where(np.isnan(values), np.nan, adjusted)


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (q-values); NaN stays NaN and does not count.

    >>> benjamini_hochberg(np.array([0.01, 0.04, 0.03, np.nan])).tolist()
    [0.03, 0.04, 0.04, nan]
    """
    values = np.asarray(p, dtype=np.float64)
    order, ranked, m = _ranked(values)
    rank = np.arange(1, ranked.size + 1)
    scaled = np.where(rank <= m, m / rank * ranked, np.inf)
    adjusted_sorted = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    adjusted = np.empty_like(values)
    adjusted[order] = adjusted_sorted
    return np.where(np.isnan(values), np.nan, adjusted)


# --------------------------------------------------------------------------- resampling


def _check_resamples(resamples: int) -> None:
    if isinstance(resamples, bool) or not isinstance(resamples, int | np.integer):
        raise ValueError(f"resamples must be an integer, got {resamples!r}")
    if resamples < 0:
        raise ValueError(f"resamples must be >= 0, got {resamples}")


def _check_buckets(buckets: int) -> None:
    if not (8 <= buckets <= 2**16 and buckets & (buckets - 1) == 0):
        raise ValueError(f"buckets must be a power of two in [8, 65536], got {buckets!r}")


def _rng(seed: int, *key: Any) -> np.random.Generator:
    """A generator for one group: the seed plus four words of sha256 of the group key as JSON."""
    digest = hashlib.sha256(json.dumps(key, default=str).encode()).digest()
    words = np.frombuffer(digest[:16], dtype="<u4").tolist()
    return np.random.default_rng(np.random.SeedSequence([seed, *words]))


def _chunks(resamples: int, n_ids: int) -> list[int]:
    size = max(1, _CHUNK_ELEMENTS // max(n_ids, 1))
    return [min(size, resamples - start) for start in range(0, resamples, size)]


def _bootstrap_means(
    sums: np.ndarray, counts: np.ndarray, rng: np.random.Generator, resamples: int
) -> np.ndarray:
    """Resampled means (resamples x metrics): ids drawn with replacement, NaN where none counts."""
    n_ids, n_metrics = sums.shape
    means = np.full((resamples, n_metrics), np.nan)
    if n_ids == 0:
        return means
    start = 0
    for size in _chunks(resamples, n_ids):
        draws = rng.integers(0, n_ids, size=(size, n_ids), dtype=np.int32)
        draws += (np.arange(size, dtype=np.int32) * n_ids)[:, None]
        counts_drawn = np.bincount(draws.ravel(), minlength=size * n_ids)
        del draws
        weights_f = counts_drawn.reshape(size, n_ids).astype(np.float64)
        del counts_drawn
        with np.errstate(invalid="ignore", divide="ignore"):
            means[start : start + size] = (weights_f @ sums) / (weights_f @ counts)
        start += size
    return means


def _percentile_interval(means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """2.5th and 97.5th percentiles of each column, ignoring NaN; NaN for an all-NaN column.

    numpy's ``linear`` method (virtual index ``q (m - 1)`` over the ``m`` sorted non-NaN values),
    computed for all columns at once (``np.nanpercentile`` loops over columns in Python).
    """
    return _percentile_rows(np.ascontiguousarray(means.T))


def _percentile_rows(means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_percentile_interval` of each row of ``means`` (columns x resamples)."""
    ordered = np.sort(means, axis=1)  # NaN sorts last
    valid = np.count_nonzero(~np.isnan(ordered), axis=1)
    rows = np.arange(ordered.shape[0])
    tail = (1.0 - CONFIDENCE) / 2.0
    bounds = []
    for q in (tail, 1.0 - tail):
        position = q * np.maximum(valid - 1, 0)
        below = np.floor(position).astype(np.int64)
        above = np.minimum(below + 1, np.maximum(valid - 1, 0))
        fraction = position - below
        if ordered.shape[1] == 0:
            bounds.append(np.full(ordered.shape[0], np.nan))
            continue
        low_value, high_value = ordered[rows, below], ordered[rows, above]
        value = low_value + fraction * (high_value - low_value)
        bounds.append(np.where(valid > 0, value, np.nan))
    return bounds[0], bounds[1]


def _permutation_p(
    summed_diffs: np.ndarray, rng: np.random.Generator, resamples: int
) -> np.ndarray:
    """Two-sided sign-flip p-values of per-question summed differences (ids x metrics)."""
    n_ids, n_metrics = summed_diffs.shape
    observed = np.abs(summed_diffs.sum(axis=0))
    # Flipped sums equal to the observed one up to rounding count as at least as extreme.
    tolerance = 1e-9 * np.maximum(1.0, np.abs(summed_diffs).sum(axis=0))
    extreme = np.zeros(n_metrics, dtype=np.int64)
    if n_ids == 0:
        return np.ones(n_metrics)
    for size in _chunks(resamples, n_ids):
        signs = rng.integers(0, 2, size=(size, n_ids), dtype=np.int8).astype(np.float64)
        signs = 2.0 * signs - 1.0
        flipped = np.abs(signs @ summed_diffs)
        extreme += np.count_nonzero(flipped >= observed - tolerance, axis=0)
    return (1.0 + extreme) / (resamples + 1.0)


def _bucket_weights(rng: np.random.Generator, resamples: int, buckets: int) -> np.ndarray:
    """Multinomial bootstrap weights (resamples x buckets, int32): ``buckets`` draws per row.

    A draw is the top ``log2(buckets)`` bits of a little-endian uint32 of ``rng.bytes``, so it is
    uniform over the buckets without rejection.
    """
    shift = np.uint32(32 - (buckets.bit_length() - 1))
    weights = np.empty((resamples, buckets), dtype=np.int32)
    start = 0
    for size in _chunks(resamples, buckets):
        raw = np.frombuffer(rng.bytes(4 * size * buckets), dtype="<u4")
        draws = (raw >> shift).astype(np.int64).reshape(size, buckets)
        draws += (np.arange(size, dtype=np.int64) * buckets)[:, None]
        counts = np.bincount(draws.ravel(), minlength=size * buckets)
        weights[start : start + size] = counts.reshape(size, buckets)
        start += size
    return weights


def _bucket_signs(rng: np.random.Generator, resamples: int, buckets: int) -> np.ndarray:
    """Sign-flip patterns as packed bits (resamples x buckets / 8, uint8): bit 1 keeps a sign."""
    raw = np.frombuffer(rng.bytes(resamples * buckets // 8), dtype=np.uint8)
    return raw.reshape(resamples, buckets // 8)


def _distinct_columns(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct columns of ``matrix`` and, per column, the index of its distinct column."""
    fingerprint = np.sin(np.arange(1, matrix.shape[0] + 1)) @ matrix
    _, first, inverse = np.unique(fingerprint, return_index=True, return_inverse=True)
    distinct = matrix[:, first]
    if not np.array_equal(distinct[:, inverse], matrix):  # a fingerprint collision
        return matrix, np.arange(matrix.shape[1])
    return distinct, inverse


def _fixed_products(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """``left @ right`` (float64) in blocks of :data:`_PRODUCT_COLUMNS` columns of ``right``,
    the last block padded with zero columns.

    BLAS adds in an order that depends on the shape of a product; with every product of one
    shape, a column's result depends on that column alone, not on how many other columns
    (groups, slices, blocks) are computed beside it.
    """
    out = np.empty((left.shape[0], right.shape[1]))
    block = np.zeros((right.shape[0], _PRODUCT_COLUMNS))
    for start in range(0, right.shape[1], _PRODUCT_COLUMNS):
        width = min(_PRODUCT_COLUMNS, right.shape[1] - start)
        block[:, :width] = right[:, start : start + width]
        block[:, width:] = 0.0
        out[:, start : start + width] = (left @ block)[:, :width]
    return out


def _bucket_bootstrap(
    sums: np.ndarray, counts: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval of ``(w @ sums) / (w @ counts)`` per column (buckets x columns).

    Columns without counts are skipped (NaN); equal count columns (the metrics of a group
    without missing values) share one product. The caller bounds the columns of one call.
    """
    resamples, buckets = weights.shape
    low, high = np.full(sums.shape[1], np.nan), np.full(sums.shape[1], np.nan)
    active = np.flatnonzero(counts.any(axis=0))
    if active.size == 0 or resamples == 0:
        return low, high
    distinct, inverse = _distinct_columns(counts[:, active])
    means = np.empty((resamples, active.size))
    start = 0
    for size in _chunks(resamples, buckets):
        w = weights[start : start + size].astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            means[start : start + size] = (
                _fixed_products(w, sums[:, active]) / _fixed_products(w, distinct)[:, inverse]
            )
        start += size
    low[active], high[active] = _percentile_interval(means)
    return low, high


def _bucket_permutation_p(
    summed_diffs: np.ndarray, packed_signs: np.ndarray, observed: np.ndarray,
    tolerance: np.ndarray,
) -> np.ndarray:
    """:func:`_permutation_p` with the signs of :func:`_bucket_signs` (buckets x columns);
    ``observed`` is ``|sum|`` of each column, ``tolerance`` as in :func:`_permutation_p`."""
    resamples = packed_signs.shape[0]
    buckets = packed_signs.shape[1] * 8
    extreme = np.zeros(summed_diffs.shape[1], dtype=np.int64)
    start = 0
    for size in _chunks(resamples, buckets):
        bits = np.unpackbits(packed_signs[start : start + size], axis=1)
        signs = 2.0 * bits.astype(np.float64) - 1.0
        flipped = np.abs(_fixed_products(signs, summed_diffs))
        extreme += np.count_nonzero(flipped >= observed - tolerance, axis=0)
        start += size
    return (1.0 + extreme) / (resamples + 1.0)


def _gathered_bootstrap(
    s: _Sums, groups: np.ndarray, first: np.ndarray, nnz: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile interval (groups x metrics) of the resampled means of ``groups`` of ``s``
    (``first`` entry and ``nnz`` entries of each group), each from the weights of its own
    buckets only.

    Groups with as many buckets are stacked into one product, whose every slice is computed
    as the group's product alone: a group's means depend on its entries only.
    """
    resamples, metrics = weights.shape[0], s.sums.shape[0]
    by_bucket = weights.T  # buckets x resamples
    low, high = np.empty((groups.size, metrics)), np.empty((groups.size, metrics))
    for size in np.unique(nnz[groups]).tolist():
        where = np.flatnonzero(nnz[groups] == size)
        step = max(1, _BLOCK_BYTES // (8 * max(resamples, 1) * (size + 3 * metrics)))
        for start in range(0, where.size, step):
            chosen = where[start : start + step]
            entry = first[groups[chosen]][:, None] + np.arange(size)  # groups x size
            w = by_bucket[s.cluster[entry]].astype(np.float64)  # groups x size x resamples
            means = s.sums.T[entry].transpose(0, 2, 1) @ w  # groups x metrics x resamples
            counts = s.counts.T[entry].transpose(0, 2, 1)
            same = (counts == counts[:, :1]).all(axis=(1, 2))  # one product for all metrics
            with np.errstate(invalid="ignore", divide="ignore"):
                for pick, rows in ((same, slice(0, 1)), (~same, slice(None))):
                    if pick.any():
                        means[pick] /= counts[pick][:, rows] @ w[pick]
            del w
            bounds = _percentile_rows(means.reshape(chosen.size * metrics, resamples))
            low[chosen], high[chosen] = (bound.reshape(-1, metrics) for bound in bounds)
    return low, high


def _gathered_permutation_p(
    s: _Sums, groups: np.ndarray, first: np.ndarray, nnz: np.ndarray,
    packed_signs: np.ndarray, observed: np.ndarray, tolerance: np.ndarray,
) -> np.ndarray:
    """:func:`_bucket_permutation_p` for ``groups`` of ``s`` from the signs of their own
    buckets (as :func:`_gathered_bootstrap`): groups x metrics."""
    resamples, metrics = packed_signs.shape[0], s.sums.shape[0]
    by_byte = np.ascontiguousarray(packed_signs.T)  # bucket bytes x resamples
    extreme = np.zeros((groups.size, metrics), dtype=np.int64)
    for size in np.unique(nnz[groups]).tolist():
        where = np.flatnonzero(nnz[groups] == size)
        step = max(1, _BLOCK_BYTES // (8 * resamples * (size + 2 * metrics)))
        for start in range(0, where.size, step):
            chosen = where[start : start + step]
            entry = first[groups[chosen]][:, None] + np.arange(size)
            bucket = s.cluster[entry]  # bit 7 - bucket % 8 of byte bucket // 8 keeps a sign
            bits = (by_byte[bucket >> 3] >> (7 - (bucket & 7)).astype(np.uint8)[..., None]) & 1
            signs = 2.0 * bits.astype(np.float64) - 1.0  # groups x size x resamples
            flipped = np.abs(s.sums.T[entry].transpose(0, 2, 1) @ signs)
            bound = observed[groups[chosen]] - tolerance[groups[chosen]]
            extreme[chosen] = np.count_nonzero(flipped >= bound[:, :, None], axis=2)
    return (1.0 + extreme) / (resamples + 1.0)


def _nullable(values: np.ndarray) -> pl.Series:
    return pl.Series(values, dtype=pl.Float64, nan_to_null=True)


# --------------------------------------------------------------------------- sufficient statistics


def bucket_of(ids: pl.Series, buckets: int = BUCKETS) -> pl.Series:
    """The bucket of each id: the top ``log2(buckets)`` bits of the first 4 bytes of md5 (UTF-8).

    Computed by DuckDB's ``md5``; equal to
    ``int(hashlib.md5(id.encode()).hexdigest()[:8], 16) >> (32 - log2(buckets))``, so stable
    across versions of polars, DuckDB and Python. A null id goes to bucket 0.

    >>> bucket_of(pl.Series(["q1", None]), 4096).to_list()
    [4083, 0]
    """
    _check_buckets(buckets)
    frame = pl.DataFrame({"id": ids.cast(pl.String)})
    connection = duckdb.connect()
    try:
        connection.register("ids", frame.to_arrow())
        hexes = connection.sql("select left(md5(id), 8) as h from ids").pl()["h"]
    finally:
        connection.close()
    shift = 32 - (buckets.bit_length() - 1)
    codes = hexes.str.to_integer(base=16).cast(pl.UInt64) // (1 << shift)
    return codes.fill_null(0).cast(pl.UInt32).rename("cluster")


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


def _layout(
    lf: pl.LazyFrame, exact_max_ids: int, buckets: int, by: Iterable[str | Sequence[str]] = ()
) -> _Layout:
    _check_buckets(buckets)
    schema = lf.collect_schema()
    requested = check_slices(schema, by)
    interval_grids = _grids(INTERVAL_SLICES, requested)
    comparison_grids = _grids(COMPARISON_SLICES, requested)
    used = [c for grid in (*interval_grids, *comparison_grids) for c in grid.columns]
    coded = tuple(dict.fromkeys(("model", "run", "noise_level", "task", *used)))
    key_columns = tuple(dict.fromkeys((*SLICE_COLUMNS, *used)))
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


#: The coded rows of one pass: integer codes of the key columns, ``idx`` and ``cluster``; and
#: one float array per metric (NaN for null or NaN).
_Batch = tuple[dict[str, np.ndarray], list[np.ndarray]]


def _passes(
    lf: pl.LazyFrame, layout: _Layout, models: np.ndarray | None = None, passes: int = 1
) -> Iterator[_Batch]:
    """The rows of ``models`` (codes; None: all) in ``passes`` passes over disjoint sets of
    clusters (``cluster % passes``). Only the key and metric columns are read; rows keep their
    order."""
    codes = []
    for column, values in layout.values.items():
        if not values:
            continue
        codes.append(
            pl.col(column).cast(layout.dtypes[column])
            .replace_strict(values, list(range(len(values))), default=len(values),
                            return_dtype=pl.Int64)
            .fill_null(len(values)).alias(column)
        )
    columns: list[pl.Expr] = [
        pl.col("id"), *codes,
        *(pl.col(m).cast(pl.Float64).fill_null(float("nan")).alias(f"_m{j}")
          for j, m in enumerate(layout.metrics)),
    ]
    names = [f"_m{j}" for j in range(len(layout.metrics))]
    source = lf
    if models is not None and models.size < layout.size("model"):
        known = layout.values["model"]
        named = [known[i] for i in models.tolist() if i < len(known)]
        wanted = pl.col("model").cast(layout.dtypes["model"]).is_in(
            pl.Series(named, dtype=pl.String()).implode()
        )
        if len(named) < models.size:  # the null model
            wanted = wanted | pl.col("model").is_null()
        source = lf.filter(wanted)
    for part in range(passes):
        mapping, rows = layout.mapping, source
        if passes > 1:
            mapping = mapping.filter(pl.col("cluster") % passes == part)
            rows = rows.filter(pl.col("id").is_in(mapping["id"].implode(), nulls_equal=True))
        batch = rows.select(*columns).collect(engine="streaming").join(
            mapping, on="id", how="left", nulls_equal=True, maintain_order="left"
        )
        arrays = {
            c: batch[c].to_numpy() if c in batch.columns else np.full(batch.height, 0, np.int64)
            for c in layout.values
        }
        arrays["idx"] = batch["idx"].to_numpy().astype(np.int64)
        arrays["cluster"] = batch["cluster"].to_numpy().astype(np.int64)
        columns_of_metrics = [batch[c].to_numpy() for c in names]  # no copies
        del batch
        yield arrays, columns_of_metrics
        del arrays, columns_of_metrics  # before the next pass is read


class _Rows:
    """The coded rows of the scores, the rows of a few models at a time.

    Up to :data:`PASS_ROWS` rows in all, they are read once and kept (a block's rows are taken
    from them in row order); beyond, each block reads the rows of its models in passes of
    about :data:`PASS_ROWS` rows over disjoint sets of clusters (:func:`_passes`).
    """

    def __init__(self, lf: pl.LazyFrame, layout: _Layout) -> None:
        self.lf, self.layout = lf, layout
        self._rows: _Batch | None = None
        self._order = np.empty(0, dtype=np.int64)
        self._starts = np.empty(0, dtype=np.int64)

    def batches(self, models: np.ndarray) -> Iterator[_Batch]:
        layout = self.layout
        if layout.rows > PASS_ROWS:
            rows = int(layout.model_rows[models].sum())
            yield from _passes(self.lf, layout, models, max(1, math.ceil(rows / PASS_ROWS)))
            return
        if self._rows is None:
            self._rows = next(_passes(self.lf, layout))
            model = self._rows[0]["model"]
            self._order = np.argsort(model, kind="stable")
            self._starts = np.searchsorted(model[self._order], np.arange(layout.size("model") + 1))
        if models.size == layout.size("model"):
            yield self._rows
            return
        chosen = np.sort(np.concatenate(
            [self._order[self._starts[i] : self._starts[i + 1]] for i in models.tolist()]
        ))
        codes, values = self._rows
        yield {c: a[chosen] for c, a in codes.items()}, [v[chosen] for v in values]


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
    ascending order. A grid of at most :data:`_DENSE_CELLS` cells x clusters is summed on a
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
    if n_fine * k <= _DENSE_CELLS:
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
    :data:`_DENSE_CELLS` fine cells; else in ascending order)."""
    m = len(weights)
    sizes = [layout.size(c) for c in grid.columns]
    n_fine = math.prod(sizes)
    fine = _fine_codes(codes, grid, layout, codes["cluster"].size)
    if n_fine <= _DENSE_CELLS:
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
    step = max(1, _BLOCK_BYTES // (8 * max(m * clusters, 1)))
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


def _exact_resampled(
    s: _Sums, groups: int, n: np.ndarray, resamples: int,
    generators: Callable[[int], tuple[np.random.Generator, np.random.Generator | None]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The exact regime, group by group: percentile interval of the cluster bootstrap and, where
    ``generators(group)`` gives a second generator, the sign-flip p-value (groups x metrics)."""
    m = s.sums.shape[0]
    low, high, p = (np.full((groups, m), np.nan) for _ in range(3))
    first, nnz = s.starts(groups)
    for g in np.flatnonzero(nnz).tolist():
        if not (n[g] > 0).any():
            continue
        entries = slice(int(first[g]), int(first[g] + nnz[g]))
        sums = np.ascontiguousarray(s.sums[:, entries]).T  # clusters x metrics
        counts = np.ascontiguousarray(s.counts[:, entries]).T
        bootstrap, permutation = generators(g)
        means = _bootstrap_means(sums, counts, bootstrap, resamples)
        low[g], high[g] = _percentile_interval(means)
        if permutation is not None and resamples > 0:
            p[g] = _permutation_p(sums, permutation, resamples)
    return low, high, p


def _bucket_resampled(
    jobs: Sequence[tuple[_Sums, int]], clusters: int, weights: np.ndarray,
    signs: np.ndarray | None,
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The bucketed regime for several (statistics, groups) at once: per job the percentile
    interval of the shared weight matrix's means and, with ``signs``, the sign-flip p-value
    (groups x metrics each).

    A group spread over more than 1/:data:`_SPARSE_RATIO` of the buckets is resampled on a
    dense column per metric (:func:`_bucket_bootstrap`; the jobs' columns share products), a
    group in fewer buckets from its own buckets (:func:`_gathered_bootstrap`); either way in blocks
    of :data:`_BLOCK_BYTES`. A group's numbers depend on its own sums only.
    """
    offsets = np.cumsum([0, *(groups for _, groups in jobs)])
    groups = int(offsets[-1])
    s = _Sums.merged([_Sums(part.group + offset, part.cluster, part.sums, part.counts,
                            part.rows) for (part, _), offset in zip(jobs, offsets, strict=False)],
                     jobs[0][0].sums.shape[0] if jobs else 0, ordered=True)
    m, resamples = s.sums.shape[0], weights.shape[0]
    low, high, p = (np.full((groups, m), np.nan) for _ in range(3))
    first, nnz = s.starts(groups)
    observed = tolerance = np.empty((groups, m))
    if signs is not None:  # added in bucket order, as numpy sums the rows of a dense matrix
        observed = np.abs(np.stack([np.bincount(s.group, weights=s.sums[j], minlength=groups)
                                    for j in range(m)], axis=1))
        spread = np.stack([np.bincount(s.group, weights=np.abs(s.sums[j]), minlength=groups)
                           for j in range(m)], axis=1)
        tolerance = 1e-9 * np.maximum(1.0, spread)
    dense = np.flatnonzero(nnz * _SPARSE_RATIO > clusters)
    step = max(1, _BLOCK_BYTES // (8 * max(m, 1) * (2 * clusters + 4 * resamples)))
    for start in range(0, dense.size, step):
        chosen = dense[start : start + step]
        entry = np.repeat(first[chosen], nnz[chosen]) + _ranks(nnz[chosen])
        column = (np.repeat(np.arange(chosen.size), nnz[chosen]) * m)[:, None] + np.arange(m)
        sums, counts = np.zeros((clusters, chosen.size * m)), np.zeros((clusters, chosen.size * m))
        sums[s.cluster[entry][:, None], column] = s.sums[:, entry].T
        counts[s.cluster[entry][:, None], column] = s.counts[:, entry].T
        bounds = _bucket_bootstrap(sums, counts, weights)
        low[chosen], high[chosen] = (bound.reshape(-1, m) for bound in bounds)
        if signs is not None:
            p[chosen] = _bucket_permutation_p(
                sums, signs, observed[chosen].ravel(), tolerance[chosen].ravel()
            ).reshape(-1, m)
    sparse = np.flatnonzero((nnz > 0) & (nnz * _SPARSE_RATIO <= clusters))
    step = max(1, _BLOCK_BYTES // (32 * max(m, 1) * max(resamples, 1)))
    for start in range(0, sparse.size, step):
        chosen = sparse[start : start + step]
        low[chosen], high[chosen] = _gathered_bootstrap(s, chosen, first, nnz, weights)
        if signs is not None:
            p[chosen] = _gathered_permutation_p(s, chosen, first, nnz, signs, observed,
                                                tolerance)
    return [(low[a:b], high[a:b], p[a:b])
            for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True)]


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
    ``present[group, metric]``; in chunks of about :data:`_FRAME_ROWS` rows."""
    step = max(1, _FRAME_ROWS // max(m, 1))
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


# --------------------------------------------------------------------------- intervals


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


def _has_stats_columns(lf: pl.LazyFrame) -> bool:
    schema = lf.collect_schema()
    return "model" in schema and "id" in schema and bool(metric_columns(schema))


def _empty_keys(lf: pl.LazyFrame, by: Iterable[str | Sequence[str]]) -> dict[str, pl.DataType]:
    """The slice columns of the empty tables of scores without metrics (``by`` checked)."""
    schema = lf.collect_schema()
    columns = dict.fromkeys((*SLICE_COLUMNS, *(c for s in check_slices(schema, by) for c in s)))
    return {c: _key_dtype(c, schema.get(c)) for c in columns}


def _interval_schema_of(layout: _Layout) -> dict[str, pl.DataType]:
    return interval_schema({c: layout.dtypes[c] for c in layout.key_columns})


def _comparison_schema_of(layout: _Layout) -> dict[str, pl.DataType]:
    return comparison_schema({c: layout.dtypes[c] for c in layout.key_columns})


def _interval_blocks(layout: _Layout) -> list[np.ndarray]:
    """Consecutive models (codes, null last) whose statistics of every interval grid fit
    :data:`_BLOCK_BYTES` together (estimated from their rows; the rows themselves are read
    :data:`PASS_ROWS` at a time)."""
    m, k = len(layout.metrics), layout.clusters
    costs = [0] * layout.size("model")
    for grid in layout.interval_grids:
        n_fine = math.prod(layout.size(c) for c in grid.columns)
        cells = [layout.n_cells(columns) for columns in grid.slices]
        for i, rows in enumerate(layout.model_rows.tolist()):
            entries = min(rows, n_fine * k) + sum(min(rows, c * k) for c in cells)
            costs[i] += entries * (2 * m + 4) * 16 + sum(cells) * m * 10 * 8
            if n_fine * k <= _DENSE_CELLS:
                costs[i] += 3 * (m + 1) * n_fine * k * 8
    return _split(costs, _BLOCK_BYTES)


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


# --------------------------------------------------------------------------- comparisons


@dataclass(frozen=True)
class Pairing:
    """Which pairs of models the comparisons hold (``pairing`` and ``baseline`` columns)."""

    #: :data:`PAIRING_ALL` or :data:`PAIRING_BASELINE`.
    rule: str
    #: The model every other one is compared with (None: all pairs).
    baseline: str | None
    #: The pairs as model codes ``(a, b)``, ``a < b``, in table order.
    pairs: tuple[tuple[int, int], ...]
    #: Why: the number of models and the limit, and how the baseline was chosen.
    reason: str


def _check_max_all_pairs(max_all_pairs: int) -> None:
    if isinstance(max_all_pairs, bool) or not isinstance(max_all_pairs, int | np.integer) or \
            max_all_pairs < 0:
        raise ValueError(f"max_all_pairs must be an integer >= 0, got {max_all_pairs!r}")


def _primary_metric(layout: _Layout) -> int:
    """The metric (index) whose mean picks the baseline: :data:`PRIMARY_METRIC` if scored,
    else the first with a better direction, else the first."""
    if PRIMARY_METRIC in layout.metrics:
        return layout.metrics.index(PRIMARY_METRIC)
    for j, name in enumerate(layout.metrics):
        if _higher_is_better(name) is not None:
            return j
    return 0


def _higher_is_better(metric: str) -> bool | None:
    """The better direction of a registered metric (None: none, or not registered)."""
    spec = REGISTRY.get(metric)
    return None if spec is None else spec.higher_is_better


def _pairing(source: _Rows, max_all_pairs: int, baseline: str | None) -> Pairing:
    """All pairs of the (non-null) models up to ``max_all_pairs`` models; beyond, each model
    with ``baseline`` (a model name) or with the model of the best mean of the primary metric
    over all its rows (ties: the first by name)."""
    _check_max_all_pairs(max_all_pairs)
    layout = source.layout
    models = layout.values["model"]
    if baseline is not None and baseline not in models:
        shown = ", ".join(repr(m) for m in models[:10]) + (", ..." if len(models) > 10 else "")
        raise InputError(f"baseline model {baseline!r} is not a model of the scores ({shown})")
    if len(models) <= max_all_pairs:
        return Pairing(PAIRING_ALL, None, tuple(itertools.combinations(range(len(models)), 2)),
                       f"{len(models)} models, at most {max_all_pairs}: every two models")
    if baseline is not None:
        best, how = models.index(baseline), "named"
    else:
        j = _primary_metric(layout)
        sums, counts = np.zeros(len(models) + 1), np.zeros(len(models) + 1)
        for codes, values in source.batches(np.arange(layout.size("model"))):
            known = ~np.isnan(values[j])
            sums += np.bincount(codes["model"], weights=np.where(known, values[j], 0.0),
                                minlength=sums.size)
            counts += np.bincount(codes["model"], weights=known.astype(np.float64),
                                  minlength=sums.size)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = sums[:-1] / counts[:-1]
        sign = -1.0 if _higher_is_better(layout.metrics[j]) is False else 1.0
        best = int(np.argmax(np.nan_to_num(sign * means, nan=-np.inf)))
        how = (f"best mean {metric_name(layout.metrics[j])} "
               f"{'(lowest) ' if sign < 0 else ''}{means[best]:.6g}")
    pairs = tuple(sorted((min(best, i), max(best, i)) for i in range(len(models)) if i != best))
    return Pairing(PAIRING_BASELINE, models[best], pairs,
                   f"{len(models)} models, more than {max_all_pairs}: each model against the "
                   f"baseline {models[best]!r} ({how})")


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


def _pair_blocks(layout: _Layout, pairs: Sequence[tuple[int, int]]) -> list[np.ndarray]:
    """Consecutive pairs (indices into ``pairs``) whose statistics fit :data:`_BLOCK_BYTES`
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
            cost += 4 * m * (n_fine if n_fine <= _DENSE_CELLS else sum(cells)) * 8
        costs.append(cost)
    return _split(costs, _BLOCK_BYTES)


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
    order = np.argsort(codes["model"], kind="stable")
    starts = np.searchsorted(codes["model"][order], np.arange(layout.size("model") + 1))
    keyed: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    duplicates = np.zeros(layout.size("model"), dtype=np.int64)
    for i in models.tolist():
        rows = order[starts[i] : starts[i + 1]]
        by_key = np.argsort(key[rows], kind="stable")
        unique, first, count = np.unique(key[rows][by_key], return_index=True,
                                         return_counts=True)
        duplicates[i] = int(count[count > 1].sum())
        keyed[i] = (unique[count == 1], rows[by_key][first[count == 1]])
    return keyed, duplicates


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
            _, in_a, in_b = np.intersect1d(keyed[a][0], keyed[b][0], assume_unique=True,
                                           return_indices=True)
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


# --------------------------------------------------------------------------- writing


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


class _ParquetFrames:
    """Frames streamed into one Parquet file (zstd) in the staging directory of
    :class:`_Staging`.

    Each section's frames go to a temporary file of its own in ``stage`` (row groups of about
    :data:`_FRAME_ROWS` rows); :meth:`write` joins them in order of the section names, so
    memory holds one row group, not the table.
    """

    def __init__(self, stage: Path, name: str, schema: Mapping[str, pl.DataType]) -> None:
        self.stage = Path(stage)
        self.name = name
        self.arrow = pl.DataFrame(schema=dict(schema)).to_arrow().schema
        self.parts: dict[str, tuple[Path, pq.ParquetWriter]] = {}
        self.pending: dict[str, list[pl.DataFrame]] = {}
        self.rows = 0
        self.significant = 0

    def add(self, section: str, frame: pl.DataFrame) -> None:
        self.rows += frame.height
        if "significant" in frame.columns:
            self.significant += int(frame["significant"].sum())
        pending = self.pending.setdefault(section, [])
        pending.append(frame)
        if sum(f.height for f in pending) >= _FRAME_ROWS:
            self._flush(section)

    def _flush(self, section: str) -> None:
        frames = self.pending.pop(section, [])
        if not frames:
            return
        if section not in self.parts:
            path = self.stage / f"{self.name}.part{len(self.parts)}"
            self.parts[section] = (path, pq.ParquetWriter(path, self.arrow, compression="zstd"))
        table = pl.concat(frames, how="vertical").to_arrow().cast(self.arrow)
        self.parts[section][1].write_table(table, row_group_size=_FRAME_ROWS)

    def close_parts(self) -> None:
        """Write what is pending and close the section files."""
        for section in list(self.pending):
            self._flush(section)
        for _, writer in self.parts.values():
            writer.close()

    def digest(self, into: Any) -> None:
        """Feed the bytes of the section files, in order, to the hash ``into``
        (after :meth:`close_parts`): the same input gives the same bytes."""
        into.update(f"{self.name}:{self.rows}".encode())
        for section in sorted(self.parts):
            with open(self.parts[section][0], "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    into.update(block)

    def write(self, stats_id: str) -> Path:
        """Join the section files into ``stage/name`` with ``stats_id`` in its key-value
        metadata (:data:`STATS_ID_KEY`); remove them; return the path."""
        target = self.stage / self.name
        schema = self.arrow.with_metadata({STATS_ID_KEY: stats_id})
        try:
            with pq.ParquetWriter(target, schema, compression="zstd") as writer:
                for section in sorted(self.parts):
                    part = pq.ParquetFile(self.parts[section][0])
                    for group in range(part.num_row_groups):
                        writer.write_table(part.read_row_group(group))
        finally:
            self.close()
        return target

    def close(self) -> None:
        """Remove the section files (after :meth:`write`, or when the writing failed)."""
        for path, writer in self.parts.values():
            with contextlib.suppress(Exception):
                writer.close()
            path.unlink(missing_ok=True)
        self.parts.clear()


def _fsync(path: Path) -> None:
    """Flush ``path`` (a file, or a directory's entries) to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Staging:
    """Both tables written in a sibling temporary directory, then put in place together.

    The directory is ``out_dir/.tmp-stats.<pid>@<host>.<8 hex>``
    (:func:`pipeline.io.atomic.owned_name`): one a killed process left behind is removed by the
    next command that writes into ``out_dir`` (:func:`pipeline.io.atomic.remove_stale`, which
    :func:`write_stats` runs first too). Nothing in ``out_dir`` changes until :meth:`commit`.
    """

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = output_dir(Path(out_dir))
        for name in STATS_FILES:
            check_output_file(self.out_dir / name)
        remove_stale(self.out_dir)
        self.dir = self.out_dir / owned_name(TMP_PREFIX, "stats")
        self.dir.mkdir()

    def __enter__(self) -> _Staging:
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def finish(self, tables: Sequence[_ParquetFrames], *, seed: int, resamples: int) -> str:
        """Write ``tables`` (one per name of :data:`STATS_FILES`, in that order) with one
        :func:`stats_id` and :meth:`commit` them; return the id."""
        digest = hashlib.sha256()
        for table in tables:
            table.close_parts()
            table.digest(digest)
        pair = stats_id(seed=seed, resamples=resamples, digest=digest.hexdigest()[:32])
        for table in tables:
            table.write(pair)
        self.commit()
        return pair

    def commit(self) -> None:
        """Put the staged files in place: each is flushed to the disk, the file it replaces is
        kept as a hard link in the staging directory (moved there where the file system has
        no hard links), and then it is renamed onto its target. If a rename fails, or the
        process is interrupted, the targets renamed so far get their old file back (or are
        removed where there was none), so ``out_dir`` shows the old pair or the new one.

        Between the two renames (no system call renames two files at once) a reader sees the
        new intervals beside the old comparisons: their ids differ and
        :func:`check_stats_pair` says so; a process killed there leaves that state, which
        readers refuse until the statistics are written again.
        """
        for name in STATS_FILES:
            _fsync(self.dir / name)
        placed: list[tuple[Path, Path | None]] = []
        try:
            for name in STATS_FILES:
                target, backup = self.out_dir / name, self.dir / f"previous.{name}"
                previous: Path | None = backup
                try:
                    os.link(target, backup)
                except FileNotFoundError:
                    previous = None
                except OSError:  # no hard links on this file system: move it aside
                    os.replace(target, backup)
                placed.append((target, previous))
                os.replace(self.dir / name, target)
        except BaseException:
            for target, previous in reversed(placed):
                try:
                    if previous is not None:
                        os.replace(previous, target)
                    else:
                        target.unlink(missing_ok=True)
                except OSError as exc:  # pragma: no cover - a rename back that fails
                    log.error("could not restore %s after a failed write: %s", target, exc)
            raise
        with contextlib.suppress(OSError):  # some file systems cannot flush a directory
            _fsync(self.out_dir)


def stats_id(*, seed: int, resamples: int, digest: str) -> str:
    """The value of :data:`STATS_ID_KEY` that ties the two tables of one :func:`write_stats`:
    its seed, its resamples and ``digest`` (of both tables' rows: the same input gives the
    same id, and the same files byte for byte).

    >>> stats_id(seed=5, resamples=200, digest="ab12")
    '{"seed": 5, "resamples": 200, "digest": "ab12"}'
    """
    return json.dumps({"seed": seed, "resamples": resamples, "digest": digest})


def read_stats_id(path: Path) -> str | None:
    """The :data:`STATS_ID_KEY` of the Parquet file ``path``; None when it has none (written
    by an older version or by another tool). Raises ``OSError`` (or an Arrow error) when
    the file cannot be read."""
    metadata = pq.read_metadata(path).metadata or {}
    value = metadata.get(STATS_ID_KEY.encode())
    return value.decode("utf-8", "replace") if value is not None else None


def _settings(value: str | None) -> str:
    """``seed 5, 200 resamples`` of a :func:`stats_id` (``no stats id`` without one)."""
    if value is None:
        return "no stats id: an older version"
    try:
        fields = json.loads(value)
        return f"seed {fields['seed']}, {fields['resamples']} resamples"
    except (ValueError, TypeError, KeyError):
        return "an unknown stats id"


def check_stats_pair(directory: Path) -> str | None:
    """Why the statistics files of ``directory`` must not be read (one line), or None when
    they may: neither is there, or both carry the same :data:`STATS_ID_KEY`, or neither
    carries one (files of an older version, or written by hand).

    A file with an id whose partner is missing or has another id is half of an interrupted
    :func:`write_stats` (:meth:`_Staging.commit`); a file that cannot be read is damaged.
    Readers (the report) warn with this line and show neither file.
    """
    directory = Path(directory)
    ids: dict[str, str | None] = {}
    for name in STATS_FILES:
        path = directory / name
        if not path.is_file():
            continue
        try:
            ids[name] = read_stats_id(path)
        except Exception as exc:  # a truncated or foreign file: Arrow raises its own errors
            return (f"{path} cannot be read ({type(exc).__name__}: {exc}); statistics are "
                    f"ignored: run `rag-eval stats {directory}` again")
    if not ids or (len(ids) == 2 and len(set(ids.values())) == 1):
        return None
    if len(ids) == 1:
        (present, value), = ids.items()
        if value is None:
            return None
        missing = next(name for name in STATS_FILES if name not in ids)
        return (f"{directory / present} ({_settings(value)}) has no {missing} beside it: a "
                f"`rag-eval stats` was interrupted; statistics are ignored: run "
                f"`rag-eval stats {directory}` again")
    first, second = STATS_FILES
    return (f"{directory / first} ({_settings(ids[first])}) and {second} "
            f"({_settings(ids[second])}) were not written together (a `rag-eval stats` was "
            f"interrupted between them); statistics are ignored: run "
            f"`rag-eval stats {directory}` again")


# --------------------------------------------------------------------------- driver


def write_stats(
    out_dir: Path, *, resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
    scores: pl.DataFrame | pl.LazyFrame | None = None,
    exact_max_ids: int = EXACT_MAX_IDS, buckets: int = BUCKETS,
    by: Iterable[str | Sequence[str]] = (), max_all_pairs: int = MAX_ALL_PAIRS,
    baseline: str | None = None,
) -> StatsSummary:
    """Read ``out_dir/scores.parquet`` lazily (or take ``scores``); write ``intervals.parquet``
    and ``comparisons.parquet`` into ``out_dir``, with the default slices and those of ``by``
    (each a tuple of columns of the scores or ``"COLUMN,COLUMN"``, :func:`check_slices`).

    Comparisons pair every two models up to ``max_all_pairs`` models; beyond, each model is
    compared with ``baseline`` (a model name) or, by default, the model with the best mean of
    the primary metric (:class:`Pairing`; the rule is logged and in the ``pairing`` column).

    The scores are reduced to per-(group, cluster) sums a block of models (or pairs) at a time,
    and the tables are streamed to their files, so memory is bounded by the rows of one pass
    and :data:`_BLOCK_BYTES` per block, not by the number of models, cells or slices.
    """
    _check_resamples(resamples)
    _check_max_all_pairs(max_all_pairs)
    out_dir = Path(out_dir)
    by = tuple(by)
    if scores is None:
        scores_path = out_dir / SCORES_FILE
        if not scores_path.is_file():
            raise InputError(
                f"{scores_path} is missing; run `rag-eval evaluate --out {out_dir}` first"
            )
        scores = pl.scan_parquet(scores_path)
    lf = scores.lazy()
    requested = check_slices(lf.collect_schema(), by)
    slices = tuple(slice_name(s) for grid in _grids(COMPARISON_SLICES, requested)
                   for s in grid.slices)
    with _Staging(out_dir) as stage:
        if not _has_stats_columns(lf):
            keys = _empty_keys(lf, requested)
            empty = (_ParquetFrames(stage.dir, INTERVALS_FILE, interval_schema(keys)),
                     _ParquetFrames(stage.dir, COMPARISONS_FILE, comparison_schema(keys)))
            stage.finish(empty, seed=seed, resamples=resamples)
            return StatsSummary(out_dir / INTERVALS_FILE, out_dir / COMPARISONS_FILE, 0, 0, 0,
                                resamples, seed, slices)
        source = _Rows(lf, _layout(lf, exact_max_ids, buckets, requested))
        pairing = _pairing(source, max_all_pairs, baseline)
        log.info("comparisons: %s; %d pairs", pairing.reason, len(pairing.pairs))
        intervals = _ParquetFrames(stage.dir, INTERVALS_FILE,
                                   _interval_schema_of(source.layout))
        comparisons = _ParquetFrames(stage.dir, COMPARISONS_FILE,
                                     _comparison_schema_of(source.layout))
        try:
            _compute(source, pairing, intervals, comparisons, resamples=resamples, seed=seed)
            stage.finish((intervals, comparisons), seed=seed, resamples=resamples)
        finally:
            intervals.close()
            comparisons.close()
    return StatsSummary(
        intervals_path=out_dir / INTERVALS_FILE,
        comparisons_path=out_dir / COMPARISONS_FILE,
        intervals=intervals.rows,
        comparisons=comparisons.rows,
        significant=comparisons.significant,
        resamples=resamples,
        seed=seed,
        slices=slices,
        pairing=pairing.rule,
        baseline=pairing.baseline,
        pairing_reason=pairing.reason,
    )


def _compute(source: _Rows, pairing: Pairing, intervals: _ParquetFrames,
             comparisons: _ParquetFrames, *, resamples: int, seed: int) -> None:
    """Stream the rows of both tables into ``intervals`` and ``comparisons``."""
    layout = source.layout
    interval_blocks = _interval_blocks(layout)
    pair_blocks = _pair_blocks(layout, pairing.pairs)
    if layout.rows > PASS_ROWS and len(interval_blocks) == 1 and len(pair_blocks) <= 1:
        # every model in one block for each table: one sweep of the passes for both
        interval_block = _IntervalBlock(layout, interval_blocks[0])
        pair_block = _PairBlock(layout, pairing.pairs) if pairing.pairs else None
        for codes, values in source.batches(interval_blocks[0]):
            interval_block.add(codes, values)
            if pair_block is not None:
                pair_block.add(codes, values)
            del codes, values
        weights, method = _interval_method(layout, resamples, seed)
        for section, frame in interval_block.frames(resamples, seed, weights, method):
            intervals.add(section, frame)
        del interval_block
        if pair_block is not None:
            weights, signs = _comparison_resampling(layout, resamples, seed)
            for frame in pair_block.frames(resamples, seed, weights, signs, pairing):
                comparisons.add("", frame)
            _warn_repeated(layout, [pair_block])
        return
    for section, frame in _interval_frames(source, resamples, seed):
        intervals.add(section, frame)
    for frame in _comparison_frames(source, pairing, resamples, seed):
        comparisons.add("", frame)
