"""The sections of the page that are tables of the run's numbers: the header (title, run,
signatures, where the intervals come from), the headline table (the ``headline`` view's
columns with their 95% intervals, as ``rag-eval evaluate`` prints it), the user-defined
metrics, and the appendix of every metric's mean and interval."""

from __future__ import annotations

import html
from collections.abc import Mapping

import polars as pl

from pipeline import __version__, views
from pipeline.report import checks
from pipeline.report.data import RunData, with_ci
from pipeline.report.markup import (
    Column,
    _metric_table,
    _section,
    _table,
    _td,
    esc,
    fmt,
    fmt_auto,
    fmt_ci,
)

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
