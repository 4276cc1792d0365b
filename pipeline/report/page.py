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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from pipeline import __version__, views
from pipeline.compare import DEFAULT_ITEM_DROP
from pipeline.config import DEFAULT_ABSTENTION_PHRASES
from pipeline.metrics.embedding.grounding import faithfulness
from pipeline.metrics.qa.abstention import fold, fold_phrases
from pipeline.metrics.qa.citation import parse_citation_markers
from pipeline.metrics.registry import REGISTRY
from pipeline.metrics.spec import MetricSpec
from pipeline.report import charts, checks, hotpot_charts
from pipeline.report.data import WORST_N, RunData, with_ci
from pipeline.report.limits import (
    MAX_COMPARISON_ROWS,
    MAX_TEXT_CHARS,
    Limits,
    cap,
    capped_diff,
    cut_marker,
    cut_text,
    section_id,
    with_notes,
)
from pipeline.stats import METRIC_NAMES, wilson_interval
from pipeline.text.sentences import split_sentences

#: Section ids in page order; ``run-comparison`` appears only when a run diff is given, and
#: then first, right under the summary: it is what a reader of a comparison came for.
SECTION_IDS = (
    "summary", "run-comparison", "headline", "answers", "citations", "distributions",
    "generation", "categories", "noise", "rgb", "grounding", "cost", "profile", "failures",
    "failure-stages", "user-metrics", "comparisons", "worst", "appendix",
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


#: How the headline table shows the columns of the ``headline`` view it knows (titles may hold
#: soft hyphens, where a long word may break). It shows the view's columns in the view's order
#: (:func:`headline_columns`), so it has the terminal headline's columns; a column not listed
#: here gets its name as title and a kind from its type.
HEADLINE = {c.name: c for c in (
    Column("n", "N", "count"),
    Column("faithfulness", "Faith&shy;fulness"),
    Column("overlap", "Overlap"),
    Column("n_grounding", "Ground&shy;ing N", "count"),
    Column("answer_f1", "Answer F1"),
    Column("citation_f1_macro", "Citation F1"),
    Column("mean_total_tokens", "Tokens", "tokens"),
    Column("p50_latency_ms", "Latency p50 (ms)", "ms"),
    Column("abstain_rate", "Abstain rate"),
    Column("abstention_accuracy", "Abs&shy;tention accuracy"),
    Column("n_unanswerable", "Unan&shy;swerable", "count"),
    Column("empty_response_rate", "Empty re&shy;sponses"),
    Column("overall_score", "Overall score"),
    Column("n_no_passages", "No pas&shy;sages", "count"),
    Column("n_idk_with_citation", "IDK + citation", "count"),
    Column("idk_check", "IDK check", "text"),
    Column("answer_in_context", "Answer re&shy;trieved"),
    Column("recall_at_5", "Recall@5"),
    Column("reciprocal_rank", "MRR"),
)}
#: Columns of the ``headline`` view the table does not show: its key (the first column) and
#: the signature (folded in the summary).
HEADLINE_HIDDEN = ("model", "signature")
#: What the count and warning columns of the headline mean, in the note under the table.
HEADLINE_LEGEND = {
    "n_grounding": "the rows faithfulness and overlap average over",
    "n_unanswerable": "unanswerable questions, of which abstention accuracy is the share "
                      "declined",
    "n_no_passages": "rows without any retrieved passage (grounding does not apply)",
    "n_idk_with_citation": "rows where a sentence says \"I don't know\" and still cites a "
                           "passage",
    "idk_check": "<em>ok</em> when IDK + citation is 0, else a warning: it must be 0 (a "
                 "flaw in the prompt or the generation)",
}
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
    Column("answer_str_em", "STR-EM (ALCE)"),
    Column("answer_in_context", "Answer retrieved"),
    Column("context_recall", "Context recall"),
    Column("precision_at_5", "Precision@5"),
    Column("recall_at_5", "Recall@5"),
    Column("ndcg_at_10", "nDCG@10"),
    Column("reciprocal_rank", "MRR"),
    Column("average_precision", "MAP"),
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
WORST_SCORES = (
    Column("answer_f1", "F1"),
    Column("answer_em", "EM"),
    Column("citation_f1", "Citation F1"),
    Column("faithfulness", "Faith&shy;fulness"),
    Column("overall_score", "Overall"),
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
  --zebra: #fafbfd; --accent: #0b5cad; --good: #e6f4ea; --bad: #fdecea; --page: 1320px; }
* { box-sizing: border-box; }
html { scroll-padding-top: 3.5rem; }
body { margin: 0; color: var(--fg); background: var(--bg); line-height: 1.45;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  "Noto Sans", "Liberation Sans", sans-serif; }
header, main { max-width: var(--page); margin: 0 auto; padding: 0 1.25rem; }
header { padding-top: 1.5rem; }
h1 { font-size: 1.6rem; margin: 0 0 0.75rem; overflow-wrap: anywhere; }
h2 { font-size: 1.25rem; margin: 2.25rem 0 0.5rem; padding-top: 0.5rem;
  border-top: 1px solid var(--line); }
h3 { font-size: 1rem; margin: 1.25rem 0 0.25rem; }
nav { position: sticky; top: 0; z-index: 5; background: rgba(255,255,255,0.96);
  border-bottom: 1px solid var(--line); }
nav ul { max-width: var(--page); margin: 0 auto; padding: 0.5rem 1.25rem; list-style: none;
  display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; font-size: 0.85rem; }
nav a { color: var(--accent); text-decoration: none; }
nav a:hover { text-decoration: underline; }
dl.meta { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 0.2rem 1rem;
  margin: 0; font-size: 0.9rem; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; overflow-wrap: anywhere; }
code, .sig-text { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 0.8rem; overflow-wrap: anywhere; }
p.note, p.empty, p.summary { max-width: 75rem; }
p.note { color: var(--muted); font-size: 0.9rem; }
p.empty { color: var(--muted); font-style: italic; }
.table-wrap { max-width: 100%; max-height: 75vh; overflow: auto; border: 1px solid var(--line);
  border-radius: 4px; margin: 0.5rem 0 1rem; }
table { border-collapse: separate; border-spacing: 0; width: 100%; font-size: 0.85rem; }
th, td { padding: 0.35rem 0.6rem; border-bottom: 1px solid var(--line); text-align: left;
  vertical-align: top; white-space: nowrap; background: var(--bg); }
thead th { position: sticky; top: 0; z-index: 2; background: var(--band);
  white-space: normal; min-width: 3.5em; }
tbody tr:nth-child(even) td { background: var(--zebra); }
th:first-child, td:first-child { position: sticky; left: 0; z-index: 1;
  box-shadow: inset -1px 0 0 var(--line); white-space: normal; min-width: 8em; max-width: 13em;
  overflow-wrap: anywhere; }
thead th:first-child { z-index: 3; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
td.wrap, td.slice { white-space: normal; max-width: 12em; overflow-wrap: break-word; }
td.slice { min-width: 7em; }
.nowrap { white-space: nowrap; }
tbody tr.sig td { background: var(--good); }
tbody tr.sig.worse td { background: var(--bad); }
td .text { max-height: 14em; width: 26em; overflow: auto; white-space: pre-wrap;
  overflow-wrap: anywhere; }
td .text p { margin: 0 0 0.35em; }
td .text p.claim { white-space: normal; border-left: 3px solid #d55e00; padding-left: 0.4em; }
.sub, .lbl { color: var(--muted); font-size: 0.78rem; }
.lbl { font-weight: 600; margin-right: 0.3em; }
q { font-style: italic; }
figure.chart { margin: 0.75rem 0 1.25rem; }
figure.chart svg { width: 100%; max-width: 72rem; height: auto; display: block; }
figcaption { color: var(--muted); font-size: 0.85rem; margin-top: 0.25rem; max-width: 75rem; }
.search { display: flex; flex-wrap: wrap; gap: 0.75rem; align-items: center; margin: 0.5rem 0; }
.search input { font: inherit; padding: 0.35rem 0.6rem; width: min(28rem, 100%);
  border: 1px solid var(--line); border-radius: 4px; }
.search span { color: var(--muted); font-size: 0.85rem; }
summary { cursor: pointer; }
details.sig summary { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
details.sig > div { margin: 0.25rem 0 0.25rem 1rem; }
details.fold { border: 1px solid var(--line); border-radius: 4px; margin: 0.5rem 0;
  padding: 0.4rem 0.75rem; }
details.fold > summary { font-weight: 600; }
details.fold > summary .sub { font-weight: normal; }
details.fold > figure.chart { margin-bottom: 0.5rem; }
#headline-table th, #headline-table td { padding: 0.35rem 0.3rem; }
#headline-table thead th { min-width: 0; hyphens: manual; font-size: 0.75rem; width: 3em; }
#headline-table thead th:first-child { width: auto; }
#headline-table th:first-child, #headline-table td:first-child { min-width: 6.5em;
  max-width: 11em; }
#headline-table .ci { display: block; font-size: 0.68rem; color: var(--muted);
  white-space: nowrap; }
#headline-table td.flag { white-space: normal; min-width: 4.5em; width: 6em; }
#headline-table td.warn { color: #b3261e; font-weight: 600; }
/* Below the width its widest column set needs (17 columns: about 1,160 px), the headline
   stacks: a model is a block of labelled cells. */
@media (max-width: 1260px) {
  #headline-table, #headline-table thead, #headline-table tbody, #headline-table thead tr {
    display: block; }
  .headline-wrap { max-height: none; }
  .headline-wrap:has(tbody tr:nth-child(7)) { max-height: 75vh; }
  #headline-table thead th { display: none; }
  #headline-table thead th:first-child { display: block; position: static; max-width: none;
    background: none; color: var(--muted); font-weight: normal; box-shadow: none; }
  #headline-table tbody tr { display: grid;
    grid-template-columns: repeat(auto-fill, minmax(8.5rem, 1fr));
    border-bottom: 2px solid var(--line); }
  #headline-table tbody td { border-bottom: 0; white-space: normal; text-align: left;
    min-width: 0; max-width: none; }
  #headline-table tbody td.flag { width: auto; }
  #headline-table tbody td:first-child { grid-column: 1 / -1; position: static;
    max-width: none; font-weight: 600; box-shadow: none; background: var(--band); }
  #headline-table tbody td:not(:first-child)::before { content: attr(data-label);
    display: block; color: var(--muted); font-size: 0.72rem; }
  #headline-table .ci { display: inline; }
}
@media (max-width: 900px) {
  header, main, nav ul { padding-left: 0.75rem; padding-right: 0.75rem; }
  table { font-size: 0.8rem; }
  th, td { padding: 0.3rem 0.45rem; }
}
"""


def esc(value: object) -> str:
    """``value`` as HTML text (``None`` → ``(none)``), quotes escaped too.

    >>> esc('<b a="1">')
    '&lt;b a=&quot;1&quot;&gt;'
    """
    return html.escape(charts.label(value), quote=True)


def esc_cut(value: object, limit: int = MAX_TEXT_CHARS) -> str:
    """:func:`esc` of the first ``limit`` characters of ``value``, then a marker that says how
    many more were cut (:func:`pipeline.report.limits.cut_marker`).

    >>> esc_cut("<b>" * 3, 4)
    '&lt;b&gt;&lt; <span class="sub cut">… [cut: 5 more characters]</span>'
    """
    text, more = cut_text(charts.label(value), limit)
    marker = f' <span class="sub cut">{cut_marker(more)}</span>' if more else ""
    return esc(text) + marker


def fmt(value: object, kind: str = "score") -> str:
    """A number with the decimals of its kind; ``—`` for null or NaN.

    >>> fmt(0.6123), fmt(1234.5, "tokens"), fmt(None)
    ('0.61', '1,234', '—')
    """
    if value is None or (isinstance(value, float) and value != value):
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if kind == "text" or isinstance(value, str):
        return esc(value)
    if isinstance(value, int) and kind in ("count", "tokens"):
        return f"{value:,}"
    number = float(value)  # type: ignore[arg-type]
    return f"{number:,.{DECIMALS[kind]}f}"


def fmt_auto(value: object) -> str:
    """A number of unknown scale (differences, p-values) with about three significant digits.

    >>> fmt_auto(0.01234), fmt_auto(123.4), fmt_auto(0.00001), fmt_auto(-0.0)
    ('0.012', '123', '1.0e-05', '0.000')
    """
    if value is None or (isinstance(value, float) and value != value):
        return "—"
    number = float(value) + 0.0  # type: ignore[arg-type]  # + 0.0 turns -0.0 into 0.0
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


def _th(text: str, numeric: bool = False, key: bool = False) -> str:
    classes = " ".join(c for c, on in (("num", numeric), ("key", key)) if on)
    attrs = f' class="{classes}"' if classes else ""
    return f'<th scope="col"{attrs}>{text}</th>'


def _table(
    headers: Sequence[str],
    rows: Sequence[str],
    *,
    numeric: Sequence[bool],
    table_id: str = "",
    key: Sequence[str] = (),
) -> str:
    """A table in its own scrolling box; the first column sticks to the box's left edge.

    ``key`` names the headers that must stay in view: they are marked ``class="key"`` (the
    browser test checks they are visible at 1400 and 800 px) and should come early.
    """
    head = "".join(_th(headers[k], numeric[k], headers[k] in key) for k in range(len(headers)))
    id_attr = f' id="{table_id}"' if table_id else ""
    return (
        f'<div class="table-wrap"><table{id_attr}><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _td(text: str, numeric: bool = False, title: str = "", css: str = "") -> str:
    css = " ".join(c for c in ("num" if numeric else "", css) if c)
    attrs = (f' class="{css}"' if css else "") + (f' title="{title}"' if title else "")
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


def _signatures(headline: pl.DataFrame) -> str:
    """The run's signature(s) folded in a ``<details>`` element: one short line (the tool and
    version, whether every model shares it, how many settings it records), the full text
    when opened."""
    if "signature" not in headline.columns:
        return "—"
    per_model = headline["signature"].drop_nulls().unique().sort().to_list()
    parts = sorted({part for full in per_model for part in full.split("; ")})
    if not parts:
        return "—"
    fields = parts[0].split("|")
    short = "|".join(fields[:2]) + ("|…" if len(fields) > 2 else "")
    settings = sum(len(part.split("|")) - 1 for part in parts)
    shared = ("the same for every model" if len(per_model) == 1 else
              f"<strong>{len(per_model)} different ones across models</strong>: compare "
              "numbers only where they match")
    full = "<br>".join(f'<span class="sig-text">{esc(part)}</span>' for part in parts)
    return (f'<details class="sig"><summary><span class="sig-text">{esc(short)}</span> '
            f'<span class="sub">{shared}; {settings:,} settings</span></summary>'
            f"<div>{full}</div></details>")


def _header(data: RunData, title: str) -> str:
    items = [
        ("Run directory", f"<code>{esc(str(data.out_dir.resolve()))}</code>"),
        ("Rows", f"{fmt(data.n_rows, 'count')} scored, {fmt(data.n_rejected, 'count')} rejected"),
        ("Models", ", ".join(esc(m) for m in data.models) or "—"),
        ("Signature", _signatures(data.headline)),
        ("Intervals", _intervals_text(data.intervals, data.stats_ignored)),
        ("Model comparisons", "comparisons.parquet" if data.comparisons is not None
         else "none (statistics ignored, see above)" if data.stats_ignored
         else "none (no comparisons.parquet)"),
        ("Generated by", f"rag-eval {esc(__version__)}"),
    ]
    meta = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items)
    return (f'<header id="summary"><h1>{esc(title)}</h1><dl class="meta">{meta}</dl>'
            "</header>")


def _intervals_text(intervals: pl.DataFrame | None, ignored: str | None = None) -> str:
    if ignored:
        return (f"none: <strong>statistics ignored</strong>: {esc(ignored)}; numbers are shown "
                "<strong>without confidence intervals</strong>")
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


def headline_columns(headline: pl.DataFrame) -> list[Column]:
    """The columns of the ``headline`` view the report's headline table shows, in the view's
    order: the columns the terminal shows (:func:`pipeline.views.headline_columns`), but the
    model (the row key) and the signature (:data:`HEADLINE_HIDDEN`).

    >>> frame = pl.DataFrame({"model": ["m"], "n": [3], "answer_f1": [0.5],
    ...                       "n_unanswerable": [None], "signature": ["s"]})
    >>> [c.name for c in headline_columns(frame)]
    ['n', 'answer_f1']
    """
    columns = []
    shown = set(views.headline_columns(headline))  # the terminal's columns, the same rule
    for name, dtype in headline.schema.items():
        if name in HEADLINE_HIDDEN or name not in shown:
            continue
        kind = ("count" if dtype.is_integer() else "score" if dtype.is_numeric() else "text")
        columns.append(HEADLINE.get(name, Column(name, esc(name), kind)))
    return columns


def _plain(title: str) -> str:
    """A column title as plain text (no soft hyphens, no markup), for ``data-label``."""
    return html.unescape(title).replace("\xad", "")


def _headline_cell(record: Mapping[str, object], column: Column) -> str:
    """One cell of the headline table: the value, its interval beneath (``.ci``), the
    unrounded value on hover, and the column title for the stacked layout of narrow windows."""
    value = record[column.name]
    label = esc(_plain(column.title))
    if column.kind == "text":
        warn = isinstance(value, str) and value.upper().startswith("WARNING")
        css = ' class="flag warn"' if warn else ' class="flag"'
        text = fmt(value, "text").replace("+", "+<wbr>")  # IDK+citation may break there
        return f'<td{css} data-label="{label}">{text}</td>'
    low, high = record.get(f"{column.name}_lo"), record.get(f"{column.name}_hi")
    text = fmt(value, column.kind)
    if value is not None and low is not None and high is not None:
        text += (f'<span class="ci"> [{fmt(low, column.kind)}, '
                 f"{fmt(high, column.kind)}]</span>")
    return (f'<td class="num" data-label="{label}" title="{fmt_auto(value)}">{text}</td>')


def _headline(data: RunData) -> str:
    columns = headline_columns(data.headline)
    frame = with_ci(data.headline, data.intervals, "by_model",
                    [c.name for c in columns if c.kind not in ("count", "text")])
    rows = []
    for record in frame.to_dicts():
        cells = [f'<td data-label="Model">{esc(record["model"])}</td>',
                 *(_headline_cell(record, c) for c in columns)]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    head = ""
    for c in columns:  # a title's tooltip is the view column's name
        css = "" if c.kind == "text" else ' class="num"'
        head += f'<th scope="col"{css} title="{esc(c.name)}">{c.title}</th>'

    table = (
        '<div class="table-wrap headline-wrap"><table id="headline-table">'
        f'<thead><tr><th scope="col">Model</th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )
    note = ("Point estimates are the <code>headline</code> view (its columns that hold a value, "
            "in its order; hover a title for the column name); brackets give the 95% "
            "bootstrap interval of the mean (Wilson score interval for the abstain rate)."
            if data.intervals is not None else
            "Point estimates are the <code>headline</code> view (its columns that hold a value, "
            "in its order). No intervals.parquet: shown without confidence intervals.")
    legend = "; ".join(f"<strong>{esc(_plain(c.title))}</strong>: {HEADLINE_LEGEND[c.name]}"
                       for c in columns if c.name in HEADLINE_LEGEND)
    legend = f'<p class="note">{legend}.</p>' if legend else ""
    return _section("headline", "Headline", table + f'<p class="note">{note}</p>' + legend
                    + checks.headline_notes(data.headline))


def _user_metrics(data: RunData) -> str:
    """The run's user-defined metrics (docs/custom-metrics.md): each model's mean (sum for a
    count) with its interval, and what each metric is."""
    specs = [s for s in data.user_metrics if s.name in data.by_model.columns
             and s.kind in ("score", "flag", "count")]
    if not specs:
        return _section("user-metrics", "Your metrics", '<p class="note">No user-defined '
                        "metrics in this run (docs/custom-metrics.md).</p>")
    columns = [Column(s.name, esc(s.name), "count" if s.kind == "count" else "score")
               for s in specs]
    frame = with_ci(data.by_model, data.intervals, "by_model", [c.name for c in columns])
    direction = {True: "higher is better", False: "lower is better", None: "no better direction"}
    items = "".join(
        f"<dt><code>{esc(s.name)}</code></dt><dd>{esc(s.description)} ({esc(s.kind)}, "
        f"{'summed' if s.kind == 'count' else 'mean over rows'}, "
        f"{direction[s.higher_is_better]})</dd>"
        for s in specs
    )
    return _section("user-metrics", "Your metrics", _metric_table(frame, columns)
                    + f'<dl class="meta">{items}</dl>')


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


def _key_text(value: object) -> str:
    """A slice key value as text: ``0.2`` for a noise level, ``(none)`` for null."""
    if isinstance(value, float):
        return f"{value:g}"
    return charts.label(value)


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


def _search_box(table_id: str, count_id: str, placeholder: str) -> str:
    return (f'<div class="search"><input type="search" id="{table_id}-search" '
            f'data-filter="{table_id}" '
            f'data-count="{count_id}" placeholder="{placeholder}" aria-label="{placeholder}">'
            f'<span id="{count_id}"></span></div>')


def _noise_text(value: object) -> str:
    """A noise level as written in the data (``0.2``), ``—`` when unknown."""
    if value is None or (isinstance(value, float) and value != value):
        return "—"
    return esc(f"{float(value):g}")  # type: ignore[arg-type]


def unsupported_sentences(
    frame: pl.DataFrame, abstention_phrases: Sequence[str] = DEFAULT_ABSTENTION_PHRASES
) -> pl.DataFrame:
    """Which response sentences grounding found unsupported, as far as the stored data tells.

    ``frame`` has ``response``, ``n_sentences`` and ``n_supported`` and, optionally,
    ``n_contexts`` (from ``scores``). The run stores only the counts, not which sentences were
    supported, nor the contexts. So the response is split again with the splitter grounding
    uses (:func:`pipeline.text.sentences.split_sentences`), and the sentences that fail a rule
    checkable without the passages are named (:mod:`pipeline.metrics.embedding.grounding`,
    rules 1 and 2): ``no citation``, ``cites several passages``, ``cites a passage that was not
    retrieved`` (a number beyond ``n_contexts``, where known) or ``abstains`` (the default
    abstention phrases). The other unsupported sentences cite one passage that did not support
    them (cosine below ``tau_sim``); they are named only when every cited sentence failed
    (``n_supported == 0``), else only counted.

    Adds ``n_unsupported`` (null without grounding), ``unsupported_sentence`` and
    ``unsupported_reason`` (the first named one), ``unsupported_more`` (further named ones),
    ``unsupported_unnamed`` (unsupported sentences that cannot be told apart) and
    ``unsupported_unnamed_cited`` (those are known to be cited sentences: the split matches
    the stored count and names no more sentences than failed).

    Runs that store ``first_unsupported`` (the grounding metric) name that sentence exactly:
    it replaces the guess when no rule named a sentence, with the reason the rules give it or
    ``not supported by the passage it cites``.

    >>> frame = pl.DataFrame({"response": ["Paris is in France [1]. It is big. Rome [1]."],
    ...                       "n_sentences": [3], "n_supported": [1]})
    >>> unsupported_sentences(frame).select("unsupported_sentence", "unsupported_reason",
    ...                                     "unsupported_unnamed").row(0)
    ('It is big.', 'no citation', 1)
    """
    folded = fold_phrases(abstention_phrases)
    sentence, numbers = pl.col("_sentence"), parse_citation_markers(pl.col("_sentence"))
    passages = pl.col("_n_contexts")
    reason = (
        pl.when(numbers.list.len() == 0).then(pl.lit("no citation"))
        .when(numbers.list.len() > 1).then(pl.lit("cites several passages"))
        .when(passages.is_not_null() & ~numbers.list.first().is_between(1, passages))
        .then(pl.lit("cites a passage that was not retrieved"))
        .when(fold(sentence).str.contains_any(folded)).then(pl.lit("abstains"))
    )
    known_passages = (pl.col("n_contexts").cast(pl.Int64) if "n_contexts" in frame.columns
                      else pl.lit(None, pl.Int64))
    split = (
        frame.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"),
                     split_sentences(pl.col("response")).alias("_sentence"),
                     known_passages.alias("_n_contexts"))
        .explode("_sentence")
        .drop_nulls("_sentence")
        .with_columns(reason.alias("_reason"))
        .group_by("_row", maintain_order=True)
        .agg(
            pl.len().alias("_split"),
            sentence.filter(pl.col("_reason").is_not_null()).alias("_named"),
            pl.col("_reason").drop_nulls().alias("_reasons"),
            sentence.first().alias("_first"),
            pl.col("_reason").first().alias("_first_reason"),
        )
    )
    rows = frame.with_columns(pl.int_range(pl.len(), dtype=pl.Int64).alias("_row")).join(
        split, on="_row", how="left", maintain_order="left"
    )
    total, supported = pl.col("n_sentences"), pl.col("n_supported")
    unsupported = total - supported
    if "first_unsupported" in frame.columns:  # stored by grounding: exact, not a guess
        stored = pl.col("first_unsupported")
        rows = rows.with_columns(
            pl.when(stored.is_not_null() & (pl.col("_named").list.len().fill_null(0) == 0))
            .then(pl.concat_list(stored)).otherwise(pl.col("_named")).alias("_named"),
            pl.when(stored.is_not_null() & (pl.col("_named").list.len().fill_null(0) == 0))
            .then(pl.concat_list(pl.lit("not supported by the passage it cites")))
            .otherwise(pl.col("_reasons")).alias("_reasons"),
        )
    named = pl.col("_named").list.len().fill_null(0)
    trusted = pl.col("_split").fill_null(0) == total  # the split agrees with the stored count
    exact = trusted & (named == unsupported)
    everything = trusted & (supported == 0) & (unsupported > 0)
    partial = trusted & (named < unsupported) & (named > 0)
    return rows.select(
        pl.exclude("_row", "_split", "_named", "_reasons", "_first", "_first_reason"),
        unsupported.alias("n_unsupported"),
        pl.when(everything).then(pl.col("_first"))
        .when(exact | partial).then(pl.col("_named").list.first())
        .alias("unsupported_sentence"),
        pl.when(everything).then(pl.coalesce(pl.col("_first_reason"),
                                             pl.lit("not supported by the passage it cites")))
        .when(exact | partial).then(pl.col("_reasons").list.first())
        .alias("unsupported_reason"),
        pl.when(everything).then(unsupported - 1)
        .when(exact | partial).then(named - 1)
        .otherwise(0).alias("unsupported_more"),
        pl.when(everything | exact).then(0)
        .when(partial).then(unsupported - named)
        .otherwise(unsupported).alias("unsupported_unnamed"),
        (trusted & (named <= unsupported)).alias("unsupported_unnamed_cited"),
    )


def _unsupported_text(r: Mapping[str, object], limit: int = MAX_TEXT_CHARS) -> str:
    """What the worst-items table says about the unsupported sentences of a row ("" if none);
    the sentence cut after ``limit`` characters."""
    total, missing = r.get("n_sentences"), r.get("n_unsupported")
    if total is None or missing is None or missing == 0:
        return ""
    if r.get("n_contexts") == 0:
        return "no passage was retrieved: grounding does not apply"
    noun = "sentence" if total == 1 else "sentences"
    parts = [f"{fmt(missing, 'count')} of {fmt(total, 'count')} {noun} unsupported:"]
    if r["unsupported_sentence"] is not None:
        parts.append(f"<q>{esc_cut(r['unsupported_sentence'], limit)}</q> "
                     f'<span class="sub">({esc(r["unsupported_reason"])})</span>')
        if r["unsupported_more"]:
            parts.append(f'<span class="sub">and {fmt(r["unsupported_more"], "count")} '
                         "more</span>")
    unnamed = r["unsupported_unnamed"]
    if unnamed:
        what = ("not supported by the passage cited" if r["unsupported_unnamed_cited"]
                else "not identified")
        parts.append(f'<span class="sub">{fmt(unnamed, "count")} '
                     f'{"sentence" if unnamed == 1 else "sentences"} {what} (which ones is '
                     "not stored)</span>")
    return " ".join(parts)


#: What the worst-items table shows for a response that says nothing (``empty_response``).
EMPTY_RESPONSE = '<span class="sub">(empty response)</span>'


def _text_html(r: Mapping[str, object], column: str, limit: int = MAX_TEXT_CHARS) -> str:
    """The escaped text of ``column``, cut after ``limit`` characters (:func:`esc_cut`); a
    response that says nothing (null, blank, or citation markers only: ``empty_response``) is
    shown as "(empty response)", after its markers if any."""
    text = r[column] if r[column] is not None else ""
    if column != "response":
        return esc_cut(text, limit)
    empty = r.get("empty_response")
    if empty == 1 or (empty is None and not str(text).strip()):
        return f"{esc_cut(text, limit)} {EMPTY_RESPONSE}" if str(text).strip() else EMPTY_RESPONSE
    return esc_cut(text, limit)


def _texts_cell(r: Mapping[str, object], texts: Sequence[str], limit: int) -> str:
    labels = {"question": "Q", "reference": "Reference", "response": "Response"}
    blocks = [
        f'<p><span class="lbl">{labels[c]}</span>{_text_html(r, c, limit)}</p>'
        for c in texts
    ]
    unsupported = _unsupported_text(r, limit)
    if unsupported:
        blocks.append(f'<p class="claim"><span class="lbl">Unsupported</span>{unsupported}</p>')
    return f'<div class="text">{"".join(blocks)}</div>'


def _worst(data: RunData, limit: int = MAX_TEXT_CHARS) -> str:
    """The worst-items table; every text cut after ``limit`` characters (:func:`esc_cut`)."""
    frame = data.worst
    if frame.height == 0:
        return _section("worst", "Worst items", '<p class="empty">No scored rows.</p>')
    texts = [c for c in ("question", "reference", "response") if c in frame.columns]
    grounding = "response" in frame.columns and "n_sentences" in frame.columns
    if grounding:
        frame = unsupported_sentences(frame)
    rows = []
    for r in frame.to_dicts():
        category = esc_cut(r["category"], limit)
        if r.get("task") is not None:
            category += f'<br><span class="sub">{esc_cut(r["task"], limit)}</span>'
        cells = [_td(esc(r["model"])), _td(fmt(r["worst_rank"], "count"), True),
                 _td(esc_cut(r["id"], limit), css="wrap"),
                 _td(_noise_text(r.get("noise_level")), True), _td(category, css="wrap")]
        cells += [_td(fmt(r[c.name], c.kind), True) for c in WORST_SCORES]
        cells.append(_td(esc(r["primary_failure_mode"]).replace("_", "_<wbr>")))
        if texts:
            cells.append(_td(_texts_cell(r, texts, limit)))
        rows.append(f"<tr>{''.join(cells)}</tr>")
    text_title = " · ".join([*texts, *(["unsupported sentence"] if grounding else [])])
    text_title = text_title[:1].upper() + text_title[1:]
    headers = ["Model", "#", "ID", "Noise", "Category", *(c.title for c in WORST_SCORES),
               "Failure mode", *([text_title] if texts else [])]
    numeric = [False, True, False, True, False, *([True] * len(WORST_SCORES)), False,
               *([False] if texts else [])]
    missing = "" if texts else (" texts.parquet is missing, so the texts are not shown.")
    search = _search_box("worst-table", "worst-count", "Search questions, answers, models…")
    return _section("worst", "Worst items per model", search + _table(
        headers, rows, numeric=numeric, table_id="worst-table",
        key=("Model", "Noise", "Category", "F1"))
        + f'<p class="note">The {WORST_N} rows with the lowest answer F1 per model (ties: lowest '
        "overall score). Category shows the task of RGB rows beneath. Unsupported: the "
        "response is split as grounding splits it; sentences without exactly one citation, "
        "or that abstain, are named; a sentence that cites one passage but was not supported "
        "by it is named only when no sentence was supported (the run stores the counts, not "
        "which sentence failed the similarity test). A text longer than "
        f"{fmt(limit, 'count')} characters is cut, with a marker that counts the rest "
        f"(<code>Limits.text_chars</code>; texts.parquet has it whole).{missing}</p>")


def _nav(section_ids: Sequence[str]) -> str:
    titles = {
        "summary": "Summary", "headline": "Headline", "answers": "F1 vs EM",
        "citations": "Citations", "distributions": "Distributions",
        "generation": "Generation (6 plots)", "categories": "Categories",
        "noise": "Noise", "rgb": "RGB", "grounding": "Grounding", "cost": "Cost",
        "profile": "Profile", "failures": "Failures", "failure-stages": "Failure stages",
        "user-metrics": "Your metrics",
        "comparisons": "Comparisons",
        "run-comparison": "Run comparison", "worst": "Worst items", "appendix": "Appendix",
    }
    links = "".join(f'<li><a href="#{s}">{titles[s]}</a></li>' for s in section_ids)
    return f'<nav aria-label="Sections"><ul>{links}</ul></nav>'


def script_hash() -> str:
    """The CSP source that allows :data:`SCRIPT` (``'sha256-…'``)."""
    digest = hashlib.sha256(SCRIPT.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"


def render(
    data: RunData,
    *,
    diff: pl.DataFrame | None = None,
    regressed: pl.DataFrame | None = None,
    title: str | None = None,
    limits: Limits = Limits(),  # noqa: B008 - frozen
) -> str:
    """The complete HTML document for ``data``; a run comparison when ``diff`` is given (its
    regressed items too when ``regressed`` is), first, under the summary. Charts, comparisons
    and worst items draw at most the models and categories of ``limits``, the per-example
    charts at most ``limits.examples`` rows per model (:mod:`pipeline.report.limits`)."""
    title = title or f"Evaluation report: {Path(data.out_dir).resolve().name}"
    capped = cap(data, limits)
    drawn = capped.data
    total = None if data.comparisons is None else data.comparisons.height
    sections = [
        *([_run_comparison(capped_diff(diff, capped, data), regressed, drawn.models,
                           data.user_metrics)]
          if diff is not None else []),
        _headline(data), _answers(data), _citations(data), _distributions(drawn),
        _generation(drawn, limits.examples),
        _categories(drawn), _noise(drawn), _rgb(drawn), _grounding(drawn), _cost(drawn),
        _profile(drawn), _failures(drawn), _failure_stages(drawn), _user_metrics(data),
        _comparisons(drawn, limits.comparison_rows, total),
        _worst(drawn, limits.text_chars), _appendix(data),
    ]
    sections = [with_notes(s, capped.notes.get(section_id(s), [])) for s in sections]
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
