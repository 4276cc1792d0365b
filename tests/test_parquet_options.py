"""The run's Parquet files: same values back, row_hash plain, texts without a dictionary."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.io.parquet_options import parquet_writer, writer_options


def _table() -> pa.Table:
    return pa.table({
        "model": ["m1", "m1", "m2", None],
        "response": ["a", "b", "a", "c"],
        "row_hash": [bytes(range(16)), bytes(16), b"\xff" * 16, bytes(range(16, 32))],
        "answer_f1": [0.5, None, 1.0, 0.0],
        "row_number": [0, 1, 2, 3],
    })


def _chunk(path: Path, column: str) -> pq.ColumnChunkMetaData:
    metadata = pq.ParquetFile(path).metadata.row_group(0)
    names = [metadata.column(i).path_in_schema for i in range(metadata.num_columns)]
    return metadata.column(names.index(column))


def test_values_come_back_unchanged(tmp_path: Path) -> None:
    table = _table()
    with parquet_writer(tmp_path / "t.parquet", table.schema) as writer:
        writer.write_table(table)
    assert pq.read_table(tmp_path / "t.parquet").equals(table)


def test_encodings_per_column(tmp_path: Path) -> None:
    table = _table()
    path = tmp_path / "t.parquet"
    with parquet_writer(path, table.schema) as writer:
        writer.write_table(table)
    row_hash = _chunk(path, "row_hash")
    assert row_hash.compression == "UNCOMPRESSED"
    assert row_hash.statistics is None
    assert "RLE_DICTIONARY" not in row_hash.encodings
    response = _chunk(path, "response")
    assert "RLE_DICTIONARY" not in response.encodings and response.statistics is None
    model = _chunk(path, "model")
    assert model.compression == "ZSTD"
    assert "RLE_DICTIONARY" in model.encodings
    assert model.statistics.min == "m1" and model.statistics.max == "m2"
    assert _chunk(path, "answer_f1").statistics.null_count == 1
    row_number = _chunk(path, "row_number")
    assert "DELTA_BINARY_PACKED" in row_number.encodings
    assert "RLE_DICTIONARY" not in row_number.encodings
    assert (row_number.statistics.min, row_number.statistics.max) == (0, 3)


def test_long_texts_at_the_fast_level(tmp_path: Path) -> None:
    schema = pa.schema([("model", pa.string()), ("response", pa.string()),
                        ("contexts", pa.list_(pa.string())), ("row_hash", pa.binary())])
    options = writer_options(schema)
    assert options["compression_level"] == {"response": -1, "contexts.list.element": -1}
    assert options["compression"]["contexts.list.element"] == "zstd"
    table = pa.table({"model": ["m"], "response": ["a b"], "contexts": [["x", "y"]],
                      "row_hash": [bytes(16)]}, schema=schema)
    with parquet_writer(tmp_path / "t.parquet", schema) as writer:
        writer.write_table(table)
    assert pq.read_table(tmp_path / "t.parquet").equals(table)
    assert _chunk(tmp_path / "t.parquet", "contexts.list.element").compression == "ZSTD"


def test_a_dictionary_past_one_mebibyte_is_kept(tmp_path: Path) -> None:
    # 2,000 distinct passages of 1 KB, each five times: a 2 MB dictionary. At pyarrow's 1 MiB
    # limit the chunk falls back to plain pages (about 9 MB of them); kept, it is the
    # dictionary and the indices.
    passages = [f"{i:04d}" + "x" * 1020 for i in range(2000)]
    table = pa.table({"contexts": [[p] for p in passages * 5]})
    path = tmp_path / "t.parquet"
    with parquet_writer(path, table.schema) as writer:
        writer.write_table(table)
    assert pq.read_table(path).equals(table)
    assert _chunk(path, "contexts.list.element").total_uncompressed_size < 3 * 2**20
