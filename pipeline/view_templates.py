"""Built view databases kept as templates, so that a build whose views would bind exactly as an
earlier one's copies that database instead of binding every view again.

Creating a view binds its SQL, and binding a view binds every view it reads: building the 27
views of ``eval.duckdb`` took 0.3-0.5 s a run (docs/benchmarks.md), the same work for every run
whose views and files look alike. What the binding produces depends only on

* the DuckDB release and the storage version the database is written in;
* each view's name, SQL (its registry blocks expanded) and grain;
* the SQL of the table macros the views read, with the output directory taken out;
* the Parquet schema (physical and logical types) and the Arrow schema of each file those
  macros read. No view pivots on values or reads a file whose name depends on its data, so the
  rows themselves play no part (checked when the views were built: ``tests/test_views.py``).

:func:`template_key` is the digest of all of them. A database built for one directory, copied,
with every macro replaced by that of another directory (``create or replace macro``), is what
binding the views over the other directory's files would have produced when the key is the
same: the views keep the names and types they were bound with, the files have the same schemas,
and DuckDB binds each view again when a query reads it anyway.

The statistics files are written while the views that do not read them are built, so their
part of the key is known only afterwards: a template's file name carries it separately
(``KEY-LATE.duckdb``, :func:`late_key`), and a run that took one checks it once the statistics
are written, binding every view as without a template when it differs.

Templates live in ``$XDG_CACHE_HOME/rag-eval/views`` (:func:`pipeline.config.view_templates_dir`;
``RAG_EVAL_VIEW_TEMPLATES=0`` turns them off), each written to a temporary name and renamed, so
a reader never sees half of one. The most recently used :data:`MAX_TEMPLATES` are kept. A
template that cannot be read is removed and the views are bound as without one; an unwritable
folder only means that every build binds.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

from pipeline.io.atomic import TMP_PREFIX, owned_name

log = logging.getLogger(__name__)

#: Templates kept in the folder; the least recently used beyond this are removed.
MAX_TEMPLATES = 64
#: Age after which a temporary copy is a dead writer's, removed when templates are pruned.
STALE_SECONDS = 3600
#: The late part of a template built without statistics files of its own run.
NO_LATE = "none"
_SUFFIX = ".duckdb"


def file_schema(path: Path) -> str:
    """The schemas of the Parquet file ``path`` that binding a ``read_parquet`` of it reads:
    the Parquet schema with its logical types and the Arrow schema, field metadata included
    (the file's own key-value metadata, such as a statistics run's id, is not read by a view)."""
    parquet = pq.ParquetFile(path)
    # The first line of the Parquet schema's text names the Python object (its address).
    columns = str(parquet.schema).split("\n", 1)[1]
    arrow = parquet.schema_arrow.remove_metadata()
    return f"{columns}\n{arrow.to_string(show_field_metadata=True)}"


def _digest(parts: Iterable[str]) -> str:
    sha = hashlib.sha256()
    for part in parts:
        encoded = part.encode("utf-8", "surrogatepass")
        sha.update(len(encoded).to_bytes(8, "little"))
        sha.update(encoded)
    return sha.hexdigest()[:32]


def macro_parts(macros: Mapping[str, str], files: Mapping[str, Path], out_dir: Path,
                dir_text: str) -> list[str]:
    """The key parts of ``macros`` (name -> SQL) over ``out_dir``: each name, its SQL with
    ``dir_text`` (the directory as the SQL writes it) replaced, and the schemas of the file it
    reads (``files``: macro name -> file) when that file exists."""
    parts = []
    for name in sorted(macros):
        parts += [name, macros[name].replace(dir_text, "\0")]
        path = files.get(name)
        parts.append(file_schema(path) if path is not None and path.is_file() else "")
    return parts


def template_key(views: Iterable[tuple[str, str, str]], macros: list[str], storage: str) -> str:
    """The digest of what binding the views depends on (the module docstring): the DuckDB
    release, ``storage`` (the storage compatibility version), each view's (name, SQL, grain)
    in build order and the :func:`macro_parts` ``macros``."""
    defined = [part for view in views for part in view]
    return _digest([duckdb.__version__, storage, str(len(defined)), *defined, *macros])


def late_key(macros: list[str]) -> str:
    """The late part of a template's name: the digest of the statistics macros'
    :func:`macro_parts`, known once the statistics are written."""
    return _digest(macros)


@dataclass(frozen=True)
class Template:
    """One kept database: its file and the late part of its key."""

    path: Path
    late: str


@dataclass(frozen=True)
class TemplateShelf:
    """The folder of templates (:func:`pipeline.config.view_templates_dir`)."""

    root: Path

    def find(self, key: str) -> Template | None:
        """The most recently used template of ``key``, or None."""
        try:
            found = [(entry.stat().st_mtime, Path(entry.path)) for entry in os.scandir(self.root)
                     if entry.name.startswith(f"{key}-") and entry.name.endswith(_SUFFIX)]
        except OSError:
            return None
        if not found:
            return None
        path = max(found)[1]
        return Template(path, path.name[len(key) + 1:-len(_SUFFIX)])

    def take(self, template: Template, target: Path) -> bool:
        """Copy ``template`` to ``target`` (marked as used); False, with the template removed,
        when it cannot be read."""
        try:
            shutil.copyfile(template.path, target)
            os.utime(template.path)
            return True
        except OSError as exc:
            log.warning("view template %s cannot be read (%s); binding the views", template.path,
                        exc)
            self.discard(template)
            return False

    def discard(self, template: Template) -> None:
        """Remove ``template`` (it failed to open or to answer)."""
        template.path.unlink(missing_ok=True)

    def keep(self, key: str, late: str, database: Path) -> None:
        """Keep a copy of the closed ``database`` as the template of ``key`` and ``late``; the
        least recently used beyond :data:`MAX_TEMPLATES` are removed. Failing to write is
        logged and otherwise ignored: the next build binds its views."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            tmp = self.root / owned_name(TMP_PREFIX, key)
            try:
                shutil.copyfile(database, tmp)
                os.replace(tmp, self.root / f"{key}-{late}{_SUFFIX}")
            finally:
                tmp.unlink(missing_ok=True)
            self._prune()
        except OSError as exc:
            log.info("view template not kept in %s: %s", self.root, exc)

    def _prune(self) -> None:
        """Remove the least recently used templates beyond :data:`MAX_TEMPLATES`, and the
        temporary copies of writers killed mid-copy (older than :data:`STALE_SECONDS`)."""
        entries = [(entry.stat().st_mtime, entry.name, Path(entry.path))
                   for entry in os.scandir(self.root)]
        stale = time.time() - STALE_SECONDS
        for mtime, name, path in entries:
            if name.startswith(TMP_PREFIX) and mtime < stale:
                path.unlink(missing_ok=True)
        kept = sorted(((mtime, path) for mtime, name, path in entries
                       if name.endswith(_SUFFIX) and not name.startswith(TMP_PREFIX)),
                      reverse=True)
        for _, path in kept[MAX_TEMPLATES:]:
            path.unlink(missing_ok=True)
