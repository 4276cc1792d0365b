"""Configuration: TOML sections read once at the edge, clear errors, signature, and effects."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import records

from pipeline.config import Config, ConfigError, default_cache_dir, load_config
from pipeline.scoring import score_frame


def write(tmp_path: Path, text: str, name: str = "eval.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_use_the_xdg_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    config = load_config()
    assert config.embedding_cache_dir == tmp_path / "rag-eval" / "embeddings"
    assert default_cache_dir() == config.embedding_cache_dir
    assert (config.embedding_backend, config.tau_sim, config.rouge_stemmer) == (
        "minilm", 0.65, False)
    assert Config().embedding_cache_dir is None  # built in code: memory-only cache


def test_scoring_sections(tmp_path: Path) -> None:
    write(tmp_path, "run\n", "stop.txt")
    write(tmp_path, "car\tautomobile\n", "syn.tsv")
    path = write(tmp_path, """
[lexical]
rouge_stemmer = true
[keywords]
stopwords = "stop.txt"
synonyms = "syn.tsv"
[embedding]
backend = "hashed"
batch_size = 8
cache_dir = "cache"
[grounding]
tau_sim = 0.7
""")
    config = load_config(path)
    assert config.rouge_stemmer is True
    assert config.stopwords_file == tmp_path / "stop.txt"  # relative to the config file
    assert config.synonyms_file == tmp_path / "syn.tsv"
    assert (config.embedding_backend, config.embedding_batch_size) == ("hashed", 8)
    assert config.embedding_cache_dir == tmp_path / "cache"
    assert config.tau_sim == 0.7
    assert load_config(path, embedding_backend="minilm").embedding_backend == "minilm"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[lexical]\nstemmer = true\n", "unknown key"),
        ("[grounding]\ntau_sim = true\n", "wrong type"),
        ("[grounding]\ntau_sim = 1.5\n", "tau_sim must be in"),
        ("[embedding]\nbatch_size = 0\n", "batch_size"),
        ("[embedding]\nbackend = 3\n", "wrong type"),
        ("[embedding]\nbackend = \"nope\"\n", "is unknown"),
        ("[embedding]\nbackend = \"sentence-transformers: \"\n", "is unknown"),
        ("[keywords]\nstopwords = \"missing.txt\"\n", "file not found"),
        ("[reports]\n", "unknown section"),
    ],
)
def test_bad_settings_name_the_problem(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path, text))


def test_signature_records_every_scoring_setting(tmp_path: Path) -> None:
    base = Config().signature()
    assert "rouge:nostem" in base and "emb:minilm" in base and "tau:0.65" in base
    assert Config(rouge_stemmer=True).signature() != base
    assert Config(tau_sim=0.6).signature() != base
    assert Config(embedding_backend="hashed").signature() != base
    synonyms = write(tmp_path, "car\tautomobile\n", "syn.tsv")
    assert Config(synonyms_file=synonyms).signature() != base
    assert Config(embedding_cache_dir=tmp_path).signature() == base  # where, not how


def test_settings_change_scores(tmp_path: Path) -> None:
    rows = [{"reference": "the runners ran quickly", "response": "a runner runs quickly",
             "question": "who buys a car?"}]
    plain = score_frame(records(rows), Config(metrics=("rouge_1",))).collect()
    stemmed = score_frame(records(rows), Config(metrics=("rouge_1",), rouge_stemmer=True))
    assert stemmed.collect()["rouge_1"].item() > plain["rouge_1"].item()

    rows = [{"reference": "She bought a car", "response": "She bought an automobile"}]
    synonyms = write(tmp_path, "boat\tship\n", "syn.tsv")
    default = score_frame(records(rows), Config(metrics=("content_coverage",))).collect()
    custom = score_frame(
        records(rows), Config(metrics=("content_coverage",), synonyms_file=synonyms)
    ).collect()
    assert default["content_coverage"].item() == 1.0  # car ~ automobile in the bundled table
    assert custom["content_coverage"].item() == 0.5  # keywords buy, car: car is not matched

    rows = [{"reference": "x", "response": "Paris is the capital of France [1].",
             "contexts": ["Bananas grow in warm places."]}]
    for tau, supported in ((0.5, 0), (-1.0, 1)):
        out = score_frame(
            records(rows),
            Config(metrics=("n_supported",), embedding_backend="hashed", tau_sim=tau,
                   grounding_rule="cosine"),
        ).collect()
        assert out["n_supported"].item() == supported


def test_composite_rule_files_come_from_the_config(tmp_path: Path) -> None:
    from importlib import resources

    bundled = resources.files("pipeline.data").joinpath("quality.toml").read_text("utf-8")
    stricter = bundled.replace("min_words = 5", "min_words = 50")
    assert stricter != bundled
    write(tmp_path, stricter, "quality.toml")
    config = load_config(write(tmp_path, '[composite]\nquality = "quality.toml"\n'))
    assert config.quality_rules_file == tmp_path / "quality.toml"
    assert config.signature() != Config().signature()
    rows = [{"reference": "x", "response": "Paris is the capital city of France."}]
    default = score_frame(records(rows), Config(metrics=("length_ok",))).collect()
    custom = score_frame(records(rows), config.with_metrics(("length_ok",))).collect()
    assert (default["length_ok"].item(), custom["length_ok"].item()) == (1, 0)

    write(tmp_path, "[length]\nmin_words = 'five'\n", "broken.toml")
    with pytest.raises(ConfigError, match=r"broken\.toml"):
        load_config(write(tmp_path, '[composite]\nquality = "broken.toml"\n'))


def test_compat_preset_from_file_and_in_signature(tmp_path: Path) -> None:
    path = tmp_path / "compat.toml"
    path.write_text('[compat]\npreset = "rgb-app"\n', encoding="utf-8")
    config = load_config(path)
    assert config.compat_preset == "rgb-app"
    assert config.signature().endswith("|compat:rgb-app")
    # the defaults keep their signature: no compat field at all
    assert "compat" not in Config().signature()


def test_compat_preset_unknown_is_named(tmp_path: Path) -> None:
    path = tmp_path / "compat.toml"
    path.write_text('[compat]\npreset = "ragas"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\[compat\] preset 'ragas' is unknown: use one of "
                                          r"enhanced-framework, rgb-app, hotpot-gen"):
        load_config(path)
    path.write_text('[compat]\nname = "rgb-app"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown key 'name' in \[compat\]; known: preset"):
        load_config(path)
