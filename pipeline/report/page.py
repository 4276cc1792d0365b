"""The HTML page: one self-contained file with inline CSS, inline SVG charts and a small script.

Every string that comes from the data (model and category names, questions, references,
responses, signatures, paths) passes through :func:`esc` (``html.escape(..., quote=True)``);
chart text is escaped by matplotlib's SVG writer. No data ever goes inside the ``<script>``
element, whose content is a constant (:data:`SCRIPT`), and the page's Content-Security-Policy
allows that script alone (by its SHA-256) and no network access at all, so even a string that
slipped through escaping could neither run nor fetch anything.

The sections are built in :mod:`~pipeline.report.headline` (tables of numbers),
:mod:`~pipeline.report.figures` (charts), :mod:`~pipeline.report.comparisons` (model and run
comparisons) and :mod:`~pipeline.report.worst` (the worst items), from the elements of
:mod:`~pipeline.report.markup`; the style and script are :mod:`~pipeline.report.assets`.
This module lays them out in page order (:data:`SECTION_IDS`) under a navigation bar.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from pipeline.report.assets import SCRIPT, STYLE, script_hash
from pipeline.report.comparisons import REGRESSED_COLUMNS as REGRESSED_COLUMNS
from pipeline.report.comparisons import _comparisons, _run_comparison
from pipeline.report.data import RunData
from pipeline.report.figures import (
    _answers,
    _categories,
    _citations,
    _cost,
    _distributions,
    _failure_stages,
    _failures,
    _generation,
    _grounding,
    _noise,
    _profile,
    _rgb,
)
from pipeline.report.figures import grounding_thresholds as grounding_thresholds
from pipeline.report.figures import rgb_noise_with_ci as rgb_noise_with_ci
from pipeline.report.headline import _appendix, _header, _headline, _user_metrics
from pipeline.report.limits import (
    Limits,
    cap,
    capped_diff,
    section_id,
    with_notes,
)
from pipeline.report.markup import esc
from pipeline.report.worst import _worst
from pipeline.report.worst import unsupported_sentences as unsupported_sentences

#: Section ids in page order; ``run-comparison`` appears only when a run diff is given, and
#: then first, right under the summary: it is what a reader of a comparison came for.
SECTION_IDS = (
    "summary", "run-comparison", "headline", "answers", "citations", "distributions",
    "generation", "categories", "noise", "rgb", "grounding", "cost", "profile", "failures",
    "failure-stages", "user-metrics", "comparisons", "worst", "appendix",
)


def _nav(section_ids: Sequence[str]) -> str:
    titles = {
        "summary": "Summary", "headline": "Headline", "answers": "F1 vs EM",
        "citations": "Citations", "distributions": "Distributions",
        "generation": "Generation (6 plots)", "categories": "Categories",
        "noise": "Noise", "rgb": "RGB", "grounding": "Grounding", "cost": "Cost",
        "profile": "Profile", "failures": "Failures", "failure-stages": "Failure stages",
        "user-metrics": "Your metrics",
        "comparisons": "Comparisons",
        "run-comparison": "Run comparison", "worst": "Worst items", "appendix": "Appendix",
    }
    links = "".join(f'<li><a href="#{s}">{titles[s]}</a></li>' for s in section_ids)
    return f'<nav aria-label="Sections"><ul>{links}</ul></nav>'


def render(
    data: RunData,
    *,
    diff: pl.DataFrame | None = None,
    regressed: pl.DataFrame | None = None,
    title: str | None = None,
    limits: Limits = Limits(),  # noqa: B008 - frozen
) -> str:
    """The complete HTML document for ``data``; a run comparison when ``diff`` is given (its
    regressed items too when ``regressed`` is), first, under the summary. Charts, comparisons
    and worst items draw at most the models and categories of ``limits``, the per-example
    charts at most ``limits.examples`` rows per model (:mod:`pipeline.report.limits`)."""
    title = title or f"Evaluation report: {Path(data.out_dir).resolve().name}"
    capped = cap(data, limits)
    drawn = capped.data
    total = None if data.comparisons is None else data.comparisons.height
    sections = [
        *([_run_comparison(capped_diff(diff, capped, data), regressed, drawn.models,
                           data.user_metrics)]
          if diff is not None else []),
        _headline(data), _answers(data), _citations(data), _distributions(drawn),
        _generation(drawn, limits.examples),
        _categories(drawn), _noise(drawn), _rgb(drawn), _grounding(drawn), _cost(drawn),
        _profile(drawn), _failures(drawn), _failure_stages(drawn), _user_metrics(data),
        _comparisons(drawn, limits.comparison_rows, total),
        _worst(drawn, limits.text_chars), _appendix(data),
    ]
    sections = [with_notes(s, capped.notes.get(section_id(s), [])) for s in sections]
    ids = [s for s in SECTION_IDS if diff is not None or s != "run-comparison"]
    csp = (f"default-src 'none'; script-src {script_hash()}; style-src 'unsafe-inline'; "
           "img-src data:; base-uri 'none'; form-action 'none'")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        f"<title>{esc(title)}</title><style>{STYLE}</style></head>\n<body>"
        f"{_nav(ids)}{_header(data, title)}<main>\n{chr(10).join(sections)}\n</main>"
        f"<script>{SCRIPT}</script></body></html>\n"
    )
