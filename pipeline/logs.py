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


def configure_logging(*, verbose: bool, fmt: str) -> None:
    """Send the library's logs to stderr as text or JSON lines.

    Replaces the handler an earlier call installed and leaves other handlers (a test harness's,
    an embedding application's) alone.
    """
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonLineFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.set_name(_HANDLER_NAME)
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if verbose else logging.INFO)
