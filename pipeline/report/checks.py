"""The notes and the warning under the report's headline table, from the ``headline`` view.

* **Faithfulness**: the share of supported claims; the note says so next to the number, and
  that the core RAG preset's ``min(1, 0.6 + 0.4 overlap)`` has a 0.6 baseline.
* **Grounding N**: faithfulness and overlap are means over ``n_grounding`` rows; rows without any
  retrieved passage (``n_no_passages``) are not applicable and left out of both (the core-rag
  preset scores them 0.0 and 0.6 instead, docs/compat.md).
* **"I don't know" + citation**: ``n_idk_with_citation`` counts rows where a sentence says it does
  not know and still cites a passage. The core RAG tool says this must be 0 (anything else is a
  prompt or generation flaw), so a count above 0 is shown as a warning naming the models.

Every model name passes through ``html.escape``.
"""

from __future__ import annotations

import html

import polars as pl

from pipeline.report.charts import label

#: Inline style of the warning (the page's CSP allows inline styles, never scripts).
WARNING_STYLE = ("background:#fdecea;border-left:4px solid #b3261e;padding:0.5rem 0.75rem;"
                 "margin:0.5rem 0;")


def _per_model(frame: pl.DataFrame, column: str) -> str:
    return "; ".join(
        f"{html.escape(label(model), quote=True)}: {count:,}"
        for model, count in zip(frame["model"], frame[column], strict=True)
    )


def grounding_note(headline: pl.DataFrame) -> str:
    """How many rows faithfulness and overlap average over, and how many had no passage."""
    needed = {"n_grounding", "n_no_passages"}
    if not needed <= set(headline.columns) or headline["n_no_passages"].drop_nulls().len() == 0:
        return ""
    known = headline.filter(pl.col("n_no_passages").is_not_null())
    return (
        '<p class="note">Faithfulness and overlap are means over the rows in '
        f"<code>n_grounding</code> ({_per_model(known, 'n_grounding')}). Rows without any "
        "retrieved passage, where grounding does not apply and both are left out (the "
        "<code>core-rag</code> preset scores them 0.6 and 0.0): "
        f"{_per_model(known, 'n_no_passages')}.</p>"
    )


def idk_citation_check(headline: pl.DataFrame) -> str:
    """A warning when a model's "I don't know" + citation count is above 0, else a note that it
    is 0 everywhere; nothing when the count was not computed."""
    if "n_idk_with_citation" not in headline.columns:
        return ""
    known = headline.filter(pl.col("n_idk_with_citation").is_not_null())
    if known.height == 0:
        return ""
    flawed = known.filter(pl.col("n_idk_with_citation") > 0)
    if flawed.height == 0:
        return ('<p class="note">"I don\'t know" + citation count: 0 for every model, as it must '
                "be.</p>")
    return (
        f'<p class="warning" role="alert" style="{WARNING_STYLE}"><strong>Warning: "I don\'t '
        'know" + citation count is not 0.</strong> Rows where a sentence says it does not know '
        f"and still cites a passage: {_per_model(flawed, 'n_idk_with_citation')}. This count "
        "must be 0; anything else points to a flaw in the prompt or the generation "
        "(<code>idk_with_citation</code> marks the rows).</p>"
    )


#: What faithfulness' numbers mean, under the headline table (docs/metrics.md says the same).
FAITHFULNESS_NOTE = (
    '<p class="note">Faithfulness is the share of a response\'s claims that its passages '
    "support (0: none, 1: all; null without passages or claims); overlap is the share of its "
    "sentences supported. Under the core RAG preset it is min(1, 0.6 + 0.4 × overlap), a "
    "proxy with a 0.6 baseline.</p>"
)


def faithfulness_note(headline: pl.DataFrame) -> str:
    """:data:`FAITHFULNESS_NOTE` when some model has a faithfulness, else nothing."""
    if "faithfulness" not in headline.columns or headline["faithfulness"].drop_nulls().len() == 0:
        return ""
    return FAITHFULNESS_NOTE


def headline_notes(headline: pl.DataFrame) -> str:
    """:func:`faithfulness_note`, :func:`idk_citation_check` then :func:`grounding_note` (HTML,
    possibly empty)."""
    return faithfulness_note(headline) + idk_citation_check(headline) + grounding_note(headline)
