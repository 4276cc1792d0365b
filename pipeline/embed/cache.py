"""Embedding cache on disk and the embedder the metrics call: :class:`CachedEmbedder`.

Layout: one directory per (backend name, model id, layout, storage type) under the cache root,
``<root>/<backend name>/<model slug>-<12 hex of sha256(name, model id, dim)>-v2[-f16]/``,
holding ``model.json`` (name, model id, dim, for people) and shards, each a pair of ``.npy``
files sorted by key: ``shard-*.keys.npy`` (uint8 ``(n, 32)``, the sha256 of each text's UTF-8
bytes) and ``shard-*.vectors.npy`` (``(n, dim)``, float32 or float16). Shards are written
atomically under unique names, so concurrent runs never corrupt the cache (at worst both encode
the same text; a lookup takes the first shard that has it); they are memory-mapped, looked up
by binary search on an 8-byte key prefix (confirmed on the whole key) and merged when there are
too many (see :class:`EmbeddingCache`). Lookups are vectorized: never a Python loop over rows.
The Parquet shards of the first layout (``shard-*.parquet``, directories without ``-v2``) are
no longer read: the cache is disposable, and a run re-encodes what it needs.

Null texts: :meth:`CachedEmbedder.embed` returns a row of NaN for a null input (never a made-up
vector); callers mask null inputs themselves (see ``pipeline.metrics.embedding.semantic``).
``""`` is an ordinary text and is embedded by the backend.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import mmap
import os
import re
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np
import polars as pl
import polars_hash  # registers the ``chash`` namespace on every expression
import pyarrow as pa
from tqdm import tqdm

from pipeline.embed.backends import EmbeddingBackend
from pipeline.io.atomic import atomic_path

log = logging.getLogger(__name__)

#: Misses above which a progress bar is shown (when stderr is a terminal).
PROGRESS_THRESHOLD = 2000
#: Texts handed to the backend per call (progress granularity).
DEFAULT_CHUNK_SIZE = 1024
#: Encoded vectors kept in memory before they are written as a shard.
DEFAULT_SHARD_ROWS = 50_000
#: Shards of one model beyond which the smaller ones are merged.
DEFAULT_MAX_SHARDS = 8
#: Most vectors one compaction merges (and holds in memory).
MERGE_ROWS = 2_000_000
#: Rows per block of :meth:`CachedEmbedder.paired_dots` (two float64 blocks of 8 MiB at 512
#: dimensions).
DOT_ROWS = 2048
#: Layout version in the model directory's name (v1: Parquet shards, no longer read).
LAYOUT = "-v2"
KEYS_SUFFIX = ".keys.npy"
VECTORS_SUFFIX = ".vectors.npy"


def text_keys(texts: pl.Series) -> pl.Series:
    """sha256 of each text's UTF-8 bytes (Binary, 32 bytes; null stays null).

    Computed in Rust over the whole column (``polars_hash``), the same bytes as
    ``hashlib.sha256(text.encode("utf-8")).digest()``.
    """
    column = pl.col(texts.name).cast(pl.String)
    return (
        texts.to_frame()
        .select(cast(polars_hash.HExpr, column).chash.sha2_256().str.decode("hex").alias("key"))
        .to_series()
    )


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")[:60] or "model"


def _prefixes(keys: np.ndarray) -> np.ndarray:
    """First 8 bytes of each 32-byte key as a big-endian uint64 (sorts as the keys do)."""
    return keys[:, :8].copy().view(">u8").ravel().astype(np.uint64)


@dataclass
class _Shard:
    """Vectors sorted by key: ``prefixes`` (uint64), ``keys`` (uint8, n x 32), ``vectors``
    (float32 or float16, n x dim); memory-mapped when ``path`` is set."""

    prefixes: np.ndarray
    keys: np.ndarray
    vectors: np.ndarray
    path: Path | None = None

    @classmethod
    def build(cls, keys: np.ndarray, vectors: np.ndarray) -> _Shard:
        """A shard of distinct ``keys`` (any order; the first of equal keys wins)."""
        prefixes = _prefixes(keys)
        # Sorted by prefix only (stable): two different keys share 8 bytes with odds of 2**-64
        # per pair, and then the second is merely a cache miss.
        order = np.argsort(prefixes, kind="stable")
        keys, vectors, prefixes = keys[order], vectors[order], prefixes[order]
        keep = np.ones(len(keys), dtype=bool)
        same = prefixes[1:] == prefixes[:-1]
        keep[1:][same] = np.any(keys[1:][same] != keys[:-1][same], axis=1)
        if keep.all():  # the rule: distinct texts; no second copy of the vectors
            return cls(prefixes, keys, vectors)
        return cls(prefixes[keep], keys[keep], vectors[keep])

    @classmethod
    def open(cls, keys_path: Path) -> _Shard:
        keys = np.load(keys_path, mmap_mode="r")
        vectors = np.load(_vectors_path(keys_path), mmap_mode="r")
        if keys.ndim != 2 or keys.shape[1] != 32 or len(vectors) != len(keys):
            raise ValueError(f"shapes {keys.shape} and {vectors.shape} do not match")
        return cls(_prefixes(np.asarray(keys)), keys, vectors, keys_path)

    def __len__(self) -> int:
        return len(self.keys)

    def find(self, keys: np.ndarray, prefixes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Positions in ``keys`` present in this shard and their rows here (binary search)."""
        rows = np.searchsorted(self.prefixes, prefixes)
        inside = rows < len(self.prefixes)
        hit = np.zeros(len(keys), dtype=bool)
        hit[inside] = self.prefixes[rows[inside]] == prefixes[inside]
        # Equal prefixes (8 bytes) are confirmed on the whole key.
        candidates = np.flatnonzero(hit)
        if len(candidates):
            same = np.all(np.asarray(self.keys[rows[candidates]]) == keys[candidates], axis=1)
            hit[candidates[~same]] = False
        found = np.flatnonzero(hit)
        return found, rows[found]

    def write(self, directory: Path) -> Path:
        """Write as ``shard-<unique>.keys.npy`` and its vectors file; returns the keys file."""
        stem = f"shard-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        keys_path = directory / f"{stem}{KEYS_SUFFIX}"
        # The vectors first: a keys file is only ever visible with its vectors beside it.
        for path, array in ((_vectors_path(keys_path), self.vectors), (keys_path, self.keys)):
            with atomic_path(path) as tmp, open(tmp, "wb") as fh:
                np.save(fh, np.ascontiguousarray(array))
        return keys_path


#: Vectors copied per block when shards are merged on disk.
MERGE_BLOCK_ROWS = 65_536


def _distinct_order(keys: np.ndarray) -> np.ndarray:
    """Row order that sorts ``keys`` by prefix (stably) and keeps the first of equal keys."""
    prefixes = _prefixes(keys)
    order = np.argsort(prefixes, kind="stable")
    sorted_keys, prefixes = keys[order], prefixes[order]
    keep = np.ones(len(order), dtype=bool)
    same = prefixes[1:] == prefixes[:-1]
    keep[1:][same] = np.any(sorted_keys[1:][same] != sorted_keys[:-1][same], axis=1)
    return order[keep]


def _gather(
    shards: list[_Shard], source: np.ndarray, rows: np.ndarray, start: int, stop: int,
    out: np.ndarray | None = None, scratch: np.ndarray | None = None,
) -> np.ndarray:
    """Vectors ``start:stop`` of the merged order: row ``rows[i]`` of shard ``source[i]``.

    Shards and the merged order are both sorted by key, so the rows one shard gives to a block
    are an ascending run with few gaps: each shard is read as one contiguous slice (sequential
    pages, no per-row seek) and the rows are picked from it. ``out`` and ``scratch`` (at least
    ``stop - start`` rows each) are reused between blocks when given: fresh memory costs a page
    fault per 4 KiB, more than the copy itself.
    """
    block_source, block_rows = source[start:stop], rows[start:stop]
    n, dim, dtype = stop - start, shards[0].vectors.shape[1], shards[0].vectors.dtype
    block = np.empty((n, dim), dtype=dtype) if out is None else out[:n]
    for index, shard in enumerate(shards):  # a loop over shards, not rows
        mine = np.flatnonzero(block_source == index)
        if len(mine):
            wanted = block_rows[mine]
            low, high = int(wanted.min()), int(wanted.max()) + 1
            picked = np.take(shard.vectors[low:high], wanted - low, axis=0,
                             out=None if scratch is None else scratch[: len(mine)])
            block[mine] = picked
            _release(shard.vectors)
    return block


def _write_merged(
    directory: Path, shards: list[_Shard], keys: np.ndarray, source: np.ndarray,
    rows: np.ndarray,
) -> Path:
    """Write the merged shard (vectors streamed in blocks, then keys); its keys file."""
    stem = f"shard-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    keys_path = directory / f"{stem}{KEYS_SUFFIX}"
    dim, dtype = shards[0].vectors.shape[1], shards[0].vectors.dtype
    header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False,
              "shape": (len(keys), dim)}
    # A plain file written block by block (a writable memory map would keep every written page
    # resident until it is unmapped).
    with atomic_path(_vectors_path(keys_path)) as tmp, open(tmp, "wb") as fh:
        np.lib.format.write_array_header_2_0(fh, header)
        rows_per_block = min(MERGE_BLOCK_ROWS, len(keys))
        out = np.empty((rows_per_block, dim), dtype=dtype)
        scratch = np.empty_like(out)
        for start in range(0, len(keys), MERGE_BLOCK_ROWS):
            stop = min(start + MERGE_BLOCK_ROWS, len(keys))
            block = _gather(shards, source, rows, start, stop, out, scratch)
            block.tofile(fh)
    with atomic_path(keys_path) as tmp, open(tmp, "wb") as fh:
        np.save(fh, np.ascontiguousarray(keys))
    return keys_path


def _release(vectors: np.ndarray) -> None:
    """Drop the pages a lookup read from a memory-mapped shard out of this process's resident
    set (they stay in the OS page cache): a large cache read by a long run would otherwise
    count in the run's memory as if it were held."""
    handle = getattr(vectors, "_mmap", None)
    if handle is not None and hasattr(mmap, "MADV_DONTNEED"):
        with contextlib.suppress(OSError, ValueError):
            handle.madvise(mmap.MADV_DONTNEED)


def _vectors_path(keys_path: Path) -> Path:
    return keys_path.with_name(keys_path.name[: -len(KEYS_SUFFIX)] + VECTORS_SUFFIX)


def _merge_count(sizes: list[int]) -> int:
    """How many of the shards of ``sizes`` (ascending) one compaction merges: the two smallest,
    then each next one while it holds no more vectors than those taken together (and the total
    stays within :data:`MERGE_ROWS`).

    Shards of like size merge and a large shard waits until the small ones add up to it, so a
    vector is rewritten about once each time its shard doubles, not at every compaction (the
    earlier rule, every shard up to :data:`MERGE_ROWS`, rewrote the whole cache each time).
    """
    n_merge, total = 2, sizes[0] + sizes[1]
    while (n_merge < len(sizes) and sizes[n_merge] <= total
           and total + sizes[n_merge] <= MERGE_ROWS):
        total += sizes[n_merge]
        n_merge += 1
    return n_merge


@dataclass
class _Table:
    directory: Path | None
    dim: int
    shards: list[_Shard] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(len(shard) for shard in self.shards)


class EmbeddingCache:
    """Vectors by (backend, model, text hash) in key-sorted shards under ``cache_dir``.

    Each shard is a pair of ``.npy`` files, ``shard-*.keys.npy`` (the 32-byte keys, sorted) and
    ``shard-*.vectors.npy`` (float32, or float16 with ``float16=True``), memory-mapped on
    open: nothing but the key prefixes (8 bytes a vector) is read into memory, and a lookup is
    a binary search per shard followed by a gather of the rows found, so its cost grows with the
    number of shards and the log of their size, not with the vectors cached. Shards are only
    added, each written atomically under a unique name; when a model has more than
    ``max_shards`` shards, the smallest are merged into one (:meth:`compact`) until there are
    ``max_shards`` again. ``cache_dir=None`` keeps the same
    shards in memory for the life of this object only.

    Float16 storage halves the disk and page-cache footprint and moves cosines by less than
    1e-3 (docs/embeddings.md); it is a separate directory (suffix ``-f16``), so float32 and
    float16 vectors never mix.
    """

    def __init__(
        self, cache_dir: Path | str | None, *, float16: bool = False,
        max_shards: int = DEFAULT_MAX_SHARDS,
    ) -> None:
        if max_shards < 2:
            raise ValueError("max_shards must be 2 or more")
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else None
        self.float16 = float16
        self.max_shards = max_shards
        self._tables: dict[tuple[str, str], _Table] = {}

    def directory(self, backend: EmbeddingBackend) -> Path | None:
        """Where the shards of ``backend``'s model live (None for an in-memory cache)."""
        if self.cache_dir is None:
            return None
        ident = f"{backend.name}\0{backend.model_id}\0{backend.dim}".encode()
        digest = hashlib.sha256(ident).hexdigest()[:12]
        suffix = "-f16" if self.float16 else ""
        return (self.cache_dir / _slug(backend.name)
                / f"{_slug(backend.model_id)}-{digest}{LAYOUT}{suffix}")

    def lookup(self, backend: EmbeddingBackend, keys: pl.Series) -> tuple[np.ndarray, np.ndarray]:
        """Positions in ``keys`` found in the cache and their vectors (float32, ``(h, dim)``)."""
        table = self._table(backend)
        wanted = _key_matrix(keys)
        positions: list[np.ndarray] = []
        vectors: list[np.ndarray] = []
        open_ = np.arange(len(wanted))
        for shard in table.shards:
            if not len(open_):
                break
            found, rows = shard.find(wanted[open_], _prefixes(wanted[open_]))
            if len(found):
                order = np.argsort(rows)  # ascending rows read a memory map front to back
                positions.append(open_[found[order]])
                vectors.append(np.asarray(shard.vectors[rows[order]], dtype=np.float32))
                _release(shard.vectors)
                open_ = np.delete(open_, found)
        if not positions:
            return np.empty(0, dtype=np.int64), np.empty((0, backend.dim), dtype=np.float32)
        return np.concatenate(positions), np.concatenate(vectors)

    def store(self, backend: EmbeddingBackend, keys: pl.Series, vectors: np.ndarray) -> None:
        """Add vectors for ``keys`` (distinct, not yet cached) as a new shard."""
        if keys.is_empty():
            return
        table = self._table(backend)
        dtype = np.float16 if self.float16 else np.float32
        shard = _Shard.build(_key_matrix(keys), np.asarray(vectors, dtype=dtype))
        if table.directory is not None:
            table.directory.mkdir(parents=True, exist_ok=True)
            self._write_model_card(backend, table.directory)
            shard = _Shard.open(shard.write(table.directory))
        table.shards.append(shard)
        while len(table.shards) > self.max_shards:
            self.compact(backend)

    def size(self, backend: EmbeddingBackend) -> int:
        """Vectors cached for ``backend``'s model (distinct after a compaction; shards written
        by concurrent runs may hold a few duplicates until then)."""
        return self._table(backend).rows

    def compact(self, backend: EmbeddingBackend) -> None:
        """Merge the smallest shards into one sorted shard without duplicate keys.

        Shards are taken smallest first as :func:`_merge_count` says (shards of like size,
        at least two, at most :data:`MERGE_ROWS` vectors unless two alone hold more), so a
        compaction never rewrites the bulk of a large cache for a few new vectors; on disk the
        vectors are copied in blocks of :data:`MERGE_BLOCK_ROWS`, so memory holds the merged
        keys and one block, not the vectors; keys already in a shard that is kept (written by
        a concurrent run) are dropped. The merged inputs are deleted after the
        merged shard is in place (a concurrent reader that mapped them keeps reading them; a
        cache is disposable).
        """
        table = self._table(backend)
        if len(table.shards) < 2:
            return
        ordered = sorted(table.shards, key=len)
        n_merge = _merge_count([len(shard) for shard in ordered])
        merge, keep = ordered[:n_merge][::-1], ordered[n_merge:]
        # Largest first, as lookups search them: a duplicated key keeps the vector it had.
        keys = np.concatenate([np.asarray(s.keys) for s in merge])
        source = np.concatenate([np.full(len(s), i, dtype=np.int32) for i, s in enumerate(merge)])
        rows = np.concatenate([np.arange(len(s), dtype=np.int64) for s in merge])
        for shard in keep:
            duplicates, _ = shard.find(keys, _prefixes(keys))
            keys = np.delete(keys, duplicates, axis=0)
            source, rows = np.delete(source, duplicates), np.delete(rows, duplicates)
        order = _distinct_order(keys)
        keys, source, rows = keys[order], source[order], rows[order]
        if table.directory is None:
            merged = _Shard.build(keys, _gather(merge, source, rows, 0, len(keys)))
        else:
            # Vectors are copied block by block into the new file: memory holds the keys and
            # one block, never the merged vectors.
            merged = _Shard.open(_write_merged(table.directory, merge, keys, source, rows))
            for shard in merge:
                assert shard.path is not None
                for path in (shard.path, _vectors_path(shard.path)):
                    path.unlink(missing_ok=True)
        table.shards = sorted([*keep, merged], key=len, reverse=True)
        log.debug("embedding cache: merged %d shards into one of %d vectors", len(merge),
                  len(merged))

    def _table(self, backend: EmbeddingBackend) -> _Table:
        ident = (backend.name, backend.model_id)
        if ident not in self._tables:
            directory = self.directory(backend)
            table = _Table(directory, backend.dim)
            if directory is not None and directory.is_dir():
                table.shards = self._open_shards(directory, backend.dim)
            self._tables[ident] = table
            while len(table.shards) > self.max_shards:
                self.compact(backend)
        return self._tables[ident]

    @staticmethod
    def _open_shards(directory: Path, dim: int) -> list[_Shard]:
        """The readable shards of ``directory``, largest first (a cache is disposable:
        unreadable ones are skipped with a warning)."""
        shards = []
        for path in sorted(directory.glob(f"shard-*{KEYS_SUFFIX}")):
            try:
                shard = _Shard.open(path)
                if shard.vectors.ndim != 2 or shard.vectors.shape[1] != dim:
                    raise ValueError(f"vectors of shape {shard.vectors.shape}, expected dim {dim}")
            except (OSError, ValueError) as exc:
                log.warning("embedding cache: skipping unreadable shard %s (%s)", path, exc)
                continue
            shards.append(shard)
        shards.sort(key=len, reverse=True)
        log.debug("embedding cache: %d vectors in %d shards in %s",
                  sum(map(len, shards)), len(shards), directory)
        return shards

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


def _key_matrix(keys: pl.Series) -> np.ndarray:
    """The 32-byte keys of ``keys`` (Binary, no nulls) as a uint8 ``(n, 32)`` matrix, read from
    the column's data buffer (no Python object per key)."""
    if keys.is_empty():
        return np.empty((0, 32), dtype=np.uint8)
    if keys.null_count():
        raise ValueError("cache keys must not be null")
    column = keys.to_arrow().cast(pa.large_binary())
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    matrices = []
    for chunk in chunks:
        offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int64)[
            chunk.offset : chunk.offset + len(chunk) + 1
        ]
        if np.any(np.diff(offsets) != 32):
            raise ValueError("cache keys must be 32 bytes each")
        data = np.frombuffer(chunk.buffers()[2], dtype=np.uint8)
        matrices.append(data[offsets[0] : offsets[-1]].reshape(len(chunk), 32))
    return np.concatenate(matrices) if len(matrices) > 1 else matrices[0].copy()


@dataclass
class EmbedStats:
    """Counters of :meth:`CachedEmbedder.embed` calls.

    ``texts``: input rows (nulls included); ``unique``: distinct non-null texts; ``hits``:
    distinct texts found in the cache; ``encoded``: distinct texts the backend encoded;
    ``tokens``: tokens the backend encoded (0 for a backend that does not count them);
    ``rows``: records the calls served, as the callers declared them; ``seconds``: wall time of
    the calls; ``encode_seconds``: of that, time in the backend.
    """

    texts: int = 0
    unique: int = 0
    hits: int = 0
    encoded: int = 0
    tokens: int = 0
    rows: int = 0
    seconds: float = 0.0
    encode_seconds: float = 0.0

    def add(self, other: EmbedStats) -> None:
        self.texts += other.texts
        self.unique += other.unique
        self.hits += other.hits
        self.encoded += other.encoded
        self.tokens += other.tokens
        self.rows += other.rows
        self.seconds += other.seconds
        self.encode_seconds += other.encode_seconds

    def describe(self) -> str:
        """One log line: counts, per-row figures (when ``rows`` is known) and rates."""
        per_row = (
            f" ({self.unique / self.rows:.2f} unique texts and {self.tokens / self.rows:.0f} "
            f"tokens encoded per row of {self.rows})" if self.rows else ""
        )
        seconds = self.encode_seconds
        texts_s = self.encoded / seconds if seconds > 0 else 0.0
        tokens_s = self.tokens / seconds if seconds > 0 else 0.0
        return (
            f"{self.texts} texts, {self.unique} unique, {self.hits} cache hits, {self.encoded} "
            f"encoded, {self.tokens} tokens{per_row} in {seconds:.2f} s "
            f"({texts_s:.0f} texts/s, {tokens_s:.0f} tokens/s)"
        )


class CachedEmbedder:
    """A backend behind a cache: what the semantic and grounding metrics call.

    Each :meth:`embed` call deduplicates its texts, looks the distinct ones up in the cache,
    encodes only the misses (in chunks of ``chunk_size``, with a progress bar above
    :data:`PROGRESS_THRESHOLD` misses when stderr is a terminal), stores them and logs one INFO
    line ``embeddings: label: N texts, U unique, H cache hits, M encoded, T tokens (u unique
    texts and t tokens encoded per row of R) in S s (X texts/s, Y tokens/s)`` (``S``: time in
    the backend). Counters: :attr:`last` (the latest call) and :attr:`total` (since
    construction); :meth:`log_total` logs the total of a run.

    Calls are serialized by a lock: polars may evaluate two embedding metrics of one frame on
    two threads, and the second must find the texts the first encoded (a response read by
    ``semantic_similarity`` and ``semantic_relevance`` is encoded once) rather than encode them
    again on the same cores.
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
        self._lock = threading.Lock()

    @property
    def dim(self) -> int:
        return self.backend.dim

    def embed(self, texts: pl.Series, *, rows: int = 0, label: str = "") -> np.ndarray:
        """Vectors for ``texts`` (float32, ``(len(texts), dim)``), aligned with the input.

        Rows of equal texts are equal; a null text gives a row of NaN. ``rows`` (the records
        these texts come from) and ``label`` (the caller) only feed the log line and counters.
        """
        vectors, slots = self.embed_distinct(texts, rows=rows, label=label)
        out = np.full((len(texts), self.dim), np.nan, dtype=np.float32)
        valid = slots >= 0
        out[valid] = vectors[slots[valid]]
        return out

    def embed_distinct(
        self, texts: pl.Series, *, rows: int = 0, label: str = ""
    ) -> tuple[np.ndarray, np.ndarray]:
        """The vectors of the distinct texts of ``texts`` (float32, ``(distinct, dim)``) and
        each text's row among them (int64, -1 for a null text): :meth:`embed` without a row
        per text, for callers that only combine vectors (see :meth:`paired_dots`)."""
        with self._lock:
            return self._embed(texts, rows, label)

    def paired_dots(
        self, left: pl.Series, right: pl.Series, *, rows: int = 0, label: str = ""
    ) -> np.ndarray:
        """Row-wise dot products (float64) of the vectors of ``left`` and ``right``.

        Both sides go to the embedder in one call, so a text on both sides or on many rows is
        embedded once. The products are taken :data:`DOT_ROWS` rows at a time from the
        distinct vectors: the same float64 values as ``einsum`` over whole per-row matrices,
        without materializing one (at 512 dimensions that was 2 KiB a row per copy).
        """
        if len(left) != len(right):
            raise ValueError(f"columns differ in length: {len(left)} and {len(right)}")
        if left.null_count() or right.null_count():
            raise ValueError("paired_dots takes no null texts: filter the pairs first")
        vectors, slots = self.embed_distinct(pl.concat([left.cast(pl.String),
                                                        right.cast(pl.String)]),
                                             rows=rows, label=label)
        n = len(left)
        dots = np.empty(n, dtype=np.float64)
        for start in range(0, n, DOT_ROWS):
            end = min(start + DOT_ROWS, n)
            a = vectors[slots[start:end]].astype(np.float64)
            b = vectors[slots[n + start : n + end]].astype(np.float64)
            dots[start:end] = np.einsum("ij,ij->i", a, b)
        return dots

    def log_total(self, rows: int | None = None, level: int = logging.INFO) -> None:
        """Log :attr:`total` as one line (``rows``: the run's records, for per-row figures)."""
        total = self.total
        if rows is not None:
            total = EmbedStats(**{**total.__dict__, "rows": rows})
        log.log(level, "embeddings (run, %s): %s", self.backend.name, total.describe())

    def _embed(self, texts: pl.Series, rows: int, label: str) -> tuple[np.ndarray, np.ndarray]:
        started = time.perf_counter()
        tokens_before = int(getattr(self.backend, "tokens_seen", 0))
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
        slots = slot.cast(pl.Int64).fill_null(-1).to_numpy()

        stats = EmbedStats(
            texts=len(texts), unique=len(unique), hits=len(positions), encoded=len(misses),
            tokens=int(getattr(self.backend, "tokens_seen", 0)) - tokens_before, rows=rows,
            seconds=time.perf_counter() - started, encode_seconds=encode_seconds,
        )
        self.last = stats
        self.total.add(stats)
        log.log(
            logging.INFO if stats.texts else logging.DEBUG,
            "embeddings: %s%s", f"{label}: " if label else "", stats.describe(),
        )
        return vectors, slots

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
