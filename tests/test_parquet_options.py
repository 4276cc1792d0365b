"""The run's Parquet files: same values back, row_hash plain, texts without a dictionary; the
scores written from polars' own layout are the files the contract's types write."""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

from pipeline.api import score
from pipeline.config import load_config
from pipeline.io.parquet_options import (
    ContractWriter,
    parquet_writer,
    physical_schema,
    physical_table,
    writer_options,
)
from pipeline.metrics.registry import resolve
from pipeline.scoring import BatchScorer

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample" / "records.parquet"


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


def _scores() -> tuple[pl.DataFrame, pa.Schema]:
    """Scores of the bundled sample (texts, keys, counts, rates, the row hash, the signature)
    and their contract schema."""
    config = load_config(None, metrics=("answer", "citation", "abstention", "usage", "lexical",
                                        "retrieval"))
    schema = BatchScorer.for_config(config, specs=resolve(config.metrics)).output_schema
    return score(SAMPLE, config=config).scores.select(schema.names), schema


def _column_chunks(path: Path) -> list[tuple[object, ...]]:
    metadata = pq.ParquetFile(path).metadata
    return [
        (chunk.path_in_schema, chunk.encodings, chunk.compression, chunk.total_compressed_size,
         chunk.statistics)
        for k in range(metadata.num_row_groups)
        for chunk in (metadata.row_group(k).column(i) for i in range(metadata.num_columns))
    ]


def test_contract_writer_writes_the_file_the_contract_types_write(tmp_path: Path) -> None:
    scores, schema = _scores()
    assert isinstance(scores["signature"].dtype, pl.String) and len(scores["signature"][0]) > 100
    plain, physical = tmp_path / "plain.parquet", tmp_path / "physical.parquet"
    with parquet_writer(plain, schema) as writer:
        for part in scores.iter_slices(100):
            writer.write_table(part.to_arrow().cast(schema))
    with ContractWriter(physical, schema) as contract:
        for part in scores.iter_slices(100):
            table = physical_table(part, schema)
            assert table.schema == physical_schema(schema)
            assert pa.types.is_dictionary(table.schema.field("signature").type)
            assert table.column("signature").chunk(0).dictionary.to_pylist() == [
                scores["signature"][0]]
            contract.write_table(table)
    read = pq.read_table(physical)
    assert read.schema.equals(schema) and read.equals(pq.read_table(plain))
    assert pq.read_metadata(physical).metadata == pq.read_metadata(plain).metadata
    assert _column_chunks(physical) == _column_chunks(plain)
    assert_frame_equal(pl.read_parquet(physical), scores)
    assert duckdb.sql(f"describe select * from '{physical}'").fetchall() == duckdb.sql(
        f"describe select * from '{plain}'").fetchall()


def test_contract_writer_takes_the_contract_types_too(tmp_path: Path) -> None:
    scores, schema = _scores()
    with ContractWriter(tmp_path / "c.parquet", schema) as contract:
        contract.write(scores.head(10).to_arrow().cast(schema))
        contract.write(physical_table(scores.slice(10), schema))
    assert_frame_equal(pl.read_parquet(tmp_path / "c.parquet"), scores)
    assert pq.read_schema(tmp_path / "c.parquet").equals(schema)


def test_contract_writer_names_columns_it_does_not_hold(tmp_path: Path) -> None:
    scores, schema = _scores()
    with ContractWriter(tmp_path / "c.parquet", schema) as contract, pytest.raises(
        ValueError, match="are not those of the file"
    ):
        contract.write(scores.drop("signature").to_arrow())
