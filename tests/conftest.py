"""Shared test helpers: building canonical record frames with few keystrokes."""

from __future__ import annotations

import os
from typing import Any

import polars as pl
import pytest
from matplotlib.figure import Figure

from pipeline.report import charts, hotpot_charts
from pipeline.schema import PROVENANCE_SCHEMA, RECORD_SCHEMA

#: Fixtures are data and example packages (the plug-in package is tested installed), not tests.
collect_ignore = ["fixtures"]


#: Share of each property test's examples that a run draws: ``RAG_EVAL_TEST_EXAMPLES`` (``make
#: test`` sets 0.5; ``make test-thorough`` and a plain ``pytest`` draw them all).
EXAMPLES_SHARE = float(os.environ.get("RAG_EVAL_TEST_EXAMPLES", "1"))
#: Fewest examples a property test draws, whatever the share.
MIN_EXAMPLES = 10


def examples(n: int) -> int:
    """``max_examples`` of a property test written for ``n`` examples, under
    :data:`EXAMPLES_SHARE` (never fewer than :data:`MIN_EXAMPLES`, never more than ``n``).

    >>> examples(100) == max(10, min(100, round(100 * EXAMPLES_SHARE)))
    True
    """
    return max(min(n, MIN_EXAMPLES), min(n, round(n * EXAMPLES_SHARE)))


def records(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """A frame with every canonical column (missing ones null) and provenance columns."""
    filled = []
    for i, row in enumerate(rows):
        full = {name: row.get(name) for name in RECORD_SCHEMA}
        full["id"] = row.get("id", f"r{i}")
        full["question"] = row.get("question", "q?")
        full["source"] = row.get("source", "test.jsonl")
        full["row_number"] = i
        filled.append(full)
    return pl.DataFrame(filled, schema={**RECORD_SCHEMA, **PROVENANCE_SCHEMA})


@pytest.fixture
def make_records():
    return records


@pytest.fixture(autouse=True, scope="session")
def _isolated_embedding_cache(tmp_path_factory: pytest.TempPathFactory):
    """Point the default embedding cache at a temporary folder for the whole test session.

    ``load_config`` reads ``XDG_CACHE_HOME`` at the configuration edge; tests must neither read
    nor fill the developer's real cache. The workers of one ``pytest -n`` run share the folder
    (the cache is safe for concurrent runs: shards are written atomically under unique names),
    so a text the sample's runs embed is encoded once per run of the suite, not once per worker;
    a test that counts hits or misses gives its own ``--cache-dir``.
    """
    patch = pytest.MonkeyPatch()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        cache = tmp_path_factory.getbasetemp().parent / "xdg-cache"
        cache.mkdir(exist_ok=True)
    else:
        cache = tmp_path_factory.mktemp("xdg-cache")
    patch.setenv("XDG_CACHE_HOME", str(cache))
    yield
    patch.undo()


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Figure]]:
    """The figures the charts save (through the real :func:`~pipeline.report.charts.to_svg`)."""
    figures: list[tuple[str, Figure]] = []
    real = charts.to_svg

    def capture(fig: Figure, chart_id: str) -> str:
        figures.append((chart_id, fig))
        return real(fig, chart_id)

    monkeypatch.setattr(charts, "to_svg", capture)
    monkeypatch.setattr(hotpot_charts, "to_svg", capture)
    return figures


#: The slowest test files, longest first (their summed test times in a run of the suite,
#: 83 s down to 17 s), started first: `make test` runs three workers that each take whole files
#: (`-n 3 --dist loadfile --no-loadscope-reorder`), and a long file picked up last keeps one
#: worker busy alone. Without `--no-loadscope-reorder`, xdist queues the files by their number
#: of tests instead, and files of one long test (the README's tour, the docs' Python blocks)
#: came last: one worker ran alone for the last 23-30 s.
SLOW_FIRST: tuple[str, ...] = (
    "test_spark.py", "test_report.py", "test_store.py", "test_api.py", "test_store_faults.py",
    "test_user_metrics.py", "test_views.py", "test_compat_enhanced_framework.py",
    "test_exit_codes_faults.py", "test_stats_scale.py", "test_other_columns.py",
    "test_stats_atomic.py", "test_bleu_tokenizers.py", "test_report_browser.py", "test_cli.py",
    "test_stale_outputs.py", "test_readme_tour.py", "test_docs_python_api.py",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: k for k, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: files keep order
