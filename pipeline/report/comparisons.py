"""The sections of the page that compare: the model comparisons of ``comparisons.parquet``
(:mod:`pipeline.stats`: paired differences, intervals, Holm-adjusted tests) and the run
comparison of ``rag-eval compare`` (the diff of two runs, its chart, its regressed items)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from pipeline.compare import DEFAULT_ITEM_DROP
from pipeline.metrics.registry import REGISTRY
from pipeline.metrics.spec import MetricSpec
from pipeline.report import charts
from pipeline.report.data import RunData
from pipeline.report.limits import (
    MAX_COMPARISON_ROWS,
)
from pipeline.report.markup import (
    _figure,
    _key_text,
    _noise_text,
    _search_box,
    _section,
    _table,
    _td,
    esc,
    fmt,
    fmt_auto,
)
from pipeline.stats import METRIC_NAMES

#: Per-row metrics whose model comparisons the page lists, in this order, by their score column;
#: pipeline.stats names a metric whose mean a slice view shows by that column instead
#: (:data:`pipeline.stats.METRIC_NAMES`: ``abstained`` → ``abstain_rate``), so both names count.
SCORE_COMPARISON_METRICS = (
    "answer_f1", "answer_em", "answer_em_strict", "citation_precision", "citation_recall",
    "citation_f1", "faithfulness", "overlap", "abstained", "abstention_correct", "total_tokens",
    "latency_ms", "rouge_1", "rouge_2", "rouge_l", "bleu", "semantic_similarity",
    "semantic_relevance", "keyword_overlap", "content_coverage", "tfidf_relevance",
    "numeric_accuracy", "composite_accuracy", "composite_relevance", "safety_score",
    "composite_quality", "overall_score", "rgb_correct", "rejected", "error_detected",
    "error_corrected",
)
#: Score column of each metric name of the statistics tables.
SCORE_COLUMN_OF = {METRIC_NAMES.get(name, name): name for name in SCORE_COMPARISON_METRICS}
COMPARISON_METRICS = tuple(
    dict.fromkeys(n for m in SCORE_COMPARISON_METRICS for n in (METRIC_NAMES.get(m, m), m))
)


#: Metrics of the run-comparison chart, one panel each: the first :data:`RUN_CHART_PANELS` of
#: these that changed somewhere.
RUN_CHART_METRICS = tuple(dict.fromkeys(n for m in (
    "answer_f1", "answer_em", "faithfulness", "citation_f1", "overall_score", "rgb_correct",
    "overlap", "abstained",
) for n in (METRIC_NAMES.get(m, m), m)))
RUN_CHART_PANELS = 3
#: Regressed items listed at most (the biggest drops first); the Parquet file has them all.
REGRESSED_SHOWN = 500
#: Columns of a ``regressed`` frame (:func:`pipeline.compare.regressed_items`).
REGRESSED_COLUMNS = ("id", "model", "noise_level", "task", "metric", "before", "after")
#: Texts a ``regressed`` frame may carry (:func:`pipeline.compare.regressed_items`), shown cut to
#: :data:`REGRESSED_TEXT_CHARS` characters (the whole text in the cell's tooltip).
REGRESSED_TEXTS = (("question", "Question"), ("reference", "Reference"),
                   ("response_a", "Response A"), ("response_b", "Response B"))
REGRESSED_TEXT_CHARS = 160
#: A difference this small is zero (bootstrap bounds of identical runs come out as ±0.0).
ZERO = 1e-12


def slice_label(row: Mapping[str, object]) -> str:
    """The slice of a comparisons or run-diff row as plain text (escape it to show it).

    Reads either layout of those tables: a ``slice_value`` text column, or one typed column
    per slice column, the slice named by its columns joined by commas.

    >>> slice_label({"slice": "all", "noise_level": None})
    'all'
    >>> slice_label({"slice": "question_type,noise_level", "question_type": "multi-hop",
    ...              "noise_level": 0.4})
    'question_type = multi-hop, noise_level = 0.4'
    >>> slice_label({"slice": "category", "slice_value": "Factual"})
    'category = Factual'
    """
    kind = row.get("slice")
    if kind is None or kind == "all":
        return "all"
    if "slice_value" in row:
        return f"{kind} = {_key_text(row['slice_value'])}"
    columns = str(kind).split(",")
    return ", ".join(f"{c} = {_key_text(row.get(c))}" for c in columns)


def with_slice_labels(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with ``slice_label`` (:func:`slice_label` of each row)."""
    return frame.with_columns(pl.Series(
        "slice_label", [slice_label(r) for r in frame.iter_rows(named=True)], dtype=pl.String
    ))


def _interval(value: object, low: object, high: object) -> str:
    return f"{fmt_auto(value)} [{fmt_auto(low)}, {fmt_auto(high)}]"


def _comparisons(data: RunData, max_rows: int = MAX_COMPARISON_ROWS, total: int | None = None
                 ) -> str:
    """The comparisons of ``data`` (``total`` rows in comparisons.parquet), at most
    ``max_rows`` of them."""
    if data.stats_ignored:
        return _section("comparisons", "Model comparisons", '<p class="empty">The statistics '
                        "files are ignored (see the summary at the top).</p>")
    if data.comparisons is None or data.comparisons.height == 0:
        return _section("comparisons", "Model comparisons", '<p class="empty">No '
                        "comparisons.parquet in the run directory.</p>")
    order = {name: k for k, name in enumerate(COMPARISON_METRICS)}
    frame = (
        with_slice_labels(data.comparisons)
        .filter(pl.col("metric").is_in(COMPARISON_METRICS)
                & ((pl.col("slice") == "all") | pl.col("significant")))
        .sort(pl.col("metric").replace_strict(order, return_dtype=pl.Int64),
              pl.col("slice") != "all", "slice", "slice_label", "model_a", "model_b",
              nulls_last=True)
    )
    left_out = max(0, frame.height - max_rows)
    frame = frame.head(max_rows)
    rows = []
    for r in frame.to_dicts():
        significant = bool(r["significant"])
        css = ' class="sig"' if significant else ""
        cells = [
            _td(esc(r["metric"])), _td(esc(r["slice_label"]), css="slice"),
            _td(f'<span class="nowrap">{esc(r["model_a"])}</span> <span class="sub">vs</span> '
                f'<span class="nowrap">{esc(r["model_b"])}</span>', css="wrap"),
            _td(_interval(r["diff"], r["ci_low"], r["ci_high"]), True),
            _td(fmt_auto(r["p_adjusted"]), True), _td("yes" if significant else "no"),
            _td(fmt_auto(r["mean_a"]), True), _td(fmt_auto(r["mean_b"]), True),
            _td(fmt(r["n_pairs"], "count"), True), _td(fmt_auto(r["p_value"]), True),
            _td(esc(r["test"])),
        ]
        rows.append(f"<tr{css}>{''.join(cells)}</tr>")
    sig_title = "Signif&shy;icant"
    headers = ["Metric", "Slice", "Model A vs B", "A − B [95% CI]", "p adjusted", sig_title,
               "Mean A", "Mean B", "Pairs", "p", "Test"]
    numeric = [False, False, False, True, True, False, True, True, True, True, False]
    corrections = sorted({charts.label(c) for c in data.comparisons["correction"].to_list()})
    search = _search_box("comparisons-table", "comparisons-count", "Filter comparisons")
    return _section("comparisons", "Model comparisons", search + _table(
        headers, rows, numeric=numeric, table_id="comparisons-table",
        key=("Metric", "Slice", "Model A vs B", "A − B [95% CI]", "p adjusted", sig_title))
        + '<p class="note">Paired differences between models on the same items; highlighted '
        "rows are significant after the multiple-comparison correction "
        f"({esc(', '.join(corrections))}) that gives the adjusted p. Shown: "
        f"{fmt(frame.height, 'count')} of the "
        f"{fmt(data.comparisons.height if total is None else total, 'count')} rows of "
        "comparisons.parquet, every report metric over all rows (slice <code>all</code>) and "
        "the significant differences within a slice"
        + (f"; the {fmt(left_out, 'count')} rows after the first {fmt(max_rows, 'count')} in "
           "this order are left out (the <code>model_comparison</code> view has them all)"
           if left_out else "") + ".</p>")


def _direction(metric: object, user_metrics: Sequence[MetricSpec] = ()) -> bool | None:
    """Whether a higher value of ``metric`` is better (None: no better direction or unknown);
    a user-defined metric's direction is what its definition declares."""
    if not isinstance(metric, str):
        return None
    spec = REGISTRY.get(SCORE_COLUMN_OF.get(metric, metric))
    if spec is None:
        spec = next((s for s in user_metrics if s.name == metric), None)
    return None if spec is None else spec.higher_is_better


def run_changes(diff: pl.DataFrame, user_metrics: Sequence[MetricSpec] = ()) -> pl.DataFrame:
    """The rows of a run diff worth showing, regressions first, with a ``change`` column.

    Rows whose delta and interval are all zero (or null: nothing to compare) are dropped: the
    two runs agree there. ``change`` is ``worse`` or ``better`` when the 95% interval excludes
    0 and the metric has a better direction (the registry's ``higher_is_better``), ``changed``
    when it has none, else null. Order: worse, better, changed, the rest; then metric, slice,
    model.
    """
    bounds = [pl.col(c).cast(pl.Float64) for c in ("delta", "ci_low", "ci_high")]
    zero = pl.all_horizontal([(b.abs() <= ZERO) | b.is_null() for b in bounds])
    frame = with_slice_labels(diff.filter(~zero))
    metrics = frame["metric"].unique().to_list()
    higher = pl.col("metric").replace_strict(
        {m: _direction(m, user_metrics) for m in metrics}, default=None,
        return_dtype=pl.Boolean
    )
    up = (pl.col("ci_low") > ZERO).fill_null(False)
    down = (pl.col("ci_high") < -ZERO).fill_null(False)
    change = (
        pl.when(~(up | down)).then(pl.lit(None, pl.String))
        .when(higher.is_null()).then(pl.lit("changed"))
        .when(higher == up).then(pl.lit("better"))
        .otherwise(pl.lit("worse"))
    )
    rank = {"worse": 0, "better": 1, "changed": 2}
    order = {name: k for k, name in enumerate(COMPARISON_METRICS)}
    return frame.with_columns(change.alias("change")).sort(
        pl.col("change").replace_strict(rank, default=3, return_dtype=pl.Int64),
        pl.col("metric").replace_strict(order, default=len(order), return_dtype=pl.Int64),
        "metric", pl.col("slice") != "all", "slice", "slice_label", "model", nulls_last=True,
    )


def _clipped(text: object, limit: int = REGRESSED_TEXT_CHARS) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis, escaped; ``—`` when unknown."""
    if text is None:
        return "—"
    value = str(text)
    return esc(value if len(value) <= limit else value[: limit - 1].rstrip() + "…")


def _regressed_table(regressed: pl.DataFrame) -> str:
    frame = regressed.with_columns(
        (pl.col("after") - pl.col("before")).alias("_change")
    ).sort("_change", "model", "id", "metric", nulls_last=True)
    texts = [(name, title) for name, title in REGRESSED_TEXTS if name in frame.columns]
    shown = frame.head(REGRESSED_SHOWN)
    rows = []
    for r in shown.to_dicts():
        cells = [
            _td(esc(r["model"])), _td(esc(r["id"])), _td(_noise_text(r["noise_level"]), True),
            _td(esc(r["task"])), _td(esc(r["metric"])), _td(fmt_auto(r["before"]), True),
            _td(fmt_auto(r["after"]), True), _td(fmt_auto(r["_change"]), True),
            *(_td(_clipped(r[name]), title=esc(r[name] or "")) for name, _ in texts),
        ]
        rows.append(f'<tr class="sig worse">{"".join(cells)}</tr>')
    headers = ["Model", "ID", "Noise", "Task", "Metric", "Run A", "Run B", "Change",
               *(title for _, title in texts)]
    items = regressed.select("id", "model", "noise_level", "task").unique().height
    more = (f" The {fmt(REGRESSED_SHOWN, 'count')} largest drops are listed; the file "
            "regressed_items.parquet of <code>rag-eval compare</code> has them all."
            if frame.height > REGRESSED_SHOWN else "")
    search = _search_box("regressed-table", "regressed-count", "Filter regressed items")
    return (
        f"<h3>Regressed items: {fmt(items, 'count')} "
        f"{'item' if items == 1 else 'items'}, {fmt(frame.height, 'count')} "
        f"{'row' if frame.height == 1 else 'rows'} (one per item and metric)</h3>" + search
        + _table(headers, rows,
                 numeric=[False, False, True, False, False, True, True, True,
                          *(False for _ in texts)],
                 table_id="regressed-table", key=("Model", "ID", "Metric", "Change"))
        + '<p class="note">Items (same id, model, noise level and task in both runs) where a '
        "score or 0/1 flag fell in its better direction by more than the threshold "
        f"(<code>rag-eval compare --item-drop</code>, default {DEFAULT_ITEM_DROP:g}), one row "
        "per metric, "
        f"largest drops first; texts cut to {REGRESSED_TEXT_CHARS} characters (hover for the "
        f"whole text).{more}</p>"
    )


def _run_comparison(
    diff: pl.DataFrame, regressed: pl.DataFrame | None, models: Sequence[str | None],
    user_metrics: Sequence[MetricSpec] = (),
) -> str:
    frame = run_changes(diff, user_metrics)
    counts = {k: frame.filter(pl.col("change") == k).height for k in ("worse", "better", "changed")}
    omitted = diff.height - frame.height
    summary = (
        f'<p class="summary">{fmt(diff.height, "count")} rows (model × metric × slice): '
        f'<strong>{fmt(counts["worse"], "count")} worse</strong>, '
        f'{fmt(counts["better"], "count")} better, {fmt(counts["changed"], "count")} changed '
        "without a better direction (95% interval excluding 0); "
        f"{fmt(omitted, 'count')} rows where both runs agree (change and interval 0) are "
        "not listed.</p>"
    )
    present = [m for m in RUN_CHART_METRICS if m in set(frame["metric"].to_list())]
    panels = present[:RUN_CHART_PANELS]
    extra = sorted({m for m in frame["model"].to_list() if m not in models}, key=str)
    svg = charts.slice_deltas(frame, panels, (*models, *extra), chart_id="chart-run-comparison")
    chart = _figure(
        svg, "chart-run-comparison", "Change from run A to run B (B − A) per slice with its "
        "paired 95% bootstrap interval, for " + ", ".join(f"<code>{esc(m)}</code>" for m in panels)
        + ". Filled markers: the interval excludes 0. Slices where the runs agree are left out.",
        "No change in the charted metrics.")
    items = ""
    if regressed is not None:
        items = (_regressed_table(regressed) if regressed.height
                 else '<h3>Regressed items: 0 items</h3><p class="empty">No item regressed.</p>')
    rows = []
    for r in frame.to_dicts():
        change = r["change"]
        css = {"worse": ' class="sig worse"', "better": ' class="sig"',
               "changed": ' class="sig"'}.get(change, "")
        cells = [
            _td(esc(r["model"])), _td(esc(r["metric"])),
            _td(esc(r["slice_label"]), css="slice"),
            _td(_interval(r["delta"], r["ci_low"], r["ci_high"]), True),
            _td(esc(change) if change else "—"),
            _td(fmt_auto(r["mean_a"]), True), _td(fmt_auto(r["mean_b"]), True),
        ]
        rows.append(f"<tr{css}>{''.join(cells)}</tr>")
    headers = ["Model", "Metric", "Slice", "B − A [95% CI]", "Change", "Run A", "Run B"]
    search = _search_box("run-comparison-table", "run-comparison-count", "Filter rows")
    table = (
        "<h3>Changes by slice</h3>" + search + _table(
            headers, rows, numeric=[False, False, False, True, False, True, True],
            table_id="run-comparison-table",
            key=("Model", "Metric", "Slice", "B − A [95% CI]", "Change"))
        + '<p class="note">Regressions first (worse: the interval excludes 0 on the bad side of '
        "the metric's direction), then improvements; highlighted rows changed.</p>"
    )
    return _section("run-comparison", "Run comparison", summary + chart + items + table)
