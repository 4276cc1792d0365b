"""End to end through the CLI: the retrieval and context families on the bundled RGB sample
(ingest-rgb, then evaluate), the by_failure_stage view, and a run without the new inputs."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.views import run_query

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample" / "rgb"


@pytest.fixture(scope="module")
def rgb_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("rgb")
    records = tmp / "records.parquet"
    assert main(["ingest-rgb", "--data", str(SAMPLE / "rgb_data.json"), "--outputs",
                 str(SAMPLE / "rgb_outputs.jsonl"), "--out", str(records)]) == 0
    out = tmp / "out"
    assert main(["evaluate", "--input", str(records), "--out", str(out), "--metrics",
                 "context,retrieval,answer_str_em", "--no-progress"]) == 0
    return out


def test_negative_rejection_rows_fail_at_retrieval_or_abstain_correctly(rgb_out: Path) -> None:
    scores = pl.read_parquet(rgb_out / "scores.parquet")
    rejection = scores.filter(pl.col("task") == "negative_rejection")
    assert rejection.height == 60
    assert set(rejection["failure_stage"]) == {"retrieval", "correct_abstention"}
    assert rejection["answer_in_context"].to_list() == [0] * 60


def test_retrieval_failures_rise_with_the_noise_level(rgb_out: Path) -> None:
    # The noise-robustness rows (0 to 0.8) and the negative-rejection rows (1.0, no positive
    # passage); the counterfactual rows' passages state a wrong answer on purpose.
    shares = run_query(rgb_out, """
        select noise_level, avg(case when failure_stage = 'retrieval' then 1 else 0 end) as share
        from scores where task in ('noise_robustness', 'negative_rejection')
        group by noise_level order by noise_level""")
    curve = [share or 0.0 for share in shares["share"].to_list()]
    assert shares["noise_level"].to_list() == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert curve == sorted(curve) and curve[-1] > 0.4 > curve[0]


def test_the_view_counts_every_row_once(rgb_out: Path) -> None:
    stages = run_query(rgb_out, "select * from by_failure_stage")
    assert stages["n"].sum() == 480
    assert stages.select("model", "noise_level", "category", "failure_stage").is_unique().all()
    groups = stages.group_by("model", "noise_level", "category").agg(pl.col("share").sum())
    assert groups["share"].round(12).to_list() == [1.0] * groups.height
    assert set(stages["failure_stage"]) <= {"retrieval", "generation", "grounding",
                                            "abstention", "correct_abstention", "none"}


def test_passage_numbers_serve_as_ids_and_a_run_without_judgments_is_null(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = tmp_path / "records.jsonl"
    pl.DataFrame({
        "id": ["a", "b", "c"], "question": ["Where is the tower?"] * 3,
        "reference": ["Paris"] * 3, "response": ["In Paris [2]."] * 3,
        "contexts": [["Berlin is big.", "The tower is in Paris."]] * 3,
        "gold_citations": [[2], None, [1]],
        "context_ids": [None, ["d1", "d2"], ["d1", "d2"]],
        "relevant_ids": [None, ["d2", "d9"], None],
        "relevance": [None, [3, 1], None],
    }).write_ndjson(records)
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(records), "--out", str(out), "--metrics",
                 "retrieval,context", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "retrieval" not in err and "context" not in err
    scores = pl.read_parquet(out / "scores.parquet").sort("id")
    # a: gold passage 2 is ranked 2nd; b: d2 (grade 3) at 2, d9 (grade 1) never retrieved;
    # c: gold passage 1 is d1, ranked first.
    assert scores["reciprocal_rank"].to_list() == [0.5, 0.5, 1.0]
    assert scores["recall_at_1"].to_list() == [0.0, 0.0, 1.0]
    assert scores["n_relevant"].to_list() == [1, 2, 1]
    assert scores["answer_rank"].to_list() == [2, 2, 2]
    plain = tmp_path / "plain.jsonl"
    pl.DataFrame({"id": ["a"], "question": ["q"], "reference": ["Paris"],
                  "response": ["Paris."]}).write_ndjson(plain)
    assert main(["evaluate", "--input", str(plain), "--out", str(tmp_path / "plain"),
                 "--metrics", "retrieval,context", "--no-progress"]) == 0
    row = pl.read_parquet(tmp_path / "plain" / "scores.parquet").row(0, named=True)
    assert row["precision_at_1"] is None and row["answer_in_context"] is None
    assert row["failure_stage"] == "none"


def test_the_report_shows_where_answers_fail(rgb_out: Path) -> None:
    assert main(["report", str(rgb_out), "--out", str(rgb_out / "report.html")]) == 0
    html = (rgb_out / "report.html").read_text(encoding="utf-8")
    section = html[html.index('<section id="failure-stages">'):]
    section = section[:section.index("</section>")]
    assert "<h2>Where answers fail</h2>" in section
    # One row per model and noise level (three models, six levels), under the header.
    assert section.count("<tr>") == 1 + 3 * 6
    # At noise 1.0 (no passage holds the answer) each model's 20 rows are retrieval failures
    # or correct abstentions, never generation failures: the shares add up to 100 %.
    for model in ("atlas-7b", "borealis-13b", "cirrus-70b"):
        row = re.search(rf'<tr><td>{model}</td><td class="num">1</td>(.*?)</tr>', section)
        assert row is not None, model
        n, retrieval, generation, grounding, abstention, correct, none = (
            float(v) for v in re.findall(r'<td class="num">([\d.]+)</td>', row.group(1)))
        assert (n, generation, grounding, abstention, none) == (20, 0, 0, 0, 0), model
        assert retrieval + correct == 100 and retrieval > 0, model
    assert '<a href="#failure-stages">' in html


def test_configured_cut_offs_replace_the_default_ones_everywhere(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = tmp_path / "records.jsonl"
    ranked = [f"d{i}" for i in range(1, 13)]
    pl.DataFrame({
        "id": ["a", "b"], "question": ["q"] * 2, "reference": ["Paris"] * 2,
        "response": ["Paris."] * 2, "contexts": [[f"passage {i}" for i in range(12)]] * 2,
        "context_ids": [ranked, ranked],
        "relevant_ids": [["d2", "d12"], ["d1", "d30"]],
        "model": ["m1", "m2"],
    }).write_ndjson(records)
    config = tmp_path / "rag-eval.toml"
    config.write_text("[retrieval]\nk = [20, 2]\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(records), "--out", str(out), "--config",
                 str(config), "--metrics", "retrieval", "--no-progress"]) == 0
    capsys.readouterr()
    scores = pl.read_parquet(out / "scores.parquet").sort("id")
    assert "precision_at_5" not in scores.columns and "ndcg_at_1" not in scores.columns
    # a: relevant at ranks 2 and 12; b: at rank 1, and d30 never retrieved (counts, as in
    # trec_eval: recall over the judged relevant documents).
    assert scores["precision_at_2"].to_list() == [0.5, 0.5]
    assert scores["recall_at_2"].to_list() == [0.5, 0.5]
    assert scores["precision_at_20"].to_list() == [0.1, 0.05]
    assert scores["recall_at_20"].to_list() == [1.0, 0.5]
    assert scores["hit_at_2"].to_list() == [1.0, 1.0]
    by_model = run_query(out, "select model, precision_at_20 from by_model order by model")
    assert by_model["precision_at_20"].to_list() == [0.1, 0.05]
    intervals = pl.read_parquet(out / "intervals.parquet")
    assert {"precision_at_2", "ndcg_at_20"} <= set(intervals["metric"])
    assert "precision_at_5" not in set(intervals["metric"])
    assert main(["query", str(out), "select avg(recall_at_20) as r from scores"]) == 0
    assert "0.75" in capsys.readouterr().out


def test_a_bad_cut_off_is_refused_with_the_config_named(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "rag-eval.toml"
    config.write_text("[retrieval]\nk = [0, 5]\n", encoding="utf-8")
    plain = tmp_path / "plain.jsonl"
    pl.DataFrame({"id": ["a"], "question": ["q"], "reference": ["Paris"],
                  "response": ["Paris."]}).write_ndjson(plain)
    assert main(["evaluate", "--input", str(plain), "--out", str(tmp_path / "out"),
                 "--config", str(config), "--no-progress"]) != 0
    assert "[retrieval] k must be a non-empty list of integers from 1 to 1000" in \
        capsys.readouterr().err
