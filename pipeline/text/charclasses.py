"""Regex character classes that reproduce CPython's own character predicates exactly.

The official SQuAD v2 script relies on three CPython behaviours whose Rust-regex counterparts
differ at the margins:

* ``re`` word boundaries (``\\b``) use ``str.isalnum() or ch == "_"``; Rust's ``\\w`` also
  counts combining marks and connector punctuation, and misses a few numeric symbols.
* ``str.split()`` splits on ``str.isspace()``, which includes U+001C..U+001F; Rust's ``\\s``
  does not.
* ``str.lower()`` follows the interpreter's Unicode database; polars follows a newer one, so a few
  recently encoded capitals are lowercased by polars but left alone by CPython.

Each class is derived once per process from the running interpreter, so parity holds whatever its
Unicode version.

On pure ASCII text all three behaviours are fixed and small: ``str.lower`` maps ``A-Z`` only (as
polars does), word characters are ``[0-9A-Za-z_]`` (Rust's ``(?-u:\\b)`` uses the same set) and
``str.isspace`` holds for :data:`ASCII_SPACE_CLASS`. The ``ASCII_*`` constants serve the ASCII fast
paths in ``normalize`` and ``tokenize``.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from functools import cache

import polars as pl

#: Class body of ``str.isspace()`` on ASCII: tab, LF, VT, FF, CR, U+001C..U+001F (which Rust's
#: ``\s`` lacks) and the space.
ASCII_SPACE_CLASS = r"\x{9}-\x{d}\x{1c}-\x{20}"
#: Class body of the ASCII word characters (``str.isalnum() or ch == "_"`` on ASCII).
ASCII_WORD_CLASS = "0-9A-Za-z_"

_MAX_CODE_POINT = 0x110000
_SURROGATES = range(0xD800, 0xE000)


def _code_points() -> list[str]:
    return [chr(cp) for cp in range(_MAX_CODE_POINT) if cp not in _SURROGATES]


def _escape(cp: int) -> str:
    return f"\\x{{{cp:x}}}"


def _class_body(predicate: Callable[[str], bool]) -> str:
    """Regex class body (without brackets) of every code point satisfying ``predicate``."""
    ranges: list[tuple[int, int]] = []
    for ch in _code_points():
        if not predicate(ch):
            continue
        cp = ord(ch)
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    return "".join(_escape(a) if a == b else f"{_escape(a)}-{_escape(b)}" for a, b in ranges)


@cache
def word_class() -> str:
    """Class body of the characters CPython's ``re`` treats as word characters (``\\w``)."""
    return _class_body(lambda ch: ch.isalnum() or ch == "_")


@cache
def space_class() -> str:
    """Class body of the characters ``str.split()`` splits on (``str.isspace()``)."""
    return _class_body(str.isspace)


def ascii_punctuation_class() -> str:
    """Class body of ``string.punctuation`` (the 32 ASCII punctuation characters)."""
    return "".join(_escape(ord(ch)) for ch in string.punctuation)


@cache
def lowercase_mismatches() -> tuple[str, ...]:
    """Characters that polars lowercases differently from this interpreter's ``str.lower()``.

    On CPython 3.11 with polars 2.x these are the capitals added in Unicode 15-16 (which CPython
    does not know and leaves unchanged).
    """
    chars = _code_points()
    lowered = pl.Series(chars, dtype=pl.String).str.to_lowercase().to_list()
    pairs = zip(chars, lowered, strict=True)
    return tuple(ch for ch, low in pairs if ch.lower() != low)
