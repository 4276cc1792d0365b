"""A results store: many evaluation runs in one directory, each committed atomically.

Layout (hive-style, readable by DuckDB, Spark, polars and pyarrow alike)::

    STORE/
      eval_run=<RUN>/                    a committed run (never modified afterwards)
        manifest.json                    inputs and their sha256, config, signature, counts,
                                         start and end time, status "committed"
        scores/model=<MODEL>/*.parquet   scores; ``model`` lives in the directory name only
        rejected/*.parquet               rows set aside, with reasons
        texts/*.parquet                  question, reference, response and passages of each score
        intervals.parquet, comparisons.parquet   statistics (when computed)
      _staging/eval_run=<RUN>.<uuid>/    a run being written (invisible to readers)
      _failed/<RUN>.<uuid>.json          manifests of runs that raised (status "failed")
      _lock                              held (``flock``) by the process writing a run
      eval.duckdb                        views over every committed run

The partition column is called ``eval_run`` because records have a ``run`` column of their own
(the generation run of the model answers). Model directory names are percent-encoded
(``a/b`` -> ``model=a%2Fb``; a null model is ``__HIVE_DEFAULT_PARTITION__``), which DuckDB and
Spark both decode; a name too long or odd for a directory is hashed, with the real name in the
column ``model_name`` (:mod:`pipeline.io.partitioned`).

Runs are isolated: a run whose manifest is missing or damaged, or whose files are truncated, is
*damaged* (:func:`pipeline.views.store_runs`, :func:`pipeline.views.run_damage`); readers leave
it out with a warning naming it, choosing it is an :class:`~pipeline.schema.InputError`, and a
new run does not reuse it. :func:`checkout_run` copies a run into an output directory in one
atomic step (staged beside it, then swapped in).

A run is written under ``_staging`` and becomes visible by one ``rename`` of its directory to
``eval_run=<RUN>``, after its manifest (status "committed") is on disk. A crash at any point
leaves every committed run intact and no partial run visible: a staging directory is invisible
to readers, and the next writer (who holds the lock, so no other writer is alive) removes it.
Writers serialise on an exclusive ``flock`` of ``_lock`` (released by the kernel when a
process dies, even by SIGKILL); a second writer waits up to its timeout, then fails with
:class:`StoreBusyError` naming the holder. The inputs are hashed once the lock is held, and
must be the same files when the run commits (:class:`InputSnapshot`).
"""

from __future__ import annotations

import contextlib
import ctypes
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
import stat
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
    OutputPathError,
    check_output_dir,
    clear_outputs,
    output_dir,
    owned_name,
    remove_stale,
)
from pipeline.io.layout import (
    COMPARISONS_FILE,
    DATABASE_FILE,
    DERIVED_FILES,
    EXTRA_OUTPUTS_FILE,
    FAILED_DIR,
    INTERVALS_FILE,
    LOCK_FILE,
    MANIFEST_FILE,
    MODEL_PARTITION,
    REJECTED_DIR,
    REJECTED_FILE,
    RUN_PARTITION,
    SCORES_DIR,
    SCORES_FILE,
    STAGING_DIR,
    TEXTS_DIR,
    TEXTS_FILE,
)
from pipeline.io.partitioned import (  # noqa: F401 - re-exported
    PartitionedWriter,
    partition_dir,
    partitions_sql,
)
from pipeline.io.sql import sql_literal
from pipeline.schema import KEY_COLUMNS, InputError
from pipeline.views import StoreRuns, build_views, run_damage, store_runs

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

    Inputs are listed by path; :meth:`Store.transaction` adds their size and sha256 once it
    holds the store's lock (:class:`InputSnapshot`). The config is listed with every setting
    (paths as text); ``signature`` and ``metrics`` decide whether a later run may reuse these
    scores.
    """
    return {
        "inputs": [{"path": str(path)} for path in inputs],
        "config": _jsonable({f.name: getattr(config, f.name) for f in dataclasses.fields(config)}),
        "signature": config.signature(),
        "metrics": list(metrics),
        "engine": engine,
        "version": __version__,
    }


@dataclass(frozen=True)
class InputSnapshot:
    """An input file as a run found it once it held the store's lock: what the manifest
    records (``path``, ``bytes``, ``sha256``) and the identity it is checked against before
    the run commits (device, inode, size, modification time).

    The hash is taken after the lock is held, so a file replaced while the run waited for the
    lock is recorded as the file the run then reads. :meth:`changed` says whether the file
    was replaced or written to since: then the bytes the run read may not be the ones hashed,
    and the run is not committed.
    """

    path: str
    bytes: int | None
    sha256: str | None
    identity: tuple[int, int, int, int] | None

    @classmethod
    def take(cls, path: str) -> InputSnapshot:
        """Hash a regular file (a pipe or device is recorded by path only: reading it to hash
        it would consume it)."""
        try:
            before = os.stat(path)
        except OSError:  # the engine reports a missing input with its own message
            return cls(path, None, None, None)
        if not stat.S_ISREG(before.st_mode):
            return cls(path, None, None, None)
        digest = sha256_file(Path(path))
        return cls(path, before.st_size, digest, _identity(before))

    def changed(self) -> bool:
        """Whether the file at :attr:`path` is no longer the one hashed."""
        if self.identity is None:
            return False
        try:
            return _identity(os.stat(self.path)) != self.identity
        except OSError:
            return True

    def entry(self) -> dict[str, Any]:
        """The manifest's entry: ``path``, ``bytes`` and ``sha256``."""
        return {"path": self.path, "bytes": self.bytes, "sha256": self.sha256}


def _identity(found: os.stat_result) -> tuple[int, int, int, int]:
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns)


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

    def runs(self) -> StoreRuns:
        """The committed runs (manifests read) and the damaged ones, by name, with why."""
        return store_runs(self.root)

    def manifests(self) -> list[dict[str, Any]]:
        """Manifests of the committed runs, oldest first (by start time, then name). A run
        whose manifest is missing or damaged is not among them."""
        return list(self.runs().committed)

    def latest_compatible(self, signature: str, metrics: tuple[str, ...]) -> dict[str, Any] | None:
        """The newest committed run scored with ``signature`` and exactly ``metrics`` whose
        files can be read; damaged runs are skipped with a warning naming each."""
        runs = self.runs()
        for run, why in runs.damaged.items():
            log.warning("run %s of %s is damaged (%s): its rows are not reused", run, self.root,
                        why)
        for manifest in reversed(runs.committed):
            if manifest["signature"] != signature or tuple(manifest["metrics"]) != metrics:
                continue
            damage = run_damage(self.run_dir(manifest["run_id"]))
            if damage is None:
                return manifest
            log.warning("run %s of %s is damaged (%s): its rows are not reused",
                        manifest["run_id"], self.root, damage)
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
            waiting = False
            while True:
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                    handle.seek(0)
                    holder = handle.read().strip() or "unknown process"
                    if time.monotonic() >= deadline:
                        raise StoreBusyError(
                            f"{self.root} is locked by another run ({holder}); waited "
                            f"{wait_seconds:g} s. Retry later or pass a longer --lock-wait."
                        ) from None
                    if not waiting:
                        log.info("%s is locked by another run (%s); waiting up to %g s",
                                 self.root, holder, wait_seconds)
                        waiting = True
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
            # Hashed now that no other writer can run, i.e. as the engine will read them.
            inputs = [InputSnapshot.take(entry["path"]) for entry in manifest.get("inputs", ())]
            manifest = {**manifest, "inputs": [snapshot.entry() for snapshot in inputs]}
            metrics = tuple(manifest["metrics"])
            previous = None if force else self.latest_compatible(manifest["signature"], metrics)
            if previous is not None:
                log.info("reusing unchanged rows of run %s", previous["run_id"])
            transaction = Transaction(staged=self.begin(run_id, manifest), previous=previous)
            try:
                yield transaction
                if not transaction._fields:
                    raise RuntimeError("the run wrote no counts (Transaction.finish not called)")
                changed = [snapshot.path for snapshot in inputs if snapshot.changed()]
                if changed:
                    raise InputError(
                        f"{', '.join(changed)} changed while run {run_id} read it (replaced or "
                        "written to), so its rows may not be those hashed; nothing was "
                        "committed: run again once the file stays put"
                    )
                transaction.run_dir = transaction.staged.commit(**transaction._fields)
            except BaseException as exc:
                transaction.staged.abort(f"{type(exc).__name__}: {exc}")
                raise
            # The run is committed: what follows only serves readers, who rebuild the views
            # themselves when they are missing or stale, so a failure here is a warning.
            try:
                build_views(self.root)
            except Exception as exc:  # the run stands whatever happens here
                log.warning("run %s is committed, but the views of %s were not rebuilt (%s); "
                            "`rag-eval query` rebuilds them", run_id, self.root, exc)


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


@dataclass(frozen=True)
class CheckedOut:
    """What :func:`checkout_run` put in place: the run and the directory."""

    run_id: str
    out_dir: Path

    def __fspath__(self) -> str:
        return os.fspath(self.out_dir)


#: Files of a run in an output directory that a checkout writes again (or leaves out): the
#: earlier ones never come along, nor do the files :data:`EXTRA_OUTPUTS_FILE` lists.
_RUN_FILES = frozenset({
    SCORES_FILE, REJECTED_FILE, TEXTS_FILE, *DERIVED_FILES, f"{DATABASE_FILE}.wal",
    EXTRA_OUTPUTS_FILE,
})


def checkout_run(store_root: Path, run_id: str | None, out_dir: Path) -> CheckedOut:
    """Copy a committed run into a plain output directory (``scores.parquet``, ``texts.parquet``,
    ``rejected.parquet``, statistics, views), so ``report``, ``compare``, ``export`` and
    ``stats`` work on it; ``run_id`` None takes the latest run.

    One atomic step: the whole directory is staged in a sibling (``.tmp-<DIR>.<pid>@<host>.<8
    hex>``), then swapped with ``out_dir`` by one ``renameat2(RENAME_EXCHANGE)`` (one
    ``rename`` when ``out_dir`` does not exist yet), so ``out_dir`` holds the earlier run or
    this one, whole, whenever the process stops. Files of ``out_dir`` that no run wrote (notes,
    your exports) come along as hard links; what an earlier run left and this one does not
    write again (statistics, the files of :data:`EXTRA_OUTPUTS_FILE`) does not. Leftovers of
    killed checkouts beside ``out_dir`` and in it are removed first. An unknown or damaged run
    is an :class:`~pipeline.schema.InputError` that names it and lists the runs; without
    ``run_id``, damaged runs newer than the latest readable one are skipped with a warning.
    """
    store = Store(Path(store_root))
    runs = store.runs()
    if not runs.committed:
        raise InputError(f"{store.root}: no committed runs (is it an `evaluate --store` store?)"
                         + (f"; damaged: {runs.listing()}" if runs.damaged else ""))
    if run_id is None:  # the latest run that can be read, as the views read it
        newest = sorted(runs.committed, key=lambda m: (str(m["finished_at"]), m["run_id"]))
        for manifest in reversed(newest):
            run_id = manifest["run_id"]
            why = _checkout_damage(store.run_dir(run_id))
            if why is None:
                break
            log.warning("run %s of %s is damaged (%s); checking out an earlier run", run_id,
                        store.root, why)
    elif run_id not in runs.ids:
        raise runs.unknown(run_id)
    assert run_id is not None
    run_dir = store.run_dir(run_id)
    why = _checkout_damage(run_dir)
    if why is not None:
        others = ", ".join(r for r in runs.ids if r != run_id) or "none"
        raise InputError(f"{store.root}: run {run_id!r} is damaged ({why}); runs: {others}")

    target = Path(out_dir).resolve()  # a link to a directory: swap the directory itself
    check_output_dir(target)
    parent = output_dir(target.parent)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputPathError(f"{parent} is not writable (a checkout stages {target.name} "
                              "beside it, then swaps it in)")
    remove_stale(parent)
    remove_stale(target)
    staged = parent / owned_name(TMP_PREFIX, target.name)
    staged.mkdir()
    try:
        _copy_run(run_dir, staged)
        if target.is_dir():
            _carry_over(target, staged, _recorded_outputs(target))
            shutil.copymode(target, staged)
        _fsync_dir(staged)
        _swap_in(staged, target)
        _fsync_dir(parent)
    finally:
        # The incomplete stage after a failure, or the earlier directory after the swap.
        if staged.is_dir() and not staged.is_symlink():
            shutil.rmtree(staged, ignore_errors=True)
    try:
        build_views(target)
    except Exception as exc:  # the run is in place; readers rebuild views
        log.warning("run %s is checked out into %s, but its views were not built (%s)", run_id,
                    target, exc)
    log.info("checked out run %s into %s", run_id, target)
    return CheckedOut(run_id, Path(out_dir))


def _checkout_damage(run_dir: Path) -> str | None:
    """Why a committed run cannot be checked out (:func:`run_damage`, or no texts)."""
    if (why := run_damage(run_dir)) is not None:
        return why
    return None if any((run_dir / TEXTS_DIR).glob("*.parquet")) else f"no {TEXTS_DIR} files"


def _copy_run(run_dir: Path, staged: Path) -> None:
    """The run's files as an output directory's, written into ``staged`` (DuckDB streams the
    copies; each file is fsynced)."""
    scores = (run_dir / SCORES_DIR / f"{MODEL_PARTITION}=*" / "*.parquet").as_posix()
    order = ", ".join(KEY_COLUMNS)
    copies = {
        SCORES_FILE: (
            f"select {order}, * exclude ({order}, {RUN_PARTITION}) "
            f"from ({partitions_sql(sql_literal(scores))}) order by source, row_number"
        ),
        TEXTS_FILE: _glob_select(run_dir / TEXTS_DIR, "order by source, row_number"),
        REJECTED_FILE: _glob_select(run_dir / REJECTED_DIR, ""),
    }
    for name in (INTERVALS_FILE, COMPARISONS_FILE):
        if (run_dir / name).is_file():
            copies[name] = _glob_select(run_dir / name, "")
    with duckdb.connect() as db:
        for name, query in copies.items():
            path = staged / name
            db.execute(f"copy ({query}) to {sql_literal(path.as_posix())} (format parquet, "
                       "compression zstd)")
            with open(path, "rb") as handle:
                os.fsync(handle.fileno())


def _recorded_outputs(directory: Path) -> set[str]:
    """The paths :data:`EXTRA_OUTPUTS_FILE` of ``directory`` lists (relative, as written)."""
    record = directory / EXTRA_OUTPUTS_FILE
    if record.is_symlink() or not record.is_file():
        return set()
    lines = record.read_text(encoding="utf-8").splitlines()
    return {Path(line).as_posix() for line in lines if line}


def _carry_over(source: Path, staged: Path, recorded: set[str], prefix: str = "") -> bool:
    """Hard-link (or copy) into ``staged`` what ``source`` holds besides a run's files and
    the files ``recorded``; return whether anything came along. A directory left empty only
    because its recorded files stay behind does not come along (as :func:`clear_outputs`)."""
    carried = False
    for entry in sorted(source.iterdir()):
        name = f"{prefix}{entry.name}"
        if (not prefix and entry.name in _RUN_FILES) or name in recorded:
            continue
        destination = staged / entry.name
        if entry.is_dir() and not entry.is_symlink():
            destination.mkdir()
            if _carry_over(entry, destination, recorded, f"{name}/") or not any(
                f.startswith(f"{name}/") for f in recorded
            ):
                shutil.copystat(entry, destination)
                carried = True
            else:
                destination.rmdir()
            continue
        try:
            os.link(entry, destination, follow_symlinks=False)
        except OSError:  # no hard links here (another file system, a limit): a copy
            if entry.is_symlink():
                os.symlink(os.readlink(entry), destination)
            else:
                shutil.copy2(entry, destination)
        carried = True
    return carried


#: ``renameat2`` flag: exchange the two paths atomically (Linux 3.15+; ext4, xfs, btrfs, tmpfs).
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> None:
    """Swap the directories ``a`` and ``b`` in one step; :class:`OSError` where the system or
    file system cannot (``ENOSYS``, ``EINVAL``, ...)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError) as exc:
        raise OSError(errno.ENOSYS, "renameat2 is not available") from exc
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint]
    renameat2.restype = ctypes.c_int
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(b))


def _swap_in(staged: Path, target: Path) -> None:
    """Put the directory ``staged`` at ``target`` in one step; the earlier ``target`` (if any)
    is left at ``staged``. Where directories cannot be exchanged (NFS, a mount point), the
    files are moved over one by one, with a warning that this is not atomic."""
    if not target.exists():
        os.rename(staged, target)
        return
    try:
        _exchange(staged, target)
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EXDEV,
                             errno.EBUSY, errno.EPERM):
            raise
        log.warning("%s cannot be swapped in one step (%s); its files are replaced one by one",
                    target, exc.strerror)
    clear_outputs(target, DERIVED_FILES, EXTRA_OUTPUTS_FILE)
    for name in (SCORES_FILE, REJECTED_FILE, TEXTS_FILE, INTERVALS_FILE, COMPARISONS_FILE):
        if (staged / name).is_file():
            os.replace(staged / name, target / name)


def _glob_select(path: Path, tail: str) -> str:
    pattern = path.as_posix() if path.suffix == ".parquet" else f"{path.as_posix()}/*.parquet"
    return f"select * from read_parquet({sql_literal(pattern)}, hive_partitioning = false) {tail}"
