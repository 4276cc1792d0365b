"""Run configuration: read once at the edge (CLI flags or a TOML file) into a frozen object.

Metrics never read the environment or files; they receive the values they need as keyword
arguments from :class:`Config`. :meth:`Config.signature` renders the settings that change scores
so every score row records how it was computed.
"""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pipeline import __version__
from pipeline.schema import RECORD_SCHEMA

#: Phrases whose presence marks a response as an abstention (matched case-insensitively after
#: folding curly quotes and collapsing whitespace; see ``pipeline.metrics.abstention``).
DEFAULT_ABSTENTION_PHRASES: tuple[str, ...] = (
    "i don't know",
    "i do not know",
    "i don't have enough information",
    "i do not have enough information",
    "not enough information",
    "insufficient context",
    "insufficient information",
    "it is not mentioned in the document",
    "not mentioned in the document",
    "not mentioned in the provided",
    "the document does not mention",
    "the documents do not mention",
    "the context does not provide",
    "the provided context does not",
    "i can not answer the question because of the insufficient information in documents",
    "i cannot answer the question because of the insufficient information in documents",
    "i cannot answer",
    "i can't answer",
    "i can not answer",
    "unable to answer",
    "cannot be determined from",
    "no answer found",
)

#: Reference text that marks a question as unanswerable from its contexts.
DEFAULT_ABSTENTION_REFERENCE = "It is not mentioned in the document."
#: Reference text of rows that test whether a model detects insufficient context.
DEFAULT_INSUFFICIENT_CONTEXT_REFERENCE = "insufficient context"
#: ``question_type`` values that mark a question as unanswerable.
DEFAULT_UNANSWERABLE_TYPES: tuple[str, ...] = ("impossible", "unanswerable")


class ConfigError(ValueError):
    """The configuration file or a flag is invalid."""


@dataclass(frozen=True)
class Config:
    """Everything that changes how records are read or scored.

    ``columns`` maps a canonical column name to the name used in the input files
    (``{"response": "answer"}``); unmapped columns are read under their canonical names.
    ``metrics`` limits a run to the named metrics or families (``None``: all).
    """

    columns: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    abstention_phrases: tuple[str, ...] = DEFAULT_ABSTENTION_PHRASES
    abstention_reference: str = DEFAULT_ABSTENTION_REFERENCE
    insufficient_context_reference: str = DEFAULT_INSUFFICIENT_CONTEXT_REFERENCE
    unanswerable_types: tuple[str, ...] = DEFAULT_UNANSWERABLE_TYPES
    metrics: tuple[str, ...] | None = None
    #: Remove ``[n]`` citation markers from the response before answer metrics (EM, F1).
    strip_citation_markers: bool = True

    def __post_init__(self) -> None:
        unknown = sorted(set(self.columns) - set(RECORD_SCHEMA))
        if unknown:
            raise ConfigError(
                f"[columns] maps unknown canonical column(s) {unknown}; "
                f"known: {', '.join(RECORD_SCHEMA)}"
            )
        sources = list(self.columns.values())
        duplicated = sorted({s for s in sources if sources.count(s) > 1})
        if duplicated:
            raise ConfigError(f"[columns] maps several canonical columns to {duplicated}")
        if not self.abstention_phrases or any(not p.strip() for p in self.abstention_phrases):
            raise ConfigError("[abstention] phrases must be a non-empty list of non-empty strings")
        object.__setattr__(self, "columns", MappingProxyType(dict(self.columns)))

    def with_metrics(self, metrics: tuple[str, ...] | None) -> Config:
        """A copy restricted to ``metrics`` (names or families)."""
        return replace(self, metrics=metrics)

    def signature(self) -> str:
        """A compact, stable description of the scoring settings and package version.

        Example: ``rag-eval|v:0.1.0|norm:squad-v2|abst:3f2a9c1e|absref:It is not ...``.
        Column mappings and metric selection do not change any score, so they are left out.
        """
        phrases = "\n".join(self.abstention_phrases).encode()
        digest = hashlib.sha256(phrases).hexdigest()[:8]
        return (
            f"rag-eval|v:{__version__}|norm:squad-v2|"
            f"markers:{'strip' if self.strip_citation_markers else 'keep'}|cite:set|"
            f"abst:{len(self.abstention_phrases)}-{digest}|"
            f"absref:{self.abstention_reference}|icref:{self.insufficient_context_reference}|"
            f"unans:{','.join(self.unanswerable_types)}"
        )


_SECTIONS = {"columns", "abstention", "answer", "metrics"}


def load_config(path: str | Path | None = None, **overrides: Any) -> Config:
    """Read a TOML config file (or defaults when ``path`` is None) and apply keyword overrides.

    File layout::

        [columns]                 # canonical = "name in your files"
        response = "answer"

        [abstention]
        phrases = ["i don't know", "insufficient context"]
        reference = "It is not mentioned in the document."
        insufficient_context_reference = "insufficient context"
        unanswerable_types = ["impossible"]

        [answer]
        strip_citation_markers = true   # score "Paris [1]" as "Paris"

        [metrics]
        select = ["answer", "citation_f1"]
    """
    values: dict[str, Any] = {}
    if path is not None:
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise ConfigError(f"config file not found: {path}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
        unknown = sorted(set(data) - _SECTIONS)
        if unknown:
            raise ConfigError(f"{path}: unknown section(s) {unknown}; known: {sorted(_SECTIONS)}")
        values.update(_parse_sections(data, path))
    values.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name for f in fields(Config)}
    bad = sorted(set(values) - known)
    if bad:
        raise ConfigError(f"unknown config option(s) {bad}")
    return Config(**values)


def _parse_sections(data: Mapping[str, Any], path: Path) -> dict[str, Any]:
    values: dict[str, Any] = {}
    columns = data.get("columns", {})
    if not isinstance(columns, dict) or not all(isinstance(v, str) for v in columns.values()):
        raise ConfigError(f"{path}: [columns] must map canonical names to strings")
    if columns:
        values["columns"] = columns

    abstention = data.get("abstention", {})
    keys = {
        "phrases": "abstention_phrases",
        "reference": "abstention_reference",
        "insufficient_context_reference": "insufficient_context_reference",
        "unanswerable_types": "unanswerable_types",
    }
    unknown = sorted(set(abstention) - set(keys))
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in [abstention]: {unknown}")
    for key, name in keys.items():
        if key not in abstention:
            continue
        value = abstention[key]
        if key in ("phrases", "unanswerable_types"):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ConfigError(f"{path}: [abstention] {key} must be a list of strings")
            value = tuple(value)
        elif not isinstance(value, str):
            raise ConfigError(f"{path}: [abstention] {key} must be a string")
        values[name] = value

    answer = data.get("answer", {})
    unknown = sorted(set(answer) - {"strip_citation_markers"})
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in [answer]: {unknown}")
    if "strip_citation_markers" in answer:
        if not isinstance(answer["strip_citation_markers"], bool):
            raise ConfigError(f"{path}: [answer] strip_citation_markers must be true or false")
        values["strip_citation_markers"] = answer["strip_citation_markers"]

    metrics = data.get("metrics", {})
    if "select" in metrics:
        select = metrics["select"]
        if not isinstance(select, list) or not all(isinstance(v, str) for v in select):
            raise ConfigError(f"{path}: [metrics] select must be a list of names")
        values["metrics"] = tuple(select)
    return values
