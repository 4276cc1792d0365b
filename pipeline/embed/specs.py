"""Embedding backends by name: the spec strings of ``--embedding-backend`` and ``[embedding]``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pipeline.embed.backends import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_BATCH_TOKENS,
    EmbeddingBackend,
    EmbeddingBackendError,
    HashedNgramBackend,
    MiniLMOnnxBackend,
    SentenceTransformersBackend,
    _ort_providers,
    select_device,
)
from pipeline.embed.minilm_float32 import MiniLMFloat32Backend
from pipeline.embed.static import StaticBackend

__all__ = ["backend_from_spec"]


def _static(**_: Any) -> EmbeddingBackend:
    return StaticBackend()


_BACKENDS: dict[str, Callable[..., EmbeddingBackend]] = {
    "minilm": lambda batch_size, batch_tokens, intra_op_threads, device: MiniLMOnnxBackend(
        batch_size=batch_size, batch_tokens=batch_tokens, intra_op_threads=intra_op_threads,
        device=device,
    ),
    "minilm-f32": lambda batch_size, batch_tokens, intra_op_threads, device: (
        MiniLMFloat32Backend(batch_size=batch_size, batch_tokens=batch_tokens, device=device)
    ),
    "static": _static,
    "hashed": lambda **_: HashedNgramBackend(),
}
_SENTENCE_TRANSFORMERS = "sentence-transformers:"


def backend_from_spec(
    spec: str = "minilm",
    *,
    batch_size: int = DEFAULT_BATCH_SIZE,
    batch_tokens: int = DEFAULT_BATCH_TOKENS,
    intra_op_threads: int | None = None,
    device: str = "auto",
) -> EmbeddingBackend:
    """Build a backend from its configuration spec.

    ``"minilm"`` (default): :class:`MiniLMOnnxBackend` on ``device``; ``"minilm-f32"``: the
    float32 model on numpy (:class:`pipeline.embed.minilm_float32.MiniLMFloat32Backend`,
    the enhanced-framework preset's); ``"static"``: the
    distilled :class:`pipeline.embed.static.StaticBackend`; ``"hashed"``:
    :class:`HashedNgramBackend` (512 buckets); ``"sentence-transformers:<name or path>"``:
    :class:`SentenceTransformersBackend`.

    >>> backend_from_spec("hashed").name
    'hashed-ngram-lexical'
    """
    spec = spec.strip()
    if spec in _BACKENDS:
        return _BACKENDS[spec](batch_size=batch_size, batch_tokens=batch_tokens,
                               intra_op_threads=intra_op_threads, device=device)
    if spec.startswith(_SENTENCE_TRANSFORMERS) and spec[len(_SENTENCE_TRANSFORMERS) :].strip():
        model = spec[len(_SENTENCE_TRANSFORMERS) :].strip()
        st_device = "cuda" if select_device(device, _ort_providers()) == "cuda" else "cpu"
        return SentenceTransformersBackend(model, batch_size=batch_size, device=st_device)
    raise EmbeddingBackendError(
        f"unknown embedding backend {spec!r}; expected one of: minilm, minilm-f32, static, "
        "hashed, sentence-transformers:<name or local path>"
    )


