"""The errors a user's input or output path raises, in a module of the standard library alone.

:mod:`pipeline.schema` and :mod:`pipeline.io.atomic` re-export them; they live here so that a
module that only reads (``rag-eval query``: :mod:`pipeline.query`) can raise and catch them
without importing polars (docs/benchmarks.md, start-up).
"""

from __future__ import annotations


class InputError(ValueError):
    """A file cannot be evaluated at all (unreadable, unknown format, missing required column)."""


class OutputPathError(ValueError):
    """An output path the user gave cannot be written (one line: the path and why)."""
