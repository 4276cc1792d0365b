"""Engines: where a run's records are validated, scored and written.

Every engine implements :class:`Engine`: given the inputs and a run directory of a results
store, it runs the same four steps with the same code for every value (:mod:`pipeline.scoring`
and :mod:`pipeline.validate`):

1. **first pass**: read and validate the inputs, hash each record (``row_hash``), gather the
   corpus statistics the selected metrics need;
2. **split**: reject duplicate keys within a file (the first valid row wins) and, when an
   earlier compatible run is given, split the records into reused and to score;
3. **score**: :class:`pipeline.scoring.BatchScorer` on batches of records;
4. **write**: scores partitioned by model, rejected rows and texts, under the run directory.

The store transaction around it (lock, stage, commit or abort, views) is the caller's
(:meth:`pipeline.store.Store.transaction`), the same for every engine. The local engine
(:mod:`pipeline.engines.local`) also writes plain output directories; the Spark engine
(:mod:`pipeline.engines.spark`, an optional extra) runs the steps on a cluster.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pipeline.config import Config
from pipeline.metrics.spec import MetricSpec
from pipeline.schema import ROW_COLUMN, SOURCE_COLUMN
from pipeline.validate import KEY

#: Said when an incremental run recomputes corpus-dependent metrics on rows it reuses.
STALE_NOTE = (
    "%s recomputed on the reused rows too: its document frequencies count every question and "
    "response of the run, and the run's texts changed, so its values move on unchanged rows "
    "(docs/metrics.md, tfidf_relevance)"
)


def duplicate_rows_sql(records: str) -> str:
    """The duplicate-key rule as one SQL text that both engines run (DuckDB locally, Spark SQL
    on a cluster): rows of the relation ``records`` whose key (:data:`pipeline.validate.KEY`)
    an earlier valid row of the same file holds, with ``source``, ``row_number``, ``id`` and
    ``first_row`` (the row that keeps the key). Null key values are equal, as in a window's
    ``partition by``.

    >>> "partition by source, id, model, run, noise_level, task" in duplicate_rows_sql("r")
    True
    """
    keys = ", ".join([SOURCE_COLUMN, *KEY])
    return (
        f"select {SOURCE_COLUMN}, {ROW_COLUMN}, id, first_row from ("
        f"select {SOURCE_COLUMN}, {ROW_COLUMN}, id, "
        f"min({ROW_COLUMN}) over (partition by {keys}) as first_row from {records}"
        f") where {ROW_COLUMN} <> first_row"
    )


def first_scored_rows_sql(previous: str) -> str:
    """The reuse rule as one SQL text that both engines run: for each ``row_hash`` of the earlier
    run's scores ``previous``, the row whose scores a new record with that content reuses (the
    first by ``source``, then ``row_number``: a record scored twice, in two files, is reused
    from its first copy). Only ``row_hash``, ``source`` and ``row_number``, so the join that
    fetches the metric columns stays narrow.

    >>> "partition by row_hash order by source, row_number" in first_scored_rows_sql("p")
    True
    """
    return (
        f"select row_hash, {SOURCE_COLUMN}, {ROW_COLUMN} from ("
        f"select row_hash, {SOURCE_COLUMN}, {ROW_COLUMN}, row_number() over "
        f"(partition by row_hash order by {SOURCE_COLUMN}, {ROW_COLUMN}) as reuse_rank "
        f"from {previous}) where reuse_rank = 1"
    )


@dataclass(frozen=True)
class EngineRun:
    """What an engine wrote into a run directory."""

    n_read: int
    n_scored: int
    n_reused: int
    n_rejected: int
    #: :meth:`pipeline.scoring.CorpusStats.digest` of the run (None without corpus statistics).
    corpus_digest: str | None

    @property
    def counts(self) -> dict[str, int]:
        """The manifest's ``counts``."""
        return {"read": self.n_read, "scored": self.n_scored, "reused": self.n_reused,
                "rejected": self.n_rejected}


class Engine(Protocol):
    """Runs the four steps over ``inputs`` into ``run_dir`` (a staged store run)."""

    @property
    def name(self) -> str:
        """Recorded in the run's manifest (``engine``)."""
        ...

    def write_run(
        self,
        inputs: Sequence[Path],
        config: Config,
        specs: Sequence[MetricSpec],
        run_dir: Path,
        *,
        previous_dir: Path | None,
        previous_corpus: str | None,
    ) -> EngineRun:
        """Write ``scores/``, ``rejected/`` and ``texts/`` of the run into ``run_dir``;
        rows whose ``row_hash`` the run in ``previous_dir`` scored are reused from it."""
        ...
