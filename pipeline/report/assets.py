"""The page's inline assets: its stylesheet (:data:`STYLE`) and its only script
(:data:`SCRIPT`, a constant that filters a table's rows by their text), and the
Content-Security-Policy source that allows that script alone, by its SHA-256
(:func:`script_hash`). No data ever goes inside the ``<script>`` element."""

from __future__ import annotations

import base64
import hashlib

#: The page's only script: filters the rows of the table named by a search box's
#: ``data-filter`` attribute by their text. It reads nothing but the DOM's text content.
SCRIPT = """
(function () {
  "use strict";
  var boxes = document.querySelectorAll("input[data-filter]");
  Array.prototype.forEach.call(boxes, function (box) {
    var table = document.getElementById(box.getAttribute("data-filter"));
    var count = document.getElementById(box.getAttribute("data-count"));
    if (!table) { return; }
    var rows = table.tBodies[0].rows;
    function update() {
      var needle = box.value.trim().toLowerCase();
      var shown = 0;
      for (var i = 0; i < rows.length; i++) {
        var hit = needle === "" || rows[i].textContent.toLowerCase().indexOf(needle) !== -1;
        rows[i].hidden = !hit;
        if (hit) { shown++; }
      }
      if (count) { count.textContent = shown + " of " + rows.length + " rows"; }
    }
    box.addEventListener("input", update);
    update();
  });
})();
"""

STYLE = """
:root { --fg: #1d2430; --muted: #5b6576; --line: #d9dee7; --bg: #ffffff; --band: #f4f6fa;
  --zebra: #fafbfd; --accent: #0b5cad; --good: #e6f4ea; --bad: #fdecea; --page: 1320px; }
* { box-sizing: border-box; }
html { scroll-padding-top: 3.5rem; }
body { margin: 0; color: var(--fg); background: var(--bg); line-height: 1.45;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  "Noto Sans", "Liberation Sans", sans-serif; }
header, main { max-width: var(--page); margin: 0 auto; padding: 0 1.25rem; }
header { padding-top: 1.5rem; }
h1 { font-size: 1.6rem; margin: 0 0 0.75rem; overflow-wrap: anywhere; }
h2 { font-size: 1.25rem; margin: 2.25rem 0 0.5rem; padding-top: 0.5rem;
  border-top: 1px solid var(--line); }
h3 { font-size: 1rem; margin: 1.25rem 0 0.25rem; }
nav { position: sticky; top: 0; z-index: 5; background: rgba(255,255,255,0.96);
  border-bottom: 1px solid var(--line); }
nav ul { max-width: var(--page); margin: 0 auto; padding: 0.5rem 1.25rem; list-style: none;
  display: flex; flex-wrap: wrap; gap: 0.25rem 1rem; font-size: 0.85rem; }
nav a { color: var(--accent); text-decoration: none; }
nav a:hover { text-decoration: underline; }
dl.meta { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: 0.2rem 1rem;
  margin: 0; font-size: 0.9rem; }
dl.meta dt { color: var(--muted); }
dl.meta dd { margin: 0; overflow-wrap: anywhere; }
code, .sig-text { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
  font-size: 0.8rem; overflow-wrap: anywhere; }
p.note, p.empty, p.summary { max-width: 75rem; }
p.note { color: var(--muted); font-size: 0.9rem; }
p.empty { color: var(--muted); font-style: italic; }
.table-wrap { max-width: 100%; max-height: 75vh; overflow: auto; border: 1px solid var(--line);
  border-radius: 4px; margin: 0.5rem 0 1rem; }
table { border-collapse: separate; border-spacing: 0; width: 100%; font-size: 0.85rem; }
th, td { padding: 0.35rem 0.6rem; border-bottom: 1px solid var(--line); text-align: left;
  vertical-align: top; white-space: nowrap; background: var(--bg); }
thead th { position: sticky; top: 0; z-index: 2; background: var(--band);
  white-space: normal; min-width: 3.5em; }
tbody tr:nth-child(even) td { background: var(--zebra); }
th:first-child, td:first-child { position: sticky; left: 0; z-index: 1;
  box-shadow: inset -1px 0 0 var(--line); white-space: normal; min-width: 8em; max-width: 13em;
  overflow-wrap: anywhere; }
thead th:first-child { z-index: 3; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
td.wrap, td.slice { white-space: normal; max-width: 12em; overflow-wrap: break-word; }
td.slice { min-width: 7em; }
.nowrap { white-space: nowrap; }
tbody tr.sig td { background: var(--good); }
tbody tr.sig.worse td { background: var(--bad); }
td .text { max-height: 14em; width: 26em; overflow: auto; white-space: pre-wrap;
  overflow-wrap: anywhere; }
td .text p { margin: 0 0 0.35em; }
td .text p.claim { white-space: normal; border-left: 3px solid #d55e00; padding-left: 0.4em; }
.sub, .lbl { color: var(--muted); font-size: 0.78rem; }
.lbl { font-weight: 600; margin-right: 0.3em; }
q { font-style: italic; }
figure.chart { margin: 0.75rem 0 1.25rem; }
figure.chart svg { width: 100%; max-width: 72rem; height: auto; display: block; }
figcaption { color: var(--muted); font-size: 0.85rem; margin-top: 0.25rem; max-width: 75rem; }
.search { display: flex; flex-wrap: wrap; gap: 0.75rem; align-items: center; margin: 0.5rem 0; }
.search input { font: inherit; padding: 0.35rem 0.6rem; width: min(28rem, 100%);
  border: 1px solid var(--line); border-radius: 4px; }
.search span { color: var(--muted); font-size: 0.85rem; }
summary { cursor: pointer; }
details.sig summary { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
details.sig > div { margin: 0.25rem 0 0.25rem 1rem; }
details.fold { border: 1px solid var(--line); border-radius: 4px; margin: 0.5rem 0;
  padding: 0.4rem 0.75rem; }
details.fold > summary { font-weight: 600; }
details.fold > summary .sub { font-weight: normal; }
details.fold > figure.chart { margin-bottom: 0.5rem; }
#headline-table th, #headline-table td { padding: 0.35rem 0.3rem; }
#headline-table thead th { min-width: 0; hyphens: manual; font-size: 0.75rem; width: 3em; }
#headline-table thead th:first-child { width: auto; }
#headline-table th:first-child, #headline-table td:first-child { min-width: 6.5em;
  max-width: 11em; }
#headline-table .ci { display: block; font-size: 0.68rem; color: var(--muted);
  white-space: nowrap; }
#headline-table td.flag { white-space: normal; min-width: 4.5em; width: 6em; }
#headline-table td.warn { color: #b3261e; font-weight: 600; }
/* Below the width its widest column set needs (17 columns: about 1,160 px), the headline
   stacks: a model is a block of labelled cells. */
@media (max-width: 1260px) {
  #headline-table, #headline-table thead, #headline-table tbody, #headline-table thead tr {
    display: block; }
  .headline-wrap { max-height: none; }
  .headline-wrap:has(tbody tr:nth-child(7)) { max-height: 75vh; }
  #headline-table thead th { display: none; }
  #headline-table thead th:first-child { display: block; position: static; max-width: none;
    background: none; color: var(--muted); font-weight: normal; box-shadow: none; }
  #headline-table tbody tr { display: grid;
    grid-template-columns: repeat(auto-fill, minmax(8.5rem, 1fr));
    border-bottom: 2px solid var(--line); }
  #headline-table tbody td { border-bottom: 0; white-space: normal; text-align: left;
    min-width: 0; max-width: none; }
  #headline-table tbody td.flag { width: auto; }
  #headline-table tbody td:first-child { grid-column: 1 / -1; position: static;
    max-width: none; font-weight: 600; box-shadow: none; background: var(--band); }
  #headline-table tbody td:not(:first-child)::before { content: attr(data-label);
    display: block; color: var(--muted); font-size: 0.72rem; }
  #headline-table .ci { display: inline; }
}
@media (max-width: 900px) {
  header, main, nav ul { padding-left: 0.75rem; padding-right: 0.75rem; }
  table { font-size: 0.8rem; }
  th, td { padding: 0.3rem 0.45rem; }
}
"""


def script_hash() -> str:
    """The CSP source that allows :data:`SCRIPT` (``'sha256-…'``)."""
    digest = hashlib.sha256(SCRIPT.encode("utf-8")).digest()
    return f"'sha256-{base64.b64encode(digest).decode('ascii')}'"
