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
        ("quality", 'unit = "letters"', 'unit = "bytes"', "unit"),
        ("quality", "single_sentence = 1.0", "single_sentence = 2.0", "single_sentence"),
        ("safety", "neutral_balance = 1.0", "neutral_balance = 1.5", "neutral_balance"),
        ("safety", "neutral_balance = 1.0", "neutral_balanse = 1.0", "neutral_balanse"),
        ("safety", "neutral_balance = 1.0", "only_categories = []", "only_categories"),
        ("relevance", 'word_unit = "word-characters"', 'word_unit = "x"', "depth.word_unit"),
        ("overall", "bleu = 0.05", "bleu = 0.05\nbleu_textbook = 0.0", "bleu_textbook"),
        ("overall", "bleu = 0.05", "blue = 0.05", "bleu"),
        ("overall", 'group = "accuracy"', "group = 1", "group"),
        ("overall", 'bias_separator = ", "', 'bias_separator = ", "\nbias_names = "x"',
         "bias_names"),
        ("overall", "template = ", "modes = { pass = 'Fine' }\npass_bands = []\ntemplate = ",
         "pass_bands"),
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


def test_preset_bundles_its_own_rule_files(tmp_path):
    """``[compat] preset = "enhanced-framework"`` reads pipeline/data/enhanced-framework.*.toml;
    a file named in ``[composite]`` still wins; the digest (``comp:``) names the files used."""
    preset = Config(compat_preset="enhanced-framework")
    assert preset.rules.quality.source == "pipeline/data/enhanced-framework.quality.toml"
    assert preset.rules.overall.bleu_input == "bleu_matched_orders"
    assert Config().rules.overall.bleu_input == "bleu"
    assert preset.composite_digest() != Config().composite_digest()
    assert f"|comp:{preset.composite_digest()}|" in preset.signature()
    path = write(tmp_path, "quality.toml", bundled("quality"))
    mine = Config(compat_preset="enhanced-framework", quality_rules_file=path)
    assert mine.rules.quality.source == str(path)
    assert mine.rules.safety is preset.rules.safety
    other = Config(compat_preset="rgb-app")  # a preset without rule files of its own
    assert other.composite_digest() == Config().composite_digest()


def test_overall_rules_weigh_the_named_bleu_variant(tmp_path):
    text = bundled("overall").replace("bleu = 0.05", "bleu_textbook = 0.05")
    rules = load_rules(overall_file=write(tmp_path, "overall.toml", text)).overall
    assert rules.bleu_input == "bleu_textbook"
    assert "bleu" not in rules.accuracy_weights
