"""Issue 16, points 2 and 3: JSON and JSON Lines inputs that repeat a key or hold text that is
not valid Unicode (docs/input-integrity.md).

A key repeated inside one object stops the run naming the file (and the line, for JSON Lines);
a lone surrogate such as ``"\\ud800"`` rejects its row, naming the column, and the other rows
are scored.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from test_input_delimited import load, rejections

from pipeline.cli import main
from pipeline.config import Config
from pipeline.io.pairs import read_prediction_pair
from pipeline.io.readers import read_records
from pipeline.schema import InputError
from pipeline.validate import Validated, load_inputs

ROW = '"question": "Capital of France?", "reference": "Paris"'


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- keys repeated inside one object ----------------------------------------------------------


def test_jsonl_repeated_key_names_file_and_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "dup.jsonl",
        f'{{"id": "q1", {ROW}, "response": "Paris"}}\n'
        "\n"
        f'{{"id": "q2", {ROW}, "response": "Lyon", "response": "Paris"}}\n',
    )
    with pytest.raises(InputError) as caught:
        read_records(path, Config())
    assert str(caught.value) == f"{path}: line 3: duplicate key 'response' in a JSON object"


def test_json_array_repeated_key_names_file_and_element(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "dup.json",
        f'[{{"id": "q1", {ROW}, "response": "Paris"}},\n'
        f' {{"id": "q2", {ROW}, "response": "Paris", "meta": {{"k": 1, "k": 2}}}}]\n',
    )
    with pytest.raises(InputError) as caught:
        read_records(path, Config())
    # a nested object counts too, even under a column that is not read
    assert str(caught.value) == (
        f"{path}: duplicate key 'k' in a JSON object (array element 1)"
    )


def test_legacy_pair_repeated_key(tmp_path: Path) -> None:
    predictions = write(tmp_path, "p.json", '[{"answer": "a", "answer": "b", "citations": [1]}]')
    gold = write(tmp_path, "g.json", '[{"answer": "g", "citations": [1]}]')
    with pytest.raises(InputError) as caught:
        read_prediction_pair(predictions, gold, Config())
    assert str(caught.value) == (
        f"{predictions}: duplicate key 'answer' in a JSON object (array element 0)"
    )


def test_the_same_key_in_different_objects_is_fine(tmp_path: Path) -> None:
    path = write(tmp_path, "ok.jsonl", f'{{"id": "q1", {ROW}, "response": "Paris", '
                 '"meta": {"id": 1}}\n')
    assert read_records(path, Config())["id"].to_list() == ["q1"]


# --- lone surrogates ------------------------------------------------------------------------

SURROGATES = (
    f'{{"id": "q1", {ROW}, "response": "Par\\ud800is"}}\n'
    f'{{"id": "q2", {ROW}, "response": "Paris \\ud83d\\ude00"}}\n'  # a valid pair: one emoji
    f'{{"id": "q3", {ROW}, "response": "\\\\ud800 is six characters"}}\n'  # an escaped backslash
    '{"id": "q4", "question": "\\udc00?", "reference": "Paris", "response": "Paris", '
    '"contexts": ["fine", "\\udfff"]}\n'
)


def check_surrogates(validated: Validated) -> None:
    assert validated.records.select("id", "response").rows() == [
        ("q2", "Paris \U0001f600"),
        ("q3", "\\ud800 is six characters"),
    ]
    assert rejections(validated) == [
        (0, "q1", "response: text that cannot be encoded as UTF-8 (lone surrogate \\ud800)",
         '{"id":"q1","question":"Capital of France?","reference":"Paris",'
         '"response":"Par\\ud800is","contexts":null}'),
        (3, "q4", "question: text that cannot be encoded as UTF-8 (lone surrogate \\udc00); "
         "contexts: text that cannot be encoded as UTF-8 (lone surrogate \\udfff)",
         '{"id":"q4","question":"\\udc00?","reference":"Paris","response":"Paris",'
         '"contexts":["fine","\\udfff"]}'),
    ]
    # raw is valid JSON that gives back the text of the file
    assert json.loads(validated.rejected["raw"][0])["response"] == "Par\ud800is"


def test_lone_surrogates_in_jsonl_reject_their_rows(tmp_path: Path) -> None:
    check_surrogates(load(write(tmp_path, "s.jsonl", SURROGATES)))


def test_lone_surrogates_in_a_json_array_reject_their_rows(tmp_path: Path) -> None:
    array = "[" + ",\n".join(SURROGATES.splitlines()) + "]"
    check_surrogates(load(write(tmp_path, "s.json", array)))


def test_a_surrogate_in_a_column_that_is_not_scored_is_kept_as_its_escape(tmp_path: Path) -> None:
    path = write(tmp_path, "s.jsonl", f'{{"id": "q1", {ROW}, "response": "P", "x": "\\ud800"}}\n')
    validated = load(path)
    assert validated.records["id"].to_list() == ["q1"] and validated.rejected.height == 0
    # The reader keeps the column as JSON text: the value's escape, nothing lost.
    assert read_records(path, Config(), None)["x"].to_list() == ['"\\ud800"']
    assert "x" not in read_records(path, Config(), ()).columns


def test_a_surrogate_under_a_mapped_name_is_named_canonically(tmp_path: Path) -> None:
    path = write(tmp_path, "s.jsonl", f'{{"id": "q1", {ROW}, "answer": "\\udbff"}}\n')
    validated = load_inputs([path], [], Config(columns={"response": "answer"}))
    assert validated.rejected["reason"].to_list() == [
        "response: text that cannot be encoded as UTF-8 (lone surrogate \\udbff)"
    ]


def test_lone_surrogate_run_exits_as_documented(tmp_path: Path) -> None:
    """Before: exit 4 and a traceback naming no file. Now the row is rejected and the run
    scores the others: exit 0 for ``evaluate`` (rows were scored), 1 for ``validate`` (rows
    would be rejected), as README's exit codes say."""
    source = write(tmp_path, "s.jsonl", SURROGATES)
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(source), "--out", str(out), "--no-progress",
                 "--metrics", "answer", "--no-stats"]) == 0
    scores = pl.read_parquet(out / "scores.parquet")
    assert scores.select("id", "row_number").rows() == [("q2", 1), ("q3", 2)]
    rejected = pl.read_parquet(out / "rejected.parquet")
    assert rejected.select("row_number", "id").rows() == [(0, "q1"), (3, "q4")]
    assert rejected["reason"][0] == (
        "response: text that cannot be encoded as UTF-8 (lone surrogate \\ud800)"
    )
    assert main(["validate", "--input", str(source)]) == 1


def test_lone_surrogates_in_legacy_format_1_pairs_reject_their_rows(tmp_path: Path) -> None:
    """Before: a traceback from ``--pair`` (pipeline/io/pairs.py). Now each object whose field
    holds a lone surrogate is a rejected row with the reason; the others are matched."""
    predictions = write(tmp_path, "p.json", json.dumps([
        {"question_id": "q1", "question": "Q1", "answer": "A\ud800"},
        {"question_id": "q\udc00", "question": "Q2", "answer": "B"},
        {"question_id": "q3", "question": "Q3", "answer": "C"},
        {"question_id": "q5", "question": "Q5", "answer": "E", "note": "\ud801"},
    ]))
    references = write(tmp_path, "r.json", json.dumps([
        {"question_id": "q1", "question": "Q1", "answer": "A"},
        {"question_id": "q3", "question": "Q3\ud802", "answer": "C"},
        {"question_id": "q4", "question": "Q4", "answer": "\udfff"},
        {"question_id": "q5", "question": "Q5", "answer": "E"},
    ]))
    validated = load_inputs([], [(predictions, references)], Config())
    assert validated.n_read == validated.records.height + validated.rejected.height == 5
    assert validated.records.select("id", "response").rows() == [("q5", "E")]
    surrogate = "text that cannot be encoded as UTF-8 (lone surrogate \\u{})"
    assert sorted(rejections(validated), key=lambda r: (r[0], r[2])) == sorted([
        (0, "q1", "response: " + surrogate.format("d800"),
         '{"question_id": "q1", "question": "Q1", "answer": "A\\ud800"}'),
        (1, None, "id: " + surrogate.format("dc00"),
         '{"question_id": "q\\udc00", "question": "Q2", "answer": "B"}'),
        (2, "q3", "question: " + surrogate.format("d802"),
         '{"question_id": "q3", "question": "Q3\\ud802", "answer": "C"}'),
        (2, "q4", "reference without prediction; reference: " + surrogate.format("dfff"),
         '{"question_id": "q4", "question": "Q4", "answer": "\\udfff"}'),
    ], key=lambda r: (r[0], r[2]))


def test_lone_surrogates_in_legacy_format_2_pairs_reject_their_rows(tmp_path: Path) -> None:
    predictions = write(tmp_path, "p.json", '[{"answer": "x\\ud800", "citations": [1]}, '
                        '{"answer": "y", "citations": [1]}, {"answer": "z", "citations": [1]}]')
    gold = write(tmp_path, "g.json", '[{"answer": "x", "citations": [1]}, '
                 '{"answer": "y\\udfff", "citations": [1]}, {"answer": "z", "citations": [1]}]')
    out = tmp_path / "out"
    assert main(["evaluate", "--pair", str(predictions), str(gold), "--out", str(out),
                 "--no-progress", "--metrics", "answer", "--no-stats"]) == 0
    assert pl.read_parquet(out / "scores.parquet").select("id", "answer_em").rows() == [("2", 1)]
    rejected = pl.read_parquet(out / "rejected.parquet").sort("row_number")
    assert rejected.select("row_number", "id", "reason").rows() == [
        (0, "0", "response: text that cannot be encoded as UTF-8 (lone surrogate \\ud800)"),
        (1, "1", "reference: text that cannot be encoded as UTF-8 (lone surrogate \\udfff)"),
    ]


# --- line numbers of JSON Lines ---------------------------------------------------------------


def test_jsonl_lines_are_split_at_line_breaks_only(tmp_path: Path) -> None:
    """U+2028 may stand unescaped inside a JSON string; it is not a line break of the file."""
    path = write(
        tmp_path,
        "u.jsonl",
        f'{{"id": "q1", {ROW}, "response": "a\u2028b"}}\r\n'
        f'{{"id": "q2", {ROW}, "response": }}\r\n',
    )
    with pytest.raises(InputError) as caught:
        read_records(path, Config())
    assert str(caught.value) == f"{path}: line 2: invalid JSON: Expecting value (column 82)"
    path.write_text(f'{{"id": "q1", {ROW}, "response": "a\u2028b"}}\r\n', encoding="utf-8")
    assert read_records(path, Config())["response"].to_list() == ["a\u2028b"]
