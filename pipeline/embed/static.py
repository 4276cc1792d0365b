"""Static embeddings distilled from all-MiniLM-L6-v2: token ids -> table rows -> mean -> L2.

The model2vec method (Tulkens and van Dongen, 2024, ``MinishLab/model2vec``): every WordPiece
token of the MiniLM vocabulary is run through the model on its own (``[CLS] t [SEP]``, mean
pooling), the 384-d outputs are reduced by PCA and each row is scaled by a Zipf/SIF weight
``a / (a + p(rank))``. At inference a text's vector is the mean of its tokens' rows (no special
tokens), L2-normalized. The table is built by ``python -m pipeline.embed.distill`` and ships as
package data (:data:`STATIC_MODEL_FILE`, float16); inference is numpy and polars only.

Tokenization is the MiniLM tokenizer's, computed per distinct *word* instead of per text:
texts lose their control characters and are lowercased, split as ``BertPreTokenizer`` does
(whitespace; every punctuation and CJK character is a word of its own), and each distinct word
not seen before goes through the whole tokenizer (normalizer and WordPiece) once; texts then
become token ids by a join. The ids equal
``tokenizer.encode(text, add_special_tokens=False).ids`` (tested), truncated to
:data:`STATIC_MAX_TOKENS` (the 256 tokens of MiniLM less ``[CLS]`` and ``[SEP]``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import numpy as np
import polars as pl

from pipeline.embed.backends import (
    MINILM_TOKENIZER_HINT,
    MINILM_TOKENIZER_SHA256,
    EmbeddingBackendError,
    _minilm_tokenizer_path,
    file_sha256,
    l2_normalize,
    verify_file,
)

#: The distilled table inside the package (``pipeline/embed/data``).
STATIC_MODEL_FILE = "minilm-static.npz"
#: Word-piece tokens kept per text (MiniLM's 256 less ``[CLS]`` and ``[SEP]``).
STATIC_MAX_TOKENS = 254
#: Texts pooled per numpy step (bounds the gathered ``(texts, tokens, dim)`` block).
POOL_TEXTS = 512
#: Distinct words remembered between calls before the word table starts afresh.
MAX_WORDS = 2_000_000

# BertPreTokenizer: ASCII punctuation and Unicode P* are words of one character; so are CJK
# ideographs (BertNormalizer's handle_chinese_chars).
_PUNCT = r"!-/:-@\[-`{-~\p{P}"
_CJK = (r"\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}"
        r"\x{2B740}-\x{2B81F}\x{2B820}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}")
WORD_PATTERN = rf"[^\s{_PUNCT}{_CJK}]+|[{_PUNCT}{_CJK}]"
_CONTROL = r"[\x00\x{FFFD}[\p{Cc}\p{Cf}&&[^\t\n\r]]]"


def bert_words(texts: pl.Expr) -> pl.Expr:
    """List of pre-tokenized words of each text, as MiniLM's pre-tokenizer splits them.

    Control characters are removed and texts lowercased (which merges ``The`` and ``the``);
    accents are left to the tokenizer's normalizer, which sees each distinct word once.

    >>> pl.select(bert_words(pl.lit("Déjà-vu, it's 3.5!"))).item().to_list()
    ['déjà', '-', 'vu', ',', 'it', "'", 's', '3', '.', '5', '!']
    """
    return texts.str.replace_all(_CONTROL, "").str.to_lowercase().str.extract_all(WORD_PATTERN)


def static_model_path() -> Path:
    """The bundled table (may not exist in a source checkout before distillation)."""
    return Path(str(resources.files("pipeline.embed").joinpath("data", STATIC_MODEL_FILE)))


class StaticBackend:
    """The distilled static model: see the module docstring.

    ``model_id`` names the table by the sha256 of its file, so the cache never mixes vectors of
    two distillations. ``tokens_seen`` counts the word-piece tokens pooled since construction.
    """

    name = "minilm-static"

    def __init__(self, *, model_path: Path | None = None,
                 tokenizer_path: Path | None = None) -> None:
        from tokenizers import Tokenizer

        path = Path(model_path) if model_path is not None else static_model_path()
        if not path.is_file():
            raise EmbeddingBackendError(
                f"static model not found at {path}; build it with: python -m pipeline.embed.distill"
            )
        with np.load(path) as data:
            table = np.asarray(data["embeddings"], dtype=np.float32)
            self.tau_sim = float(data["tau_sim"]) if "tau_sim" in data else None
        # One zero row past the vocabulary pads the gathered blocks.
        self._table = np.vstack([table, np.zeros((1, table.shape[1]), dtype=np.float32)])
        self._pad = table.shape[0]
        self.dim = int(table.shape[1])
        tokenizer_path = (
            Path(tokenizer_path) if tokenizer_path is not None else _minilm_tokenizer_path()
        )
        verify_file(tokenizer_path, MINILM_TOKENIZER_SHA256, "MiniLM tokenizer.json",
                    MINILM_TOKENIZER_HINT)
        tokenizer = Tokenizer.from_file(str(tokenizer_path))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        self._tokenizer = tokenizer
        self._words = pl.DataFrame(schema={"word": pl.String, "ids": pl.List(pl.Int32)})
        self.model_id = (
            f"model2vec-numpy|from:all-MiniLM-L6-v2|table:{file_sha256(path)[:12]}"
            f"|dim:{self.dim}|max_tokens:{STATIC_MAX_TOKENS}|mean|l2"
        )
        self.tokens_seen = 0

    def token_ids(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Word-piece ids of ``texts``, concatenated (int32), and the count per text (int64)."""
        words = (
            pl.DataFrame({"text": pl.Series(texts, dtype=pl.String)})
            .select(pl.int_range(pl.len(), dtype=pl.Int64).alias("row"),
                    bert_words(pl.col("text")).alias("word"))
            .explode("word")
            .drop_nulls("word")
        )
        self._learn(words.get_column("word"))
        tokens = (
            words.join(self._words, on="word", how="left", maintain_order="left")
            .select("row", "ids")
            .explode("ids")
            .drop_nulls("ids")
        )
        rows = tokens.get_column("row").to_numpy()
        ids = tokens.get_column("ids").to_numpy().astype(np.int32, copy=False)
        lengths = np.bincount(rows, minlength=len(texts)).astype(np.int64)
        if lengths.max(initial=0) > STATIC_MAX_TOKENS:
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
            position = np.arange(len(ids)) - np.repeat(starts, lengths)
            ids = ids[position < STATIC_MAX_TOKENS]
            lengths = np.minimum(lengths, STATIC_MAX_TOKENS)
        return ids, lengths

    def _learn(self, words: pl.Series) -> None:
        """Add the word-piece ids of words not yet in the word table (one tokenizer call)."""
        new = words.unique().to_frame().join(self._words, on="word", how="anti")["word"]
        if new.is_empty():
            return
        encodings = self._tokenizer.encode_batch_fast(new.to_list(), add_special_tokens=False)
        learned = pl.DataFrame({
            "word": new,
            "ids": pl.Series([e.ids for e in encodings], dtype=pl.List(pl.Int32)),
        })
        if self._words.height + learned.height > MAX_WORDS:
            self._words = self._words.clear()
        self._words = pl.concat([self._words, learned], rechunk=False)
        if self._words.n_chunks() > 64:
            self._words = self._words.rechunk()

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        ids, lengths = self.token_ids(texts)
        self.tokens_seen += int(lengths.sum())
        starts = np.concatenate([[0], np.cumsum(lengths)])
        # Texts of similar length pool together: the padded (texts, longest, dim) block is small.
        order = np.argsort(lengths, kind="stable")
        for first in range(0, len(order), POOL_TEXTS):
            block = order[first : first + POOL_TEXTS]
            longest = int(lengths[block].max())
            if longest == 0:
                continue
            index = np.full((len(block), longest), self._pad, dtype=np.int64)
            within = np.arange(longest) < lengths[block, None]
            index[within] = ids[_ranges(starts[block], lengths[block])]
            sums = self._table[index].sum(axis=1)
            out[block] = sums / np.maximum(lengths[block, None], 1)
        return l2_normalize(out)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(s, s + n)`` for each (s, n), without a Python loop."""
    total = int(lengths.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
    return np.arange(total, dtype=np.int64) + offsets
