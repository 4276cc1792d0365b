"""The rule loader (pipeline.rules): typed rules from the four composite TOML files, read once at
the configuration edge; a malformed file fails with an error naming the file and the key."""

from __future__ import annotations

import hashlib
import pickle
from importlib import resources
from pathlib import Path

import pytest

from pipeline.config import Config, ConfigError, load_config
from pipeline.rules import (
    OverallRules,
    QualityRules,
    RelevanceRules,
    RuleFileError,
    SafetyRules,
    load_rules,
)

FILES = ("quality", "safety", "relevance", "overall")


def bundled(name: str) -> str:
    return resources.files("pipeline.data").joinpath(f"{name}.toml").read_text(encoding="utf-8")


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_bundled_rules_are_typed_and_shared_with_the_family_loaders():
    rules = load_rules()
    assert isinstance(rules.quality, QualityRules)
    assert isinstance(rules.safety, SafetyRules)
    assert isinstance(rules.relevance, RelevanceRules)
    assert isinstance(rules.overall, OverallRules)
    assert rules.quality.source == "pipeline/data/quality.toml"
    # Parsed once per content: every loader of the same bytes returns the same object.
    assert rules.quality is QualityRules.load() is load_rules().quality
    assert rules.safety is SafetyRules.load()
    assert rules.relevance is RelevanceRules.load()
    assert rules.overall is OverallRules.load()


def test_digest_is_the_signatures_composite_digest():
    digest = hashlib.sha256()
    for name in FILES:
        digest.update(hashlib.sha256(bundled(name).encode()).digest())
    assert load_rules().digest == digest.hexdigest()[:8] == Config().composite_digest()
    assert f"|comp:{load_rules().digest}|" in Config().signature()


def test_config_reads_its_rule_files(tmp_path):
    text = bundled("quality").replace("max_words = 300", "max_words = 200")
    path = write(tmp_path, "quality.toml", text)
    config = Config(quality_rules_file=path)
    assert config.rules is config.rules  # read once per config
    assert config.rules.quality.length.max_words == 200
    assert config.rules.quality.source == str(path)
    assert config.rules.safety is Config().rules.safety
    assert config.composite_digest() != Config().composite_digest()


def test_a_changed_file_is_read_again(tmp_path):
    path = write(tmp_path, "quality.toml", bundled("quality"))
    assert load_rules(quality_file=path).quality.length.min_words == 5
    path.write_text(bundled("quality").replace("min_words = 5", "min_words = 7"), "utf-8")
    assert load_rules(quality_file=path).quality.length.min_words == 7


def test_config_pickles_without_its_loaded_rules(tmp_path):
    config = Config()
    assert config.rules.relevance.default_category == "Factual"
    copy = pickle.loads(pickle.dumps(config))
    assert copy == config
    assert copy.rules.digest == config.rules.digest


@pytest.mark.parametrize(
    ("family", "old", "new", "key"),
    [
        ("quality", "min_words = 5", 'min_words = "five"', "min_words"),
        ("quality", "scale = 20.0", "scale = 20.0\nscael = 1", "scael"),
        ("safety", "safety_weight = 0.7", "safety_weight = true", "scoring.safety_weight"),
        ("relevance", "divisor = 8", "divisor = 0", "steps.divisor"),
        ("overall", "decimals = 2", "decimals = -1", "decimals"),
        ("overall", "[passing]", "[passing", "not valid TOML"),
    ],
)
def test_malformed_file_names_file_and_key(tmp_path, family, old, new, key):
    text = bundled(family)
    assert old in text
    path = write(tmp_path, f"bad_{family}.toml", text.replace(old, new, 1))
    with pytest.raises(RuleFileError) as error:
        load_rules(**{f"{family}_file": path})
    message = str(error.value)
    assert message.startswith(f"{path}: ") and key in message, message
    assert isinstance(error.value, ValueError)

    config = write(tmp_path, "config.toml", f'[composite]\n{family} = "{path.name}"\n')
    with pytest.raises(ConfigError) as config_error:
        load_config(config)
    assert str(path) in str(config_error.value) and key in str(config_error.value)
