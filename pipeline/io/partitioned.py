"""Parquet files partitioned by model, as a results store lays out a run's scores."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.io.layout import MODEL_PARTITION, NULL_PARTITION
from pipeline.io.parquet_options import parquet_writer

__all__ = ["PartitionedWriter", "partition_dir"]


def partition_dir(column: str, value: str | None) -> str:
    """``column=<percent-encoded value>``; a null value is :data:`NULL_PARTITION`."""
    return f"{column}={NULL_PARTITION if value is None else quote(value, safe='')}"


class PartitionedWriter:
    """Parquet files under ``directory/model=<M>/``, one open writer per model.

    ``write`` takes tables with a ``model`` column; the column is dropped from the files (the
    directory names carry it), as Spark's ``partitionBy`` does.
    """

    def __init__(self, directory: Path, schema: pa.Schema, prefix: str = "part") -> None:
        self.directory = directory
        self.schema = schema.remove(schema.get_field_index(MODEL_PARTITION))
        self.prefix = prefix
        self._writers: dict[str | None, pq.ParquetWriter] = {}
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        for (model,), part in frame.partition_by(
            MODEL_PARTITION, as_dict=True, maintain_order=True
        ).items():
            writer = self._writers.get(model)
            if writer is None:
                path = self.directory / partition_dir(MODEL_PARTITION, model)
                path.mkdir(parents=True, exist_ok=True)
                writer = parquet_writer(path / f"{self.prefix}-0.parquet", self.schema)
                self._writers[model] = writer
            writer.write_table(part.drop(MODEL_PARTITION).to_arrow().cast(self.schema))
            self.rows += part.height

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
