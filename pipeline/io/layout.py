"""Names of the files and directories a run writes: one place for every reader and writer.

An output directory (``evaluate --out``) holds :data:`SCORES_FILE`, :data:`REJECTED_FILE`,
:data:`TEXTS_FILE`, the statistics (:data:`INTERVALS_FILE`, :data:`COMPARISONS_FILE`),
:data:`DATABASE_FILE` and the list of further outputs (:data:`EXTRA_OUTPUTS_FILE`); a results
store holds one directory per run (:mod:`pipeline.store`).
"""

from __future__ import annotations

SCORES_FILE = "scores.parquet"
REJECTED_FILE = "rejected.parquet"
#: The texts behind each scored row (for exports and reports), keyed like ``scores.parquet``.
TEXTS_FILE = "texts.parquet"
INTERVALS_FILE = "intervals.parquet"
COMPARISONS_FILE = "comparisons.parquet"
#: The DuckDB database with the views, for other SQL clients.
DATABASE_FILE = "eval.duckdb"
#: Files made from the scores. A run into an output directory removes them when it puts its
#: new scores in place and then writes them again (not the statistics after ``--no-stats``), so
#: the directory never mixes two runs (docs/results-store.md, "Output directories").
DERIVED_FILES: tuple[str, ...] = (INTERVALS_FILE, COMPARISONS_FILE, DATABASE_FILE)
#: Further files written of a run into its directory (an HTML report, a comparison), one path
#: relative to the directory per line: the next run into the directory removes them.
EXTRA_OUTPUTS_FILE = ".rag-eval-outputs"
#: Columns of ``texts.parquet``: the key of a scored row, its texts and the passages it was
#: given (``contexts``), for the ``texts`` view, exports and reports. The identifying columns
#: (model, category, ...) are the scores' (the view joins them): written once, not twice.
TEXT_COLUMNS: tuple[str, ...] = (
    "source", "row_number", "id", "question", "reference", "response", "contexts",
)

# A results store (pipeline.store): STORE/eval_run=<RUN>/{scores/model=<M>/, rejected/, texts/,
# manifest.json, statistics}, runs being written under _staging/, failed runs under _failed/.
RUN_PARTITION = "eval_run"
MODEL_PARTITION = "model"
MANIFEST_FILE = "manifest.json"
SCORES_DIR = "scores"
REJECTED_DIR = "rejected"
TEXTS_DIR = "texts"
STAGING_DIR = "_staging"
FAILED_DIR = "_failed"
LOCK_FILE = "_lock"
#: Directory value of a null partition key (Hive's, which DuckDB and Spark read back as null).
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
#: Directory value of a model name too long or odd to be a directory name: this prefix and 32 hex
#: of its sha256 (:mod:`pipeline.io.partitioned`); the files then carry the name in
#: :data:`MODEL_NAME_COLUMN`.
HASHED_PREFIX = "__sha256_"
#: Column with the real model name in the files of a hashed partition (absent elsewhere).
MODEL_NAME_COLUMN = "model_name"
