"""The report in a real browser (headless Chromium through Playwright).

Skipped when Chromium or Playwright is missing, except on CI (``CI=true``), where that is a
failure. Leaves a full-page screenshot at ``test-artifacts/report.png``.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from test_report import EVIL_RESPONSES, build_run

from pipeline.report import write_report

REPO = Path(__file__).resolve().parent.parent
SCREENSHOT = REPO / "test-artifacts" / "report.png"


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


def test_report_in_chromium(tmp_path_factory: pytest.TempPathFactory) -> None:
    executable = _chromium()
    from playwright.sync_api import sync_playwright

    assert "<script>window.__pwned = 1</script>" in EVIL_RESPONSES
    root = tmp_path_factory.mktemp("browser-run")
    target = write_report(build_run(root), root / "report.html")
    url = target.resolve().as_uri()

    errors: list[str] = []
    requests: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable,
                                    args=["--no-sandbox", "--headless"])
        try:
            page = browser.new_page(viewport={"width": 1366, "height": 900})
            page.on("console",
                    lambda m: errors.append(f"console: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(f"pageerror: {exc}"))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(url, wait_until="load")

            assert errors == []
            assert [u for u in requests if u != url and not u.startswith("data:")] == []
            assert page.evaluate("typeof window.__pwned") == "undefined"
            assert page.evaluate("typeof window.__pwned2") == "undefined"

            charts = page.locator("figure.chart > svg")
            assert charts.count() >= 9
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

            SCREENSHOT.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(SCREENSHOT), full_page=True)
            print(f"screenshot: {SCREENSHOT}")
        finally:
            browser.close()
    assert errors == []
