"""Abstentions scored as answers, no hidden floors (issue 25).

* one rule decides whether a question is unanswerable (``abstention.is_unanswerable``), checked
  against a pure-Python oracle, and every layout reaches it: a RAGAS ``ground_truth`` of
  "I don't know", SQuAD v2's empty ``answers`` list, ``question_type``;
* faithfulness is 0.0 only for no answer to an answerable question (an abstention or an empty
  response), a correct abstention keeps the 0.6 baseline;
* the overall composite passes a correct abstention (``correct_abstention``) and ranks a cited,
  invented answer to an unanswerable question below it;
* the presets keep their numbers (the old, narrower rule).

The end-to-end tests run ``rag-eval evaluate`` and ``rag-eval report`` on files.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import examples, records
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.cli import EXIT_OK, main
from pipeline.config import DEFAULT_ABSTENTION_PHRASES, Config
from pipeline.io.readers import read_records
from pipeline.metrics.qa import abstention
from pipeline.metrics.registry import resolve
from pipeline.schema import MissingColumnError
from pipeline.scoring import score_frame
from pipeline.views import run_query

DEFAULTS = Config()
MARKERS = abstention.unanswerable_references(
    abstention_reference=DEFAULTS.abstention_reference,
    insufficient_context_reference=DEFAULTS.insufficient_context_reference,
    abstention_phrases=DEFAULTS.abstention_phrases,
)


# --- the rule against an oracle ----------------------------------------------------------------
#: References outside the markers that are refusals, labeled by hand (the refusal rule,
#: ``pipeline.text.refusals``, reads them; tests/test_abstention_languages.py measures it).
REFUSALS = {"i don't know the answer", "no idea", "the context does not mention the salary band",
            "i don't know the answer to that"}

def oracle_unanswerable(reference: str | None, references: list[str] | None,
                        question_type: str | None) -> bool:
    """The documented rule, one row at a time."""
    def bare(text: str) -> str:
        folded = " ".join(text.lower().replace("\u2019", "'").replace("\u2018", "'").split())
        return re.sub(r"[.!?\s]+$", "", folded)

    markers = {bare(m) for m in MARKERS}
    by_reference = reference is not None and (
        bare(reference) in markers or bare(reference) in REFUSALS)
    no_answer = (reference is None or not reference.strip()) and not any(
        alt.strip() for alt in references or []
    )
    return by_reference or no_answer or question_type in DEFAULTS.unanswerable_types


def unanswerable(rows: list[dict[str, Any]]) -> list[int]:
    frame = score_frame(records(rows), DEFAULTS, specs=resolve(["unanswerable"])).collect()
    return frame["unanswerable"].to_list()


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("I don't know", 1),
        ("I Don\u2019t know.", 1),  # curly apostrophe, case, trailing period
        ("  i don't   know !? ", 1),
        ("Unanswerable", 1),
        ("No answer.", 1),
        ("It is not mentioned in the document.", 1),  # the abstention reference
        ("insufficient context", 1),  # the insufficient-context token
        ("I cannot answer", 1),  # a configured abstention phrase
        ("", 1),  # no gold answer at all (SQuAD v2)
        ("I don't know the answer", 1),  # a refusal, read by meaning (issue 34)
        ("The context does not mention the salary band.", 1),
        ("I don't know why it fell, but it was 1932.", 0),  # contains a phrase, answers
        ("No Doubt", 0),
        ("Paris", 0),
        ("no", 0),
    ],
)
def test_references_that_mark_a_question_unanswerable(reference: str, expected: int) -> None:
    assert unanswerable([{"reference": reference, "response": "x"}]) == [expected]
    if "why it fell" not in reference:  # the oracle lists refusals, not answers
        assert oracle_unanswerable(reference, None, None) == bool(expected)


def test_question_type_and_alternative_answers() -> None:
    rows = [
        {"reference": "Paris", "response": "x", "question_type": "impossible"},
        {"reference": "", "response": "x", "references": ["Paris"]},  # an answer in references
        {"reference": " ", "response": "x", "references": ["", " "]},
        {"reference": "Paris", "response": "x", "question_type": "factoid"},
    ]
    assert unanswerable(rows) == [1, 0, 1, 0]


phrasings = st.sampled_from([*MARKERS, "Paris", "I don't know the answer", "", " ", "no idea"])
decorated = st.tuples(phrasings, st.sampled_from(["", ".", "!", " ?", "  "]),
                      st.booleans()).map(lambda t: (t[0].upper() if t[2] else t[0]) + t[1])


@settings(max_examples=examples(45), deadline=None)
@given(st.lists(st.tuples(
    decorated,
    st.one_of(st.none(), st.lists(st.sampled_from(["", " ", "Paris"]), max_size=2)),
    st.one_of(st.none(), st.sampled_from(["impossible", "unanswerable", "factoid"])),
), min_size=8, max_size=20))
def test_rule_equals_oracle(rows: list[tuple[str, list[str] | None, str | None]]) -> None:
    frame = [{"reference": ref, "references": alts, "question_type": qtype, "response": "x"}
             for ref, alts, qtype in rows]
    assert unanswerable(frame) == [int(oracle_unanswerable(*row)) for row in rows]


def test_empty_response_flag() -> None:
    frame = score_frame(records([
        {"reference": "r", "response": r} for r in ["Paris [1].", "", "   ", " [1][2] ", "."]
    ]), DEFAULTS, specs=resolve(["empty_response"])).collect()
    assert frame["empty_response"].to_list() == [0, 1, 1, 1, 0]


# --- faithfulness: 0.0 for no answer where one was owed, never a floor of 0.6 there ------------
PASSAGE = ["The Pro plan includes unlimited projects and priority support."]
GROUNDING_ROWS = [
    # (reference, response): the question is unanswerable for an "I don't know" reference
    ("I don't know", "I don't know."),  # correct abstention
    ("Unlimited projects and priority support.", "I don't know."),  # unwarranted abstention
    ("Unlimited projects and priority support.", ""),  # empty, answerable
    ("Unlimited projects and priority support.", " [1] "),  # markers only: empty too
    ("I don't know", ""),  # empty, unanswerable
]


def grounding(config: Config, contexts: list[str] | None = PASSAGE) -> pl.DataFrame:
    rows = [{"reference": ref, "response": resp, "contexts": contexts}
            for ref, resp in GROUNDING_ROWS]
    config = Config(compat_preset=config.compat_preset, embedding_backend="hashed",
                    embedding_cache_dir=None)
    metrics = ["faithfulness", "overlap", "unanswerable", "abstention_correct", "empty_response",
               "primary_failure_mode"]
    return score_frame(records(rows), config, specs=resolve(metrics)).collect()


def test_faithfulness_is_null_where_nothing_is_claimed() -> None:
    frame = grounding(DEFAULTS)
    assert frame["unanswerable"].to_list() == [1, 0, 0, 0, 1]
    assert frame["abstention_correct"].to_list() == [1, None, None, None, 0]
    assert frame["empty_response"].to_list() == [0, 0, 1, 1, 1]
    # (a markers-only response's overlap is the grounding decision's business; its emptiness
    # decides faithfulness whatever overlap says)
    assert [frame["overlap"][k] for k in (0, 1, 2, 4)] == [0.0] * 4
    # faithfulness is the share of supported claims (RAGAS): an abstention or an empty
    # response claims nothing, so it has none (null), never a floor; whether the abstention
    # was owed is the abstention metrics' and the failure mode's business
    assert frame["faithfulness"].to_list() == [None] * 5
    assert frame["primary_failure_mode"].to_list()[1:4] == [
        "unwarranted_abstention", "empty_response", "empty_response"]


def test_without_passages_grounding_does_not_apply_even_to_empty_responses() -> None:
    frame = grounding(DEFAULTS, contexts=None)
    assert frame["faithfulness"].to_list() == [None] * 5
    assert frame["empty_response"].to_list() == [0, 0, 1, 1, 1]


def test_core_rag_preset_keeps_the_tools_numbers() -> None:
    """The preset's narrower rule: an "I don't know" reference is an ordinary answer, so the
    abstention scores 0.0, and an empty response keeps the tool's baseline 0.6."""
    frame = grounding(Config(compat_preset="core-rag"))
    assert frame["unanswerable"].to_list() == [0] * 5
    assert frame["abstention_correct"].to_list() == [None] * 5
    assert frame["faithfulness"].to_list() == [0.0, 0.0, 0.6, 0.6, 0.6]


@pytest.mark.parametrize("preset", ["rgb-app", "hotpot-gen", "intellidocu", "enhanced-framework"])
def test_every_preset_keeps_the_old_rule(preset: str) -> None:
    rows = [{"reference": "I don't know", "response": "I don't know."},
            {"reference": "It is not mentioned in the document.", "response": "Paris."},
            {"reference": "", "response": "x"}]
    frame = score_frame(records(rows), Config(compat_preset=preset),
                        specs=resolve(["unanswerable"])).collect()
    assert frame["unanswerable"].to_list() == [0, 1, 0]


# --- end to end: RAGAS files through the command line ------------------------------------------
QUESTIONS = {
    "price": ("How much does the Pro plan cost?", "I don't know"),
    "features": ("What does the Pro plan include?", "Unlimited projects and priority support."),
    "founder": ("Who founded the company?", "Ada Lovelace"),
}
CONTEXTS = {
    "price": PASSAGE, "features": PASSAGE,
    "founder": ["The company was founded by Ada Lovelace in 2015."],
}
ANSWERS = {
    "careful": {"price": "I don't know.", "features": "I don't know.", "founder": ""},
    "bold": {"price": "The Pro plan costs $49 per month [1].",
             "features": "The Pro plan includes unlimited projects and priority support [1].",
             "founder": "The company was founded by Ada Lovelace [1]."},
}


def ragas_file(root: Path, model: str, layout: str) -> Path:
    rows = [{"question": QUESTIONS[k][0], "answer": ANSWERS[model][k], "contexts": CONTEXTS[k],
             "ground_truth": QUESTIONS[k][1]} for k in QUESTIONS]
    if layout == "ragas 0.1 csv":  # as pandas to_csv writes it: lists as Python reprs
        path = root / f"{model}.csv"
        lines = ["question,answer,contexts,ground_truth"]
        for row in rows:
            cells = [row["question"], row["answer"], repr(row["contexts"]), row["ground_truth"]]
            lines.append(",".join('"' + c.replace('"', '""') + '"' for c in cells))
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return path
    path = root / f"{model}.json"  # RAGAS 0.2 names, one JSON array
    names = {"question": "user_input", "answer": "response", "contexts": "retrieved_contexts",
             "ground_truth": "reference"}
    path.write_text(json.dumps([{names[k]: v for k, v in row.items()} for row in rows]),
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module", params=["ragas 0.1 csv", "ragas 0.2 json"])
def ragas_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
              ) -> tuple[Path, str]:
    """One run of both models' files; the run directory and what the command printed."""
    root = tmp_path_factory.mktemp("ragas")
    out = root / "out"
    args = ["evaluate", "--no-progress", "--no-stats", "--embedding-backend", "hashed",
            "--out", str(out)]
    for model in ANSWERS:
        args += ["--input", str(ragas_file(root, model, request.param)), "--model", model]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert main(args) == EXIT_OK
    return out, printed.getvalue()


def scores_by_key(out: Path) -> dict[tuple[str, str], dict[str, Any]]:
    texts = pl.read_parquet(out / "texts.parquet").select("source", "row_number", "question")
    scores = pl.read_parquet(out / "scores.parquet").join(texts, on=["source", "row_number"])
    keys = {question: key for key, (question, _) in QUESTIONS.items()}
    return {(row["model"], keys[row["question"]]): row for row in scores.iter_rows(named=True)}


def test_ragas_i_dont_know_ground_truth_is_an_unanswerable_question(ragas_run) -> None:
    rows = scores_by_key(ragas_run[0])
    abstains = rows["careful", "price"]
    assert (abstains["unanswerable"], abstains["abstained"], abstains["abstention_correct"]) == (
        1, 1, 1)
    assert abstains["faithfulness"] is None  # asserts nothing: no claim to be faithful to
    assert abstains["primary_failure_mode"] == "correct_abstention"
    assert abstains["passed_overall"] == 1
    assert abstains["passed_accuracy"] == abstains["passed_relevance"] == 1
    assert abstains["overall_feedback"].endswith("primary issue: none (correct_abstention)")


def test_the_same_abstention_on_an_answerable_question_is_a_failure(ragas_run) -> None:
    row = scores_by_key(ragas_run[0])["careful", "features"]
    assert (row["unanswerable"], row["abstained"], row["abstention_correct"]) == (0, 1, None)
    assert row["faithfulness"] is None  # no claim; the failure is the abstention's
    assert row["primary_failure_mode"] == "unwarranted_abstention"
    assert row["passed_overall"] == 0


def test_an_empty_response_to_an_answerable_question_scores_no_floor(ragas_run) -> None:
    row = scores_by_key(ragas_run[0])["careful", "founder"]
    assert row["empty_response"] == 1
    assert row["faithfulness"] is None  # no claim: never a floor, never a 0 that means "unfaithful"
    assert row["primary_failure_mode"] == "empty_response"


def test_an_invented_cited_answer_ranks_below_the_correct_abstention(ragas_run) -> None:
    rows = scores_by_key(ragas_run[0])
    invented, abstains = rows["bold", "price"], rows["careful", "price"]
    assert invented["unanswerable"] == 1 and invented["abstention_correct"] == 0
    assert invented["primary_failure_mode"] == "answered_unanswerable"
    assert invented["passed_overall"] == 0
    assert invented["overall_score"] < abstains["overall_score"]
    # the answerable questions answered well still pass
    assert [rows["bold", k]["passed_overall"] for k in ("features", "founder")] == [1, 1]


def test_headline_shows_abstention_accuracy_and_the_faithfulness_baseline(ragas_run) -> None:
    out, printed = ragas_run
    header = next(line for line in printed.splitlines() if "faithfulness" in line)
    columns = [cell.strip() for cell in header.strip("│┆ ").split("┆")]
    assert columns.index("overlap") == columns.index("faithfulness") + 1
    # shown, or named on the line under the table when the terminal (100 columns) is too narrow
    more = re.search(r"\(\+\d+ more: ([^;]*);", " ".join(printed.split()))
    listed = set(columns) | (set(more.group(1).split(", ")) if more else set())
    assert {"abstention_accuracy", "n_unanswerable", "empty_response_rate"} <= listed
    assert "abstention_accuracy is the share of them the model declined" in " ".join(
        printed.split()
    )
    assert "faithfulness: the share of a response's claims that its passages support" in " ".join(
        printed.split())
    headline = run_query(out, "select model, abstain_rate, abstention_accuracy, n_unanswerable, "
                              "empty_response_rate from headline order by model")
    assert headline.rows() == [("bold", 0.0, 0.0, 1, None),
                               ("careful", pytest.approx(2 / 3), 1.0, 1, pytest.approx(1 / 3))]
    failures = run_query(out, "select model, pass_rate_overall from by_category order by model")
    assert failures.rows() == [("bold", pytest.approx(2 / 3)), ("careful", pytest.approx(1 / 3))]


def test_report_names_empty_responses_and_explains_the_baseline(ragas_run, tmp_path) -> None:
    out = ragas_run[0]
    target = tmp_path / "report.html"
    assert main(["report", str(out), "--out", str(target)]) == EXIT_OK
    page = target.read_text(encoding="utf-8")
    assert '<span class="lbl">Response</span><span class="sub">(empty response)</span>' in page
    assert re.search(r'<span class="lbl">Response</span></p>', page) is None  # no bare label
    assert "Faithfulness is the share of a response's claims that its passages support" in page
    assert "Abstention accuracy" in page.split('id="headline"')[1].split("</section>")[0]


# --- SQuAD v2: an empty answers list is an unanswerable question -------------------------------
SQUAD_ROWS = [
    {"id": "56ddde6b", "title": "Normans", "question": "In what country is Normandy located?",
     "context": "Normandy is a region in France.",
     "answers": {"text": ["France", "in France"], "answer_start": [24, 21]},
     "response": "France"},
    {"id": "5ad39d53", "title": "Normans", "question": "Who gave their name to Normandy in 1000?",
     "context": "Normandy is a region in France.",
     "answers": {"text": [], "answer_start": []}, "response": "I don't know."},
]


def squad_file(root: Path, kind: str) -> Path:
    if kind == "jsonl":  # Hugging Face datasets to_json
        path = root / "squad.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in SQUAD_ROWS), encoding="utf-8")
    else:  # to_parquet: answers is a struct of two lists
        path = root / "squad.parquet"
        pq.write_table(pa.Table.from_pylist(SQUAD_ROWS), path)
    return path


@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_squad_v2_answers_are_read_and_an_empty_list_is_unanswerable(kind: str, tmp_path) -> None:
    path = squad_file(tmp_path, kind)
    frame = read_records(path, Config())
    assert frame.select("reference", "references").rows() == [("France", ["in France"]), ("", [])]
    out = tmp_path / "out"
    assert main(["evaluate", "--input", str(path), "--model", "m", "--out", str(out),
                 "--no-progress", "--no-stats", "--metrics", "answer,abstention"]) == EXIT_OK
    scores = pl.read_parquet(out / "scores.parquet").sort("row_number")
    assert scores["unanswerable"].to_list() == [0, 1]
    assert scores["abstention_correct"].to_list() == [None, 1]
    assert scores["answer_em"].to_list() == [1, 0]  # the SQuAD v2 script's numbers


def test_squad_answers_are_not_taken_over_a_reference_or_from_csv(tmp_path: Path) -> None:
    rows = [{**row, "reference": "gold"} for row in SQUAD_ROWS]
    path = tmp_path / "with_reference.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert read_records(path, Config())["reference"].to_list() == ["gold", "gold"]
    csv = tmp_path / "squad.csv"  # a CSV cell holds a repr of the answers: not read as such
    csv.write_text("question,answers,response\nq,\"{'text': array(['x'], dtype=object)}\",x\n",
                   encoding="utf-8")
    with pytest.raises(MissingColumnError, match="answers"):
        read_records(csv, Config())


def test_default_phrases_are_all_unanswerable_references() -> None:
    rows = [{"reference": phrase.capitalize() + ".", "response": "x"}
            for phrase in DEFAULT_ABSTENTION_PHRASES]
    assert unanswerable(rows) == [1] * len(DEFAULT_ABSTENTION_PHRASES)
