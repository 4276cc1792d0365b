"""Export the per-row results as one flat table for people who read results in a spreadsheet.

One row per scored input row: the key columns, the question, reference and response (from
``texts.parquet``), every metric, feedback text and flag of ``scores.parquet``. List columns
(``bias_categories``, ``suggestions``) are joined with ``"; "``; ``row_hash`` is written as hex
in the text formats. Written atomically.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipeline.io.atomic import atomic_path
from pipeline.io.layout import SCORES_FILE, TEXTS_FILE
from pipeline.schema import InputError

FORMATS = ("tsv", "csv", "parquet")
_JOIN = "; "


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


def export(out_dir: Path, target: Path, fmt: str = "tsv") -> int:
    """Write the export of ``out_dir`` to ``target`` in ``fmt``; return the number of rows."""
    if fmt not in FORMATS:
        raise InputError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    table = export_table(out_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp:
        if fmt == "parquet":
            table.write_parquet(tmp)
        else:
            flatten_lists(table).write_csv(tmp, separator="\t" if fmt == "tsv" else ",")
    return table.height
