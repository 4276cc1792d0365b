"""The retrieval measures equal trec_eval's (through pytrec_eval) on generated rankings:
binary and graded judgments, unjudged retrieved documents, relevant documents never retrieved,
empty rankings and rows without a judged relevant document (docs/retrieval.md)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from pipeline.metrics.retrieval.trec import measure_names, ranking_measures

pytrec_eval = pytest.importorskip("pytrec_eval")

KS = (1, 3, 5, 10)
N_RANKINGS = 20_000
TREC = {"precision": "P", "recall": "recall", "hit": "success", "ndcg": "ndcg_cut"}


def generated(n: int, seed: int = 7) -> pl.DataFrame:
    """``n`` rows: rankings of 0-15 distinct ids out of 30, 0-8 judged ids (some retrieved,
    some not), graded 0-3 on half the rows and ungraded (all relevant) on the others."""
    rng = np.random.default_rng(seed)
    ranked, relevant, grades = [], [], []
    for _ in range(n):  # building test data, not scoring
        pool = [f"d{i}" for i in rng.permutation(30)]
        ranked.append(pool[: rng.integers(0, 16)])
        judged = list(rng.choice(pool, size=rng.integers(0, 9), replace=False))
        relevant.append(judged)
        graded = rng.random() < 0.5
        grades.append([int(g) for g in rng.integers(0, 4, len(judged))] if graded else None)
    return pl.DataFrame({"ranked_ids": ranked, "relevant_ids": relevant, "relevance": grades},
                        schema={"ranked_ids": pl.List(pl.String),
                                "relevant_ids": pl.List(pl.String),
                                "relevance": pl.List(pl.Int64)})


def trec_eval(frame: pl.DataFrame) -> dict[str, dict[str, float]]:
    qrels, run = {}, {}
    inputs = frame.select("ranked_ids", "relevant_ids", "relevance")
    for i, (ranked, relevant, grades) in enumerate(inputs.iter_rows()):
        grades = grades if grades is not None else [1] * len(relevant)
        qrels[str(i)] = dict(zip(relevant, grades, strict=True)) or {"unjudged": 0}
        run[str(i)] = {doc: float(len(ranked) - rank) for rank, doc in enumerate(ranked)}
    ks = ",".join(map(str, KS))
    measures = {f"P.{ks}", f"recall.{ks}", f"success.{ks}", f"ndcg_cut.{ks}", "recip_rank",
                "map"}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=1)
    return evaluator.evaluate({q: docs for q, docs in run.items() if docs})


@pytest.fixture(scope="module")
def rankings() -> pl.DataFrame:
    frame = generated(N_RANKINGS)
    return pl.concat([frame, ranking_measures(frame, KS)], how="horizontal")


def _trec_name(column: str) -> str:
    if column == "reciprocal_rank":
        return "recip_rank"
    if column == "average_precision":
        return "map"
    name, k = column.rsplit("_at_", 1)
    return f"{TREC[name]}_{k}"


def test_every_measure_equals_pytrec_eval(rankings):
    expected = trec_eval(rankings)
    compared = 0
    index = rankings.with_row_index("i").filter(
        pl.col("n_relevant") > 0, pl.col("ranked_ids").list.len() > 0)["i"].to_list()
    assert len(index) > 10_000
    for column in measure_names(KS):
        got = np.array(rankings[column].gather(index).to_list(), dtype=float)
        want = np.array([expected[str(i)][_trec_name(column)] for i in index])
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12, err_msg=column)
        compared += 1
    assert compared == len(measure_names(KS))


def test_an_empty_ranking_scores_zero_and_no_judged_relevant_document_null(rankings):
    empty = rankings.filter(pl.col("ranked_ids").list.len() == 0, pl.col("n_relevant") > 0)
    unjudged = rankings.filter(pl.col("n_relevant") == 0)
    assert empty.height > 100 and unjudged.height > 100
    for column in measure_names(KS):
        assert empty[column].to_list() == [0.0] * empty.height, column
        assert unjudged[column].null_count() == unjudged.height, column


def test_golden_rows():
    frame = pl.DataFrame({
        "ranked_ids": [["a", "x", "c", "a"], ["x", "y"], ["b"]],
        "relevant_ids": [["a", "b", "c", "z", "a"], ["b"], ["b", "c"]],
        "relevance": [[2, 0, 1, 1, 1], None, [0, 0]],
    })
    out = ranking_measures(frame, [1, 3])
    # Row 1: "a" repeated counts once at rank 1; "a" judged twice keeps grade 2; relevant
    # a, c, z (b is graded 0): P@3 = 2/3, R@3 = 2/3, AP = (1/1 + 2/3) / 3.
    first = out.row(0, named=True)
    assert first["precision_at_3"] == pytest.approx(2 / 3)
    assert first["recall_at_3"] == pytest.approx(2 / 3)
    assert first["average_precision"] == pytest.approx((1 + 2 / 3) / 3)
    assert first["reciprocal_rank"] == 1.0
    idcg = 2 + 1 / np.log2(3) + 1 / np.log2(4)
    assert first["ndcg_at_3"] == pytest.approx((2 + 1 / np.log2(4)) / idcg)
    assert (first["n_relevant"], first["n_retrieved"]) == (3, 3)
    # Row 2: nothing relevant retrieved; row 3: nothing judged relevant.
    assert out.row(1, named=True)["hit_at_3"] == 0.0
    assert out.row(2, named=True)["precision_at_1"] is None
