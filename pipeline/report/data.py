"""The numbers behind the report: view results, per-row scores and the optional statistics files.

Everything comes from an output directory: the DuckDB views (through one read-only
:func:`pipeline.views.connect` connection), ``texts.parquet`` for the worst items, and, when
present, ``intervals.parquet`` and ``comparisons.parquet`` written by ``pipeline.stats``.

Intervals are matched to a view row on the view's slice of ``intervals.parquet``
(:data:`VIEW_SLICES`), its grain (``model``; ``model, noise_level``; ``model, category``, nulls
matching nulls) and the metric name, which is the view column's own name (``pipeline.stats``
names each interval after the view column that is its mean), or :data:`INTERVAL_METRICS` where
the column is not such a mean. A matched interval becomes two columns beside the value,
``NAME_lo`` and ``NAME_hi``; for the abstain rate those are the Wilson bounds
(:data:`WILSON_COLUMNS`), for every other metric the bootstrap bounds. Comparisons and run
diffs key a slice by ``slice`` and one typed column per slice column (:mod:`pipeline.stats`).

The two statistics files are read only as a pair (:func:`pipeline.stats.check_stats_pair`): when
they come from different ``rag-eval stats`` runs (one was interrupted between its two renames),
or one of them cannot be read, a warning names the cause and the report shows neither, as if the
run had no statistics (``RunData.stats_ignored`` says why).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from pipeline.io.layout import COMPARISONS_FILE, INTERVALS_FILE, TEXTS_FILE
from pipeline.metrics.spec import MetricSpec
from pipeline.schema import InputError
from pipeline.stats import check_stats_pair
from pipeline.views import query_views, user_metrics_of

log = logging.getLogger(__name__)

#: Rows per model in the worst-items table.
WORST_N = 20

INTERVAL_COLUMNS = (
    "slice", "model", "noise_level", "category", "metric", "n", "mean", "ci_low", "ci_high",
    "wilson_low", "wilson_high", "resamples", "seed", "method",
)
COMPARISON_COLUMNS = (
    "model_a", "model_b", "slice", "metric", "n_pairs", "mean_a", "mean_b", "diff",
    "ci_low", "ci_high", "test", "p_value", "p_adjusted", "correction", "significant",
)
DIFF_COLUMNS = ("model", "metric", "slice", "mean_a", "mean_b", "delta", "ci_low", "ci_high")
#: The grain of each view that intervals may refer to.
VIEW_KEYS = {
    "by_model": ("model",),
    "by_model_noise": ("model", "noise_level"),
    "by_model_category": ("model", "category"),
}
#: The slice of intervals.parquet (its ``slice`` column) that holds each view's intervals.
VIEW_SLICES = {"by_model": "all", "by_model_noise": "noise_level", "by_model_category": "category"}
#: View column → metric names an interval for it may carry (first match wins), for columns that
#: are not the mean of a metric of that name. A column not listed is looked up under its own
#: name only; the p50 latency has none (a median is not a mean).
INTERVAL_METRICS: dict[str, tuple[str, ...]] = {
    # RGB accuracy (%) from the mean of the 0/1 rgb_correct column (scaled by 100).
    "accuracy": ("rgb_correct",),
}
#: Columns whose interval is the Wilson score interval (a proportion), not the bootstrap one.
WILSON_COLUMNS = frozenset({"abstain_rate"})

_WORST_SQL = f"""
with ranked as (
    select
        sr.*,
        row_number() over (
            partition by sr.model
            order by sr.answer_f1 asc nulls last, sr.overall_score asc nulls last,
                sr.source, sr.row_number
        ) as worst_rank
    from scores as sr
)
select
    rk.model, rk.worst_rank, rk.source, rk.row_number, rk.id, rk.category, rk.noise_level,
    rk.task, rk.answer_f1, rk.answer_em, rk.citation_f1, rk.faithfulness, rk.overall_score,
    rk.primary_failure_mode, rk.n_sentences, rk.n_supported, rk.n_contexts,
    rk.first_unsupported, rk.empty_response
from ranked as rk
where rk.worst_rank <= {WORST_N}
order by rk.model nulls last, rk.worst_rank
"""


@dataclass(frozen=True)
class RunData:
    """The frames one report is drawn from (views ordered by model, nulls last)."""

    out_dir: Path
    models: tuple[str | None, ...]
    n_rows: int
    n_rejected: int
    headline: pl.DataFrame
    by_model: pl.DataFrame
    by_model_noise: pl.DataFrame
    by_model_category: pl.DataFrame
    by_category: pl.DataFrame
    failure_modes: pl.DataFrame
    #: Rows per (model, noise level, failure stage) of the ``by_failure_stage`` view.
    failure_stages: pl.DataFrame
    rgb_noise: pl.DataFrame
    rgb_summary: pl.DataFrame
    #: The ``paired_analysis`` view (its threshold columns place the grounding chart's lines).
    paired_analysis: pl.DataFrame
    #: One row per scored row in input order: model, id, noise_level, task, answer_f1,
    #: answer_em, the citation precision, recall and F1 and overall_score (for the
    #: distributions and the per-example plots).
    rows: pl.DataFrame
    #: The :data:`WORST_N` lowest-F1 rows per model with their texts (when texts.parquet exists).
    worst: pl.DataFrame
    intervals: pl.DataFrame | None
    comparisons: pl.DataFrame | None
    #: The run's user-defined metrics (:func:`pipeline.views.user_metrics_of`).
    user_metrics: tuple[MetricSpec, ...] = ()
    #: Why the statistics files are not shown (:func:`pipeline.stats.check_stats_pair`), or
    #: None when they are shown or absent.
    stats_ignored: str | None = None


def read_optional(path: Path, columns: Sequence[str]) -> pl.DataFrame | None:
    """The Parquet file at ``path`` if it exists, checked to hold ``columns``."""
    if not path.is_file():
        return None
    frame = pl.read_parquet(path)
    if "slice" in columns and "slice" not in frame.columns:
        raise InputError(f"{path} was written by an older version (no slice column); run "
                         f"`rag-eval stats {path.parent}` again")
    check_columns(frame, columns, str(path))
    return frame


def check_columns(frame: pl.DataFrame, columns: Sequence[str], what: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"{what} lacks the column(s) {', '.join(missing)}")


def with_ci(
    frame: pl.DataFrame,
    intervals: pl.DataFrame | None,
    view: str,
    columns: Sequence[str],
    *,
    same_n: bool = False,
) -> pl.DataFrame:
    """``frame`` (rows of ``view``) with ``NAME_lo``/``NAME_hi`` for each of ``columns``.

    The bounds are null where ``intervals`` has no matching row (or is None). With ``same_n``
    an interval counts only where its ``n`` equals the frame's ``n``: for a frame over a subset
    of the view's rows (the RGB noise task), an interval over other rows would mislead.
    """
    keys = list(VIEW_KEYS[view])
    bounds = []
    for column in columns:
        lo, hi = f"{column}_lo", f"{column}_hi"
        matched = _matching_intervals(intervals, view, column)
        if matched is None:
            bounds.append(pl.lit(None, pl.Float64).alias(lo))
            bounds.append(pl.lit(None, pl.Float64).alias(hi))
            continue
        wilson = column in WILSON_COLUMNS and matched["wilson_low"].drop_nulls().len() > 0
        scale = 100.0 if column == "accuracy" else 1.0
        matched = matched.select(
            *(pl.col(k).cast(frame.schema[k]) for k in keys),
            (pl.col("wilson_low" if wilson else "ci_low") * scale).alias(lo),
            (pl.col("wilson_high" if wilson else "ci_high") * scale).alias(hi),
            pl.col("n").alias("_interval_n"),
        ).unique(subset=keys, keep="first", maintain_order=True)
        frame = frame.join(matched, on=keys, how="left", nulls_equal=True,
                           maintain_order="left")
        if same_n:
            other = pl.col("_interval_n") != pl.col("n")
            frame = frame.with_columns(
                pl.when(other).then(None).otherwise(pl.col(c)).alias(c) for c in (lo, hi)
            )
        frame = frame.drop("_interval_n")
    return frame.with_columns(bounds) if bounds else frame


def _matching_intervals(
    intervals: pl.DataFrame | None, view: str, column: str
) -> pl.DataFrame | None:
    if intervals is None:
        return None
    of_view = intervals.filter(pl.col("slice") == VIEW_SLICES[view])
    available = set(of_view["metric"].unique().to_list())
    for metric in INTERVAL_METRICS.get(column, (column,)):
        if metric in available:
            return of_view.filter(pl.col("metric") == metric)
    return None


def load_run(out_dir: Path) -> RunData:
    """Query the views of ``out_dir`` and read its optional statistics files."""
    out_dir = Path(out_dir)
    stats_ignored = check_stats_pair(out_dir)
    if stats_ignored is not None:
        log.warning("%s", stats_ignored)
        intervals = comparisons = None
    else:
        intervals = read_optional(out_dir / INTERVALS_FILE, INTERVAL_COLUMNS)
        comparisons = read_optional(out_dir / COMPARISONS_FILE, COMPARISON_COLUMNS)
    try:
        frames = query_views(out_dir, {
            "counts": "select (select count(*) from scores) as n_rows, "
                      "(select count(*) from rejected) as n_rejected",
            "by_model": "select * from by_model order by model nulls last",
            "headline": "select * from headline order by model nulls last",
            "by_model_noise":
                "select * from by_model_noise order by model nulls last, noise_level nulls last",
            "by_model_category": "select * from by_model_category "
                                 "order by model nulls last, category nulls last",
            "by_category":
                "select * from by_category order by model nulls last, scoring_category nulls last",
            "failure_modes": "select * from failure_modes order by model nulls last, "
                             "scoring_category nulls last, primary_failure_mode nulls last",
            "failure_stages": "select model, noise_level, failure_stage, sum(n)::bigint as n "
                              "from by_failure_stage group by all "
                              "order by model nulls last, noise_level nulls last, failure_stage",
            "rgb_noise": "select * from rgb_noise_robustness "
                         "order by model nulls last, noise_level nulls last",
            "rgb_summary": "select * from rgb_summary order by model nulls last",
            "paired_analysis": "select * from paired_analysis order by model nulls last",
            "rows": "select sr.model, sr.id, sr.noise_level, sr.task, sr.answer_f1, "
                    "sr.answer_em, sr.citation_precision, sr.citation_recall, sr.citation_f1, "
                    "sr.overall_score from scores as sr order by sr.source, sr.row_number",
            "worst": _WORST_SQL,
        })
    except duckdb.Error as exc:
        raise InputError(f"{out_dir}: the report's queries failed: {exc}") from exc
    counts, by_model = frames.pop("counts"), frames.pop("by_model")
    n_rows, n_rejected = int(counts["n_rows"][0]), int(counts["n_rejected"][0])
    texts_path = out_dir / TEXTS_FILE
    if texts_path.is_file():
        keys = frames["worst"].select("source", "row_number").unique().lazy()
        texts = (  # only the worst rows' texts are held, not the file's
            pl.scan_parquet(texts_path)
            .select("source", "row_number", "question", "reference", "response")
            .join(keys, on=["source", "row_number"], how="semi")
            .collect()
        )
        frames["worst"] = frames["worst"].join(
            texts, on=["source", "row_number"], how="left", maintain_order="left"
        )
    return RunData(
        out_dir=out_dir,
        models=tuple(by_model["model"].to_list()),
        n_rows=n_rows,
        n_rejected=n_rejected,
        by_model=by_model,
        intervals=intervals,
        comparisons=comparisons,
        user_metrics=user_metrics_of(out_dir.resolve()),
        stats_ignored=stats_ignored,
        **frames,
    )
