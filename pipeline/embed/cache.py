"""Embedding cache on disk and the embedder the metrics call: :class:`CachedEmbedder`.

Layout: one directory per (backend name, model id) under the cache root,
``<root>/<backend name>/<model slug>-<12 hex of sha256(name, model id, dim)>/``, holding
``model.json`` (name, model id, dim, for people) and Parquet shards ``shard-*.parquet`` with two
columns: ``key`` (Binary, the sha256 of the text's UTF-8 bytes) and ``vector``
(``Array(Float32, dim)``). Shards are only ever added, each written atomically under a unique
name, so concurrent runs never corrupt the cache (at worst both encode the same text; the first
copy wins on load). A directory's shards are read once per :class:`EmbeddingCache` instance, the
first time that model is looked up, when their vectors fit its memory budget; a larger cache is
searched on disk at each lookup (see :class:`EmbeddingCache`). Lookups are joins of the
requested keys against those tables, never Python loops over rows.

Null texts: :meth:`CachedEmbedder.embed` returns a row of NaN for a null input (never a made-up
vector); callers mask null inputs themselves (see ``pipeline.metrics.semantic``). ``""`` is an
ordinary text and is embedded by the backend.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
from tqdm import tqdm

from pipeline.embed.backends import EmbeddingBackend
from pipeline.io.atomic import atomic_path, write_parquet_atomic

log = logging.getLogger(__name__)

#: Misses above which a progress bar is shown (when stderr is a terminal).
PROGRESS_THRESHOLD = 2000
#: Texts handed to the backend per call (progress granularity).
DEFAULT_CHUNK_SIZE = 1024
#: Encoded vectors kept in memory before they are written as a shard.
DEFAULT_SHARD_ROWS = 50_000
#: Memory the cache of one model may hold; beyond it the shards are searched on disk.
DEFAULT_MEMORY_BYTES = 512 * 2**20


def text_keys(texts: pl.Series) -> pl.Series:
    """sha256 of each text's UTF-8 bytes (Binary, 32 bytes; null stays null).

    One ``hashlib`` call per *distinct* text: callers pass deduplicated texts.
    """
    return pl.Series(
        "key",
        [None if t is None else hashlib.sha256(t.encode("utf-8")).digest() for t in texts],
        dtype=pl.Binary,
    )


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:60] or "model"


@dataclass
class _Table:
    directory: Path | None
    dim: int
    #: Vectors held in memory (all of them while the cache fits the budget).
    frames: list[pl.DataFrame]
    #: Shards not held in memory, searched on disk at each lookup (over-budget caches only).
    shards: list[Path] = field(default_factory=list)

    @property
    def held_bytes(self) -> int:
        return int(sum(frame.estimated_size() for frame in self.frames))


class EmbeddingCache:
    """Vectors by (backend, model, text hash), in Parquet shards under ``cache_dir``.

    ``cache_dir=None`` keeps vectors in memory for the life of this object only (unbounded:
    use a cache directory for large runs). With a directory, memory is bounded by
    ``memory_bytes``: a cache whose shards fit is read into memory once; a larger one stays on
    disk and each lookup scans the shards' ``key`` column for the requested keys (a predicate
    pushed into the Parquet reader), reading only the matching vectors; vectors this process
    adds are held until they exceed the budget, then dropped from memory (they are on disk).
    """

    def __init__(
        self, cache_dir: Path | str | None, memory_bytes: int = DEFAULT_MEMORY_BYTES
    ) -> None:
        if memory_bytes < 0:
            raise ValueError("memory_bytes must be 0 or more")
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else None
        self.memory_bytes = memory_bytes
        self._tables: dict[tuple[str, str], _Table] = {}

    def directory(self, backend: EmbeddingBackend) -> Path | None:
        """Where the shards of ``backend``'s model live (None for an in-memory cache)."""
        if self.cache_dir is None:
            return None
        ident = f"{backend.name}\0{backend.model_id}\0{backend.dim}".encode()
        digest = hashlib.sha256(ident).hexdigest()[:12]
        return self.cache_dir / _slug(backend.name) / f"{_slug(backend.model_id)}-{digest}"

    def lookup(self, backend: EmbeddingBackend, keys: pl.Series) -> tuple[np.ndarray, np.ndarray]:
        """Positions in ``keys`` found in the cache and their vectors (float32, ``(h, dim)``)."""
        table = self._table(backend)
        if (not table.frames and not table.shards) or keys.is_empty():
            return np.empty(0, dtype=np.int64), np.empty((0, backend.dim), dtype=np.float32)
        wanted = pl.DataFrame({"key": keys, "position": np.arange(len(keys), dtype=np.int64)})
        parts = []
        if table.frames:
            parts.append(wanted.join(pl.concat(table.frames, rechunk=False), on="key"))
            wanted = wanted.join(parts[0], on="key", how="anti")
        if table.shards and wanted.height:
            on_disk = (
                pl.scan_parquet(table.shards)
                .filter(pl.col("key").is_in(wanted["key"].implode()))
                .unique(subset="key", keep="any")
                .collect()
            )
            parts.append(wanted.join(on_disk, on="key"))
        found = pl.concat(parts) if parts else wanted.head(0)
        positions = found["position"].to_numpy()
        vectors = _as_matrix(found["vector"], backend.dim)
        return positions, vectors

    def store(self, backend: EmbeddingBackend, keys: pl.Series, vectors: np.ndarray) -> None:
        """Add vectors for ``keys`` (distinct, not yet cached): in memory, and as a new shard."""
        if keys.is_empty():
            return
        table = self._table(backend)
        frame = pl.DataFrame(
            {
                "key": keys.rename("key"),
                "vector": pl.Series(
                    "vector", np.ascontiguousarray(vectors, dtype=np.float32),
                    dtype=pl.Array(pl.Float32, backend.dim),
                ),
            }
        )
        table.frames.append(frame)
        if table.directory is None:
            return
        self._write_model_card(backend, table.directory)
        name = f"shard-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}.parquet"
        write_parquet_atomic(frame, table.directory / name)
        if table.held_bytes > self.memory_bytes:
            log.debug("embedding cache: over %d bytes, keeping vectors on disk", self.memory_bytes)
            table.shards.extend(self._shard_files(table))
            table.frames.clear()

    def size(self, backend: EmbeddingBackend) -> int:
        """Distinct vectors cached for ``backend``'s model (in memory and on disk)."""
        table = self._table(backend)
        if not table.shards:
            return sum(f.height for f in table.frames)
        return pl.scan_parquet(table.shards).select(pl.col("key").n_unique()).collect().item()

    def _table(self, backend: EmbeddingBackend) -> _Table:
        ident = (backend.name, backend.model_id)
        if ident not in self._tables:
            directory = self.directory(backend)
            table = _Table(directory, backend.dim, [])
            if directory is not None:
                shards = self._readable_shards(directory, backend.dim)
                if _vector_bytes(shards, backend.dim) <= self.memory_bytes:
                    table.frames = self._load(shards, directory)
                else:  # more vectors than the budget holds: searched on disk instead
                    log.info("embedding cache: %d shards in %s searched on disk", len(shards),
                             directory)
                    table.shards = shards
            self._tables[ident] = table
        return self._tables[ident]

    def _shard_files(self, table: _Table) -> list[Path]:
        """Shards of ``table`` on disk not yet in its on-disk list."""
        assert table.directory is not None
        listed = set(table.shards)
        return [p for p in sorted(table.directory.glob("shard-*.parquet")) if p not in listed]

    @staticmethod
    def _readable_shards(directory: Path, dim: int) -> list[Path]:
        """Shards of ``directory`` with the expected schema (a cache is disposable: others are
        skipped with a warning)."""
        shards = sorted(directory.glob("shard-*.parquet")) if directory.is_dir() else []
        expected = pl.Schema({"key": pl.Binary(), "vector": pl.Array(pl.Float32, dim)})
        readable = []
        for shard in shards:
            try:
                schema = pl.read_parquet_schema(shard)
            except Exception as exc:
                log.warning("embedding cache: skipping unreadable shard %s (%s)", shard, exc)
                continue
            if schema != expected:
                log.warning("embedding cache: skipping shard %s with schema %s", shard,
                            dict(schema))
                continue
            readable.append(shard)
        return readable

    @staticmethod
    def _load(shards: list[Path], directory: Path) -> list[pl.DataFrame]:
        frames = []
        for shard in shards:
            try:
                frames.append(pl.read_parquet(shard))
            except Exception as exc:  # a cache is disposable: skip what cannot be read
                log.warning("embedding cache: skipping unreadable shard %s (%s)", shard, exc)
        if not frames:
            return []
        table = pl.concat(frames).unique(subset="key", keep="first", maintain_order=True)
        log.debug("embedding cache: %d vectors from %d shards in %s", table.height,
                  len(frames), directory)
        return [table]

    @staticmethod
    def _write_model_card(backend: EmbeddingBackend, directory: Path) -> None:
        card = directory / "model.json"
        if card.exists():
            return
        text = json.dumps(
            {"name": backend.name, "model_id": backend.model_id, "dim": backend.dim}, indent=2
        )
        with atomic_path(card) as tmp:
            tmp.write_text(text + "\n", encoding="utf-8")


def _vector_bytes(shards: list[Path], dim: int) -> int:
    """Bytes the vectors of ``shards`` take in memory (key and float32 vector per row), from
    the Parquet footers: compressed file sizes say little (sparse vectors compress well)."""
    import pyarrow.parquet as pq

    rows = sum(pq.ParquetFile(shard).metadata.num_rows for shard in shards)
    return rows * (32 + 4 * dim)


def _as_matrix(vectors: pl.Series, dim: int) -> np.ndarray:
    if vectors.is_empty():
        return np.empty((0, dim), dtype=np.float32)
    return np.asarray(vectors.to_numpy(), dtype=np.float32).reshape(len(vectors), dim)


@dataclass
class EmbedStats:
    """Counters of :meth:`CachedEmbedder.embed` calls.

    ``texts``: input rows (nulls included); ``unique``: distinct non-null texts; ``hits``:
    distinct texts found in the cache; ``encoded``: distinct texts the backend encoded;
    ``seconds``: wall time of the calls; ``encode_seconds``: of that, time in the backend.
    """

    texts: int = 0
    unique: int = 0
    hits: int = 0
    encoded: int = 0
    seconds: float = 0.0
    encode_seconds: float = 0.0

    def add(self, other: EmbedStats) -> None:
        self.texts += other.texts
        self.unique += other.unique
        self.hits += other.hits
        self.encoded += other.encoded
        self.seconds += other.seconds
        self.encode_seconds += other.encode_seconds


class CachedEmbedder:
    """A backend behind a cache: what the semantic and grounding metrics call.

    Each :meth:`embed` call deduplicates its texts, looks the distinct ones up in the cache,
    encodes only the misses (in chunks of ``chunk_size``, with a progress bar above
    :data:`PROGRESS_THRESHOLD` misses when stderr is a terminal), stores them and logs one INFO
    line ``embeddings: N texts, U unique, H cache hits, M encoded in S s (R texts/s)``
    (``S``: time in the backend, ``R = M / S``). Counters: :attr:`last` (the latest call) and
    :attr:`total` (since construction).
    """

    def __init__(
        self,
        backend: EmbeddingBackend,
        cache: EmbeddingCache | None = None,
        *,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        shard_rows: int = DEFAULT_SHARD_ROWS,
        progress: bool | None = None,
    ) -> None:
        if chunk_size < 1 or shard_rows < 1:
            raise ValueError("chunk_size and shard_rows must be positive")
        self.backend = backend
        self.cache = cache if cache is not None else EmbeddingCache(None)
        self.chunk_size = chunk_size
        self.shard_rows = shard_rows
        #: None: show a progress bar only when stderr is a terminal.
        self.progress = progress
        self.last = EmbedStats()
        self.total = EmbedStats()

    @property
    def dim(self) -> int:
        return self.backend.dim

    def embed(self, texts: pl.Series) -> np.ndarray:
        """Vectors for ``texts`` (float32, ``(len(texts), dim)``), aligned with the input.

        Rows of equal texts are equal; a null text gives a row of NaN.
        """
        started = time.perf_counter()
        texts = texts.cast(pl.String).rename("text")
        unique = texts.drop_nulls().unique(maintain_order=True)
        keys = text_keys(unique)
        vectors = np.empty((len(unique), self.dim), dtype=np.float32)

        positions, found = self.cache.lookup(self.backend, keys)
        vectors[positions] = found
        missing = np.ones(len(unique), dtype=bool)
        missing[positions] = False
        misses = np.flatnonzero(missing)
        encode_seconds = self._encode(unique, keys, misses, vectors)

        slot = (
            texts.to_frame()
            .join(
                unique.to_frame().with_row_index("slot"), on="text", how="left",
                maintain_order="left",
            )
            .get_column("slot")
        )
        out = np.full((len(texts), self.dim), np.nan, dtype=np.float32)
        valid = slot.is_not_null().to_numpy()
        out[valid] = vectors[slot.drop_nulls().to_numpy()]

        stats = EmbedStats(
            texts=len(texts), unique=len(unique), hits=len(positions), encoded=len(misses),
            seconds=time.perf_counter() - started, encode_seconds=encode_seconds,
        )
        self.last = stats
        self.total.add(stats)
        rate = stats.encoded / encode_seconds if encode_seconds > 0 else 0.0
        log.log(
            logging.INFO if stats.texts else logging.DEBUG,
            "embeddings: %d texts, %d unique, %d cache hits, %d encoded in %.2f s (%.0f texts/s)",
            stats.texts, stats.unique, stats.hits, stats.encoded, encode_seconds, rate,
        )
        return out

    def _encode(
        self, unique: pl.Series, keys: pl.Series, misses: np.ndarray, vectors: np.ndarray
    ) -> float:
        """Encode ``unique[misses]`` into ``vectors``, storing shards on the way.

        Returns the seconds spent in the backend.
        """
        if len(misses) == 0:
            return 0.0
        show = self.progress if self.progress is not None else sys.stderr.isatty()
        bar = tqdm(
            total=len(misses), desc="embedding", unit="text",
            disable=not show or len(misses) <= PROGRESS_THRESHOLD,
        )
        seconds = 0.0
        pending: list[np.ndarray] = []
        n_pending = 0
        try:
            for start in range(0, len(misses), self.chunk_size):
                chunk = misses[start : start + self.chunk_size]
                tick = time.perf_counter()
                encoded = np.asarray(self.backend.encode(unique.gather(chunk).to_list()))
                seconds += time.perf_counter() - tick
                if encoded.shape != (len(chunk), self.dim):
                    raise ValueError(
                        f"backend {self.backend.name} returned shape {encoded.shape}, "
                        f"expected {(len(chunk), self.dim)}"
                    )
                vectors[chunk] = encoded
                pending.append(chunk)
                n_pending += len(chunk)
                bar.update(len(chunk))
                if n_pending >= self.shard_rows:
                    self._flush(keys, vectors, pending)
                    pending, n_pending = [], 0
        finally:
            # Keep what was encoded even when a later chunk fails.
            self._flush(keys, vectors, pending)
            bar.close()
        return seconds

    def _flush(self, keys: pl.Series, vectors: np.ndarray, pending: list[np.ndarray]) -> None:
        if not pending:
            return
        index = np.concatenate(pending)
        self.cache.store(self.backend, keys.gather(index), vectors[index])
