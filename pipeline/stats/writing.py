"""Writing the two tables as one pair.

The tables are streamed to Parquet (zstd, row groups of about
:data:`~pipeline.stats.budgets.FRAME_ROWS` rows; a temporary file per section, joined in
order at the end: :class:`_ParquetFrames`). Both are written in a sibling temporary
directory (``.tmp-stats.<pid>@<host>.<8 hex>``, removed by the next command once its writer is
gone) and put in place only when both are complete, each by one rename, the file it replaces
kept until both are in place and put back if the second rename fails (:class:`_Staging`).
Both carry the same :func:`stats_id` (seed, resamples and a digest of both tables) in their
Parquet key-value metadata under :data:`~pipeline.stats.tables.STATS_ID_KEY`, so that a pair
mixed by a process killed between the two renames is told apart (:func:`check_stats_pair`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from pipeline.io.atomic import (
    TMP_PREFIX,
    check_output_file,
    output_dir,
    owned_name,
    remove_stale,
)
from pipeline.stats import budgets
from pipeline.stats.tables import STATS_FILES, STATS_ID_KEY

#: The logger of the whole package (its records name ``pipeline.stats``, as before the split).
log = logging.getLogger("pipeline.stats")


class _ParquetFrames:
    """Frames streamed into one Parquet file (zstd) in the staging directory of
    :class:`_Staging`.

    Each section's frames go to a temporary file of its own in ``stage`` (row groups of about
    :data:`budgets.FRAME_ROWS` rows); :meth:`write` joins them in order of the section names, so
    memory holds one row group, not the table.
    """

    def __init__(self, stage: Path, name: str, schema: Mapping[str, pl.DataType]) -> None:
        self.stage = Path(stage)
        self.name = name
        self.arrow = pl.DataFrame(schema=dict(schema)).to_arrow().schema
        self.parts: dict[str, tuple[Path, pq.ParquetWriter]] = {}
        self.pending: dict[str, list[pl.DataFrame]] = {}
        self.rows = 0
        self.significant = 0

    def add(self, section: str, frame: pl.DataFrame) -> None:
        self.rows += frame.height
        if "significant" in frame.columns:
            self.significant += int(frame["significant"].sum())
        pending = self.pending.setdefault(section, [])
        pending.append(frame)
        if sum(f.height for f in pending) >= budgets.FRAME_ROWS:
            self._flush(section)

    def _flush(self, section: str) -> None:
        frames = self.pending.pop(section, [])
        if not frames:
            return
        if section not in self.parts:
            path = self.stage / f"{self.name}.part{len(self.parts)}"
            self.parts[section] = (path, pq.ParquetWriter(path, self.arrow, compression="zstd"))
        table = pl.concat(frames, how="vertical").to_arrow().cast(self.arrow)
        self.parts[section][1].write_table(table, row_group_size=budgets.FRAME_ROWS)

    def close_parts(self) -> None:
        """Write what is pending and close the section files."""
        for section in list(self.pending):
            self._flush(section)
        for _, writer in self.parts.values():
            writer.close()

    def digest(self, into: Any) -> None:
        """Feed the bytes of the section files, in order, to the hash ``into``
        (after :meth:`close_parts`): the same input gives the same bytes."""
        into.update(f"{self.name}:{self.rows}".encode())
        for section in sorted(self.parts):
            with open(self.parts[section][0], "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    into.update(block)

    def write(self, stats_id: str) -> Path:
        """Join the section files into ``stage/name`` with ``stats_id`` in its key-value
        metadata (:data:`STATS_ID_KEY`); remove them; return the path."""
        target = self.stage / self.name
        schema = self.arrow.with_metadata({STATS_ID_KEY: stats_id})
        try:
            with pq.ParquetWriter(target, schema, compression="zstd") as writer:
                for section in sorted(self.parts):
                    part = pq.ParquetFile(self.parts[section][0])
                    for group in range(part.num_row_groups):
                        writer.write_table(part.read_row_group(group))
        finally:
            self.close()
        return target

    def close(self) -> None:
        """Remove the section files (after :meth:`write`, or when the writing failed)."""
        for path, writer in self.parts.values():
            with contextlib.suppress(Exception):
                writer.close()
            path.unlink(missing_ok=True)
        self.parts.clear()


def _fsync(path: Path) -> None:
    """Flush ``path`` (a file, or a directory's entries) to the disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _Staging:
    """Both tables written in a sibling temporary directory, then put in place together.

    The directory is ``out_dir/.tmp-stats.<pid>@<host>.<8 hex>``
    (:func:`pipeline.io.atomic.owned_name`): one a killed process left behind is removed by the
    next command that writes into ``out_dir`` (:func:`pipeline.io.atomic.remove_stale`, which
    :func:`write_stats` runs first too). Nothing in ``out_dir`` changes until :meth:`commit`.
    """

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = output_dir(Path(out_dir))
        for name in STATS_FILES:
            check_output_file(self.out_dir / name)
        remove_stale(self.out_dir)
        self.dir = self.out_dir / owned_name(TMP_PREFIX, "stats")
        self.dir.mkdir()

    def __enter__(self) -> _Staging:
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)

    def finish(self, tables: Sequence[_ParquetFrames], *, seed: int, resamples: int) -> str:
        """Write ``tables`` (one per name of :data:`STATS_FILES`, in that order) with one
        :func:`stats_id` and :meth:`commit` them; return the id."""
        digest = hashlib.sha256()
        for table in tables:
            table.close_parts()
            table.digest(digest)
        pair = stats_id(seed=seed, resamples=resamples, digest=digest.hexdigest()[:32])
        for table in tables:
            table.write(pair)
        self.commit()
        return pair

    def commit(self) -> None:
        """Put the staged files in place: each is flushed to the disk, the file it replaces is
        kept as a hard link in the staging directory (moved there where the file system has
        no hard links), and then it is renamed onto its target. If a rename fails, or the
        process is interrupted, the targets renamed so far get their old file back (or are
        removed where there was none), so ``out_dir`` shows the old pair or the new one.

        Between the two renames (no system call renames two files at once) a reader sees the
        new intervals beside the old comparisons: their ids differ and
        :func:`check_stats_pair` says so; a process killed there leaves that state, which
        readers refuse until the statistics are written again.
        """
        for name in STATS_FILES:
            _fsync(self.dir / name)
        placed: list[tuple[Path, Path | None]] = []
        try:
            for name in STATS_FILES:
                target, backup = self.out_dir / name, self.dir / f"previous.{name}"
                previous: Path | None = backup
                try:
                    os.link(target, backup)
                except FileNotFoundError:
                    previous = None
                except OSError:  # no hard links on this file system: move it aside
                    os.replace(target, backup)
                placed.append((target, previous))
                os.replace(self.dir / name, target)
        except BaseException:
            for target, previous in reversed(placed):
                try:
                    if previous is not None:
                        os.replace(previous, target)
                    else:
                        target.unlink(missing_ok=True)
                except OSError as exc:  # pragma: no cover - a rename back that fails
                    log.error("could not restore %s after a failed write: %s", target, exc)
            raise
        with contextlib.suppress(OSError):  # some file systems cannot flush a directory
            _fsync(self.out_dir)


def stats_id(*, seed: int, resamples: int, digest: str) -> str:
    """The value of :data:`STATS_ID_KEY` that ties the two tables of one :func:`write_stats`:
    its seed, its resamples and ``digest`` (of both tables' rows: the same input gives the
    same id, and the same files byte for byte).

    >>> stats_id(seed=5, resamples=200, digest="ab12")
    '{"seed": 5, "resamples": 200, "digest": "ab12"}'
    """
    return json.dumps({"seed": seed, "resamples": resamples, "digest": digest})


def read_stats_id(path: Path) -> str | None:
    """The :data:`STATS_ID_KEY` of the Parquet file ``path``; None when it has none (written
    by an older version or by another tool). Raises ``OSError`` (or an Arrow error) when
    the file cannot be read."""
    metadata = pq.read_metadata(path).metadata or {}
    value = metadata.get(STATS_ID_KEY.encode())
    return value.decode("utf-8", "replace") if value is not None else None


def _settings(value: str | None) -> str:
    """``seed 5, 200 resamples`` of a :func:`stats_id` (``no stats id`` without one)."""
    if value is None:
        return "no stats id: an older version"
    try:
        fields = json.loads(value)
        return f"seed {fields['seed']}, {fields['resamples']} resamples"
    except (ValueError, TypeError, KeyError):
        return "an unknown stats id"


def check_stats_pair(directory: Path) -> str | None:
    """Why the statistics files of ``directory`` must not be read (one line), or None when
    they may: neither is there, or both carry the same :data:`STATS_ID_KEY`, or neither
    carries one (files of an older version, or written by hand).

    A file with an id whose partner is missing or has another id is half of an interrupted
    :func:`write_stats` (:meth:`_Staging.commit`); a file that cannot be read is damaged.
    Readers (the report) warn with this line and show neither file.
    """
    directory = Path(directory)
    ids: dict[str, str | None] = {}
    for name in STATS_FILES:
        path = directory / name
        if not path.is_file():
            continue
        try:
            ids[name] = read_stats_id(path)
        except Exception as exc:  # a truncated or foreign file: Arrow raises its own errors
            return (f"{path} cannot be read ({type(exc).__name__}: {exc}); statistics are "
                    f"ignored: run `rag-eval stats {directory}` again")
    if not ids or (len(ids) == 2 and len(set(ids.values())) == 1):
        return None
    if len(ids) == 1:
        (present, value), = ids.items()
        if value is None:
            return None
        missing = next(name for name in STATS_FILES if name not in ids)
        return (f"{directory / present} ({_settings(value)}) has no {missing} beside it: a "
                f"`rag-eval stats` was interrupted; statistics are ignored: run "
                f"`rag-eval stats {directory}` again")
    first, second = STATS_FILES
    return (f"{directory / first} ({_settings(ids[first])}) and {second} "
            f"({_settings(ids[second])}) were not written together (a `rag-eval stats` was "
            f"interrupted between them); statistics are ignored: run "
            f"`rag-eval stats {directory}` again")
