"""The RGB robustness-suite views against hand-computed values.

The views reproduce the four RGB settings of Chen et al., "Benchmarking Large Language Models in
Retrieval-Augmented Generation" (AAAI 2024): accuracy under noise, rejection rate, integration
accuracy, and counterfactual accuracy, error detection and error correction. The hand-made
``scores.parquet`` holds only the key columns, the RGB columns and ``signature``; the staging
view fills every other metric column with typed nulls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from test_views import rows_by

from pipeline.schema import KEY_COLUMNS, REJECTED_SCHEMA
from pipeline.views import (
    REJECTED_FILE,
    SCORES_FILE,
    build_views,
    connect,
    default_queries_dir,
    load_views,
    run_query,
)

RGB_VIEWS = (
    "rgb_noise_robustness",
    "rgb_negative_rejection",
    "rgb_information_integration",
    "rgb_counterfactual",
    "rgb_summary",
)
SIGNATURE = "rag-eval|v:test|rgb:official-test"
NOISE = "noise_robustness"
REJECTION = "negative_rejection"
INTEGRATION = "information_integration"
COUNTERFACTUAL = "counterfactual_robustness"

_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String(), "model": pl.String(), "run": pl.String(), "category": pl.String(),
    "noise_level": pl.Float64(), "question_type": pl.String(), "task": pl.String(),
    "language": pl.String(), "lang": pl.String(), "source": pl.String(),
    "row_number": pl.Int64(),
    "rgb_correct": pl.Int8(), "rejected": pl.Int8(), "rejection_phrase": pl.String(),
    "error_detected": pl.Int8(), "error_corrected": pl.Int8(), "signature": pl.String(),
}

# Columns: model task noise_level language | rgb_correct rejected error_detected error_corrected
_ROWS: list[tuple[Any, ...]] = [
    # A, noise robustness: 100 % at 0.0, 50 % at 0.2, 50 % at 0.4 (the null row is unscored).
    ("A", NOISE, 0.0, "en", 1, 0, None, None),
    ("A", NOISE, 0.0, "zh", 1, 0, None, None),
    ("A", NOISE, 0.2, "en", 1, 0, None, None),
    ("A", NOISE, 0.2, "en", 0, 1, None, None),
    ("A", NOISE, 0.4, "en", 1, 0, None, None),
    ("A", NOISE, 0.4, "en", 0, 0, None, None),
    ("A", NOISE, 0.4, "en", None, None, None, None),
    # A, negative rejection: 2 of 3 scored rows rejected.
    ("A", REJECTION, 1.0, "en", None, 1, None, None),
    ("A", REJECTION, 1.0, "en", None, 1, None, None),
    ("A", REJECTION, 1.0, "en", None, 0, None, None),
    ("A", REJECTION, 1.0, "en", None, None, None, None),
    # A, information integration: 2 of 2 at 0.0, 1 of 3 at 0.2, so 3 of 5 overall.
    ("A", INTEGRATION, 0.0, "en", 1, 0, None, None),
    ("A", INTEGRATION, 0.0, "en", 1, 0, None, None),
    ("A", INTEGRATION, 0.2, "en", 1, 0, None, None),
    ("A", INTEGRATION, 0.2, "en", 0, 0, None, None),
    ("A", INTEGRATION, 0.2, "en", 0, 1, None, None),
    # A, counterfactual: 2 of 4 correct, 2 detected, 1 of those corrected.
    ("A", COUNTERFACTUAL, 0.0, "en", 1, 0, 1, 1),
    ("A", COUNTERFACTUAL, 0.0, "en", 0, 0, 1, 0),
    ("A", COUNTERFACTUAL, 0.0, "en", 1, 0, 0, 0),
    ("A", COUNTERFACTUAL, 0.0, "en", 0, 0, 0, 0),
    # A, not RGB: values that would change every score above if they were counted.
    ("A", None, 0.0, "en", 0, 1, 1, 1),
    ("A", None, 0.2, "en", 0, 1, 1, 1),
    ("A", None, 1.0, "en", 1, 0, 0, 0),
    # B: a single noise level, and counterfactual rows with nothing detected.
    ("B", NOISE, 0.4, "en", 1, 0, None, None),
    ("B", COUNTERFACTUAL, 0.0, "en", 1, 0, 0, 0),
    ("B", COUNTERFACTUAL, 0.0, "en", 0, 0, 0, 0),
    # D: counterfactual rows only.
    ("D", COUNTERFACTUAL, 0.0, "en", 1, 0, 1, 1),
    # E: two levels that round to 60 %, and an unscored noise_level.
    ("E", NOISE, 0.6, "en", 1, 0, None, None),
    ("E", NOISE, 0.6000000000000001, "en", 0, 0, None, None),
    ("E", NOISE, None, "en", 1, 0, None, None),
    # N: no RGB rows at all.
    ("N", None, 0.0, "en", 1, 1, 1, 1),
    # Rows without a model form a null key, as in the other views.
    (None, REJECTION, 1.0, "en", None, 1, None, None),
]
_ROW_COLUMNS = ("model", "task", "noise_level", "language", "rgb_correct", "rejected",
                "error_detected", "error_corrected")


def scores_frame() -> pl.DataFrame:
    rows = [dict(zip(_ROW_COLUMNS, row, strict=True)) for row in _ROWS]
    for i, row in enumerate(rows):
        row.update(
            id=f"q{i}", run="r1", category=None, question_type=None, source="rgb.jsonl",
            row_number=i, signature=SIGNATURE,
            rejection_phrase="insufficient information" if row["rejected"] == 1 else None,
        )
    return pl.DataFrame(rows, schema=_SCHEMA)


def write_outputs(out_dir: Path, scores: pl.DataFrame) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    scores.write_parquet(out_dir / SCORES_FILE)
    pl.DataFrame(schema=REJECTED_SCHEMA).write_parquet(out_dir / REJECTED_FILE)
    build_views(out_dir)
    return out_dir


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_outputs(tmp_path_factory.mktemp("rgb"), scores_frame())


def view(out_dir: Path, name: str, *keys: str) -> dict[Any, dict[str, Any]]:
    return rows_by(run_query(out_dir, f"select * from {name}"), *keys)


# --- building ---------------------------------------------------------------------------------


def test_the_key_frame_covers_the_contract_keys() -> None:
    assert set(KEY_COLUMNS) <= set(_SCHEMA)


@pytest.mark.parametrize("name", RGB_VIEWS)
def test_grain_is_unique(out_dir: Path, name: str) -> None:
    grain = {v.name: v.grain_columns for v in load_views(default_queries_dir())}[name]
    with connect(out_dir) as con:
        row = con.execute(
            f"select count(*), count(distinct row({', '.join(grain)})) from {name}"
        ).fetchone()
    assert row is not None
    assert row[0] > 0
    assert row[0] == row[1]


def test_staging_types_and_dependencies(out_dir: Path) -> None:
    with connect(out_dir) as con:
        types = dict(con.execute("select column_name, data_type from information_schema.columns "
                                 "where table_name = 'scores'").fetchall())
    assert {c: types[c] for c in ("task", "language", "rgb_correct", "rejected",
                                  "rejection_phrase", "error_detected", "error_corrected")} == {
        "task": "VARCHAR", "language": "VARCHAR", "rgb_correct": "TINYINT",
        "rejected": "TINYINT", "rejection_phrase": "VARCHAR", "error_detected": "TINYINT",
        "error_corrected": "TINYINT",
    }
    # The column `rejected` must not make the staging view depend on the view `rejected`.
    views = {v.name: v for v in load_views(default_queries_dir())}
    assert views["scores"].depends_on == ()
    assert set(views["rgb_summary"].depends_on) >= set(RGB_VIEWS) - {"rgb_summary"}


def test_absent_rgb_columns_become_typed_nulls(tmp_path: Path) -> None:
    keys_only = scores_frame().select(*KEY_COLUMNS, "signature").with_columns(
        pl.lit(None, dtype=pl.String()).alias("task")
    )
    out = write_outputs(tmp_path, keys_only)
    with connect(out) as con:
        for name in RGB_VIEWS:
            assert con.execute(f"select count(*) from {name}").fetchone() == (0,), name


# --- noise robustness --------------------------------------------------------------------------


def test_noise_robustness_accuracy_per_level(out_dir: Path) -> None:
    rows = view(out_dir, "rgb_noise_robustness", "model", "noise_level")
    assert set(rows) == {("A", 0.0), ("A", 0.2), ("A", 0.4), ("B", 0.4), ("E", 0.6),
                         ("E", 0.6000000000000001), ("E", None)}
    assert [(rows[("A", x)]["n"], rows[("A", x)]["accuracy"]) for x in (0.0, 0.2, 0.4)] == [
        (2, 100.0), (2, 50.0), (2, 50.0)  # the unscored row at 0.4 counts in neither
    ]


def test_noise_robustness_curve(out_dir: Path) -> None:
    rows = view(out_dir, "rgb_noise_robustness", "model", "noise_level")
    # Levels 0, .2, .4 with accuracies 100, 50, 50:
    # auc = 0.2 * (100 + 50) / 2 + 0.2 * (50 + 50) / 2 = 15 + 10 = 25, normalized 25 / 0.4 = 62.5.
    for level in (0.0, 0.2, 0.4):
        a = rows[("A", level)]
        assert a["accuracy_at_min_noise"] == pytest.approx(100.0)
        assert a["accuracy_at_max_noise"] == pytest.approx(50.0)
        assert a["accuracy_drop"] == pytest.approx(50.0)
        assert a["auc"] == pytest.approx(25.0)
        assert a["auc_normalized"] == pytest.approx(62.5)
        assert a["signature"] == SIGNATURE
    b = rows[("B", 0.4)]
    assert (b["accuracy_at_min_noise"], b["accuracy_at_max_noise"]) == (100.0, 100.0)
    assert (b["accuracy_drop"], b["auc"], b["auc_normalized"]) == (None, None, None)
    # E: the row without a noise level has an accuracy but is not a point of the curve.
    assert rows[("E", None)]["accuracy"] == pytest.approx(100.0)
    assert rows[("E", None)]["accuracy_drop"] == pytest.approx(100.0)
    assert rows[("E", 0.6)]["auc_normalized"] == pytest.approx(50.0)


# --- negative rejection, integration, counterfactual -------------------------------------------


def test_negative_rejection(out_dir: Path) -> None:
    rows = view(out_dir, "rgb_negative_rejection", "model")
    assert set(rows) == {"A", None}
    a = rows["A"]
    assert (a["n"], a["n_rejected"]) == (3, 2)
    assert a["rejection_rate"] == pytest.approx(100 * 2 / 3)
    assert a["signature"] == SIGNATURE
    assert rows[None]["rejection_rate"] == pytest.approx(100.0)


def test_information_integration(out_dir: Path) -> None:
    rows = view(out_dir, "rgb_information_integration", "model", "noise_level")
    assert set(rows) == {("A", 0.0), ("A", 0.2)}
    assert (rows[("A", 0.0)]["n"], rows[("A", 0.0)]["accuracy"]) == (2, 100.0)
    assert rows[("A", 0.2)]["n"] == 3
    assert rows[("A", 0.2)]["accuracy"] == pytest.approx(100 / 3)


def test_counterfactual(out_dir: Path) -> None:
    rows = view(out_dir, "rgb_counterfactual", "model")
    assert set(rows) == {"A", "B", "D"}
    a = rows["A"]
    assert (a["n"], a["n_error_detected"]) == (4, 2)
    assert a["accuracy"] == pytest.approx(50.0)
    assert a["error_detection_rate"] == pytest.approx(50.0)
    assert a["error_correction_rate"] == pytest.approx(25.0)
    assert a["correction_rate_given_detected"] == pytest.approx(50.0)
    b = rows["B"]
    assert (b["n"], b["n_error_detected"], b["error_detection_rate"]) == (2, 0, 0.0)
    assert b["correction_rate_given_detected"] is None  # nothing detected: no rate, not 0
    assert rows["D"]["correction_rate_given_detected"] == pytest.approx(100.0)


# --- summary -----------------------------------------------------------------------------------


def test_summary(out_dir: Path) -> None:
    rows = view(out_dir, "rgb_summary", "model")
    assert set(rows) == {"A", "B", "D", "E", None}  # N has no RGB row
    a = rows["A"]
    assert a["n"] == 20
    assert (a["noise_acc_0"], a["noise_acc_20"], a["noise_acc_40"]) == (100.0, 50.0, 50.0)
    assert (a["noise_acc_60"], a["noise_acc_80"]) == (None, None)
    assert a["noise_accuracy_drop"] == pytest.approx(50.0)
    assert a["noise_auc_normalized"] == pytest.approx(62.5)
    assert a["rejection_rate"] == pytest.approx(100 * 2 / 3)
    assert a["integration_accuracy"] == pytest.approx(60.0)
    assert a["counterfactual_accuracy"] == pytest.approx(50.0)
    assert a["error_detection_rate"] == pytest.approx(50.0)
    assert a["error_correction_rate"] == pytest.approx(25.0)
    assert a["signature"] == SIGNATURE
    assert rows["E"]["noise_acc_60"] == pytest.approx(50.0)  # 0.6 and 0.6000000000000001 pooled


def test_summary_of_a_counterfactual_only_model(out_dir: Path) -> None:
    d = view(out_dir, "rgb_summary", "model")["D"]
    assert (d["n"], d["counterfactual_accuracy"], d["error_detection_rate"],
            d["error_correction_rate"]) == (1, 100.0, 100.0, 100.0)
    others = {k: v for k, v in d.items()
              if k not in {"model", "n", "counterfactual_accuracy", "error_detection_rate",
                           "error_correction_rate", "signature"}}
    assert others and all(v is None for v in others.values()), others


def test_summary_of_a_null_model(out_dir: Path) -> None:
    row = view(out_dir, "rgb_summary", "model")[None]
    assert (row["n"], row["rejection_rate"], row["counterfactual_accuracy"]) == (1, 100.0, None)
