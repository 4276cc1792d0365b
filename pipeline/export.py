"""Export the per-row results as one flat table for people who read results in a spreadsheet.

One row per scored input row: the key columns, the question, reference and response (from
``texts.parquet``), every metric, feedback text and flag of ``scores.parquet``. List columns
(``bias_categories``, ``suggestions``) are joined with ``"; "``; ``row_hash`` is written as hex
in the text formats. Written atomically.

The text formats are opened in spreadsheets, and a cell that starts with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return runs there as a formula; model output is untrusted. So by
default every string cell of a CSV or TSV export (list columns after joining) that starts with
one of :data:`FORMULA_TRIGGERS` gets a ``'`` in front, the rule of OWASP's "CSV Injection"
page; numbers are not strings and stay as they are. Parquet is written unchanged.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipeline.io.atomic import atomic_path
from pipeline.io.layout import SCORES_FILE, TEXTS_FILE
from pipeline.schema import InputError

FORMATS = ("tsv", "csv", "parquet")
_JOIN = "; "
#: First characters that make a spreadsheet read a cell as a formula (OWASP, CSV Injection).
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
#: What a neutralized cell starts with: spreadsheets show the rest as text.
FORMULA_ESCAPE = "'"


def export_table(out_dir: Path) -> pl.DataFrame:
    """Scores of ``out_dir`` joined with their texts, text columns right after the keys."""
    scores_path, texts_path = out_dir / SCORES_FILE, out_dir / TEXTS_FILE
    for path in (scores_path, texts_path):
        if not path.is_file():
            raise InputError(f"{path} is missing; run `rag-eval evaluate --out {out_dir}` first")
    scores = pl.read_parquet(scores_path)
    texts = pl.read_parquet(texts_path).drop("id")
    table = scores.join(texts, on=["source", "row_number"], how="left", maintain_order="left")
    keys = ["id", "model", "run", "category", "noise_level", "question_type"]
    front = [c for c in (*keys, "question", "reference", "response") if c in table.columns]
    return table.select(*front, pl.exclude(*front))


def flatten_lists(table: pl.DataFrame) -> pl.DataFrame:
    """List columns as ``"; "``-joined strings and binary ones (``row_hash``) as hex text, for
    text formats."""
    lists = [name for name, dtype in table.schema.items() if isinstance(dtype, pl.List)]
    binary = [name for name, dtype in table.schema.items() if dtype == pl.Binary]
    return table.with_columns(
        *(pl.col(name).list.join(_JOIN) for name in lists),
        *(pl.col(name).bin.encode("hex") for name in binary),
    )


def neutralized(column: str) -> pl.Expr:
    """The string column ``column`` with :data:`FORMULA_ESCAPE` before every cell that starts
    with one of :data:`FORMULA_TRIGGERS`; other cells and nulls unchanged.

    >>> pl.DataFrame({"r": ["=1+1", "ok", "-2", None]}).select(neutralized("r"))["r"].to_list()
    ["'=1+1", 'ok', "'-2", None]
    """
    cell = pl.col(column)
    starts = pl.any_horizontal(*(cell.str.starts_with(t) for t in FORMULA_TRIGGERS))
    return pl.when(starts).then(pl.lit(FORMULA_ESCAPE) + cell).otherwise(cell).alias(column)


def neutralize_formulas(table: pl.DataFrame) -> pl.DataFrame:
    """``table`` with every string column :func:`neutralized`; other columns unchanged."""
    strings = [name for name, dtype in table.schema.items() if dtype == pl.String]
    return table.with_columns(*(neutralized(name) for name in strings))


def export(
    out_dir: Path, target: Path, fmt: str = "tsv", *, neutralize: bool = True
) -> int:
    """Write the export of ``out_dir`` to ``target`` in ``fmt``; return the number of rows.

    ``neutralize`` (text formats only) applies :func:`neutralize_formulas`.
    """
    if fmt not in FORMATS:
        raise InputError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    table = export_table(out_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp:
        if fmt == "parquet":
            table.write_parquet(tmp)
        else:
            text = flatten_lists(table)
            if neutralize:
                text = neutralize_formulas(text)
            text.write_csv(tmp, separator="\t" if fmt == "tsv" else ",")
    return table.height
