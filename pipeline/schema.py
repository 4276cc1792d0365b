"""The canonical evaluation-record schema and the output contract of ``scores.parquet``.

Every reader produces columns named as below (after the config's column mapping); validation
casts them to these dtypes or rejects the row with a reason. ``docs/input-formats.md`` documents
the same table for users.
"""

from __future__ import annotations

import difflib

import polars as pl

from pipeline.errors import InputError as InputError

REQUIRED_COLUMNS: tuple[str, ...] = ("id", "question", "reference", "response")

#: Canonical input columns and their dtypes (required ones first).
RECORD_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String(),
    "question": pl.String(),
    "reference": pl.String(),
    "response": pl.String(),
    "references": pl.List(pl.String()),
    "citations": pl.List(pl.Int64()),
    "gold_citations": pl.List(pl.Int64()),
    "contexts": pl.List(pl.String()),
    # Retrieval judgments (docs/retrieval.md): the id of each passage of ``contexts`` (same
    # length), the judged relevant document ids and their optional integer grades.
    "context_ids": pl.List(pl.String()),
    "relevant_ids": pl.List(pl.String()),
    "relevance": pl.List(pl.Int64()),
    "category": pl.String(),
    "model": pl.String(),
    "run": pl.String(),
    "noise_level": pl.Float64(),
    "question_type": pl.String(),
    "doc_id": pl.String(),
    "prompt_tokens": pl.Int64(),
    "completion_tokens": pl.Int64(),
    "total_tokens": pl.Int64(),
    "latency_ms": pl.Float64(),
    # ISO 639-1 language of the row; left out, detected from its script (pipeline.text.language).
    "lang": pl.String(),
    # RGB robustness suite (see docs/rgb.md); null on rows that are not RGB rows.
    "task": pl.String(),
    "language": pl.String(),
    "answer_groups": pl.List(pl.List(pl.String())),
    "counterfactual_answer": pl.String(),
}

#: The four RGB settings a row's ``task`` may name (Chen et al. 2023).
RGB_TASKS: tuple[str, ...] = (
    "noise_robustness",
    "negative_rejection",
    "information_integration",
    "counterfactual_robustness",
)
#: RGB tasks whose rows are checked against their ``answer_groups`` (all but negative rejection).
RGB_ANSWERED_TASKS: tuple[str, ...] = tuple(t for t in RGB_TASKS if t != "negative_rejection")

OPTIONAL_COLUMNS: tuple[str, ...] = tuple(c for c in RECORD_SCHEMA if c not in REQUIRED_COLUMNS)

#: Provenance columns every reader adds: the file a row came from and its 0-based position there.
SOURCE_COLUMN = "source"
ROW_COLUMN = "row_number"
PROVENANCE_SCHEMA: dict[str, pl.DataType] = {SOURCE_COLUMN: pl.String(), ROW_COLUMN: pl.Int64()}

#: Columns a reader adds only when it could not read some records of a file (a CSV row with the
#: wrong number of fields, a JSON string that is not valid Unicode): why, null on the records it
#: read (``line 7: expected 5 fields as in the header, got 3``), and the record as found in the
#: file, as JSON text. Validation rejects those rows with exactly that reason and ``raw``.
READER_PROBLEM = "__reader_problem"
READER_RAW = "__reader_raw"
READER_SCHEMA: dict[str, pl.DataType] = {READER_PROBLEM: pl.String(), READER_RAW: pl.String()}

#: Key columns carried into ``scores.parquet`` ahead of the metric columns.
KEY_COLUMNS: tuple[str, ...] = (
    "id",
    "model",
    "run",
    "category",
    "noise_level",
    "question_type",
    "task",
    "language",
    "lang",
    SOURCE_COLUMN,
    ROW_COLUMN,
)

#: Schema of ``rejected.parquet``: one row per input row that was not scored.
REJECTED_SCHEMA: dict[str, pl.DataType] = {
    SOURCE_COLUMN: pl.String(),
    ROW_COLUMN: pl.Int64(),
    "id": pl.String(),
    "reason": pl.String(),
    "raw": pl.String(),
}


class MissingColumnError(InputError):
    """A required column is absent from an input file."""

    def __init__(self, column: str, path: str, available: list[str]) -> None:
        self.column = column
        self.path = path
        close = difflib.get_close_matches(column, available, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        mapping = close[0] if close else "..."
        super().__init__(
            f"{path}: required column {column!r} is missing ({hint}"
            f"columns present: {', '.join(available) or 'none'}; "
            f"map a differently named column with [columns] {column} = \"{mapping}\" in the "
            f"config or --column {column}={mapping})"
        )
