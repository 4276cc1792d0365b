"""How the run's own Parquet files are written: zstd, and no work spent where it cannot pay.

pyarrow's defaults dictionary-encode and compress every column and keep min/max statistics of
each. For three kinds of column that is work without return:

* ``row_hash`` (16 random bytes a row) does not compress, has no useful min/max and never
  repeats: it is stored plain, without compression or statistics. Writing it through zstd and a
  failed dictionary also made the scores file 4× slower to read back;
* texts and ids (``question``, ``reference``, ``response``, ``id``, ``raw``) almost never repeat
  within a page: no dictionary (zstd still compresses them), and no min/max statistics, which
  no query prunes by (10 % of the cost of writing them);
* ``row_number`` (one value per row, ascending within a source) is delta-encoded
  (``DELTA_BINARY_PACKED``) instead of dictionary-encoded: a dictionary never pays and was
  dropped page by page; delta encoding is a quarter of the bytes and cheaper to write and read.
  Its min/max statistics stay, for queries that select a range of rows;
* every other column (keys such as ``model`` or ``category``, counts, scores) keeps the
  dictionary, which pyarrow drops by itself for a page whose values do not repeat;
* a dictionary page holds up to :data:`DICTIONARY_PAGE_BYTES` (pyarrow's default: 1 MiB). The
  distinct passages of a row group often pass 1 MiB (2.7 MB in the benchmark's texts): pyarrow
  then falls back to plain pages for the rest of the chunk, after hashing every value anyway.
  With the larger page the passages stay dictionary-encoded: writing them took 14 % less time,
  the texts file 6 % fewer bytes (docs/benchmarks.md);
* the long texts (``question``, ``reference``, ``response``, ``contexts``) are compressed at
  zstd's fast level -1 instead of 1: on the benchmark's texts (docs/benchmarks.md) writing them
  took 27 % less time for a file 18 % larger (still a seventeenth of the raw text). The other
  columns cost the same at either level, and keep level 1.

The bytes read back are the same values with the same schema; only the encoding differs.

The scores files are written by a :class:`ContractWriter` from :func:`physical_table`: polars'
own string views as they are, instead of a copy of every text into Arrow's large strings, and
the run's ``signature`` (one 330-byte text on every row) as a one-entry dictionary, instead of
330 MB of copies a million rows that pyarrow then hashed row by row to dictionary-encode them
again. The file's Arrow schema (``ARROW:schema``) is the contract's, so readers get the same
types, values, encodings and statistics as from a file written from the contract's types
(``tests/test_parquet_options.py``).
"""

from __future__ import annotations

import base64
from types import TracebackType
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

#: Columns written without compression, dictionary or statistics.
RANDOM_BYTES_COLUMNS = frozenset({"row_hash"})
#: Columns written without a dictionary (values that rarely repeat).
DISTINCT_COLUMNS = frozenset({"id", "question", "reference", "response", "raw", "row_hash"})
#: Integer columns that ascend row by row: delta-encoded, no dictionary, statistics kept.
SEQUENTIAL_COLUMNS = frozenset({"row_number"})
#: Long text columns, compressed at :data:`FAST_LEVEL`.
LONG_TEXT_COLUMNS = frozenset({"question", "reference", "response", "contexts"})
#: The largest dictionary page of a column chunk before pyarrow falls back to plain pages.
DICTIONARY_PAGE_BYTES = 8 * 2**20
#: zstd's level for :data:`LONG_TEXT_COLUMNS` (a negative level is one of zstd's fast modes).
FAST_LEVEL = -1


def writer_options(schema: pa.Schema) -> dict[str, Any]:
    """Keyword arguments of :class:`pyarrow.parquet.ParquetWriter` for a file of ``schema``.

    >>> options = writer_options(pa.schema([("model", pa.string()), ("row_hash", pa.binary()),
    ...                                     ("row_number", pa.int64())]))
    >>> options["use_dictionary"], options["write_statistics"], options["column_encoding"]
    (['model'], ['model', 'row_number'], {'row_number': 'DELTA_BINARY_PACKED'})
    """
    names = schema.names
    sequential = [
        name for name in names
        if name in SEQUENTIAL_COLUMNS and pa.types.is_integer(schema.field(name).type)
    ]
    leaves = {name: _leaf_paths(name, schema.field(name).type) for name in names}
    return {
        # pyarrow keys these by leaf path: a list column's values are "name.list.element" (a
        # top-level name alone would leave them uncompressed).
        "compression": {
            leaf: "none" if name in RANDOM_BYTES_COLUMNS else "zstd"
            for name in names for leaf in leaves[name]
        },
        "use_dictionary": [
            leaf for name in names if name not in DISTINCT_COLUMNS and name not in sequential
            for leaf in leaves[name]
        ],
        "write_statistics": [
            leaf for name in names if name not in DISTINCT_COLUMNS for leaf in leaves[name]
        ],
        "compression_level": {
            leaf: FAST_LEVEL for name in names if name in LONG_TEXT_COLUMNS
            for leaf in leaves[name]
        },
        "column_encoding": dict.fromkeys(sequential, "DELTA_BINARY_PACKED"),
        "dictionary_pagesize_limit": DICTIONARY_PAGE_BYTES,
    }


def _leaf_paths(name: str, dtype: pa.DataType) -> list[str]:
    """The Parquet leaf column paths of a top-level column (``contexts.list.element``).

    >>> _leaf_paths("contexts", pa.list_(pa.string()))
    ['contexts.list.element']
    >>> _leaf_paths("answer_groups", pa.list_(pa.list_(pa.string())))
    ['answer_groups.list.element.list.element']
    """
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return _leaf_paths(f"{name}.list.element", dtype.value_type)
    if pa.types.is_struct(dtype):
        return [leaf for field in dtype for leaf in _leaf_paths(f"{name}.{field.name}",
                                                                field.type)]
    return [name]


def parquet_writer(path: Any, schema: pa.Schema) -> pq.ParquetWriter:
    """A :class:`pyarrow.parquet.ParquetWriter` of ``schema`` at ``path`` with
    :func:`writer_options`."""
    return pq.ParquetWriter(path, schema, **writer_options(schema))


#: Text columns that hold one value for a whole run: taken as dictionaries
#: (:func:`physical_table`), one entry per distinct value, not a copy of the text a row.
RUN_CONSTANT_COLUMNS = frozenset({"signature"})
#: The Parquet key-value metadata key of the Arrow schema, which pyarrow restores on reading.
ARROW_SCHEMA_KEY = b"ARROW:schema"


def physical_schema(schema: pa.Schema) -> pa.Schema:
    """The layout in which a :class:`ContractWriter` of ``schema`` takes its tables: texts and
    bytes as views (polars' layout), the texts of :data:`RUN_CONSTANT_COLUMNS` as dictionaries,
    every other column as in ``schema``.

    >>> physical_schema(pa.schema([("id", pa.large_string()), ("signature", pa.large_string()),
    ...                            ("n", pa.int64())])).types
    [DataType(string_view), DictionaryType(dictionary<values=large_string, indices=uint32, \
ordered=0>), DataType(int64)]
    """
    return pa.schema([
        pa.field(field.name, _physical_type(field.name, field.type), field.nullable)
        for field in schema
    ])


def _physical_type(name: str, dtype: pa.DataType) -> pa.DataType:
    text = pa.types.is_string(dtype) or pa.types.is_large_string(dtype)
    if text and name in RUN_CONSTANT_COLUMNS:
        return pa.dictionary(pa.uint32(), pa.large_string())
    if text:
        return pa.string_view()
    if pa.types.is_binary(dtype) or pa.types.is_large_binary(dtype):
        return pa.binary_view()
    return dtype


def physical_table(frame: pl.DataFrame, schema: pa.Schema) -> pa.Table:
    """``frame`` (the columns of ``schema``, in its order) in :func:`physical_schema`: its
    texts shared with the frame, a run-constant column as a categorical (a column that holds
    one literal is cast once, not row by row)."""
    constant = [
        name for name, dtype in frame.schema.items()
        if name in RUN_CONSTANT_COLUMNS and dtype == pl.String
    ]
    table = frame.with_columns(pl.col(constant).cast(pl.Categorical)).to_arrow(
        compat_level=pl.CompatLevel.newest()
    )
    return table.cast(physical_schema(schema))


class ContractWriter:
    """A Parquet file of ``schema`` (the contract) written from tables in its
    :func:`physical_schema`; tables in ``schema`` itself are converted (their run-constant
    columns dictionary-encoded row by row). Closing it records ``schema`` as the file's Arrow
    schema, so that readers see the contract's types; :meth:`abort` closes it without (the file
    is a temporary one to remove)."""

    def __init__(self, path: Any, schema: pa.Schema) -> None:
        self.schema = schema
        self.physical = physical_schema(schema)
        self._writer = pq.ParquetWriter(path, self.physical, store_schema=False,
                                        **writer_options(self.physical))

    def write_table(self, table: pa.Table) -> None:
        """Append ``table``: in the physical schema, or in the contract's."""
        if table.column_names != self.physical.names:
            raise ValueError(f"columns {table.column_names} are not those of the file: "
                             f"{self.physical.names}")
        if not table.schema.equals(self.physical):
            table = pa.Table.from_arrays(
                [_as_physical(column, field.type)
                 for column, field in zip(table.columns, self.physical, strict=True)],
                schema=self.physical,
            )
        self._writer.write_table(table)

    write = write_table

    def close(self) -> None:
        """Record the contract's Arrow schema and close the file."""
        self._writer.add_key_value_metadata(
            {ARROW_SCHEMA_KEY: base64.b64encode(self.schema.serialize().to_pybytes())}
        )
        self._writer.close()

    def abort(self) -> None:
        """Close the file as it is (a failed run's temporary file)."""
        self._writer.close()

    def __enter__(self) -> ContractWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if kind is None:
            self.close()
        else:
            self.abort()


def _as_physical(column: pa.ChunkedArray, dtype: pa.DataType) -> pa.ChunkedArray:
    if pa.types.is_dictionary(dtype) and not pa.types.is_dictionary(column.type):
        column = column.dictionary_encode()
    return column.cast(dtype)
