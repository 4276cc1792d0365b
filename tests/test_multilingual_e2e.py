"""Every language scored right, end to end: the real Chinese RGB sets through ``ingest-rgb`` and
``evaluate`` (responses built from their answers), and a mixed-language file through the CLI.

A response that contains the answer must never score 0 on a lexical metric because its
tokenizer cannot see Chinese (issue 26): ROUGE-1/L, BLEU, answer F1 and content coverage are
positive on every such row, ROUGE-2 where the reference has two tokens or more.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from test_rgb_matching import RGB_DIR, load, needs_rgb

from pipeline.cli import main
from pipeline.metrics.robustness.rgb import answer_groups_from_json
from pipeline.views import run_query

LEXICAL = ("rouge_1", "rouge_l", "bleu", "answer_f1", "content_coverage")


def _outputs(name: str, task: str, limit: int) -> list[dict]:
    outputs = []
    for item in load(name)[:limit]:
        answer = answer_groups_from_json(item["answer"])[0][0]
        for k, response in enumerate((f"根据文档，答案是{answer}。", f"{answer}[1]。")):
            outputs.append({"id": item["id"], "model": f"m{k}", "task": task,
                            "noise_rate": 0.0, "response": response})
    return outputs


@needs_rgb
@pytest.mark.parametrize(("name", "task"), [("zh_refine.json", "noise_robustness"),
                                            ("zh_fact.json", "counterfactual_robustness")])
def test_chinese_rgb_rows_are_seen_by_every_lexical_metric(
    tmp_path: Path, name: str, task: str
) -> None:
    outputs = _outputs(name, task, limit=60)
    path = tmp_path / "outputs.jsonl"
    path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in outputs),
                    encoding="utf-8")
    records = tmp_path / "records.parquet"
    assert main(["ingest-rgb", "--data", str(RGB_DIR / name), "--outputs", str(path),
                 "--out", str(records)]) == 0
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(records), "--out", str(out), "--no-progress",
                 "--metrics", "answer,lexical", "--no-stats"]) == 0
    scores = pl.read_parquet(out / "scores.parquet").join(
        pl.read_parquet(out / "texts.parquet"), on=["source", "row_number"]
    )
    assert scores["lang"].unique().to_list() == ["zh"]
    containing = scores.filter(pl.col("response").str.contains(pl.col("reference"), literal=True))
    assert containing.height >= 100
    for metric in LEXICAL:
        zeros = containing.filter(pl.col(metric) == 0)
        assert zeros.height == 0, (metric, zeros.select("reference", "response").head(5))
    two_tokens = containing.filter(pl.col("rouge_2_ref") > 0)
    assert two_tokens.filter(pl.col("rouge_2") == 0).height == 0
    assert run_query(out, "select * from tokenless_rows where n_without_tokens > 0").height == 0


def test_mixed_languages_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                         ) -> None:
    rows = [
        {"id": "en", "question": "Capital of France?", "reference": "Paris",
         "response": "The capital is Paris."},
        {"id": "zh", "question": "冬奥会在哪里举行？", "reference": "北京",
         "response": "2022年冬奥会在北京举行。"},
        {"id": "ru", "question": "Столица России?", "reference": "Москва",
         "response": "Столица России — Москва."},
        {"id": "ja", "question": "日本の首都は？", "reference": "東京",
         "response": "日本の首都は東京です。"},
        {"id": "de", "question": "Hauptstadt?", "reference": "die Hauptstadt Berlin",
         "response": "Berlin", "lang": "de"},
    ]
    source = tmp_path / "mixed.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                      encoding="utf-8")
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(source), "--out", str(out), "--no-progress",
                 "--metrics", "answer,lexical", "--no-stats"]) == 0
    scores = pl.read_parquet(out / "scores.parquet").sort("row_number")
    assert scores["lang"].to_list() == ["en", "zh", "ru", "ja", "de"]
    for metric in LEXICAL:
        assert (scores[metric] > 0).all(), (metric, scores[metric].to_list())
    # German under auto stays on SQuAD v2 (Latin script): "die" is not an English article.
    assert scores.filter(pl.col("id") == "de")["answer_f1"].item() == pytest.approx(0.5)
    by_lang = run_query(out, "select lang, count(*) as n from scores group by lang order by lang")
    assert by_lang["lang"].to_list() == ["de", "en", "ja", "ru", "zh"]
    assert "without tokens" not in capsys.readouterr().out


def test_tokenless_rows_are_counted_and_printed(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"id": f"r{k}", "question": "q", "reference": "東京", "response": "東京"}
            for k in range(3)]
    source = tmp_path / "ja.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                      encoding="utf-8")
    config = tmp_path / "english-tokenizers.toml"
    config.write_text('[lexical]\nrouge_tokenizer = "rouge-score"\nbleu_tokenize = "13a"\n')
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(source), "--out", str(out), "--no-progress",
                 "--metrics", "lexical", "--no-stats", "--config", str(config)]) == 0
    printed = capsys.readouterr().out
    assert "ROUGE: 3 of 3 rows without tokens (reference 3, response 3)" in printed
    tokenless = run_query(out, "select metric, n_without_tokens from tokenless_rows "
                               "order by metric")
    assert tokenless.rows() == [("bleu", 0), ("rouge", 3)]


def test_latin_batches_take_the_shortcut_with_the_same_scores() -> None:
    """A batch whose every row is Latin is scored with the Latin rules directly; the scores
    equal those of the per-row choice, and a batch with an undetected script keeps it."""
    from pipeline.config import Config
    from pipeline.schema import PROVENANCE_SCHEMA, RECORD_SCHEMA
    from pipeline.scoring import latin_rules, score_frame

    rows = [("Paris", "The capital is Paris [1]."), ("Berlin", "Berlin, of course."),
            ("ქუთაისი", "ქუთაისი"), ("12", "12 €")]
    frame = pl.DataFrame({"id": ["a", "b", "c", "d"], "question": ["q"] * 4,
                          "reference": [r for r, _ in rows], "response": [p for _, p in rows]})
    schema = {**RECORD_SCHEMA, **PROVENANCE_SCHEMA}
    frame = frame.with_columns(
        [pl.lit(None, dtype=d).alias(c) for c, d in schema.items() if c not in frame.columns]
    ).with_columns(source=pl.lit("s"), row_number=pl.int_range(pl.len(), dtype=pl.Int64))
    metrics = ("answer_f1", "rouge_1", "bleu")
    auto = Config(metrics=metrics)
    latin = latin_rules(auto)
    assert (latin.answer_scorer, latin.rouge_tokenizer, latin.bleu_tokenize) == (
        "squad-v2", "rouge-score", "13a")
    both = score_frame(frame.head(2), auto).collect()
    assert both.drop("signature").equals(score_frame(frame.head(2), latin).collect()
                                         .drop("signature"))
    assert both["signature"].unique().to_list() == [auto.signature()]
    # Georgian is no detected script ("und"): ROUGE's auto still reads it, batch or not.
    mixed = score_frame(frame, auto).collect()
    assert mixed["lang"].to_list() == ["en", "en", "und", "und"]
    assert mixed["rouge_1"][2] == 1.0
    assert mixed.head(2).drop("signature").equals(both.drop("signature"))
