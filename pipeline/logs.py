"""Logging set-up of the command line: plain text, or one JSON object per line for schedulers."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

LOG_FORMATS: tuple[str, ...] = ("text", "json")
_HANDLER_NAME = "rag-eval-cli"


class JsonLineFormatter(logging.Formatter):
    """``{"time", "level", "logger", "message"[, "exception"]}``, one object per line.

    A record's ``fields`` (a dict passed as ``extra={"fields": {...}}``) become top-level keys,
    e.g. ``phase`` and ``seconds`` of :mod:`pipeline.phases`.
    """

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update({key: value for key, value in fields.items() if key not in entry})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def log_level(verbosity: int, fmt: str) -> int:
    """The level of the command line's log handler.

    Quiet by default: a terminal gets warnings and errors, next to the result on stdout;
    ``-v`` adds info (phases, rows read), ``-vv`` debug. JSON lines are for a scheduler that
    records them, so they include info without ``-v``.

    >>> [logging.getLevelName(log_level(v, "text")) for v in (0, 1, 2)], log_level(0, "json")
    (['WARNING', 'INFO', 'DEBUG'], 20)
    """
    if verbosity >= 2:
        return logging.DEBUG
    if verbosity == 1 or fmt == "json":
        return logging.INFO
    return logging.WARNING


def configure_logging(*, verbosity: int, fmt: str) -> None:
    """Send the library's logs to stderr as text or JSON lines, at :func:`log_level`.

    Replaces the handler an earlier call installed and leaves other handlers (a test harness's,
    an embedding application's) alone: the level is the handler's, and the root logger passes
    info on to them as before (debug too with ``-vv``).
    """
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonLineFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.set_name(_HANDLER_NAME)
    level = log_level(verbosity, fmt)
    handler.setLevel(level)
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(min(level, logging.INFO))
