"""Sentence embeddings for the semantic and grounding metrics: backends and an on-disk cache.

Build a backend from the configuration spec with :func:`backend_from_spec` and wrap it in a
:class:`CachedEmbedder`; metrics only ever call :meth:`CachedEmbedder.embed`.

>>> import polars as pl
>>> embedder = CachedEmbedder(backend_from_spec("hashed"), EmbeddingCache(None))
>>> embedder.embed(pl.Series(["a b", "a b", None])).shape
(3, 512)
>>> (embedder.last.unique, embedder.last.encoded)
(1, 1)
"""

import functools
from pathlib import Path

from pipeline.embed.backends import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_BATCH_TOKENS,
    EmbeddingBackend,
    EmbeddingBackendError,
    HashedNgramBackend,
    MiniLMOnnxBackend,
    SentenceTransformersBackend,
)
from pipeline.embed.cache import CachedEmbedder, EmbeddingCache, EmbedStats
from pipeline.embed.specs import backend_from_spec

__all__ = [
    "CachedEmbedder",
    "EmbedStats",
    "EmbeddingBackend",
    "EmbeddingBackendError",
    "EmbeddingCache",
    "HashedNgramBackend",
    "MiniLMOnnxBackend",
    "SentenceTransformersBackend",
    "backend_from_spec",
    "make_embedder",
]


@functools.cache
def _shared_backend(spec: str, batch_size: int, batch_tokens: int, device: str
                    ) -> EmbeddingBackend:
    """One backend per setting and process: a model loads once per worker."""
    return backend_from_spec(spec, batch_size=batch_size, batch_tokens=batch_tokens,
                             device=device)


def make_embedder(
    spec: str,
    *,
    cache_dir: Path | None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    batch_tokens: int = DEFAULT_BATCH_TOKENS,
    device: str = "auto",
    cache_float16: bool = False,
) -> CachedEmbedder:
    """The embedder a run uses: the backend named by ``spec`` behind the cache in ``cache_dir``.

    The backend is shared by every embedder of the process (model files load lazily, once).
    """
    backend = _shared_backend(spec, batch_size, batch_tokens, device)
    return CachedEmbedder(backend, EmbeddingCache(cache_dir, float16=cache_float16))
