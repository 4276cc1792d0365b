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

import duckdb

from pipeline import __version__
from pipeline.config import Config
from pipeline.io.atomic import (
    TMP_PREFIX,
    atomic_path,
    clear_outputs,
    output_dir,
    owned_name,
    remove_stale,
)
from pipeline.io.layout import (
    COMPARISONS_FILE,
    DERIVED_FILES,
    EXTRA_OUTPUTS_FILE,
    FAILED_DIR,
    INTERVALS_FILE,
    LOCK_FILE,
    MANIFEST_FILE,
    REJECTED_DIR,
    REJECTED_FILE,
    RUN_PARTITION,
    SCORES_DIR,
    SCORES_FILE,
    STAGING_DIR,
    TEXTS_DIR,
    TEXTS_FILE,
)
from pipeline.io.partitioned import PartitionedWriter, partition_dir  # noqa: F401 - re-exported
from pipeline.io.sql import sql_string
from pipeline.schema import KEY_COLUMNS, InputError
from pipeline.views import build_views

log = logging.getLogger(__name__)

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


def build_manifest(
    inputs: Sequence[Path], config: Config, metrics: Sequence[str], engine: str
) -> dict[str, Any]:
    """The manifest fields known before a run starts: what it reads and how it scores.

    Inputs are listed with their size and sha256; the config with every setting (paths as
    text); ``signature`` and ``metrics`` decide whether a later run may reuse these scores.
    """
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
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable(dataclasses.asdict(value))
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
    tmp = target.with_name(owned_name(TMP_PREFIX, target.name))
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
        A root that is a file or cannot be written raises
        :class:`pipeline.io.atomic.OutputPathError`.
        """
        output_dir(self.root)
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
        """Remove staging directories of runs that never committed (call with the lock held),
        and the temporary files that killed processes left in the root (the views' database)
        and in ``_failed/`` (:func:`pipeline.io.atomic.remove_stale`: only those whose process
        is gone, since readers may build the views without the lock)."""
        staging = self.root / STAGING_DIR
        removed = sorted(staging.iterdir()) if staging.is_dir() else []
        for path in removed:
            log.warning("removing %s: a run that never committed (crashed or killed)", path)
            shutil.rmtree(path, ignore_errors=True)
        return [*removed, *remove_stale(self.root), *remove_stale(self.root / FAILED_DIR)]

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

    @contextlib.contextmanager
    def transaction(
        self, run_id: str, manifest: Mapping[str, Any], *, force: bool = False,
        lock_wait: float = 0.0,
    ) -> Iterator[Transaction]:
        """Add one run: lock, find a compatible run to reuse, stage, then commit or abort, and
        rebuild the store's views. Both engines write their runs through it.

        The body writes into ``transaction.staged.dir`` and calls
        :meth:`Transaction.finish`; an exception (or a body that never finished) records a
        failed manifest in ``_failed/`` and leaves no partial run.
        """
        with self.lock(lock_wait):
            metrics = tuple(manifest["metrics"])
            previous = None if force else self.latest_compatible(manifest["signature"], metrics)
            if previous is not None:
                log.info("reusing unchanged rows of run %s", previous["run_id"])
            transaction = Transaction(staged=self.begin(run_id, manifest), previous=previous)
            try:
                yield transaction
                if not transaction._fields:
                    raise RuntimeError("the run wrote no counts (Transaction.finish not called)")
                transaction.run_dir = transaction.staged.commit(**transaction._fields)
            except BaseException as exc:
                transaction.staged.abort(f"{type(exc).__name__}: {exc}")
                raise
            build_views(self.root)


@dataclass
class Transaction:
    """One run being added to a store: what :meth:`Store.transaction` yields.

    ``previous`` is the manifest of the newest compatible run whose rows may be reused (None
    when forced or when there is none); the engine writes into ``staged.dir`` and reports its
    ``counts`` and ``corpus_digest`` with :meth:`finish`.
    """

    staged: StagedRun
    previous: dict[str, Any] | None
    run_dir: Path | None = None
    _fields: dict[str, Any] = field(default_factory=dict)

    @property
    def previous_dir(self) -> Path | None:
        """Directory of the reused run, if any."""
        if self.previous is None:
            return None
        return self.staged.store.run_dir(self.previous["run_id"])

    def finish(self, *, counts: Mapping[str, int], corpus_digest: str | None) -> None:
        """What the engine wrote: recorded in the manifest at commit."""
        self._fields = {
            "counts": dict(counts), "corpus_digest": corpus_digest,
            "reused_from": self.previous["run_id"] if self.previous else None,
        }


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


def checkout_run(store_root: Path, run_id: str | None, out_dir: Path) -> Path:
    """Copy a committed run into a plain output directory (``scores.parquet``, ``texts.parquet``,
    ``rejected.parquet``, statistics, views), so ``report``, ``compare``, ``export`` and
    ``stats`` work on it; ``run_id`` None takes the latest run. DuckDB streams the copies, each
    file written atomically. What an earlier run left in ``out_dir`` and this one does not
    write again (statistics, the files of :data:`EXTRA_OUTPUTS_FILE`) is removed first, with
    the temporary files of killed runs. Returns ``out_dir``.
    """
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
    output_dir(out_dir)
    remove_stale(out_dir)
    clear_outputs(out_dir, DERIVED_FILES, EXTRA_OUTPUTS_FILE)
    scores = (run_dir / SCORES_DIR / "model=*" / "*.parquet").as_posix()
    order = ", ".join(KEY_COLUMNS)
    copies = {
        SCORES_FILE: (
            f"select {order}, * exclude ({order}, {RUN_PARTITION}) "
            f"from read_parquet('{sql_string(scores)}', hive_partitioning = true, "
            f"hive_types = {{'model': varchar, '{RUN_PARTITION}': varchar}}) "
            "order by source, row_number"
        ),
        TEXTS_FILE: _glob_select(run_dir / TEXTS_DIR, "order by source, row_number"),
        REJECTED_FILE: _glob_select(run_dir / REJECTED_DIR, ""),
    }
    for name in (INTERVALS_FILE, COMPARISONS_FILE):
        if (run_dir / name).is_file():
            copies[name] = _glob_select(run_dir / name, "")
    with duckdb.connect() as db:
        for name, query in copies.items():
            with atomic_path(out_dir / name) as tmp:
                db.execute(
                    f"copy ({query}) to '{sql_string(tmp.as_posix())}' (format parquet, "
                    "compression zstd)"
                )
    build_views(out_dir)
    log.info("checked out run %s into %s", run_id, out_dir)
    return out_dir


def _glob_select(path: Path, tail: str) -> str:
    pattern = path.as_posix() if path.suffix == ".parquet" else f"{path.as_posix()}/*.parquet"
    return f"select * from read_parquet('{sql_string(pattern)}', hive_partitioning = false) {tail}"
