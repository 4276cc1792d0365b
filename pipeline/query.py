"""The read path of ``rag-eval query``: the runs of a store, the database's freshness check and
one statement on a restricted, read-only connection. DuckDB and polars only: the view builder
(:mod:`pipeline.views`, which loads the metric registry, the user metrics and the statistics)
is asked for through a :class:`Builder` only when ``DIR/eval.duckdb`` is missing or stale, so a
query of an up-to-date database starts in about 0.3 s (docs/benchmarks.md, start-up).

``DIR/eval.duckdb`` records what it was built for in scalar macros: :data:`DATA_DIR_MACRO` (the
absolute directory its views read) and, for a results store, :data:`STATE_MACRO` (the
:func:`store_state` of its runs) and :data:`DAMAGED_MACRO` (the runs it left out as damaged).
:func:`open_views` compares them with the directory and rebuilds when they differ.

:func:`run_query` runs one statement on a connection that opens the database read-only, reads
only the files under the directory and cannot change that (:func:`restrict`);
``docs/query-security.md`` states what it can read and why it cannot write.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from pipeline.errors import InputError, OutputPathError
from pipeline.io.layout import (
    DATABASE_FILE,
    MANIFEST_FILE,
    REJECTED_DIR,
    REJECTED_FILE,
    RUN_PARTITION,
    SCORES_DIR,
    SCORES_FILE,
)
from pipeline.io.sql import sql_literal

if TYPE_CHECKING:
    import polars as pl

log = logging.getLogger(__name__)

#: The database file inside an output directory.
DB_FILE = DATABASE_FILE
#: Macro returning the absolute output directory; the staging SQL builds file paths from it.
DATA_DIR_MACRO = "eval_data_dir"
#: Scalar macros a store's database carries: the state it was built for, and the runs it left
#: out as damaged (a JSON object: run id -> why).
STATE_MACRO = "eval_store_state"
DAMAGED_MACRO = "eval_store_damaged"
#: Scalar macro an output directory's database carries when its ``scores`` view is bound to the
#: columns of ``scores.parquet`` as they were (:func:`scores_columns`, ``pipeline.views``): a
#: file with other columns makes the database stale.
SCORES_COLUMNS_MACRO = "eval_scores_columns"
#: The value of ``--run`` (the session variable ``eval_run``) that selects every run.
ALL_RUNS = "all"
#: Statement types :func:`run_query` runs: reads (``select``, and ``describe``, ``show``,
#: ``summarize``, which DuckDB parses as selects) and ``set`` (``set variable``; every setting
#: but :data:`QUERY_SETTINGS` is locked). ``explain`` is not among them: ``explain analyze``
#: runs the statement it explains, ``copy ... to`` included.
QUERY_STATEMENTS = frozenset({duckdb.StatementType.SELECT, duckdb.StatementType.SET})
#: Settings a query may change after :func:`restrict` has locked the configuration.
QUERY_SETTINGS: tuple[str, ...] = ("threads",)
#: Why a statement type is refused, where more can be said than "it is not a read".
_REFUSED_REASONS: dict[str, str] = {
    "COPY": "COPY writes or reads files",
    "COPY_DATABASE": "COPY FROM DATABASE writes a database",
    "EXPORT": "EXPORT DATABASE writes files",
    "ATTACH": "ATTACH opens another database",
    "DETACH": "DETACH closes a database",
    "LOAD": "INSTALL and LOAD add extensions",
    "EXPLAIN": "EXPLAIN ANALYZE runs the statement it explains",
    "PRAGMA": "a pragma can change settings or run other statements",
    "CALL": "use select * from FUNCTION() instead",
    "CREATE": "it writes to the database",
    "INSERT": "it writes to the database",
    "UPDATE": "it writes to the database",
    "DELETE": "it writes to the database",
    "DROP": "it writes to the database",
    "ALTER": "it writes to the database",
    "MERGE_INTO": "it writes to the database",
}
#: Settings of every connection :func:`run_query` opens (before :func:`restrict` locks them).
_RESTRICTED_CONFIG: dict[str, Any] = {
    "autoinstall_known_extensions": False, "autoload_known_extensions": False,
}
#: DuckDB types that polars cannot read through the Arrow stream (it panics); a result with one
#: goes through ``.pl()``, which reports them as an error (:func:`fetch_frame`).
_NOT_STREAMED = ("INTERVAL", "UNION")
#: Fields every committed manifest has; a manifest without one of them is damaged.
MANIFEST_FIELDS: tuple[str, ...] = (
    "run_id", "status", "started_at", "finished_at", "signature", "metrics", "counts",
)
#: Bytes that open and close every Parquet file.
_PARQUET_MAGIC = b"PAR1"
_RUN = RUN_PARTITION
_MANIFEST = MANIFEST_FILE


class QueryRefused(InputError):
    """A statement :func:`run_query` does not run; the message says why.

    An :class:`~pipeline.schema.InputError`, so the CLI reports it on one line with exit 2.
    """

    def __init__(self, message: str) -> None:
        super().__init__(f"query refused: {message}")


@dataclass(frozen=True)
class Builder:
    """How the views are built (:mod:`pipeline.views` gives one): this module reads a database
    and asks for a build only when it is missing or stale."""

    #: Writes ``out_dir/eval.duckdb`` (``out_dir`` resolved) and returns its path.
    build: Callable[[Path], Path]
    #: Creates the same views on an open connection (in memory, when the file cannot be
    #: written).
    create: Callable[[duckdb.DuckDBPyConnection, Path], None]


#: A :class:`Builder`, asked for only when the views must be built, so that a caller can import
#: the builder's module then (``rag-eval query``) or hand over one it has.
BuilderSource = Callable[[], Builder]


# --- the runs of a store ------------------------------------------------------------------------


def is_store(path: Path) -> bool:
    """Whether ``path`` is a results store (:mod:`pipeline.store`) rather than one run's output:
    no ``scores.parquet`` of its own, and at least one ``eval_run=*`` directory."""
    return not (path / SCORES_FILE).is_file() and any(
        child.is_dir() for child in path.glob(f"{_RUN}=*")
    )


@dataclass(frozen=True)
class StoreRuns:
    """The run directories of a store as :func:`store_runs` found them."""

    root: Path
    #: Manifests of the committed runs that can be read, oldest first (start time, then name).
    committed: tuple[dict[str, Any], ...]
    #: Run directories that cannot be read, by run id: why (a missing or damaged manifest, a
    #: truncated file). Readers leave them out; nothing removes them.
    damaged: dict[str, str] = field(default_factory=dict)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(m["run_id"] for m in self.committed)

    def latest(self) -> dict[str, Any] | None:
        """The manifest of the latest committed run (by finish time, then name)."""
        if not self.committed:
            return None
        return max(self.committed, key=lambda m: (str(m["finished_at"]), m["run_id"]))

    def listing(self) -> str:
        """``r1, r2`` and the damaged runs with why, for messages."""
        text = ", ".join(self.ids) or "none"
        if self.damaged:
            text += "; damaged: " + "; ".join(f"{r} ({why})" for r, why in self.damaged.items())
        return text

    def unknown(self, run: str) -> InputError:
        """The error for a run id that is not a readable committed run of the store."""
        if run in self.damaged:
            return InputError(
                f"{self.root}: run {run!r} is damaged ({self.damaged[run]}); "
                f"runs: {', '.join(self.ids) or 'none'}"
            )
        return InputError(f"{self.root}: no committed run {run!r}; runs: {self.listing()}")


def read_manifest(run_dir: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(the manifest of the committed run in ``run_dir``, None) or (None, why it is not one)."""
    path = run_dir / _MANIFEST
    run_id = run_dir.name.removeprefix(f"{_RUN}=")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, f"{_MANIFEST} is missing: not a committed run"
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"{_MANIFEST} cannot be read: {exc}"
    try:
        manifest = json.loads(text)
    except ValueError as exc:
        return None, f"{_MANIFEST} is not valid JSON ({exc})"
    if not isinstance(manifest, dict):
        return None, f"{_MANIFEST} is not a JSON object"
    missing = [name for name in MANIFEST_FIELDS if name not in manifest]
    if missing:
        return None, f"{_MANIFEST} lacks {', '.join(missing)}"
    if manifest["status"] != "committed":
        return None, f"{_MANIFEST} says status {manifest['status']!r}, not 'committed'"
    if manifest["run_id"] != run_id:
        return None, f"{_MANIFEST} names run {manifest['run_id']!r}"
    if not isinstance(manifest["counts"], dict):
        return None, f"{_MANIFEST}: counts is not an object"
    return manifest, None


def parquet_intact(path: Path) -> bool:
    """Whether ``path`` starts and ends with Parquet's magic bytes: a file cut short (a full
    disk, a killed copy) has lost its footer. Reads 8 bytes."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
            size = os.fstat(handle.fileno()).st_size
            if size < 12 or head != _PARQUET_MAGIC:
                return False
            handle.seek(size - 4)
            return handle.read(4) == _PARQUET_MAGIC
    except OSError:
        return False


def run_damage(run_dir: Path) -> str | None:
    """Why the files of a committed run cannot all be read (None when they can): no score or
    rejected-rows file, or a Parquet file that is truncated or not Parquet."""
    for folder in (SCORES_DIR, REJECTED_DIR):
        if not any((run_dir / folder).rglob("*.parquet")):
            return f"no {folder} files"
    for path in sorted(run_dir.rglob("*.parquet")):
        if not parquet_intact(path):
            return f"{path.relative_to(run_dir).as_posix()} is truncated or not Parquet"
    return None


def store_runs(root: Path, *, check_files: bool = False) -> StoreRuns:
    """The committed runs of the store at ``root``, and the damaged ones with why.

    A run is committed when its directory holds a readable manifest with status
    ``committed`` (:func:`read_manifest`); ``check_files`` also reads the first and last bytes
    of each of its Parquet files (:func:`run_damage`).
    """
    root = Path(root)
    committed: list[dict[str, Any]] = []
    damaged: dict[str, str] = {}
    for run_dir in sorted(root.glob(f"{_RUN}=*")):
        if not run_dir.is_dir():
            continue
        run_id = run_dir.name.removeprefix(f"{_RUN}=")
        manifest, why = read_manifest(run_dir)
        if manifest is not None and check_files:
            why = run_damage(run_dir)
        if why is not None:
            damaged[run_id] = why
        else:
            assert manifest is not None
            committed.append(manifest)
    committed.sort(key=lambda m: (str(m["started_at"]), m["run_id"]))
    return StoreRuns(root, tuple(committed), damaged)


def store_state(root: Path) -> str:
    """A digest of the run directories of a store and the size and time of their manifests:
    a database whose views were built for another state is rebuilt (:func:`open_views`)."""
    parts = []
    for run_dir in sorted(Path(root).glob(f"{_RUN}=*")):
        try:
            stat = (run_dir / _MANIFEST).stat()
            parts.append(f"{run_dir.name}:{stat.st_size}:{stat.st_mtime_ns}")
        except OSError:
            parts.append(f"{run_dir.name}:-")
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()[:16]


def check_run(root: Path, run: str | None) -> dict[str, str]:
    """Check the choice of ``run`` in the store at ``root`` before a query reads it (None: the
    latest run, :data:`ALL_RUNS`: every run).

    A run id the store has no readable committed run of, or a chosen run whose files are
    damaged (:func:`run_damage`), raises :class:`~pipeline.schema.InputError` naming it and
    listing the runs. For the latest run or every run, returns the damaged runs the query would
    otherwise read (run id -> why): the views leave them out (:func:`open_views`).
    """
    runs = store_runs(root)
    if run is not None and run != ALL_RUNS:
        if run not in runs.ids:
            raise runs.unknown(run)
        why = run_damage(root / f"{_RUN}={run}")
        if why is not None:
            others = ", ".join(r for r in runs.ids if r != run) or "none"
            raise InputError(f"{root}: run {run!r} is damaged ({why}); runs: {others}")
        return {}
    if run == ALL_RUNS:
        candidates = list(runs.ids)
    else:  # the latest readable run: the newest ones, until one can be read
        candidates = [m["run_id"] for m in sorted(
            runs.committed, key=lambda m: (str(m["finished_at"]), m["run_id"]), reverse=True)]
    damaged: dict[str, str] = {}
    for candidate in candidates:
        why = run_damage(root / f"{_RUN}={candidate}")
        if why is None and run != ALL_RUNS:
            break
        if why is not None:
            damaged[candidate] = why
    return damaged


# --- the database and its freshness -------------------------------------------------------------


def require_outputs(out_dir: Path) -> None:
    """Raise :class:`~pipeline.schema.InputError` unless ``out_dir`` is a store or holds the
    files of an ``evaluate`` run."""
    if is_store(out_dir):
        return
    for name in (SCORES_FILE, REJECTED_FILE):
        if not (out_dir / name).is_file():
            raise InputError(
                f"{out_dir}: no {name} here; run `rag-eval evaluate --out {out_dir}` first"
            )


@dataclass(frozen=True)
class _Built:
    """What a database's macros say it was built for."""

    data_dir: str
    #: :func:`store_state` when built (None: an output directory, or an older database).
    state: str | None
    #: Runs left out as damaged (run id -> why).
    damaged: dict[str, str]
    #: :func:`scores_columns` when built, for an output directory whose ``scores`` view was
    #: bound to them (None: a store, or a view that reads the file as it is).
    scores_columns: str | None = None


def scores_columns(con: duckdb.DuckDBPyConnection) -> str:
    """The columns of ``scores_file()`` on ``con`` as DuckDB describes them (name and type
    each), as one JSON text."""
    rows = con.execute("describe select * from scores_file()").fetchall()
    return json.dumps([[name, kind] for name, kind, *_ in rows])


def _built_for(con: duckdb.DuckDBPyConnection) -> _Built | None:
    """What the database of ``con`` was built for, or None if unreadable or not ours."""
    try:
        row = con.execute(f"select {DATA_DIR_MACRO}()").fetchone()
        if row is None:
            return None
        try:
            store = con.execute(f"select {STATE_MACRO}(), {DAMAGED_MACRO}()").fetchone()
        except duckdb.Error:  # an output directory's database, or an older one
            store = None
    except duckdb.Error:
        return None
    if store is not None:
        return _Built(str(row[0]), str(store[0]), dict(json.loads(store[1])))
    try:
        bound = con.execute(f"select {SCORES_COLUMNS_MACRO}()").fetchone()
    except duckdb.Error:  # views that read the scores as they are
        bound = None
    return _Built(str(row[0]), None, {}, None if bound is None else str(bound[0]))


def _scores_changed(con: duckdb.DuckDBPyConnection, built: _Built) -> bool:
    """Whether ``scores.parquet`` no longer has the columns the views were bound to."""
    if built.scores_columns is None:
        return False
    try:
        return scores_columns(con) != built.scores_columns
    except duckdb.Error:  # unreadable now: building again says why
        return True


def _open_if_fresh(out_dir: Path, builder: BuilderSource, settings: Mapping[str, Any],
                   damaged: Mapping[str, str] | None) -> duckdb.DuckDBPyConnection | None:
    """A read-only connection to ``out_dir/eval.duckdb`` when it is up to date (the connection
    its freshness was read on: one open, not two); otherwise None, after building it anew.

    The database is built when missing or built for another directory; for a store also when
    its runs changed since (:func:`store_state`) or when ``damaged`` names a run its views
    still read. ``builder`` is called only then.
    """
    require_outputs(out_dir)
    db = out_dir / DB_FILE
    if not db.exists():
        log.info("%s does not exist; building the views", db)
        builder().build(out_dir)
        return None
    try:
        con: duckdb.DuckDBPyConnection | None = duckdb.connect(
            str(db), read_only=True, config=dict(settings))
    except duckdb.Error:
        con = None
    stale = True
    try:
        built = None if con is None else _built_for(con)
        if built is None or built.data_dir != out_dir.as_posix():
            log.warning("%s was built for %s; rebuilding its views", db,
                        None if built is None else built.data_dir)
        elif is_store(out_dir) and built.state != store_state(out_dir):
            log.info("the runs of %s changed since its views were built; rebuilding them",
                     out_dir)
        elif con is not None and _scores_changed(con, built):
            log.info("%s has other columns than when the views were built; rebuilding them",
                     out_dir / SCORES_FILE)
        elif damaged and not set(damaged) <= set(built.damaged):
            pass  # built again below: leaves the damaged runs out, with a warning naming each
        else:
            for run, why in (damaged or {}).items():
                log.warning("run %s of %s is damaged and left out of the views: %s", run,
                            out_dir, why)
            stale = False
    finally:
        if stale and con is not None:  # closed before the file is replaced
            con.close()
    if not stale:
        return con
    builder().build(out_dir)
    return None


def open_views(out_dir: Path, builder: BuilderSource, config: Mapping[str, Any] | None = None,
               damaged: Mapping[str, str] | None = None) -> duckdb.DuckDBPyConnection:
    """A connection to the views of ``out_dir`` (resolved): its database read-only, built
    first when missing or stale (:func:`_open_if_fresh`), or, when that file cannot be written
    (a full disk, no permission, a directory in its place), the same views built in memory for
    this connection, with a warning."""
    settings = dict(config or {})
    try:
        con = _open_if_fresh(out_dir, builder, settings, damaged)
    except (OSError, OutputPathError) as exc:
        log.warning("%s cannot be written (%s); the views are built in memory for this "
                    "connection", out_dir / DB_FILE, exc)
        con = duckdb.connect(config=settings)
        try:
            builder().create(con, out_dir)
        except BaseException:
            con.close()
            raise
        return con
    if con is not None:
        return con
    return duckdb.connect(str(out_dir / DB_FILE), read_only=True, config=settings)


# --- one statement, restricted ------------------------------------------------------------------


def restricted(out_dir: Path, builder: BuilderSource,
               damaged: Mapping[str, str] | None) -> duckdb.DuckDBPyConnection:
    """A read-only connection to the views of ``out_dir`` (resolved) that reads only the files
    of ``out_dir``; ``damaged`` as :func:`open_views`.

    DuckDB's own settings, in this order (``allowed_directories`` cannot be given at connect
    time, and the lock must come last): the database is opened read-only with extension
    auto-install and auto-load off;
    ``allowed_directories`` is ``out_dir`` alone; ``enable_external_access`` is off, so no file
    outside it, no URL and no extension can be reached; ``allowed_configs`` names the settings a
    statement may still change (:data:`QUERY_SETTINGS`); ``lock_configuration`` freezes the rest.
    An allowed directory is writable too (``COPY ... TO`` into it succeeds on DuckDB 2.0), so
    :func:`run_query` also refuses every statement type but :data:`QUERY_STATEMENTS`.
    """
    con = open_views(out_dir, builder, _RESTRICTED_CONFIG, damaged)
    try:
        # The trailing slash keeps a sibling such as ``out_dir-old`` outside the prefix.
        allowed = sql_literal(out_dir.as_posix().rstrip("/") + "/")
        con.execute(f"set allowed_directories = [{allowed}]")
        con.execute("set enable_external_access = false")
        con.execute(f"set allowed_configs = [{', '.join(map(sql_literal, QUERY_SETTINGS))}]")
        con.execute("set lock_configuration = true")
    except BaseException:
        con.close()
        raise
    return con


def _one_statement(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Raise :class:`QueryRefused` unless ``sql`` is exactly one statement of an allowed type."""
    statements = con.extract_statements(sql)
    if len(statements) != 1:
        raise QueryRefused(
            f"{len(statements)} SQL statements given; a query runs exactly one statement"
        )
    kind = statements[0].type
    if kind not in QUERY_STATEMENTS:
        reason = _REFUSED_REASONS.get(kind.name, "it is not a read")
        raise QueryRefused(
            f"{kind.name} statements are not allowed ({reason}); a query is one select, "
            "describe, show, summarize or set statement"
        )


def fetch_frame(relation: duckdb.DuckDBPyRelation | None) -> pl.DataFrame:
    """The rows of ``relation`` as a polars frame, the frame ``relation.pl()`` gives (an empty
    frame for a statement that returns nothing).

    polars is imported here, not with this module: ``rag-eval query`` prints rows without it
    (:mod:`pipeline.cli.rows`), and importing it is most of a query's start-up.
    Read through the Arrow stream (the PyCapsule interface), which needs no pyarrow (and its
    numpy). A result with a type polars cannot read that way (:data:`_NOT_STREAMED`, where
    polars would panic) goes through ``.pl()``, which raises polars' error for it.
    """
    import polars as pl  # lazy: see above

    if relation is None:
        return pl.DataFrame()
    if any(kind in str(dtype) for dtype in relation.types for kind in _NOT_STREAMED):
        return relation.pl()
    return pl.DataFrame(relation)


@contextlib.contextmanager
def query_relation(out_dir: str | Path, sql: str, run: str | None = None, *,
                   builder: BuilderSource) -> Iterator[duckdb.DuckDBPyRelation | None]:
    """The relation of one statement ``sql`` against the views of ``out_dir``, open while the
    ``with`` block runs (None for a statement that returns nothing: ``set variable``).

    In a results store, ``run`` picks the run the views read (``'all'``: every run; default:
    the latest committed run; a run id the store does not have, or a damaged run, is an
    :class:`~pipeline.errors.InputError` that lists the runs). The statement runs on
    :func:`restricted`: it reads the files of ``out_dir`` and nothing else, and writes nothing.
    :class:`QueryRefused` (an :class:`~pipeline.errors.InputError`) says why a statement was
    refused; other SQL errors are DuckDB's own exceptions. ``builder`` is called only when the
    views must be built. ``docs/query-security.md`` states the rules.
    """
    out_dir = Path(out_dir).resolve()
    damaged = check_run(out_dir, run) if is_store(out_dir) else None
    con = restricted(out_dir, builder, damaged)
    try:
        _one_statement(con, sql)
        if run is not None:
            con.execute(f"set variable {_RUN} = {sql_literal(run)}")
        try:
            relation = con.sql(sql)
        except duckdb.PermissionException as exc:
            raise _refused(exc, out_dir) from exc
        try:
            yield relation
        except duckdb.PermissionException as exc:  # raised while the rows are fetched
            raise _refused(exc, out_dir) from exc
    finally:
        con.close()


def _refused(exc: duckdb.PermissionException, out_dir: Path) -> QueryRefused:
    message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return QueryRefused(f"{message} (a query reads only files under {out_dir})")


def run_query(out_dir: str | Path, sql: str, run: str | None = None, *,
              builder: BuilderSource) -> pl.DataFrame:
    """The result of one statement ``sql`` run against the views of ``out_dir`` as a polars
    frame (:func:`query_relation` says how it runs; an empty frame when the statement returns
    nothing)."""
    with query_relation(out_dir, sql, run, builder=builder) as relation:
        return fetch_frame(relation)
