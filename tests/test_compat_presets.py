"""``[compat] preset``: four replaced tools reproduced on their own worked examples.

Golden files (``tests/golden/compat_*.json``) hold each tool's examples with the tool's numbers
(``preset``) and ours where the defaults differ on purpose (``default``, docs/compat.md). Each tool
also has a short pure-Python transcription of its code as printed in its documentation, checked
against the golden values, so a wrong golden number cannot pass unnoticed; the RGB app's
transcription is also compared with the expressions on generated text.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import examples, records
from hypothesis import given, settings
from hypothesis import strategies as st
from test_grounding import Chosen

from pipeline.config import Config, load_config
from pipeline.drivers import evaluate
from pipeline.embed import CachedEmbedder, EmbeddingCache
from pipeline.metrics.registry import resolve
from pipeline.metrics.robustness.rgb_app import (
    app_correct,
    app_error_detected,
    app_normalize,
    app_rejection_phrase,
)
from pipeline.metrics.spec import Inputs
from pipeline.report import write_report
from pipeline.report.hotpot_charts import six_plots
from pipeline.rules.rgb import (
    DEFAULT_SECONDARY_REJECTIONS,
    RGB_APP_ERROR_KEYWORDS,
    RGB_APP_PRIMARY_REJECTIONS,
    RGB_APP_SECONDARY_REJECTIONS,
)
from pipeline.schema import REJECTED_SCHEMA
from pipeline.scoring import score_frame
from pipeline.views import REJECTED_FILE, SCORES_FILE, build_views, run_query

GOLDEN = Path(__file__).parent / "golden"


def golden(name: str) -> dict[str, Any]:
    return json.loads((GOLDEN / f"compat_{name}.json").read_text(encoding="utf-8"))


def scored(rows: list[dict[str, Any]], config: Config, metrics: list[str],
           inputs: Inputs | None = None) -> pl.DataFrame:
    return score_frame(records(rows), config, specs=resolve(metrics), inputs=inputs).collect()


# --- the RGB app ------------------------------------------------------------------------------

RGB = golden("rgb_app")
RGB_COLUMNS = ("rgb_correct", "rejected", "rejection_phrase", "error_detected", "error_corrected")


def _rgb_records(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"reference": "-", "response": r["response"], "task": r["task"],
         "noise_level": r["noise_level"], "answer_groups": r.get("answer_groups"),
         "counterfactual_answer": r.get("counterfactual_answer"), "model": "m"}
        for r in rows
    ]


@pytest.fixture(scope="module")
def rgb_scores() -> dict[str, pl.DataFrame]:
    rows = _rgb_records(RGB["rows"])
    return {which: scored(rows, config, ["rgb"]) for which, config in
            (("preset", Config(compat_preset="rgb-app")), ("default", Config()))}


@pytest.mark.parametrize("which", ["preset", "default"])
def test_rgb_app_golden_rows(rgb_scores: dict[str, pl.DataFrame], which: str) -> None:
    frame = rgb_scores[which]
    for k, row in enumerate(RGB["rows"]):
        got = {name: frame[name][k] for name in row[which]}
        assert got == row[which], (which, row["note"])


def test_rgb_app_rates_of_its_examples(rgb_scores: dict[str, pl.DataFrame]) -> None:
    """The app's percentages: correct, rejected, detected, corrected over total samples."""
    frame = rgb_scores["preset"].with_columns(
        pl.Series("example", [r.get("example") for r in RGB["rows"]])
    )

    def rate(example: str, column: str) -> float:
        return 100 * frame.filter(pl.col("example") == example)[column].mean()  # type: ignore

    rates = RGB["rates"]
    assert rate("rejection", "rejected") == pytest.approx(rates["rejection_rate"])
    assert rate("noise", "rgb_correct") == pytest.approx(rates["noise_accuracy"])
    assert rate("integration", "rgb_correct") == pytest.approx(rates["integration_accuracy"])
    assert rate("counterfactual", "error_detected") == pytest.approx(rates["error_detection_rate"])
    assert rate("counterfactual", "error_corrected") == pytest.approx(
        rates["error_correction_rate"]
    )


def test_rgb_app_rates_in_the_views(tmp_path: Path) -> None:
    """The views report the app's rates on its examples (percent of the task's rows)."""
    rows = [dict(r, id=f"r{k}", question="q?") for k, r in
            enumerate(_rgb_records([r for r in RGB["rows"] if r.get("example")]))]
    source = tmp_path / "rgb.jsonl"
    pl.DataFrame(rows).write_ndjson(source)
    out = tmp_path / "out"
    evaluate([source], out, Config(compat_preset="rgb-app", metrics=("rgb",)), resamples=0)
    rejection = run_query(out, "select rejection_rate from rgb_negative_rejection")
    assert rejection.item() == pytest.approx(RGB["rates"]["rejection_rate"])
    counterfactual = run_query(
        out, "select error_detection_rate, error_correction_rate from rgb_counterfactual"
    ).row(0)
    assert counterfactual == pytest.approx(
        (RGB["rates"]["error_detection_rate"], RGB["rates"]["error_correction_rate"])
    )


# A transcription of the app's methods as its documentation prints them (the oracle).


def _app_normalize(answer: str) -> str:
    answer = answer.lower().strip()
    answer = re.sub(r"[.!?,;:]+$", "", answer)
    return " ".join(answer.split())


def _app_is_correct(response: str, truth: str) -> bool:
    norm_response, norm_truth = _app_normalize(response), _app_normalize(truth)
    if not norm_response or not norm_truth:
        return False
    if norm_truth in norm_response:
        return True
    if len(norm_response) < len(norm_truth) and norm_response in norm_truth:
        return True
    truth_tokens, response_tokens = set(norm_truth.split()), set(norm_response.split())
    return len(truth_tokens & response_tokens) / len(truth_tokens) >= 0.8


def _app_corrects_error(response: str, truth: str, fake: str | None) -> bool:
    if not _app_is_correct(response, truth):
        return False
    if fake:
        norm_response = _app_normalize(response)
        if _app_normalize(fake) in norm_response and _app_normalize(truth) not in norm_response:
            return False
    return True


def _app_is_rejection(response: str) -> bool:
    lowered = response.lower().strip()
    return any(p in lowered for p in (*RGB_APP_PRIMARY_REJECTIONS, *RGB_APP_SECONDARY_REJECTIONS))


def _app_detects_error(response: str, fake: str | None) -> bool:
    lowered = response.lower()
    if any(k in lowered for k in RGB_APP_ERROR_KEYWORDS):
        return True
    if fake:
        cf = fake.lower()
        if f"not {cf}" in lowered or f"{cf} is wrong" in lowered:
            return True
    return False


def test_rgb_golden_preset_values_are_the_apps() -> None:
    for row in RGB["rows"]:
        want = row["preset"]
        response, fake = row["response"], row.get("counterfactual_answer")
        if "rejected" in want:
            assert int(_app_is_rejection(response)) == want["rejected"], row["note"]
        if "rgb_correct" in want:
            [[truth]] = row["answer_groups"]
            correct = (_app_corrects_error(response, truth, fake)
                       if row["task"] == "counterfactual_robustness"
                       else _app_is_correct(response, truth))
            assert int(correct) == want["rgb_correct"], row["note"]
        if "error_detected" in want:
            assert int(_app_detects_error(response, fake)) == want["error_detected"], row["note"]


_WORDS = ["paris", "Paris.", "london", "not", "wrong", "is", "errors", "terror", "I", "cannot",
          "can't", "don't", "don’t", "know", "unclear", "unknown", "in fact", "new", "york", "!",
          ",", " ", "  ", "\n", "É", "ß", "the", "capital"]
_TEXT = st.lists(st.sampled_from(_WORDS), max_size=7).map(" ".join)


@settings(max_examples=examples(80), deadline=None)
@given(rows=st.lists(st.tuples(_TEXT, _TEXT, st.one_of(st.none(), _TEXT)), min_size=1,
                     max_size=6))
def test_rgb_app_expressions_match_the_transcription(
    rows: list[tuple[str, str, str | None]]
) -> None:
    frame = pl.DataFrame(
        {"r": [r for r, _, _ in rows], "t": [[[t]] for _, t, _ in rows],
         "f": [f for _, _, f in rows], "n": [t for _, t, _ in rows]},
        schema={"r": pl.String, "t": pl.List(pl.List(pl.String)), "f": pl.String,
                "n": pl.String},
    )
    phrases = [*RGB_APP_PRIMARY_REJECTIONS, *RGB_APP_SECONDARY_REJECTIONS]
    out = frame.select(
        app_normalize(pl.col("n")).alias("norm"),
        app_correct(pl.col("r"), pl.col("t")).alias("correct"),
        app_correct(pl.col("r"), pl.col("t"), fake_answer=pl.col("f")).alias("corrected"),
        app_rejection_phrase(pl.col("r"), phrases=phrases).is_not_null().alias("rejected"),
        app_error_detected(pl.col("r"), pl.col("f"), keywords=RGB_APP_ERROR_KEYWORDS)
        .alias("detected"),
    )
    for k, (response, truth, fake) in enumerate(rows):
        assert out["norm"][k] == _app_normalize(truth)
        assert out["correct"][k] == int(_app_is_correct(response, truth))
        assert out["corrected"][k] == int(_app_corrects_error(response, truth, fake))
        assert out["rejected"][k] == _app_is_rejection(response)
        assert out["detected"][k] == int(_app_detects_error(response, fake))


def test_rgb_app_preset_uses_its_lists_verbatim_and_keeps_explicit_ones(tmp_path: Path) -> None:
    config = Config(compat_preset="rgb-app")
    assert config.rgb_primary_rejections == RGB_APP_PRIMARY_REJECTIONS
    assert config.rgb_secondary_rejections == RGB_APP_SECONDARY_REJECTIONS
    assert len(RGB_APP_SECONDARY_REJECTIONS) == 24 and len(RGB_APP_ERROR_KEYWORDS) == 16
    assert config.rgb_error_keywords == RGB_APP_ERROR_KEYWORDS
    # the lists are part of the signature's RGB digest, so the numbers are never mixed up
    assert config.rgb_phrase_digest() != Config().rgb_phrase_digest()
    path = tmp_path / "c.toml"
    path.write_text('[compat]\npreset = "rgb-app"\n[rgb]\nerror_keywords = ["bogus"]\n',
                    encoding="utf-8")
    loaded = load_config(path)
    assert loaded.rgb_error_keywords == ("bogus",)
    assert loaded.rgb_secondary_rejections == RGB_APP_SECONDARY_REJECTIONS


def test_default_rejections_gain_the_apps_missing_keywords() -> None:
    missing = ["i cannot", "i can't", "not able to", "insufficient information", "cannot find",
               "not specified", "unclear", "unknown", "i am not sure", "don't have enough",
               "unable to determine"]
    added = [p for p in missing if p != "unable to determine"]
    # the ten the default lacked come last, in the app's order, after the earlier list
    assert DEFAULT_SECONDARY_REJECTIONS[-len(added):] == tuple(
        p for p in RGB_APP_SECONDARY_REJECTIONS if p in added)
    assert len(DEFAULT_SECONDARY_REJECTIONS) == 27
    # "unable to determine" is redundant: "unable to" comes first and matches every such text
    assert "unable to determine" not in DEFAULT_SECONDARY_REJECTIONS
    assert DEFAULT_SECONDARY_REJECTIONS.index("unable to") < len(DEFAULT_SECONDARY_REJECTIONS) - 10
    frame = scored(
        [{"reference": "-", "task": "negative_rejection", "noise_level": 1.0,
          "response": f"Sorry, {p.upper()} from these documents."} for p in added],
        Config(), ["rgb"],
    )
    assert frame["rejection_phrase"].to_list() == added


def test_rgb_app_strict_mode_is_equality_after_its_normalization() -> None:
    rows = [{"reference": "-", "task": "noise_robustness", "noise_level": 0.0,
             "answer_groups": [["Paris"]], "response": r}
            for r in ("  PARIS!!", "Paris [1]", "The capital is Paris.", "")]
    frame = scored(rows, Config(compat_preset="rgb-app", rgb_mode="strict"), ["rgb_correct"])
    # the raw response is compared: the citation marker stays (the default strips it)
    assert frame["rgb_correct"].to_list() == [1, 0, 0, 0]
    default = scored(rows, Config(rgb_mode="strict"), ["rgb_correct"])
    assert default["rgb_correct"].to_list() == [1, 1, 0, 0]


def test_official_mode_is_not_changed_by_the_preset() -> None:
    rows = _rgb_records([r for r in RGB["rows"] if r["task"] == "negative_rejection"])
    official = {
        name: scored(rows, config, ["rgb"])["rejected"].to_list()
        for name, config in (("plain", Config(rgb_mode="official")),
                             ("preset", Config(rgb_mode="official", compat_preset="rgb-app")))
    }
    assert official["plain"] == official["preset"]


# --- the HotpotQA generation evaluator --------------------------------------------------------

HOTPOT = golden("hotpot_gen")
HOTPOT_METRICS = ("answer_f1", "answer_em", "citation_precision", "citation_recall",
                  "citation_f1", "insufficient_context_detected")


def _hotpot_records(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"id": f"ex{k + 1}", "model": "m", "question": r["question"], "reference": r["reference"],
         "response": r["response"], "citations": r["citations"],
         "gold_citations": r["gold_citations"]}
        for k, r in enumerate(rows)
    ]


def _hotpot(rows: list[dict[str, Any]], config: Config) -> pl.DataFrame:
    return scored(_hotpot_records(rows), config, ["answer", "citation", "abstention"])


@pytest.mark.parametrize("part", ["demo", "batch"])
def test_hotpot_gen_golden_rows(part: str) -> None:
    rows = HOTPOT["demo"] if part == "demo" else HOTPOT["batch"]["rows"]
    frame = _hotpot(rows, Config(compat_preset="hotpot-gen"))
    for k, row in enumerate(rows):
        for name, want in row["expected"].items():
            got = frame[name][k]
            assert (got is None and want is None) or got == pytest.approx(want, abs=1e-12), (
                row["name"], name
            )


def test_hotpot_gen_batch_averages() -> None:
    """``evaluate_batch``: means over rows, insufficient-context detection over applicable ones."""
    frame = _hotpot(HOTPOT["batch"]["rows"], Config(compat_preset="hotpot-gen"))
    means = frame.select(pl.col(HOTPOT_METRICS).cast(pl.Float64).mean()).row(0, named=True)
    assert means == pytest.approx(HOTPOT["batch"]["means"], abs=1e-12)


def test_hotpot_insufficient_context_is_strict_under_the_preset_only() -> None:
    [row] = HOTPOT["differences"]
    preset = _hotpot([row], Config(compat_preset="hotpot-gen"))
    default = _hotpot([row], Config())
    assert preset["insufficient_context_detected"].to_list() == [
        row["expected"]["insufficient_context_detected"]
    ]
    assert default["insufficient_context_detected"].to_list() == [
        row["expected_default"]["insufficient_context_detected"]
    ]
    # by default the token is an abstention reference, so the question is unanswerable and "I
    # don't know" is a correct abstention; the preset keeps the old rule (abstention reference
    # or question_type only), under which the row is answerable
    assert default.select("unanswerable", "abstention_correct").row(0) == (1, 1)
    assert preset.select("unanswerable", "abstention_correct").row(0) == (0, None)
    # every other column is the same under both
    differ = ("insufficient_context_detected", "unanswerable", "abstention_correct", "signature")
    assert preset.drop(differ).equals(default.drop(differ))


def _squad(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def _hotpot_oracle(pred: str, gold: str, pc: list[int], gc: list[int]) -> dict[str, Any]:
    """The evaluator's ``evaluate_single`` as printed."""
    both = _squad(pred) == _squad(gold) == "insufficient context"
    p_tok, g_tok = _squad(pred).split(), _squad(gold).split()
    same = sum((Counter(p_tok) & Counter(g_tok)).values())
    if both or (not p_tok and not g_tok):
        f1 = 1.0
    elif not p_tok or not g_tok or same == 0:
        f1 = 0.0
    else:
        f1 = 2 * (same / len(p_tok)) * (same / len(g_tok)) / (same / len(p_tok)
                                                               + same / len(g_tok))
    em = 1 if both or _squad(pred) == _squad(gold) else 0
    prec = (1.0 if not gc else 0.0) if not pc else len(set(pc) & set(gc)) / len(set(pc))
    rec = (1.0 if not pc else 0.0) if not gc else len(set(pc) & set(gc)) / len(set(gc))
    cf1 = 0.0 if prec + rec == 0 else 2 * prec * rec / (prec + rec)
    insuf = (int(_squad(pred) == "insufficient context")
             if _squad(gold) == "insufficient context" else None)
    return {"answer_f1": f1, "answer_em": em, "citation_precision": prec,
            "citation_recall": rec, "citation_f1": cf1, "insufficient_context_detected": insuf}


def test_hotpot_golden_values_are_the_evaluators() -> None:
    rows = [*HOTPOT["demo"], *HOTPOT["batch"]["rows"], *HOTPOT["differences"]]
    for row in rows:
        oracle = _hotpot_oracle(row["response"], row["reference"], row["citations"],
                                row["gold_citations"])
        assert oracle == pytest.approx(row["expected"], abs=1e-12), row["name"]


# --- IntelliDocU -------------------------------------------------------------------------------

INTELLIDOCU = golden("intellidocu")


def test_intellidocu_exact_match_and_f1_examples() -> None:
    pairs = INTELLIDOCU["pairs"]
    frame = scored([{"response": p["response"], "reference": p["reference"]} for p in pairs],
                   Config(compat_preset="intellidocu"), ["answer"])
    # its exact_match ignores case and extra spaces only: answer_em_strict
    assert frame["answer_em_strict"].to_list() == [p["answer_em_strict"] for p in pairs]
    assert frame["answer_f1"].to_list() == pytest.approx([p["answer_f1"] for p in pairs])


@pytest.mark.parametrize("which", ["preset", "default"])
def test_intellidocu_abstention_accuracy(which: str) -> None:
    rows = INTELLIDOCU["abstention"]
    config = Config(compat_preset="intellidocu") if which == "preset" else Config()
    frame = scored(
        [{k: r[k] for k in ("id", "question", "question_type", "reference", "response")}
         for r in rows], config, ["abstention"],
    )
    assert frame["abstention_correct"].to_list() == [r[which] for r in rows]
    assert frame["abstention_correct"].mean() == INTELLIDOCU["abstention_accuracy"][which]


def test_intellidocu_token_must_be_exact() -> None:
    token = INTELLIDOCU["token"]
    responses = [token, token.lower(), token.rstrip("."), f" {token}", f"{token} [1]"]
    frame = scored([{"reference": token, "response": r} for r in responses],
                   Config(compat_preset="intellidocu"), ["abstention_correct"])
    assert frame["abstention_correct"].to_list() == [1, 0, 0, 0, 0]
    default = scored([{"reference": token, "response": r} for r in responses], Config(),
                     ["abstention_correct"])
    assert default["abstention_correct"].to_list() == [1, 1, 1, 1, 1]


# --- core RAG metrics -------------------------------------------------------------------------

CORE = golden("core_rag")
CORE_METRICS = ["overlap", "faithfulness", "idk_with_citation", "n_contexts"]


#: The defaults with the core tool's grounding decision: the golden rows' cosines are chosen by
#: the test backend, and what these tests compare is how rows without passages, abstentions and
#: empty responses are scored (the default decision is tested in test_grounding_evidence.py).
COSINE_DEFAULTS = Config(grounding_rule="cosine")


def _core(config: Config) -> pl.DataFrame:
    rows = [{"id": f"c{k}", "model": "m", "response": r["response"], "contexts": r["contexts"],
             "reference": r["reference"]} for k, r in enumerate(CORE["rows"])]
    inputs = Inputs(config, embedder=CachedEmbedder(Chosen(), EmbeddingCache(None)))
    return scored(rows, config, [*CORE_METRICS, "abstained"], inputs=inputs)


@pytest.mark.parametrize("which", ["preset", "default"])
def test_core_rag_golden_rows(which: str) -> None:
    frame = _core(Config(compat_preset="core-rag") if which == "preset" else COSINE_DEFAULTS)
    for k, row in enumerate(CORE["rows"]):
        got = {name: frame[name][k] for name in row[which]}
        want = row[which]
        assert got.keys() == want.keys()
        for name, value in want.items():
            assert (got[name] is None and value is None) or got[name] == pytest.approx(value), (
                row["note"], name
            )


@pytest.mark.parametrize("which", ["preset", "default"])
def test_core_rag_headline_counts_rows_with_passages(which: str, tmp_path: Path) -> None:
    frame = _core(Config(compat_preset="core-rag") if which == "preset" else COSINE_DEFAULTS)
    frame.write_parquet(tmp_path / SCORES_FILE)
    pl.DataFrame(schema=REJECTED_SCHEMA).write_parquet(tmp_path / REJECTED_FILE)
    build_views(tmp_path)
    headline = run_query(tmp_path, "select * from headline").row(0, named=True)
    want = CORE["means"][which]
    assert {k: headline[k] for k in want} == pytest.approx(want)
    assert headline["idk_check"] == "WARNING: IDK+citation must be 0"


def _core_run(root: Path, preset: str | None) -> Path:
    """Two models through the real pipeline: one retrieves passages (an unwarranted "I don't
    know" that cites one, and an uncited answer), one retrieves nothing."""
    rows = [
        {"id": "q1", "model": "retrieves", "response": "I don't know [1].",
         "contexts": ["Paris is the capital of France."]},
        {"id": "q2", "model": "retrieves", "response": "Paris.",
         "contexts": ["Paris is the capital of France."]},
        {"id": "q1", "model": "no-retrieval", "response": "Paris."},
        {"id": "q2", "model": "no-retrieval", "response": "Rome."},
    ]
    for row in rows:
        row.update(question="Capital of France?", reference="Paris")
    root.mkdir(parents=True, exist_ok=True)
    source = root / "in.jsonl"
    pl.DataFrame(rows).write_ndjson(source)
    out = root / "out"
    config = Config(compat_preset=preset, embedding_backend="hashed", embedding_cache_dir=None,
                    metrics=("grounding", "abstention", "answer"))
    evaluate([source], out, config, resamples=0)
    return out


def test_rows_without_passages_no_longer_rank_above_grounded_ones(tmp_path: Path) -> None:
    default = rows_of(run_query(_core_run(tmp_path / "d", None),
                                "select * from headline order by model"))
    preset = rows_of(run_query(_core_run(tmp_path / "p", "core-rag"),
                               "select * from headline order by model"))
    # the tool's 0.6 baseline: retrieving nothing beats a grounded model (0.0 and 0.6)
    assert preset["no-retrieval"]["faithfulness"] == pytest.approx(0.6)
    assert preset["retrieves"]["faithfulness"] == pytest.approx(0.3)
    assert (preset["no-retrieval"]["n_grounding"], preset["no-retrieval"]["n_no_passages"]) == (
        2, 2)
    # by default grounding does not apply without passages: no score, and N says so
    assert default["no-retrieval"]["faithfulness"] is None
    assert default["no-retrieval"]["overlap"] is None
    assert (default["no-retrieval"]["n_grounding"], default["no-retrieval"]["n_no_passages"]) == (
        0, 2)
    # by default faithfulness is the share of supported claims: the "I don't know" claims
    # nothing (null), the supported "Paris." scores 1.0
    assert default["retrieves"]["faithfulness"] == pytest.approx(1.0)
    assert (default["retrieves"]["n_grounding"], default["retrieves"]["n_no_passages"]) == (2, 0)
    for rows in (default, preset):
        assert rows["retrieves"]["n_idk_with_citation"] == 1
        assert rows["retrieves"]["idk_check"] == "WARNING: IDK+citation must be 0"
        assert rows["no-retrieval"]["idk_check"] == "ok"


def rows_of(frame: pl.DataFrame) -> dict[str, dict[str, Any]]:
    return {row["model"]: row for row in frame.iter_rows(named=True)}


def test_report_warns_about_idk_with_citation_and_counts_rows_without_passages(
    tmp_path: Path,
) -> None:
    out = _core_run(tmp_path, None)
    page = write_report(out, tmp_path / "report.html").read_text(encoding="utf-8")
    headline = re.search(r'<section id="headline">(.*?)</section>', page, re.DOTALL)
    assert headline is not None
    text = headline.group(1)
    warning = re.search(r'<p class="warning" role="alert"[^>]*>(.*?)</p>', text, re.DOTALL)
    assert warning is not None
    assert 'count is not 0' in warning.group(1) and "retrieves: 1" in warning.group(1)
    assert "no-retrieval" not in warning.group(1)
    assert "n_grounding</code> (no-retrieval: 0; retrieves: 2)" in text
    assert "(the <code>core-rag</code> preset scores them 0.6 and 0.0): no-retrieval: 2; " \
           "retrieves: 0." in text


def test_report_without_idk_citations_says_the_count_is_zero(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    pl.DataFrame([{"id": "q", "model": "m", "question": "?", "reference": "Paris",
                   "response": "Paris.", "contexts": ["Paris."]}]).write_ndjson(source)
    out = tmp_path / "out"
    evaluate([source], out, Config(embedding_backend="hashed", embedding_cache_dir=None,
                                   metrics=("grounding", "abstention")), resamples=0)
    page = write_report(out, tmp_path / "report.html").read_text(encoding="utf-8")
    assert 'class="warning"' not in page
    assert "citation count: 0 for every model, as it must be." in page


# --- the HotpotQA evaluator's six plots in the report ------------------------------------------


@pytest.fixture(scope="module")
def hotpot_report(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("hotpot-report")
    rows = _hotpot_records(HOTPOT["batch"]["rows"])
    other = [dict(r, model="n", response="Tesla", citations=[9]) for r in rows]
    source = root / "in.jsonl"
    pl.DataFrame([*rows, *other]).write_ndjson(source)
    out = root / "out"
    evaluate([source], out, Config(compat_preset="hotpot-gen",
                                   metrics=("answer", "citation", "abstention")), resamples=0)
    return write_report(out, root / "report.html").read_text(encoding="utf-8")


def test_report_has_the_six_plots(hotpot_report: str) -> None:
    section = re.search(r'<section id="generation">(.*?)</section>', hotpot_report, re.DOTALL)
    assert section is not None
    figures = dict(re.findall(r'<figure class="chart" id="(chart-[a-z]+)">(.*?)</figure>',
                              section.group(1), re.DOTALL))
    assert list(figures) == ["chart-exampleanswers", "chart-examplecitations",
                             "chart-answerdistribution", "chart-citationdistribution",
                             "chart-exampleheatmap", "chart-radar"]
    # 1, 2 and 5 per example: ticks are the row ids, one panel per model
    for chart in ("chart-exampleanswers", "chart-examplecitations", "chart-exampleheatmap"):
        assert all(f">ex{k}<" in figures[chart] for k in range(1, 9)), chart
        assert ": m<" in figures[chart] and ": n<" in figures[chart], chart
    # 3 and 4: each model's mean as a dashed line, labelled with the evaluator's batch means
    means = HOTPOT["batch"]["means"]
    answers, citations = figures["chart-answerdistribution"], figures["chart-citationdistribution"]
    assert f"m: mean {means['answer_f1']:.3f}" in answers
    assert f"m: mean {means['citation_f1']:.3f}" in citations
    assert "n: mean 0.000" in answers and "n: mean 0.000" in citations
    assert "stroke-dasharray" in answers and "stroke-dasharray" in citations
    # 6: the radar has the six averages as axes
    for axis in ("Answer F1", "Answer EM", "Citation F1", "Insufficient-"):
        assert f">{axis}<" in figures["chart-radar"], axis
    assert 'href="#generation"' in hotpot_report


def test_six_plots_without_scores_say_so() -> None:
    rows = pl.DataFrame(schema={"model": pl.String, "id": pl.String, "answer_f1": pl.Float64,
                                "answer_em": pl.Float64, "citation_precision": pl.Float64,
                                "citation_recall": pl.Float64, "citation_f1": pl.Float64})
    plots = six_plots(rows, pl.DataFrame({"model": ["m"], "answer_f1": [None]},
                                         schema={"model": pl.String, "answer_f1": pl.Float64}),
                      ["m"])
    assert [svg for _, svg, _, _ in plots] == [None] * 6
    assert all(empty for _, _, _, empty in plots)
