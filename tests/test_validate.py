"""Validation: canonical dtypes for good rows, one clear reason for every rejected row."""

from __future__ import annotations

import json
import math
import re
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.config import Config
from pipeline.io.readers import read_records
from pipeline.schema import (
    PROVENANCE_SCHEMA,
    RECORD_SCHEMA,
    REJECTED_SCHEMA,
    MissingColumnError,
)
from pipeline.validate import Validated, load_inputs, validate_records

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "data" / "examples"
RECORDS_SCHEMA = pl.Schema({**RECORD_SCHEMA, **PROVENANCE_SCHEMA})

GOOD: dict[str, Any] = {
    "id": "q1",
    "question": "Who wrote Dune?",
    "reference": "Frank Herbert",
    "response": "Herbert [1]",
    "citations": [1],
    "gold_citations": [1, 2],
    "contexts": ["Dune is a novel.", "Herbert wrote it."],
    "model": "m1",
    "noise_level": 0.2,
    "prompt_tokens": 120,
    "completion_tokens": 8,
    "latency_ms": 512.5,
}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def validate_jsonl(tmp_path: Path, rows: list[dict[str, Any]]) -> Validated:
    path = write_jsonl(tmp_path / "records.jsonl", rows)
    return validate_records(read_records(path, Config()), str(path), Config())


def validate_csv(tmp_path: Path, header: str, *lines: str) -> Validated:
    path = tmp_path / "records.csv"
    path.write_text("\n".join([header, *lines]) + "\n", encoding="utf-8")
    return validate_records(read_records(path, Config()), str(path), Config())


def reasons(validated: Validated) -> list[str]:
    return validated.rejected["reason"].to_list()


def assert_invariant(validated: Validated) -> None:
    assert validated.records.schema == RECORDS_SCHEMA
    assert validated.rejected.schema == pl.Schema(REJECTED_SCHEMA)
    assert validated.records.height + validated.rejected.height == validated.n_read


def test_good_rows_get_canonical_dtypes(tmp_path: Path) -> None:
    second = dict(GOOD, id="q2", response="", citations=[], prompt_tokens=12.0)
    validated = validate_jsonl(tmp_path, [GOOD, second])
    assert_invariant(validated)
    assert validated.rejected.height == 0
    first = validated.records.row(0, named=True)
    assert {k: first[k] for k in GOOD} == GOOD
    assert first["references"] is None and first["run"] is None  # absent: typed nulls
    assert first["source"] == str(tmp_path / "records.jsonl") and first["row_number"] == 0
    row = validated.records.row(1, named=True)
    assert row["response"] == ""  # empty text is a valid (empty) answer
    assert row["citations"] == []
    assert row["prompt_tokens"] == 12  # exactly integral float accepted


def test_only_required_columns(tmp_path: Path) -> None:
    validated = validate_csv(tmp_path, "id,question,reference,response", "a,q,r,")
    assert_invariant(validated)
    assert validated.records.row(0)[:4] == ("a", "q", "r", "")


# --- every rejection reason ---------------------------------------------------------------------

REASONS: list[tuple[dict[str, Any], str]] = [
    ({"question": None}, "question: is null (required)"),
    ({"id": None}, "id: is null (required)"),
    ({"reference": None}, "reference: is null (required)"),
    ({"response": None}, "response: is null (required)"),
    ({"question": 7}, "question: expected string, got int"),
    ({"response": ["a"]}, "response: expected string, got list"),
    ({"id": 3.5}, "id: expected string, got float"),
    ({"model": {"name": "m"}}, "model: expected string, got object"),
    ({"prompt_tokens": 12.5}, "prompt_tokens: expected an integer, got 12.5"),
    ({"prompt_tokens": "12"}, 'prompt_tokens: expected an integer, got string "12"'),
    ({"completion_tokens": True}, "completion_tokens: expected an integer, got bool"),
    ({"prompt_tokens": 2**70}, f"prompt_tokens: expected an integer, got {2**70}"),
    ({"prompt_tokens": -3}, "prompt_tokens: must not be negative, got -3"),
    ({"latency_ms": -1.5}, "latency_ms: must not be negative, got -1.5"),
    ({"latency_ms": "fast"}, 'latency_ms: expected a finite number, got string "fast"'),
    ({"noise_level": [0.1]}, "noise_level: expected a finite number, got list"),
    ({"citations": ["x"]}, "citations: expected a list of integers, got '[\"x\"]'"),
    ({"citations": 1.5}, "citations: expected a list of integers, got float"),
    ({"citations": [1.5]}, "citations: expected a list of integers, got '[1.5]'"),
    ({"citations": [1, None]}, "citations: expected a list of integers, got '[1, null]'"),
    ({"gold_citations": "1,2"}, "gold_citations: expected a list of integers, got string"),
    ({"contexts": ["a", 2]}, "contexts: expected a list of strings, got '[\"a\", 2]'"),
    ({"citations": [0]}, "citations: [0] outside 1..2 (the number of contexts)"),
    ({"citations": [1, 3]}, "citations: [1, 3] outside 1..2 (the number of contexts)"),
    ({"gold_citations": [2, 5]}, "gold_citations: [2, 5] outside 1..2 (the number of contexts)"),
    (
        {"question": 7, "prompt_tokens": -1},
        "question: expected string, got int; prompt_tokens: must not be negative, got -1",
    ),
]


@pytest.mark.parametrize(("change", "reason"), REASONS, ids=[r for _, r in REASONS])
def test_rejection_reason(tmp_path: Path, change: dict[str, Any], reason: str) -> None:
    bad = dict(GOOD, id="bad", **change) if "id" not in change else dict(GOOD, **change)
    validated = validate_jsonl(tmp_path, [GOOD, bad])
    assert_invariant(validated)
    assert validated.records["id"].to_list() == ["q1"]
    assert reasons(validated) == [reason]
    rejected = validated.rejected.row(0, named=True)
    assert rejected["row_number"] == 1
    assert rejected["source"] == str(tmp_path / "records.jsonl")
    assert rejected["id"] == (bad["id"] if isinstance(bad["id"], str) else None)
    assert json.loads(rejected["raw"]) == bad  # the row as read, nothing lost


def test_citations_unchecked_without_contexts(tmp_path: Path) -> None:
    row = {k: v for k, v in GOOD.items() if k != "contexts"}
    validated = validate_jsonl(tmp_path, [dict(row, citations=[7, 9])])
    assert validated.records["citations"].to_list() == [[7, 9]]
    missing = dict(GOOD, contexts=None, citations=[7])  # null contexts on this row only
    assert validate_jsonl(tmp_path, [missing]).records["citations"].to_list() == [[7]]


def test_citations_against_empty_contexts(tmp_path: Path) -> None:
    validated = validate_jsonl(
        tmp_path, [dict(GOOD, contexts=[], citations=[1], gold_citations=[])]
    )
    assert reasons(validated) == ["citations: [1] outside 1..0 (the number of contexts)"]


def test_non_finite_numbers_are_rejected() -> None:
    frame = pl.DataFrame(
        {
            "id": ["a", "b", "c"],
            "question": ["q"] * 3,
            "reference": ["r"] * 3,
            "response": ["s"] * 3,
            "latency_ms": [math.nan, math.inf, 3.0],
            "prompt_tokens": [1.0, 2.0**60, 3.0],
        }
    )
    validated = validate_records(frame, "mem", Config())
    assert_invariant(validated)
    assert reasons(validated) == [
        "latency_ms: expected a finite number, got NaN",
        # reasons follow the column order of RECORD_SCHEMA
        "prompt_tokens: expected an integer, got 1.152921504606847e+18; "
        "latency_ms: expected a finite number, got inf",
    ]
    assert validated.records["prompt_tokens"].to_list() == [3]


def test_parquet_dtypes(tmp_path: Path) -> None:
    frame = pl.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "question": pl.Series(["q"] * 4, dtype=pl.Categorical),
            "reference": ["r"] * 4,
            "response": [1, 2, None, 4],
            "citations": pl.Series([[1], [2], [3], []], dtype=pl.List(pl.Int32)),
            "gold_citations": [[1.0], [1.5], [None], []],
            "contexts": pl.Series([["x"], ["x", "y"], None, []], dtype=pl.List(pl.String)),
            "noise_level": pl.Series([0, 1, 2, 3], dtype=pl.Int8),
            "prompt_tokens": pl.Series([1, 2**64 - 1, 3, 4], dtype=pl.UInt64),
        }
    )
    path = tmp_path / "typed.parquet"
    frame.write_parquet(path)
    validated = validate_records(read_records(path, Config()), str(path), Config())
    assert_invariant(validated)
    assert reasons(validated) == [
        "response: expected string, got int",
        "response: expected string, got int; "
        "gold_citations: expected a list of integers, got [1.5]; "
        "prompt_tokens: expected an integer, got 18446744073709551615",
        "response: is null (required); gold_citations: expected a list of integers, got [null]",
        "response: expected string, got int",
    ]
    raw = json.loads(validated.rejected["raw"][1])
    assert raw["prompt_tokens"] == 2**64 - 1 and raw["gold_citations"] == [1.5]


def test_parquet_valid_dtypes_are_cast() -> None:
    frame = pl.DataFrame(
        {
            "id": ["a"],
            "question": pl.Series(["q"], dtype=pl.Categorical),
            "reference": ["r"],
            "response": ["s"],
            "citations": pl.Series([[1, 2]], dtype=pl.List(pl.UInt8)),
            "gold_citations": [[2.0]],
            "contexts": [["x", "y"]],
            "noise_level": pl.Series([1], dtype=pl.Int16),
            "prompt_tokens": pl.Series([7.0], dtype=pl.Float32),
            "latency_ms": pl.Series([3], dtype=pl.Int64),
        }
    )
    validated = validate_records(frame, "mem", Config())
    assert_invariant(validated)
    row = validated.records.row(0, named=True)
    assert row["citations"] == [1, 2] and row["gold_citations"] == [2]
    assert row["noise_level"] == 1.0 and row["prompt_tokens"] == 7 and row["latency_ms"] == 3.0
    assert row["source"] == "mem" and row["row_number"] == 0  # provenance added when absent


def test_valid_records_come_in_one_chunk_per_column() -> None:
    """Polars' auto engine returned every column of a 100k-row chunk in two pieces, which the
    row hashes, the texts writer and the kernels then each copied into one (the row hashes of
    1M short records: 0.82-1.11 s against 0.51-0.62): validation collects in memory, one piece
    a column."""
    n = 100_000
    frame = pl.DataFrame({
        "id": [f"q{i}" for i in range(n)], "question": ["q"] * n, "reference": ["r"] * n,
        "response": ["s"] * n, "contexts": [["x", "y"]] * n,
    })
    validated = validate_records(frame, "mem", Config(), check_duplicates=False)
    assert validated.records.height == n
    assert {column.n_chunks() for column in validated.records.get_columns()} == {1}


def test_decimal_numbers_are_accepted() -> None:
    frame = pl.DataFrame(
        {"id": ["a", "b"], "question": ["q"] * 2, "reference": ["r"] * 2, "response": ["s"] * 2}
    ).with_columns(
        noise_level=pl.Series(["0.25", "0.5"]).str.to_decimal(scale=2),
        prompt_tokens=pl.Series(["12.00", "12.50"]).str.to_decimal(scale=2),
    )
    validated = validate_records(frame, "mem", Config())
    assert validated.records.select("noise_level", "prompt_tokens").rows() == [(0.25, 12)]
    assert reasons(validated) == ["prompt_tokens: expected an integer, got 12.50"]


def test_binary_text_column_is_rejected_and_kept_in_raw() -> None:
    frame = pl.DataFrame(
        {"id": ["a"], "question": [b"\xff"], "reference": ["r"], "response": ["s"]}
    )
    validated = validate_records(frame, "mem", Config())
    assert reasons(validated) == ["question: expected string, got binary"]
    assert json.loads(validated.rejected["raw"][0])["question"] == "/w=="  # base64


# --- text formats -------------------------------------------------------------------------------


def test_csv_numbers_are_parsed_strictly(tmp_path: Path) -> None:
    validated = validate_csv(
        tmp_path,
        "id,question,reference,response,prompt_tokens,noise_level,latency_ms",
        "a,q,r,s, 7 ,0.5,1e3",
        "b,q,r,s,+12,.25,0",
        "c,q,r,s,12.0,-0,",
        "d,q,r,s,abc,0.5,1",
        "e,q,r,s,7,nan,1",
        "f,q,r,s,1.5,0.1,inf",
        "g,q,r,s,99999999999999999999,1,1",
        'h,q,r,s,"1,5",1,1',
    )
    assert_invariant(validated)
    assert validated.records.select("id", "prompt_tokens", "noise_level", "latency_ms").rows() == [
        ("a", 7, 0.5, 1000.0),
        ("b", 12, 0.25, 0.0),
        ("c", 12, 0.0, None),
    ]
    assert reasons(validated) == [
        "prompt_tokens: expected an integer, got 'abc'",
        "noise_level: expected a finite number, got 'nan'",
        "prompt_tokens: expected an integer, got '1.5'; "
        "latency_ms: expected a finite number, got 'inf'",
        "prompt_tokens: expected an integer, got '99999999999999999999'",
        "prompt_tokens: expected an integer, got '1,5'",
    ]


def test_csv_lists_are_json_text(tmp_path: Path) -> None:
    validated = validate_csv(
        tmp_path,
        "id,question,reference,response,citations,contexts",
        'a,q,r,s,"[1, 2]","[""x"", ""y\\u00e9 \\ud83d\\ude00""]"',
        "b,q,r,s,[],",
        "c,q,r,s, ,[]",
        'd,q,r,s,[1.0],"[""x""]"',
        'e,q,r,s,"[""1""]","[""x""]"',
        'f,q,r,s,[01],"[""x"",]"',
        'g,q,r,s,"1, 2","[null]"',
        'h,q,r,s,[true],"[""\\ud800""]"',
        "i,q,r,s,[99999999999999999999],[x]",
    )
    assert_invariant(validated)
    assert validated.records.select("id", "citations", "contexts").rows() == [
        ("a", [1, 2], ["x", "yé 😀"]),
        ("b", [], None),
        ("c", None, []),
        ("d", [1], ["x"]),
    ]
    assert reasons(validated) == [
        "citations: expected a list of integers, got '[\"1\"]'",
        "citations: expected a list of integers, got '[01]'; "
        "contexts: expected a list of strings, got '[\"x\",]'",
        "citations: expected a list of integers, got '1, 2'; "
        "contexts: expected a list of strings, got '[null]'",
        "citations: expected a list of integers, got '[true]'; "
        "contexts: expected a list of strings, got '[\"\\ud800\"]'",
        "citations: expected a list of integers, got '[99999999999999999999]'; "
        "contexts: expected a list of strings, got '[x]'",
    ]


def test_long_text_is_shortened_in_reasons(tmp_path: Path) -> None:
    validated = validate_csv(
        tmp_path, "id,question,reference,response,prompt_tokens", f"a,q,r,s,{'9' * 40}x{'9' * 40}"
    )
    (reason,) = reasons(validated)
    assert reason.startswith("prompt_tokens: expected an integer, got '9999")
    assert reason.endswith("...'") and len(reason) < 110


# --- duplicates ---------------------------------------------------------------------------------


def test_duplicates_keep_the_first(tmp_path: Path) -> None:
    rows = [
        GOOD,
        dict(GOOD, model="m2"),  # another model: not a duplicate
        dict(GOOD, noise_level=0.4),  # another noise level: not a duplicate
        dict(GOOD, run="r2"),  # another run: not a duplicate
        dict(GOOD, response="again"),
        dict(GOOD, model="m2", response="again"),
    ]
    validated = validate_jsonl(tmp_path, rows)
    assert_invariant(validated)
    assert validated.records["row_number"].to_list() == [0, 1, 2, 3]
    assert validated.rejected.select("row_number", "reason").rows() == [
        (4, "duplicate id 'q1' (first at row 0)"),
        (5, "duplicate id 'q1' (first at row 1)"),
    ]


def test_duplicate_of_a_rejected_row_is_kept(tmp_path: Path) -> None:
    rows = [dict(GOOD, question=None), GOOD, GOOD]
    validated = validate_jsonl(tmp_path, rows)
    assert validated.records["row_number"].to_list() == [1]
    assert reasons(validated) == [
        "question: is null (required)",
        "duplicate id 'q1' (first at row 1)",
    ]


def test_duplicates_with_missing_key_columns(tmp_path: Path) -> None:
    validated = validate_csv(tmp_path, "id,question,reference,response", "a,q,r,s", "a,q2,r,s")
    assert reasons(validated) == ["duplicate id 'a' (first at row 0)"]


# --- errors, empty input, several inputs --------------------------------------------------------


def test_missing_required_column() -> None:
    frame = pl.DataFrame({"id": ["a"], "question": ["q"], "response": ["s"]})
    with pytest.raises(MissingColumnError, match=r"in\.jsonl: required column 'reference'"):
        validate_records(frame, "in.jsonl", Config())


def test_missing_mapped_column_message() -> None:
    frame = pl.DataFrame({"id": ["a"], "question": ["q"], "reference": ["r"]})
    with pytest.raises(MissingColumnError, match="maps it to 'answer'"):
        validate_records(frame, "in.jsonl", Config(columns={"response": "answer"}))


def test_empty_frame() -> None:
    frame = pl.DataFrame(
        schema={
            "id": pl.String,
            "question": pl.String,
            "reference": pl.String,
            "response": pl.String,
        }
    )
    validated = validate_records(frame, "empty", Config())
    assert_invariant(validated)
    assert validated.n_read == 0


def test_load_inputs_concatenates_files_and_pairs(tmp_path: Path) -> None:
    first = write_jsonl(tmp_path / "a.jsonl", [GOOD, dict(GOOD, id="x", question=1)])
    second = write_jsonl(tmp_path / "b.jsonl", [GOOD])  # same key in another file: allowed
    validated = load_inputs(
        [first, second, EXAMPLES / "format3" / "records.tsv"],
        [
            (EXAMPLES / "format1" / "gpt-4o-mini.json", EXAMPLES / "format1" / "references.json"),
            (EXAMPLES / "format2" / "llama-3-8b.json", EXAMPLES / "format2" / "gold.json"),
        ],
        Config(),
    )
    assert_invariant(validated)
    assert validated.n_read == 2 + 1 + 4 + (3 + 2) + 3
    assert validated.records.height == 1 + 1 + 4 + 3 + 3
    assert validated.rejected.select("id", "reason").rows() == [
        ("x", "question: expected string, got int"),
        ("q9", "prediction without reference"),
        ("q4", "reference without prediction"),
    ]
    assert validated.records.filter(pl.col("model") == "llama-3-8b")["question"].to_list() == [
        "",
        "",
        "",
    ]


def test_load_inputs_without_inputs() -> None:
    validated = load_inputs([], [], Config())
    assert_invariant(validated)
    assert validated.n_read == 0


def test_pair_rows_are_validated(tmp_path: Path) -> None:
    preds = tmp_path / "m.json"
    golds = tmp_path / "gold.json"
    preds.write_text(
        json.dumps([{"answer": "a", "citations": ["x"]}, {"answer": None, "citations": [1]}]),
        "utf-8",
    )
    golds.write_text(
        json.dumps([{"answer": "g", "citations": [1]}, {"answer": "g", "citations": [1]}]), "utf-8"
    )
    validated = load_inputs([], [(preds, golds)], Config())
    assert_invariant(validated)
    assert reasons(validated) == [
        "citations: expected a list of integers, got '[\"x\"]'",
        "response: is null (required)",
    ]


# --- property: every row read is either a record or rejected with its defect --------------------

DEFECTS: dict[str, tuple[dict[str, Any], str]] = {
    "null question": ({"question": None}, "question: is null (required)"),
    "int response": ({"response": 3}, "response: expected string, got int"),
    "fractional tokens": ({"prompt_tokens": 1.5}, "prompt_tokens: expected an integer"),
    "negative latency": ({"latency_ms": -1}, "latency_ms: must not be negative"),
    "text citations": ({"citations": ["1"]}, "citations: expected a list of integers"),
    "citation range": ({"citations": [3]}, "citations: [3] outside 1..2"),
}
#: Defects a CSV file cannot express: an empty cell is "" and "3" is text.
JSON_ONLY = {"null question", "int response"}


@settings(max_examples=examples(40), deadline=None)
@given(
    plan=st.lists(st.sampled_from([None, "duplicate", *DEFECTS]), min_size=1, max_size=25),
    csv=st.booleans(),
)
def test_every_row_is_scored_or_rejected(plan: list[str | None], csv: bool) -> None:
    rows: list[dict[str, Any]] = []
    expected: dict[int, str] = {}
    good_ids: list[str] = []
    for index, defect in enumerate(plan):
        row = dict(GOOD, id=f"q{index}")
        if csv and defect in JSON_ONLY:
            defect = None
        if defect == "duplicate" and good_ids:
            row["id"] = good_ids[0]
            expected[index] = f"duplicate id '{good_ids[0]}' (first at row "
        elif defect in DEFECTS:
            change, reason = DEFECTS[defect]
            row.update(change)
            expected[index] = reason
        else:
            good_ids.append(row["id"])
        rows.append(row)

    with tempfile.TemporaryDirectory() as tmp:
        if csv:
            path = Path(tmp) / "records.csv"
            pl.DataFrame(
                [{k: _cell(v) for k, v in row.items()} for row in rows],
                schema={k: pl.String for k in GOOD},
            ).write_csv(path)
        else:
            path = write_jsonl(Path(tmp) / "records.jsonl", rows)
        validated = validate_records(read_records(path, Config()), str(path), Config())

    assert_invariant(validated)
    assert validated.n_read == len(rows)
    assert validated.records["id"].to_list() == good_ids
    rejected = dict(validated.rejected.select("row_number", "reason").iter_rows())
    assert sorted(rejected) == sorted(expected)
    for row_number, reason in expected.items():
        assert rejected[row_number].startswith(reason), (rejected[row_number], reason)


def _cell(value: Any) -> str | None:
    """A value as a CSV cell: text as is, lists as JSON, numbers in decimal."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value)


def test_no_row_loops_in_validation_code() -> None:
    pattern = re.compile(r"map_elements|iter_rows|iterrows|for .* in zip\(")
    for name in ("pipeline/io/readers.py", "pipeline/io/pairs.py", "pipeline/validate.py"):
        assert not pattern.search((ROOT / name).read_text(encoding="utf-8")), name


# --- RGB columns --------------------------------------------------------------------------------

RGB_GOOD = {**GOOD, "task": "noise_robustness", "answer_groups": [["Herbert", "Frank Herbert"]]}


def test_answer_groups_from_jsonl_and_task(tmp_path: Path) -> None:
    rows = [
        RGB_GOOD,
        {**RGB_GOOD, "id": "q2", "answer_groups": [["a"], []]},  # an empty group
        {**RGB_GOOD, "id": "q3", "answer_groups": ["a"]},  # not nested
        {**RGB_GOOD, "id": "q4", "task": "noise"},
        {**RGB_GOOD, "id": "q5", "answer_groups": None},
        {**RGB_GOOD, "id": "q6", "task": "negative_rejection", "answer_groups": None},
    ]
    checked = validate_jsonl(tmp_path, rows)
    assert checked.records["id"].to_list() == ["q1", "q6"]
    assert checked.records["answer_groups"].to_list() == [[["Herbert", "Frank Herbert"]], None]
    reasons = dict(zip(checked.rejected["id"], checked.rejected["reason"], strict=True))
    expected = "answer_groups: expected a list of non-empty lists of strings"
    assert reasons["q2"] == f"{expected}, got '[[\"a\"], []]'"
    assert reasons["q3"] == f"{expected}, got '[\"a\"]'"
    assert reasons["q4"].startswith("task: unknown task 'noise'; known: noise_robustness, ")
    assert reasons["q5"] == "task: noise_robustness rows need answer_groups"


def test_answer_groups_as_json_text_in_csv(tmp_path: Path) -> None:
    checked = validate_csv(
        tmp_path, "id\tquestion\treference\tresponse\tanswer_groups".replace("\t", ","),
        'a,q,r,x,"[[""Paris""], [""1912"", ""in 1912""]]"',
        'b,q,r,x,"[[""Paris"", null]]"',
    )
    assert checked.records["answer_groups"].to_list() == [[["Paris"], ["1912", "in 1912"]]]
    assert checked.rejected["reason"].to_list() == [
        "answer_groups: expected a list of non-empty lists of strings, got '[[\"Paris\", null]]'"
    ]


def test_task_is_part_of_the_duplicate_key(tmp_path: Path) -> None:
    rows = [RGB_GOOD, {**RGB_GOOD, "task": "counterfactual_robustness"}, RGB_GOOD]
    checked = validate_jsonl(tmp_path, rows)
    assert checked.records.height == 2
    assert checked.rejected["reason"].to_list() == ["duplicate id 'q1' (first at row 0)"]
