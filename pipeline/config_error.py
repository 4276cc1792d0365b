"""The error a bad configuration raises, and the hint its messages end with.

Below :mod:`pipeline.config` so that the definitions and the TOML parsing it builds on
(:mod:`pipeline.config_user_metrics`, :mod:`pipeline.config_file`) raise the same error;
``pipeline.config`` re-exports both names, and the command line finds :class:`ConfigError`
there (``pipeline.cli.USER_ERRORS``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class ConfigError(ValueError):
    """The configuration file or a flag is invalid."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or nothing.

    >>> did_you_mean("sellect", ["select"])
    " (did you mean 'select'?)"
    """
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""

