"""Turn an RGB data file and a table of model outputs into evaluation records.

RGB (Chen et al. 2023, "Benchmarking Large Language Models in Retrieval-Augmented Generation",
chen700564/RGB) ships its items as JSON lines (``id``, ``query``, ``answer``, ``positive``,
``negative``, on the counterfactual sets also ``fakeanswer`` and ``positive_wrong``); the model
responses live apart, one row per (item, model, task, noise level). :func:`ingest_rgb` joins the
two on ``id`` and writes one record per output row in the columns of
:data:`pipeline.schema.RECORD_SCHEMA`, ready for ``evaluate``.

Grain of the records file: one row per accepted output row. Output rows that cannot become
records (unknown id or task, missing or out-of-range noise level, missing model) are kept with a
reason in ``<out stem>.rejected.parquet`` (:data:`pipeline.schema.REJECTED_SCHEMA`). A malformed
data file is an error: the data sets are curated, so they fail loudly.

The noise level comes from ``noise_rate`` (RGB's name) or ``noise_level``: numbers, or numeric
text (a JSON lines column mixing numbers and text is read as text); a ``negative_rejection`` row
without one gets 1.0, the setting in which every passage is noise.

The RGB script (``evalue.py``) writes one JSON lines file per model and noise rate, named after
both (``prediction_en_chatgpt_temp0.7_noise0.4_passage5_correct0.0.json``) and without a
``model`` field: each rows ``id``, ``query``, ``ans``, ``label``, ``prediction``, ``docs``,
``noise_rate`` and ``factlabel``. Such files go in as they are: each outputs file can be
labelled with its model and noise rate (:class:`OutputsFile`; ``--outputs FILE --model NAME
--noise-rate R``), which fill the file's rows where it has no value and reject the rows whose
own value differs; the response is read from ``prediction`` when there is no ``response``
column, and the passages the model was shown from ``docs`` when there is no ``contexts``.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.config import ConfigError
from pipeline.io.atomic import write_parquet_atomic
from pipeline.io.readers import check_file
from pipeline.metrics.robustness.rgb import HAN_PATTERN, answer_groups_from_json
from pipeline.schema import (
    RECORD_SCHEMA,
    RGB_TASKS,
    ROW_COLUMN,
    SOURCE_COLUMN,
    InputError,
)

log = logging.getLogger(__name__)

#: Noise level of a ``negative_rejection`` row whose outputs give none (all passages are noise).
NEGATIVE_REJECTION_NOISE = 1.0
#: Output columns copied into the records when present (cast to their canonical dtypes).
PASS_THROUGH: tuple[str, ...] = (
    "run",
    "latency_ms",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "category",
    "contexts",
)
#: Accepted names of the noise column in outputs, in order of preference.
NOISE_COLUMNS: tuple[str, ...] = ("noise_level", "noise_rate")
#: Response columns read when none is named, in order: ours, then the RGB script's.
RESPONSE_COLUMNS: tuple[str, ...] = ("response", "prediction")
#: The RGB script's name of the passages shown to the model, read as ``contexts``.
RGB_DOCS_COLUMN = "docs"
#: Separator of the first alternatives in ``reference`` when an answer has several groups.
REFERENCE_SEPARATOR = "; "

_OUTPUT_READERS = {
    ".jsonl": "ndjson",
    ".ndjson": "ndjson",
    ".json": "ndjson",
    ".parquet": "parquet",
}

# Working columns; the double underscore keeps them apart from any column of an outputs file.
_ROW, _ID, _TASK, _NOISE, _NOISE_RAW, _MODEL, _FOUND, _REASON = (
    "__row", "__id", "__task", "__noise", "__noise_raw", "__model", "__found", "__reason",
)
_POSITIVE, _NEGATIVE, _POSITIVE_WRONG = "__positive", "__negative", "__positive_wrong"
_RESPONSE = "__response"

_ITEM_SCHEMA: dict[str, pl.DataType] = {
    _ID: pl.String(),
    "question": pl.String(),
    "answer_groups": pl.List(pl.List(pl.String())),
    "counterfactual_answer": pl.String(),
    _POSITIVE: pl.List(pl.String()),
    _NEGATIVE: pl.List(pl.String()),
    _POSITIVE_WRONG: pl.List(pl.String()),
}


@dataclass(frozen=True)
class OutputsFile:
    """One outputs file and the labels of its rows: ``model`` and ``noise_rate`` fill the rows
    without a value (every row, when the file has no such column); a row whose own value
    differs is rejected with the reason."""

    path: Path
    model: str | None = None
    noise_rate: float | None = None


@dataclass(frozen=True)
class IngestSummary:
    """What :func:`ingest_rgb` read and wrote."""

    n_items: int
    n_outputs: int
    n_records: int
    n_rejected: int
    records_path: Path
    rejected_path: Path | None


def rejected_path_for(out: Path) -> Path:
    """Where the rejected output rows of ``out`` go: ``<out stem>.rejected.parquet`` beside it."""
    return out.with_name(f"{out.stem}.rejected.parquet")


def ingest_rgb(
    data: Path,
    outputs: Path | OutputsFile | Sequence[Path | OutputsFile],
    out: Path,
    *,
    response_column: str | None = None,
    task: str | None = None,
    language: str = "auto",
    id_prefix: str | None = None,
) -> IngestSummary:
    """Join RGB items with model outputs and write the records to ``out`` (Parquet, atomically).

    ``outputs``: one outputs file or several, each a path or an :class:`OutputsFile` with the
    labels of its rows. ``response_column`` names the response column (default: ``response``,
    else ``prediction``). ``task`` fills the task of rows whose outputs give none (no ``task``
    column, or a null value). ``language="auto"`` gives "zh" to items whose query contains a
    Han character and "en" to the others; any other value is used for every row. Record ids are
    ``id_prefix`` + the RGB id; the default prefix is the data file's stem and a colon
    (``en_fact:3``).

    Rejected output rows are written to :func:`rejected_path_for` ``(out)``; when there are none,
    a rejected file left there by an earlier run is removed. Raises
    :class:`~pipeline.schema.InputError` for a malformed data file, an unreadable outputs file or
    a missing required column, and :class:`~pipeline.config.ConfigError` for a bad ``task`` or
    ``language``.
    """
    data, out = Path(data), Path(out)
    files = [
        item if isinstance(item, OutputsFile) else OutputsFile(Path(item))
        for item in ([outputs] if isinstance(outputs, (str, os.PathLike, OutputsFile))
                     else outputs)
    ]
    if not files:
        raise ConfigError("give at least one outputs file")
    if task is not None and task not in RGB_TASKS:
        raise ConfigError(f"unknown RGB task {task!r}; expected one of {', '.join(RGB_TASKS)}")
    if not language:
        raise ConfigError('language must be "auto" or a language code such as "en"')
    for item in files:
        if item.noise_rate is not None and not 0.0 <= item.noise_rate <= 1.0:
            raise ConfigError(f"{item.path}: --noise-rate must be in [0, 1], got {item.noise_rate}")
        if item.model is not None and not item.model.strip():
            raise ConfigError(f"{item.path}: --model must be a non-empty name")
    prefix = f"{data.stem}:" if id_prefix is None else id_prefix

    items = _read_items(data)
    parts: list[pl.DataFrame] = []
    rejected_parts: list[pl.DataFrame] = []
    n_outputs = 0
    for item in files:
        source = os.fspath(item.path)
        frame = _read_outputs(Path(item.path))
        n_outputs += frame.height
        checked = _checked_outputs(
            frame, source, items, response_column, task, data_source=os.fspath(data),
            labels=item,
        )
        rejected_parts.append(_rejected_rows(checked, source, frame.columns))
        given = [c for c in PASS_THROUGH if c in frame.columns]
        if "contexts" not in given and RGB_DOCS_COLUMN in frame.columns:
            checked = checked.with_columns(pl.col(RGB_DOCS_COLUMN).alias("contexts"))
            given.append("contexts")
        accepted = (
            checked.filter(pl.col(_REASON).is_null())
            .select(_ID, _TASK, _MODEL, _RESPONSE, _NOISE, *given)
            .join(items, on=_ID, how="left")
        )
        parts.append(_records(accepted, source, prefix, language))
    rejected = pl.concat(rejected_parts)
    records = pl.concat(parts, how="diagonal")
    records = records.select(c for c in RECORD_SCHEMA if c in records.columns).sort(
        "model", "task", "noise_level", "id"
    )

    write_parquet_atomic(records, out)
    rejected_path: Path | None = None
    if rejected.height:
        rejected_path = write_parquet_atomic(rejected, rejected_path_for(out))
    else:
        rejected_path_for(out).unlink(missing_ok=True)
    summary = IngestSummary(
        n_items=items.height,
        n_outputs=n_outputs,
        n_records=records.height,
        n_rejected=rejected.height,
        records_path=out,
        rejected_path=rejected_path,
    )
    log.info(
        "%s + %s: %d items, %d output rows -> %d records, %d rejected -> %s",
        data, ", ".join(os.fspath(item.path) for item in files), summary.n_items,
        summary.n_outputs, summary.n_records, summary.n_rejected, out,
    )
    return summary


# --- the RGB data file ---------------------------------------------------------------------------


def _read_items(path: Path) -> pl.DataFrame:
    """One row per RGB item (grain: ``__id``), with the passage lists of the item.

    Columns: ``__id`` (the RGB id as text), ``question``, ``answer_groups``,
    ``counterfactual_answer``, ``__positive`` (flattened), ``__negative`` and
    ``__positive_wrong`` (null when the item has none).

    Raises InputError, naming the file and line, for invalid JSON, a missing or mistyped
    ``id``/``query``/``answer``, an answer of the wrong shape or with an empty group, passages
    that are not strings, and a repeated id.
    """
    source = os.fspath(path)
    check_file(path, source)
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{source}: cannot read the file as UTF-8 text: {exc}") from exc
    rows: list[dict[str, Any]] = []
    first_line: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{source}: line {number}"
        row = _item(line, where)
        if row[_ID] in first_line:
            raise InputError(f"{where}: duplicate id {row[_ID]!r} (first on line "
                             f"{first_line[row[_ID]]})")
        first_line[row[_ID]] = number
        rows.append(row)
    if not rows:
        raise InputError(f"{source}: the file contains no items")
    return pl.DataFrame(rows, schema=_ITEM_SCHEMA)


def _item(line: str, where: str) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from exc
    if not isinstance(value, dict):
        raise InputError(f"{where}: expected a JSON object")
    for key in ("id", "query", "answer"):
        if key not in value:
            raise InputError(f"{where}: missing key {key!r}")
    item_id, query = value["id"], value["query"]
    if isinstance(item_id, bool) or not isinstance(item_id, int | str):
        raise InputError(f"{where}: id must be an integer or a string, got {item_id!r}")
    if not isinstance(query, str):
        raise InputError(f"{where}: query must be a string, got {query!r}")
    try:
        groups = answer_groups_from_json(value["answer"])
    except TypeError as exc:
        raise InputError(f"{where}: answer: {exc}") from exc
    if not groups or not all(groups):
        raise InputError(f"{where}: answer has no alternatives: {value['answer']!r}")
    positive_wrong = value.get("positive_wrong")
    return {
        _ID: str(item_id),
        "question": query,
        "answer_groups": groups,
        "counterfactual_answer": _first_string(value.get("fakeanswer"), "fakeanswer", where),
        _POSITIVE: _passages(value.get("positive"), "positive", where),
        _NEGATIVE: _passages(value.get("negative"), "negative", where),
        _POSITIVE_WRONG: None
        if positive_wrong is None
        else _passages(positive_wrong, "positive_wrong", where),
    }


def _first_string(value: object, key: str, where: str) -> str | None:
    """A string as is, a list as its first string element, absent or null as None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return next((element for element in value if isinstance(element, str)), None)
    raise InputError(f"{where}: {key} must be a string or a list of strings, got {value!r}")


def _passages(value: object, key: str, where: str) -> list[str]:
    """A list of passages, lists inside it flattened (``positive`` of integration sets)."""
    if value is None:
        return []
    if isinstance(value, list):
        flat: list[str] = []
        for element in value:
            flat.extend(element if isinstance(element, list) else [element])
        if all(isinstance(passage, str) for passage in flat):
            return flat
    raise InputError(f"{where}: {key} must be a list of strings or of lists of strings")


# --- the outputs file ----------------------------------------------------------------------------


def _read_outputs(path: Path) -> pl.DataFrame:
    """The outputs file as stored, with its 0-based row number in ``__row``."""
    source = os.fspath(path)
    kind = _OUTPUT_READERS.get(path.suffix.lower())
    if kind is None:
        raise InputError(
            f"{source}: unknown outputs file extension {path.suffix!r}; "
            f"supported: {', '.join(_OUTPUT_READERS)}"
        )
    check_file(path, source)
    try:
        if kind == "parquet":
            frame = pl.read_parquet(path)
        else:
            frame = pl.read_ndjson(path, infer_schema_length=None)
    except (pl.exceptions.PolarsError, OSError) as exc:
        what = "Parquet" if kind == "parquet" else "JSON lines (one object per line)"
        raise InputError(f"{source}: cannot read the outputs as {what}: {exc}") from exc
    if frame.height == 0:
        raise InputError(f"{source}: the file contains no rows")
    return frame.with_row_index(_ROW)


def _require(frame: pl.DataFrame, column: str, source: str, hint: str = "") -> None:
    if column not in frame.columns:
        present = ", ".join(c for c in frame.columns if c != _ROW)
        raise InputError(
            f"{source}: required column {column!r} is missing (columns present: {present})"
            + (f"; {hint}" if hint else "")
        )


def _checked_outputs(
    frame: pl.DataFrame,
    source: str,
    items: pl.DataFrame,
    response_column: str | None,
    task: str | None,
    *,
    data_source: str,
    labels: OutputsFile,
) -> pl.DataFrame:
    """The outputs with typed working columns and ``__reason`` (null for an acceptable row)."""
    _require(frame, "id", source)
    if labels.model is None:
        _require(frame, "model", source, "or give the model of the file's rows with --model")
    if response_column is None:
        response_column = next(
            (c for c in RESPONSE_COLUMNS if c in frame.columns), RESPONSE_COLUMNS[0]
        )
        hint = (f"name the response column with --response-column (read by default: "
                f"{', '.join(RESPONSE_COLUMNS)})")
    else:
        hint = f"name the response column with --response-column (now {response_column!r})"
    _require(frame, response_column, source, hint)
    if "task" not in frame.columns and task is None:
        _require(frame, "task", source, "or give the task of every row with --task")
    noise_column = next((c for c in NOISE_COLUMNS if c in frame.columns), None)
    if all(c in frame.columns for c in NOISE_COLUMNS):
        raise InputError(f"{source}: both 'noise_level' and 'noise_rate' are present; keep one")

    given_task = pl.lit(task, dtype=pl.String)
    task_expr = pl.coalesce(pl.col("task").cast(pl.String), given_task) if (
        "task" in frame.columns) else given_task
    model_label = pl.lit(labels.model, dtype=pl.String)
    model_expr = pl.coalesce(pl.col("model").cast(pl.String), model_label) if (
        "model" in frame.columns) else model_label
    noise_label = pl.lit(labels.noise_rate, dtype=pl.Float64)
    try:
        typed = frame.with_columns(
            pl.col("id").cast(pl.String).alias(_ID),
            task_expr.alias(_TASK),
            model_expr.alias(_MODEL),
            pl.col(response_column).cast(pl.String).alias(_RESPONSE),
            _noise(frame, noise_column).alias(_NOISE_RAW),
        )
    except pl.exceptions.PolarsError as exc:
        raise InputError(
            f"{source}: id, task, model and {response_column!r} must hold scalar values: {exc}"
        ) from exc
    checked = typed.with_columns(
        pl.col(_ID).is_in(items.get_column(_ID).implode()).alias(_FOUND),
        pl.coalesce(
            pl.col(_NOISE_RAW),
            noise_label,
            pl.when(pl.col(_TASK) == "negative_rejection").then(NEGATIVE_REJECTION_NOISE),
        ).alias(_NOISE),
    )
    if noise_column is None and labels.noise_rate is None:
        needs = checked.filter(pl.col(_TASK).is_in(RGB_TASKS) & pl.col(_NOISE).is_null())
        if needs.height:
            found = ", ".join(needs.get_column(_TASK).unique(maintain_order=True).to_list())
            _require(frame, "noise_rate", source,
                     f"a noise rate (or 'noise_level') is required for tasks other than "
                     f"negative_rejection (found: {found})")
    reasons = _label_reasons(frame, noise_column, labels)
    return checked.with_columns(_reason(noise_column, data_source, reasons).alias(_REASON))


def _label_reasons(
    frame: pl.DataFrame, noise_column: str | None, labels: OutputsFile
) -> list[pl.Expr]:
    """Why a row's own model or noise rate contradicts the label of its file."""
    reasons: list[pl.Expr] = []
    if labels.model is not None and "model" in frame.columns:
        own = pl.col("model").cast(pl.String)
        reasons.append(pl.when(own.is_not_null() & (own != labels.model)).then(
            pl.format(f"model: '{{}}' in the file differs from --model {labels.model!r}", own)
        ))
    if labels.noise_rate is not None and noise_column is not None:
        own = pl.col(_NOISE_RAW)
        reasons.append(pl.when(own.is_not_null() & (own != labels.noise_rate)).then(
            pl.format(f"noise_level: {{}} in the file differs from --noise-rate "
                      f"{labels.noise_rate:g}", own)
        ))
    return reasons


def _noise(frame: pl.DataFrame, column: str | None) -> pl.Expr:
    """The noise column as Float64; text is parsed, other non-numeric values become null."""
    if column is None:
        return pl.lit(None, dtype=pl.Float64)
    dtype = frame.schema[column]
    if dtype.is_numeric() or dtype == pl.String:
        return pl.col(column).cast(pl.Float64, strict=False)
    return pl.lit(None, dtype=pl.Float64)


def _reason(noise_column: str | None, data_source: str, extra: Sequence[pl.Expr]) -> pl.Expr:
    """Every reason a row cannot become a record, joined with "; " (null when there is none)."""
    task, noise = pl.col(_TASK), pl.col(_NOISE)
    noise_given = pl.col(noise_column).is_not_null() if noise_column else pl.lit(False)
    reasons = [
        pl.when(pl.col(_ID).is_null()).then(pl.lit("id: missing")),
        pl.when(pl.col(_ID).is_not_null() & ~pl.col(_FOUND)).then(
            pl.format("id: {} not in {}", pl.col(_ID), pl.lit(data_source))
        ),
        pl.when(task.is_null()).then(pl.lit("task: missing")),
        pl.when(task.is_not_null() & ~task.is_in(RGB_TASKS)).then(
            pl.format("task: unknown value '{}' (expected one of {})", task,
                      pl.lit(", ".join(RGB_TASKS)))
        ),
        pl.when(noise_given & pl.col(_NOISE_RAW).is_null()).then(
            pl.lit("noise_level: not a number")
        ),
        pl.when(~noise_given & noise.is_null() & task.is_in(RGB_TASKS)).then(
            pl.lit("noise_level: missing")
        ),
        pl.when(noise.is_not_null() & ~noise.is_between(0.0, 1.0)).then(
            pl.format("noise_level: {} outside [0, 1]", noise)
        ),
        pl.when(pl.col(_MODEL).is_null()).then(pl.lit("model: missing")),
        *extra,
    ]
    joined = pl.concat_str(reasons, separator="; ", ignore_nulls=True)
    return pl.when(joined != "").then(joined)


def _rejected_rows(checked: pl.DataFrame, source: str, columns: list[str]) -> pl.DataFrame:
    """One row per rejected output row, in :data:`~pipeline.schema.REJECTED_SCHEMA`."""
    original = [c for c in columns if c != _ROW]
    return checked.filter(pl.col(_REASON).is_not_null()).select(
        pl.lit(source, dtype=pl.String).alias(SOURCE_COLUMN),
        pl.col(_ROW).cast(pl.Int64).alias(ROW_COLUMN),
        pl.col(_ID).alias("id"),
        pl.col(_REASON).alias("reason"),
        pl.struct(original).struct.json_encode().alias("raw"),
    )


# --- records -------------------------------------------------------------------------------------


def _records(joined: pl.DataFrame, source: str, prefix: str, language: str) -> pl.DataFrame:
    """Accepted output rows joined with their items, in canonical columns and dtypes."""
    groups = pl.col("answer_groups")
    first_group = groups.list.first()
    task = pl.col(_TASK)
    by_task = (
        pl.when(task == "negative_rejection")
        .then(pl.col(_NEGATIVE))
        .when(task == "counterfactual_robustness")
        .then(pl.coalesce(pl.col(_POSITIVE_WRONG), pl.col(_POSITIVE)))
        .otherwise(pl.col(_POSITIVE).list.concat(pl.col(_NEGATIVE)))
    )
    given = [c for c in PASS_THROUGH if c in joined.columns]
    for column in given:
        try:
            joined.select(pl.col(column).cast(RECORD_SCHEMA[column]))
        except pl.exceptions.PolarsError as exc:
            raise InputError(
                f"{source}: column {column!r} cannot be read as {RECORD_SCHEMA[column]}: {exc}"
            ) from exc
    contexts = (
        pl.coalesce(pl.col("contexts").cast(RECORD_SCHEMA["contexts"]), by_task)
        if "contexts" in given
        else by_task
    )
    if language == "auto":
        language_expr = (
            pl.when(pl.col("question").str.contains(HAN_PATTERN)).then(pl.lit("zh"))
            .otherwise(pl.lit("en"))
        )
    else:
        language_expr = pl.lit(language)
    built: dict[str, pl.Expr] = {
        "id": pl.lit(prefix) + pl.col(_ID),
        "question": pl.col("question"),
        "reference": groups.list.eval(pl.element().list.first()).list.join(REFERENCE_SEPARATOR),
        "response": pl.col(_RESPONSE),
        "references": pl.when((groups.list.len() == 1) & (first_group.list.len() > 1)).then(
            first_group
        ),
        "contexts": contexts,
        "model": pl.col(_MODEL),
        "noise_level": pl.col(_NOISE),
        "task": task,
        "language": language_expr,
        "answer_groups": groups,
        "counterfactual_answer": pl.col("counterfactual_answer"),
    }
    built.update({c: pl.col(c) for c in given if c not in built})
    columns = [built[name].cast(dtype).alias(name) for name, dtype in RECORD_SCHEMA.items()
               if name in built]
    return joined.select(columns)

