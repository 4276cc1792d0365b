"""The six plots of the HotpotQA-style generation evaluator, drawn for every model of a run.

Reference: the evaluator's visualization cell (spec ``000_2c9197e1522c9584.txt`` among the
replaced tools), a 2 x 3 grid over its per-example results:

1. answer F1 vs answer EM per example (grouped bars),
2. citation precision, recall and F1 per example (grouped bars),
3. the answer F1 distribution with a dashed line at the mean,
4. the citation F1 distribution with a dashed line at the mean,
5. a per-example heatmap of answer F1, EM and citation precision, recall, F1 (red-yellow-green,
   0 to 1),
6. a radar chart of the averages.

The tool draws one system; here plots 1, 2 and 5 have one panel per model, plots 3 and 4 one
histogram and mean line per model, and the radar one polygon per model. Its radar shows five
metrics; this one adds the sixth, insufficient-context detection, averaged like the tool's
``evaluate_batch`` over the rows where it applies (its average is 0.0 where no row does, and so
is it here, said in the caption). Per-example plots show the worst rows of each model, at most
:data:`~pipeline.report.limits.MAX_EXAMPLES` (:func:`worst_examples`: lowest answer F1, or
citation F1 for plot 2, ties by lowest overall score, then input order), labelled by id: a run
of thousands of rows has no readable bar per row, the worst rows are the ones a reader looks
for, and the distributions and the radar cover every row. With the default limit, plots 1 and
5 show the rows of the report's worst-items table, which has their texts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from pipeline.report.charts import WIDTH_IN, bars, cell_values, color, label, style, to_svg
from pipeline.report.limits import MAX_EXAMPLES

#: The heatmap writes each cell's value while it has at most this many columns (rows per model).
VALUES_UP_TO = 30
#: The per-row metrics of plots 1, 2 and 5: (score column, the tool's label).
EXAMPLE_METRICS = (
    ("answer_f1", "Ans F1"),
    ("answer_em", "Ans EM"),
    ("citation_precision", "Cit Prec"),
    ("citation_recall", "Cit Rec"),
    ("citation_f1", "Cit F1"),
)
#: The six averages of the radar: (``by_model`` column, label).
RADAR_METRICS = (
    ("answer_f1", "Answer F1"),
    ("answer_em", "Answer EM"),
    ("citation_precision_macro", "Citation\nprecision"),
    ("citation_recall_macro", "Citation\nrecall"),
    ("citation_f1_macro", "Citation F1"),
    ("insufficient_context_rate", "Insufficient-\ncontext det."),
)
#: The tool's colours: F1 and EM bars, then precision, recall and F1 bars.
_ANSWER_COLORS = ("#4ECDC4", "#FF6B6B")
_CITATION_COLORS = ("#95E1D3", "#F38181", "#FFAA5A")
#: Longest example label before it is cut with an ellipsis.
_LABEL_CHARS = 14
#: One figure: (chart id, SVG or None, caption, text shown when there is nothing to plot).
Plot = tuple[str, str | None, str, str]
#: The columns that rank a model's rows, worst first, in the per-example plot of each chart
#: id: the first is the score the plot is about (rows without it are not ranked), then the
#: overall score breaks ties, as in the worst-items table.
WORST_BY = {
    "chart-exampleanswers": ("answer_f1", "overall_score"),
    "chart-examplecitations": ("citation_f1", "overall_score"),
    "chart-exampleheatmap": ("answer_f1", "overall_score"),
}
#: What each ranking's first column is called in captions.
RANKED_BY = {"answer_f1": "answer F1", "citation_f1": "citation F1"}


def _column(frame: pl.DataFrame, name: str) -> np.ndarray:
    """``name`` as floats, NaN for nulls (a missing column is all NaN)."""
    if name not in frame.columns:
        return np.full(frame.height, np.nan)
    return frame[name].cast(pl.Float64).fill_null(np.nan).to_numpy()


def _model_rows(rows: pl.DataFrame, model: str | None, key: str) -> pl.DataFrame:
    """The rows of ``model`` that have a ``key`` score, in input order, each with its
    ``_position`` among the model's rows (from 1)."""
    part = rows.filter(pl.col("model").eq_missing(model)).with_row_index("_position", offset=1)
    if key not in part.columns:
        return part.clear()
    return part.filter(pl.col(key).is_not_null())


def _labels(part: pl.DataFrame) -> list[str]:
    """Tick labels of the rows of one panel: the id cut to :data:`_LABEL_CHARS` characters
    (``#k``, the row's place among the model's rows, without one); an id that repeats in the
    panel gets its noise level (``@0.4``), and one that still repeats its place (``#k``)."""
    def cut(ident: object) -> str | None:
        if ident is None:
            return None
        text = str(ident)
        return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…"

    ids = part["id"].to_list() if "id" in part.columns else [None] * part.height
    noise = (part["noise_level"].to_list() if "noise_level" in part.columns
             else [None] * part.height)
    positions = part["_position"].to_list()
    labels = [cut(i) or f"#{k}" for i, k in zip(ids, positions, strict=True)]
    if len(set(labels)) < len(labels):
        labels = [
            f"{text} @{level:g}" if labels.count(text) > 1 and level is not None else text
            for text, level in zip(labels, noise, strict=True)
        ]
    if len(set(labels)) < len(labels):
        labels = [f"{text} #{k}" if labels.count(text) > 1 else text
                  for text, k in zip(labels, positions, strict=True)]
    return labels


def worst_examples(
    rows: pl.DataFrame, model: str | None, by: Sequence[str] = WORST_BY["chart-exampleanswers"],
    limit: int = MAX_EXAMPLES,
) -> pl.DataFrame:
    """The ``limit`` worst rows of ``model`` (``rows`` is in input order): those with a
    ``by[0]`` score, lowest first, ties by the further ``by`` columns (lowest first, nulls
    last), then input order; with a ``label`` for the axis (:func:`_labels`).

    >>> rows = pl.DataFrame({"model": ["m", "m", "m", "n"], "id": ["q-1", None, "q-3", "q-1"],
    ...                      "answer_f1": [0.9, 0.1, None, 0.0]})
    >>> worst_examples(rows, "m", ["answer_f1"])["label"].to_list()
    ['#2', 'q-1']
    """
    keys = [c for c in by if c in rows.columns]
    part = _model_rows(rows, model, by[0])
    part = part.sort([*keys, "_position"], nulls_last=True).head(limit)
    return part.with_columns(pl.Series("label", _labels(part), dtype=pl.String))


def drawn_rows(rows: pl.DataFrame, models: Sequence[str | None], key: str,
               limit: int = MAX_EXAMPLES) -> tuple[int, int]:
    """How many rows of ``models`` with a ``key`` score a per-example plot draws (at most
    ``limit`` per model) and how many there are."""
    counts = [_model_rows(rows, m, key).height for m in models]
    return sum(min(n, limit) for n in counts), sum(counts)


def _has_any(rows: pl.DataFrame, columns: Sequence[str]) -> bool:
    present = [c for c in columns if c in rows.columns]
    return rows.height > 0 and any(rows[c].drop_nulls().len() > 0 for c in present)


def _example_axis(ax: Axes, labels: list[str]) -> None:
    ax.set_xticks(np.arange(len(labels)), labels, rotation=60 if len(labels) > 8 else 0,
                  ha="right" if len(labels) > 8 else "center", fontsize=7)


def per_example_bars(
    rows: pl.DataFrame,
    models: Sequence[str | None],
    metrics: Sequence[tuple[str, str]],
    colors: Sequence[str],
    *,
    chart_id: str,
    title: str,
    by: Sequence[str] | None = None,
    limit: int = MAX_EXAMPLES,
) -> str | None:
    """One panel per model: a group of bars per example, one bar per metric (0 to 1.1), for
    the ``limit`` worst rows by ``by`` (default: the metrics' columns), worst first."""
    columns = [name for name, _ in metrics]
    panels = [(m, worst_examples(rows, m, by or columns, limit)) for m in models]
    panels = [(m, part) for m, part in panels if _has_any(part, columns)]
    if not panels:
        return None
    width = 0.8 / len(metrics)
    with style(chart_id):
        fig = Figure(figsize=(WIDTH_IN, 2.6 * len(panels)))
        axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
        for ax, (model, part) in zip(axes, panels, strict=True):
            x = np.arange(part.height)
            for k, (name, text) in enumerate(metrics):
                bars(ax, x - 0.4 + width * (k + 0.5), np.nan_to_num(_column(part, name)), width,
                     label=text, color=colors[k], alpha=0.8)
            _example_axis(ax, part["label"].to_list())
            ax.set_ylim(0, 1.1)
            ax.set_ylabel("score")
            ax.set_title(f"{title}: {label(model)}", loc="left")
        axes[0].legend()
    return to_svg(fig, chart_id)


def distribution(
    rows: pl.DataFrame, models: Sequence[str | None], column: str, title: str, *, chart_id: str
) -> str | None:
    """Histogram of a per-row score (10 bins on [0, 1], share of the model's rows), one per
    model, each with a dashed line at the model's mean and the mean in the legend."""
    if not _has_any(rows, [column]):
        return None
    bins = [k / 10 for k in range(11)]
    with style(chart_id):
        fig = Figure(figsize=(WIDTH_IN, 2.8))
        ax = fig.add_subplot()
        for index, model in enumerate(models):
            values = rows.filter(pl.col("model").eq_missing(model))[column].drop_nulls()
            if values.len() == 0:
                continue
            data = values.cast(pl.Float64).to_numpy()
            ax.hist(data, bins=bins, weights=np.full(data.size, 1.0 / data.size),
                    histtype="step", linewidth=1.6, color=color(index))
            mean = float(np.mean(data))
            ax.axvline(mean, color=color(index), linestyle="--", linewidth=1.5,
                       label=f"{label(model)}: mean {mean:.3f}")
        ax.set_xlim(0, 1)
        ax.set_xlabel(f"{title} score")
        ax.set_ylabel("share of rows")
        ax.set_title(f"{title} distribution", loc="left")
        ax.legend()
    return to_svg(fig, chart_id)


def example_heatmap(
    rows: pl.DataFrame, models: Sequence[str | None], *, chart_id: str,
    by: Sequence[str] = WORST_BY["chart-exampleheatmap"], limit: int = MAX_EXAMPLES,
) -> str | None:
    """One panel per model: the five per-row metrics (rows) of each of the ``limit`` worst
    examples by answer F1 (columns, worst first), red to green from 0 to 1, values written in;
    blank where a metric is null (no gold citations)."""
    columns = [name for name, _ in EXAMPLE_METRICS]
    panels = [(m, worst_examples(rows, m, by, limit)) for m in models]
    panels = [(m, part) for m, part in panels if _has_any(part, columns)]
    if not panels:
        return None
    with style(chart_id):
        fig = Figure(figsize=(WIDTH_IN, 2.4 * len(panels)))
        cells = fig.add_gridspec(len(panels), 2, width_ratios=(1.0, 0.02))
        axes = [fig.add_subplot(cells[k, 0]) for k in range(len(panels))]
        image = None
        for ax, (model, part) in zip(axes, panels, strict=True):
            ax.grid(False)
            ax.tick_params(length=0, bottom=False, left=False)  # before any tick exists
            grid = np.vstack([_column(part, name) for name in columns])
            image = ax.imshow(np.ma.masked_invalid(grid), cmap="RdYlGn", aspect="auto",
                              vmin=0.0, vmax=1.0)
            ax.set_yticks(np.arange(len(columns)), [text for _, text in EXAMPLE_METRICS])
            _example_axis(ax, part["label"].to_list())
            ax.set_title(f"Performance heatmap: {label(model)}", loc="left")
            if part.height <= VALUES_UP_TO:
                cell_values(ax, grid, size=6)
        if image is not None:
            fig.colorbar(image, cax=fig.add_subplot(cells[:, 1]), label="score")
    return to_svg(fig, chart_id)


def radar(by_model: pl.DataFrame, *, chart_id: str) -> str | None:
    """The six averages of each model (``by_model`` rows) on a polar chart, 0 to 1.

    An axis whose metric no model has (no gold citations, no insufficient-context rows) is left
    out; a model without a value on a drawn axis is plotted at 0.0, as the tool averages an
    empty list.
    """
    drawn = [(c, t) for c, t in RADAR_METRICS if _has_any(by_model, [c])]
    if len(drawn) < 3:
        return None
    angles = np.linspace(0, 2 * np.pi, len(drawn), endpoint=False)
    closed = np.concatenate((angles, angles[:1]))
    with style(chart_id):
        fig = Figure(figsize=(WIDTH_IN, 4.6))
        ax = fig.add_subplot(projection="polar")
        for index, record in enumerate(by_model.to_dicts()):
            values = [float(record[c]) if record[c] is not None else 0.0 for c, _ in drawn]
            ring = np.array([*values, values[0]])
            ax.plot(closed, ring, "o-", linewidth=2, color=color(index),
                    label=label(record["model"]))
            ax.fill(closed, ring, alpha=0.15, color=color(index))
        ax.set_xticks(angles, [text for _, text in drawn])
        ax.set_ylim(0, 1)
        ax.set_title("Overall performance profile", loc="left")
        ax.legend()
    return to_svg(fig, chart_id)


def worst_text(chart_id: str, limit: int) -> str:
    """Which rows the per-example plot ``chart_id`` draws, for its caption.

    >>> worst_text("chart-examplecitations", 20)
    'the 20 rows of each model with the lowest citation F1 (ties: lowest overall score)'
    """
    return (f"the {limit:,} rows of each model with the lowest "
            f"{RANKED_BY[WORST_BY[chart_id][0]]} (ties: lowest overall score)")


def six_plots(
    rows: pl.DataFrame, by_model: pl.DataFrame, models: Sequence[str | None],
    limit: int = MAX_EXAMPLES,
) -> list[Plot]:
    """The six figures in the tool's order: (chart id, SVG or None, caption, empty text).

    ``rows`` holds one row per scored row in input order (model, id, noise level and the
    per-row answer, citation and overall scores); ``by_model`` the view of that name. The
    per-example plots (1, 2 and 5, :data:`WORST_BY`) draw at most ``limit`` rows per model.
    """
    labels = ("worst first, labelled by id (with the noise level, @0.4, where an id repeats)")
    answers, citations, heatmap = (worst_text(c, limit) for c in WORST_BY)
    return [
        ("chart-exampleanswers",
         per_example_bars(rows, models, EXAMPLE_METRICS[:2], _ANSWER_COLORS,
                          chart_id="chart-exampleanswers", title="Answer F1 vs Answer EM",
                          by=WORST_BY["chart-exampleanswers"], limit=limit),
         f"1. Answer F1 and exact match per example: {answers}, {labels}. Where F1 is above EM "
         "the answer earns partial credit.", "No answer scores in this run."),
        ("chart-examplecitations",
         per_example_bars(rows, models, EXAMPLE_METRICS[2:], _CITATION_COLORS,
                          chart_id="chart-examplecitations", title="Citation metrics",
                          by=WORST_BY["chart-examplecitations"], limit=limit),
         f"2. Citation precision, recall and F1 per example, over the rows with gold "
         f"citations: {citations}, {labels}.", "No rows with gold citations in this run."),
        ("chart-answerdistribution",
         distribution(rows, models, "answer_f1", "Answer F1",
                      chart_id="chart-answerdistribution"),
         "3. Answer F1 over every row (10 bins, share of each model's rows); dashed lines mark "
         "each model's mean.", "No answer scores in this run."),
        ("chart-citationdistribution",
         distribution(rows, models, "citation_f1", "Citation F1",
                      chart_id="chart-citationdistribution"),
         "4. Citation F1 over every row with gold citations (10 bins, share of each model's "
         "rows); dashed lines mark each model's mean.",
         "No rows with gold citations in this run."),
        ("chart-exampleheatmap",
         example_heatmap(rows, models, chart_id="chart-exampleheatmap",
                         by=WORST_BY["chart-exampleheatmap"], limit=limit),
         f"5. Performance heatmap: the five per-row scores of {heatmap}, {labels}.",
         "No per-row scores to plot."),
        ("chart-radar", radar(by_model, chart_id="chart-radar"),
         "6. Overall performance profile: each model's means over all rows (citation scores "
         "over rows with gold citations, insufficient-context detection over rows whose "
         "reference is the insufficient-context token; a model without such rows is drawn at 0, "
         "an axis no model has is left out).", "Fewer than three of the six averages exist."),
    ]
