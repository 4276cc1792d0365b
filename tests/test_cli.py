"""End-to-end tests: the command line on real files, outputs read back from disk."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipeline import scoring as scoring_module
from pipeline.cli import EXIT_INTERNAL, main
from pipeline.metrics.registry import FAMILIES, REGISTRY

EXAMPLES = Path(__file__).parents[1] / "data" / "examples"


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


GOOD = [
    {"id": "q1", "model": "m1", "question": "Capital of France?", "reference": "Paris",
     "response": "Paris [1]", "contexts": ["Paris is the capital.", "Lyon."],
     "gold_citations": [1], "category": "Factual", "noise_level": 0.0, "total_tokens": 10,
     "latency_ms": 100.0},
    {"id": "q2", "model": "m1", "question": "Who wrote it?", "reference": "Hugo",
     "response": "Victor Hugo [2]", "contexts": ["a", "Hugo wrote it."], "gold_citations": [2],
     "category": "Factual", "noise_level": 0.2, "total_tokens": 20, "latency_ms": 300.0},
    {"id": "q1", "model": "m2", "question": "Capital of France?", "reference": "Paris",
     "response": "I don't know [2].", "contexts": ["Paris is the capital.", "Lyon."],
     "gold_citations": [1], "category": "Factual", "noise_level": 0.0, "prompt_tokens": 7,
     "completion_tokens": 3, "latency_ms": 50.0},
]
BAD = [
    {"id": "q3", "model": "m1", "question": 7, "reference": "x", "response": "x"},
    {"id": "q4", "model": "m1", "question": "?", "reference": None, "response": "x"},
    {"id": "q1", "model": "m1", "question": "dup", "reference": "x", "response": "x",
     "noise_level": 0.0},
    {"id": "q5", "model": "m1", "question": "?", "reference": "x", "response": "x",
     "contexts": ["only one"], "citations": [3]},
]


@pytest.fixture
def run_dir(tmp_path: Path, capsys) -> Path:
    source = write_jsonl(tmp_path / "answers.jsonl", GOOD + BAD)
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(source), "--out", str(out), "--no-progress"]) == 0
    return out


def test_evaluate_writes_scores_rejections_and_views(run_dir: Path, capsys):
    scores = pl.read_parquet(run_dir / "scores.parquet")
    rejected = pl.read_parquet(run_dir / "rejected.parquet")
    assert scores.height == 3 and rejected.height == 4  # scored + rejected == read (7)
    by_key = {(r["id"], r["model"]): r for r in scores.iter_rows(named=True)}
    assert by_key[("q1", "m1")]["answer_em"] == 1
    assert by_key[("q2", "m1")]["answer_f1"] == pytest.approx(2 / 3)
    assert by_key[("q1", "m2")]["idk_with_citation"] == 1
    assert by_key[("q1", "m2")]["total_tokens"] == 10
    assert by_key[("q1", "m2")]["citation_precision"] == 0.0
    reasons = dict(zip(rejected["id"], rejected["reason"], strict=True))
    assert "question: expected string, got int" in reasons["q3"]
    assert "reference" in reasons["q4"]
    assert "duplicate id 'q1'" in reasons["q1"]
    assert "citations" in reasons["q5"]
    assert json.loads(rejected.filter(pl.col("id") == "q3")["raw"].item())["question"] == 7
    out = capsys.readouterr().out
    assert "read 7 rows: scored 3, rejected 4" in out
    assert "m1" in out and "m2" in out  # the headline table


def test_views_open_from_duckdb(run_dir: Path):
    con = duckdb.connect(str(run_dir / "eval.duckdb"), read_only=True)
    rows = con.execute("select model, n from headline order by model").fetchall()
    assert rows == [("m1", 2), ("m2", 1)]
    idk = con.execute("select sum(idk_with_citation) from scores").fetchone()
    assert idk == (1,)


def test_query_subcommand(run_dir: Path, capsys):
    capsys.readouterr()
    sql = "select model, count(*) as n from scores group by model order by model"
    assert main(["query", str(run_dir), sql, "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ["model,n", "m1,2", "m2,1"]
    assert main(["query", str(run_dir), "select * from no_such_view"]) == 2


def test_missing_required_column_names_column_and_file(tmp_path: Path, capsys):
    rows = [{"id": "1", "question": "q", "reference": "r"}]
    source = write_jsonl(tmp_path / "broken.jsonl", rows)
    code = main(["evaluate", "--input", str(source), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2
    assert "'response'" in err and "broken.jsonl" in err
    assert not (tmp_path / "o" / "scores.parquet").exists()


def test_metric_selection_limits_columns(tmp_path: Path):
    source = write_jsonl(tmp_path / "a.jsonl", GOOD)
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(source), "--out", str(out), "--metrics", "answer",
                 "--no-progress"]) == 0
    columns = pl.read_parquet_schema(out / "scores.parquet").names()
    assert [c for c in columns if c in REGISTRY] == list(FAMILIES["answer"])
    assert main(["evaluate", "--input", str(source), "--out", str(out), "--metrics", "meteor"]) == 2


def test_config_maps_columns(tmp_path: Path):
    rows = [{"qid": "1", "question": "q", "gold": "Paris", "answer": "paris"}]
    source = write_jsonl(tmp_path / "mapped.jsonl", rows)
    config = tmp_path / "eval.toml"
    config.write_text('[columns]\nid = "qid"\nreference = "gold"\nresponse = "answer"\n')
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(source), "--config", str(config), "--out", str(out),
                 "--no-progress"]) == 0
    assert pl.read_parquet(out / "scores.parquet")["answer_em"].to_list() == [1]


def test_legacy_formats(tmp_path: Path):
    out = tmp_path / "out"
    code = main([
        "evaluate", "--no-progress", "--out", str(out),
        "--input", str(EXAMPLES / "format3" / "records.tsv"),
        "--pair", str(EXAMPLES / "format1" / "gpt-4o-mini.json"),
        str(EXAMPLES / "format1" / "references.json"),
        "--pair", str(EXAMPLES / "format2" / "llama-3-8b.json"),
        str(EXAMPLES / "format2" / "gold.json"),
    ])
    assert code == 0
    scores = pl.read_parquet(out / "scores.parquet")
    rejected = pl.read_parquet(out / "rejected.parquet")
    assert {"gpt-4o-mini", "llama-3-8b"} <= set(scores["model"].drop_nulls())
    assert rejected["reason"].str.contains("without").any()  # the unmatched prediction


def test_validate_exit_codes(tmp_path: Path, capsys):
    good = write_jsonl(tmp_path / "good.jsonl", GOOD)
    bad = write_jsonl(tmp_path / "bad.jsonl", GOOD + BAD)
    assert main(["validate", "--input", str(good)]) == 0
    assert main(["validate", "--input", str(bad)]) == 1
    assert "4 would be rejected" in capsys.readouterr().out
    assert not list(tmp_path.glob("*.parquet"))


def test_crash_mid_write_keeps_previous_result(tmp_path: Path, monkeypatch, capsys):
    source = write_jsonl(tmp_path / "a.jsonl", GOOD)
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(source), "--out", str(out), "--no-progress"]) == 0
    before = (out / "scores.parquet").read_bytes()
    real = scoring_module.score_frame
    calls = {"n": 0}

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] > 2:  # two batches, then a crash
            raise RuntimeError("simulated crash")
        return real(*args, **kwargs)

    monkeypatch.setattr(scoring_module, "score_frame", failing)
    code = main(["evaluate", "--input", str(source), "--out", str(out), "--no-progress",
                 "--batch-rows", "1"])
    assert code == EXIT_INTERNAL
    assert "simulated crash" in capsys.readouterr().err
    assert (out / "scores.parquet").read_bytes() == before
    assert not [p for p in out.iterdir() if p.name.startswith(".tmp-")]


def test_module_entry_point(tmp_path: Path):
    source = write_jsonl(tmp_path / "a.jsonl", GOOD)
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", "evaluate", "--input", str(source), "--out",
         str(tmp_path / "out"), "--no-progress"],
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "scored 3, rejected 0" in result.stdout


def test_second_run_hits_the_embedding_cache(tmp_path: Path, caplog):
    """The default MiniLM backend runs offline; a re-run encodes nothing and says so."""
    source = write_jsonl(tmp_path / "a.jsonl", GOOD)
    cache = tmp_path / "cache"
    args = ["evaluate", "--input", str(source), "--no-progress", "--cache-dir", str(cache),
            "--metrics", "semantic,grounding"]
    caplog.set_level("INFO", logger="pipeline.embed.cache")
    assert main([*args, "--out", str(tmp_path / "first")]) == 0
    first = [r.getMessage() for r in caplog.records if r.getMessage().startswith("embeddings:")]
    assert first and not any(", 0 encoded" in m for m in first[:1])
    caplog.clear()
    assert main([*args, "--out", str(tmp_path / "second")]) == 0
    second = [r.getMessage() for r in caplog.records if r.getMessage().startswith("embeddings:")]
    assert second and all(", 0 encoded" in m for m in second)
    assert any(p.name.endswith(".keys.npy") for p in cache.rglob("*"))
    scores = [pl.read_parquet(tmp_path / d / "scores.parquet") for d in ("first", "second")]
    assert scores[0].drop("source").equals(scores[1].drop("source"))
    assert scores[0]["semantic_similarity"].null_count() == 0


def test_embedding_backend_flag(tmp_path: Path):
    source = write_jsonl(tmp_path / "a.jsonl", GOOD)
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(source), "--out", str(out), "--no-progress",
                 "--metrics", "semantic", "--embedding-backend", "hashed"]) == 0
    signature = pl.read_parquet(out / "scores.parquet")["signature"].unique().item()
    assert "emb:hashed" in signature
    assert main(["evaluate", "--input", str(source), "--out", str(out), "--no-progress",
                 "--metrics", "semantic", "--embedding-backend", "nope"]) == 2
