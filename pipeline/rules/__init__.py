"""Rule files of the composite families, read once at the configuration edge.

:func:`load_rules` reads the quality, safety, relevance and overall TOML files (the bundled
``pipeline/data/*.toml`` or user files named by ``[composite]`` in the config) into typed,
frozen dataclasses (:class:`~pipeline.rules.quality.QualityRules`,
:class:`~pipeline.rules.safety.SafetyRules`, :class:`~pipeline.rules.relevance.RelevanceRules`,
:class:`~pipeline.rules.overall.OverallRules`). A malformed file raises
:class:`~pipeline.rules.files.RuleFileError` naming the file and the key. The metric modules
receive these objects as arguments and read no file themselves.

This package sits on the configuration floor: it imports nothing from ``pipeline`` above it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pipeline.rules import overall, quality, relevance, safety
from pipeline.rules.files import (
    OVERALL_FILE,
    QUALITY_FILE,
    RELEVANCE_FILE,
    SAFETY_FILE,
    RuleFileError,
    bundled_file,
    files_digest,
    read_bytes,
)
from pipeline.rules.overall import OverallRules
from pipeline.rules.quality import QualityRules
from pipeline.rules.relevance import RelevanceRules
from pipeline.rules.safety import SafetyRules

__all__ = [
    "OverallRules",
    "QualityRules",
    "RelevanceRules",
    "RuleFileError",
    "RuleSet",
    "SafetyRules",
    "load_rules",
]


@dataclass(frozen=True)
class RuleSet:
    """The rules of the four composite families and the digest of the files they came from."""

    quality: QualityRules
    safety: SafetyRules
    relevance: RelevanceRules
    overall: OverallRules
    #: Eight hex digits over the bytes of the four files (``comp:`` in the score signature).
    digest: str


def load_rules(
    quality_file: Path | None = None,
    safety_file: Path | None = None,
    relevance_file: Path | None = None,
    overall_file: Path | None = None,
    *,
    preset: str | None = None,
) -> RuleSet:
    """The four rule files (``None``: the bundled one, or the compat ``preset``'s own bundled
    file where it has one), each read once and parsed once per content; :class:`RuleFileError`
    names the file and the key of a malformed one. The regexes of a bundled file are not
    compiled to check them (the tests do: ``tests/test_rules_bundled.py``), those of a named
    file are.

    >>> rules = load_rules()
    >>> rules.quality.length.max_words, rules.relevance.default_category
    (300, 'Factual')
    """
    files = [
        read_bytes(None if path is None else Path(path), bundled_file(bundled, preset))
        for path, bundled in (
            (quality_file, QUALITY_FILE),
            (safety_file, SAFETY_FILE),
            (relevance_file, RELEVANCE_FILE),
            (overall_file, OVERALL_FILE),
        )
    ]
    (q, q_src), (s, s_src), (r, r_src), (o, o_src) = files
    return RuleSet(
        quality=quality.from_bytes(q, q_src),
        safety=safety.from_bytes(s, s_src, bundled=safety_file is None),
        relevance=relevance.from_bytes(r, r_src, bundled=relevance_file is None),
        overall=overall.from_bytes(o, o_src),
        digest=files_digest(data for data, _ in files),
    )
