"""What ``evaluate`` prints after a run: the headline view as a table that fits the terminal,
the notes under it (faithfulness, counts and warnings, rows without tokens), the RGB summary,
and the rejection reasons with the most rows."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path

import polars as pl

from pipeline.cli.frames import (
    ONE_DECIMAL_COLUMNS,
    PERCENT_COLUMNS,
    print_fitted,
    say,
)
from pipeline.drivers import rejection_reasons
from pipeline.views import HEADLINE_NOTES, headline_columns, query_views

log = logging.getLogger("pipeline")

#: Kinds of rejection reason the line of an ``evaluate`` run lists, most rows first.
TOP_REASONS = 5

#: Printed under the headline table when it shows faithfulness: what its numbers mean.
FAITHFULNESS_NOTE = (
    "faithfulness: the share of a response's claims that its passages support (0: none, 1: "
    "all; docs/grounding.md), null without passages or claims; overlap: the share of its "
    "sentences supported. Under [compat] preset core-rag: min(1, 0.6 + 0.4 x overlap)."
)


def print_rejections(files: str | Path) -> None:
    """The kinds of rejection reason with the most rows (values masked), and where the rows
    and their full reasons are."""
    reasons = rejection_reasons(files)
    print("rejected rows by reason:")
    for reason, rows in reasons.head(TOP_REASONS).iter_rows():
        print(f"{rows:>9}  {reason}")
    rest = reasons.slice(TOP_REASONS)
    if rest.height:
        kinds = "1 other reason" if rest.height == 1 else f"{rest.height} other reasons"
        print(f"{rest['rows'].sum():>9}  ({kinds})")
    print(f"rejected rows and reasons: {files}")


#: The model cell of rows without a model (no ``model`` column and no ``--model``).
NO_MODEL = "(none)"


#: What :func:`print_headline` reads: name -> SQL over the views. ``evaluate`` has them answered
#: while its views are built (beside the statistics), and passes the frames.
HEADLINE_QUERIES: dict[str, str] = {
    "headline": "select * from headline order by model",
    "rgb": "select * from rgb_summary order by model",
    "tokenless": "select * from tokenless_rows",
}


def print_headline(directory: Path, *, wide: bool = False,
                   frames: Mapping[str, pl.DataFrame] | None = None) -> None:
    """The headline view (:func:`pipeline.views.headline_columns`, as many as the terminal
    holds; all with ``wide``), a line per count or warning column shown, and the RGB summary
    when the run has RGB rows. Rows without a model show :data:`NO_MODEL`. A run that scored
    no row prints one line instead. The signatures are logged at info level (``-v``); every
    output file keeps them (the ``signature`` column). ``frames``: the results of
    :data:`HEADLINE_QUERIES` where the caller has them (else they are queried)."""
    print()
    if frames is None or not set(HEADLINE_QUERIES) <= set(frames):
        frames = query_views(directory, HEADLINE_QUERIES)
    headline, rgb = frames["headline"], frames["rgb"]
    if headline.height == 0 or headline["n"].sum() == 0:
        print("no row was scored: no headline to show")
        return
    headline = headline.with_columns(pl.col("model").fill_null(NO_MODEL))
    columns = headline_columns(headline)
    print_fitted(headline.select(columns), wide=wide, percent=sorted(PERCENT_COLUMNS),
                 one_decimal=sorted(ONE_DECIMAL_COLUMNS),
                 more="rag-eval evaluate --wide, the report, or the headline view")
    if "faithfulness" in columns:
        say(FAITHFULNESS_NOTE)
    for column, note in HEADLINE_NOTES.items():
        if column in columns:
            say(note)
    for note in tokenless_notes(frames["tokenless"]):
        log.info("tokenless rows: %s", note)
        say(note)
    for signature in headline["signature"].drop_nulls().unique(maintain_order=True):
        log.info("signature: %s", signature)
    if rgb.height:
        rgb = rgb.with_columns(pl.col("model").fill_null(NO_MODEL))
        print("\nRGB robustness (% of rows, docs/rgb.md):")
        rates = [c for c in rgb.columns if c not in ("model", "n", "signature")]
        print_fitted(rgb.drop("signature"), wide=wide, one_decimal=rates,
                     more="--wide, or the rgb_summary view")


def tokenless_notes(tokenless: pl.DataFrame) -> list[str]:
    """One line per metric whose tokenizer found no token in some rows (view tokenless_rows).

    >>> tokenless_notes(pl.DataFrame({"metric": ["rouge", "bleu"], "n_rows": [30, 30],
    ...     "n_without_tokens": [23, 0], "n_reference_without_tokens": [20, 0],
    ...     "n_response_without_tokens": [5, 0]}))
    ['ROUGE: 23 of 30 rows without tokens (reference 20, response 5); scores 0 there']
    """
    return [
        f"{row['metric'].upper()}: {row['n_without_tokens']} of {row['n_rows']} rows without "
        f"tokens (reference {row['n_reference_without_tokens']}, response "
        f"{row['n_response_without_tokens']}); scores 0 there"
        for row in tokenless.iter_rows(named=True) if row["n_without_tokens"]
    ]
