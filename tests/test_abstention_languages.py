"""Abstentions in their own words and ten languages (issue 34, part 1).

* the labeled set ``tests/golden/abstentions_labeled.jsonl`` (responses and references, both
  classes, ten languages, the RAGTruth ``incorrect_refusal`` rows): precision and recall of the
  public detection (``abstained`` for responses, ``unanswerable`` for references) >= 0.95 overall
  and >= 0.85 in every language;
* answers that merely contain the words are answers, "No Doubt" is an answer;
* the newcomer's three correct refusals score abstention_accuracy 100 % through ``pipeline.score``;
* the presets keep their phrase-only rule.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from conftest import records

import pipeline
from pipeline.config import Config
from pipeline.metrics.registry import resolve
from pipeline.scoring import score_frame
from pipeline.text.refusals import RULES, clauses

LABELED = Path(__file__).parent / "golden" / "abstentions_labeled.jsonl"
LANGUAGES = set(RULES)


def labeled() -> pl.DataFrame:
    rows = [json.loads(line) for line in LABELED.read_text(encoding="utf-8").splitlines()]
    return pl.DataFrame(rows)


def detected(frame: pl.DataFrame, config: Config | None = None) -> list[int]:
    """The public reading of each text: ``abstained`` of a response, ``unanswerable`` of a
    reference (kind ``reference``/``reference_answer``)."""
    config = config or Config()
    is_reference = frame["kind"].str.starts_with("reference").to_list()
    rows = [{"reference": t, "response": "x"} if ref else {"reference": "r", "response": t}
            for t, ref in zip(frame["text"], is_reference, strict=True)]
    out = score_frame(records(rows), config, specs=resolve(["abstained", "unanswerable"])).collect()
    return [u if ref else a for a, u, ref in
            zip(out["abstained"], out["unanswerable"], is_reference, strict=True)]


def precision_recall(gold: list[bool], pred: list[int]) -> tuple[float, float]:
    tp = sum(g and p == 1 for g, p in zip(gold, pred, strict=True))
    fp = sum(not g and p == 1 for g, p in zip(gold, pred, strict=True))
    fn = sum(g and p != 1 for g, p in zip(gold, pred, strict=True))
    return tp / (tp + fp), tp / (tp + fn)


@pytest.fixture(scope="module")
def scored() -> pl.DataFrame:
    frame = labeled()
    return frame.with_columns(pred=pl.Series(detected(frame)),
                              gold=pl.col("label") == "abstain")


def test_the_labeled_set_covers_both_classes_in_ten_languages() -> None:
    frame = labeled()
    assert frame.height >= 300 and frame["id"].n_unique() == frame.height
    assert set(frame["label"]) == {"abstain", "answer"}
    counts = frame.group_by("lang", "label").len()
    assert set(counts["lang"]) == LANGUAGES
    assert counts["len"].min() >= 10  # each class in each language
    assert frame.group_by("lang").len()["len"].min() >= 20
    # the RAGTruth rows whose quality is incorrect_refusal are refusals
    ragtruth = frame.filter(pl.col("kind") == "ragtruth_incorrect_refusal")
    assert ragtruth.height == 1 and ragtruth["label"].to_list() == ["abstain"]


def test_precision_and_recall_overall_and_per_language(scored: pl.DataFrame) -> None:
    precision, recall = precision_recall(scored["gold"].to_list(), scored["pred"].to_list())
    assert precision >= 0.95 and recall >= 0.95, (precision, recall)
    for lang in sorted(LANGUAGES):
        part = scored.filter(pl.col("lang") == lang)
        precision, recall = precision_recall(part["gold"].to_list(), part["pred"].to_list())
        assert precision >= 0.85 and recall >= 0.85, (lang, precision, recall)


def test_every_hard_negative_is_an_answer(scored: pl.DataFrame) -> None:
    wrong = scored.filter(pl.col("kind").is_in(["hard_negative", "reference_answer"]),
                          pl.col("pred") == 1)
    assert wrong["text"].to_list() == []


@pytest.mark.parametrize("response", [
    "I don't know why people like it, but the capital is Paris.",
    "Unknown Pleasures is the debut album by the English rock band Joy Division.",
    "There is no charge for the first bag.",
    "The context does not mention any delays; the bridge opened in 1932.",
    "Ich weiß nicht, warum die Leute es mögen, aber die Hauptstadt ist Paris.",
    "我不知道为什么人们喜欢它，但首都是巴黎。",
])
def test_answers_that_contain_the_words_do_not_abstain(response: str) -> None:
    out = score_frame(records([{"reference": "Paris", "response": response}]), Config(),
                      specs=resolve(["abstained"])).collect()
    assert out["abstained"].to_list() == [0]


@pytest.mark.parametrize(("reference", "expected"), [
    ("No Doubt", 0), ("No", 0), ("Paris", 0),
    ("The context does not mention the salary band.", 1), ("No answer", 1),
    ("Ich weiß es nicht", 1), ("无法回答", 1), ("Aucune réponse", 1),
])
def test_references_read_the_same_way(reference: str, expected: int) -> None:
    out = score_frame(records([{"reference": reference, "response": "x"}]), Config(),
                      specs=resolve(["unanswerable"])).collect()
    assert out["unanswerable"].to_list() == [expected]


def test_the_newcomers_three_refusals_score_full_abstention_accuracy() -> None:
    frame = pl.DataFrame({
        "question": ["How long is the warranty?", "Where is the nearest store?",
                     "What is the salary band?"],
        "response": [
            "The provided documents do not mention the warranty period, so I can't say.",
            "Sorry, I couldn't find that information in the provided documents.",
            "Die Unterlagen nennen die Gehaltsstufe nicht; ich weiß es nicht.",
        ],
        "reference": ["It is not mentioned in the document.",
                      "It is not mentioned in the document.",
                      "The context does not mention the salary band."],
        "contexts": [["The device ships with a charger."]] * 3,
    })
    scores = pipeline.score(frame, metrics=["abstention"]).scores
    assert scores["unanswerable"].to_list() == [1, 1, 1]
    assert scores["abstained"].to_list() == [1, 1, 1]
    assert scores["abstention_correct"].mean() == 1.0


def test_presets_keep_the_phrase_rule() -> None:
    rows = [{"reference": "It is not mentioned in the document.", "response": r} for r in (
        "Sorry, I couldn't find that information in the provided documents.",
        "I don't know why, but it is Paris.")]
    rows.append({"reference": "The context does not mention the salary band.", "response": "x"})
    out = score_frame(records(rows), Config(compat_preset="rgb-app"),
                      specs=resolve(["abstained", "unanswerable"])).collect()
    assert out["abstained"].to_list() == [0, 1, 0]  # substrings, as the tool matched them
    assert out["unanswerable"].to_list() == [1, 1, 0]
    assert "refusals-v1" not in Config(compat_preset="rgb-app").signature()
    assert "|abst:refusals-v1+" in Config().signature()


def test_rules_can_be_turned_off() -> None:
    rows = [{"reference": "r", "response": "The documents do not say."}]
    on = score_frame(records(rows), Config(), specs=resolve(["abstained"])).collect()
    off = score_frame(records(rows), Config(abstention_rules=False),
                      specs=resolve(["abstained"])).collect()
    assert (on["abstained"].item(), off["abstained"].item()) == (1, 0)


def test_clauses_split_where_the_rule_needs() -> None:
    texts = pl.Series(["The context does not mention any delays; the bridge opened in 1932.",
                       'Based on the passages, the answer to "Why?" is:\nUnable to answer.',
                       "申し訳ありませんが、記載がありません。"])
    assert pl.select(clauses(pl.lit(texts))).to_series().to_list() == [
        ["the context does not mention any delays;", "the bridge opened in 1932."],
        ['based on the passages, the answer to "why?" is:', "unable to answer."],
        ["申し訳ありませんが、", "記載がありません。"],
    ]
