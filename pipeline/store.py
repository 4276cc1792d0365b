"""A results store: many evaluation runs in one directory, each committed atomically.

Layout (hive-style, readable by DuckDB, Spark, polars and pyarrow alike)::

    STORE/
      eval_run=<RUN>/                    a committed run (never modified afterwards)
        manifest.json                    inputs and their sha256, config, signature, counts,
                                         start and end time, status "committed"
        scores/model=<MODEL>/*.parquet   scores; ``model`` lives in the directory name only
        rejected/*.parquet               rows set aside, with reasons
        texts/*.parquet                  question, reference and response behind each score
        intervals.parquet, comparisons.parquet   statistics (when computed)
      _staging/eval_run=<RUN>.<uuid>/    a run being written (invisible to readers)
      _failed/<RUN>.<uuid>.json          manifests of runs that raised (status "failed")
      _lock                              held (``flock``) by the process writing a run
      eval.duckdb                        views over every committed run

The partition column is called ``eval_run`` because records have a ``run`` column of their own
(the generation run of the model answers). Model directory names are percent-encoded
(``a/b`` -> ``model=a%2Fb``; a null model is ``__HIVE_DEFAULT_PARTITION__``), which DuckDB and
Spark both decode.

A run is written under ``_staging`` and becomes visible by one ``rename`` of its directory to
``eval_run=<RUN>``, after its manifest (status "committed") is on disk. A crash at any point
leaves every committed run intact and no partial run visible: a staging directory is invisible
to readers, and the next writer (who holds the lock, so no other writer is alive) removes it.
Writers serialise on an exclusive ``flock`` of ``_lock`` (released by the kernel when a
process dies, even by SIGKILL); a second writer waits up to its timeout, then fails with
:class:`StoreBusyError` naming the holder.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import socket
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.config import Config
from pipeline.schema import InputError

log = logging.getLogger(__name__)

RUN_PARTITION = "eval_run"
MODEL_PARTITION = "model"
MANIFEST_FILE = "manifest.json"
SCORES_DIR = "scores"
REJECTED_DIR = "rejected"
TEXTS_DIR = "texts"
STAGING_DIR = "_staging"
FAILED_DIR = "_failed"
LOCK_FILE = "_lock"
#: Directory name of a null partition value (the Hive/Spark convention DuckDB reads as NULL).
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
#: Run names: letters, digits, ``.``, ``_`` and ``-`` (they become directory names).
RUN_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class StoreBusyError(RuntimeError):
    """Another process holds the store's lock for longer than this one would wait."""


def sha256_file(path: Path, chunk: int = 2**22) -> str:
    """Hex sha256 of a file's bytes, read in 4 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def new_run_id(now: datetime | None = None) -> str:
    """``YYYYMMDDTHHMMSSZ-<6 hex>``: sorts by start time, unique across concurrent starts."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:6]}"


def partition_dir(column: str, value: str | None) -> str:
    """``column=<percent-encoded value>``; a null value is :data:`NULL_PARTITION`."""
    return f"{column}={NULL_PARTITION if value is None else quote(value, safe='')}"


def build_manifest(
    inputs: Sequence[Path], config: Config, metrics: Sequence[str], engine: str
) -> dict[str, Any]:
    """The manifest fields known before a run starts: what it reads and how it scores.

    Inputs are listed with their size and sha256; the config with every setting (paths as
    text); ``signature`` and ``metrics`` decide whether a later run may reuse these scores.
    """
    from pipeline import __version__

    return {
        "inputs": [
            {"path": str(path), "bytes": Path(path).stat().st_size, "sha256": sha256_file(path)}
            for path in inputs
        ],
        "config": _jsonable({f.name: getattr(config, f.name) for f in dataclasses.fields(config)}),
        "signature": config.signature(),
        "metrics": list(metrics),
        "engine": engine,
        "version": __version__,
    }


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _write_json_atomic(data: Mapping[str, Any], target: Path) -> None:
    tmp = target.with_name(f".tmp-{target.name}.{uuid.uuid4().hex}")
    with open(tmp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, sort_keys=True, default=str)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, target)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class Store:
    """A results store rooted at ``root`` (created on first use)."""

    root: Path

    def run_dir(self, run_id: str) -> Path:
        return self.root / f"{RUN_PARTITION}={run_id}"

    def manifests(self) -> list[dict[str, Any]]:
        """Manifests of the committed runs, oldest first (by start time, then name)."""
        found = []
        for path in sorted(self.root.glob(f"{RUN_PARTITION}=*/{MANIFEST_FILE}")):
            with open(path, encoding="utf-8") as handle:
                found.append(json.load(handle))
        return sorted(found, key=lambda m: (m["started_at"], m["run_id"]))

    def latest_compatible(self, signature: str, metrics: tuple[str, ...]) -> dict[str, Any] | None:
        """The newest committed run scored with ``signature`` and exactly ``metrics``."""
        for manifest in reversed(self.manifests()):
            if manifest["signature"] == signature and tuple(manifest["metrics"]) == metrics:
                return manifest
        return None

    @contextlib.contextmanager
    def lock(self, wait_seconds: float = 0.0, poll: float = 0.2) -> Iterator[None]:
        """Hold the store's exclusive write lock; wait up to ``wait_seconds`` for it.

        On entry, staging directories left by dead writers are removed (:meth:`recover`).
        """
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.root / LOCK_FILE
        handle = open(path, "a+", encoding="utf-8")  # noqa: SIM115 - held for the block
        try:
            deadline = time.monotonic() + max(wait_seconds, 0.0)
            while True:
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                    if time.monotonic() >= deadline:
                        handle.seek(0)
                        holder = handle.read().strip() or "unknown process"
                        raise StoreBusyError(
                            f"{self.root} is locked by another run ({holder}); waited "
                            f"{wait_seconds:g} s. Retry later or pass a longer --lock-wait."
                        ) from None
                    time.sleep(poll)
            handle.seek(0)
            handle.truncate()
            handle.write(f"pid {os.getpid()} on {socket.gethostname()} since {_now()}\n")
            handle.flush()
            self.recover()
            yield
        finally:
            handle.close()  # releases the flock

    def recover(self) -> list[Path]:
        """Remove staging directories of runs that never committed (call with the lock held)."""
        staging = self.root / STAGING_DIR
        removed = sorted(staging.iterdir()) if staging.is_dir() else []
        for path in removed:
            log.warning("removing %s: a run that never committed (crashed or killed)", path)
            shutil.rmtree(path, ignore_errors=True)
        return removed

    def begin(self, run_id: str, manifest: Mapping[str, Any]) -> StagedRun:
        """Start run ``run_id`` in a fresh staging directory (call with the lock held)."""
        if not RUN_ID_PATTERN.fullmatch(run_id):
            raise InputError(
                f"run id {run_id!r} is not valid: use letters, digits, '.', '_' and '-' "
                "(at most 128, starting with a letter or digit)"
            )
        if self.run_dir(run_id).exists():
            raise InputError(f"run {run_id!r} is already committed in {self.root}; choose another")
        directory = self.root / STAGING_DIR / f"{RUN_PARTITION}={run_id}.{uuid.uuid4().hex[:8]}"
        directory.mkdir(parents=True)
        staged = StagedRun(
            store=self, run_id=run_id, dir=directory,
            manifest={
                **manifest, "run_id": run_id, "status": "running", "started_at": _now(),
                "host": socket.gethostname(), "pid": os.getpid(),
            },
        )
        _write_json_atomic(staged.manifest, directory / MANIFEST_FILE)
        return staged


@dataclass
class StagedRun:
    """A run being written under ``_staging``: write into :attr:`dir`, then :meth:`commit`."""

    store: Store
    run_id: str
    dir: Path
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def scores_dir(self) -> Path:
        return self.dir / SCORES_DIR

    def commit(self, **fields: Any) -> Path:
        """Write the final manifest, then rename the run into place; returns its directory."""
        self.manifest.update(fields, status="committed", finished_at=_now())
        _write_json_atomic(self.manifest, self.dir / MANIFEST_FILE)
        target = self.store.run_dir(self.run_id)
        os.rename(self.dir, target)
        _fsync_dir(self.store.root)
        log.info("committed run %s (%s)", self.run_id, target)
        return target

    def abort(self, reason: str) -> Path:
        """Record the failure in ``_failed/`` and remove the staged data."""
        self.manifest.update(status="failed", finished_at=_now(), error=reason)
        failed = self.store.root / FAILED_DIR
        failed.mkdir(exist_ok=True)
        target = failed / f"{self.dir.name.removeprefix(RUN_PARTITION + '=')}.json"
        _write_json_atomic(self.manifest, target)
        shutil.rmtree(self.dir, ignore_errors=True)
        return target


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
                writer = pq.ParquetWriter(
                    path / f"{self.prefix}-0.parquet", self.schema, compression="zstd"
                )
                self._writers[model] = writer
            writer.write_table(part.drop(MODEL_PARTITION).to_arrow().cast(self.schema))
            self.rows += part.height

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()


def checkout_run(store_root: Path, run_id: str | None, out_dir: Path) -> Path:
    """Copy a committed run into a plain output directory (``scores.parquet``, ``texts.parquet``,
    ``rejected.parquet``, statistics, views), so ``report``, ``compare``, ``export`` and
    ``stats`` work on it; ``run_id`` None takes the latest run. DuckDB streams the copies, each
    file written atomically. Returns ``out_dir``.
    """
    import duckdb

    from pipeline.io.atomic import atomic_path
    from pipeline.schema import KEY_COLUMNS

    store = Store(Path(store_root))
    manifests = store.manifests()
    if not manifests:
        raise InputError(f"{store.root}: no committed runs (is it an `evaluate --store` store?)")
    if run_id is None:
        run_id = max(manifests, key=lambda m: (m["finished_at"], m["run_id"]))["run_id"]
    run_dir = store.run_dir(run_id)
    if not (run_dir / MANIFEST_FILE).is_file():
        known = ", ".join(m["run_id"] for m in manifests)
        raise InputError(f"{store.root}: no committed run {run_id!r}; runs: {known}")
    out_dir.mkdir(parents=True, exist_ok=True)
    scores = (run_dir / SCORES_DIR / "model=*" / "*.parquet").as_posix()
    order = ", ".join(KEY_COLUMNS)
    copies = {
        "scores.parquet": (
            f"select {order}, * exclude ({order}, {RUN_PARTITION}) "
            f"from read_parquet('{_sql(scores)}', hive_partitioning = true, "
            f"hive_types = {{'model': varchar, '{RUN_PARTITION}': varchar}}) "
            "order by source, row_number"
        ),
        "texts.parquet": _glob_select(run_dir / TEXTS_DIR, "order by source, row_number"),
        "rejected.parquet": _glob_select(run_dir / REJECTED_DIR, ""),
    }
    for name in ("intervals.parquet", "comparisons.parquet"):
        if (run_dir / name).is_file():
            copies[name] = _glob_select(run_dir / name, "")
    with duckdb.connect() as db:
        for name, query in copies.items():
            with atomic_path(out_dir / name) as tmp:
                db.execute(
                    f"copy ({query}) to '{_sql(tmp.as_posix())}' (format parquet, "
                    "compression zstd)"
                )
    from pipeline.views import build_views

    build_views(out_dir)
    log.info("checked out run %s into %s", run_id, out_dir)
    return out_dir


def _sql(text: str) -> str:
    return text.replace("'", "''")


def _glob_select(path: Path, tail: str) -> str:
    pattern = path.as_posix() if path.suffix == ".parquet" else f"{path.as_posix()}/*.parquet"
    return f"select * from read_parquet('{_sql(pattern)}', hive_partitioning = false) {tail}"
