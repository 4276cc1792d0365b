"""The report in a real browser (headless Chromium through Playwright).

Skipped when Chromium or Playwright is missing, except on CI (``CI=true``), where that is a
failure. The report is that of a small run compared with a copy of it in which one model got
worse, so every section is on the page (the run comparison too). Leaves full-page screenshots
in ``test-artifacts/``: ``report.png`` (1366 px), ``report-1400.png`` and ``report-800.png``,
and prints the page height at each width.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from test_report import EVIL_RESPONSES, build_run, copy_run

from pipeline.compare import compare
from pipeline.report import write_report

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "test-artifacts"
SCREENSHOT = ARTIFACTS / "report.png"
#: Headers that must be in view without scrolling their table, at every width tested.
KEY_COLUMNS = {
    "comparisons-table": ("Metric", "Slice", "Model A vs B", "A − B [95% CI]", "p adjusted",
                          "Significant"),
    "worst-table": ("Model", "Noise", "Category", "F1"),
    "run-comparison-table": ("Model", "Metric", "Slice", "B − A [95% CI]", "Change"),
    "regressed-table": ("Model", "ID", "Metric", "Change"),
}

#: For every table: its key headers (class "key") out of view with the box scrolled to the
#: left, and its first column out of view with the box scrolled to the right (it is sticky).
_HIDDEN = """
() => {
  const problems = [];
  for (const wrap of document.querySelectorAll(".table-wrap")) {
    const table = wrap.querySelector("table");
    const name = table.id || wrap.closest("section").id;
    const inside = (el) => {
      const box = wrap.getBoundingClientRect();
      const r = el.getBoundingClientRect();
      return r.width > 0 && r.left >= box.left - 1 && r.right <= box.right + 1;
    };
    wrap.scrollLeft = 0;
    for (const th of table.querySelectorAll("thead th.key")) {
      if (!inside(th)) { problems.push(name + ": " + th.textContent + " out of view"); }
    }
    wrap.scrollLeft = wrap.scrollWidth;
    const first = [table.querySelector("thead th"), table.querySelector("tbody td")];
    for (const cell of first) {
      if (cell && !inside(cell)) {
        problems.push(name + ": first column scrolled away (" + cell.textContent + ")");
      }
    }
    wrap.scrollLeft = 0;
  }
  return problems;
}
"""


#: The top of the page as a reader meets it: the headline table's overflow and every cell in
#: view, the order of the first sections, the per-example charts and the signature folded.
_LAYOUT = """
() => {
  const table = document.getElementById("headline-table");
  const wrap = table.parentElement;
  const box = wrap.getBoundingClientRect();
  const hidden = [...table.querySelectorAll("tbody td")].filter((td) => {
    const r = td.getBoundingClientRect();
    return !(r.width > 0 && r.left >= box.left - 1 && r.right <= box.right + 1);
  }).map((td) => td.getAttribute("data-label") + ": " + td.textContent);
  const folds = ["chart-exampleanswers", "chart-examplecitations", "chart-exampleheatmap"]
    .map((id) => {
      const details = document.getElementById(id).closest("details");
      return [id, details !== null && !details.open,
              document.getElementById(id).checkVisibility()];
    });
  const sig = document.querySelector("#summary details.sig");
  const summary = sig ? sig.querySelector("summary") : null;
  const line = summary ? parseFloat(getComputedStyle(summary).lineHeight) : 0;
  return {
    scrollWidth: table.scrollWidth, clientWidth: wrap.clientWidth, hidden: hidden,
    sections: [...document.querySelectorAll("header[id], main > section")].slice(0, 3)
      .map((e) => e.id),
    folds: folds,
    signatureFolded: sig !== null && !sig.open
      && sig.querySelector(":scope > div .sig-text") !== null
      && !sig.querySelector(":scope > div").checkVisibility(),
    summaryLines: summary ? summary.getBoundingClientRect().height / line : 0,
    height: document.documentElement.scrollHeight,
  };
}
"""


def _chromium() -> str:
    """The Chromium executable; skip (fail on CI) when it or Playwright is missing."""
    executable = shutil.which("chromium")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        executable = None
    if executable is None:
        message = "the browser test needs Playwright (pip install playwright) and `chromium`"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{message}; CI must install both (Debian package chromium)")
        pytest.skip(message)
    return executable


@pytest.fixture(scope="module")
def report_url(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The report of a small run with a run comparison against a worse copy of it."""
    _chromium()
    root = tmp_path_factory.mktemp("browser-run")
    before = build_run(root)
    after = copy_run(before, root / "after")
    scores = pl.read_parquet(after / "scores.parquet")
    model = sorted(scores["model"].drop_nulls().unique().to_list())[-1]
    scores.with_columns(
        pl.when(pl.col("model") == model).then(pl.col("answer_f1") * 0.1)
        .otherwise(pl.col("answer_f1")).alias("answer_f1")
    ).write_parquet(after / "scores.parquet")
    comparison = compare(before, after, resamples=50)
    target = write_report(after, root / "report.html", diff=comparison.deltas,
                          regressed=comparison.regressed)
    return target.resolve().as_uri()


def _open(browser: Any, url: str, width: int, errors: list[str], requests: list[str]) -> Any:
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.on("console",
            lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(url, wait_until="load")
    return page


def test_report_in_chromium(report_url: str) -> None:
    executable = _chromium()
    from playwright.sync_api import sync_playwright

    assert "<script>window.__pwned = 1</script>" in EVIL_RESPONSES
    errors: list[str] = []
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable,
                                    args=["--no-sandbox", "--headless"])
        try:
            page = _open(browser, report_url, 1366, errors, requests)

            assert errors == []
            assert [u for u in requests if u != report_url and not u.startswith("data:")] == []
            assert page.evaluate("typeof window.__pwned") == "undefined"
            assert page.evaluate("typeof window.__pwned2") == "undefined"

            # the per-example charts are folded: open every details element to see them all
            assert page.locator("details:not([open]) figure.chart").count() == 3
            page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            charts = page.locator("figure.chart > svg")
            assert charts.count() >= 10  # with the run comparison's chart
            for k in range(charts.count()):
                chart = charts.nth(k)
                assert chart.evaluate("e => e.childElementCount") > 0
                box = chart.bounding_box()
                assert box is not None and box["width"] > 0 and box["height"] > 0

            rows = page.locator("#worst-table tbody tr")
            total = rows.count()
            page.fill("#worst-table-search", "__pwned2")
            visible = page.locator("#worst-table tbody tr:not([hidden])")
            assert visible.count() == 1
            assert "__pwned2" in visible.first.inner_text()
            assert page.inner_text("#worst-count") == f"1 of {total} rows"
            page.fill("#worst-table-search", "")
            assert visible.count() == total

            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(SCREENSHOT), full_page=True)
            print(f"screenshot: {SCREENSHOT}")
        finally:
            browser.close()
    assert errors == []


@pytest.mark.parametrize("width", [1400, 800])
def test_report_fits_the_window(report_url: str, width: int) -> None:
    """No horizontal page scroll; tables scroll in their box with the key columns in view."""
    executable = _chromium()
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable,
                                    args=["--no-sandbox", "--headless"])
        try:
            page = _open(browser, report_url, width, errors, requests)
            ARTIFACTS.mkdir(exist_ok=True)
            screenshot = ARTIFACTS / f"report-{width}.png"
            page.screenshot(path=str(screenshot), full_page=True)
            print(f"screenshot: {screenshot}")

            scroll_width, inner_width = page.evaluate(
                "[document.documentElement.scrollWidth, window.innerWidth]"
            )
            assert scroll_width <= inner_width, f"the page scrolls sideways at {width} px"
            assert page.evaluate("document.body.scrollWidth") <= inner_width

            for table_id, titles in KEY_COLUMNS.items():
                marked = page.eval_on_selector_all(
                    f"#{table_id} thead th.key", "els => els.map(e => e.textContent)"
                )
                assert [t.replace("\xad", "") for t in marked] == list(titles), table_id
            assert page.evaluate(_HIDDEN) == []

            layout = page.evaluate(_LAYOUT)
            print(f"page height at {width} px: {layout['height']} px")
            # the headline fits: no sideways scroll in its box, every value in view
            assert layout["scrollWidth"] <= layout["clientWidth"], layout
            assert layout["hidden"] == []
            # the run comparison comes first, under the summary
            assert layout["sections"] == ["summary", "run-comparison", "headline"]
            # per-example charts are collapsed, the signature folded behind one line
            assert layout["folds"] == [[chart_id, True, False] for chart_id in (
                "chart-exampleanswers", "chart-examplecitations", "chart-exampleheatmap")]
            assert layout["signatureFolded"]
            assert 0 < layout["summaryLines"] < 1.5

            # every table box stays within the page
            for right in page.eval_on_selector_all(
                ".table-wrap", "els => els.map(e => e.getBoundingClientRect().right)"
            ):
                assert right <= inner_width
        finally:
            browser.close()
    assert errors == []
