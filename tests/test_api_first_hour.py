"""Issue 34's first hour with the Python API: ``config=`` takes a path, TOML text or a dict;
``@pipeline.metric`` functions without parameters work; the input's other columns (a user's
``label``) are kept, or named in a warning; ``Scored.scores`` holds the texts."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import polars as pl
import pytest

import pipeline
from pipeline.config import ConfigError
from pipeline.metrics.user import UserMetricError
from pipeline.schema import InputError

FRAME = pl.DataFrame({
    "id": ["q1", "q2"], "question": ["Capital of France?", "Largest planet?"],
    "reference": ["Paris", "Jupiter"], "response": ["Paris [1]", "It is Saturn, I think."],
    "label": ["easy", "hard"], "reviewer": [3, 7],
})


# --- config= -------------------------------------------------------------------------------------


def test_config_takes_a_path_toml_text_or_a_dict(tmp_path: Path) -> None:
    toml = "[answer]\nstrip_citation_markers = false\n"
    path = tmp_path / "eval.toml"
    path.write_text(toml, encoding="utf-8")
    default = pipeline.score(FRAME, metrics="answer_em")
    by_path = pipeline.score(FRAME, metrics="answer_em", config=path)
    by_name = pipeline.score(FRAME, metrics="answer_em", config=str(path))
    by_text = pipeline.score(FRAME, metrics="answer_em", config=toml)
    by_dict = pipeline.score(FRAME, metrics="answer_em",
                             config={"answer": {"strip_citation_markers": False}})
    assert default.scores["answer_em"].to_list() == [1, 0]
    for scored in (by_path, by_name, by_text, by_dict):
        assert scored.scores["answer_em"].to_list() == [0, 0]  # "Paris [1]" kept whole
        assert scored.signature == by_path.signature != default.signature
    one_line = pipeline.score(FRAME, config='metrics = {select = ["answer_f1"]}')
    assert [c for c in one_line.scores.columns if c.startswith("answer")] == ["answer_f1"]
    as_tuple = pipeline.score(FRAME, config={"metrics": {"select": ("answer_em",)}})
    assert [c for c in as_tuple.scores.columns if c.startswith("answer")] == ["answer_em"]


@pytest.mark.parametrize(("config", "message"), [
    ({"abstention": {"phrase": ["x"]}},
     "config (dict): unknown key 'phrase' in [abstention] (did you mean 'phrases'?)"),
    ({"abstention": {"phrases": "x"}}, "config (dict): [abstention] phrases must be a list"),
    ({"answr": {}}, "config (dict): unknown section [answr] (did you mean 'answer'?)"),
    ({"grounding": {"tau_sim": "high"}},
     "config (dict): [grounding] tau_sim has the wrong type (str)"),
    ({1: {}}, "config (dict): key 1 is not a string"),
    ("[answer]\nscorer = ", "config (TOML text): invalid TOML"),
    ("answer = 3", "config (TOML text): [answer] must be a table"),
    ("no/such/eval.toml", "config file not found: no/such/eval.toml"),
])
def test_a_bad_config_names_the_key(config: object, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        pipeline.score(FRAME, metrics="answer_em", config=config)  # type: ignore[arg-type]
    assert str(caught.value).startswith(message)


# --- @pipeline.metric without parameters ---------------------------------------------------------


@pipeline.metric(kind="flag", description="A short response.")
def short() -> pl.Expr:
    return pl.col("response").str.len_chars() < 12


@pipeline.metric(kind="score", needs=("response", "reference"))
def length_ratio() -> pl.Expr:
    return pl.col("response").str.len_chars() / pl.col("reference").str.len_chars()


@pipeline.metric(kind="count")
def words(response: pl.Expr) -> pl.Expr:
    return response.str.split(" ").list.len()


def test_a_metric_without_parameters_is_an_expression_over_pl_col() -> None:
    assert short.definition.needs == () and words.definition.needs == ("response",)
    assert length_ratio.definition.needs == ("response", "reference")
    scored = pipeline.score(FRAME, metrics=["answer_em", short, length_ratio, words])
    assert scored.scores.select("short", "length_ratio", "words").rows() == [
        (1, 9 / 5, 2), (0, 22 / 7, 5)]


def test_batch_needs_parameters() -> None:
    def nothing() -> pl.Series:
        return pl.Series([1])

    with pytest.raises(UserMetricError, match=r"'nothing': batch=True .* takes no parameter"):
        pipeline.metric(kind="flag", batch=True)(nothing)


# --- the input's other columns and the texts -----------------------------------------------------


def test_scores_hold_the_texts_and_the_other_columns() -> None:
    scores = pipeline.score(FRAME, metrics="answer_em").scores
    after = scores.columns[scores.columns.index("row_number") + 1:]
    assert after[:6] == ["question", "reference", "response", "contexts", "label", "reviewer"]
    assert scores.select("id", "question", "response", "label", "reviewer").rows() == [
        ("q1", "Capital of France?", "Paris [1]", "easy", 3),
        ("q2", "Largest planet?", "It is Saturn, I think.", "hard", 7),
    ]


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".tsv", ".jsonl", ".json"])
def test_every_format_keeps_the_other_columns(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"records{suffix}"
    {".parquet": FRAME.write_parquet, ".csv": FRAME.write_csv,
     ".tsv": lambda p: FRAME.write_csv(p, separator="\t"), ".jsonl": FRAME.write_ndjson,
     ".json": FRAME.write_json}[suffix](path)
    scores = pipeline.score(path, metrics="answer_em").scores
    assert scores["label"].to_list() == ["easy", "hard"]
    text = suffix in (".csv", ".tsv")  # a delimited file's cells are text, never guessed at
    assert scores["reviewer"].to_list() == (["3", "7"] if text else [3, 7])


def test_keep_columns_chooses_and_the_others_are_named(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        scores = pipeline.score(FRAME, metrics="answer_em", keep_columns=["label"]).scores
    assert "label" in scores.columns and "reviewer" not in scores.columns
    assert "<data>: column(s) reviewer are not read" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        none = pipeline.score(FRAME, metrics="answer_em", keep_columns=[]).scores
    assert not {"label", "reviewer"} & set(none.columns)
    assert "column(s) label, reviewer are not read" in caplog.text
    with pytest.raises(InputError, match=re.escape(
            "<data>: the columns to keep ([columns] keep; keep_columns) name 'lable', which is "
            "no column of the input; other columns: label, reviewer")):
        pipeline.score(FRAME, metrics="answer_em", keep_columns=["lable"])


def test_a_kept_column_never_overwrites_a_score(caplog: pytest.LogCaptureFixture) -> None:
    frame = FRAME.with_columns(answer_em=pl.lit("mine"))
    with caplog.at_level(logging.WARNING):
        scores = pipeline.score(frame, metrics="answer_em").scores
    assert scores["answer_em"].to_list() == [1, 0]
    assert "column 'answer_em' is not kept: the scores have a column of that name" in caplog.text
