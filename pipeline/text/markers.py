"""Citation markers in response text: ``[3]``, ``[1, 2]``, ``[1; 4]``.

One pattern shared by citation parsing and stripping (:mod:`pipeline.metrics.qa.citation`), the
sentence splitter (:mod:`pipeline.text.sentences`) and the abstention checks.
"""

from __future__ import annotations

#: A bracketed group of citation numbers: ``[3]``, ``[1, 2]``, ``[1; 4]``.
CITATION_MARKER = r"\[\s*\d{1,9}(?:\s*[,;]\s*\d{1,9})*\s*\]"
