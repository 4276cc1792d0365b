"""How much one record may hold (docs/input-integrity.md): :data:`MAX_RECORD_BYTES` of text
or of one JSON Lines line; a longer record is rejected with the reason. Read when used
(``record_limits.MAX_RECORD_BYTES``), so a test may set them on this module."""

from __future__ import annotations

#: Most bytes of one record: a line of JSON Lines, or the text of one row of any format
#: (question, reference, response, references and contexts together), about four million
#: tokens. A longer record is rejected with the reason (a JSON Lines line is skipped in bounded
#: reads, never held whole), so one absurd row cannot take the memory and time of the run: the
#: default metrics hold about 170 bytes per byte of one huge text at once (a 15 MB response:
#: 19 s and 2.6 GB on 2 cores). docs/input-integrity.md.
MAX_RECORD_BYTES = 16 * 2**20
#: Bytes read at a time where a file is scanned rather than held (whitespace, long lines).
SCAN_BYTES = 2**20
