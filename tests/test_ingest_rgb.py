"""RGB ingest: data file + model outputs -> records (and rejected output rows)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.config import Config, ConfigError
from pipeline.ingest_rgb import IngestSummary, ingest_rgb, rejected_path_for
from pipeline.metrics.robustness.rgb import answer_groups_from_json
from pipeline.schema import RECORD_SCHEMA, REJECTED_SCHEMA, InputError
from pipeline.validate import load_inputs

RGB_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "rgb"

ITEMS: list[dict[str, Any]] = [
    {
        "id": 0,
        "query": "Super Bowl 2021 location",
        "answer": "Tampa, Florida",
        "fakeanswer": "Glendale, Arizona",
        "positive": ["pos A"],
        "negative": ["neg A"],
        "positive_wrong": ["wrong A"],
    },
    {
        "id": 1,
        "query": "Capital of France",
        "answer": [["Paris", "Paris, France"]],
        "fakeanswer": ["Lyon", "Marseille"],
        "positive": ["pos B"],
        "negative": ["neg B1", "neg B2"],
    },
    {
        "id": "c2",
        "query": "第七届香港立法会议员宣誓仪式及首次会议的时间",
        "answer": ["1月3日", ["1月12日", "1月12号"]],
        "asnwer1": ["1月3日"],
        "positive": [["pos C1a", "pos C1b"], ["pos C2"]],
        "negative": ["neg C"],
    },
    {
        "id": 3,
        "query": "Who wrote Dune and Emma?",
        "answer": ["Frank Herbert", "Jane Austen"],
        "positive": ["pos D"],
        "negative": [],
    },
]

OUTPUTS: list[dict[str, Any]] = [
    {"id": 0, "model": "m", "task": "counterfactual_robustness", "noise_rate": 0.0,
     "response": "Tampa"},
    {"id": 1, "model": "m", "task": "counterfactual_robustness", "noise_rate": 0.0,
     "response": "Lyon"},
    {"id": 1, "model": "m", "task": "noise_robustness", "noise_rate": 0.4, "response": "Paris"},
    {"id": "c2", "model": "m", "task": "information_integration", "noise_rate": 0.2,
     "response": "1月3日和1月12日"},
    {"id": 0, "model": "m", "task": "negative_rejection", "noise_rate": 1.0,
     "response": "insufficient information"},
    {"id": 3, "model": "m", "task": "information_integration", "noise_rate": 0.0,
     "response": "Herbert; Austen"},
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8"
    )
    return path


def ingest(
    tmp_path: Path,
    outputs: list[dict[str, Any]] | pl.DataFrame,
    items: list[dict[str, Any]] = ITEMS,
    **kwargs: Any,
) -> tuple[IngestSummary, pl.DataFrame]:
    data = write_jsonl(tmp_path / "data.json", items)
    if isinstance(outputs, pl.DataFrame):
        out_file = tmp_path / "outputs.parquet"
        outputs.write_parquet(out_file)
    else:
        out_file = write_jsonl(tmp_path / "outputs.jsonl", outputs)
    summary = ingest_rgb(data, out_file, tmp_path / "out" / "records.parquet", **kwargs)
    return summary, pl.read_parquet(summary.records_path)


def by_key(records: pl.DataFrame) -> dict[tuple[str, str], dict[str, Any]]:
    return {(row["id"], row["task"]): row for row in records.to_dicts()}


# --- record values -------------------------------------------------------------------------------


def test_records_have_canonical_columns_and_values(tmp_path: Path) -> None:
    summary, records = ingest(tmp_path, OUTPUTS)

    assert summary == IngestSummary(
        n_items=4,
        n_outputs=6,
        n_records=6,
        n_rejected=0,
        records_path=tmp_path / "out" / "records.parquet",
        rejected_path=None,
    )
    assert records.schema == pl.Schema(
        {
            name: dtype
            for name, dtype in RECORD_SCHEMA.items()
            if name
            in {
                "id", "question", "reference", "response", "references", "contexts", "model",
                "noise_level", "task", "language", "answer_groups", "counterfactual_answer",
            }
        }
    )
    rows = by_key(records)
    assert rows["data:0", "counterfactual_robustness"] == {
        "id": "data:0",
        "question": "Super Bowl 2021 location",
        "reference": "Tampa, Florida",
        "response": "Tampa",
        "references": None,
        "contexts": ["wrong A"],
        "model": "m",
        "noise_level": 0.0,
        "task": "counterfactual_robustness",
        "language": "en",
        "answer_groups": [["Tampa, Florida"]],
        "counterfactual_answer": "Glendale, Arizona",
    }
    # One group with alternatives: the first is the reference, all are references.
    one_group = rows["data:1", "noise_robustness"]
    assert one_group["answer_groups"] == [["Paris", "Paris, France"]]
    assert one_group["reference"] == "Paris"
    assert one_group["references"] == ["Paris", "Paris, France"]
    assert one_group["counterfactual_answer"] == "Lyon"  # first string of the list
    assert one_group["noise_level"] == 0.4
    # Mixed answer: one group per part, first alternatives joined.
    mixed = rows["data:c2", "information_integration"]
    assert mixed["answer_groups"] == [["1月3日"], ["1月12日", "1月12号"]]
    assert mixed["reference"] == "1月3日; 1月12日"
    assert mixed["references"] is None
    assert mixed["counterfactual_answer"] is None
    assert mixed["language"] == "zh"
    # List of strings: every string is a required part.
    parts = rows["data:3", "information_integration"]
    assert parts["answer_groups"] == [["Frank Herbert"], ["Jane Austen"]]
    assert parts["reference"] == "Frank Herbert; Jane Austen"
    assert parts["references"] is None


def test_contexts_by_task(tmp_path: Path) -> None:
    _, records = ingest(tmp_path, OUTPUTS)
    contexts = {key: row["contexts"] for key, row in by_key(records).items()}
    assert contexts == {
        ("data:0", "counterfactual_robustness"): ["wrong A"],
        ("data:1", "counterfactual_robustness"): ["pos B"],  # no positive_wrong: positive
        ("data:1", "noise_robustness"): ["pos B", "neg B1", "neg B2"],
        ("data:c2", "information_integration"): ["pos C1a", "pos C1b", "pos C2", "neg C"],
        ("data:0", "negative_rejection"): ["neg A"],
        ("data:3", "information_integration"): ["pos D"],
    }


def test_records_are_sorted_by_model_task_noise_id(tmp_path: Path) -> None:
    outputs = [{**row, "model": model} for model in ("z", "a") for row in OUTPUTS]
    _, records = ingest(tmp_path, outputs)
    keys = records.select("model", "task", "noise_level", "id").rows()
    assert keys == sorted(keys)
    assert records.height == 12


def test_parquet_outputs_pass_through_and_contexts_override(tmp_path: Path) -> None:
    outputs = pl.DataFrame(
        {
            "id": ["0", "1"],
            "model": ["m", "m"],
            "task": ["noise_robustness", "noise_robustness"],
            "noise_level": [0.2, 0.2],
            "response": ["Tampa", "Paris"],
            "contexts": [["seen 1", "seen 2"], None],
            "run": [1, 2],
            "latency_ms": [120, 80],
            "prompt_tokens": [10, 11],
            "completion_tokens": [3, 4],
            "total_tokens": [13, 15],
            "category": ["geo", None],
            "question": ["ignored", "ignored"],
        }
    )
    _, records = ingest(tmp_path, outputs)
    rows = by_key(records)
    assert rows["data:0", "noise_robustness"]["contexts"] == ["seen 1", "seen 2"]
    assert rows["data:1", "noise_robustness"]["contexts"] == ["pos B", "neg B1", "neg B2"]
    assert rows["data:0", "noise_robustness"]["question"] == "Super Bowl 2021 location"
    assert rows["data:0", "noise_robustness"]["run"] == "1"
    assert rows["data:1", "noise_robustness"]["latency_ms"] == 80.0
    assert rows["data:0", "noise_robustness"]["category"] == "geo"
    for column in ("run", "latency_ms", "prompt_tokens", "completion_tokens", "total_tokens",
                   "category", "contexts"):
        assert records.schema[column] == RECORD_SCHEMA[column]


def test_language_and_id_prefix_options(tmp_path: Path) -> None:
    _, records = ingest(tmp_path, OUTPUTS, language="en", id_prefix="")
    assert set(records["language"]) == {"en"}
    assert set(records["id"]) == {"0", "1", "c2", "3"}
    _, records = ingest(tmp_path, OUTPUTS, id_prefix="rgb/")
    assert set(records["id"]) == {"rgb/0", "rgb/1", "rgb/c2", "rgb/3"}


def test_response_column_option(tmp_path: Path) -> None:
    outputs = [{**{k: v for k, v in row.items() if k != "response"}, "prediction": row["response"]}
               for row in OUTPUTS]
    _, records = ingest(tmp_path, outputs, response_column="prediction")
    assert set(records["response"]) == {row["response"] for row in OUTPUTS}


def test_task_argument_fills_missing_task(tmp_path: Path) -> None:
    no_task = [{k: v for k, v in row.items() if k != "task"} for row in OUTPUTS[:2]]
    _, records = ingest(tmp_path, no_task, task="noise_robustness")
    assert set(records["task"]) == {"noise_robustness"}
    # A task column with nulls takes the argument where it is null.
    mixed: list[dict[str, Any]] = [{**OUTPUTS[0], "task": None}, OUTPUTS[2]]
    _, records = ingest(tmp_path, mixed, task="counterfactual_robustness")
    assert sorted(records["task"]) == ["counterfactual_robustness", "noise_robustness"]


def test_noise_defaults_to_one_for_negative_rejection(tmp_path: Path) -> None:
    outputs: list[dict[str, Any]] = [{"id": i, "model": "m", "response": "x"} for i in (0, 1)]
    summary, records = ingest(tmp_path, outputs, task="negative_rejection")
    assert summary.n_records == 2
    assert records["noise_level"].to_list() == [1.0, 1.0]
    assert records["contexts"].to_list() == [["neg A"], ["neg B1", "neg B2"]]
    # A null value in an existing noise column also defaults on negative_rejection rows.
    with_null: list[dict[str, Any]] = [
        {**outputs[0], "noise_rate": None},
        {**outputs[1], "noise_rate": 1.0},
    ]
    _, records = ingest(tmp_path, with_null, task="negative_rejection")
    assert records["noise_level"].to_list() == [1.0, 1.0]


def test_noise_level_column_name_is_accepted(tmp_path: Path) -> None:
    outputs = [{**{k: v for k, v in row.items() if k != "noise_rate"},
                "noise_level": row["noise_rate"]} for row in OUTPUTS]
    _, records = ingest(tmp_path, outputs)
    assert sorted(records["noise_level"]) == sorted(row["noise_rate"] for row in OUTPUTS)


# --- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("column", "hint"),
    [("id", None), ("model", None), ("response", "--response-column"), ("task", "--task")],
)
def test_missing_output_column_names_column_and_file(
    tmp_path: Path, column: str, hint: str | None
) -> None:
    outputs = [{k: v for k, v in row.items() if k != column} for row in OUTPUTS]
    with pytest.raises(InputError) as info:
        ingest(tmp_path, outputs)
    message = str(info.value)
    assert f"'{column}'" in message
    assert str(tmp_path / "outputs.jsonl") in message
    if hint:
        assert hint in message


def test_missing_noise_column_is_an_error_for_other_tasks(tmp_path: Path) -> None:
    outputs = [{k: v for k, v in row.items() if k != "noise_rate"} for row in OUTPUTS]
    with pytest.raises(InputError, match=r"outputs\.jsonl: required column 'noise_rate'"):
        ingest(tmp_path, outputs)


def test_both_noise_columns_is_an_error(tmp_path: Path) -> None:
    outputs = [{**row, "noise_level": row["noise_rate"]} for row in OUTPUTS]
    with pytest.raises(InputError, match="both 'noise_level' and 'noise_rate'"):
        ingest(tmp_path, outputs)


def test_bad_arguments_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown RGB task 'fact'"):
        ingest(tmp_path, OUTPUTS, task="fact")
    with pytest.raises(ConfigError, match="language"):
        ingest(tmp_path, OUTPUTS, language="")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"id": 9, "query": "q", "answer": "a"', "line 2: invalid JSON"),
        ('{"id": 9, "answer": "a"}', "line 2: missing key 'query'"),
        ('{"query": "q", "answer": "a"}', "line 2: missing key 'id'"),
        ('{"id": 9, "query": "q"}', "line 2: missing key 'answer'"),
        ('{"id": 9, "query": "q", "answer": {"a": 1}}', "line 2: answer: RGB answer must be"),
        ('{"id": 9, "query": "q", "answer": ["a", 1]}', "line 2: answer: RGB answer element"),
        ('{"id": 9, "query": "q", "answer": []}', "line 2: answer has no alternatives"),
        ('{"id": 9, "query": "q", "answer": ["a", []]}', "line 2: answer has no alternatives"),
        ('{"id": 9, "query": 5, "answer": "a"}', "line 2: query must be a string"),
        ('{"id": 9, "query": "q", "answer": "a", "positive": [1]}', "line 2: positive must"),
        ('{"id": "0", "query": "q", "answer": "a"}', "line 2: duplicate id '0' \\(first on line 1"),
        ("[1, 2]", "line 2: expected a JSON object"),
    ],
)
def test_malformed_data_line_names_file_and_line(tmp_path: Path, line: str, message: str) -> None:
    data = tmp_path / "bad.json"
    data.write_text(json.dumps(ITEMS[0]) + "\n" + line + "\n", encoding="utf-8")
    outputs = write_jsonl(tmp_path / "outputs.jsonl", OUTPUTS[:1])
    with pytest.raises(InputError, match=re.escape(str(data)) + ": " + message):
        ingest_rgb(data, outputs, tmp_path / "records.parquet")


def test_unreadable_outputs_are_input_errors(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.json", ITEMS)
    csv = tmp_path / "outputs.csv"
    csv.write_text("id,model\n0,m\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"unknown outputs file extension '\.csv'"):
        ingest_rgb(data, csv, tmp_path / "r.parquet")
    broken = tmp_path / "outputs.jsonl"
    broken.write_text('{"id": 0}\nnot json\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"outputs\.jsonl: cannot read the outputs as JSON lines"):
        ingest_rgb(data, broken, tmp_path / "r.parquet")
    with pytest.raises(InputError, match="file not found"):
        ingest_rgb(data, tmp_path / "missing.parquet", tmp_path / "r.parquet")


# --- rejected output rows ------------------------------------------------------------------------


def test_unusable_output_rows_are_rejected_with_reasons(tmp_path: Path) -> None:
    outputs: list[dict[str, Any]] = [
        {"id": 0, "model": "m", "task": "noise_robustness", "noise_rate": 0.0, "response": "ok"},
        {"id": 42, "model": "m", "task": "noise_robustness", "noise_rate": 0.0, "response": "x"},
        {"id": 1, "model": "m", "task": "fact", "noise_rate": 0.0, "response": "x"},
        {"id": 1, "model": "m", "task": "noise_robustness", "noise_rate": 1.5, "response": "x"},
        {"id": 1, "model": "m", "task": "noise_robustness", "noise_rate": "high", "response": "x"},
        {"id": 1, "model": None, "task": "noise_robustness", "noise_rate": 0.2, "response": "x"},
        {"id": 1, "model": "m", "task": "noise_robustness", "noise_rate": None, "response": "x"},
        {"id": 1, "model": "m", "task": None, "noise_rate": -0.2, "response": "x"},
        {"id": None, "model": "m", "task": "negative_rejection", "response": "x"},
    ]
    summary, records = ingest(tmp_path, outputs)

    assert (summary.n_outputs, summary.n_records, summary.n_rejected) == (9, 1, 8)
    assert records["id"].to_list() == ["data:0"]
    assert summary.rejected_path == tmp_path / "out" / "records.rejected.parquet"
    assert summary.rejected_path == rejected_path_for(summary.records_path)
    rejected = pl.read_parquet(summary.rejected_path)
    assert rejected.schema == pl.Schema(REJECTED_SCHEMA)
    data = tmp_path / "data.json"
    tasks = "noise_robustness, negative_rejection, information_integration, " \
        "counterfactual_robustness"
    assert rejected.select("row_number", "id", "reason").rows() == [
        (1, "42", f"id: 42 not in {data}"),
        (2, "1", f"task: unknown value 'fact' (expected one of {tasks})"),
        (3, "1", "noise_level: 1.5 outside [0, 1]"),
        (4, "1", "noise_level: not a number"),
        (5, "1", "model: missing"),
        (6, "1", "noise_level: missing"),
        (7, "1", "task: missing; noise_level: -0.2 outside [0, 1]"),
        (8, None, "id: missing"),
    ]
    assert set(rejected["source"]) == {str(tmp_path / "outputs.jsonl")}
    raw = [json.loads(text) for text in rejected["raw"]]
    assert raw[0]["id"] == 42
    assert (raw[0]["model"], raw[0]["task"], raw[0]["response"]) == ("m", "noise_robustness", "x")
    assert raw[3]["noise_rate"] == "high"
    assert raw[4]["model"] is None


def test_stale_rejected_file_is_removed(tmp_path: Path) -> None:
    bad = [*OUTPUTS, {**OUTPUTS[0], "id": 99}]
    first, _ = ingest(tmp_path, bad)
    assert first.rejected_path is not None and first.rejected_path.exists()
    second, _ = ingest(tmp_path, OUTPUTS)
    assert second.rejected_path is None
    assert not first.rejected_path.exists()


def test_write_is_atomic_and_creates_parents(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.json", ITEMS)
    outputs = write_jsonl(tmp_path / "outputs.jsonl", [*OUTPUTS, {**OUTPUTS[0], "id": 99}])
    out = tmp_path / "a" / "b" / "records.parquet"
    ingest_rgb(data, outputs, out)
    assert sorted(p.name for p in out.parent.iterdir()) == [
        "records.parquet",
        "records.rejected.parquet",
    ]


def test_records_pass_validation(tmp_path: Path) -> None:
    summary, _ = ingest(tmp_path, OUTPUTS)
    validated = load_inputs([summary.records_path], [], Config())
    assert validated.rejected.height == 0
    assert validated.records.height == summary.n_records


# --- the real RGB files --------------------------------------------------------------------------

REAL_FILES = {
    "en_fact": ("counterfactual_robustness", "en"),
    "zh_fact": ("counterfactual_robustness", "zh"),
    "zh_int": ("information_integration", "zh"),
    "zh_refine": ("noise_robustness", "zh"),
}


@pytest.mark.skipif(not RGB_DIR.is_dir(), reason=f"RGB data folder {RGB_DIR} is absent")
@pytest.mark.parametrize("name", sorted(REAL_FILES))
def test_real_rgb_files(tmp_path: Path, name: str) -> None:
    task, language = REAL_FILES[name]
    data = RGB_DIR / f"{name}.json"
    items = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines() if line]
    first_answers = [answer_groups_from_json(item["answer"])[0][0] for item in items]
    outputs = pl.DataFrame(
        {
            "id": [item["id"] for item in items],
            "model": "m",
            "task": task,
            "noise_rate": 0.0,
            "response": first_answers,
        }
    )
    outputs_path = tmp_path / "outputs.parquet"
    outputs.write_parquet(outputs_path)

    summary = ingest_rgb(data, outputs_path, tmp_path / "records.parquet")

    assert (summary.n_items, summary.n_records, summary.n_rejected) == (len(items), len(items), 0)
    records = pl.read_parquet(summary.records_path)
    got = dict(zip(records["id"], records["answer_groups"].to_list(), strict=True))
    assert got == {f"{name}:{item['id']}": answer_groups_from_json(item["answer"])
                   for item in items}
    assert set(records["language"]) == {language}
    assert records["contexts"].list.len().min() > 0  # type: ignore[operator]
    if name.endswith("_fact"):
        assert records["counterfactual_answer"].null_count() == 0
        fake = {f"{name}:{item['id']}": item["fakeanswer"] for item in items}
        assert all(
            answer == fake[key] or answer == fake[key][0]
            for key, answer in records.select("id", "counterfactual_answer").rows()
        )
    else:
        assert records["counterfactual_answer"].null_count() == records.height
