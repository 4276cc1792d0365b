"""The report's charts are laid out without drawing (`pipeline.report.layout.fit`): nothing they
draw is cut off by the figure's edge or overlaps anything else, long names included.

Each chart is drawn once more here with the SVG backend's renderer at its 72 dpi, and what
matplotlib then reports as drawn is checked: every panel (with its tick labels, axis labels,
title and legend) and every figure legend inside the figure and clear of each other, a panel's
legend and titles clear of its own box and labels, unrotated tick labels clear of their
neighbours.
"""

from __future__ import annotations

import io
import itertools
from collections.abc import Callable, Iterator

import numpy as np
import polars as pl
import pytest
from matplotlib.axes import Axes
from matplotlib.backends.backend_svg import RendererSVG
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from pipeline.report import charts, hotpot_charts, layout

LONG_MODEL = "atlas-7b-instruct-v2.1-long-context-experimental-finetune"
LONG_CATEGORY = "Factual questions with multi-hop reasoning over long documents"
MODELS = (LONG_MODEL, "<script>alert(1)</script>", "c", None, "model-with-a-rather-long-name")


def _panel_texts(ax: Axes) -> Iterator[Text]:
    """The tick labels ``ax`` draws, its axis labels and its titles."""
    for axis in (ax.xaxis, ax.yaxis):
        start, stop = sorted(axis.get_view_interval())
        for tick in axis.get_major_ticks(len(axis.get_majorticklocs())):
            if start - 1e-9 <= tick.get_loc() <= stop + 1e-9 or ax.name == "polar":
                yield from (t for t in (tick.label1, tick.label2) if t.get_visible())
        yield axis.label
    titles = {ax.get_title(loc) for loc in ("left", "center", "right")} - {""}
    yield from (c for c in ax.get_children() if isinstance(c, Text) and c.get_text() in titles)


def layout_problems(chart_id: str, fig: Figure) -> list[str]:
    """What of ``fig`` is cut off or overlaps something, drawn as the report's SVG is."""
    problems = []
    with charts.style(chart_id):
        fig.set_dpi(72)
        width, height = fig.get_size_inches() * 72
        renderer = RendererSVG(width, height, io.StringIO())
        fig.draw(renderer)
        page = fig.bbox.padded(0.5)

        def box(text: Text) -> Bbox | None:
            return text.get_window_extent(renderer) if text.get_text() else None

        parts = [(f"panel {k}", ax.get_tightbbox(renderer)) for k, ax in enumerate(fig.axes)
                 if ax.get_visible()]
        parts += [(f"figure legend {k}", legend.get_window_extent(renderer))
                  for k, legend in enumerate(fig.legends)]
        for name, extent in parts:
            assert extent is not None
            if not (page.x0 <= extent.x0 and extent.x1 <= page.x1 and page.y0 <= extent.y0
                    and extent.y1 <= page.y1):
                problems.append(f"{chart_id}: {name} is cut off: {extent} not in {page}")
        for (name_a, a), (name_b, b) in itertools.combinations(parts, 2):
            if a is not None and b is not None and a.overlaps(b):
                problems.append(f"{chart_id}: {name_a} overlaps {name_b}")
        for k, ax in enumerate(fig.axes):
            if not ax.get_visible():
                continue
            texts = [(t.get_text(), b) for t in _panel_texts(ax) if (b := box(t)) is not None]
            legend = ax.get_legend()
            if legend is not None:
                extent = legend.get_window_extent(renderer)
                for text, b in [("the panel", ax.bbox), *texts]:
                    if extent.overlaps(b):
                        problems.append(f"{chart_id}: panel {k}: legend overlaps {text!r}")
            titles = {ax.get_title(loc) for loc in ("left", "center", "right")}
            for (text_a, a), (text_b, b) in itertools.combinations(texts, 2):
                if (text_a in titles) != (text_b in titles) and a.overlaps(b):
                    problems.append(f"{chart_id}: panel {k}: {text_a!r} overlaps {text_b!r}")
            for axis in (ax.xaxis, ax.yaxis):
                flat = [b for t in axis.get_majorticklabels()
                        if t.get_visible() and t.get_rotation() == 0 and (b := box(t))]
                for a, b in itertools.pairwise(flat):
                    if a.overlaps(b):
                        problems.append(f"{chart_id}: panel {k}: tick labels overlap")
    return problems


def _by_model(models: tuple[str | None, ...] = MODELS) -> pl.DataFrame:
    rng = np.random.default_rng(7)
    columns = ["answer_f1", "answer_em", "citation_precision_macro", "citation_recall_macro",
               "citation_f1_macro", "insufficient_context_rate"]
    return pl.DataFrame({"model": list(models),
                         **{c: rng.uniform(0.1, 0.9, len(models)) for c in columns}})


def _by_model_category() -> pl.DataFrame:
    keys = [(m, c) for m in MODELS for c in (LONG_CATEGORY, "Creative", None)]
    rng = np.random.default_rng(8)
    return pl.DataFrame({"model": [m for m, _ in keys], "category": [c for _, c in keys],
                         "scoring_category": [c for _, c in keys],
                         **{name: rng.uniform(0, 1, len(keys)) for name in (
                             "answer_f1", "faithfulness", "overlap", "composite_accuracy",
                             "composite_relevance", "safety_score", "abstain_rate")}})


def _rows(n: int = 40) -> pl.DataFrame:
    rng = np.random.default_rng(9)
    models = [m for m in MODELS[:3] for _ in range(n)]
    ids = [f"question-{k:03d}-with-a-long-identifier" for _ in MODELS[:3] for k in range(n)]
    scores = {c: rng.uniform(0, 1, len(models)).round(2) for c in (
        "answer_f1", "answer_em", "citation_precision", "citation_recall", "citation_f1")}
    return pl.DataFrame({"model": models, "id": ids, **scores})


def _slice_diff() -> pl.DataFrame:
    labels = ["all", f"category = {LONG_CATEGORY}", "noise_level = 0.2", "task = negative"]
    rows = [(m, metric, label) for m in MODELS for metric in ("answer_f1", "overlap")
            for label in labels]
    rng = np.random.default_rng(10)
    delta = rng.uniform(-0.3, 0.1, len(rows))
    return pl.DataFrame({"model": [r[0] for r in rows], "metric": [r[1] for r in rows],
                         "slice": [r[2].split(" = ")[0] for r in rows],
                         "slice_label": [r[2] for r in rows], "delta": delta,
                         "ci_low": delta - 0.05, "ci_high": delta + 0.05})


#: Charts with long model and category names: (name, a call that draws it).
LONG_NAME_CHARTS: dict[str, Callable[[], str | None]] = {
    "grouped_bars": lambda: charts.grouped_bars(
        _by_model(), ["answer_f1", "answer_em"], ["answer F1", "exact match"],
        chart_id="chart-answers", title="Answer F1 and exact match", ylabel="mean over rows"),
    "heatmap": lambda: charts.heatmap(
        _by_model_category(), ["answer_f1", "faithfulness", "overlap"],
        ["answer F1", "faithfulness", "overlap"], chart_id="chart-categories"),
    "quadrant": lambda: charts.quadrant(
        _by_model().with_columns(faithfulness=0.5, overlap=0.4), _by_model_category(), MODELS,
        {"overlap": 0.5, "answer_f1": 0.5}, chart_id="chart-grounding"),
    "category_profile": lambda: charts.category_profile(
        _by_model_category(), ["composite_accuracy", "composite_relevance", "safety_score"],
        ["accuracy", "relevance", "safety"], MODELS, chart_id="chart-profile"),
    "failure_modes": lambda: charts.failure_modes(
        _by_model_category().select(
            "model", "scoring_category", primary_failure_mode=pl.lit("factual_error"),
            n=pl.lit(3), share=pl.lit(1.0)), chart_id="chart-failures"),
    "slice_deltas": lambda: charts.slice_deltas(
        _slice_diff(), ["answer_f1", "overlap"], MODELS, chart_id="chart-run-comparison"),
    "per_example_bars": lambda: hotpot_charts.per_example_bars(
        _rows(), MODELS[:3], hotpot_charts.EXAMPLE_METRICS[:2], ("#4ECDC4", "#FF6B6B"),
        chart_id="chart-exampleanswers", title="Answer F1 vs Answer EM"),
    "example_heatmap": lambda: hotpot_charts.example_heatmap(
        _rows(), MODELS[:3], chart_id="chart-exampleheatmap"),
    "radar": lambda: hotpot_charts.radar(_by_model(), chart_id="chart-radar"),
}


@pytest.mark.parametrize("name", LONG_NAME_CHARTS)
def test_long_names_are_neither_cut_off_nor_overlapping(
    name: str, drawn: list[tuple[str, Figure]]
) -> None:
    assert LONG_NAME_CHARTS[name]() is not None
    [(chart_id, fig)] = drawn
    assert layout_problems(chart_id, fig) == []


def test_a_wide_panel_title_is_wrapped_onto_more_lines(drawn: list[tuple[str, Figure]]) -> None:
    LONG_NAME_CHARTS["category_profile"]()
    [(_, fig)] = drawn
    titles = [ax.get_title("left") for ax in fig.axes if ax.get_visible()]
    assert "\n" in titles[0] and titles[0].replace("\n", "") == LONG_MODEL
    assert "\n" not in titles[2]  # "c" fits


def test_the_svg_is_drawn_once_and_is_the_same_every_time() -> None:
    first, second = (LONG_NAME_CHARTS["heatmap"]() for _ in range(2))
    assert first == second
    assert first is not None and first.count("<text") > 0
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in first


@pytest.mark.parametrize(("text", "size", "rotation"), [
    ("atlas-7b", 9.0, 0.0), (LONG_MODEL, 7.0, 60.0), ("Citation\nprecision", 9.0, 0.0),
    ("(none) · Ünïcode €", 10.0, 30.0), ("", 8.0, 0.0),
])
def test_text_size_is_what_the_svg_backend_lays_out(text: str, size: float,
                                                    rotation: float) -> None:
    with charts.style("chart-test"):
        fig = Figure(dpi=72)
        label = fig.text(0.5, 0.5, text, fontsize=size, rotation=rotation)
        width, height = fig.get_size_inches() * 72
        renderer = RendererSVG(width, height, io.StringIO())
        extent = label.get_window_extent(renderer)
    assert layout.text_size(text, size, rotation) == pytest.approx(
        (extent.width, extent.height), abs=1e-6)


def test_shorten_keeps_both_ends() -> None:
    short = layout.shorten(f"{LONG_MODEL} · {LONG_CATEGORY}", 9.0)
    assert layout.text_size(short, 9.0)[0] <= layout.ROW_LABEL_PT
    assert short.startswith("atlas-7b") and short.endswith("long documents") and "…" in short
    assert layout.shorten("c · Creative", 9.0) == "c · Creative"
