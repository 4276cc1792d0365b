"""Offline evaluation pipeline for LLM and RAG answers (vectorized metrics, DuckDB views).

The Python API (docs/python-api.md) is :mod:`pipeline.api`, whose names are importable from
here: :func:`score`, :func:`evaluate`, :func:`open_run`, :class:`Run`, :class:`Scored`, and the
decorator :func:`metric` of :mod:`pipeline.metrics.user`. They are imported on first use
(PEP 562), so ``import pipeline`` stays light and imports nothing above the bottom floor. The run
drivers are :mod:`pipeline.drivers`; no submodule is named after an API function, so
``pipeline.evaluate`` is the API's whatever else was imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.api import Run, Scored, evaluate, open_run, score
    from pipeline.metrics.user import metric

__version__ = "0.1.0"

__all__ = ["Run", "Scored", "__version__", "evaluate", "metric", "open_run", "score"]

#: Where each lazily imported name lives.
_LAZY = {
    "score": "pipeline.api",
    "evaluate": "pipeline.api",
    "open_run": "pipeline.api",
    "Run": "pipeline.api",
    "Scored": "pipeline.api",
    "metric": "pipeline.metrics.user",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
