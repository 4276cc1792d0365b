"""In-memory data given to the Python API (:func:`pipeline.score`, :func:`pipeline.evaluate`)
as a polars frame: polars as it is, pandas through ``pl.from_pandas``, Arrow through
``pl.from_arrow``, a Hugging Face ``datasets.Dataset`` through its Arrow table (duck-typed:
pandas and ``datasets`` are not dependencies); or a path or list of paths, read by
:mod:`pipeline.io.readers`."""

from __future__ import annotations

import os

import polars as pl


def _paths(data: object) -> list[str | os.PathLike[str]] | None:
    """``data`` as a list of paths, or None when it is not a path or a list of paths."""
    if isinstance(data, str | os.PathLike):
        return [data]
    if isinstance(data, list | tuple) and all(isinstance(p, str | os.PathLike) for p in data):
        return list(data)
    return None


def _polars(data: object) -> pl.DataFrame | pl.LazyFrame:
    """``data`` as a polars frame: polars as it is, pandas through ``pl.from_pandas``, Arrow
    through ``pl.from_arrow``, a ``datasets.Dataset`` through its Arrow table."""
    if isinstance(data, pl.DataFrame | pl.LazyFrame):
        return data
    package = type(data).__module__.partition(".")[0]
    if package == "pandas" and hasattr(data, "columns"):
        return pl.from_pandas(data)
    if package == "pyarrow":
        return _from_arrow(data)
    table = _dataset_table(data)
    if table is not None:
        return _from_arrow(table)
    if package == "datasets" and hasattr(data, "keys"):
        raise TypeError(f"data is a DatasetDict with splits {sorted(data.keys())}: pick one, "
                        "e.g. dataset['test']")
    raise TypeError(
        f"data must be a polars, pandas or pyarrow table, a datasets.Dataset, or paths; got "
        f"{type(data).__module__}.{type(data).__qualname__}"
    )


def _dataset_table(data: object) -> object | None:
    """The Arrow table of a Hugging Face ``datasets.Dataset`` (duck-typed), or None.

    Its rows are ``.data.table`` unless an indices mapping (``select``, ``filter``,
    ``shuffle``) picks some of them; then ``with_format("arrow")[:]`` gathers them."""
    table = getattr(getattr(data, "data", None), "table", None)
    if type(table).__module__.partition(".")[0] != "pyarrow":
        return None
    if getattr(data, "_indices", None) is not None and hasattr(data, "with_format"):
        return data.with_format("arrow")[:]
    return table


def _from_arrow(table: object) -> pl.DataFrame:
    frame = pl.from_arrow(table)
    if not isinstance(frame, pl.DataFrame):
        raise TypeError(f"an Arrow table or record batch is expected, got {type(table)}")
    return frame
