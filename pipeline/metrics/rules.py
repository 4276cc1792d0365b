"""Reading the TOML rule files of the composite families (bundled or user-supplied)."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any


def read_rules(path: Path | None, bundled: str) -> tuple[dict[str, Any], str]:
    """The parsed TOML of ``path`` (or of ``pipeline/data/<bundled>``) and its name for errors.

    Raises ``ValueError`` naming the file when it is not valid UTF-8 TOML.
    """
    if path is None:
        source = f"pipeline/data/{bundled}"
        data = resources.files("pipeline.data").joinpath(bundled).read_bytes()
    else:
        source, data = str(path), Path(path).read_bytes()
    try:
        return tomllib.loads(data.decode("utf-8")), source
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"{source}: not valid TOML: {error}") from error
