"""The scale benchmark's helpers: generated data is valid and deterministic; a tiny run works."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from pipeline.config import load_config
from pipeline.metrics.registry import REGISTRY, resolve
from pipeline.metrics.spec import NEEDS_EMBEDDER
from pipeline.schema import RECORD_SCHEMA
from pipeline.validate import validate_records

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
import bench_scale

KEY = ["id", "model", "run", "noise_level"]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scale") / "records.parquet"
    return bench_scale.generate(path, 2_000, seed=3, chunk_rows=600)


def test_generated_rows_are_valid_records(small: Path) -> None:
    frame = pl.read_parquet(small)
    assert frame.height == 2_000
    assert pq.ParquetFile(small).metadata.num_row_groups > 1  # written chunk by chunk
    assert frame.columns == [c for c in RECORD_SCHEMA if c in frame.columns]
    assert {name: frame.schema[name] for name in frame.columns} == {
        name: RECORD_SCHEMA[name] for name in frame.columns
    }
    assert frame.select(pl.struct(KEY).is_unique().all()).item()
    assert set(frame["noise_level"].unique()) == {0.0, 0.2, 0.4, 0.6, 0.8}
    assert frame["model"].n_unique() == len(bench_scale.MODELS)
    assert frame["contexts"].list.len().is_between(2, 3).all()
    assert (frame["response"] == frame["reference"]).any()  # some exact answers
    assert frame["response"].str.contains("(?i)don't know").any()  # some abstentions
    provenance = frame.with_columns(source=pl.lit(str(small)), row_number=pl.int_range(2_000))
    validated = validate_records(provenance, str(small), load_config(None))
    assert validated.rejected.height == 0


def test_generation_is_deterministic(small: Path, tmp_path: Path) -> None:
    again = bench_scale.generate(tmp_path / "again.parquet", 2_000, seed=3, chunk_rows=600)
    assert pl.read_parquet(again).equals(pl.read_parquet(small))
    other = bench_scale.generate(tmp_path / "other.parquet", 2_000, seed=4, chunk_rows=600)
    assert not pl.read_parquet(other).equals(pl.read_parquet(small))


def test_lexical_metrics_need_no_embedder() -> None:
    names = bench_scale.lexical_metrics()
    resolved = {spec.name for spec in resolve(names)}
    assert resolved == set(names)  # closed under needs
    assert all(NEEDS_EMBEDDER not in REGISTRY[n].needs for n in resolved)
    assert {"semantic_similarity", "faithfulness", "overall_score"}.isdisjoint(names)
    assert {"answer_f1", "rouge_l", "bleu", "tfidf_relevance"} <= set(names)


def test_summary_targets() -> None:
    def run(rate: float, rss: float) -> dict[str, float]:
        return {"rows_per_s": rate, "peak_rss_gib": rss, "returncode": 0}

    held = bench_scale.summarize([run(100, 1.0), run(110, 1.5), run(90, 1.9)])
    assert held["targets_met"] and held["spread"] == pytest.approx(0.2)
    assert not bench_scale.summarize([run(100, 1.0), run(70, 1.0)])["throughput_ok"]
    assert not bench_scale.summarize([run(100, 1.0), run(100, 2.5)])["rss_ok"]


def test_benchmark_end_to_end(tmp_path: Path) -> None:
    result = tmp_path / "result.json"
    code = bench_scale.main(["--sizes", "3000", "--workdir", str(tmp_path / "work"), "--keep",
                             "--json", str(result)])
    assert code == 0
    payload = json.loads(result.read_text())
    [row] = payload["results"]
    assert row["rows"] == 3000 and row["returncode"] == 0
    assert row["rows_per_s"] > 0 and row["peak_rss_gib"] > 0
    out = tmp_path / "work" / "out-3000"
    assert pl.read_parquet(out / "scores.parquet").height == 3000
    assert pl.read_parquet(out / "rejected.parquet").height == 0
    assert row["scored"] == 3000 and row["rejected"] == 0
