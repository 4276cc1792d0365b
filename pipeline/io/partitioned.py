"""Parquet files partitioned by model, as a results store lays out a run's scores.

A partition directory is ``model=<name, percent-encoded>`` (``org/m v2`` -> ``model=org%2Fm%20v2``,
a null model ``model=__HIVE_DEFAULT_PARTITION__``), which DuckDB, Spark, polars and pyarrow decode
back into the name. A name that cannot be a directory name that reads back as itself is
*hashed*: longer than :data:`MAX_PLAIN_NAME` once encoded (a file system allows 255 bytes),
empty, :data:`~pipeline.io.layout.NULL_PARTITION` itself, or starting with
:data:`~pipeline.io.layout.HASHED_PREFIX`. Its directory is ``model=__sha256_<32 hex>`` (sha256
of the UTF-8 name) and its files carry the real name in the column
:data:`~pipeline.io.layout.MODEL_NAME_COLUMN` (``model_name``); files of plain partitions do not
have that column. So every name, of any length or content, has a directory of its own, and the
real name is always in the data: readers take ``coalesce(model_name, model)``, as
:func:`partitions_sql` (DuckDB) and :func:`scan_partitions` (polars) do.

:class:`PartitionedWriter` keeps at most :func:`open_file_budget` files open (a quarter of the
limit on open files, at most :data:`MAX_OPEN_PARTITIONS`): the rows of models beyond that go to
one spill file, which :meth:`PartitionedWriter.close` sorts by model (DuckDB, in bounded memory)
and writes out one model at a time. Each model gets exactly one file, however many models there
are and in whatever order their rows come.
"""

from __future__ import annotations

import hashlib
import logging
import resource
import shutil
from pathlib import Path
from urllib.parse import quote

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.io.atomic import WORK_PREFIX, owned_name
from pipeline.io.layout import HASHED_PREFIX, MODEL_NAME_COLUMN, MODEL_PARTITION, NULL_PARTITION
from pipeline.io.parquet_options import ContractWriter, parquet_writer, physical_table
from pipeline.io.sql import sql_literal

__all__ = [
    "MAX_OPEN_PARTITIONS",
    "MAX_PLAIN_NAME",
    "PartitionedWriter",
    "is_hashed",
    "open_file_budget",
    "partition_dir",
    "partition_value",
    "partitions_sql",
    "scan_partitions",
]

log = logging.getLogger(__name__)

#: Longest percent-encoded name kept as a directory name; longer names are hashed. (255 bytes is
#: the usual limit of a file name; 128 leaves room for ``model=`` and file systems with less.)
MAX_PLAIN_NAME = 128
#: Most partition files a writer keeps open at once, whatever the limit on open files allows.
MAX_OPEN_PARTITIONS = 256
#: The sort of spilled rows: DuckDB's memory limit (it spills to disk beyond it).
SPILL_SORT_MEMORY = "512MB"
_SPILL_ROW = "__spill_row"
_HIVE_TYPES = "{'model': varchar, 'eval_run': varchar}"


def is_hashed(value: str | None) -> bool:
    """Whether the model name ``value`` gets a hashed directory (see the module docstring).

    >>> is_hashed("org/model v2"), is_hashed(None), is_hashed(""), is_hashed("x" * 200)
    (False, False, True, True)
    """
    if value is None:
        return False
    return (
        value in ("", NULL_PARTITION) or value.startswith(HASHED_PREFIX)
        or len(quote(value, safe="")) > MAX_PLAIN_NAME
    )


def partition_value(value: str | None) -> str:
    """The directory value of the model name ``value``: percent-encoded, or hashed.

    >>> partition_value("org/m v2"), partition_value(None)
    ('org%2Fm%20v2', '__HIVE_DEFAULT_PARTITION__')
    >>> partition_value("m" * 300)[:9], len(partition_value("m" * 300))
    ('__sha256_', 41)
    """
    if value is None:
        return NULL_PARTITION
    if is_hashed(value):
        return HASHED_PREFIX + hashlib.sha256(value.encode("utf-8")).hexdigest()[:32]
    return quote(value, safe="")


def partition_dir(column: str, value: str | None) -> str:
    """``column=<value>`` with the value as :func:`partition_value` writes it."""
    return f"{column}={partition_value(value)}"


def open_file_budget(limit: int | None = None) -> int:
    """How many partition files a writer may hold open: a quarter of the soft limit on open
    files (``ulimit -n``, or ``limit``), between 1 and :data:`MAX_OPEN_PARTITIONS`.

    >>> open_file_budget(1024), open_file_budget(64), open_file_budget(10**6)
    (256, 16, 256)
    """
    if limit is None:
        limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if limit == resource.RLIM_INFINITY:
            return MAX_OPEN_PARTITIONS
    return max(1, min(MAX_OPEN_PARTITIONS, limit // 4))


def partitions_sql(files: str, *, where: str = "") -> str:
    """A DuckDB ``select`` over model-partitioned Parquet files whose ``model`` is the real model
    name (``coalesce(model_name, model)``), without ``model_name``.

    ``files``: the SQL of ``read_parquet``'s first argument (a quoted glob or a list).
    ``eval_run`` and ``model`` are read from the directories as text; files with and without
    ``model_name`` are read together (``union_by_name``).
    """
    read = (
        f"select * from read_parquet({files}, hive_partitioning = true, union_by_name = true, "
        f"hive_types = {_HIVE_TYPES}) {where}"
    )
    return (
        f"select * exclude ({MODEL_NAME_COLUMN}) replace "
        f"(coalesce({MODEL_NAME_COLUMN}, {MODEL_PARTITION}) as {MODEL_PARTITION}) "
        f"from (select cast(null as varchar) as {MODEL_NAME_COLUMN} where false "
        f"union all by name {read})"
    )


def scan_partitions(directory: Path) -> pl.LazyFrame:
    """The files under ``directory/model=*/`` as one polars scan whose ``model`` is the real
    model name (``coalesce(model_name, model)``), without ``model_name``."""
    directory = Path(directory)
    files = sorted(directory.glob(f"{MODEL_PARTITION}=*/*.parquet"))
    hive = {MODEL_PARTITION: pl.String}
    if not files:  # the reader's own error
        return pl.scan_parquet(directory, hive_partitioning=True, hive_schema=hive)
    plain = [path for path in files if not path.parent.name.startswith(
        f"{MODEL_PARTITION}={HASHED_PREFIX}")]
    schema = pl.read_parquet_schema(plain[0] if plain else files[0])
    schema.pop(MODEL_NAME_COLUMN, None)
    # The directory, not its files: hive keys are taken from the paths below it only (a run
    # being staged lives in ``_staging/eval_run=<RUN>.<id>/``).
    if len(plain) == len(files):
        return pl.scan_parquet(directory, hive_partitioning=True, hive_schema=hive)
    schema[MODEL_NAME_COLUMN] = pl.String()
    scan = pl.scan_parquet(
        directory, hive_partitioning=True, hive_schema=hive, schema=schema,
        missing_columns="insert", extra_columns="ignore",
    )
    return scan.with_columns(
        pl.coalesce(MODEL_NAME_COLUMN, MODEL_PARTITION).alias(MODEL_PARTITION)
    ).drop(MODEL_NAME_COLUMN)


class PartitionedWriter:
    """Parquet files under ``directory/model=<M>/``, one file per model, with at most
    ``max_open`` files open (default :func:`open_file_budget`).

    ``write`` takes tables with a ``model`` column; the column is dropped from the files (the
    directory names carry it, as Spark's ``partitionBy`` does), except that files of a hashed
    name keep the name in ``model_name``. Rows of models beyond the first ``max_open`` go to a
    spill file in ``spill_dir`` (default: beside ``directory``), written out by :meth:`close`;
    :meth:`abort` drops them.
    """

    def __init__(self, directory: Path, schema: pa.Schema, prefix: str = "part", *,
                 max_open: int | None = None, spill_dir: Path | None = None) -> None:
        self.directory = Path(directory)
        self.schema = schema.remove(schema.get_field_index(MODEL_PARTITION))
        self._named_schema = self.schema.append(pa.field(MODEL_NAME_COLUMN, pa.string()))
        self._spill_schema = schema.append(pa.field(_SPILL_ROW, pa.int64()))
        self.prefix = prefix
        self.max_open = open_file_budget() if max_open is None else max(1, max_open)
        self._spill_parent = Path(spill_dir) if spill_dir is not None else self.directory.parent
        self._writers: dict[str | None, ContractWriter] = {}
        self._spill_dir: Path | None = None
        self._spill: pq.ParquetWriter | None = None
        self._spilled = 0
        self.rows = 0

    def write(self, table: pa.Table) -> None:
        frame = pl.from_arrow(table)
        assert isinstance(frame, pl.DataFrame)
        for (model,), part in frame.partition_by(
            MODEL_PARTITION, as_dict=True, maintain_order=True
        ).items():
            writer = self._writers.get(model)
            if writer is None and len(self._writers) < self.max_open:
                writer = self._writers[model] = self._open(model)
            if writer is not None:
                writer.write_table(self._file_table(model, part))
            else:
                self._spill_part(part)
            self.rows += part.height

    def close(self) -> None:
        """Close the open files, then write the spilled models one at a time."""
        try:
            for writer in self._writers.values():
                writer.close()
            self._writers.clear()
            if self._spill is not None:
                self._spill.close()
                self._spill = None
                self._write_spilled()
        finally:
            self._remove_spill()

    def abort(self) -> None:
        """Close every file and drop the spilled rows (the run failed)."""
        for writer in [*self._writers.values(), *([self._spill] if self._spill else [])]:
            try:
                if isinstance(writer, ContractWriter):
                    writer.abort()
                else:
                    writer.close()
            except Exception:  # the run's own error is the one to report
                log.debug("closing a partition file of a failed run", exc_info=True)
        self._writers.clear()
        self._spill = None
        self._remove_spill()

    # -- internals ------------------------------------------------------------------------------

    def _open(self, model: str | None) -> ContractWriter:
        path = self.directory / partition_dir(MODEL_PARTITION, model)
        path.mkdir(parents=True, exist_ok=True)
        schema = self._named_schema if is_hashed(model) else self.schema
        return ContractWriter(path / f"{self.prefix}-0.parquet", schema)

    def _file_table(self, model: str | None, part: pl.DataFrame) -> pa.Table:
        data = part.drop(MODEL_PARTITION)
        if is_hashed(model):
            named = data.with_columns(pl.lit(model, pl.String).alias(MODEL_NAME_COLUMN))
            return physical_table(named, self._named_schema)
        return physical_table(data, self.schema)

    def _spill_part(self, part: pl.DataFrame) -> None:
        if self._spill is None:
            self._spill_dir = self._spill_parent / owned_name(WORK_PREFIX)
            self._spill_dir.mkdir(parents=True)
            self._spill = parquet_writer(self._spill_dir / "spill.parquet", self._spill_schema)
            log.info("more than %d models: the rows of the others are spilled, then written "
                     "one model at a time", self.max_open)
        numbered = part.with_columns(
            pl.int_range(self._spilled, self._spilled + part.height, dtype=pl.Int64)
            .alias(_SPILL_ROW)
        )
        self._spill.write_table(numbered.to_arrow().cast(self._spill_schema))
        self._spilled += part.height

    def _write_spilled(self) -> None:
        """The spill sorted by model (then arrival), each model's rows into its own file."""
        assert self._spill_dir is not None
        spill = sql_literal((self._spill_dir / "spill.parquet").as_posix())
        config: dict[str, str | bool | int | float | list[str]] = {
            "memory_limit": SPILL_SORT_MEMORY,
            "temp_directory": (self._spill_dir / "duckdb").as_posix(),
        }
        with duckdb.connect(config=config) as db:
            reader = db.sql(
                f"select * from read_parquet({spill}, hive_partitioning = false) "
                f"order by {MODEL_PARTITION} nulls first, "
                f"{_SPILL_ROW}"
            ).to_arrow_reader(65_536)
            current: tuple[str | None] | None = None
            writer: ContractWriter | None = None
            try:
                for batch in reader:
                    frame = pl.from_arrow(batch)
                    assert isinstance(frame, pl.DataFrame)
                    for (model,), part in frame.drop(_SPILL_ROW).partition_by(
                        MODEL_PARTITION, as_dict=True, maintain_order=True
                    ).items():
                        if writer is None or current != (model,):
                            if writer is not None:
                                writer.close()
                            writer, current = self._open(model), (model,)
                        writer.write_table(self._file_table(model, part))
            finally:
                if writer is not None:
                    writer.close()

    def _remove_spill(self) -> None:
        if self._spill_dir is not None:
            shutil.rmtree(self._spill_dir, ignore_errors=True)
            self._spill_dir = None

