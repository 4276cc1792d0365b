"""Distill the static backend's table from the MiniLM ONNX model (model2vec's method, in numpy).

    python -m pipeline.embed.distill [--dim 256] [--sif 1e-4] [--out pipeline/embed/data/...]

``model2vec`` itself distills through ``transformers`` and ``torch`` from a Hugging Face model;
neither is a dependency here and nothing may be downloaded, so the same three steps run on the
pinned int8 ONNX model of the default backend (:class:`~pipeline.embed.backends.MiniLMOnnxBackend`):

1. **Token outputs**: each vocabulary id ``t`` is fed as ``[CLS] t [SEP]``; the output is the
   mean of the three last hidden states (MiniLM's own mean pooling), not normalized.
2. **PCA** (centered, by eigen-decomposition of the covariance) to ``--dim`` components, with
   the sign of each component fixed (largest absolute loading positive) so reruns give the same
   file.
3. **Zipf/SIF weighting**: the row of rank ``r`` (its vocabulary id, as model2vec assumes for a
   tokenizer without counts) is scaled by ``a / (a + p(r))``, ``p(r) = (1 / (r + 1)) / H``,
   ``a = --sif``.

The table is written as float16 with the grounding threshold calibrated for it
(``tau_sim``, :data:`STATIC_TAU_SIM`, see docs/embeddings.md), deterministic for a given model.
"""

from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import numpy as np

from pipeline.config import STATIC_TAU_SIM
from pipeline.embed.backends import MINILM_DIM, MiniLMOnnxBackend
from pipeline.embed.static import STATIC_MODEL_FILE

log = logging.getLogger(__name__)

DEFAULT_DIM = 128
DEFAULT_SIF = 1e-4
CLS_ID, SEP_ID = 101, 102


def token_outputs(backend: MiniLMOnnxBackend, vocab_size: int, batch: int = 2048) -> np.ndarray:
    """Mean-pooled MiniLM output of ``[CLS] t [SEP]`` for every id ``t`` (float32)."""
    out = np.empty((vocab_size, MINILM_DIM), dtype=np.float32)
    for start in range(0, vocab_size, batch):
        ids = np.arange(start, min(start + batch, vocab_size), dtype=np.int64)
        feeds = np.stack([np.full_like(ids, CLS_ID), ids, np.full_like(ids, SEP_ID)], axis=1)
        out[ids] = backend.hidden_mean(feeds, np.ones_like(feeds))
    return out


def pca(vectors: np.ndarray, dim: int) -> np.ndarray:
    """Projection of ``vectors`` on their ``dim`` first principal components (float64)."""
    centered = vectors.astype(np.float64) - vectors.mean(axis=0)
    values, axes = np.linalg.eigh(centered.T @ centered)
    top = axes[:, np.argsort(values)[::-1][:dim]]
    signs = np.sign(top[np.abs(top).argmax(axis=0), np.arange(top.shape[1])])
    return centered @ (top * signs)


def sif_weights(vocab_size: int, a: float = DEFAULT_SIF) -> np.ndarray:
    """``a / (a + p(r))`` with Zipf probabilities ``p(r)`` over ranks ``r = 0..vocab_size-1``."""
    inverse = 1.0 / np.arange(1, vocab_size + 1, dtype=np.float64)
    return a / (a + inverse / inverse.sum())


def distill(dim: int = DEFAULT_DIM, sif: float = DEFAULT_SIF) -> np.ndarray:
    """The float16 table ``(vocab size, dim)``."""
    backend = MiniLMOnnxBackend()
    vocab_size = backend.vocab_size
    started = time.perf_counter()
    outputs = token_outputs(backend, vocab_size)
    log.info("token outputs of %d ids in %.1f s", vocab_size, time.perf_counter() - started)
    table = pca(outputs, dim) * sif_weights(vocab_size, sif)[:, None]
    return table.astype(np.float16)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dim", type=int, default=DEFAULT_DIM)
    parser.add_argument("--sif", type=float, default=DEFAULT_SIF)
    parser.add_argument("--tau", type=float, default=STATIC_TAU_SIM)
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).parent / "data" / STATIC_MODEL_FILE)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    table = distill(args.dim, args.sif)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.savez(args.out, embeddings=table, tau_sim=np.float64(args.tau),
             sif=np.float64(args.sif))
    log.info("wrote %s: %s float16, %.1f MB", args.out, table.shape, args.out.stat().st_size / 1e6)


if __name__ == "__main__":
    main()
