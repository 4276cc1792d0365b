"""Input layouts read as they are (issue 17, points 1 and 2): RAGAS datasets of both generations,
Hugging Face ``datasets`` exports (Parquet, JSON lines, CSV), pandas ``to_csv`` files with
Python list reprs, derived ids, ``--column``, ``--model`` / ``--run-label``, and the RGB
script's per-file outputs through ``ingest-rgb --model --noise-rate``.

The fixtures in ``tests/fixtures/layouts/`` were written by the tools themselves
(``make_fixtures.py`` there); every layout goes through ``evaluate`` with documented flags only.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import examples
from fixtures.layouts.make_fixtures import ROWS, V02_NAMES  # the rows the fixtures hold
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.cli import EXIT_ERROR, EXIT_OK, EXIT_REJECTED, main
from pipeline.config import Config
from pipeline.io.derived_ids import content_id
from pipeline.io.pylists import python_lists_as_json, python_lists_as_json_series
from pipeline.io.readers import iter_records, read_records
from pipeline.schema import MissingColumnError
from pipeline.validate import load_inputs

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "layouts"

EXPECTED_EM = [0, 1, 0, 0]


def oracle_id(question: str, reference: str) -> str:
    """The documented derived-id rule, written with hashlib."""
    payload = f"{len(question.encode())}:{question}{reference}".encode()
    return "q" + hashlib.sha256(payload).hexdigest()[:16]


#: Row 3 repeats the question and reference of row 1: its id carries the occurrence.
EXPECTED_IDS = [
    oracle_id(row["question"], row["ground_truth"]) for row in ROWS
]
EXPECTED_IDS[3] += "#2"


def hf_parquet(path: Path, names: dict[str, str], row_group_size: int | None = None) -> Path:
    """A Parquet file as ``datasets.Dataset.to_parquet`` writes it: Arrow's own types
    (``list<string>``, ``string``)."""
    table = pa.Table.from_pylist([{names.get(k, k): v for k, v in row.items()} for row in ROWS])
    assert table.schema.field(names.get("contexts", "contexts")).type == pa.list_(pa.string())
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


def evaluate(*args: str) -> int:
    return main(["evaluate", *args, "--no-progress", "--no-stats", "--metrics",
                 "answer,n_contexts"])


LAYOUT_FILES = {
    "ragas 0.1, pandas to_csv": "ragas_v01_pandas.csv",
    "ragas 0.2, HF datasets to_csv (NumPy arrays)": "ragas_v02_hf.csv",
    "ragas 0.1, HF datasets to_json": "ragas_v01_hf.jsonl",
    "ragas 0.2, HF datasets to_json": "ragas_v02_hf.jsonl",
    "ragas 0.1, HF datasets to_parquet": "v01.parquet",
    "ragas 0.2, HF datasets to_parquet": "v02.parquet",
}


@pytest.mark.parametrize("layout", list(LAYOUT_FILES))
def test_each_layout_goes_through_evaluate(layout: str, tmp_path: Path, capsys) -> None:
    name = LAYOUT_FILES[layout]
    if name == "v01.parquet":
        path = hf_parquet(tmp_path / name, {})
    elif name == "v02.parquet":
        path = hf_parquet(tmp_path / name, V02_NAMES)
    else:
        path = FIXTURES / name
    out = tmp_path / "out"
    assert evaluate("--input", str(path), "--model", "m1", "--out", str(out)) == EXIT_OK

    scores = pl.read_parquet(out / "scores.parquet").sort("row_number")
    assert scores["id"].to_list() == EXPECTED_IDS
    assert scores["model"].to_list() == ["m1"] * 4
    assert scores["answer_em"].to_list() == EXPECTED_EM
    assert scores["n_contexts"].to_list() == [len(row["contexts"]) for row in ROWS]
    texts = pl.read_parquet(out / "texts.parquet").sort("row_number")
    assert texts.select("question", "response", "reference").rows() == [
        (row["question"], row["answer"], row["ground_truth"]) for row in ROWS
    ]
    rejected = pl.read_parquet(out / "rejected.parquet")
    if name == "ragas_v01_pandas.csv":  # its fifth row holds ['x', None]: no list of strings
        assert rejected.select("row_number", "reason").rows() == [
            (4, "contexts: expected a list of strings, got '['x', None]'")
        ]
        assert "read 5 rows: scored 4, rejected 1" in capsys.readouterr().out
    else:
        assert rejected.height == 0
        assert "read 4 rows: scored 4, rejected 0" in capsys.readouterr().out

    # the passages themselves, read exactly (quotes, backslash, line break, non-ASCII)
    config = Config(input_labels={str(path): {"model": "m1"}})
    records = load_inputs([path], [], config).records.sort("row_number")
    assert records["contexts"].to_list() == [row["contexts"] for row in ROWS]


def test_rerun_gives_the_same_ids_and_compare_matches(tmp_path: Path, capsys) -> None:
    path = FIXTURES / "ragas_v02_hf.jsonl"
    for run in ("a", "b"):
        assert evaluate("--input", str(path), "--model", "m1", "--out", str(tmp_path / run)) == 0
    first, second = (pl.read_parquet(tmp_path / run / "scores.parquet") for run in ("a", "b"))
    assert first["id"].to_list() == second["id"].to_list() == EXPECTED_IDS
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--resamples", "0"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "0 items regressed (a metric fell by more than 0.05), 0 new, 0 missing -> " + str(
        tmp_path / "b" / "compare") in lines


def test_chunked_parquet_ids_equal_whole_file_ids(tmp_path: Path) -> None:
    path = hf_parquet(tmp_path / "v02.parquet", V02_NAMES, row_group_size=1)
    chunks = list(iter_records(path, Config(), chunk_rows=1))
    assert [c.height for c in chunks] == [1, 1, 1, 1]
    assert pl.concat(chunks)["id"].to_list() == read_records(path, Config())["id"].to_list()
    assert read_records(path, Config())["id"].to_list() == EXPECTED_IDS


# --- the derived id rule --------------------------------------------------------------------------


@settings(max_examples=examples(200), deadline=None)
@given(st.text(st.characters(exclude_categories=("Cs",))),
       st.text(st.characters(exclude_categories=("Cs",))))
def test_content_id_is_the_documented_sha256(question: str, reference: str) -> None:
    got = pl.select(content_id(pl.lit(question, pl.String), pl.lit(reference, pl.String))).item()
    assert got == oracle_id(question, reference)


def test_length_prefix_keeps_split_texts_apart() -> None:
    assert oracle_id("ab", "c") != oracle_id("a", "bc")
    ids = pl.select(content_id(pl.lit(pl.Series(["ab", "a"])), pl.lit(pl.Series(["c", "bc"]))))
    assert ids.to_series().n_unique() == 2


def test_repeats_are_numbered_per_key_and_reported(tmp_path: Path, caplog) -> None:
    rows = [
        {"question": "Q", "reference": "R", "response": "a", "model": "m1"},
        {"question": "Q", "reference": "R", "response": "b", "model": "m2"},
        {"question": "Q", "reference": "R", "response": "c", "model": "m1"},
        {"question": "Q", "reference": "R", "response": "d", "model": "m1", "noise_level": 0.2},
        {"question": 7, "reference": "R", "response": "e", "model": "m1"},
        {"question": "Q", "reference": "R", "response": "f", "model": "m1"},
    ]
    path = tmp_path / "r.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    caplog.set_level("WARNING", logger="pipeline.io.readers")
    frame = read_records(path, Config())
    base = oracle_id("Q", "R")
    assert frame["id"].to_list() == [base, base, f"{base}#2", base, "row-4", f"{base}#3"]
    assert any("2 row(s) repeat the question and reference" in m for m in caplog.messages)
    validated = load_inputs([path], [], Config())
    assert validated.rejected.select("id", "reason").rows() == [
        ("row-4", "question: expected string, got int")
    ]


# --- Python list reprs in text cells --------------------------------------------------------------

_TEXTS = st.lists(st.text(st.characters(exclude_categories=("Cs",)), max_size=12), max_size=5)


@settings(max_examples=examples(300), deadline=None)
@given(_TEXTS)
def test_python_and_numpy_list_reprs_decode_to_the_list(values: list[str]) -> None:
    cells = [repr(values), str(np.array(values, dtype=object))]
    if values and not any(value.endswith("\x00") for value in values):
        cells.append(str(np.array(values)))  # NumPy's string dtype (which drops a trailing NUL)
    converted = pl.select(python_lists_as_json(pl.lit(pl.Series(cells)))).to_series()
    for cell, text in zip(cells, converted, strict=True):
        if any("\\U" in repr(ch) for value in values for ch in value):
            # a non-printable astral character (repr writes \U...): not read, strictly
            assert text == cell
        else:
            assert json.loads(text) == values, cell


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.integers(-(2**62), 2**62), max_size=6))
def test_integer_list_reprs(values: list[int]) -> None:
    cells = pl.Series([repr(values), str(np.array(values, dtype=np.int64))])
    converted = pl.select(python_lists_as_json(pl.lit(cells))).to_series()
    assert [json.loads(text) for text in converted] == [values, values]


_CELLS = st.one_of(
    _TEXTS.map(repr),
    _TEXTS.map(lambda values: str(np.array(values, dtype=object))),
    _TEXTS.map(json.dumps),
    st.lists(st.integers(-5, 5), max_size=4).map(lambda v: str(np.array(v, dtype=np.int64))),
    st.text(alphabet="[]'\", 0123456789x\\ab-\n", max_size=16),
)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(_CELLS, max_size=6), st.booleans())
def test_the_column_shortcut_rewrites_as_the_expression(cells: list[str], nested: bool) -> None:
    """The cheap pre-filter of the reader's column function skips no cell that needs it."""
    series = pl.Series("c", cells, dtype=pl.String)
    expected = pl.select(python_lists_as_json(pl.lit(series), nested=nested)).to_series()
    assert python_lists_as_json_series(series, nested=nested).to_list() == expected.to_list()


@pytest.mark.parametrize("cell", ["[[1 2]]", '[["a"], [2 3]]', '["a" 1]', '[["a"] ["b"]]',
                                  '["a" "b"]', '["\\x41"]', "[1 -2]"])
@pytest.mark.parametrize("nested", [False, True])
def test_the_column_shortcut_on_cells_without_quotes(cell: str, nested: bool) -> None:
    series = pl.Series("c", [cell])
    expected = pl.select(python_lists_as_json(pl.lit(series), nested=nested)).to_series()
    assert python_lists_as_json_series(series, nested=nested).to_list() == expected.to_list()


def test_json_cells_are_left_as_they_are() -> None:
    cells = pl.Series(['["a", "b"]', "[1, 2]", '["\\u00e9"]', "[]"])
    assert pl.select(python_lists_as_json(pl.lit(cells))).to_series().to_list() == cells.to_list()


@pytest.mark.parametrize(
    "cell",
    ["['a', b]", "['a',]", "[None]", "['a', None]", "[1.5]", "[u'a']", "['\\U0001f600']",
     "['\\ud800']", "['a'] x", "['a', 'b' 'c']", "[True]", "['a' ...]", "__import__('os')"],
)
def test_anything_else_is_a_rejected_row_with_its_text(cell: str, tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    escaped = cell.replace('"', '""')
    path.write_text(f'id,question,reference,response,contexts\nq1,Q,R,S,"{escaped}"\n', "utf-8")
    validated = load_inputs([path], [], Config())
    assert validated.records.height == 0
    shown = cell if len(cell) <= 60 else cell[:57] + "..."
    assert validated.rejected["reason"].to_list() == [
        f"contexts: expected a list of strings, got '{shown}'"
    ]


def test_nested_reprs_for_answer_groups(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text(
        "id,question,reference,response,task,answer_groups\n"
        "q1,Q,Paris,Paris,noise_robustness,\"[['Paris', 'Paris, France'], [\"\"it's\"\"]]\"\n",
        "utf-8",
    )
    records = load_inputs([path], [], Config()).records
    assert records["answer_groups"].to_list() == [[["Paris", "Paris, France"], ["it's"]]]


# --- --column and the messages of a missing column ----------------------------------------------


def write_csv(path: Path, header: str, *rows: str) -> Path:
    path.write_text("\n".join([header, *rows]) + "\n", "utf-8")
    return path


def test_column_flag_maps_names(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", "qid,prompt,gold,output", "7,Q,Paris,Paris")
    out = tmp_path / "out"
    assert evaluate("--input", str(path), "--column", "id=qid", "--column", "question=prompt",
                    "--column", "reference=gold", "--column", "response=output",
                    "--out", str(out)) == EXIT_OK
    scores = pl.read_parquet(out / "scores.parquet")
    assert scores.select("id", "answer_em").rows() == [("7", 1)]


def test_column_flag_overrides_the_config(tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('[columns]\nresponse = "nope"\nreference = "gold"\n', "utf-8")
    path = write_csv(tmp_path / "d.csv", "id,question,gold,output", "1,Q,Paris,Paris")
    assert evaluate("--input", str(path), "--config", str(config), "--column", "response=output",
                    "--out", str(tmp_path / "out")) == EXIT_OK


def test_one_file_column_read_as_id_and_question(tmp_path: Path, capsys) -> None:
    path = write_csv(tmp_path / "d.csv", "question,answer,ground_truth", "Q1,Paris,Paris")
    assert evaluate("--input", str(path), "--column", "id=question", "--out",
                    str(tmp_path / "a")) == EXIT_ERROR
    assert ("required column 'question' is missing: the file's 'question' column is read as "
            "'id'") in capsys.readouterr().err
    assert evaluate("--input", str(path), "--column", "id=question", "--column",
                    "question=question", "--out", str(tmp_path / "b")) == EXIT_OK
    scores = pl.read_parquet(tmp_path / "b" / "scores.parquet")
    assert scores.select("id", "answer_em").rows() == [("Q1", 1)]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--column", "response"], "--column expects CANONICAL=NAME (e.g. response=answer), got "
                                   "'response'"),
        (["--column", "answr=x"], "unknown canonical column(s) ['answr']"),
        (["--column", "response=missing"], "required column 'response' is missing: the config "
                                           "maps it to 'missing'"),
    ],
)
def test_column_flag_errors_name_the_problem(
    flags: list[str], message: str, tmp_path: Path, capsys
) -> None:
    path = write_csv(tmp_path / "d.csv", "id,question,reference,response", "1,Q,R,S")
    assert evaluate("--input", str(path), *flags, "--out", str(tmp_path / "o")) == EXIT_ERROR
    assert message in capsys.readouterr().err


def test_missing_reference_names_the_layout_names(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", "user_input,response,retrieved_contexts", "Q,S,[]")
    with pytest.raises(MissingColumnError) as info:
        read_records(path, Config())
    message = str(info.value)
    assert "required column 'reference' is missing" in message
    assert "also read from: ground_truth" in message
    assert "--column reference=NAME" in message


def test_canonical_names_win_over_layout_names(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "d.csv", "id,question,reference,response,answer", "1,Q,R,S,A")
    assert read_records(path, Config())["response"].to_list() == ["S"]


# --- labels per input ----------------------------------------------------------------------------


def test_model_and_run_label_per_input(tmp_path: Path) -> None:
    a = write_csv(tmp_path / "a.csv", "id,question,reference,response", "1,Q,Paris,Paris")
    b = write_csv(tmp_path / "b.csv", "id,question,reference,response", "1,Q,Paris,Lyon")
    out = tmp_path / "out"
    assert evaluate("--input", str(a), "--model", "gpt", "--run-label", "seed1",
                    "--input", str(b), "--model", "llama", "--out", str(out)) == EXIT_OK
    scores = pl.read_parquet(out / "scores.parquet").sort("model")
    assert scores.select("model", "run", "answer_em").rows() == [
        ("gpt", "seed1", 1), ("llama", None, 0)
    ]


def test_a_row_whose_model_differs_from_the_label_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    rows = [
        {"id": "1", "question": "Q", "reference": "R", "response": "R"},
        {"id": "2", "question": "Q", "reference": "R", "response": "R", "model": "m1"},
        {"id": "3", "question": "Q", "reference": "R", "response": "R", "model": "m2"},
        {"id": "4", "question": "Q", "reference": "R", "response": "R", "model": 5},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), "utf-8")
    out = tmp_path / "out"
    assert evaluate("--input", str(path), "--model", "m1", "--out", str(out)) == EXIT_OK
    scores = pl.read_parquet(out / "scores.parquet").sort("id")
    assert scores.select("id", "model").rows() == [("1", "m1"), ("2", "m1")]
    rejected = pl.read_parquet(out / "rejected.parquet").sort("id")
    assert rejected.select("id", "reason").rows() == [
        ("3", "model: 'm2' in the file differs from --model 'm1'"),
        ("4", "model: a value that is not text in the file differs from --model 'm1'"),
    ]
    assert json.loads(rejected["raw"][0])["model"] == "m2"  # the row as it was read


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "m1", "--input", "X"], "--model labels the input given just before it"),
        (["--input", "X", "--model", "m1", "--model", "m2"], "--model is given twice"),
        (["--pair", "X", "X", "--model", "m1"], "--model labels an --input; a --pair takes"),
    ],
)
def test_label_placement_errors(args: list[str], message: str, tmp_path: Path, capsys) -> None:
    path = write_csv(tmp_path / "d.csv", "id,question,reference,response", "1,Q,R,S")
    args = [str(path) if a == "X" else a for a in args]
    try:
        code = evaluate(*args, "--out", str(tmp_path / "o"))
    except SystemExit as exc:  # argparse's own usage error
        code = exc.code
    assert code == EXIT_ERROR
    assert message in capsys.readouterr().err


# --- the RGB script's per-file outputs ---------------------------------------------------------


def test_rgb_script_outputs_go_in_with_model_and_noise_rate(tmp_path: Path, capsys) -> None:
    rgb = FIXTURES / "rgb"
    m1, m2 = (rgb / f"prediction_en_{m}_temp0.7_noise0.4_passage5_correct0.0.json"
              for m in ("m1", "m2"))
    records = tmp_path / "rgb.parquet"
    assert main(["ingest-rgb", "--data", str(rgb / "en.json"), "--task", "noise_robustness",
                 "--outputs", str(m1), "--model", "m1", "--noise-rate", "0.4",
                 "--outputs", str(m2), "--model", "m2", "--out", str(records)]) == EXIT_OK
    assert "4 output rows over 2 items: 4 records" in capsys.readouterr().out
    frame = pl.read_parquet(records)
    assert frame.select("id", "model", "noise_level", "task", "response").rows() == [
        ("en:0", "m1", 0.4, "noise_robustness", "Annie Ernaux won it."),
        ("en:1", "m1", 0.4, "noise_robustness", "Tokyo"),
        ("en:0", "m2", 0.4, "noise_robustness", "Abdulrazak Gurnah"),
        ("en:1", "m2", 0.4, "noise_robustness", "Tokyo, Japan"),
    ]
    assert frame["contexts"][0].to_list() == [  # the passages the model was shown ("docs")
        "Annie Ernaux won the 2022 prize.", "The 2021 prize went to Abdulrazak Gurnah."
    ]
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(records), "--out", str(out), "--no-progress",
                 "--no-stats", "--metrics", "rgb"]) == EXIT_OK
    scores = pl.read_parquet(out / "scores.parquet").sort("model", "id")
    assert scores.select("model", "id", "rgb_correct").rows() == [
        ("m1", "en:0", 1), ("m1", "en:1", 1), ("m2", "en:0", 0), ("m2", "en:1", 1)
    ]


def test_rgb_outputs_without_model_name_the_flag(tmp_path: Path, capsys) -> None:
    rgb = FIXTURES / "rgb"
    outputs = rgb / "prediction_en_m1_temp0.7_noise0.4_passage5_correct0.0.json"
    assert main(["ingest-rgb", "--data", str(rgb / "en.json"), "--task", "noise_robustness",
                 "--outputs", str(outputs), "--out", str(tmp_path / "r.parquet")]) == EXIT_ERROR
    assert "required column 'model' is missing" in capsys.readouterr().err


def test_rgb_noise_rate_that_contradicts_the_file_sets_rows_aside(tmp_path: Path, capsys) -> None:
    rgb = FIXTURES / "rgb"
    outputs = rgb / "prediction_en_m1_temp0.7_noise0.4_passage5_correct0.0.json"
    out = tmp_path / "r.parquet"
    assert main(["ingest-rgb", "--data", str(rgb / "en.json"), "--task", "noise_robustness",
                 "--outputs", str(outputs), "--model", "m1", "--noise-rate", "0.2",
                 "--out", str(out)]) == EXIT_REJECTED
    rejected = pl.read_parquet(tmp_path / "r.rejected.parquet")
    assert rejected["reason"].to_list() == [
        "noise_level: 0.4 in the file differs from --noise-rate 0.2"
    ] * 2
