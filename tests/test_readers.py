"""Readers for every input format and the legacy prediction/reference pairs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.config import Config
from pipeline.io.pairs import PairResult, read_prediction_pair
from pipeline.io.parquet_input import FIRST_SLICE_ROWS, parquet_slices
from pipeline.io.readers import JSON_VALUE, iter_records, read_frame, read_records
from pipeline.schema import REJECTED_SCHEMA, InputError, MissingColumnError

EXAMPLES = Path(__file__).resolve().parent.parent / "data" / "examples"

ROWS: list[dict[str, Any]] = [
    {
        "id": "q1",
        "question": "Who wrote Dune?",
        "reference": "Frank Herbert",
        "response": "Herbert",
        "citations": [1],
        "contexts": ["Dune is a novel by Frank Herbert."],
        "model": "m1",
        "noise_level": 0.2,
        "prompt_tokens": 12,
        "extra": "dropped",
    },
    {
        "id": "q2",
        "question": "Capital of France?",
        "reference": "Paris",
        "response": "",
        "citations": [],
        "contexts": [],
        "model": "m1",
        "noise_level": 0.0,
        "prompt_tokens": 7,
        "extra": "dropped",
    },
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def write_json(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")
    return path


def test_parquet_reads_canonical_columns_with_provenance(tmp_path: Path) -> None:
    path = tmp_path / "records.parquet"
    pl.DataFrame(ROWS).write_parquet(path)
    frame = read_records(path, Config())
    assert frame.columns == [
        "id",
        "question",
        "reference",
        "response",
        "citations",
        "contexts",
        "model",
        "noise_level",
        "prompt_tokens",
        "source",
        "row_number",
    ]
    assert frame["id"].to_list() == ["q1", "q2"]
    assert frame["response"].to_list() == ["Herbert", ""]
    assert frame["citations"].to_list() == [[1], []]
    assert frame["source"].to_list() == [str(path)] * 2
    assert frame.schema["row_number"] == pl.Int64
    assert frame["row_number"].to_list() == [0, 1]


def test_parquet_keeps_stored_dtypes(tmp_path: Path) -> None:
    path = tmp_path / "typed.parquet"
    pl.DataFrame(
        {
            "id": ["a"],
            "question": ["q"],
            "reference": ["r"],
            "response": ["s"],
            "prompt_tokens": [12.0],
        }
    ).write_parquet(path)
    frame = read_records(path, Config())
    assert frame.schema["prompt_tokens"] == pl.Float64  # validation decides, not the reader


def test_source_is_the_path_as_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_jsonl(tmp_path / "r.jsonl", ROWS)
    monkeypatch.chdir(tmp_path)
    assert read_records("r.jsonl", Config())["source"].to_list() == ["r.jsonl", "r.jsonl"]


@pytest.mark.parametrize("suffix", [".jsonl", ".ndjson"])
def test_jsonl_values_and_blank_lines(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"records{suffix}"
    path.write_text(json.dumps(ROWS[0]) + "\n\n" + json.dumps(ROWS[1]) + "\n\n", encoding="utf-8")
    frame = read_records(path, Config())
    assert frame["id"].to_list() == ["q1", "q2"]
    assert frame["row_number"].to_list() == [0, 1]  # records, not lines
    assert frame.schema["question"] == pl.String
    assert frame.schema["citations"] == pl.List(pl.Int64)
    assert frame.schema["contexts"] == pl.List(pl.String)
    assert frame.schema["noise_level"] == pl.Float64
    assert frame.schema["prompt_tokens"] == pl.Int64
    assert frame["noise_level"].to_list() == [0.2, 0.0]
    assert "extra" not in frame.columns


def test_json_array_matches_jsonl(tmp_path: Path) -> None:
    from_json = read_records(write_json(tmp_path / "r.json", ROWS), Config())
    from_jsonl = read_records(write_jsonl(tmp_path / "r.jsonl", ROWS), Config())
    assert from_json.drop("source").equals(from_jsonl.drop("source"))


def test_json_mixed_types_are_kept_as_json_values(tmp_path: Path) -> None:
    rows = [dict(ROWS[0]), dict(ROWS[1], question=7, prompt_tokens="7", citations=["1"])]
    frame = read_records(write_jsonl(tmp_path / "mixed.jsonl", rows), Config())
    assert frame.schema["question"] == JSON_VALUE
    assert frame.schema["prompt_tokens"] == JSON_VALUE
    assert frame.schema["citations"] == JSON_VALUE
    question = frame["question"].struct.unnest()
    assert question["kind"].to_list() == ["string", "int"]
    assert question["string"].to_list() == ["Who wrote Dune?", None]
    assert question["int"].to_list() == [None, 7]
    assert question["json"].to_list() == ['"Who wrote Dune?"', "7"]
    assert frame["citations"].struct.field("json").to_list() == ["[1]", '["1"]']


def test_json_huge_integer_is_not_rounded(tmp_path: Path) -> None:
    rows = [dict(ROWS[0], prompt_tokens=2**70)]
    frame = read_records(write_jsonl(tmp_path / "big.jsonl", rows), Config())
    tokens = frame["prompt_tokens"].struct.unnest()
    assert tokens["kind"].to_list() == ["int"]
    assert tokens["int"].to_list() == [None]
    assert tokens["json"].to_list() == [str(2**70)]


def test_json_floats_for_an_integer_column_stay_floats(tmp_path: Path) -> None:
    rows = [dict(ROWS[0], prompt_tokens=12.0), dict(ROWS[1], prompt_tokens=7.5)]
    frame = read_records(write_jsonl(tmp_path / "f.jsonl", rows), Config())
    assert frame.schema["prompt_tokens"] == pl.Float64
    assert frame["prompt_tokens"].to_list() == [12.0, 7.5]


def test_json_ints_and_floats_for_a_float_column(tmp_path: Path) -> None:
    rows = [dict(ROWS[0], noise_level=0), dict(ROWS[1], noise_level=0.5)]
    frame = read_records(write_jsonl(tmp_path / "n.jsonl", rows), Config())
    assert frame.schema["noise_level"] == pl.Float64
    assert frame["noise_level"].to_list() == [0.0, 0.5]


def test_csv_reads_every_column_as_text(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text(
        "id,question,reference,response,prompt_tokens,citations,model,unused\n"
        '1,"Who, exactly?",Herbert,,12,"[1, 2]",,x\n'
        '2,"say ""hi""",r,s,,,m,y\n',
        encoding="utf-8",
    )
    frame = read_records(path, Config())
    assert all(dtype == pl.String for dtype in frame.drop("row_number").schema.values())
    assert frame["id"].to_list() == ["1", "2"]
    assert frame["question"].to_list() == ["Who, exactly?", 'say "hi"']
    assert frame["response"].to_list() == ["", "s"]  # empty required text stays ""
    assert frame["prompt_tokens"].to_list() == ["12", None]  # empty optional cell: missing
    assert frame["citations"].to_list() == ["[1, 2]", None]
    assert frame["model"].to_list() == [None, "m"]
    assert "unused" not in frame.columns


def test_csv_with_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes("\ufeffid,question,reference,response\na,q,r,s\n".encode())
    assert read_records(path, Config())["id"].to_list() == ["a"]


def test_tsv(tmp_path: Path) -> None:
    path = tmp_path / "r.tsv"
    path.write_text("id\tquestion\treference\tresponse\na\tq, with comma\tr\ts\n", "utf-8")
    frame = read_records(path, Config())
    assert frame.row(0) == ("a", "q, with comma", "r", "s", str(path), 0)


def test_legacy_format_3_tsv_example() -> None:
    frame = read_records(EXAMPLES / "format3" / "records.tsv", Config())
    assert frame.columns == [
        "id",
        "question",
        "reference",
        "response",
        "category",
        "source",
        "row_number",
    ]
    assert frame["id"].to_list() == ["t1", "t2", "t3", "t4"]
    assert frame["category"].to_list() == ["history", "science", "geography", "science"]
    assert frame["reference"][1] == "carbon dioxide"
    assert frame["response"][3] == ""  # the model gave no answer


def test_mapped_columns_are_renamed(tmp_path: Path) -> None:
    path = tmp_path / "mapped.csv"
    path.write_text("qid,prompt,gold,answer,response\n7,q,r,s,ignored\n", encoding="utf-8")
    config = Config(
        columns={"id": "qid", "question": "prompt", "reference": "gold", "response": "answer"}
    )
    frame = read_records(path, config)
    assert frame.columns == ["id", "question", "reference", "response", "source", "row_number"]
    assert frame.row(0)[:4] == ("7", "q", "r", "s")


def test_mapping_onto_another_canonical_name(tmp_path: Path) -> None:
    path = tmp_path / "swapped.csv"
    path.write_text("id,response,text,reference\na,the question,the answer,r\n", "utf-8")
    config = Config(columns={"question": "response", "response": "text"})
    frame = read_records(path, config)
    assert frame.select("question", "response").row(0) == ("the question", "the answer")
    with pytest.raises(
        MissingColumnError,
        match="required column 'response' is missing: the file's 'response' column is read as "
        "'question'",
    ):
        read_records(path, Config(columns={"question": "response"}))


# --- malformed and unusable files ---------------------------------------------------------------


def test_unknown_extension(tmp_path: Path) -> None:
    path = tmp_path / "records.xlsx"
    path.write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match=r"records\.xlsx: unknown file extension '\.xlsx'"):
        read_records(path, Config())


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope\.jsonl: file not found"):
        read_records(tmp_path / "nope.jsonl", Config())


@pytest.mark.parametrize("name", ["e.parquet", "e.jsonl", "e.json", "e.csv", "e.tsv"])
def test_empty_file(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_bytes(b"")
    with pytest.raises(InputError, match=f"{re.escape(name)}: the file is empty"):
        read_records(tmp_path / name, Config())


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("blank.jsonl", "\n  \n"),
        ("empty.json", "[]"),
        ("header.csv", "id,question,reference,response\n"),
    ],
)
def test_file_without_records(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match="contains no records"):
        read_records(tmp_path / name, Config())


def test_invalid_jsonl_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n" + '{"id": "q2", "question": }\n', "utf-8")
    with pytest.raises(InputError, match=r"bad\.jsonl: line 2: invalid JSON: Expecting value"):
        read_records(path, Config())


def test_jsonl_line_that_is_not_an_object(tmp_path: Path) -> None:
    path = tmp_path / "list.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n[1, 2]\n", "utf-8")
    with pytest.raises(InputError, match="line 2: expected a JSON object, got list"):
        read_records(path, Config())


def test_invalid_json_array_names_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[\n  {"id": "a"},\n  {"id": "b",}\n]\n', "utf-8")
    with pytest.raises(InputError, match=r"bad\.json: invalid JSON at line 3, column 14"):
        read_records(path, Config())


def test_json_that_is_not_an_array_of_objects(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="expected a JSON array of objects, got object"):
        read_records(write_json(tmp_path / "obj.json", ROWS[0]), Config())
    with pytest.raises(InputError, match="array element 1 is int, expected an object"):
        read_records(write_json(tmp_path / "mixed.json", [ROWS[0], 3]), Config())


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes('{"id": "caf\xe9"}\n'.encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8"):
        read_records(path, Config())


def test_corrupt_parquet(tmp_path: Path) -> None:
    path = tmp_path / "corrupt.parquet"
    path.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(InputError, match=r"corrupt\.parquet: not a readable Parquet file"):
        read_records(path, Config())


def test_ragged_csv(tmp_path: Path) -> None:
    # A row with more fields than the header is a rejected row, not a broken file
    # (tests/test_input_delimited.py has the full rules).
    path = tmp_path / "ragged.csv"
    path.write_text("id,question,reference,response\na,q,r,s,extra,more\n", "utf-8")
    frame = read_records(path, Config())
    assert frame["__reader_problem"].to_list() == [
        "line 2: expected 4 fields as in the header, got 6"
    ]


def test_missing_required_column_names_column_and_file(tmp_path: Path) -> None:
    rows = [{k: v for k, v in row.items() if k != "reference"} for row in ROWS]
    path = write_jsonl(tmp_path / "noref.jsonl", rows)
    with pytest.raises(MissingColumnError) as info:
        read_records(path, Config())
    message = str(info.value)
    assert info.value.column == "reference"
    assert str(path) in message
    assert "'reference'" in message
    assert "extra" in message  # lists the columns the file does have


def test_missing_mapped_column_shows_source_name(tmp_path: Path) -> None:
    path = tmp_path / "r.parquet"
    pl.DataFrame(ROWS).drop("extra").write_parquet(path)
    with pytest.raises(MissingColumnError) as info:
        read_records(path, Config(columns={"response": "answer"}))
    message = str(info.value)
    assert "'response'" in message
    assert "'answer'" in message
    assert 'response = "answer"' in message


# --- legacy pairs -------------------------------------------------------------------------------


def qa(qid: Any, answer: str, **extra: Any) -> dict[str, Any]:
    return {
        "question_id": qid,
        "doc_id": f"d-{qid}",
        "question": f"question {qid}",
        "type": "factoid",
        "answer": answer,
        **extra,
    }


def pair(tmp_path: Path, preds: list[Any], refs: list[Any], name: str = "model-a") -> PairResult:
    return read_prediction_pair(
        write_json(tmp_path / f"{name}.json", preds),
        write_json(tmp_path / "refs.json", refs),
        Config(),
    )


def test_format_1_matches_by_question_id(tmp_path: Path) -> None:
    result = pair(
        tmp_path,
        [qa("q2", "pred 2"), qa("q1", "pred 1")],
        [qa("q1", "gold 1", question="reference wording"), qa("q2", "gold 2")],
    )
    records = result.records
    assert records.columns == [
        "id",
        "question",
        "reference",
        "response",
        "model",
        "question_type",
        "doc_id",
        "source",
        "row_number",
    ]
    assert records.rows() == [
        (
            "q2",
            "question q2",
            "gold 2",
            "pred 2",
            "model-a",
            "factoid",
            "d-q2",
            str(tmp_path / "model-a.json"),
            0,
        ),
        (
            "q1",
            "reference wording",
            "gold 1",
            "pred 1",
            "model-a",
            "factoid",
            "d-q1",
            str(tmp_path / "model-a.json"),
            1,
        ),
    ]
    assert result.rejected.height == 0
    assert result.rejected.schema == pl.Schema(REJECTED_SCHEMA)


def test_format_1_reports_unmatched_rows(tmp_path: Path) -> None:
    result = pair(
        tmp_path,
        [qa("q1", "p1"), qa("q9", "p9")],
        [qa("q1", "g1"), qa("q4", "g4")],
    )
    assert result.records["id"].to_list() == ["q1"]
    rejected = result.rejected.to_dicts()
    assert [(r["source"], r["row_number"], r["id"], r["reason"]) for r in rejected] == [
        (str(tmp_path / "model-a.json"), 1, "q9", "prediction without reference"),
        (str(tmp_path / "refs.json"), 1, "q4", "reference without prediction"),
    ]
    assert json.loads(rejected[0]["raw"]) == qa("q9", "p9")


def test_format_1_integer_ids_model_field_and_bad_ids(tmp_path: Path) -> None:
    result = pair(
        tmp_path,
        [qa(1, "p1", model="gpt-x"), qa(2, "p2"), qa(None, "p?"), qa(1.5, "p1.5")],
        [qa(1, "g1"), qa("2", "g2"), qa(2, "g2 again")],
    )
    assert result.records.select("id", "response", "reference", "model").rows() == [
        ("1", "p1", "g1", "gpt-x"),
        ("2", "p2", "g2", "model-a"),  # 2 and "2" are the same question id
    ]
    assert result.rejected.select("row_number", "id", "reason").rows() == [
        (2, None, "question_id: missing"),
        (3, None, "question_id: expected string or integer, got float"),
        (2, "2", "duplicate question_id '2' in references (first at row 1)"),
    ]


def test_format_2_matches_by_position(tmp_path: Path) -> None:
    preds = [{"answer": "a0 [1]", "citations": [1]}, {"answer": "a1", "citations": []}]
    golds = [{"answer": "g0", "citations": [1, 2]}, {"answer": "g1", "citations": [3]}]
    result = pair(tmp_path, preds, golds, name="llama")
    assert result.records.columns == [
        "id",
        "question",
        "reference",
        "response",
        "citations",
        "gold_citations",
        "model",
        "source",
        "row_number",
    ]
    assert result.records.drop("source").rows() == [
        ("0", "", "g0", "a0 [1]", [1], [1, 2], "llama", 0),
        ("1", "", "g1", "a1", [], [3], "llama", 1),
    ]
    assert result.rejected.height == 0


def test_format_2_length_mismatch(tmp_path: Path) -> None:
    preds = [{"answer": "a", "citations": []}] * 3
    golds = [{"answer": "g", "citations": []}] * 2
    with pytest.raises(InputError) as info:
        pair(tmp_path, preds, golds)
    message = str(info.value)
    assert str(tmp_path / "model-a.json") in message and "has 3 entries" in message
    assert str(tmp_path / "refs.json") in message and "has 2" in message


def test_pair_of_unknown_shape(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a legacy pair"):
        pair(tmp_path, [{"text": "a"}], [{"text": "b"}])
    with pytest.raises(InputError, match=r"legacy format 1 .* needs the field"):
        pair(tmp_path, [qa("q1", "a")], [{"answer": "b", "citations": []}])


def test_pair_files_must_be_json_arrays(tmp_path: Path) -> None:
    (tmp_path / "refs.json").write_text("", "utf-8")
    with pytest.raises(InputError, match=r"refs\.json: the file is empty"):
        read_prediction_pair(
            write_json(tmp_path / "p.json", [qa("q", "a")]), tmp_path / "refs.json", Config()
        )


def test_legacy_examples() -> None:
    one = read_prediction_pair(
        EXAMPLES / "format1" / "gpt-4o-mini.json",
        EXAMPLES / "format1" / "references.json",
        Config(),
    )
    assert one.records["id"].to_list() == ["q1", "q2", "q3"]
    assert one.records["model"].unique().to_list() == ["gpt-4o-mini"]
    assert one.rejected.select("id", "reason").rows() == [
        ("q9", "prediction without reference"),
        ("q4", "reference without prediction"),
    ]
    two = read_prediction_pair(
        EXAMPLES / "format2" / "llama-3-8b.json", EXAMPLES / "format2" / "gold.json", Config()
    )
    assert two.records["id"].to_list() == ["0", "1", "2"]
    assert two.records["gold_citations"].to_list() == [[1, 2], [3], []]


def test_read_frame_reads_an_in_memory_frame_as_the_parquet_reader(tmp_path: Path) -> None:
    frame = pl.DataFrame(ROWS).drop("id").rename({"question": "user_input"})
    path = tmp_path / "rows.parquet"
    frame.write_parquet(path)
    config = Config(input_labels={"<data>": {"run": "r1"}, str(path): {"run": "r1"}})
    from_file = read_records(path, config)
    for data in (frame, frame.lazy()):
        read = read_frame(data, "<data>", config)
        assert read.drop("source").equals(from_file.drop("source"))  # derived ids, labels
        assert read["source"].unique().to_list() == ["<data>"]
    with pytest.raises(InputError, match="<data>: the data holds no records"):
        read_frame(frame.clear(), "<data>", config)
    with pytest.raises(MissingColumnError, match="response"):
        read_frame(frame.drop("response"), "<data>", Config())


def test_the_first_slice_is_cut_so_the_first_batch_starts_sooner():
    # One group of 250,000 rows, read in chunks of 100,000: 25,000 rows first, then the rest.
    assert list(parquet_slices([(250_000, 1)], 100_000)) == [
        (0, FIRST_SLICE_ROWS), (FIRST_SLICE_ROWS, 250_000 - FIRST_SLICE_ROWS)]
    # A first slice that small already, a later group, and no group at all are as they were.
    assert list(parquet_slices([(10, 1), (300, 1)], 100)) == [(0, 10), (10, 300)]
    assert list(parquet_slices([], 100)) == []


def test_records_come_whole_and_in_order_across_the_cut(tmp_path):
    path = tmp_path / "records.parquet"
    rows = FIRST_SLICE_ROWS + 7
    pl.DataFrame({"id": [f"q{i}" for i in range(rows)], "question": "q?", "response": "r",
                  "reference": "a"}).write_parquet(path, row_group_size=rows)
    chunks = list(iter_records(path, Config(), chunk_rows=100_000))
    assert [c.height for c in chunks] == [FIRST_SLICE_ROWS, 7]
    ids = pl.concat([c.select("id", "row_number") for c in chunks])
    assert ids["id"].to_list() == [f"q{i}" for i in range(rows)]
    assert ids["row_number"].to_list() == list(range(rows))
