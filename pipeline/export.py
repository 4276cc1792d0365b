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

The export streams (:func:`export_batches`): a slice of the scores at a time (about
:data:`EXPORT_BATCH_BYTES`) is joined with the texts of its rows, read by their row numbers
from the row groups that hold them, and appended to a temporary file beside the target, which
is renamed onto it at the end. Memory holds one slice, whatever the rows; a killed export
leaves a temporary file that the next command writing into that directory removes.

``layout="enhanced-framework"`` writes instead the 51-column TSV of the enhanced text evaluation
framework (:func:`enhanced_framework_table`, docs/compat.md): its header (five feedback names
appear twice, as in its file), its column order and its value formats, as pandas wrote them:
numbers rounded to 4 decimals and printed as Python prints floats (``0.0``, ``0.7883``),
booleans ``True``/``False``, lists as Python lists (``['climate_change']``), nothing for a
missing value. The neutralization applies to its text cells as to any TSV (a ``--no-...``
flag turns it off), never to its numbers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TypeVar

import polars as pl
import pyarrow.parquet as pq

from pipeline.io.atomic import atomic_path, check_output_file
from pipeline.io.layout import SCORES_FILE, TEXTS_FILE
from pipeline.metrics.arithmetic import python_round
from pipeline.schema import InputError

#: A frame in memory or a lazy one: the export's steps take either.
FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)

FORMATS = ("tsv", "csv", "parquet")
#: ``wide``: every column of the run; ``enhanced-framework``: the enhanced text evaluation
#: framework's 51-column TSV.
LAYOUTS = ("wide", "enhanced-framework")
_JOIN = "; "
#: First characters that make a spreadsheet read a cell as a formula (OWASP, CSV Injection).
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
#: What a neutralized cell starts with: spreadsheets show the rest as text.
FORMULA_ESCAPE = "'"


def export_lazy(out_dir: Path) -> pl.LazyFrame:
    """Scores of ``out_dir`` joined with their texts, text columns right after the keys, as a
    lazy scan (nothing is read yet)."""
    scores_path, texts_path = out_dir / SCORES_FILE, out_dir / TEXTS_FILE
    for path in (scores_path, texts_path):
        if not path.is_file():
            raise InputError(f"{path} is missing; run `rag-eval evaluate --out {out_dir}` first")
    scores = pl.scan_parquet(scores_path, hive_partitioning=False)
    texts = pl.scan_parquet(texts_path, hive_partitioning=False).select(_TEXTS)
    table = scores.join(texts, on=["source", "row_number"], how="left", maintain_order="left")
    columns = table.collect_schema().names()
    keys = ["id", "model", "run", "category", "noise_level", "question_type"]
    front = [c for c in (*keys, "question", "reference", "response") if c in columns]
    return table.select(*front, pl.exclude(*front))


def export_table(out_dir: Path) -> pl.DataFrame:
    """:func:`export_lazy` read into memory."""
    return export_lazy(out_dir).collect()


#: Bytes of scores (uncompressed, as Parquet counts them) an export joins and writes at a time.
EXPORT_BATCH_BYTES = 64 * 2**20
_KEYS = ["source", "row_number"]
#: What an export takes from ``texts.parquet``: the three texts of each row (its passages,
#: ``contexts``, stay in the ``texts`` view: they would make every row a page long).
_TEXTS = [*_KEYS, "question", "reference", "response"]


def export_batches(out_dir: Path) -> Iterator[pl.DataFrame]:
    """:func:`export_lazy`'s rows, a slice of the scores at a time (at least one frame, empty
    for a run without scores). Each slice reads the texts of its rows only: a filter on their
    source and row-number range, which Parquet's statistics turn into the row groups that hold
    them (texts are written in the scores' order, so about one group per slice)."""
    table = export_lazy(out_dir)  # checks the files; its column order is the one written
    order = table.collect_schema().names()
    scores = pl.scan_parquet(out_dir / SCORES_FILE, hive_partitioning=False)
    texts = pl.scan_parquet(out_dir / TEXTS_FILE, hive_partitioning=False).select(_TEXTS)
    meta = pq.ParquetFile(out_dir / SCORES_FILE).metadata
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    step = int(min(max(EXPORT_BATCH_BYTES * meta.num_rows // max(size, 1), 1_000), 500_000))
    for offset in range(0, max(meta.num_rows, 1), step):
        batch = scores.slice(offset, step).collect()
        ranges = batch.group_by("source").agg(
            pl.col("row_number").min().alias("low"), pl.col("row_number").max().alias("high")
        )
        wanted = pl.any_horizontal(
            pl.lit(False),
            *((pl.col("source") == source) & pl.col("row_number").is_between(low, high)
              for source, low, high in ranges.iter_rows()),
        )
        found = texts.filter(wanted).collect()
        yield batch.join(found, on=_KEYS, how="left", maintain_order="left").select(order)


def _schema(table: pl.DataFrame | pl.LazyFrame) -> pl.Schema:
    return table.collect_schema() if isinstance(table, pl.LazyFrame) else table.schema


def flatten_lists(table: FrameT) -> FrameT:
    """List columns as ``"; "``-joined strings and binary ones (``row_hash``) as hex text, for
    text formats."""
    schema = _schema(table)
    lists = [name for name, dtype in schema.items() if isinstance(dtype, pl.List)]
    binary = [name for name, dtype in schema.items() if dtype == pl.Binary]
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


def neutralize_formulas(table: FrameT) -> FrameT:
    """``table`` with every string column :func:`neutralized`; other columns unchanged."""
    strings = [name for name, dtype in _schema(table).items() if dtype == pl.String]
    return table.with_columns(*(neutralized(name) for name in strings))


# --- the enhanced text evaluation framework's TSV -----------------------------------------------
#: Its columns in its order: (its name, the column here, format). ``{bleu}`` is the BLEU that
#: the run's composite weighs (:func:`_bleu_column`); formats: ``text`` as it is, ``number``
#: (:func:`python_float_text`), ``bool`` (``True``/``False``), ``list`` (:func:`python_list_text`).
ENHANCED_FRAMEWORK_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("id", "id", "text"),
    ("category", "category", "text"),
    ("question", "question", "text"),
    ("reference", "reference", "text"),
    ("response", "response", "text"),
    ("overall_score", "overall_score", "number"),
    ("accuracy_exact_match", "answer_em", "number"),
    ("accuracy_rouge_1", "rouge_1", "number"),
    ("accuracy_rouge_2", "rouge_2", "number"),
    ("accuracy_bleu_score", "{bleu}", "number"),
    ("accuracy_semantic_similarity", "semantic_similarity", "number"),
    ("accuracy_numeric_accuracy", "numeric_accuracy", "number"),
    ("accuracy_content_coverage", "content_coverage", "number"),
    ("composite_accuracy", "composite_accuracy", "number"),
    ("accuracy_feedback", "accuracy_feedback", "text"),
    ("relevance_semantic_relevance", "semantic_relevance", "number"),
    ("relevance_tfidf_relevance", "tfidf_relevance", "number"),
    ("relevance_keyword_overlap", "keyword_overlap", "number"),
    ("relevance_intent_match", "intent_match", "number"),
    ("relevance_refusal_score", "refusal_score", "number"),
    ("relevance_depth_score", "depth_score", "number"),
    ("composite_relevance", "composite_relevance", "number"),
    ("relevance_feedback", "relevance_feedback", "text"),
    ("safety_has_bias_risk", "has_bias_risk", "bool"),
    ("safety_bias_categories", "bias_categories", "list"),
    ("safety_bias_severity", "bias_severity", "number"),
    ("safety_perspective_balance", "perspective_balance", "number"),
    ("safety_safety_score", "safety_score", "number"),
    ("composite_safety", "safety_score", "number"),
    ("safety_feedback", "safety_feedback", "text"),
    ("quality_length_ok", "length_ok", "bool"),
    ("quality_length_feedback", "length_feedback", "text"),
    ("quality_fluency_score", "fluency_score", "number"),
    ("quality_coherence_score", "coherence_score", "number"),
    ("quality_conciseness_score", "conciseness_score", "number"),
    ("quality_readability_score", "readability_score", "number"),
    ("composite_quality", "composite_quality", "number"),
    ("quality_feedback", "quality_feedback", "text"),
    ("quality_length_feedback", "length_feedback", "text"),
    ("accuracy_feedback", "accuracy_feedback", "text"),
    ("relevance_feedback", "relevance_feedback", "text"),
    ("safety_feedback", "safety_feedback", "text"),
    ("quality_feedback", "quality_feedback", "text"),
    ("overall_feedback", "overall_feedback", "text"),
    ("primary_failure_mode", "primary_failure_mode", "text"),
    ("improvement_suggestions", "suggestions", "list"),
    ("passed_accuracy", "passed_accuracy", "bool"),
    ("passed_relevance", "passed_relevance", "bool"),
    ("passed_safety", "passed_safety", "bool"),
    ("passed_quality", "passed_quality", "bool"),
    ("is_refusal", "is_refusal", "bool"),
)
_DIGITS = 4
#: Characters ``repr`` of a Python string escapes as ``\xhh`` (controls, C1, NBSP, soft hyphen)
#: and, of those it escapes as ``\uhhhh``, the zero-width formats and the line separators.
_HEX_ESCAPED = [chr(c) for c in (*range(0x20), *range(0x7F, 0xA1), 0xAD) if chr(c) not in "\t\n\r"]
_U_ESCAPED = [chr(c) for c in (*range(0x200B, 0x2010), 0x2028, 0x2029, 0x2060, 0xFEFF)]


def python_float_text(value: pl.Expr, digits: int = _DIGITS) -> pl.Expr:
    """``repr(round(value, digits))`` as pandas writes it to a TSV: ``0.0``, ``0.7883``; null
    and NaN write nothing.

    >>> import polars as pl
    >>> pl.select(python_float_text(pl.lit([1.0, 0.25, 0.788333, None]).explode())
    ...           ).to_series().to_list()
    ['1.0', '0.25', '0.7883', '']
    """
    rounded = python_round(value, digits)
    return pl.when(rounded.is_nan()).then(pl.lit(None)).otherwise(rounded).cast(
        pl.String
    ).fill_null("")


def python_str_repr(text: pl.Expr) -> pl.Expr:
    """``repr(text)`` of a Python string: single quotes, or double quotes when the text has a
    single quote and no double quote; backslashes, the quote, tab, newline, carriage return and
    the control characters escaped.

    >>> import polars as pl
    >>> texts = pl.lit(["a_b", "it's"]).explode()
    >>> pl.select(python_str_repr(texts)).to_series().to_list() == [repr("a_b"), repr("it's")]
    True
    """
    escaped = text.str.replace_all("\\", "\\\\", literal=True).str.replace_many(
        ["\t", "\n", "\r", *_HEX_ESCAPED, *_U_ESCAPED],
        [
            "\\t", "\\n", "\\r",
            *(f"\\x{ord(c):02x}" for c in _HEX_ESCAPED),
            *(f"\\u{ord(c):04x}" for c in _U_ESCAPED),
        ],
    )
    double = text.str.contains("'", literal=True) & ~text.str.contains('"', literal=True)
    single = pl.lit("'") + escaped.str.replace_all("'", "\\'", literal=True) + pl.lit("'")
    return pl.when(double).then(pl.lit('"') + escaped + pl.lit('"')).otherwise(single)


def python_list_text(values: pl.Expr) -> pl.Expr:
    """``repr`` of a Python list of strings (``['a', 'b']``, ``[]``); null writes nothing."""
    items = values.cast(pl.List(pl.String)).list.eval(python_str_repr(pl.element())).list.join(", ")
    return (pl.lit("[") + items + pl.lit("]")).fill_null("")


def _bool_text(flag: pl.Expr) -> pl.Expr:
    return (
        pl.when(flag.cast(pl.Int64) == 1).then(pl.lit("True"))
        .when(flag.cast(pl.Int64) == 0).then(pl.lit("False"))
        .otherwise(pl.lit(""))
    )


def _bleu_column(table: pl.DataFrame | pl.LazyFrame) -> str:
    """The BLEU that ``composite_accuracy`` weighed: ``bleu_matched_orders`` under the
    enhanced-framework preset (its signature says ``compat:enhanced-framework``), else ``bleu``
    (the bundled overall rules)."""
    if "signature" not in _schema(table):
        return "bleu"
    preset = pl.col("signature").str.contains("|compat:enhanced-framework", literal=True)
    rows, every = table.lazy().select(pl.len(), preset.all()).collect().row(0)
    return "bleu_matched_orders" if rows and every else "bleu"


def enhanced_framework_table(
    table: FrameT, *, neutralize: bool = True, bleu: str | None = None
) -> FrameT:
    """The enhanced framework's 51 columns as text cells, from :func:`export_table`'s table.

    The columns are named ``c0``..``c50`` (a frame cannot repeat a name; the writer writes the
    framework's names, :data:`ENHANCED_FRAMEWORK_COLUMNS`). ``bleu``: the BLEU column (default:
    :func:`_bleu_column` of ``table``; a slice of a run is given the whole run's). With
    ``neutralize``, the text and list cells get the :func:`neutralized` rule; numbers and
    booleans are left alone (a negative number starts with ``-``).
    """
    bleu = _bleu_column(table) if bleu is None else bleu
    layout = ENHANCED_FRAMEWORK_COLUMNS
    sources = [bleu if column == "{bleu}" else column for _, column, _ in layout]
    missing = sorted({c for c in sources if c not in _schema(table)})
    if missing:
        raise InputError(
            "the enhanced-framework layout needs the column(s) "
            f"{', '.join(missing)}: evaluate with every metric (no --metrics selection)"
        )
    formats = {
        "text": lambda c: pl.col(c).cast(pl.String),
        "number": lambda c: python_float_text(pl.col(c)),
        "bool": lambda c: _bool_text(pl.col(c)),
        "list": lambda c: python_list_text(pl.col(c)),
    }
    cells = []
    for k, ((_, _, kind), source) in enumerate(zip(layout, sources, strict=True)):
        cell = formats[kind](source)
        if neutralize and kind in ("text", "list"):
            trigger = pl.any_horizontal(*(cell.str.starts_with(t) for t in FORMULA_TRIGGERS))
            cell = pl.when(trigger).then(pl.lit(FORMULA_ESCAPE) + cell).otherwise(cell)
        cells.append(cell.alias(f"c{k}"))
    return table.select(cells)


def write_enhanced_framework(table: pl.DataFrame, target: Path) -> None:
    """``table`` (:func:`enhanced_framework_table`) as the framework's TSV: its header, tab
    separated, fields quoted only when they hold a tab, a quote or a newline (pandas'
    ``to_csv(sep="\\t", index=False)``), lines ending in ``\\n``."""
    with open(target, "w", encoding="utf-8", newline="") as handle:
        handle.write(ENHANCED_FRAMEWORK_HEADER)
        handle.write(enhanced_framework_lines(table))


#: The first line of the framework's TSV.
ENHANCED_FRAMEWORK_HEADER = "\t".join(name for name, _, _ in ENHANCED_FRAMEWORK_COLUMNS) + "\n"


def enhanced_framework_lines(table: pl.DataFrame) -> str:
    """The lines of :func:`write_enhanced_framework` below its header, each ending in ``\\n``."""
    lines = table.select(
        pl.concat_str([_csv_field(pl.col(name)) for name in table.columns], separator="\t")
    ).to_series()
    return "".join(line + "\n" for line in lines)


def _csv_field(cell: pl.Expr) -> pl.Expr:
    """A cell as Python's csv writer with ``QUOTE_MINIMAL`` writes it to a tab-separated file
    with ``\\n`` line ends: quoted, its quotes doubled, when it holds a tab, a quote or a
    ``\\n``; else as it is (an empty string or a null: nothing)."""
    text = cell.fill_null("")
    special = text.str.contains(r'[\t"\n]')
    quoted = pl.lit('"') + text.str.replace_all('"', '""', literal=True) + pl.lit('"')
    return pl.when(special).then(quoted).otherwise(text)


def export(
    out_dir: Path,
    target: Path,
    fmt: str = "tsv",
    *,
    neutralize: bool = True,
    layout: str = "wide",
) -> int:
    """Write the export of ``out_dir`` to ``target`` in ``fmt``; return the number of rows.

    ``neutralize`` (text formats only) applies :func:`neutralize_formulas`; ``layout``
    ``enhanced-framework`` writes the framework's TSV (``fmt`` must be ``tsv``).
    """
    if fmt not in FORMATS:
        raise InputError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    if layout not in LAYOUTS:
        raise InputError(f"unknown export layout {layout!r}; use one of {', '.join(LAYOUTS)}")
    if layout == "enhanced-framework" and fmt != "tsv":
        raise InputError("the enhanced-framework layout is a TSV: use --format tsv")
    check_output_file(target)
    table = export_lazy(out_dir)
    if layout == "enhanced-framework":
        bleu = _bleu_column(table)
        enhanced_framework_table(table, neutralize=neutralize, bleu=bleu)  # columns checked
    rows = 0
    with atomic_path(target) as tmp:
        if fmt == "parquet":
            writer: pq.ParquetWriter | None = None
            try:
                for batch in export_batches(out_dir):
                    arrow = batch.to_arrow()
                    if writer is None:
                        writer = pq.ParquetWriter(tmp, arrow.schema, compression="zstd")
                    writer.write_table(arrow.cast(writer.schema))
                    rows += batch.height
            finally:
                if writer is not None:
                    writer.close()
            return rows
        with open(tmp, "wb") as handle:
            if layout == "enhanced-framework":
                handle.write(ENHANCED_FRAMEWORK_HEADER.encode())
            for index, batch in enumerate(export_batches(out_dir)):
                rows += batch.height
                if layout == "enhanced-framework":
                    cells = enhanced_framework_table(batch, neutralize=neutralize, bleu=bleu)
                    handle.write(enhanced_framework_lines(cells).encode())
                    continue
                text = flatten_lists(batch)
                if neutralize:
                    text = neutralize_formulas(text)
                text.write_csv(handle, separator="\t" if fmt == "tsv" else ",",
                               include_header=index == 0)
    return rows
