"""The bundled rule files are trusted at start-up: their regexes are checked here instead.

``load_rules`` does not compile the regexes of a bundled safety or relevance file (Python ``re``
and polars, about 60 ms of every run's start); a file the user names is checked in full. These
tests check every bundled file, under every preset, the way a named file is checked, and that
the trusted parse gives the same rules.
"""

from __future__ import annotations

import tomllib

import pytest

from pipeline.rules import load_rules, relevance, safety
from pipeline.rules.files import (
    PRESET_FILES,
    RELEVANCE_FILE,
    SAFETY_FILE,
    RuleFileError,
    bundled_file,
    read_bytes,
)

PRESETS = [None, *sorted(PRESET_FILES)]


@pytest.mark.parametrize("preset", PRESETS)
@pytest.mark.parametrize(("module", "name"), [(safety, SAFETY_FILE), (relevance, RELEVANCE_FILE)])
def test_a_bundled_file_passes_the_full_check_with_the_same_rules(module, name, preset):
    data, source = read_bytes(None, bundled_file(name, preset))
    raw = tomllib.loads(data.decode("utf-8"))
    checked = module.parse(raw, source)  # raises RuleFileError on a bad regex
    assert module.from_bytes(data, source, bundled=True) == checked


def test_load_rules_trusts_only_the_bundled_files(tmp_path):
    data, _ = read_bytes(None, SAFETY_FILE)
    bad = data.replace(b"[terms]\n", b'[terms]\nbroken = "(unclosed"\n', 1)
    assert bad != data
    named = tmp_path / "safety.toml"
    named.write_bytes(bad)
    with pytest.raises(RuleFileError, match=r"terms\.broken: invalid regular expression"):
        load_rules(safety_file=named)
    # The same bytes taken as a bundled file are not compiled (no error): the check is the
    # tests' job. The unused term changes no category.
    trusted = safety.from_bytes(bad, "pipeline/data/safety.toml", bundled=True)
    assert trusted.categories == safety.from_bytes(data, "pipeline/data/safety.toml").categories


def test_a_named_relevance_file_has_its_regexes_checked(tmp_path):
    data, _ = read_bytes(None, RELEVANCE_FILE)
    text = data.decode("utf-8")
    start = text.index("numbered_item")
    line_end = text.index("\n", start)
    named = tmp_path / "relevance.toml"
    named.write_text(text[:start] + "numbered_item = '(unclosed'" + text[line_end:])
    with pytest.raises(RuleFileError, match=r"steps\.numbered_item.*invalid regex"):
        load_rules(relevance_file=named)
