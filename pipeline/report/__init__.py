"""``rag-eval report``: one self-contained HTML file that presents an evaluation run.

>>> from pipeline.report import write_report   # doctest: +SKIP
>>> write_report(Path("out/run1"), Path("report.html"))   # doctest: +SKIP

The page needs no network: CSS and a small filter script are inline, charts are inline SVG
drawn with matplotlib, and a Content-Security-Policy forbids every fetch. It is deterministic:
the same output directory gives the same bytes. Sections and their sources are described in
``docs/report.md``; :mod:`pipeline.report.data` reads the views and statistics files,
:mod:`pipeline.report.charts` draws, :mod:`pipeline.report.page` writes the HTML.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipeline.io.atomic import atomic_path
from pipeline.report.data import DIFF_COLUMNS, check_columns, load_run
from pipeline.report.limits import Limits
from pipeline.report.page import REGRESSED_COLUMNS, SECTION_IDS, render

__all__ = ["SECTION_IDS", "Limits", "write_report"]


def write_report(
    out_dir: Path,
    target: Path,
    *,
    diff: pl.DataFrame | None = None,
    regressed: pl.DataFrame | None = None,
    title: str | None = None,
    limits: Limits | None = None,
) -> Path:
    """Write the HTML report of the run in ``out_dir`` to ``target`` atomically; return it.

    ``diff`` (columns model, metric, slice, the typed slice columns, mean_a, mean_b, delta,
    ci_low, ci_high: ``Comparison.deltas`` of :func:`pipeline.compare.compare`) adds a "Run
    comparison" section: a chart of the per-slice changes, then the changes, regressions
    first, without the rows where both runs agree. ``regressed`` (``Comparison.regressed``:
    id, model, noise_level, task, metric, before, after) lists the regressed items there too.
    ``title`` defaults to "Evaluation report: " and the directory name. ``limits`` caps the
    models, categories and comparison rows the sections draw (:mod:`pipeline.report.limits`;
    each capped section says what it left out).
    """
    if diff is not None:
        check_columns(diff, DIFF_COLUMNS, "the run comparison")
    if regressed is not None:
        if diff is None:
            raise ValueError("regressed items are shown only with a run comparison (diff=)")
        check_columns(regressed, REGRESSED_COLUMNS, "the regressed items")
    document = render(load_run(Path(out_dir)), diff=diff, regressed=regressed, title=title,
                      limits=limits or Limits())
    target = Path(target)
    with atomic_path(target) as tmp:
        tmp.write_text(document, encoding="utf-8")
    return target
