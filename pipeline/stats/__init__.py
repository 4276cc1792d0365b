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

Where each part lives (bottom to top; each file imports only the ones above it in this list):

* :mod:`~pipeline.stats.tables`: the tables' columns, defaults, method and test names, which
  columns are metrics and under which name.
* :mod:`~pipeline.stats.slices`: slice names, parsing and checking requested slices.
* :mod:`~pipeline.stats.coding`: the cluster of each id (exact or md5 bucket), the key
  columns as codes, the grids of slices.
* :mod:`~pipeline.stats.budgets`: the memory budgets and the blocks of models or pairs.
* :mod:`~pipeline.stats.closed_forms`: the Wilson interval and the exact McNemar test.
* :mod:`~pipeline.stats.multiple_testing`: Holm and Benjamini-Hochberg adjustments.
* :mod:`~pipeline.stats.passes`: reading the coded rows, in passes when they are many.
* :mod:`~pipeline.stats.sums`: the sufficient statistics per (group, cluster).
* :mod:`~pipeline.stats.resampling`: the cluster bootstrap and the sign-flip test, exact or
  bucketed (how the numbers are computed).
* :mod:`~pipeline.stats.table_rows`: the rows of the tables in table order.
* :mod:`~pipeline.stats.intervals`, :mod:`~pipeline.stats.pairing`,
  :mod:`~pipeline.stats.comparisons`: the two tables.
* :mod:`~pipeline.stats.writing`: Parquet streaming and the pair put in place together.
* :mod:`~pipeline.stats.driver`: :func:`write_stats`, which ties them.

Both regimes give the same ``n``, ``mean``, Wilson intervals and McNemar tests (closed forms
over the same counts). Float sums are added by ``np.bincount`` in row order, so the same input
gives byte-identical files.
"""

from __future__ import annotations

from pipeline.io.atomic import owned_name as owned_name
from pipeline.io.layout import COMPARISONS_FILE, INTERVALS_FILE
from pipeline.stats.closed_forms import (
    mcnemar_exact_p,
    wilson_interval,
)
from pipeline.stats.coding import (
    bucket_of,
)
from pipeline.stats.comparisons import (
    comparison_table,
)
from pipeline.stats.driver import (
    write_stats,
)
from pipeline.stats.intervals import (
    interval_table,
)
from pipeline.stats.multiple_testing import (
    benjamini_hochberg,
    holm,
)
from pipeline.stats.pairing import (
    Pairing,
)
from pipeline.stats.resampling import (
    _percentile_interval as _percentile_interval,
)
from pipeline.stats.slices import (
    check_slices,
    parse_slice,
    slice_name,
)
from pipeline.stats.tables import (
    ALL,
    COMPARISON_SCHEMA,
    COMPARISON_SLICES,
    CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    INTERVAL_SCHEMA,
    INTERVAL_SLICES,
    MAX_ALL_PAIRS,
    MAX_SLICE_CELLS,
    METRIC_NAMES,
    PAIRING_ALL,
    PAIRING_BASELINE,
    PRIMARY_METRIC,
    SLICE_COLUMNS,
    STATS_FILES,
    STATS_ID_KEY,
    StatsSummary,
    binary_columns,
    metric_columns,
    metric_name,
)
from pipeline.stats.tables import (
    ALPHA as ALPHA,
)
from pipeline.stats.tables import (
    BOOTSTRAP_METHOD as BOOTSTRAP_METHOD,
)
from pipeline.stats.tables import (
    BUCKETS as BUCKETS,
)
from pipeline.stats.tables import (
    CORRECTION as CORRECTION,
)
from pipeline.stats.tables import (
    EXACT_MAX_IDS as EXACT_MAX_IDS,
)
from pipeline.stats.tables import (
    PAIR_KEYS as PAIR_KEYS,
)
from pipeline.stats.tables import (
    TEST_MCNEMAR as TEST_MCNEMAR,
)
from pipeline.stats.tables import (
    TEST_PERMUTATION as TEST_PERMUTATION,
)
from pipeline.stats.tables import (
    Z_95 as Z_95,
)
from pipeline.stats.tables import (
    comparison_schema as comparison_schema,
)
from pipeline.stats.tables import (
    interval_schema as interval_schema,
)
from pipeline.stats.writing import (
    check_stats_pair,
    read_stats_id,
    stats_id,
)

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
