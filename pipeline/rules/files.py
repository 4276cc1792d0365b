"""The bundled data files (``pipeline/data/``) and how a rule file is read: its bytes, its name
for error messages, its parsed TOML, and the digest that the score signature records."""

from __future__ import annotations

import hashlib
import tomllib
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

#: Rule files of the composite families.
QUALITY_FILE = "quality.toml"
SAFETY_FILE = "safety.toml"
RELEVANCE_FILE = "relevance.toml"
OVERALL_FILE = "overall.toml"
#: Stopword list and synonym groups of the keyword metrics.
STOPWORDS_FILE = "stopwords_en.txt"
SYNONYMS_FILE = "synonyms.tsv"
#: WordNet 3.0 tables of the enhanced-framework preset's keywords (pipeline.text.wordnet).
WORDNET_SENSES_FILE = "wordnet-3.0-senses.parquet"
WORDNET_EXCEPTIONS_FILE = "wordnet-3.0-exceptions.parquet"
#: Bundled files that a compat preset replaces with its own, ``pipeline/data/<preset>.<name>``
#: (docs/compat.md); a file named in the config still wins over the preset's.
PRESET_FILES: dict[str, frozenset[str]] = {
    "enhanced-framework": frozenset(
        {QUALITY_FILE, SAFETY_FILE, RELEVANCE_FILE, OVERALL_FILE, STOPWORDS_FILE, SYNONYMS_FILE}
    ),
}

_PACKAGE = "pipeline.data"


class RuleFileError(ValueError):
    """A rule file is malformed; the message names the file and the key."""


def bundled_file(name: str, preset: str | None) -> str:
    """The bundled file that stands for ``name`` under the compat ``preset`` (None: defaults).

    >>> bundled_file(QUALITY_FILE, "enhanced-framework"), bundled_file(QUALITY_FILE, None)
    ('enhanced-framework.quality.toml', 'quality.toml')
    """
    if preset is not None and name in PRESET_FILES.get(preset, frozenset()):
        return f"{preset}.{name}"
    return name


def read_bytes(path: Path | None, bundled: str) -> tuple[bytes, str]:
    """(bytes, name for error messages) of ``path``, or of ``pipeline/data/<bundled>``."""
    if path is None:
        return resources.files(_PACKAGE).joinpath(bundled).read_bytes(), f"pipeline/data/{bundled}"
    return Path(path).read_bytes(), str(path)


def read_text(path: Path | None, bundled: str) -> tuple[str, str]:
    """(UTF-8 text, name for error messages) of ``path``, or of ``pipeline/data/<bundled>``."""
    data, source = read_bytes(path, bundled)
    return data.decode("utf-8"), source


def parse_toml(data: bytes, source: str) -> dict[str, Any]:
    """The TOML document in ``data``; :class:`RuleFileError` naming ``source`` when invalid."""
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise RuleFileError(f"{source}: not valid TOML: {error}") from error


def files_digest(contents: Iterable[bytes], prefix: bytes = b"") -> str:
    """Eight hex digits of the SHA-256 of ``prefix`` and the SHA-256 of each file's bytes."""
    digest = hashlib.sha256(prefix)
    for data in contents:
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()[:8]
