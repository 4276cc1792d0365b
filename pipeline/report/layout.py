"""Margins of the report's charts from font metrics, without drawing.

A constrained layout measures a figure by drawing it, so every chart was drawn twice. The SVG
backend measures text with TextToPath (``svg.fonttype: none``), and so does :func:`text_size`:
the margins :func:`fit` sets are those of the saved chart, computed in points before the one
draw. Long labels are shortened (:func:`shorten`) or titles wrapped rather than cut off, and a
figure whose labels need more room than :data:`PANEL_SHARE` leaves grows.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from typing import Literal

import matplotlib as mpl
import numpy as np
from matplotlib.axes import Axes
from matplotlib.axis import Axis, Tick
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties, findfont, get_font
from matplotlib.legend import Legend
from matplotlib.projections.polar import PolarAxes
from matplotlib.textpath import TextToPath
from matplotlib.transforms import ScaledTranslation

#: The report's font (``font.sans-serif`` of the charts' settings).
FONT = ["DejaVu Sans"]
#: Width of every chart in inches.
WIDTH_IN = 9.0

#: Points kept free at the figure's edges.
EDGE_PT = 4.0
#: Points kept free between what two neighbouring panels draw around their boxes.
GAP_PT = 10.0
#: Least share of a figure's width and height left to its panels: a figure whose labels need
#: more room grows (the page scales its SVG to fit, so the text gets smaller, none is cut off).
PANEL_SHARE = 0.4

_TEXT_PATH = TextToPath()
_TITLE_LOCS: tuple[Literal["left", "center", "right"], ...] = ("left", "center", "right")


@functools.cache
def _font(size: float) -> FontProperties:
    return FontProperties(family=FONT, size=size)


@functools.cache
def line_metrics() -> tuple[float, float, float]:
    """Ascent, descent and line gap of the report font per point of size: matplotlib makes no
    line shorter than these (its typographic metrics), and spaces lines by them."""
    font = get_font(findfont(_font(10.0)))
    table, head = font.get_sfnt_table("OS/2"), font.get_sfnt_table("head")
    assert table is not None and head is not None, "the report font has no OS/2 metrics"
    em = float(head["unitsPerEm"])
    return table["sTypoAscender"] / em, -table["sTypoDescender"] / em, table["sTypoLineGap"] / em


@functools.lru_cache(maxsize=4096)
def text_size(text: str, size: float, rotation: float = 0.0) -> tuple[float, float]:
    """Width and height in points of the box matplotlib lays ``text`` out in, in the report font
    at ``size`` points and turned by ``rotation`` degrees (lines split at ``\\n``).

    >>> [round(v, 1) for v in text_size("atlas-7b", 9.0)]
    [36.4, 9.0]
    >>> [round(v, 1) for v in text_size("atlas-7b", 9.0, rotation=90.0)]
    [9.0, 36.4]
    """
    if not text:
        return 0.0, 0.0
    lines = text.split("\n")
    ascent, descent, gap = (m * size for m in line_metrics())
    gap = gap if len(lines) > 1 else 0.0
    width = height = 0.0
    for line in lines:
        w, h, d = (_TEXT_PATH.get_text_width_height_descent(line, _font(size), ismath=False)
                   if line else (0.0, 0.0, 0.0))
        width = max(width, w)
        height += max(h - d, ascent) + max(d, descent) + gap
    cos, sin = abs(np.cos(np.deg2rad(rotation))), abs(np.sin(np.deg2rad(rotation)))
    return float(width * cos + height * sin), float(width * sin + height * cos)


#: Widest row label (points) before it is shortened: half the figure.
ROW_LABEL_PT = WIDTH_IN * 72 / 2


def shorten(text: str, size: float, width: float = ROW_LABEL_PT) -> str:
    """``text``, or its start and end around an ellipsis where it is wider than ``width``
    points at ``size`` points (so a long model or category name cannot squeeze the panel).

    >>> shorten("atlas-7b · Factual", 9.0)
    'atlas-7b · Factual'
    >>> shorten("atlas-7b-instruct-long-context · Factual questions", 9.0, 120.0)
    'atlas-7b-inst…al questions'
    """
    full = text_size(text, size)[0]
    if full <= width:
        return text
    keep = int(len(text) * width / full)
    while keep > 0:
        short = text[:(keep + 1) // 2] + "…" + text[len(text) - keep // 2:]
        if text_size(short, size)[0] <= width:
            return short
        keep -= 1
    return "…"


def _wrap(text: str, size: float, width: float) -> str:
    """``text`` broken into lines no wider than ``width`` points, after a space, hyphen,
    underscore, slash or dot where the line has one, else anywhere; joining the lines gives
    ``text`` back."""
    lines, line = [], ""
    for char in text:
        if line and text_size(line + char, size)[0] > width:
            cut = max(line.rfind(mark) for mark in " -_/.·") + 1 or len(line)
            lines.append(line[:cut])  # a space stays at the end of its line, unseen
            line = line[cut:]
        line += char
    return "\n".join([*lines, line])


def _legend_size(legend: Legend, ncols: int) -> tuple[float, float]:
    """Width and height in points of a frameless ``legend`` with its entries in ``ncols``
    columns (matplotlib's legend box: pads, handle length and spacings in font sizes)."""
    rc = mpl.rcParams
    texts = legend.get_texts()
    if not texts:
        return 0.0, 0.0
    size = texts[0].get_fontsize()
    boxes = [text_size(t.get_text(), size) for t in texts]
    columns = [c for c in np.array_split(np.arange(len(boxes)), ncols) if c.size]
    entry = (rc["legend.handlelength"] + rc["legend.handletextpad"]) * size
    width = sum(entry + max(boxes[i][0] for i in c) for c in columns)
    width += (len(columns) - 1) * rc["legend.columnspacing"] * size
    height = max(sum(boxes[i][1] for i in c) + (c.size - 1) * rc["legend.labelspacing"] * size
                 for c in columns)
    return width + 2 * rc["legend.borderpad"] * size, height + 2 * rc["legend.borderpad"] * size


def _ticks(axis: Axis) -> Iterator[tuple[Tick, float, str]]:
    """The ticks ``axis`` draws, each with its place along the axis (0 to 1) and label text,
    found as :meth:`matplotlib.axis.Axis.draw` finds them."""
    locs = axis.get_majorticklocs()
    texts = axis.get_major_formatter().format_ticks(list(locs))
    start, stop = axis.get_view_interval()
    span = float(stop - start) or 1.0
    for tick, loc, text in zip(axis.get_major_ticks(len(locs)), locs, texts, strict=True):
        place = float(loc - start) / span
        if -1e-9 <= place <= 1 + 1e-9:
            yield tick, place, text


def _label_offset(tick: Tick) -> float:
    """Points from the axis to the tick's label: the tick's length outside plus its pad."""
    return float(tick.get_tick_padding() + tick.get_pad())  # type: ignore[func-returns-value,operator]


def _axis_reach(axis: Axis, length: float, horizontal: bool) -> tuple[float, float, float, float]:
    """How far (points) the tick labels, axis label and offset text of ``axis`` reach out of a
    box ``length`` points along it: below/left, above/right, before its start, past its end."""
    near = far = before = after = 0.0
    for tick, place, text in _ticks(axis):
        out = _label_offset(tick)
        for label, below in ((tick.label1, True), (tick.label2, False)):
            if not label.get_visible():
                continue
            w, h = text_size(text, label.get_fontsize(), label.get_rotation())
            across, along = (h, w) if horizontal else (w, h)
            shift = {"left": 0.0, "right": along}.get(label.get_horizontalalignment(), along / 2)
            start = place * length - (shift if horizontal else along / 2)
            before, after = max(before, -start), max(after, start + along - length)
            if below:
                near = max(near, out + across)
            else:
                far = max(far, out + across)
    offset = axis.get_major_formatter().get_offset()
    if offset:
        _, h = text_size(offset, axis.offsetText.get_fontsize())
        if horizontal:
            near += axis.OFFSETTEXTPAD + h
        else:
            after = max(after, axis.OFFSETTEXTPAD + h)
    label = axis.label
    if label.get_visible() and label.get_text():
        _, h = text_size(label.get_text(), label.get_fontsize())
        if axis.get_label_position() in ("bottom", "left"):
            near += axis.labelpad + h
        else:
            far += axis.labelpad + h
    return near, far, before, after


def _theta_reach(ax: PolarAxes, side: float) -> np.ndarray:
    """How far (points) the angle labels of a polar ``ax`` reach out of its square box of
    ``side`` points: left, right, bottom, top. matplotlib centres each label a tick pad plus
    7 points outside the circle."""
    reach = np.zeros(4)
    for tick, _, text in _ticks(ax.xaxis):
        if not tick.label1.get_visible():
            continue
        w, h = text_size(text, tick.label1.get_fontsize())
        angle = tick.get_loc() * ax.get_theta_direction() + ax.get_theta_offset()
        distance = side / 2 + _label_offset(tick) + 7.0
        x, y = distance * np.cos(angle), distance * np.sin(angle)
        reach = np.maximum(reach, [w / 2 - x, x + w / 2, h / 2 - y, y + h / 2])
    return np.maximum(reach - side / 2, 0.0)


def _reach(ax: Axes, width: float, height: float) -> np.ndarray:
    """How far (points) what ``ax`` draws around its box of ``width`` × ``height`` points
    reaches out of it: left, right, bottom, top.

    It also places what depends on the box: a title wider than the box is wrapped onto more
    lines (one of one line), a polar title is lifted above the angle labels, and the legend
    goes right of everything else, from the top of the box.
    """
    pad = mpl.rcParams["axes.titlepad"]
    if isinstance(ax, PolarAxes):
        reach = _theta_reach(ax, width)
        pad += reach[3]  # the title goes above the angle labels
    else:
        below, above, before, after = _axis_reach(ax.xaxis, width, horizontal=True)
        left, right, under, over = _axis_reach(ax.yaxis, height, horizontal=False)
        reach = np.array([max(left, before), max(right, after), max(below, under),
                          max(above, over)])
    for loc in _TITLE_LOCS:
        title = ax.get_title(loc)
        if not title:
            continue
        size = float(ax.title.get_fontsize())
        if text_size(title, size)[0] > width:
            title = _wrap(title.replace("\n", ""), size, width)
        if title != ax.get_title(loc) or pad != mpl.rcParams["axes.titlepad"]:
            ax.set_title(title, loc=loc, pad=pad)
        reach[3] = max(reach[3], pad + text_size(title, size)[1])
    legend = ax.get_legend()
    fig = ax.get_figure(root=True)
    if legend is not None and legend.get_texts() and fig is not None:
        legend_w, legend_h = _legend_size(legend, 1)
        inset = mpl.rcParams["legend.borderaxespad"] * legend.get_texts()[0].get_fontsize()
        legend.set_loc("upper left")
        legend.set_bbox_to_anchor((1.0, 1.0), transform=ax.transAxes + ScaledTranslation(
            reach[1] / 72, 0.0, fig.dpi_scale_trans))
        reach[1] += inset + legend_w
        reach[2] = max(reach[2], inset + legend_h - height)
    return reach


def _needs(fig: Figure, panels: Sequence[Axes], floor: float) -> np.ndarray:
    """Points ``fig`` needs, with its panels where they are now: left, right, bottom and top
    margins, then the gap between columns and between rows of its grid. ``floor`` is the
    height of a figure legend under the panels."""
    grid = panels[0].get_gridspec()
    assert grid is not None
    nrows, ncols = grid.get_geometry()
    fig_w, fig_h = (float(v) * 72 for v in fig.get_size_inches())
    outer = np.zeros(4)  # reach out of the outer cells: left, right, bottom, top
    col_after, col_before = np.zeros(ncols), np.zeros(ncols)  # out of inner cell sides
    row_below, row_above = np.zeros(nrows), np.zeros(nrows)
    for ax in panels:
        spec = ax.get_subplotspec()
        assert spec is not None
        cell, box = spec.get_position(fig), ax.get_position()  # box: aspect applied (polar)
        slack = np.array([box.x0 - cell.x0, cell.x1 - box.x1, box.y0 - cell.y0,
                          cell.y1 - box.y1]) * [fig_w, fig_w, fig_h, fig_h]
        left, right, bottom, top = np.maximum(
            _reach(ax, box.width * fig_w, box.height * fig_h) - slack, 0.0)
        cols, rows = spec.colspan, spec.rowspan
        if cols.start == 0:
            outer[0] = max(outer[0], left)
        else:
            col_before[cols.start] = max(col_before[cols.start], left)
        if cols.stop == ncols:
            outer[1] = max(outer[1], right)
        else:
            col_after[cols.stop - 1] = max(col_after[cols.stop - 1], right)
        if rows.stop == nrows:
            outer[2] = max(outer[2], bottom)
        else:
            row_below[rows.stop - 1] = max(row_below[rows.stop - 1], bottom)
        if rows.start == 0:
            outer[3] = max(outer[3], top)
        else:
            row_above[rows.start] = max(row_above[rows.start], top)
    outer += EDGE_PT
    outer[2] += floor + (GAP_PT if floor else 0.0)
    return np.array([*outer, GAP_PT + max(col_after[:-1] + col_before[1:], default=0.0),
                     GAP_PT + max(row_below[:-1] + row_above[1:], default=0.0)])


def fit(fig: Figure) -> None:
    """Set the margins and gaps of ``fig``'s grid of panels so that what each panel draws
    around its box (tick labels, axis labels, titles, a legend, a colour bar's labels) fits in
    the figure and clears its neighbours, from font metrics, without drawing.

    Every visible Axes must be a subplot of one grid (a colour bar too, e.g. in a column of its
    own). An Axes legend is placed right of its panel, from the top; a figure legend must be
    one row at the bottom (``loc="lower center"``, ``ncols`` its number of entries). Where
    the labels would leave the panels less than :data:`PANEL_SHARE` of the figure, the figure
    grows.
    """
    panels = [ax for ax in fig.axes if ax.get_visible()]
    if not panels or any(ax.get_subplotspec() is None for ax in panels):
        raise ValueError("fit lays out subplots of one grid only")
    grid = panels[0].get_gridspec()
    assert grid is not None
    nrows, ncols = grid.get_geometry()
    fig_w, fig_h = (float(v) * 72 for v in fig.get_size_inches())
    floor = 0.0
    for legend in fig.legends:
        texts = legend.get_texts()
        if texts:
            inset = mpl.rcParams["legend.borderaxespad"] * texts[0].get_fontsize()
            floor = max(floor, inset + _legend_size(legend, len(texts))[1])
    applied: np.ndarray | None = None
    # Moving the panels changes a little what they need (where the tick labels at the ends of
    # an axis fall, how a title wraps, the slack around a polar panel): stop once it is stable.
    for _ in range(6):
        needs = _needs(fig, panels, floor)
        if applied is not None and np.abs(needs - applied).max() < 0.5:
            break
        applied = needs
        left, right, bottom, top, col_gap, row_gap = needs
        around_w = left + right + col_gap * (ncols - 1)
        around_h = bottom + top + row_gap * (nrows - 1)
        if around_w > (1 - PANEL_SHARE) * fig_w or around_h > (1 - PANEL_SHARE) * fig_h:
            fig_w = max(fig_w, around_w / (1 - PANEL_SHARE))
            fig_h = max(fig_h, around_h / (1 - PANEL_SHARE))
            fig.set_size_inches(fig_w / 72, fig_h / 72)
        inner_w, inner_h = fig_w - left - right, fig_h - bottom - top
        fig.subplots_adjust(
            left=left / fig_w, right=1 - right / fig_w, bottom=bottom / fig_h, top=1 - top / fig_h,
            # a gap is a share of the mean panel size, as GridSpec takes it
            wspace=col_gap * ncols / (inner_w - col_gap * (ncols - 1)),
            hspace=row_gap * nrows / (inner_h - row_gap * (nrows - 1)),
        )
