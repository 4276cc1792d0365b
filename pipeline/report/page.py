"""The HTML page: one self-contained file with inline CSS, inline SVG charts and a small script.

Every string that comes from the data (model and category names, questions, references,
responses, signatures, paths) passes through :func:`esc` (``html.escape(..., quote=True)``);
chart text is escaped by matplotlib's SVG writer. No data ever goes inside the ``<script>``
element, whose content is a constant (:data:`SCRIPT`), and the page's Content-Security-Policy
allows that script alone (by its SHA-256) and no network access at all, so even a string that
slipped through escaping could neither run nor fetch anything.
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipeline import __version__
from pipeline.report import charts
from pipeline.report.data import WORST_N, RunData, with_ci

#: Section ids in page order; ``run-comparison`` appears only when a run diff is given.
SECTION_IDS = (
    "summary", "headline", "answers", "citations", "distributions", "categories", "noise",
    "rgb", "grounding", "cost", "profile", "failures", "comparisons", "run-comparison", "worst",
    "appendix",
)
#: Decimals per kind of number; scores are shown to 2 decimals, the resolution of a 95% CI
#: over a few hundred rows.
DECIMALS = {"score": 2, "pct": 1, "count": 0, "ms": 0, "tokens": 0}


@dataclass(frozen=True)
class Column:
    """A metric column of a view as the report shows it."""

    name: str
    title: str
    kind: str = "score"


HEADLINE = (
    Column("faithfulness", "Faithfulness"),
    Column("overlap", "Overlap"),
    Column("answer_f1", "F1"),
    Column("citation_f1_macro", "Citation F1"),
    Column("mean_total_tokens", "Tokens", "tokens"),
    Column("p50_latency_ms", "Latency p50 (ms)", "ms"),
    Column("abstain_rate", "Abstain rate"),
)
APPENDIX = (
    Column("answer_em", "Exact match (SQuAD)"),
    Column("answer_em_strict", "Exact match (strict)"),
    Column("citation_precision_macro", "Citation precision (macro)"),
    Column("citation_recall_macro", "Citation recall (macro)"),
    Column("citation_f1_macro", "Citation F1 (macro)"),
    Column("citation_precision_micro", "Citation precision (micro)"),
    Column("citation_recall_micro", "Citation recall (micro)"),
    Column("citation_f1_micro", "Citation F1 (micro)"),
    Column("rouge_1", "ROUGE-1"),
    Column("rouge_2", "ROUGE-2"),
    Column("rouge_l", "ROUGE-L"),
    Column("bleu", "BLEU"),
    Column("bleu_textbook", "BLEU (textbook)"),
    Column("semantic_similarity", "Semantic similarity"),
    Column("semantic_relevance", "Semantic relevance"),
    Column("keyword_overlap", "Keyword overlap"),
    Column("content_coverage", "Content coverage"),
    Column("tfidf_relevance", "TF-IDF relevance"),
    Column("numeric_accuracy", "Numeric accuracy"),
    Column("overlap_micro", "Overlap (micro)"),
    Column("abstention_accuracy", "Abstention accuracy"),
    Column("insufficient_context_rate", "Insufficient-context rate"),
)
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
#: Per-row metrics whose model comparisons the page lists (pipeline.stats names them after
#: the score columns), in this order.
COMPARISON_METRICS = (
    "answer_f1", "answer_em", "answer_em_strict", "citation_precision", "citation_recall",
    "citation_f1", "faithfulness", "overlap", "abstained", "abstention_correct", "total_tokens",
    "latency_ms", "rouge_1", "rouge_2", "rouge_l", "bleu", "semantic_similarity",
    "semantic_relevance", "keyword_overlap", "content_coverage", "tfidf_relevance",
    "numeric_accuracy", "composite_accuracy", "composite_relevance", "safety_score",
    "composite_quality", "overall_score", "rgb_correct", "rejected", "error_detected",
    "error_corrected",
)
WORST_SCORES = (
    Column("answer_f1", "F1"),
    Column("answer_em", "EM"),
    Column("citation_f1", "Citation F1"),
    Column("faithfulness", "Faithfulness"),
    Column("overall_score", "Overall"),
)

#: The page's only script: filters the rows of the table named by a search box's
#: ``data-filter`` attribute by their text. It reads nothing but the DOM's text content.
SCRIPT = """
(function () {
  "use strict";
  var boxes = document.querySelectorAll("input[data-filter]");
  Array.prototype.forEach.call(boxes, function (box) {
    var table = document.getElementById(box.getAttribute("data-filter"));
    var count = document.getElementById(box.getAttribute("data-count"));
    if (!table) { return; }
    var rows = table.tBodies[0].rows;
    function update() {
      var needle = box.value.trim().toLowerCase();
      var shown = 0;
      for (var i = 0; i < rows.length; i++) {
        var hit = needle === "" || rows[i].textContent.toLowerCase().indexOf(needle) !== -1;
        rows[i].hidden = !hit;
        if (hit) { shown++; }
      }
      if (count) { count.textContent = shown + " of " + rows.length + " rows"; }
    }
    box.addEventListener("input", update);
    update();
  });
})();
"""

STYLE = """
:root { --fg: #1d2430; --muted: #5b6576; --line: #d9dee7; --bg: #ffffff; --band: #f4f6fa;
  --accent: #0b5cad; --good: #e6f4ea; --bad: #fdecea; }
* { box-sizing: border-box; }
html { scroll-padding-top: 3.5rem; }
body { margin: 0; color: var(--fg); background: var(--bg); line-height: 1.45;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  "Noto Sans", "Liberation Sans", sans-serif; }
header, main { max-width: 1180px; margin: 0 auto; padding: 0 1.25rem; }
header { padding-top: 1.5rem; }
h1 { font-size: 1.6rem; margin: 0 0 0.75rem; }
h2 { font-size: 1.25rem; margin: 2.25rem 0 0.5rem; padding-top: 0.5rem;
  border-top: 1px solid var(--line); }
nav { position: sticky; top: 0; z-index: 5; background: rgba(255,255,255,0.96);
  border-bottom: 1px solid var(--line); }
nav ul { max-width: 1180px; margin: 0 auto; padding: 0.5rem 1.25rem; list-style: none;
  display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; font-size: 0.85rem; }
nav a { color: var(--accent); text-decoration: none; }
nav a:hover { text-decoration: underline; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 0.2rem 1rem; margin: 0;
  font-size: 0.9rem; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; overflow-wrap: anywhere; }
code, .sig-text { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 0.8rem; }
p.note { color: var(--muted); font-size: 0.9rem; }
p.empty { color: var(--muted); font-style: italic; }
.table-wrap { max-height: 75vh; overflow: auto; border: 1px solid var(--line);
  border-radius: 4px; margin: 0.5rem 0 1rem; }
table { border-collapse: collapse; width: 100%; font-size: 0.85rem; }
th, td { padding: 0.35rem 0.6rem; border-bottom: 1px solid var(--line); text-align: left;
  vertical-align: top; white-space: nowrap; }
thead th { position: sticky; top: 0; z-index: 1; background: var(--band);
  box-shadow: inset 0 -1px 0 var(--line); white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafbfd; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.sig td { background: var(--good); }
tr.sig.worse td { background: var(--bad); }
td .text { max-height: 9em; width: 20em; overflow: auto; white-space: pre-wrap;
  overflow-wrap: anywhere; }
figure.chart { margin: 0.75rem 0 1.25rem; }
figure.chart svg { width: 100%; height: auto; display: block; }
figcaption { color: var(--muted); font-size: 0.85rem; margin-top: 0.25rem; }
.search { display: flex; gap: 0.75rem; align-items: center; margin: 0.5rem 0; }
.search input { font: inherit; padding: 0.35rem 0.6rem; width: min(28rem, 100%);
  border: 1px solid var(--line); border-radius: 4px; }
.search span { color: var(--muted); font-size: 0.85rem; }
"""


def esc(value: object) -> str:
    """``value`` as HTML text (``None`` → ``(none)``), quotes escaped too.

    >>> esc('<b a="1">')
    '&lt;b a=&quot;1&quot;&gt;'
    """
    return html.escape(charts.label(value), quote=True)


def fmt(value: object, kind: str = "score") -> str:
    """A number with the decimals of its kind; ``—`` for null or NaN.

    >>> fmt(0.6123), fmt(1234.5, "tokens"), fmt(None)
    ('0.61', '1,234', '—')
    """
    if value is None or (isinstance(value, float) and value != value):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and kind in ("count", "tokens"):
        return f"{value:,}"
    number = float(value)  # type: ignore[arg-type]
    return f"{number:,.{DECIMALS[kind]}f}"


def fmt_auto(value: object) -> str:
    """A number of unknown scale (differences, p-values) with about three significant digits.

    >>> fmt_auto(0.01234), fmt_auto(123.4), fmt_auto(0.00001)
    ('0.012', '123', '1.0e-05')
    """
    if value is None or (isinstance(value, float) and value != value):
        return "—"
    number = float(value)  # type: ignore[arg-type]
    size = abs(number)
    if size >= 100:
        return f"{number:,.0f}"
    if size >= 10:
        return f"{number:.1f}"
    if size != 0 and size < 0.001:
        return f"{number:.1e}"
    return f"{number:.3f}"


def fmt_ci(value: object, low: object, high: object, kind: str = "score") -> str:
    """``"0.61 [0.58, 0.64]"``, or the value alone when the interval is unknown.

    >>> fmt_ci(0.612, 0.58, 0.641), fmt_ci(0.612, None, None)
    ('0.61 [0.58, 0.64]', '0.61')
    """
    if low is None or high is None or value is None:
        return fmt(value, kind)
    return f"{fmt(value, kind)} [{fmt(low, kind)}, {fmt(high, kind)}]"


def _th(text: str, numeric: bool = False) -> str:
    return f'<th scope="col"{" class=num" if numeric else ""}>{text}</th>'


def _table(
    headers: Sequence[str], rows: Sequence[str], *, numeric: Sequence[bool], table_id: str = ""
) -> str:
    head = "".join(_th(headers[k], numeric[k]) for k in range(len(headers)))
    id_attr = f' id="{table_id}"' if table_id else ""
    return (
        f'<div class="table-wrap"><table{id_attr}><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _td(text: str, numeric: bool = False, title: str = "") -> str:
    attrs = (' class="num"' if numeric else "") + (f' title="{title}"' if title else "")
    return f"<td{attrs}>{text}</td>"


def _figure(svg: str | None, chart_id: str, caption: str, empty: str) -> str:
    if svg is None:
        return f'<p class="empty">{empty}</p>'
    return f'<figure class="chart" id="{chart_id}">{svg}<figcaption>{caption}</figcaption></figure>'


def _section(section_id: str, title: str, body: str) -> str:
    return f'<section id="{section_id}"><h2>{title}</h2>{body}</section>'


def _metric_table(frame: pl.DataFrame, columns: Sequence[Column], key_title: str = "Model") -> str:
    """One row per model: N, then each column as ``value [lo, hi]``."""
    present = [c for c in columns if c.name in frame.columns]
    rows = []
    for record in frame.to_dicts():
        cells = [_td(esc(record["model"])), _td(fmt(record.get("n"), "count"), True)]
        for column in present:
            cells.append(_td(
                fmt_ci(record[column.name], record.get(f"{column.name}_lo"),
                       record.get(f"{column.name}_hi"), column.kind),
                True, fmt_auto(record[column.name]),
            ))
        rows.append(f"<tr>{''.join(cells)}</tr>")
    headers = [key_title, "N", *(c.title for c in present)]
    return _table(headers, rows, numeric=[False, True, *([True] * len(present))])


def _header(data: RunData, title: str) -> str:
    signatures = sorted(
        data.headline.select(pl.col("signature").str.split("; ").explode().drop_nulls().unique())
        .to_series().to_list()
    )
    items = [
        ("Run directory", f"<code>{esc(str(data.out_dir.resolve()))}</code>"),
        ("Rows", f"{fmt(data.n_rows, 'count')} scored, {fmt(data.n_rejected, 'count')} rejected"),
        ("Models", ", ".join(esc(m) for m in data.models) or "—"),
        ("Signature" + ("s" if len(signatures) != 1 else ""),
         "<br>".join(f'<span class="sig-text">{esc(s)}</span>' for s in signatures) or "—"),
        ("Intervals", _intervals_text(data.intervals)),
        ("Model comparisons", "comparisons.parquet" if data.comparisons is not None
         else "none (no comparisons.parquet)"),
        ("Generated by", f"rag-eval {esc(__version__)}"),
    ]
    meta = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items)
    return (f'<header id="summary"><h1>{esc(title)}</h1><dl class="meta">{meta}</dl>'
            "</header>")


def _intervals_text(intervals: pl.DataFrame | None) -> str:
    if intervals is None:
        return ("none: the run directory holds no intervals.parquet, so numbers are shown "
                "<strong>without confidence intervals</strong>")
    settings = (intervals.select("method", "resamples", "seed").unique()
                .sort("method", "resamples", "seed", nulls_last=True).to_dicts())
    parts = [
        f"{esc(s['method'])}: {fmt(s['resamples'], 'count')} resamples, seed {esc(s['seed'])}"
        for s in settings
    ]
    return "95% intervals from intervals.parquet (" + "; ".join(parts) + ")"


def _headline(data: RunData) -> str:
    frame = with_ci(data.headline, data.intervals, "by_model", [c.name for c in HEADLINE])
    note = ("Point estimates are the <code>headline</code> view; brackets give the 95% "
            "bootstrap interval of the mean (Wilson score interval for the abstain rate)."
            if data.intervals is not None else
            "Point estimates are the <code>headline</code> view. No intervals.parquet: "
            "shown without confidence intervals.")
    return _section("headline", "Headline", _metric_table(frame, HEADLINE)
                    + f'<p class="note">{note}</p>')


def _appendix(data: RunData) -> str:
    present = [c for c in APPENDIX if c.name in data.by_model.columns
               and data.by_model[c.name].drop_nulls().len() > 0]
    frame = with_ci(data.by_model, data.intervals, "by_model", [c.name for c in present])
    records = frame.to_dicts()
    rows = []
    for column in present:
        cells = [_td(esc(column.title)), _td(f"<code>{column.name}</code>")]
        cells += [
            _td(fmt_ci(r[column.name], r[f"{column.name}_lo"], r[f"{column.name}_hi"],
                       column.kind), True, fmt_auto(r[column.name]))
            for r in records
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    headers = ["Metric", "Column", *(esc(r["model"]) for r in records)]
    body = _table(headers, rows, numeric=[False, False, *([True] * len(records))])
    return _section("appendix", "Appendix: all metrics by model", body
                    + '<p class="note">Means over rows of the <code>by_model</code> view; '
                    "micro scores come from summed counts (docs/sql-cookbook.md).</p>")


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


def _categories(data: RunData) -> str:
    frame = data.by_model_category
    svg = charts.heatmap(frame, [c.name for c in HEATMAP], [c.title for c in HEATMAP],
                         chart_id="chart-categories")
    return _section("categories", "Metrics by model and category", _figure(
        svg, "chart-categories", "Means from the <code>by_model_category</code> view.",
        "No category slices in this run."))


def _noise(data: RunData) -> str:
    rgb = with_ci(data.rgb_noise.select("model", "noise_level", "n", "accuracy"),
                  data.intervals, "by_model_noise", ["accuracy"], same_n=True)
    f1 = with_ci(data.by_model_noise, data.intervals, "by_model_noise", ["answer_f1"])
    svg = charts.noise_curves(rgb, f1, data.models, chart_id="chart-noise")
    return _section("noise", "Accuracy against noise level", _figure(
        svg, "chart-noise", "RGB noise-robustness accuracy (<code>rgb_noise_robustness</code>) "
        "and answer F1 over all rows with a noise level (<code>by_model_noise</code>); bands "
        "are 95% intervals where available.", "No rows with a noise level in this run."))


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


def _grounding(data: RunData) -> str:
    svg = charts.quadrant(data.by_model, data.by_model_category, data.models,
                          chart_id="chart-grounding")
    return _section("grounding", "Grounding vs correctness", _figure(
        svg, "chart-grounding", "Large points: models; small points: model × category. Upper "
        "right: grounded and correct; lower right: grounded but wrong (a retrieval or reference "
        "problem); upper left: correct without support.", "No grounding scores in this run."))


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


def _comparisons(data: RunData) -> str:
    if data.comparisons is None or data.comparisons.height == 0:
        return _section("comparisons", "Model comparisons", '<p class="empty">No '
                        "comparisons.parquet in the run directory.</p>")
    order = {name: k for k, name in enumerate(COMPARISON_METRICS)}
    frame = (
        data.comparisons
        .filter(pl.col("metric").is_in(COMPARISON_METRICS)
                & ((pl.col("slice") == "all") | pl.col("significant")))
        .sort(pl.col("metric").replace_strict(order, return_dtype=pl.Int64),
              pl.col("slice") != "all", "slice", "slice_value", "model_a", "model_b",
              nulls_last=True)
    )
    rows = []
    for r in frame.to_dicts():
        significant = bool(r["significant"])
        css = ' class="sig"' if significant else ""
        cells = [
            _td(esc(r["metric"])), _td(esc(r["slice"])), _td(esc(r["slice_value"])),
            _td(esc(r["model_a"])), _td(esc(r["model_b"])),
            _td(fmt(r["n_pairs"], "count"), True), _td(fmt_auto(r["mean_a"]), True),
            _td(fmt_auto(r["mean_b"]), True),
            _td(f"{fmt_auto(r['diff'])} [{fmt_auto(r['ci_low'])}, {fmt_auto(r['ci_high'])}]",
                True),
            _td(esc(r["test"])), _td(fmt_auto(r["p_value"]), True),
            _td(fmt_auto(r["p_adjusted"]), True), _td(esc(r["correction"])),
            _td("yes" if significant else "no"),
        ]
        rows.append(f"<tr{css}>{''.join(cells)}</tr>")
    headers = ["Metric", "Slice", "Value", "Model A", "Model B", "Pairs", "Mean A", "Mean B",
               "A − B [95% CI]", "Test", "p", "p adjusted", "Correction", "Significant"]
    numeric = [False] * 5 + [True] * 4 + [False, True, True, False, False]
    search = _search_box("comparisons-table", "comparisons-count", "Filter comparisons")
    return _section("comparisons", "Model comparisons", search + _table(
        headers, rows, numeric=numeric, table_id="comparisons-table")
        + '<p class="note">Paired differences between models on the same items; highlighted '
        "rows are significant after the stated multiple-comparison correction. Shown: "
        f"{fmt(frame.height, 'count')} of the {fmt(data.comparisons.height, 'count')} rows of "
        "comparisons.parquet, every report metric over all rows (slice <code>all</code>) and "
        "the significant differences within a slice.</p>")


def _run_comparison(diff: pl.DataFrame) -> str:
    frame = diff.sort("metric", "slice", "slice_value", "model", nulls_last=True)
    rows = []
    for r in frame.to_dicts():
        low, high = r["ci_low"], r["ci_high"]
        changed = low is not None and high is not None and (low > 0 or high < 0)
        css = ' class="sig"' if changed else ""
        cells = [
            _td(esc(r["model"])), _td(esc(r["metric"])), _td(esc(r["slice"])),
            _td(esc(r["slice_value"])), _td(fmt_auto(r["mean_a"]), True),
            _td(fmt_auto(r["mean_b"]), True),
            _td(f"{fmt_auto(r['delta'])} [{fmt_auto(low)}, {fmt_auto(high)}]", True),
        ]
        rows.append(f"<tr{css}>{''.join(cells)}</tr>")
    headers = ["Model", "Metric", "Slice", "Value", "Run A", "Run B", "B − A [95% CI]"]
    search = _search_box("run-comparison-table", "run-comparison-count", "Filter rows")
    return _section("run-comparison", "Run comparison", search + _table(
        headers, rows, numeric=[False] * 4 + [True] * 3, table_id="run-comparison-table")
        + '<p class="note">Highlighted rows: the 95% interval of the change excludes 0.</p>')


def _search_box(table_id: str, count_id: str, placeholder: str) -> str:
    return (f'<div class="search"><input type="search" id="{table_id}-search" '
            f'data-filter="{table_id}" '
            f'data-count="{count_id}" placeholder="{placeholder}" aria-label="{placeholder}">'
            f'<span id="{count_id}"></span></div>')


def _worst(data: RunData) -> str:
    frame = data.worst
    if frame.height == 0:
        return _section("worst", "Worst items", '<p class="empty">No scored rows.</p>')
    texts = [c for c in ("question", "reference", "response") if c in frame.columns]
    rows = []
    for r in frame.to_dicts():
        cells = [_td(esc(r["model"])), _td(fmt(r["worst_rank"], "count"), True),
                 _td(esc(r["id"])), _td(esc(r["category"]))]
        cells += [_td(f'<div class="text">{esc(r[c] if r[c] is not None else "")}</div>')
                  for c in texts]
        cells += [_td(fmt(r[c.name], c.kind), True) for c in WORST_SCORES]
        cells.append(_td(esc(r["primary_failure_mode"])))
        rows.append(f"<tr>{''.join(cells)}</tr>")
    headers = ["Model", "#", "ID", "Category", *(t.capitalize() for t in texts),
               *(c.title for c in WORST_SCORES), "Failure mode"]
    numeric = [False, True, False, False, *([False] * len(texts)), *([True] * len(WORST_SCORES)),
               False]
    missing = "" if texts else (" texts.parquet is missing, so the texts are not shown.")
    search = _search_box("worst-table", "worst-count", "Search questions, answers, models…")
    return _section("worst", "Worst items per model", search + _table(
        headers, rows, numeric=numeric, table_id="worst-table")
        + f'<p class="note">The {WORST_N} rows with the lowest answer F1 per model (ties: lowest '
        f"overall score).{missing}</p>")


def _nav(section_ids: Sequence[str]) -> str:
    titles = {
        "summary": "Summary", "headline": "Headline", "answers": "F1 vs EM",
        "citations": "Citations", "distributions": "Distributions", "categories": "Categories",
        "noise": "Noise", "rgb": "RGB", "grounding": "Grounding", "cost": "Cost",
        "profile": "Profile", "failures": "Failures", "comparisons": "Comparisons",
        "run-comparison": "Run comparison", "worst": "Worst items", "appendix": "Appendix",
    }
    links = "".join(f'<li><a href="#{s}">{titles[s]}</a></li>' for s in section_ids)
    return f'<nav aria-label="Sections"><ul>{links}</ul></nav>'


def script_hash() -> str:
    """The CSP source that allows :data:`SCRIPT` (``'sha256-…'``)."""
    digest = hashlib.sha256(SCRIPT.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def render(data: RunData, *, diff: pl.DataFrame | None = None, title: str | None = None) -> str:
    """The complete HTML document for ``data`` (and a run comparison when ``diff`` is given)."""
    title = title or f"Evaluation report: {Path(data.out_dir).resolve().name}"
    sections = [
        _headline(data), _answers(data), _citations(data), _distributions(data),
        _categories(data), _noise(data), _rgb(data), _grounding(data), _cost(data),
        _profile(data), _failures(data), _comparisons(data),
        *([_run_comparison(diff)] if diff is not None else []), _worst(data), _appendix(data),
    ]
    ids = [s for s in SECTION_IDS if diff is not None or s != "run-comparison"]
    csp = (f"default-src 'none'; script-src {script_hash()}; style-src 'unsafe-inline'; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head>\n<body>"
        f"{_nav(ids)}{_header(data, title)}<main>\n{chr(10).join(sections)}\n</main>"
        f"<script>{SCRIPT}</script></body></html>\n"
    )
