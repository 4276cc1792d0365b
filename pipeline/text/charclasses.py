"""Regex character classes that reproduce CPython's own character predicates exactly.

The official SQuAD v2 script relies on three CPython behaviours whose Rust-regex counterparts
differ at the margins:

* ``re`` word boundaries (``\\b``) use ``str.isalnum() or ch == "_"``; Rust's ``\\w`` also
  counts combining marks and connector punctuation, and misses a few numeric symbols.
* ``str.split()`` splits on ``str.isspace()``, which includes U+001C..U+001F; Rust's ``\\s``
  does not.
* ``str.lower()`` follows the interpreter's Unicode database; polars follows a newer one, so a few
  recently encoded capitals are lowercased by polars but left alone by CPython.

Each class is derived from the running interpreter (and polars), so parity holds whatever their
Unicode versions. Deriving them scans all 1.1M code points (0.3 s), so the results are kept in
``$XDG_CACHE_HOME/rag-eval/text/`` under a name that holds the Python, Unicode database and polars
versions; a missing or unreadable cache file is derived again.

On pure ASCII text all three behaviours are fixed and small: ``str.lower`` maps ``A-Z`` only (as
polars does), word characters are ``[0-9A-Za-z_]`` (Rust's ``(?-u:\\b)`` uses the same set) and
``str.isspace`` holds for :data:`ASCII_SPACE_CLASS`. The ``ASCII_*`` constants serve the ASCII fast
paths in ``normalize`` and ``tokenize``.
"""

from __future__ import annotations

import json
import re
import string
import sys
import unicodedata
from collections.abc import Callable
from functools import cache
from typing import Any, TypeVar

import numpy as np
import polars as pl

from pipeline.config import cache_root
from pipeline.io.atomic import atomic_path

T = TypeVar("T")

#: Class body of ``str.isspace()`` on ASCII: tab, LF, VT, FF, CR, U+001C..U+001F (which Rust's
#: ``\s`` lacks) and the space.
ASCII_SPACE_CLASS = r"\x{9}-\x{d}\x{1c}-\x{20}"
#: Class body of the ASCII word characters (``str.isalnum() or ch == "_"`` on ASCII).
ASCII_WORD_CLASS = "0-9A-Za-z_"

_MAX_CODE_POINT = 0x110000
_SURROGATES = range(0xD800, 0xE000)
#: Separator of the per-character lowercasing below: uncased and not case-ignorable, so the
#: final-sigma rule sees a word boundary on both sides of every character.
_SEPARATOR = "\n"


@cache
def _code_points() -> tuple[np.ndarray, str]:
    """Every code point but the surrogates, in order: as an array and as one string."""
    points = np.r_[np.arange(_SURROGATES.start), np.arange(_SURROGATES.stop, _MAX_CODE_POINT)]
    return points, points.astype("<u4").tobytes().decode("utf-32-le")


def _escape(cp: int) -> str:
    return f"\\x{{{cp:x}}}"


def ranges_class(starts: np.ndarray, ends: np.ndarray) -> str:
    """Regex class body (without brackets) of the code point ranges ``starts[i]..ends[i]``."""
    return "".join(
        _escape(int(a)) if a == b else f"{_escape(int(a))}-{_escape(int(b))}"
        for a, b in zip(starts, ends, strict=True)
    )


def points_class(points: np.ndarray) -> str:
    """Regex class body of a sorted array of distinct code points, as runs (for Rust regex).

    >>> body = points_class(np.array([65, 66, 67, 70]))
    >>> pl.select(pl.lit("ABCDEF").str.replace_all(f"[{body}]", "")).item()
    'DE'
    """
    if not len(points):
        return ""
    breaks = np.flatnonzero(np.diff(points) != 1)
    return ranges_class(np.r_[points[0], points[breaks + 1]], np.r_[points[breaks], points[-1]])


def _class_body(pattern: str) -> str:
    """Regex class body (without brackets) of the runs of code points that CPython's ``re``
    matches with ``pattern`` (a class followed by ``+``).

    ``re`` evaluates its classes in C with the interpreter's own predicates (``\\w`` is
    ``str.isalnum() or "_"``, ``\\s`` is ``str.isspace()``), so scanning the string of all code
    points in order yields the runs directly; no run spans the surrogate gap (neither class
    holds next to it).
    """
    points, text = _code_points()
    ranges = (
        (int(points[m.start()]), int(points[m.end() - 1])) for m in re.finditer(pattern, text)
    )
    return "".join(_escape(a) if a == b else f"{_escape(a)}-{_escape(b)}" for a, b in ranges)


def _stored(name: str, derive: Callable[[], T]) -> T:
    """``derive()``, kept in a cache file keyed by the versions that decide it."""
    versions = (
        f"py{sys.version_info.major}.{sys.version_info.minor}-ucd{unicodedata.unidata_version}"
        f"-polars{pl.__version__}"
    )
    path = cache_root() / "text" / f"{name}-{versions}.json"
    try:
        stored: Any = json.loads(path.read_text(encoding="utf-8"))
        return stored["value"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    value = derive()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as tmp:
            tmp.write_text(json.dumps({"value": value}), encoding="utf-8")
    except OSError:  # a read-only home: derive again next time
        pass
    return value


@cache
def word_class() -> str:
    """Class body of the characters CPython's ``re`` treats as word characters (``\\w``)."""
    return _stored("word-class", lambda: _class_body(r"\w+"))


@cache
def space_class() -> str:
    """Class body of the characters ``str.split()`` splits on (``str.isspace()``)."""
    return _stored("space-class", lambda: _class_body(r"\s+"))


def ascii_punctuation_class() -> str:
    """Class body of ``string.punctuation`` (the 32 ASCII punctuation characters)."""
    return "".join(_escape(ord(ch)) for ch in string.punctuation)


@cache
def lowercase_mismatches() -> tuple[str, ...]:
    """Characters that polars lowercases differently from this interpreter's ``str.lower()``.

    On CPython 3.11 with polars 2.x these are the capitals added in Unicode 15-16 (which CPython
    does not know and leaves unchanged).
    """
    return tuple(_stored("lowercase-mismatches", lambda: list(_lowercase_mismatches())))


def _lowercase_mismatches() -> tuple[str, ...]:
    _, text = _code_points()
    chars = pl.Series(values=[text.replace(_SEPARATOR, "")]).str.split("")
    ours = chars.explode()
    # One str.lower() call over the separated characters: the same as lowering each alone.
    lowered = chars.list.join(_SEPARATOR).item().lower()
    theirs = pl.Series(values=[lowered]).str.split(_SEPARATOR).explode()
    return tuple(ours.filter(ours.str.to_lowercase() != theirs).to_list())
