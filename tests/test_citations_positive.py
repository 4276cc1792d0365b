"""Issue 16, point 7: citations are 1-based passage numbers, so a number below 1 is rejected on
every row, with or without ``contexts`` (before, ``[0]`` without contexts was scored)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.config import Config
from pipeline.io.readers import read_records
from pipeline.validate import Validated, load_inputs, validate_records

ROOT = Path(__file__).resolve().parent.parent
BASE: dict[str, Any] = {
    "id": "q1", "question": "Who wrote Dune?", "reference": "Herbert", "response": "Herbert",
}


def validate_jsonl(tmp_path: Path, rows: list[dict[str, Any]]) -> Validated:
    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return validate_records(read_records(path, Config()), str(path), Config())


def reasons(validated: Validated) -> list[tuple[int, str]]:
    return list(validated.rejected.select("row_number", "reason").iter_rows())


def test_numbers_below_one_without_contexts_are_rejected(tmp_path: Path) -> None:
    validated = validate_jsonl(tmp_path, [
        dict(BASE, id="zero", citations=[0]),
        dict(BASE, id="negative", gold_citations=[2, -1]),
        dict(BASE, id="both", citations=[0, 1], gold_citations=[-3]),
        dict(BASE, id="fine", citations=[1, 9], gold_citations=[]),
    ])
    assert validated.records.select("id", "citations", "gold_citations").rows() == [
        ("fine", [1, 9], []),  # without contexts there is no upper bound
    ]
    assert reasons(validated) == [
        (0, "citations: [0] must be >= 1 (passage numbers are 1-based)"),
        (1, "gold_citations: [2, -1] must be >= 1 (passage numbers are 1-based)"),
        (2, "citations: [0, 1] must be >= 1 (passage numbers are 1-based); "
            "gold_citations: [-3] must be >= 1 (passage numbers are 1-based)"),
    ]


def test_null_contexts_on_the_row(tmp_path: Path) -> None:
    validated = validate_jsonl(tmp_path, [
        dict(BASE, id="with", contexts=["a", "b"], citations=[2]),
        dict(BASE, id="without", contexts=None, citations=[0]),
    ])
    assert validated.records["id"].to_list() == ["with"]
    assert reasons(validated) == [
        (1, "citations: [0] must be >= 1 (passage numbers are 1-based)"),
    ]


def test_with_contexts_the_range_reason_alone(tmp_path: Path) -> None:
    validated = validate_jsonl(tmp_path, [dict(BASE, contexts=["a", "b"], citations=[0, 3])])
    assert reasons(validated) == [(0, "citations: [0, 3] outside 1..2 (the number of contexts)")]


def test_csv_and_parquet(tmp_path: Path) -> None:
    csv = tmp_path / "records.csv"
    csv.write_text("id,question,reference,response,citations\nq1,Q,R,S,[0]\nq2,Q,R,S,[1]\n",
                   encoding="utf-8")
    parquet = tmp_path / "records.parquet"
    pl.DataFrame(
        {"id": ["q1", "q2"], "question": ["Q"] * 2, "reference": ["R"] * 2,
         "response": ["S"] * 2, "gold_citations": [[-1], [1]]},
        schema_overrides={"gold_citations": pl.List(pl.Int32)},
    ).write_parquet(parquet)
    validated = load_inputs([csv, parquet], [], Config())
    assert validated.records.select("source", "id").rows() == [(str(csv), "q2"),
                                                               (str(parquet), "q2")]
    assert validated.rejected.select("source", "reason").rows() == [
        (str(csv), "citations: [0] must be >= 1 (passage numbers are 1-based)"),
        (str(parquet), "gold_citations: [-1] must be >= 1 (passage numbers are 1-based)"),
    ]


def test_legacy_pair_without_contexts(tmp_path: Path) -> None:
    predictions = tmp_path / "model.json"
    predictions.write_text(json.dumps([{"answer": "a [0]", "citations": [0]},
                                       {"answer": "b [1]", "citations": [1]}]), "utf-8")
    gold = tmp_path / "gold.json"
    gold.write_text(json.dumps([{"answer": "a", "citations": [1]},
                                {"answer": "b", "citations": [1]}]), "utf-8")
    validated = load_inputs([], [(predictions, gold)], Config())
    assert validated.records["id"].to_list() == ["1"]
    assert reasons(validated) == [
        (0, "citations: [0] must be >= 1 (passage numbers are 1-based)"),
    ]


# --- the bundled data keeps to the rule -------------------------------------------------------

CITED = re.compile(r'"(?:gold_)?citations"\s*:\s*\[([^\]]*)\]')


def test_sample_parquet_citations_are_at_least_one() -> None:
    sample = pl.read_parquet(ROOT / "data" / "sample" / "records.parquet")
    lowest = sample.select(
        pl.col("citations").list.min().min().alias("citations"),
        pl.col("gold_citations").list.min().min().alias("gold_citations"),
    ).row(0)
    assert lowest == (1, 1)


def test_bundled_json_citations_are_at_least_one() -> None:
    """The ``citations`` / ``gold_citations`` fields of every bundled JSON file. (A ``[0]``
    marker inside a response, as in tests/golden/grounding_cases.jsonl, is model output: it is
    scored as citing no passage, not rejected.)"""
    files = sorted([*(ROOT / "data").rglob("*.json"), *(ROOT / "data").rglob("*.jsonl"),
                    *(ROOT / "tests" / "golden").glob("*.json*")])
    numbers = {
        str(path.relative_to(ROOT)): [
            int(number)
            for match in CITED.finditer(path.read_text(encoding="utf-8"))
            for number in re.findall(r"-?\d+", match.group(1))
        ]
        for path in files
    }
    assert sum(map(len, numbers.values())) >= 6  # the format 2 example holds some
    assert {path: found for path, found in numbers.items() if min(found, default=1) < 1} == {}
