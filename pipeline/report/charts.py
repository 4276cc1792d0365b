"""Charts of the HTML report: matplotlib figures rendered to inline SVG markup.

Each chart is a function of small polars frames (one row per model, or per model and slice)
that returns the ``<svg>`` element as a string, or ``None`` when the run has nothing to plot.
Figures are built on :class:`matplotlib.figure.Figure` directly (no pyplot state) under
:data:`RC`:

* ``svg.fonttype: none`` keeps labels as ``<text>``: the file stays small, and matplotlib
  XML-escapes the text, so a model or category name cannot inject markup;
* ``text.parse_math: False``, so a ``$`` in a name is a dollar sign, not mathtext;
* ``svg.hashsalt`` is fixed per chart and the metadata (date, creator) is dropped, so the same
  run gives the same bytes, and clip-path ids differ between the charts of one page.

A chart is drawn once: :func:`to_svg` sets its margins with
:func:`~pipeline.report.layout.fit`, from the font metrics of what sits around each panel, where
a constrained layout would draw it a second time to measure. Bars are one patch per series
(:func:`bars`) and a heatmap's values one artist (:func:`cell_values`), not an artist per bar or
per cell.

A column ``NAME_lo``/``NAME_hi`` beside a metric column ``NAME`` is its 95% interval, drawn as
an error bar or band where present (see :mod:`pipeline.report.data`).
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl
from matplotlib import rc_context
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backend_bases import RendererBase
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.patches import PathPatch
from matplotlib.path import Path
from matplotlib.typing import RcKeyType

from pipeline.report.layout import FONT, WIDTH_IN, fit, line_metrics, shorten, text_size

#: Okabe–Ito colours (distinguishable with the common colour-vision deficiencies), by model order.
PALETTE = (
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000",
)
#: matplotlib settings every chart is drawn and saved under.
RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "text.parse_math": False,
    "font.family": "sans-serif",
    "font.sans-serif": FONT,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.titley": 1.0,  # fixed: matplotlib does not measure tick labels to place titles
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "axes.axisbelow": True,
    "grid.alpha": 0.3,
    "legend.frameon": False,
    "legend.fontsize": 8,
}
#: Shown for a null model, category or failure mode.
NULL_LABEL = "(none)"

_XML_PROLOGUE = re.compile(r"^.*?(?=<svg\b)", re.DOTALL)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)
_SIZE = re.compile(r'(<svg\b[^>]*?)\s(width|height)="[^"]*"')


def label(value: object) -> str:
    """The display text of a key value (``None`` → :data:`NULL_LABEL`).

    >>> label(None), label("atlas-7b"), label(0.2)
    ('(none)', 'atlas-7b', '0.2')
    """
    return NULL_LABEL if value is None else str(value)


def pair_labels(frame: pl.DataFrame, first: str, second: str) -> list[str]:
    """``"first · second"`` per row, nulls shown as :data:`NULL_LABEL`."""
    parts = [pl.col(c).cast(pl.String).fill_null(NULL_LABEL) for c in (first, second)]
    return frame.select(pl.concat_str(parts, separator=" · ")).to_series().to_list()


def color(index: int) -> str:
    """The colour of the ``index``-th model."""
    return PALETTE[index % len(PALETTE)]


@contextlib.contextmanager
def style(chart_id: str) -> Iterator[None]:
    """The settings a chart is built and saved under: :data:`RC` and its own SVG hash salt."""
    settings: dict[RcKeyType, Any] = {**RC, "svg.hashsalt": f"rag-eval-report:{chart_id}"}
    with rc_context(settings):
        yield


def to_svg(fig: Figure, chart_id: str) -> str:
    """``fig`` laid out by :func:`fit` and drawn as an ``<svg>`` element to inline in HTML: no
    prologue, metadata or fixed size.

    The size attributes go (the ``viewBox`` stays), so the page's CSS scales the chart.
    """
    buffer = io.StringIO()
    with style(chart_id):
        fit(fig)
        fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    svg = _METADATA.sub("", _XML_PROLOGUE.sub("", buffer.getvalue(), count=1), count=1)
    svg = _SIZE.sub(r"\1", _SIZE.sub(r"\1", svg, count=1), count=1)
    return svg.replace("<svg ", f'<svg id="{chart_id}-svg" role="img" ', 1).strip()


# --- layout: margins from font metrics, without drawing ----------------------------------------
def _finish(ax: Axes, title: str, ylabel: str | None = None) -> None:
    ax.set_title(title, loc="left")
    if ylabel is not None:
        ax.set_ylabel(ylabel)


def _values(frame: pl.DataFrame, column: str) -> np.ndarray:
    """``column`` as floats with NaN for nulls (a missing column is all NaN)."""
    if column not in frame.columns:
        return np.full(frame.height, np.nan)
    return frame[column].cast(pl.Float64).fill_null(np.nan).to_numpy()


def _has_values(frame: pl.DataFrame, columns: Sequence[str]) -> bool:
    present = [c for c in columns if c in frame.columns]
    return frame.height > 0 and any(frame[c].drop_nulls().len() > 0 for c in present)


def _error(frame: pl.DataFrame, column: str) -> np.ndarray | None:
    """Asymmetric error-bar lengths from ``column_lo``/``column_hi``, or None without them."""
    if f"{column}_lo" not in frame.columns:
        return None
    mid, lo, hi = (_values(frame, c) for c in (column, f"{column}_lo", f"{column}_hi"))
    if np.all(np.isnan(lo)):
        return None
    return np.nan_to_num(np.vstack([mid - lo, hi - mid]), nan=0.0).clip(min=0.0)


def bars(ax: Axes, centre: np.ndarray, length: np.ndarray, thickness: float, *,
          start: np.ndarray | float = 0.0, horizontal: bool = False, **props: Any) -> None:
    """Bars as one patch (one SVG path) where ``ax.bar`` makes a patch per bar: bar ``k`` is
    ``thickness`` wide around ``centre[k]`` and runs from ``start`` to ``start + length[k]``, up
    (right when ``horizontal``). ``props`` go to the patch. The data limits take in every bar,
    as ``ax.bar``'s do; bars of length 0 are not drawn."""
    low = np.broadcast_to(start, length.shape)
    high = low + length
    near, far = centre - thickness / 2, centre + thickness / 2
    across = np.stack([near, near, far, far, near], axis=1)
    along = np.stack([low, high, high, low, low], axis=1)
    corners = np.stack([along, across] if horizontal else [across, along], axis=-1)
    drawn = length != 0
    codes = [Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY]
    path = Path(corners[drawn].reshape(-1, 2), np.tile(codes, int(drawn.sum())))
    ax.add_artist(PathPatch(path, linewidth=0, **props))
    if length.size:
        ax.update_datalim(corners.reshape(-1, 2))
        ax.autoscale_view()


class _CellValues(Artist):
    """Texts centred on points of an Axes (in data coordinates), drawn by one artist: a Text
    artist per heatmap cell is laid out on its own, which took most of a heatmap's time."""

    def __init__(self, xy: np.ndarray, texts: Sequence[str], colours: Sequence[str],
                 size: float) -> None:
        super().__init__()
        self._xy, self._texts, self._colours, self._size = xy, texts, colours, size
        self.set_zorder(3)  # over the image, as a Text is

    def draw(self, renderer: RendererBase) -> None:
        fig = self.get_figure(root=True)
        if not self.get_visible() or self.axes is None or fig is None:
            return
        renderer.open_group("cell-values", self.get_gid())
        pixels = fig.dpi / 72  # per point
        # centred like a Text with va="center": the baseline half an ascent minus a descent
        # below the centre (the font's line metrics, which digits do not exceed)
        ascent, descent, _ = line_metrics()
        lift = (ascent - descent) * self._size / 2 * pixels
        canvas_h = renderer.get_canvas_width_height()[1]
        prop = FontProperties(family=RC["font.family"], size=self._size)
        gc = renderer.new_gc()
        points = self.axes.transData.transform(self._xy)
        for (x, y), text, colour in zip(points, self._texts, self._colours, strict=True):
            half = text_size(text, self._size)[0] / 2 * pixels
            gc.set_foreground(colour)
            renderer.draw_text(gc, x - half, canvas_h - (y - lift), text, prop, 0.0)
        gc.restore()
        renderer.close_group("cell-values")
        self.stale = False


def cell_values(ax: Axes, grid: np.ndarray, *, size: float,
                white_upto: float | None = None) -> None:
    """Write each known value of ``grid`` (rows × columns, as ``ax.imshow`` shows it) on its
    cell with two decimals in ``size``-point type: black, or white for values up to
    ``white_upto`` (the dark end of a colour map)."""
    rows, cols = np.nonzero(~np.isnan(grid))
    values = grid[rows, cols]
    colours = ["white" if white_upto is not None and v <= white_upto else "black"
               for v in values]
    ax.add_artist(_CellValues(np.column_stack([cols, rows]), [f"{v:.2f}" for v in values],
                              colours, size))


def grouped_bars(
    frame: pl.DataFrame,
    columns: Sequence[str],
    names: Sequence[str],
    *,
    chart_id: str,
    title: str,
    ylabel: str,
    ymax: float = 1.0,
) -> str | None:
    """One group of bars per model (``frame`` has one row per model), one bar per column.

    Error bars where the frame holds ``column_lo``/``column_hi``.
    """
    if not _has_values(frame, columns):
        return None
    models = [label(m) for m in frame["model"].to_list()]
    x = np.arange(len(models))
    width = 0.8 / len(columns)
    # names wider than their share of the panel (some 0.7 of the figure) are turned
    turn = max(text_size(m, RC["font.size"])[0] for m in models) > (
        0.7 * WIDTH_IN * 72 / len(models))
    with style(chart_id):
        fig = Figure(figsize=(WIDTH_IN, 3.4))
        ax = fig.add_subplot()
        for k, column in enumerate(columns):
            offset = x - 0.4 + width * (k + 0.5)
            heights = np.nan_to_num(_values(frame, column))
            bars(ax, offset, heights, width, color=color(k), label=names[k])
            spread = _error(frame, column)
            if spread is not None:
                ax.errorbar(offset, heights, yerr=spread, fmt="none", ecolor="#333333",
                            elinewidth=1, capsize=3)
        ax.set_xticks(x, models, rotation=30 if turn else 0, ha="right" if turn else "center")
        ax.set_ylim(0, ymax)
        ax.legend()
        _finish(ax, title, ylabel)
    return to_svg(fig, chart_id)


def histograms(
    rows: pl.DataFrame,
    columns: Sequence[str],
    names: Sequence[str],
    models: Sequence[str | None],
    *,
    chart_id: str,
) -> str | None:
    """Per-row score distributions: one panel per column, one step histogram per model.

    Bars are shares of the model's non-null rows, so models with different sizes compare.
    """
    present = [c for c in columns if _has_values(rows, [c])]
    if not present:
        return None
    bins = np.linspace(0.0, 1.0, 21)
    with style(chart_id):
        fig = Figure(figsize=(WIDTH_IN, 3.2))
        axes = fig.subplots(1, len(present), squeeze=False)[0]
        for panel, column in enumerate(present):
            ax = axes[panel]
            for index, model in enumerate(models):
                values = rows.filter(pl.col("model").eq_missing(model))[column].drop_nulls()
                if values.len() == 0:
                    continue
                weights = np.full(values.len(), 1.0 / values.len())
                ax.hist(values.to_numpy(), bins=bins, weights=weights, histtype="step",
                        linewidth=1.6, color=color(index), label=label(model))
            ax.set_xlim(0, 1)
            _finish(ax, names[columns.index(column)], "share of rows" if panel == 0 else None)
        axes[-1].legend()
    return to_svg(fig, chart_id)


def heatmap(
    frame: pl.DataFrame, columns: Sequence[str], names: Sequence[str], *, chart_id: str
) -> str | None:
    """Rows model · category, one column per metric (all in [0, 1]), values written in."""
    present = [k for k, c in enumerate(columns) if _has_values(frame, [c])]
    if not present:
        return None
    rows = [shorten(r, RC["font.size"]) for r in pair_labels(frame, "model", "category")]
    grid = np.column_stack([_values(frame, columns[k]) for k in present])
    with style(chart_id):
        fig = Figure(figsize=(WIDTH_IN, 1.2 + 0.28 * len(rows)))
        ax, bar = fig.subplots(1, 2, width_ratios=(1.0, 0.025))
        ax.grid(False)
        ax.tick_params(length=0, bottom=False, left=False)  # before any tick exists
        image = ax.imshow(np.ma.masked_invalid(grid), aspect="auto", cmap="viridis",
                          vmin=0.0, vmax=1.0)
        ax.set_xticks(np.arange(len(present)), [names[k] for k in present], rotation=30,
                      ha="right")
        ax.set_yticks(np.arange(len(rows)), rows)
        for spine in ax.spines.values():
            spine.set_visible(False)
        cell_values(ax, grid, size=7, white_upto=0.6)
        fig.colorbar(image, cax=bar)
    return to_svg(fig, chart_id)


def _band(ax: Axes, x: np.ndarray, y: np.ndarray, lo: np.ndarray, hi: np.ndarray,
          colour: str) -> None:
    """The interval at every point (``x`` ascending) that has one: a band between neighbouring
    points that both have one (never across a point without), an error bar at a point whose
    neighbours have none (a band of one point would have no width)."""
    known = ~np.isnan(lo) & ~np.isnan(hi) & ~np.isnan(y)
    if not known.any():
        return
    ax.fill_between(x, np.where(known, lo, np.nan), np.where(known, hi, np.nan), color=colour,
                    alpha=0.15, linewidth=0)
    before = np.concatenate([[False], known[:-1]])
    after = np.concatenate([known[1:], [False]])
    alone = known & ~before & ~after
    if alone.any():
        spread = np.vstack([y[alone] - lo[alone], hi[alone] - y[alone]]).clip(min=0.0)
        ax.errorbar(x[alone], y[alone], yerr=spread, fmt="none", ecolor=colour, elinewidth=1,
                    capsize=3, alpha=0.7)


def _curve_panel(
    ax: Axes, frame: pl.DataFrame, column: str, models: Sequence[str | None], title: str,
    ylabel: str, ymax: float,
) -> None:
    for index, model in enumerate(models):
        part = frame.filter(pl.col("model").eq_missing(model) & pl.col("noise_level").is_not_null()
                            & pl.col(column).is_not_null()).sort("noise_level")
        if part.height == 0:
            continue
        x, y = _values(part, "noise_level"), _values(part, column)
        ax.plot(x, y, marker="o", color=color(index), label=label(model))
        if f"{column}_lo" in part.columns:
            _band(ax, x, y, _values(part, f"{column}_lo"), _values(part, f"{column}_hi"),
                  color(index))
    ax.set_ylim(0, ymax)
    ax.set_xlabel("noise level (share of noisy passages)")
    _finish(ax, title, ylabel)


def noise_curves(
    rgb: pl.DataFrame, f1: pl.DataFrame, models: Sequence[str | None], *, chart_id: str
) -> str | None:
    """RGB accuracy (%) and answer F1 against noise level, one line per model, CI bands.

    A panel is drawn for each frame with at least one known noise level.
    """
    panels = []
    if _has_values(rgb.filter(pl.col("noise_level").is_not_null()), ["accuracy"]):
        panels.append((rgb, "accuracy", "RGB noise robustness: accuracy", "accuracy (%)", 100.0))
    if _has_values(f1.filter(pl.col("noise_level").is_not_null()), ["answer_f1"]):
        panels.append((f1, "answer_f1", "Answer F1 by noise level", "answer F1", 1.0))
    if not panels:
        return None
    with style(chart_id):
        fig = Figure(figsize=(WIDTH_IN, 3.4))
        axes = fig.subplots(1, len(panels), squeeze=False)[0]
        for k, (frame, column, title, ylabel, ymax) in enumerate(panels):
            _curve_panel(axes[k], frame, column, models, title, ylabel, ymax)
        axes[-1].legend()
    return to_svg(fig, chart_id)


def _scatter_panel(
    ax: Axes, by_model: pl.DataFrame, by_model_category: pl.DataFrame, x: str, y: str,
    models: Sequence[str | None],
) -> None:
    for index, model in enumerate(models):
        part = by_model_category.filter(pl.col("model").eq_missing(model))
        ax.scatter(_values(part, x), _values(part, y), s=14, alpha=0.45, color=color(index),
                   linewidths=0)
        row = by_model.filter(pl.col("model").eq_missing(model))
        ax.scatter(_values(row, x), _values(row, y), s=70, color=color(index),
                   edgecolors="black", linewidths=0.8, label=label(model), zorder=3)


def quadrant(
    by_model: pl.DataFrame, by_model_category: pl.DataFrame, models: Sequence[str | None],
    thresholds: Mapping[str, float], *, chart_id: str,
) -> str | None:
    """Faithfulness and overlap against answer F1: large points per model, small per category.

    ``thresholds`` maps an axis column (``faithfulness``, ``overlap``, ``answer_f1``) to the
    value where a dashed line splits the panel into grounded/ungrounded × correct/wrong; the
    report passes those of the ``paired_analysis`` view. An axis without one gets no line.
    """
    panels = [c for c in ("faithfulness", "overlap") if _has_values(by_model, [c])]
    if not panels or not _has_values(by_model, ["answer_f1"]):
        return None
    with style(chart_id):
        fig = Figure(figsize=(WIDTH_IN, 3.8))
        axes = fig.subplots(1, len(panels), squeeze=False)[0]
        for k, x in enumerate(panels):
            ax = axes[k]
            _scatter_panel(ax, by_model, by_model_category, x, "answer_f1", models)
            if x in thresholds:
                ax.axvline(thresholds[x], color="#888888", linestyle="--", linewidth=0.8)
            if "answer_f1" in thresholds:
                ax.axhline(thresholds["answer_f1"], color="#888888", linestyle="--",
                           linewidth=0.8)
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1)
            ax.set_xlabel(x)
            _finish(ax, f"{x.capitalize()} vs answer F1", "answer F1" if k == 0 else None)
        axes[-1].legend()
    return to_svg(fig, chart_id)


def cost_vs_abstain(
    by_model: pl.DataFrame, by_model_category: pl.DataFrame, models: Sequence[str | None], *,
    chart_id: str,
) -> str | None:
    """Mean total tokens and p50 latency against abstain rate (per model and per category)."""
    panels = [(c, n) for c, n in (("mean_total_tokens", "mean total tokens"),
                                  ("p50_latency_ms", "p50 latency (ms)"))
              if _has_values(by_model, [c])]
    if not panels or not _has_values(by_model, ["abstain_rate"]):
        return None
    with style(chart_id):
        fig = Figure(figsize=(WIDTH_IN, 3.4))
        axes = fig.subplots(1, len(panels), squeeze=False)[0]
        for k, (x, name) in enumerate(panels):
            ax = axes[k]
            _scatter_panel(ax, by_model, by_model_category, x, "abstain_rate", models)
            ax.set_ylim(-0.03, 1.03)
            ax.set_xlabel(name)
            _finish(ax, f"{name.capitalize()} vs abstain rate",
                    "abstain rate" if k == 0 else None)
        axes[-1].legend()
    return to_svg(fig, chart_id)


def category_profile(
    by_category: pl.DataFrame, columns: Sequence[str], names: Sequence[str],
    models: Sequence[str | None], *, chart_id: str,
) -> str | None:
    """One panel per model: the composite scores (grouped bars) in each scoring category."""
    if not _has_values(by_category, columns):
        return None
    ncols = min(3, len(models))
    nrows = -(-len(models) // ncols)
    with style(chart_id):
        fig = Figure(figsize=(WIDTH_IN, 0.4 + 2.8 * nrows))
        axes = fig.subplots(nrows, ncols, squeeze=False, sharey=True).ravel()
        for index, model in enumerate(models):
            ax = axes[index]
            part = by_category.filter(pl.col("model").eq_missing(model))
            categories = [label(c) for c in part["scoring_category"].to_list()]
            x = np.arange(len(categories))
            width = 0.8 / len(columns)
            for k, column in enumerate(columns):
                bars(ax, x - 0.4 + width * (k + 0.5), np.nan_to_num(_values(part, column)),
                      width, color=color(k), label=names[k])
            ax.set_xticks(x, categories, rotation=35, ha="right", fontsize=7)
            ax.set_ylim(0, 1)
            _finish(ax, label(model))
        for ax in axes[len(models):]:
            ax.set_visible(False)
        fig.legend(*axes[0].get_legend_handles_labels(), loc="lower center",
                   ncols=len(columns))
    return to_svg(fig, chart_id)


def failure_modes(frame: pl.DataFrame, *, chart_id: str) -> str | None:
    """Stacked horizontal bars: the share of each primary failure mode per model · category.

    ``frame`` is the ``failure_modes`` view; ``pass`` is drawn first, the other modes by their
    total count (most frequent first).
    """
    if frame.height == 0:
        return None
    frame = frame.with_columns(pl.col("primary_failure_mode").fill_null(NULL_LABEL))
    totals = frame.group_by("primary_failure_mode").agg(pl.col("n").sum()).sort(
        pl.col("primary_failure_mode") != "pass", -pl.col("n"), "primary_failure_mode"
    )
    modes = totals["primary_failure_mode"].to_list()
    groups = frame.select("model", "scoring_category").unique().sort(
        "model", "scoring_category", nulls_last=True
    )
    rows = [shorten(r, RC["font.size"]) for r in pair_labels(groups, "model", "scoring_category")]
    wide = groups.join(
        frame.pivot("primary_failure_mode", index=["model", "scoring_category"], values="share"),
        on=["model", "scoring_category"], how="left", nulls_equal=True, maintain_order="left",
    )
    y = np.arange(len(rows))
    left = np.zeros(len(rows))
    colors = ["#009E73", *(c for c in PALETTE if c != "#009E73")]
    with style(chart_id):
        fig = Figure(figsize=(WIDTH_IN, 1.0 + 0.26 * len(rows)))
        ax = fig.add_subplot()
        for k, mode in enumerate(modes):
            share = np.nan_to_num(_values(wide, mode))
            bars(ax, y, share, 0.8, start=left, horizontal=True, color=colors[k % len(colors)],
                  label=mode)
            left += share
        ax.set_yticks(y, rows)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of rows")
        ax.legend()
        _finish(ax, "Primary failure mode")
    return to_svg(fig, chart_id)


#: Slices one run-comparison chart shows at most ("all" and those with the largest changes).
MAX_SLICES = 30


def _slice_order(frame: pl.DataFrame, max_slices: int) -> pl.DataFrame:
    """The distinct (slice, slice_label) of ``frame``: ``all`` first, then by slice and label;
    beyond ``max_slices`` only ``all`` and the slices with the largest absolute change."""
    keys = frame.group_by("slice", "slice_label").agg(
        pl.col("delta").cast(pl.Float64).abs().max().alias("_size")
    )
    if keys.height > max_slices:
        keys = keys.sort(pl.col("slice") != "all", -pl.col("_size"), "slice", "slice_label",
                         nulls_last=True).head(max_slices)
    return keys.sort(pl.col("slice") != "all", "slice", "slice_label", nulls_last=True).drop(
        "_size"
    )


def slice_deltas(
    frame: pl.DataFrame, metrics: Sequence[str], models: Sequence[str | None], *, chart_id: str,
    max_slices: int = MAX_SLICES,
) -> str | None:
    """One panel per metric: the change (``delta``) per slice and model with its interval.

    ``frame`` has model, metric, slice, slice_label (its text, e.g. ``category = Factual``),
    delta, ci_low, ci_high (a run diff). Rows
    are slices (``all`` on top), one marker per model (coloured by its place in ``models``, as
    in the other charts), filled where the interval excludes 0; a line marks no change.
    """
    part = frame.filter(pl.col("metric").is_in(list(metrics)) & pl.col("delta").is_not_null())
    present = [m for m in metrics if m in set(part["metric"].to_list())]
    if not present:
        return None
    keys = _slice_order(part, max_slices)
    labels = [shorten(label(text), RC["font.size"]) for text in keys["slice_label"].to_list()]
    rows = keys.with_row_index("_y")
    step = 0.7 / max(len(models), 1)
    with style(chart_id):
        fig = Figure(figsize=(WIDTH_IN, 1.1 + 0.24 * len(labels)))
        axes = fig.subplots(1, len(present), squeeze=False, sharey=True)[0]
        for k, metric in enumerate(present):
            ax = axes[k]
            ax.axvline(0.0, color="#555555", linewidth=0.8)
            for index, model in enumerate(models):
                points = part.filter(
                    (pl.col("metric") == metric) & pl.col("model").eq_missing(model)
                ).join(rows, on=["slice", "slice_label"], how="inner", nulls_equal=True)
                if points.height == 0:
                    continue
                y = _values(points, "_y") - 0.35 + step * (index + 0.5)
                mid = _values(points, "delta")
                lo, hi = _values(points, "ci_low"), _values(points, "ci_high")
                spread = np.nan_to_num(np.vstack([mid - lo, hi - mid]), nan=0.0).clip(min=0.0)
                excludes = (lo > 0) | (hi < 0)
                for filled in (True, False):
                    pick = excludes == filled
                    if not pick.any():
                        continue
                    ax.errorbar(mid[pick], y[pick], xerr=spread[:, pick], fmt="o", ms=4,
                                color=color(index), mfc=color(index) if filled else "white",
                                elinewidth=1, capsize=2)
            ax.set_yticks(np.arange(len(labels)), labels)
            ax.set_ylim(len(labels) - 0.5, -0.5)
            ax.grid(axis="y", visible=False)
            ax.set_xlabel("B − A")
            _finish(ax, metric)
        drawn = set(part["model"].to_list())
        shown = [(index, model) for index, model in enumerate(models) if model in drawn]
        handles = [Line2D([], [], marker="o", linestyle="none", color=color(index))
                   for index, _ in shown]
        axes[-1].legend(handles, [label(m) for _, m in shown])
    return to_svg(fig, chart_id)
