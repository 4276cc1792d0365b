"""The static backend, token-budget batching, device selection and the embedding settings."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.config import DEFAULT_TAU_SIM, STATIC_TAU_SIM, Config, ConfigError, load_config
from pipeline.embed import CachedEmbedder, EmbeddingCache, backend_from_spec
from pipeline.embed.backends import (
    EmbeddingBackendError,
    MiniLMOnnxBackend,
    select_device,
    token_batches,
)

RGB = Path(__file__).resolve().parents[2] / "shared" / "data" / "rgb" / "en_fact.json"


@pytest.fixture(scope="module")
def static():
    from pipeline.embed.static import StaticBackend

    return StaticBackend()


# --- static backend ---------------------------------------------------------------------------

EDGE_TEXTS = [
    "The new movie is awesome", "Déjà-vu, it's 3.5% of U.S.A.'s GDP!", "東京は日本の首都です",
    "snake_case and CamelCase", "tabs\tand\nnew lines", "a\x00b control", "", "   ",
    "naïve café résumé", "x" * 150, "emoji 🙂 and © symbols", "(parens) [brackets] {braces}",
]


def test_static_uses_the_shipped_tokenizer(static):
    # BERT-uncased ids of "the new movie is awesome" / "de ##ja - vu": no [CLS]/[SEP] here.
    ids, lengths = static.token_ids(["The new movie is awesome", "Déjà-vu"])
    assert ids.tolist() == [1996, 2047, 3185, 2003, 12476, 2139, 3900, 1011, 24728]
    assert lengths.tolist() == [5, 4]


def test_static_token_ids_equal_the_tokenizer(static):
    texts = list(EDGE_TEXTS)
    if RGB.is_file():
        rows = [json.loads(line) for line in RGB.read_text(encoding="utf-8").splitlines()]
        texts += [p for r in rows[:40] for p in r["positive"] + r["negative"]]
    ids, lengths = static.token_ids(texts)
    expected = static._tokenizer.encode_batch(texts, add_special_tokens=False)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    for i, encoding in enumerate(expected):
        assert ids[starts[i]:starts[i + 1]].tolist() == encoding.ids[:254], texts[i]


#: cosine("The new movie is awesome", "The new movie is so great") with the bundled table
#: (MiniLM int8: 0.8920).
STATIC_MOVIE_COSINE = 0.9327041


def test_static_golden_cosine(static):
    a, b = static.encode(["The new movie is awesome", "The new movie is so great"])
    assert float(a.astype(np.float64) @ b.astype(np.float64)) == pytest.approx(
        STATIC_MOVIE_COSINE, abs=1e-4
    )


def test_static_vectors(static):
    vectors = static.encode(["A man is eating food.", "A man is eating a piece of bread.",
                             "The girl is carrying a baby.", "", "A man is eating food."])
    assert vectors.dtype == np.float32 and vectors.shape == (5, static.dim)
    np.testing.assert_allclose(np.linalg.norm(vectors[[0, 1, 2]], axis=1), 1.0, atol=1e-5)
    assert not vectors[3].any()  # no token: the zero vector, cosine 0 with anything
    np.testing.assert_array_equal(vectors[0], vectors[4])
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2]) + 0.2
    assert static.encode([]).shape == (0, static.dim)
    # Pooling order and block size change nothing: each text alone gives the same row.
    alone = np.vstack([static.encode([t]) for t in EDGE_TEXTS])
    np.testing.assert_allclose(static.encode(EDGE_TEXTS), alone, atol=1e-6)


def test_static_truncates_like_minilm(static):
    long = "word " * 300
    ids, lengths = static.token_ids([long, "word"])
    assert lengths.tolist() == [254, 1] and len(ids) == 255
    np.testing.assert_allclose(static.encode([long])[0], static.encode(["word " * 254])[0],
                               atol=1e-6)


def test_static_counts_tokens_and_is_cached_by_table(static, tmp_path):
    embedder = CachedEmbedder(static, EmbeddingCache(tmp_path))
    embedder.embed(pl.Series(["one two three", "one two three", "four"]), rows=2)
    assert (embedder.last.unique, embedder.last.tokens, embedder.last.rows) == (2, 4, 2)
    assert "table:" in static.model_id and f"dim:{static.dim}" in static.model_id


def test_static_agrees_with_minilm_on_ranking(static):
    minilm = MiniLMOnnxBackend(intra_op_threads=1)
    pairs = [("A man is eating food.", "A man is eating a piece of bread."),
             ("A man is eating food.", "The girl is carrying a baby."),
             ("The new movie is awesome", "The new movie is so great"),
             ("The new movie is awesome", "Stock markets fell sharply on Monday")]
    left, right = [a for a, _ in pairs], [b for _, b in pairs]
    s = (static.encode(left) * static.encode(right)).sum(axis=1)
    m = (minilm.encode(left) * minilm.encode(right)).sum(axis=1)
    # Related pairs score above unrelated ones for both models.
    assert min(s[0], s[2]) > max(s[1], s[3]) and min(m[0], m[2]) > max(m[1], m[3])


# --- MiniLM batching --------------------------------------------------------------------------

def test_token_batches():
    lengths = np.array([2, 3, 3, 8, 9])
    assert [b.tolist() for b in token_batches(lengths, 9, 4)] == [[0, 1, 2], [3], [4]]
    assert [b.tolist() for b in token_batches(lengths, 100, 2)] == [[0, 1], [2, 3], [4]]
    # A text longer than the budget still gets a batch of its own.
    assert [b.tolist() for b in token_batches(np.array([50]), 10, 4)] == [[0]]
    assert token_batches(np.array([], dtype=np.int64), 10, 4) == []
    lengths = np.sort(np.random.default_rng(0).integers(1, 257, size=500))
    batches = token_batches(lengths, 1024, 64)
    assert np.concatenate(batches).tolist() == list(range(500))
    assert all(len(b) * lengths[b[-1]] <= 1024 or len(b) == 1 for b in batches)


def test_minilm_token_budget_changes_nothing_and_counts_tokens():
    texts = ["Short.", "word " * 300, "A medium sized sentence here.", "Short.", "x y z " * 20]
    small = MiniLMOnnxBackend(batch_tokens=256, intra_op_threads=1)
    large = MiniLMOnnxBackend(batch_tokens=8192, intra_op_threads=1)
    np.testing.assert_allclose(small.encode(texts), large.encode(texts), atol=1e-5)
    # [CLS] + tokens + [SEP], truncated at 256.
    expected = sum(min(256, len(small._tokenizer.encode(t).ids)) for t in texts)
    assert small.tokens_seen == expected and expected > 256


# --- device -----------------------------------------------------------------------------------

def test_select_device():
    cpu_only = ["CPUExecutionProvider"]
    assert select_device("auto", cpu_only) == "cpu"
    assert select_device("cpu", ["CUDAExecutionProvider", *cpu_only]) == "cpu"
    with pytest.raises(EmbeddingBackendError, match="onnxruntime-gpu"):
        select_device("cuda", cpu_only)
    with pytest.raises(EmbeddingBackendError, match="unknown device"):
        select_device("tpu", cpu_only)


def _cuda_available() -> bool:
    try:
        import onnxruntime as ort
    except ImportError:
        return False
    from pipeline.embed.backends import _gpu_visible

    return "CUDAExecutionProvider" in ort.get_available_providers() and _gpu_visible()


@pytest.mark.skipif(not _cuda_available(), reason="no CUDA execution provider or no GPU")
def test_minilm_on_cuda_agrees_with_cpu():
    texts = ["The new movie is awesome", "The new movie is so great", "word " * 200]
    cpu = MiniLMOnnxBackend(device="cpu").encode(texts)
    gpu = backend_from_spec("minilm", device="auto")
    assert getattr(gpu, "device", None) == "cuda"
    np.testing.assert_allclose(gpu.encode(texts), cpu, atol=2e-2)


# --- settings ---------------------------------------------------------------------------------

def test_tau_defaults_to_the_backend_calibration(tmp_path):
    assert Config().tau_sim == DEFAULT_TAU_SIM
    static = Config(embedding_backend="static")
    assert static.tau_sim == STATIC_TAU_SIM
    assert f"emb:static|tau:{STATIC_TAU_SIM:g}|" in static.signature()
    assert Config(embedding_backend="static", tau_sim=0.5).tau_sim == 0.5
    path = tmp_path / "c.toml"
    path.write_text('[embedding]\nbackend = "static"\ndevice = "cpu"\nbatch_tokens = 4096\n'
                    'cache_float16 = true\n')
    config = load_config(path)
    assert (config.embedding_device, config.embedding_batch_tokens,
            config.embedding_cache_float16, config.tau_sim) == ("cpu", 4096, True, STATIC_TAU_SIM)
    assert load_config(None, embedding_backend="static").tau_sim == STATIC_TAU_SIM


def test_bad_embedding_settings():
    with pytest.raises(ConfigError, match="device"):
        Config(embedding_device="gpu")
    with pytest.raises(ConfigError, match="batch_tokens"):
        Config(embedding_batch_tokens=10)


def test_log_line_has_per_row_figures(caplog):
    from pipeline.embed import HashedNgramBackend

    embedder = CachedEmbedder(HashedNgramBackend(), EmbeddingCache(None))
    with caplog.at_level(logging.INFO, logger="pipeline.embed.cache"):
        embedder.embed(pl.Series(["a b", "c", "a b", "d"]), rows=2, label="semantic")
        embedder.log_total(rows=2)
    assert "embeddings: semantic: 4 texts, 3 unique" in caplog.text
    assert "1.50 unique texts and 0 tokens encoded per row of 2" in caplog.text
    assert "embeddings (run, hashed-ngram-lexical): 4 texts, 3 unique" in caplog.text
