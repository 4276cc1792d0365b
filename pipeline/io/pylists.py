"""Lists written as Python reprs in text cells, turned into the JSON arrays they denote.

pandas ``to_csv`` writes a list cell as ``str(list)``: ``['Dune is a novel.', "It's long."]``;
a Hugging Face ``datasets`` export through pandas writes NumPy arrays, ``['a' 'b']`` (items
separated by spaces or line breaks instead of commas). :func:`python_lists_as_json` rewrites
such a cell as JSON (``["Dune is a novel.","It's long."]``), which validation then parses as
it parses any JSON list cell. It is strict: only what ``repr`` writes for strings and integers
is accepted: single- or double-quoted strings with the escapes ``\\\\``, ``\\'``, ``\\n``,
``\\r``, ``\\t``, ``\\xNN`` and ``\\uNNNN`` (not a lone surrogate), integers, the brackets, and
commas or (NumPy) whitespace between items. Anything else (``[None]``, ``[1.5]``, ``['a', b]``,
``[u'a']``, a truncated NumPy ``...``) is left as it is, so that validation rejects the row
with its usual reason (``contexts: expected a list of strings, got "['a', b]"``). Nothing is
evaluated: the rewrite is regular expressions over the column, no Python per row.
"""

from __future__ import annotations

import polars as pl

_SPACE = r"[ \t\n\r]"
_UNICODE_ESCAPE = r"\\u(?:[0-9a-cA-CefEF][0-9a-fA-F]{3}|[dD][0-7][0-9a-fA-F]{2})"
_ESCAPE = rf"\\[\\nrt]|\\x[0-9a-fA-F]{{2}}|{_UNICODE_ESCAPE}"
#: A string literal as ``repr`` writes it: single quotes (``\\'`` inside), or double quotes
#: when the text holds a ``'`` and no ``"``. No raw control characters.
_SINGLE = rf"'(?:[^'\\\x00-\x1f]|{_ESCAPE}|\\')*'"
_DOUBLE = rf'"(?:[^"\\\x00-\x1f]|{_ESCAPE})*"'
_INTEGER = r"-?(?:0|[1-9][0-9]*)"
_ITEM = rf"(?:{_SINGLE}|{_DOUBLE}|{_INTEGER})"
#: One token of a list cell: a literal or a bracket.
_TOKEN = rf"{_SINGLE}|{_DOUBLE}|{_INTEGER}|\[|\]"
#: Items that are JSON as they are (a double-quoted string without ``\\x``, an integer).
_JSON_ITEM = rf'(?:"(?:[^"\\\x00-\x1f]|\\[\\nrt]|{_UNICODE_ESCAPE})*"|{_INTEGER})'


def _list(item: str, *, numpy: bool = True) -> str:
    """A list of ``item``: comma-separated (Python) or whitespace-separated (NumPy)."""
    commas = rf"{item}(?:{_SPACE}*,{_SPACE}*{item})*"
    spaces = rf"|{item}(?:{_SPACE}+{item})*" if numpy else ""
    return rf"\[{_SPACE}*(?:{commas}{spaces})?{_SPACE}*\]"


_FLAT = rf"^{_SPACE}*{_list(_ITEM)}{_SPACE}*$"
_NESTED = rf"^{_SPACE}*{_list(_list(_ITEM))}{_SPACE}*$"
#: Cells that are JSON already, with the meaning they have in Python: left as they are.
_FLAT_JSON = rf"^{_SPACE}*{_list(_JSON_ITEM, numpy=False)}{_SPACE}*$"
_NESTED_JSON = rf"^{_SPACE}*{_list(_list(_JSON_ITEM, numpy=False), numpy=False)}{_SPACE}*$"


#: Cells that may need the rewrite. A cell of strings and integers that is not JSON as it is
#: opens a single-quoted literal (a ``'`` after ``[``, ``,`` or whitespace), holds a ``\\x``
#: escape, or has two items (or inner lists) with only whitespace between them (NumPy); a
#: double-quoted literal without ``\\x`` is JSON already. A cheap test, so that the tokenizing
#: runs on those cells only: JSON cells are the common case (a false positive, ``"in 1999
#: 2000"``, only costs time).
_CANDIDATE = r"""[\[ \t\n\r,]'|\\x|["0-9][ \t\n\r]+["0-9-]|\][ \t\n\r]+\["""


def _json_token(token: pl.Expr) -> pl.Expr:
    """A string literal of Python as a JSON string; integers and brackets as they are.

    ``\\\\`` is set aside first (as NUL, which a literal cannot hold raw), so that the
    backslash of ``\\\\'`` or ``\\\\x41`` is not read as an escape.
    """
    body = (
        token.str.slice(1, token.str.len_chars() - 2)
        .str.replace_all("\\\\", "\x00", literal=True)
        .str.replace_all("\\'", "'", literal=True)
        .str.replace_all('"', '\\"', literal=True)
        .str.replace_all(r"\\x([0-9a-fA-F]{2})", r"\u00${1}")
        .str.replace_all("\x00", "\\\\", literal=True)
    )
    quoted = token.str.starts_with("'") | token.str.starts_with('"')
    return pl.when(quoted).then(pl.concat_str(pl.lit('"'), body, pl.lit('"'))).otherwise(token)


def python_lists_as_json(text: pl.Expr, *, nested: bool = False) -> pl.Expr:
    """``text`` with each cell that is a Python (or NumPy) list repr rewritten as JSON; other
    cells (JSON arrays among them) unchanged. ``nested``: lists of lists (``answer_groups``)
    instead of flat lists.

    >>> cells = pl.Series(["['a', \\"it's\\"]", "[1, 2]", "['x' 'y']", "['a', b]", '["j"]'])
    >>> pl.select(python_lists_as_json(pl.lit(cells))).to_series().to_list()
    ['["a","it\\'s"]', '[1, 2]', '["x","y"]', "['a', b]", '["j"]']
    """
    element = pl.element()
    following = element.shift(-1)
    separator = (
        pl.when((element == "[") | (following == "]") | following.is_null())
        .then(pl.lit(""))
        .otherwise(pl.lit(","))
    )
    joined = (
        text.str.extract_all(_TOKEN)
        .list.eval(pl.concat_str(_json_token(element), separator))
        .list.join("")
    )
    python = text.str.contains(_NESTED if nested else _FLAT)
    json = text.str.contains(_NESTED_JSON if nested else _FLAT_JSON)
    return pl.when(python & ~json).then(joined).otherwise(text)


def python_lists_as_json_series(values: pl.Series, *, nested: bool = False) -> pl.Series:
    """:func:`python_lists_as_json` over a column, rewriting only the cells that can need it
    (a cheap pattern first), so that a column of JSON cells costs one scan.

    >>> python_lists_as_json_series(pl.Series("c", ['["a"]', "['b']", None])).to_list()
    ['["a"]', '["b"]', None]
    """
    candidates = values.str.contains(_CANDIDATE).fill_null(False)
    if not candidates.any():
        return values
    index = candidates.arg_true()
    rewritten = pl.select(
        python_lists_as_json(pl.lit(values.gather(index)), nested=nested)
    ).to_series()
    return values.clone().scatter(index, rewritten)
