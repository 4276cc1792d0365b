"""Read the legacy two-file formats: a predictions file plus a references (gold) file.

Both files are JSON arrays of objects. The format is told apart by the keys:

* **Format 1** (objects have ``question_id``): ``{question_id, doc_id, question, type, answer}``
  in both files, matched by ``question_id`` (a string, or an integer read as its decimal text).
  ``id`` = question_id, ``response`` = the prediction's answer, ``reference`` = the reference's
  answer; ``question``, ``question_type`` (from ``type``) and ``doc_id`` come from the references
  file when it has the field, else from the predictions file. Unmatched rows are returned as
  rejected (``prediction without reference``, ``reference without prediction``), as are rows
  without a usable ``question_id`` and repeated question ids in the references file.
* **Format 2** (objects have ``answer`` and ``citations``, no ``question_id``): matched by
  position, so both files must have the same length. ``id`` = the 0-based position as text,
  ``response`` / ``citations`` from the predictions, ``reference`` / ``gold_citations`` from the
  gold file, and ``question`` = ``""`` because the format has no question text.

``model`` is the prediction's ``model`` field where present, else the predictions file's stem.
The column mapping of the config does not apply: these formats have fixed field names.
A field read that holds text UTF-8 cannot encode (a lone surrogate, ``"\\ud800"``) makes its
object a rejected row, as in the other JSON readers: unmatched and unusable objects get the
problem added to their reason, matched records carry it as a reader problem
(:data:`~pipeline.schema.READER_PROBLEM`) that validation rejects them with.
The records returned still need :func:`pipeline.validate.validate_records`.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.config import Config
from pipeline.io.readers import (
    check_file,
    json_columns,
    json_kind,
    load_json_array,
    without_lone_surrogates,
)
from pipeline.schema import (
    READER_PROBLEM,
    READER_RAW,
    RECORD_SCHEMA,
    REJECTED_SCHEMA,
    ROW_COLUMN,
    SOURCE_COLUMN,
    InputError,
)

log = logging.getLogger(__name__)

#: Legacy field -> canonical column, per file and format.
QA_PREDICTION_FIELDS: dict[str, str] = {
    "answer": "response",
    "question": "question",
    "type": "question_type",
    "doc_id": "doc_id",
    "model": "model",
}
QA_REFERENCE_FIELDS: dict[str, str] = {
    "answer": "reference",
    "question": "question",
    "type": "question_type",
    "doc_id": "doc_id",
}
CITED_PREDICTION_FIELDS: dict[str, str] = {
    "answer": "response",
    "citations": "citations",
    "model": "model",
}
CITED_GOLD_FIELDS: dict[str, str] = {"answer": "reference", "citations": "gold_citations"}

PREDICTION_WITHOUT_REFERENCE = "prediction without reference"
REFERENCE_WITHOUT_PREDICTION = "reference without prediction"

_KEY, _KEY_KIND, _RAW = "__question_id", "__question_id_kind", "__raw"
_REF_PROBLEM, _REF_RAW = "__ref_problem", "__ref_raw"


@dataclass(frozen=True)
class PairResult:
    """Matched records (reader output, not yet validated) and rows that could not be matched."""

    records: pl.DataFrame
    rejected: pl.DataFrame


def read_prediction_pair(
    predictions: str | Path, references: str | Path, config: Config
) -> PairResult:
    """Read a legacy predictions file and its references / gold file, detecting the format."""
    pred_source, ref_source = os.fspath(predictions), os.fspath(references)
    check_file(Path(pred_source), pred_source)
    check_file(Path(ref_source), ref_source)
    preds, pred_check = load_json_array(Path(pred_source), pred_source)
    refs, ref_check = load_json_array(Path(ref_source), ref_source)
    pred_keys, ref_keys = _keys(preds), _keys(refs)
    if "question_id" in pred_keys | ref_keys:
        for source, keys in ((pred_source, pred_keys), (ref_source, ref_keys)):
            absent = [k for k in ("question_id", "answer") if k not in keys]
            if absent:
                raise InputError(
                    f"{source}: legacy format 1 (matched by question_id) needs the field(s) "
                    f"{', '.join(absent)}; found {', '.join(sorted(keys))}"
                )
        if "question" not in pred_keys | ref_keys:
            raise InputError(
                f"{pred_source}, {ref_source}: legacy format 1 needs a 'question' field in one "
                "of the files"
            )
        result = _by_question_id(
            _Objects(preds, pred_check, pred_source), _Objects(refs, ref_check, ref_source)
        )
    elif "answer" in pred_keys and "answer" in ref_keys:
        result = _by_position(
            _Objects(preds, pred_check, pred_source), _Objects(refs, ref_check, ref_source)
        )
    else:
        raise InputError(
            f"{pred_source}, {ref_source}: not a legacy pair: expected objects with "
            "question_id and answer (format 1) or answer and citations (format 2); found keys "
            f"{', '.join(sorted(pred_keys))} and {', '.join(sorted(ref_keys))}"
        )
    log.info(
        "%s + %s: %d matched, %d unmatched or unusable",
        pred_source,
        ref_source,
        result.records.height,
        result.rejected.height,
    )
    return result


@dataclass(frozen=True)
class _Objects:
    """The objects of one file, the indices that may hold a lone surrogate, and the path."""

    objects: list[dict[str, Any]]
    check: range
    source: str


def _keys(objects: list[dict[str, Any]]) -> set[str]:
    return {key for obj in objects for key in obj}


def _raw_text(obj: dict[str, Any]) -> str:
    """The object as JSON, a lone surrogate written as its ``\\uXXXX`` escape."""
    text = json.dumps(obj, ensure_ascii=False)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _frame(
    given: _Objects, fields: Mapping[str, str], *, question_id: bool = False
) -> pl.DataFrame:
    """Canonical columns for the fields present, plus provenance, the raw object text and
    :data:`READER_PROBLEM` (null unless a field read holds a lone surrogate; that field is then
    null). ``question_id``: the field is read too (as ``id``) and its value kept in ``_KEY``."""
    objects = given.objects
    present = _keys(objects)
    targets = {key: RECORD_SCHEMA[name] for key, name in fields.items() if key in present}
    read = [(key, fields[key]) for key in targets]
    if question_id:
        read.append(("question_id", "id"))
    cleaned, unreadable = without_lone_surrogates(objects, read, given.check)
    frame = json_columns(cleaned, targets).rename({key: fields[key] for key in targets})
    frame = frame.with_columns(
        pl.lit(given.source, dtype=pl.String).alias(SOURCE_COLUMN),
        pl.int_range(pl.len(), dtype=pl.Int64).alias(ROW_COLUMN),
        pl.Series(_RAW, [_raw_text(obj) for obj in objects], pl.String),
    )
    frame = frame.join(
        unreadable.select(ROW_COLUMN, READER_PROBLEM), on=ROW_COLUMN, how="left",
        maintain_order="left",
    )
    if question_id:
        frame = _with_question_id(frame, objects, cleaned)
    return frame


def _with_model(frame: pl.DataFrame, source: str) -> pl.DataFrame:
    stem = Path(source).stem
    if "model" not in frame.columns:
        return frame.with_columns(pl.lit(stem, dtype=pl.String).alias("model"))
    if frame.schema["model"] == pl.String():
        return frame.with_columns(pl.col("model").fill_null(stem))
    return frame  # values of other types: left for validation to reject


def _with_question_id(
    frame: pl.DataFrame, objects: list[dict[str, Any]], cleaned: list[dict[str, Any]]
) -> pl.DataFrame:
    """``__question_id``: the id as text (strings as they are, integers in decimal), else null
    (also a string with a lone surrogate: ``cleaned`` holds null there); ``__question_id_kind``:
    the JSON type of the id as written."""
    return frame.with_columns(
        pl.Series(_KEY, [_question_key(obj.get("question_id")) for obj in cleaned], pl.String),
        pl.Series(_KEY_KIND, [json_kind(obj.get("question_id")) for obj in objects], pl.String),
    )


def _question_key(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if json_kind(value) == "int":
        return str(value)
    return None


def _rejected(frame: pl.DataFrame, reason: pl.Expr | str) -> pl.DataFrame:
    """Rows of ``frame`` as rejected rows with ``reason`` and, after it, the row's reader
    problem where it has one."""
    given = pl.lit(reason) if isinstance(reason, str) else reason
    return frame.select(
        pl.col(SOURCE_COLUMN),
        pl.col(ROW_COLUMN),
        pl.col(_KEY).alias("id") if _KEY in frame.columns else pl.lit(None, pl.String).alias("id"),
        pl.concat_str([given, pl.col(READER_PROBLEM)], separator="; ", ignore_nulls=True)
        .alias("reason"),
        pl.col(_RAW).alias("raw"),
    ).cast(pl.Schema(REJECTED_SCHEMA))


def _with_problems(records: pl.DataFrame, ref_raw: str) -> pl.DataFrame:
    """Records with the joined reader problems of their two objects (:data:`READER_PROBLEM`) and
    the raw text of the object that has one (:data:`READER_RAW`), or without both columns when
    no record has a problem."""
    problem = pl.concat_str([READER_PROBLEM, _REF_PROBLEM], separator="; ", ignore_nulls=True)
    raw = (
        pl.when(pl.col(READER_PROBLEM).is_not_null()).then(pl.col(_RAW))
        .when(pl.col(_REF_PROBLEM).is_not_null()).then(pl.col(ref_raw))
    )
    marked = records.with_columns(
        pl.when(problem != "").then(problem).alias(READER_PROBLEM), raw.alias(READER_RAW)
    )
    if marked[READER_PROBLEM].null_count() == marked.height:
        return marked.drop(READER_PROBLEM, READER_RAW)
    return marked


def _by_question_id(preds: _Objects, refs: _Objects) -> PairResult:
    pred = _with_model(_frame(preds, QA_PREDICTION_FIELDS, question_id=True), preds.source)
    ref = _frame(refs, QA_REFERENCE_FIELDS, question_id=True)

    unusable = pl.col(_KEY).is_null()
    bad_id = (
        pl.when(pl.col(_KEY_KIND) == "string")  # a string that holds a lone surrogate
        .then(pl.lit(None, pl.String))
        .when(pl.col(_KEY_KIND).is_null())
        .then(pl.lit("question_id: missing"))
        .otherwise(pl.format("question_id: expected string or integer, got {}", pl.col(_KEY_KIND)))
    )
    pred_usable = pred.filter(~unusable)
    ref_usable = ref.filter(~unusable).with_columns(
        pl.col(ROW_COLUMN).min().over(_KEY).alias("__first")
    )
    ref_unique = ref_usable.filter(pl.col(ROW_COLUMN) == pl.col("__first"))
    repeated = pl.format(
        "duplicate question_id '{}' in references (first at row {})", pl.col(_KEY), "__first"
    )
    rejected = pl.concat(
        [
            _rejected(pred.filter(unusable), bad_id),
            _rejected(
                pred_usable.join(ref_unique, on=_KEY, how="anti"), PREDICTION_WITHOUT_REFERENCE
            ),
            _rejected(ref.filter(unusable), bad_id),
            _rejected(ref_usable.filter(pl.col(ROW_COLUMN) != pl.col("__first")), repeated),
            _rejected(
                ref_unique.join(pred_usable, on=_KEY, how="anti"), REFERENCE_WITHOUT_PREDICTION
            ),
        ]
    )

    ref_side = ref_unique.select(
        _KEY, *(pl.col(c).alias(f"__ref_{c}") for c in ref_unique.columns if c in RECORD_SCHEMA),
        pl.col(READER_PROBLEM).alias(_REF_PROBLEM), pl.col(_RAW).alias(_REF_RAW),
    )
    matched = pred_usable.join(ref_side, on=_KEY, how="inner", maintain_order="left")

    def pick(column: str) -> list[pl.Expr]:
        if f"__ref_{column}" in matched.columns:
            return [pl.col(f"__ref_{column}").alias(column)]
        return [pl.col(column)] if column in matched.columns else []

    records = matched.select(
        pl.col(_KEY).alias("id"),
        *pick("question"),
        pl.col("__ref_reference").alias("reference"),
        pl.col("response"),
        *pick("question_type"),
        *pick("doc_id"),
        pl.col("model"),
        pl.col(SOURCE_COLUMN),
        pl.col(ROW_COLUMN),
        pl.col(READER_PROBLEM),
        pl.col(_RAW),
        pl.col(_REF_PROBLEM),
        pl.col(_REF_RAW),
    )
    return PairResult(
        records=_canonical_order(_with_problems(records, _REF_RAW)), rejected=rejected
    )


def _by_position(preds: _Objects, golds: _Objects) -> PairResult:
    if len(preds.objects) != len(golds.objects):
        raise InputError(
            f"legacy format 2 matches predictions to gold answers by position, but "
            f"{preds.source} has {len(preds.objects)} entries and {golds.source} has "
            f"{len(golds.objects)}"
        )
    pred = _with_model(_frame(preds, CITED_PREDICTION_FIELDS), preds.source)
    gold = _frame(golds, CITED_GOLD_FIELDS)
    records = pl.concat(
        [
            pred.select(
                pl.col(ROW_COLUMN).cast(pl.String).alias("id"),
                pl.lit("", dtype=pl.String).alias("question"),
                pl.all(),
            ),
            gold.select(
                pl.exclude(SOURCE_COLUMN, ROW_COLUMN, _RAW, READER_PROBLEM),
                pl.col(READER_PROBLEM).alias(_REF_PROBLEM),
                pl.col(_RAW).alias(_REF_RAW),
            ),
        ],
        how="horizontal",
    )
    return PairResult(
        records=_canonical_order(_with_problems(records, _REF_RAW)),
        rejected=pl.DataFrame(schema=REJECTED_SCHEMA),
    )


def _canonical_order(frame: pl.DataFrame) -> pl.DataFrame:
    problems = [c for c in (READER_PROBLEM, READER_RAW) if c in frame.columns]
    return frame.select(
        *(c for c in RECORD_SCHEMA if c in frame.columns), SOURCE_COLUMN, ROW_COLUMN, *problems
    )
