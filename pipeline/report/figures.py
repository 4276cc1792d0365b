"""The sections of the page that are charts (:mod:`pipeline.report.charts`,
:mod:`pipeline.report.hotpot_charts`): answers, citations, distributions, generation,
categories, noise (RGB accuracy per noise rate with Wilson intervals), RGB, grounding
(faithfulness at thresholds), cost, the composite profile, failures and the failure stages
(the share of failed rows per stage of the pipeline)."""

from __future__ import annotations

import polars as pl

from pipeline.metrics.embedding.grounding import faithfulness
from pipeline.report import charts, hotpot_charts
from pipeline.report.data import RunData, with_ci
from pipeline.report.markup import (
    Column,
    _figure,
    _key_text,
    _metric_table,
    _noise_text,
    _section,
    _td,
    _th,
    esc,
    fmt,
)
from pipeline.stats import wilson_interval

HEATMAP = (
    Column("answer_f1", "answer F1"),
    Column("answer_em", "EM"),
    Column("citation_f1_macro", "citation F1"),
    Column("faithfulness", "faithfulness"),
    Column("overlap", "overlap"),
    Column("rouge_l", "ROUGE-L"),
    Column("semantic_similarity", "semantic sim."),
    Column("abstain_rate", "abstain rate"),
)
COMPOSITES = (
    Column("composite_accuracy", "accuracy"),
    Column("composite_relevance", "relevance"),
    Column("safety_score", "safety"),
    Column("composite_quality", "quality"),
    Column("overall_score", "overall"),
)
RGB = (
    Column("rejection_rate", "Negative rejection", "pct"),
    Column("integration_accuracy", "Integration accuracy", "pct"),
    Column("counterfactual_accuracy", "Counterfactual accuracy", "pct"),
    Column("error_detection_rate", "Error detection", "pct"),
    Column("error_correction_rate", "Error correction", "pct"),
)
RGB_TABLE = (
    Column("noise_acc_0", "Noise 0%", "pct"),
    Column("noise_acc_20", "Noise 20%", "pct"),
    Column("noise_acc_40", "Noise 40%", "pct"),
    Column("noise_acc_60", "Noise 60%", "pct"),
    Column("noise_acc_80", "Noise 80%", "pct"),
    Column("noise_accuracy_drop", "Drop (pp)", "pct"),
    *RGB,
)


def _answers(data: RunData) -> str:
    frame = with_ci(data.by_model, data.intervals, "by_model", ["answer_f1", "answer_em"])
    svg = charts.grouped_bars(frame, ["answer_f1", "answer_em"], ["answer F1", "exact match"],
                              chart_id="chart-answers", title="Answer F1 and exact match",
                              ylabel="mean over rows")
    return _section("answers", "Answer F1 vs exact match", _figure(
        svg, "chart-answers", "Token F1 and SQuAD exact match per model; error bars are 95% "
        "intervals where intervals.parquet has them.", "No answer scores in this run."))


def _citations(data: RunData) -> str:
    columns = ["citation_precision_macro", "citation_recall_macro", "citation_f1_macro"]
    frame = with_ci(data.by_model, data.intervals, "by_model", columns)
    svg = charts.grouped_bars(frame, columns, ["precision", "recall", "F1"],
                              chart_id="chart-citations", title="Citation scores (macro)",
                              ylabel="mean over rows with gold citations")
    return _section("citations", "Citation precision, recall and F1", _figure(
        svg, "chart-citations", "Means of the per-row citation scores over rows with gold "
        "citations; error bars are 95% intervals where available.",
        "No rows with gold citations in this run."))


def _distributions(data: RunData) -> str:
    svg = charts.histograms(data.rows, ["answer_f1", "citation_f1"], ["answer F1", "citation F1"],
                            data.models, chart_id="chart-distributions")
    return _section("distributions", "Score distributions", _figure(
        svg, "chart-distributions", "Share of each model's rows in 20 equal-width bins.",
        "No per-row scores to plot."))


#: The per-example plots of the generation section, folded by default: chart id → (the
#: plot's number, its summary line).
FOLDED_EXAMPLES = {
    "chart-exampleanswers": (1, "Answer F1 and exact match per example"),
    "chart-examplecitations": (2, "Citation precision, recall and F1 per example"),
    "chart-exampleheatmap": (5, "Performance heatmap per example"),
}


def _generation(data: RunData, limit: int) -> str:
    """The six plots; the per-example ones (at most ``limit`` rows per model, the worst)
    folded in ``<details>`` elements, with a note on the rows they leave out."""
    plots = hotpot_charts.six_plots(data.rows, data.by_model, data.models, limit)
    body, left_out = [], []
    for chart_id, svg, caption, empty in plots:
        figure = _figure(svg, chart_id, caption, empty)
        if chart_id in FOLDED_EXAMPLES and svg is not None:
            number, summary = FOLDED_EXAMPLES[chart_id]
            key = hotpot_charts.WORST_BY[chart_id][0]
            drawn, total = hotpot_charts.drawn_rows(data.rows, data.models, key, limit)
            figure = (f'<details class="fold"><summary>{number}. {summary} '
                      f'<span class="sub">({fmt(drawn, "count")} of {fmt(total, "count")} '
                      f"rows: the worst {fmt(limit, 'count')} of each model)</span></summary>"
                      f"{figure}</details>")
            if drawn < total:
                left_out.append(f"{number}: {fmt(drawn, 'count')} of the {fmt(total, 'count')} "
                                f"rows with {hotpot_charts.RANKED_BY[key]} scores")
        body.append(figure)
    note = ""
    if left_out:
        note = ('<p class="note">The per-example plots (folded; open one to see it) draw the '
                f"{fmt(limit, 'count')} worst rows of each model (<code>Limits.examples</code>"
                f"): plot {'; plot '.join(left_out)}. The other rows are not drawn there: the "
                "distributions and the radar cover every row, the worst-items table lists the "
                "worst with their texts, and the <code>scores</code> view has them all.</p>")
    return _section("generation", "Generation quality: the HotpotQA evaluator's six plots",
                    "".join(body) + note)


def _categories(data: RunData) -> str:
    frame = data.by_model_category
    svg = charts.heatmap(frame, [c.name for c in HEATMAP], [c.title for c in HEATMAP],
                         chart_id="chart-categories")
    return _section("categories", "Metrics by model and category", _figure(
        svg, "chart-categories", "Means from the <code>by_model_category</code> view.",
        "No category slices in this run."))


def rgb_noise_with_ci(data: RunData) -> pl.DataFrame:
    """``rgb_noise_robustness`` (model, noise_level, n, accuracy) with ``accuracy_lo/_hi``.

    The accuracy is the share (%) of a model's ``noise_robustness`` rows at one level that are
    correct, so its 95% interval is the Wilson score interval of that proportion, the same
    interval the report gives the abstain rate; it is computed here from the view's ``n`` and
    accuracy, over exactly the rows plotted. ``intervals.parquet`` cannot serve: its
    ``by_model_noise`` intervals pool every RGB task at a noise level (at 0.0 to 0.4 the
    integration and counterfactual rows as well), so they describe other rows, which is why
    only the levels with noise rows alone (0.6, 0.8) used to get a band. Without statistics
    (no ``intervals.parquet``) there are no bands, as everywhere in the report.
    """
    frame = data.rgb_noise.select("model", "noise_level", "n", "accuracy")
    if data.intervals is None or frame.height == 0:
        return frame.with_columns(pl.lit(None, pl.Float64).alias("accuracy_lo"),
                                  pl.lit(None, pl.Float64).alias("accuracy_hi"))
    n = frame["n"].cast(pl.Float64).fill_null(0.0).to_numpy()
    share = frame["accuracy"].cast(pl.Float64).fill_null(float("nan")).to_numpy() / 100.0
    low, high = wilson_interval(share * n, n)  # NaN where n is 0 or the accuracy null
    return frame.with_columns(
        pl.Series("accuracy_lo", 100.0 * low, dtype=pl.Float64).fill_nan(None),
        pl.Series("accuracy_hi", 100.0 * high, dtype=pl.Float64).fill_nan(None),
    )


def _noise(data: RunData) -> str:
    f1 = with_ci(data.by_model_noise, data.intervals, "by_model_noise", ["answer_f1"])
    svg = charts.noise_curves(rgb_noise_with_ci(data), f1, data.models, chart_id="chart-noise")
    return _section("noise", "Accuracy against noise level", _figure(
        svg, "chart-noise", "RGB noise-robustness accuracy (<code>rgb_noise_robustness</code>) "
        "and answer F1 over all rows with a noise level (<code>by_model_noise</code>). Bands "
        "and bars are 95% intervals: for the accuracy the Wilson score interval of the share "
        "correct at each level, for F1 the bootstrap interval of intervals.parquet.",
        "No rows with a noise level in this run."))


def _rgb(data: RunData) -> str:
    frame = data.rgb_summary
    svg = charts.grouped_bars(frame, [c.name for c in RGB], [c.title for c in RGB],
                              chart_id="chart-rgb", title="RGB rates", ylabel="%", ymax=100.0)
    if frame.height == 0:
        return _section("rgb", "RGB rejection and counterfactual robustness",
                        '<p class="empty">No RGB rows (no task column) in this run.</p>')
    body = _figure(svg, "chart-rgb", "Percentages from <code>rgb_summary</code> (docs/rgb.md).",
                   "No RGB rates to plot.")
    return _section("rgb", "RGB rejection and counterfactual robustness",
                    body + _metric_table(frame, RGB_TABLE))


def grounding_thresholds(paired: pl.DataFrame) -> dict[str, float]:
    """Where the grounding chart splits its quadrants, per axis column.

    The thresholds are those of the ``paired_analysis`` view, read from its columns
    ``grounded_min_overlap`` and ``correct_min_answer_f1`` (``queries/paired_analysis.sql``
    defines them once), so the chart and the SQL cannot disagree. The faithfulness line is the
    faithfulness of a non-abstaining row at the overlap threshold
    (:func:`pipeline.metrics.embedding.grounding.faithfulness`: 0.5 gives 0.8). Empty when
    the view has no row.

    >>> grounding_thresholds(pl.DataFrame({"grounded_min_overlap": [0.5],
    ...                                    "correct_min_answer_f1": [0.5]}))
    {'overlap': 0.5, 'faithfulness': 0.8, 'answer_f1': 0.5}
    """
    columns = ("grounded_min_overlap", "correct_min_answer_f1")
    if paired.height == 0 or not all(c in paired.columns for c in columns):
        return {}
    overlap, answer_f1 = (paired[c].drop_nulls() for c in columns)
    if overlap.len() == 0 or answer_f1.len() == 0:
        return {}
    min_overlap = float(overlap[0])
    min_faithfulness = pl.select(
        faithfulness(pl.lit(min_overlap), pl.lit(0), pl.lit(True))
    ).item()
    return {"overlap": min_overlap, "faithfulness": round(float(min_faithfulness), 12),
            "answer_f1": float(answer_f1[0])}


def _grounding(data: RunData) -> str:
    lines = grounding_thresholds(data.paired_analysis)
    svg = charts.quadrant(data.by_model, data.by_model_category, data.models, lines,
                          chart_id="chart-grounding")
    split = ""
    if lines:
        split = (f" Dashed lines: grounded at overlap ≥ {lines['overlap']:g} (faithfulness ≥ "
                 f"{lines['faithfulness']:g}), correct at answer F1 ≥ {lines['answer_f1']:g}, "
                 "the thresholds of the <code>paired_analysis</code> view.")
    return _section("grounding", "Grounding vs correctness", _figure(
        svg, "chart-grounding", "Large points: models; small points: model × category. Upper "
        "right: grounded and correct; lower right: grounded but wrong (a retrieval or reference "
        f"problem); upper left: correct without support.{split}",
        "No grounding scores in this run."))


def _cost(data: RunData) -> str:
    svg = charts.cost_vs_abstain(data.by_model, data.by_model_category, data.models,
                                 chart_id="chart-cost")
    return _section("cost", "Cost and latency vs abstention", _figure(
        svg, "chart-cost", "Large points: models; small points: model × category.",
        "No token or latency data in this run."))


def _profile(data: RunData) -> str:
    svg = charts.category_profile(data.by_category, [c.name for c in COMPOSITES],
                                  [c.title for c in COMPOSITES], data.models,
                                  chart_id="chart-profile")
    return _section("profile", "Category composite profile", _figure(
        svg, "chart-profile", "Means of the category-aware composites per scoring category "
        "(<code>by_category</code>).", "No composite scores in this run."))


def _failures(data: RunData) -> str:
    svg = charts.failure_modes(data.failure_modes, chart_id="chart-failures")
    return _section("failures", "Failure modes", _figure(
        svg, "chart-failures", "Share of each primary failure mode per model and scoring "
        "category (<code>failure_modes</code>).", "No failure modes in this run."))


#: The stages of ``failure_stage`` in the order the report's table shows them.
FAILURE_STAGES = ("retrieval", "generation", "grounding", "abstention", "correct_abstention",
                  "none")


def failure_stage_shares(stages: pl.DataFrame) -> pl.DataFrame:
    """Per (model, noise level), the rows and the share of each stage of :data:`FAILURE_STAGES`
    (columns named by the stages), from the report's ``failure_stages`` frame.

    >>> frame = pl.DataFrame({"model": ["m", "m"], "noise_level": [0.2, 0.2],
    ...                       "failure_stage": ["none", "retrieval"], "n": [3, 1]})
    >>> failure_stage_shares(frame).select("n", "retrieval", "none").row(0)
    (4, 0.25, 0.75)
    """
    total = pl.col("n").sum().over("model", "noise_level")
    return stages.with_columns((pl.col("n").cast(pl.Float64) / total).alias("share")).group_by(
        "model", "noise_level", maintain_order=True).agg(
        pl.col("n").sum(),
        *(pl.col("share").filter(pl.col("failure_stage") == stage).sum().alias(stage)
          for stage in FAILURE_STAGES),
    )


def _failure_stages(data: RunData) -> str:
    shares = failure_stage_shares(data.failure_stages)
    if shares.height == 0:
        return _section("failure-stages", "Where answers fail",
                        '<p class="note">No failure stages in this run.</p>')
    header = [_th("Model", key=True), _th("Noise level", numeric=True), _th("N", numeric=True),
              *(_th(stage.replace("_", " ").capitalize(), numeric=True)
                for stage in FAILURE_STAGES)]
    rows = [
        "<tr>" + _td(esc(_key_text(r["model"]))) + _td(_noise_text(r["noise_level"]), True)
        + _td(fmt(r["n"], "count"), True)
        + "".join(_td(fmt(100 * r[stage], "pct"), True) for stage in FAILURE_STAGES) + "</tr>"
        for r in shares.iter_rows(named=True)
    ]
    body = (
        f"<table><thead><tr>{''.join(header)}</tr></thead><tbody>{''.join(rows)}</tbody>"
        "</table><p class=\"note\">Share of rows (%) per model and noise level by the stage "
        "where the answer failed: the retriever brought no answer, the generator missed or "
        "contradicted it, added an unsupported claim, declined though it was there, declined "
        "correctly, or none (<code>by_failure_stage</code>, docs/retrieval.md).</p>"
    )
    return _section("failure-stages", "Where answers fail", body)
