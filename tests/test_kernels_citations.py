"""The compiled citation-marker kernel (pipeline.text.kernels.citations) against the polars
expression it replaces on ASCII rows and the Python oracle (tests/oracles.py); marker stripping
(a polars regex) is checked beside it, as both read the same pattern."""

from __future__ import annotations

import json
import subprocess
import sys

import polars as pl
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st
from oracles import parse_markers, strip_markers

from pipeline.metrics.qa.citation import (
    parse_citation_markers,
    parse_citation_markers_unicode,
    strip_citation_markers,
)
from pipeline.text.kernels.buffers import start_kernels_in_background

# Marker-shaped pieces: brackets, separators, 1 to 10 digits, the whitespace the pattern's
# \s takes (\t-\r, space) and does not take (\x1c-\x1f), and a few non-ASCII characters
# (Unicode spaces are \s to the polars path).
PIECES = ["[", "]", ",", ";", " ", "\t", "\x0b", "\r\n", "\x1c", "\x1f", "1", "2", "07", "42",
          "123456789", "1234567890", "[1]", "[2, 3]", "[1;1]", "[ 4 ]", "x", "Paris", ".",
          "[[", "]]", "[1,", "[\x1c", "\x1f]", "\xa0", "é", "\u2003"]
marker_text = st.lists(st.sampled_from(PIECES), max_size=20).map("".join)
ascii_marker_text = st.lists(
    st.sampled_from([p for p in PIECES if p.isascii()]) | st.characters(max_codepoint=0x7F),
    max_size=20,
).map("".join)


def both(texts: list[str | None]) -> pl.DataFrame:
    frame = pl.DataFrame({"t": texts}, schema={"t": pl.String})
    t = pl.col("t")
    return frame.select(
        parsed=parse_citation_markers(t), parsed_ref=parse_citation_markers_unicode(t),
        stripped=strip_citation_markers(t),
    )


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(st.none() | marker_text | ascii_marker_text, min_size=1, max_size=30))
def test_kernels_equal_polars_expressions(texts):
    out = both(texts)
    assert out["parsed"].to_list() == out["parsed_ref"].to_list()


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(ascii_marker_text.filter(lambda t: not any("\x1c" <= c <= "\x1f" for c in t)),
                min_size=1, max_size=30))
def test_kernels_equal_python_re_on_ascii(texts):
    # Python's \s also takes \x1c-\x1f, polars' does not: those are left out here.
    out = both(texts)
    assert out["parsed"].to_list() == [parse_markers(t) for t in texts]
    assert out["stripped"].to_list() == [strip_markers(t) for t in texts]


@pytest.mark.parametrize(("text", "numbers", "stripped"), [
    ("", [], ""),
    ("Paris [1][3], see [1, 2].", [1, 3, 2], "Paris , see ."),
    ("[\x0b1 ;\t2]", [1, 2], ""),
    ("[\x1c1]", [], "[\x1c1]"),  # \x1c is no \s to polars
    ("[1234567890] [123456789]", [123456789], "[1234567890] "),
    ("[[1]", [1], "["),
    ("[1,] [1", [], "[1,] [1"),
    ("[01] [000000001]", [1], " "),
    ("[2,3,4,5,6,7,8,9,10,2]", [2, 3, 4, 5, 6, 7, 8, 9, 10], ""),
    ("é [\xa01] [2]", [1, 2], "é  "),  # non-ASCII row: the polars path, \xa0 is \s
    (None, None, None),
])
def test_golden_markers(text, numbers, stripped):
    out = both([text])
    assert out.row(0) == (numbers, numbers, stripped)


def test_sliced_column():
    column = pl.Series("t", ["[1] a", None, "b [2; 3]", "é [4]", "[5]"]).slice(1, 4)
    out = pl.select(parse_citation_markers(pl.lit(column)),
                    strip_citation_markers(pl.lit(column)).alias("s"))
    assert out.to_series(0).to_list() == [None, [2, 3], [4], [5]]
    assert out["s"].to_list() == [None, "b ", "é ", ""]


def test_the_compiler_target_is_set_up_on_a_daemon_thread() -> None:
    """What a run starts while its first chunk is read: a daemon thread that ends on its own,
    after which the kernels give what they give without it."""
    thread = start_kernels_in_background()
    assert thread.daemon and thread.name == "numba-target"
    thread.join(timeout=120)
    assert not thread.is_alive()
    out = both(["see [1] and [2, 3]."])
    assert out["parsed"].to_list() == out["parsed_ref"].to_list() == [[1, 2, 3]]



SET_UP_IN_A_FRESH_PROCESS = """
import importlib, importlib.util, json, sys
import numba, numpy as np
from pipeline.text.kernels.buffers import SCIPY_BLAS, start_kernels_in_background
start_kernels_in_background().join()
during = "scipy.linalg" in sys.modules
hidden = SCIPY_BLAS in sys.modules and sys.modules[SCIPY_BLAS] is None
@numba.njit
def dot(a, b):
    return np.dot(a, b)
has_scipy = importlib.util.find_spec("scipy") is not None
print(json.dumps({
    "imported_during_set_up": during, "hidden_after": hidden,
    "dot": dot(np.arange(3.0), np.arange(3.0)),
    "blas_after": importlib.import_module(SCIPY_BLAS).__name__ if has_scipy else None,
    "scipy": has_scipy,
}))
"""


def test_the_set_up_does_not_import_scipy_and_leaves_it_importable() -> None:
    """numba's set-up looks for scipy's BLAS by importing all of scipy.linalg (0.15-0.2 s); the
    set-up hides that module, and afterwards it imports, and BLAS functions compile, as ever."""
    done = subprocess.run([sys.executable, "-c", SET_UP_IN_A_FRESH_PROCESS], capture_output=True,
                          text=True, check=True, timeout=300)
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["imported_during_set_up"] is False
    assert seen["hidden_after"] is False
    assert seen["dot"] == 5.0
    # The test environment has scipy (pytrec-eval-terrier needs it): the hidden module is back.
    assert seen["blas_after"] == ("scipy.linalg.cython_blas" if seen["scipy"] else None)
