"""The page's building blocks: escaping, numbers and the elements every section is made of.

Every string that comes from the data (model and category names, questions, references,
responses, signatures, paths) passes through :func:`esc` (``html.escape(..., quote=True)``).
Numbers are shown to :data:`DECIMALS` decimals per kind (scores to 2, the resolution of a 95%
CI over a few hundred rows). Tables, cells, figures and sections are plain functions from
strings to strings (:func:`_table`, :func:`_td`, :func:`_figure`, :func:`_section`), and
:class:`Column` names a metric column of a view as the report shows it."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from pipeline.report import charts
from pipeline.report.limits import (
    MAX_TEXT_CHARS,
    cut_marker,
    cut_text,
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


def _key_text(value: object) -> str:
    """A slice key value as text: ``0.2`` for a noise level, ``(none)`` for null."""
    if isinstance(value, float):
        return f"{value:g}"
    return charts.label(value)


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
