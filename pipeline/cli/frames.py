"""Frames on the terminal: a query's result as a table, CSV or JSON lines, and numbers
formatted for reading in tables that fit the terminal. Polars only (no metric or view module),
so that ``rag-eval query`` stays light."""

from __future__ import annotations

import shutil
import sys
import textwrap
from collections.abc import Sequence

import polars as pl


def json_nested(frame: pl.DataFrame) -> pl.DataFrame:
    """List and struct columns as JSON text (``["a","b"]``) and binary columns as hex text
    (``row_hash``), which CSV can hold; null stays null."""
    nested = [name for name, dtype in frame.schema.items() if dtype.is_nested()]
    binary = [name for name, dtype in frame.schema.items() if dtype == pl.Binary]
    return frame.with_columns(
        *(pl.when(pl.col(name).is_not_null())
          .then(pl.struct(pl.col(name).alias("v")).struct.json_encode()
                .str.strip_prefix('{"v":').str.strip_suffix("}"))
          .alias(name)
          for name in nested),
        *(pl.col(name).bin.encode("hex") for name in binary),
    )


def print_frame(frame: pl.DataFrame, fmt: str) -> None:
    """``frame`` on stdout as a table, CSV (nested columns as JSON text) or JSON lines."""
    if fmt == "csv":
        sys.stdout.write(json_nested(frame).write_csv())
    elif fmt == "json":
        sys.stdout.write(frame.write_ndjson())
    else:
        with pl.Config(
            tbl_rows=-1, tbl_cols=-1, tbl_width_chars=240, tbl_hide_dataframe_shape=True,
            fmt_str_lengths=80, float_precision=4, tbl_hide_column_data_types=True,
        ):
            print(frame)



#: Terminal width when neither ``COLUMNS`` nor the terminal says.
DEFAULT_WIDTH = 100
#: Headline columns shown as percentages (rates of rows).
PERCENT_COLUMNS = frozenset({"abstain_rate", "abstention_accuracy", "empty_response_rate"})
#: Headline columns shown with one decimal (milliseconds, tokens).
ONE_DECIMAL_COLUMNS = frozenset({"p50_latency_ms", "mean_total_tokens"})


def terminal_width() -> int:
    """``COLUMNS``, else the terminal's width, else :data:`DEFAULT_WIDTH`."""
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns


def readable(frame: pl.DataFrame, percent: Sequence[str] = (),
             one_decimal: Sequence[str] = ()) -> pl.DataFrame:
    """``frame`` with its numbers as text for reading: ``percent`` columns (shares 0..1) as
    ``12.3%``, ``one_decimal`` columns with one decimal, other floats with three, integers as
    they are; null as an empty cell. ``-0.000`` is written ``0.000``.

    >>> readable(pl.DataFrame({"f1": [0.12345, -1e-9], "rate": [0.1234, None]}),
    ...          percent=["rate"]).rows()
    [('0.123', '12.3%'), ('0.000', '')]
    """
    def text(name: str, dtype: pl.DataType) -> pl.Expr:
        column = pl.col(name)
        if not dtype.is_numeric():
            return column.cast(pl.String).fill_null("")
        if name in percent:
            share = (column * 100).round(1).abs().pipe(_signed, column * 100, 1)
            return (share + pl.lit("%")).fill_null("")
        if dtype.is_float():
            digits = 1 if name in one_decimal else 3
            return column.round(digits).abs().pipe(_signed, column, digits).fill_null("")
        return column.cast(pl.String).fill_null("")

    return frame.select(text(name, dtype).alias(name) for name, dtype in frame.schema.items())


def _signed(magnitude: pl.Expr, value: pl.Expr, digits: int) -> pl.Expr:
    """``magnitude`` (rounded, absolute) as text with ``digits`` decimals, ``-`` only where
    the rounded value is not zero (no ``-0.000``)."""
    body = magnitude.cast(pl.String)
    whole = body.str.split(".").list.get(0, null_on_oob=True)
    fraction = body.str.split(".").list.get(1, null_on_oob=True).fill_null("")
    padded = whole + pl.lit(".") + fraction.str.pad_end(digits, "0").str.slice(0, digits)
    negative = (value.round(digits) < 0) & (magnitude > 0)
    return pl.when(negative).then(pl.lit("-") + padded).otherwise(padded)


def fit_columns(frame: pl.DataFrame, width: int, keep: int = 1) -> tuple[pl.DataFrame, list[str]]:
    """The leading columns of a text ``frame`` whose table fits ``width`` characters (at least
    the first ``keep``), and the names of the columns left out.

    >>> shown, hidden = fit_columns(pl.DataFrame({"model": ["a"], "x": ["1"], "y": ["2"]}), 14)
    >>> shown.columns, hidden
    (['model', 'x'], ['y'])
    """
    used, shown = 1, []
    for k, name in enumerate(frame.columns):
        longest = max([len(name), *(len(v) for v in frame[name].to_list() if v is not None)])
        if k >= keep and used + longest + 3 > width:
            break
        used += longest + 3
        shown.append(name)
    return frame.select(shown), [c for c in frame.columns if c not in shown]


def print_text_table(frame: pl.DataFrame) -> None:
    """A frame of text cells as a table, no cell cut and no header wrapped."""
    with pl.Config(
        tbl_rows=-1, tbl_cols=-1, tbl_width_chars=65_000, tbl_hide_dataframe_shape=True,
        fmt_str_lengths=10_000, tbl_hide_column_data_types=True,
        tbl_cell_numeric_alignment="RIGHT",
    ):
        print(frame)


def print_fitted(frame: pl.DataFrame, *, wide: bool, percent: Sequence[str] = (),
                 one_decimal: Sequence[str] = (), more: str = "--wide") -> None:
    """``frame`` formatted for reading, with as many columns as the terminal holds (all with
    ``wide``), and one line naming the columns left out."""
    text = readable(frame, percent, one_decimal)
    shown, hidden = (text, []) if wide else fit_columns(text, terminal_width())
    print_text_table(shown)
    if hidden:
        say(f"(+{len(hidden)} more: {', '.join(hidden)}; {more})")


def say(text: str) -> None:
    """``text`` on stdout, wrapped to the terminal's width."""
    print(textwrap.fill(text, width=max(terminal_width(), 40), break_on_hyphens=False))




def without_empty_columns(frame: pl.DataFrame, keep: Sequence[str] = ()) -> pl.DataFrame:
    """``frame`` without the columns that are null on every row (the RAG columns of a run
    without passages, ``overall_score`` when the composites did not run), except ``keep``."""
    if frame.height == 0:
        return frame
    return frame.select(
        c for c in frame.columns if c in keep or frame[c].null_count() < frame.height
    )
