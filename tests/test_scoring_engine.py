"""The polars engine of a batch's scoring plan (pipeline.scoring.scoring_engine): which engine a
batch gets, and that the engines give the same scores."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline import scoring
from pipeline.api import score
from pipeline.scoring import scoring_engine

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample" / "records.parquet"


def _rows(n: int, response: str) -> pl.DataFrame:
    return pl.DataFrame({"response": [response] * n})


def test_small_batches_and_wide_metric_sets_run_in_memory() -> None:
    long = "word " * 30
    assert scoring_engine(_rows(20, long), 8) == "in-memory"
    assert scoring_engine(_rows(10_000, long), 121) == "in-memory"
    assert scoring_engine(_rows(10_000, "Paris"), 8) == "in-memory"
    assert scoring_engine(pl.DataFrame({"x": [1] * 10_000}), 8) == "in-memory"


def test_large_batches_of_long_responses_and_few_metrics_stream() -> None:
    assert scoring_engine(_rows(10_000, "word " * 30), 8) == "streaming"
    assert scoring_engine(_rows(10_000, "word " * 16), 24) == "streaming"


def test_both_engines_give_the_same_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    sample = pl.read_parquet(SAMPLE).head(120)
    metrics = ["answer", "citation", "rouge_l", "abstained"]
    chosen: list[str] = []

    def spy(records: pl.DataFrame, n_metrics: int) -> str:
        chosen.append(engine := scoring_engine(records, n_metrics))
        return engine

    monkeypatch.setattr(scoring, "scoring_engine", spy)
    in_memory = score(sample, metrics=metrics).scores
    monkeypatch.setattr(scoring, "STREAMING_ROWS", 1)
    monkeypatch.setattr(scoring, "STREAMING_RESPONSE_BYTES", 0)
    streamed = score(sample, metrics=metrics).scores
    assert chosen == ["in-memory", "streaming"]
    assert in_memory.height == 120
    assert_frame_equal(in_memory, streamed, check_exact=True)
