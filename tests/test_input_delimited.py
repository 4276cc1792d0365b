"""Issue 16, point 2: the integrity of CSV and TSV inputs (docs/input-integrity.md).

A row whose field count differs from the header's, whose quoting is malformed, or inside which
the file ends is a rejected row that names its line; duplicate column names stop the run.
"""

from __future__ import annotations

import csv
import io
import json
import re
import tempfile
from pathlib import Path

import polars as pl
import pytest
from conftest import examples
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pipeline.cli import main
from pipeline.config import Config
from pipeline.io.readers import read_records
from pipeline.schema import InputError
from pipeline.validate import Validated, load_inputs

HEADER = "id,question,reference,response,model"


def load(path: Path) -> Validated:
    """Read and validate one file, as ``evaluate`` does."""
    validated = load_inputs([path], [], Config())
    assert validated.records.height + validated.rejected.height == validated.n_read
    return validated


def rejections(validated: Validated) -> list[tuple[int, str | None, str, str]]:
    """(row_number, id, reason, raw) of every rejected row."""
    return list(validated.rejected.select("row_number", "id", "reason", "raw").iter_rows())


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


# --- ragged rows ----------------------------------------------------------------------------


RAGGED = (
    f"{HEADER}\n"
    "q1,Capital of France?,Paris,Paris,m1\n"
    "q2,Who wrote Dune?,Herbert\n"  # line 3: two fields short
    "q3,Largest planet?,Jupiter,Jupiter,m1,extra\n"  # line 4: one field long
    "q4,Smallest planet?,Mercury,Mercury,m1\n"
)


def test_short_and_long_rows_are_rejected_with_their_line(tmp_path: Path) -> None:
    validated = load(write(tmp_path, "ragged.csv", RAGGED))
    assert validated.records.select("id", "response", "model").rows() == [
        ("q1", "Paris", "m1"),
        ("q4", "Mercury", "m1"),
    ]
    assert rejections(validated) == [
        (1, None, "line 3: expected 5 fields as in the header, got 3",
         '{"text":"q2,Who wrote Dune?,Herbert"}'),
        (2, None, "line 4: expected 5 fields as in the header, got 6",
         '{"text":"q3,Largest planet?,Jupiter,Jupiter,m1,extra"}'),
    ]


def test_ragged_tsv_row(tmp_path: Path) -> None:
    text = "id\tquestion\treference\tresponse\na\tq\tr\ts\nb\tq\tr\n"
    validated = load(write(tmp_path, "ragged.tsv", text))
    assert validated.records["id"].to_list() == ["a"]
    assert rejections(validated) == [
        (1, None, "line 3: expected 4 fields as in the header, got 3", '{"text":"b\\tq\\tr"}'),
    ]


def test_a_row_with_a_missing_field_is_not_scored(tmp_path: Path) -> None:
    """The hostile case: before, the short row was scored with ``response = ""``."""
    source = write(tmp_path, "ragged.csv", RAGGED)
    out = tmp_path / "out"
    code = main(["evaluate", "--input", str(source), "--out", str(out), "--no-progress",
                 "--metrics", "answer", "--no-stats"])
    assert code == 0  # rows were scored; the rejected ones are listed (README, exit codes)
    scores = pl.read_parquet(out / "scores.parquet")
    assert scores.select("id", "row_number").rows() == [("q1", 0), ("q4", 3)]
    rejected = pl.read_parquet(out / "rejected.parquet")
    assert rejected.select("source", "row_number", "reason").rows() == [
        (str(source), 1, "line 3: expected 5 fields as in the header, got 3"),
        (str(source), 2, "line 4: expected 5 fields as in the header, got 6"),
    ]


# --- a file cut in the middle of a row ------------------------------------------------------

N_ROWS = 100_000


def cut_file(tmp_path: Path, header: str, last: str) -> Path:
    """A CSV of ``N_ROWS`` rows whose last row is ``last``, with no line break after it."""
    rows = "".join(f"q{i},m1,Question {i}?,ref {i},the answer {i}\n" for i in range(N_ROWS - 1))
    return write(tmp_path, "cut.csv", f"{header}\n{rows}{last}")


@pytest.mark.parametrize(
    ("header", "last", "reason"),
    [
        (  # cut inside the last column: every field there, the line break missing
            "id,model,question,reference,response",
            "q99999,m1,Question 99999?,ref 99999,th",
            "line 100001: the file ends inside this row (no line break after it)",
        ),
        (  # cut before the last column
            "id,question,reference,response,model",
            "q99999,Question 99999?,ref 99999,th",
            "line 100001: expected 5 fields as in the header, got 4; "
            "the file ends inside this row (no line break after it)",
        ),
    ],
    ids=["in the last field", "fields missing"],
)
def test_a_file_cut_mid_row_rejects_that_row(
    tmp_path: Path, header: str, last: str, reason: str
) -> None:
    validated = load(cut_file(tmp_path, header, last))
    assert validated.n_read == N_ROWS
    assert validated.records.height == N_ROWS - 1
    assert validated.records["id"][-1] == "q99998"
    assert rejections(validated) == [
        (N_ROWS - 1, None, reason, json.dumps({"text": last}, separators=(",", ":")))
    ]


def test_a_file_cut_inside_a_quoted_field_rejects_that_row(tmp_path: Path) -> None:
    last = 'q99999,m1,Question 99999?,ref 99999,"the answer\nspans two li'
    validated = load(cut_file(tmp_path, "id,model,question,reference,response", last))
    assert validated.records.height == N_ROWS - 1
    assert rejections(validated) == [
        (N_ROWS - 1, None, "line 100001: the file ends inside a quoted field",
         json.dumps({"text": last}, separators=(",", ":"))),
    ]


def test_a_quoted_field_that_never_closes_does_not_swallow_the_rows_after_it(
    tmp_path: Path,
) -> None:
    text = f'{HEADER}\nq1,Q,R,"unclosed,m1\nq2,Q,R,S,m1\nq3,Q,R,S,m1\n'
    validated = load(write(tmp_path, "unclosed.csv", text))
    assert validated.records.height == 0
    assert rejections(validated) == [
        (0, None, "line 2: the file ends inside a quoted field",
         '{"text":"q1,Q,R,\\"unclosed,m1\\nq2,Q,R,S,m1\\nq3,Q,R,S,m1\\n"}'),
    ]


# --- quoting, line breaks and line numbers --------------------------------------------------


def test_embedded_line_breaks_count_in_line_numbers(tmp_path: Path) -> None:
    text = (
        f"{HEADER}\n"
        'q1,"a question\non two lines",R,"an answer\n\non three",m1\n'  # lines 2 to 5
        "\n"  # line 6, blank: not a record
        "q2,Q,R\n"  # line 7
        'q3,"""quoted"", with comma",R,S,m1\n'  # line 8
    )
    validated = load(write(tmp_path, "multiline.csv", text))
    assert validated.records.select("id", "question", "response").rows() == [
        ("q1", "a question\non two lines", "an answer\n\non three"),
        ("q3", '"quoted", with comma', "S"),
    ]
    assert validated.records["row_number"].to_list() == [0, 2]
    assert rejections(validated) == [
        (1, None, "line 7: expected 5 fields as in the header, got 3", '{"text":"q2,Q,R"}'),
    ]


def test_crlf_file(tmp_path: Path) -> None:
    clean = f"{HEADER}\r\nq1,Q,R,S,m1\r\nq2,\"two\r\nlines\",R,S,m2\r\n"
    validated = load(write(tmp_path, "clean.csv", clean))
    # the line break that ends a row is not part of the last field; one inside quotes is kept
    assert validated.records.select("id", "question", "model").rows() == [
        ("q1", "Q", "m1"),
        ("q2", "two\r\nlines", "m2"),
    ]
    ragged = clean + "q3,Q,R,S\r\nq4,Q,R,S,m4\r\n"
    validated = load(write(tmp_path, "ragged.csv", ragged))
    assert validated.records["id"].to_list() == ["q1", "q2", "q4"]
    assert validated.records["question"][1] == "two\r\nlines"
    assert rejections(validated) == [
        (2, None, "line 5: expected 5 fields as in the header, got 4", '{"text":"q3,Q,R,S"}'),
    ]


def test_old_mac_line_breaks(tmp_path: Path) -> None:
    validated = load(write(tmp_path, "cr.csv", f"{HEADER}\rq1,Q,R,S,m1\rq2,Q\r"))
    assert validated.records["id"].to_list() == ["q1"]
    assert rejections(validated) == [
        (1, None, "line 3: expected 5 fields as in the header, got 2", '{"text":"q2,Q"}'),
    ]


def test_text_after_a_closing_quote_is_rejected_not_merged(tmp_path: Path) -> None:
    text = f'{HEADER}\nq1,"Q"uestion,R,S,m1\nq2,Q,R,S,m1\n'
    validated = load(write(tmp_path, "quotes.csv", text))
    assert validated.records["id"].to_list() == ["q2"]
    assert rejections(validated) == [
        (0, None, "line 2: malformed quoting: ',' expected after '\"'",
         '{"text":"q1,\\"Q\\"uestion,R,S,m1"}'),
    ]


def test_a_quote_inside_an_unquoted_field_is_text(tmp_path: Path) -> None:
    validated = load(write(tmp_path, "inch.csv", f'{HEADER}\nq1,A 5" screen?,R,S,m1\n'))
    assert validated.records["question"].to_list() == ['A 5" screen?']
    assert validated.rejected.height == 0


def test_a_whitespace_line_is_a_ragged_row(tmp_path: Path) -> None:
    validated = load(write(tmp_path, "space.csv", f"{HEADER}\nq1,Q,R,S,m1\n  \n"))
    assert rejections(validated) == [
        (1, None, "line 3: expected 5 fields as in the header, got 1", '{"text":"  "}'),
    ]


def test_long_fields_in_a_file_read_row_by_row(tmp_path: Path) -> None:
    """A context longer than the csv module's default field limit (128 KiB) is read whole, and
    the limit is given back afterwards."""
    long = "x" * 200_000
    text = f'{HEADER}\nq1,Q,R,"{long}",m1\nq2,Q\n'
    validated = load(write(tmp_path, "long.csv", text))
    assert validated.records["response"].to_list() == [long]
    assert validated.rejected["reason"].to_list() == [
        "line 3: expected 5 fields as in the header, got 2"
    ]
    assert csv.field_size_limit() == 131072


def test_blank_lines_before_the_header(tmp_path: Path) -> None:
    validated = load(write(tmp_path, "blank.csv", f"\n\n{HEADER}\nq1,Q,R,S,m1\nq2\n"))
    assert validated.records["id"].to_list() == ["q1"]
    assert validated.rejected["reason"].to_list() == [
        "line 5: expected 5 fields as in the header, got 1"
    ]


# --- the header -----------------------------------------------------------------------------


def test_duplicate_column_names_are_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "dup.csv", "id,question,reference,response,response\nq,Q,R,a,b\n")
    with pytest.raises(InputError) as caught:
        read_records(path, Config())
    assert str(caught.value) == (
        f"{path}: duplicate column name 'response' in the header (columns 4 and 5)"
    )


def test_duplicate_names_of_ignored_columns_are_an_error_too(tmp_path: Path) -> None:
    path = write(tmp_path, "dup.tsv", "id\tnote\tquestion\treference\tresponse\tnote\n")
    with pytest.raises(InputError) as caught:
        read_records(path, Config())
    assert str(caught.value) == (
        f"{path}: duplicate column name 'note' in the header (columns 2 and 6)"
    )


def test_malformed_header(tmp_path: Path) -> None:
    path = write(tmp_path, "header.csv", '"id"x,question,reference,response\nq,Q,R,S\n')
    with pytest.raises(InputError) as caught:
        read_records(path, Config())
    assert str(caught.value) == (
        f"{path}: line 1: malformed CSV header: malformed quoting: ',' expected after '\"'"
    )


def test_not_utf8_csv(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes(f"{HEADER}\nq1,caf\xe9,R,S,m1\n".encode("latin-1"))
    with pytest.raises(InputError) as caught:
        read_records(path, Config())
    assert str(caught.value) == (
        f"{path}: not UTF-8 text: 'utf-8' codec can't decode byte 0xe9 in position 43: "
        "invalid continuation byte"
    )


# --- one reading, whichever parser runs -------------------------------------------------------

CELLS = st.text(alphabet='ab é,;"\t\n\r', max_size=8)


@settings(max_examples=examples(60), deadline=None)
@given(
    rows=st.lists(st.lists(CELLS, min_size=4, max_size=4), min_size=1, max_size=8),
    separator=st.sampled_from([",", "\t"]),
    terminator=st.sampled_from(["\n", "\r\n"]),
)
def test_values_equal_the_csv_module_and_a_ragged_row_changes_no_other_row(
    rows: list[list[str]], separator: str, terminator: str
) -> None:
    """A file written by Python's csv module reads back as written, and the same file with a
    ragged row appended (then read record by record) gives the same rows, and the ragged row's
    line counts every line break before it, those inside quoted fields too."""
    # With "\n" as its line terminator the csv writer leaves a field with "\r" unquoted.
    assume(terminator == "\r\n" or not any("\r" in cell for row in rows for cell in row))
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, delimiter=separator, lineterminator=terminator)
    writer.writerow(["id", "question", "reference", "response"])
    writer.writerows(rows)
    text = buffer.getvalue()
    suffix = ".tsv" if separator == "\t" else ".csv"
    with tempfile.TemporaryDirectory() as tmp:
        clean = Path(tmp) / f"clean{suffix}"
        clean.write_bytes(text.encode())
        ragged = Path(tmp) / f"ragged{suffix}"
        ragged.write_bytes((text + "x" + terminator).encode())
        first = read_records(clean, Config())
        second = read_records(ragged, Config())
    expected = [tuple(row) for row in rows]
    columns = ["id", "question", "reference", "response"]
    assert first.select(columns).rows() == expected
    assert "__reader_problem" not in first.columns
    assert second.select(columns).rows()[:-1] == expected
    line = len(re.findall(r"\r\n|\r|\n", text)) + 1
    assert second["__reader_problem"].to_list() == [None] * len(rows) + [
        f"line {line}: expected 4 fields as in the header, got 1"
    ]
