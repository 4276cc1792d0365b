"""Ranking measures of trec_eval (9.0.x, as pytrec_eval computes them), one row per ranking.

Each row holds a ranking (document ids in rank order, best first) and its judgments (judged
document ids, each with an integer grade, 1 when no grade is given). With relevance level 1,
as trec_eval's default:

* ``P_k`` (precision at k): relevant documents among the first k, divided by k (fewer than k
  retrieved still divides by k);
* ``recall_k``: relevant documents among the first k, divided by the judged relevant ones
  (those not retrieved count);
* ``success_k`` (hit at k): 1 when a relevant document is among the first k;
* ``ndcg_cut_k``: DCG of the first k (gain = grade, discount ``log2(rank + 1)``) over the DCG
  of the ideal ranking of every judged document, cut at k;
* ``recip_rank``: 1 / rank of the first relevant document, 0 when none is retrieved;
* ``map`` (average precision): the precision at the rank of each relevant document retrieved,
  summed and divided by the judged relevant ones.

Conventions (docs/retrieval.md): a document id repeated in a ranking counts at its first rank
(trec_eval reads a run as one score per document); a document judged twice keeps its highest
grade; an empty ranking scores 0 on every measure (trec_eval ``-c``); a row with no judged
relevant document (none, or all graded below 1) is null on every measure, since no ranking can
be judged there. ``n_relevant`` (judged relevant) and ``n_retrieved`` (distinct ids ranked) are
kept as sufficient statistics.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

#: The cut-offs of the ``_at_k`` measures unless configured (``[retrieval] k``).
DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10)
#: The least grade that makes a judged document relevant (trec_eval's ``-l``, default 1).
RELEVANCE_LEVEL = 1


def measure_names(ks: Sequence[int]) -> list[str]:
    """The output columns of :func:`ranking_measures` for the cut-offs ``ks``, in order.

    >>> measure_names([1, 5])
    ['precision_at_1', 'precision_at_5', 'recall_at_1', 'recall_at_5', 'hit_at_1', 'hit_at_5', \
'ndcg_at_1', 'ndcg_at_5', 'reciprocal_rank', 'average_precision']
    """
    return [f"{name}_at_{k}" for name in ("precision", "recall", "hit", "ndcg") for k in ks] + [
        "reciprocal_rank", "average_precision"]


def ranking_measures(frame: pl.DataFrame, ks: Sequence[int] = DEFAULT_KS, *,
                     ranked: str = "ranked_ids", relevant: str = "relevant_ids",
                     grades: str = "relevance") -> pl.DataFrame:
    """The trec_eval measures of each row of ``frame``, one output row per input row, in order:
    the columns of :func:`measure_names` plus ``n_relevant`` and ``n_retrieved``.

    ``ranked`` and ``relevant`` are ``List[String]`` columns, ``grades`` an optional
    ``List[Int]`` column aligned with ``relevant`` (a null list, or a column not in ``frame``,
    grades every judged document 1).

    >>> frame = pl.DataFrame({"ranked_ids": [["a", "x", "c"], [], ["x"]],
    ...                       "relevant_ids": [["a", "b", "c", "z"], ["a"], []],
    ...                       "relevance": [[2, 0, 1, 1], None, None]})
    >>> out = ranking_measures(frame, [1, 3])
    >>> out.select("precision_at_3", "recall_at_3", "reciprocal_rank").rows()
    [(0.6666666666666666, 0.6666666666666666, 1.0), (0.0, 0.0, 0.0), (None, None, None)]
    >>> round(out["average_precision"][0], 6), round(out["ndcg_at_3"][0], 6)
    (0.555556, 0.798485)
    """
    ks = sorted(set(int(k) for k in ks))
    rows = frame.select(
        pl.col(ranked).cast(pl.List(pl.String)).alias("_ranked"),
        pl.col(relevant).cast(pl.List(pl.String)).alias("_relevant"),
        (pl.col(grades).cast(pl.List(pl.Int64)) if grades in frame.columns
         else pl.lit(None, pl.List(pl.Int64))).alias("_grades"),
    ).with_row_index("_r")
    judged = _judgments(rows)
    ranking = (
        rows.select("_r", pl.col("_ranked").list.drop_nulls().list.unique(maintain_order=True))
        .explode("_ranked", keep_nulls=False).rename({"_ranked": "doc"})
        .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("_r").alias("rank"))
        .join(judged, on=["_r", "doc"], how="left", maintain_order="left")
        .with_columns(pl.col("grade").fill_null(0))
        .with_columns(
            (pl.col("grade") >= RELEVANCE_LEVEL).alias("relevant"),
            (pl.col("grade").cast(pl.Float64) / (pl.col("rank") + 1).cast(pl.Float64).log(2))
            .alias("discounted"),
        )
        .with_columns(pl.col("relevant").cast(pl.Int64).cum_sum().over("_r").alias("seen"))
    )
    relevant_doc = pl.col("relevant")
    found = ranking.group_by("_r").agg(
        *[(relevant_doc & (pl.col("rank") <= k)).sum().alias(f"_hits_{k}") for k in ks],
        *[pl.col("discounted").filter(pl.col("rank") <= k).sum().alias(f"_dcg_{k}")
          for k in ks],
        (1.0 / pl.col("rank").filter(relevant_doc).min().cast(pl.Float64)).alias("_rr"),
        (pl.col("seen").cast(pl.Float64) / pl.col("rank").cast(pl.Float64))
        .filter(relevant_doc).sum().alias("_precision_sum"),
        pl.len().alias("n_retrieved"),
    )
    ideal = (
        judged.filter(pl.col("grade") > 0).sort(["_r", "grade"], descending=[False, True])
        .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("_r").alias("rank"))
        .group_by("_r").agg(
            *[(pl.col("grade").cast(pl.Float64) / (pl.col("rank") + 1).cast(pl.Float64).log(2))
              .filter(pl.col("rank") <= k).sum().alias(f"_idcg_{k}") for k in ks],
            (pl.col("grade") >= RELEVANCE_LEVEL).sum().alias("n_relevant"),
        )
    )
    joined = rows.select("_r").join(found, on="_r", how="left", maintain_order="left").join(
        ideal, on="_r", how="left", maintain_order="left")
    n_relevant = pl.col("n_relevant").fill_null(0)
    judgeable = n_relevant > 0

    def hits(k: int) -> pl.Expr:
        return pl.col(f"_hits_{k}").fill_null(0).cast(pl.Float64)

    def measure(value: pl.Expr) -> pl.Expr:
        return pl.when(judgeable).then(value.fill_null(0.0))

    columns = (
        [measure(hits(k) / k).alias(f"precision_at_{k}") for k in ks]
        + [measure(hits(k) / n_relevant).alias(f"recall_at_{k}") for k in ks]
        + [measure((hits(k) > 0).cast(pl.Float64)).alias(f"hit_at_{k}") for k in ks]
        + [measure(pl.col(f"_dcg_{k}") / pl.col(f"_idcg_{k}")).alias(f"ndcg_at_{k}")
           for k in ks]
        + [measure(pl.col("_rr")).alias("reciprocal_rank"),
           measure(pl.col("_precision_sum") / n_relevant).alias("average_precision"),
           n_relevant.cast(pl.Int64).alias("n_relevant"),
           pl.col("n_retrieved").fill_null(0).cast(pl.Int64).alias("n_retrieved")]
    )
    return joined.select(columns)


def _judgments(rows: pl.DataFrame) -> pl.DataFrame:
    """``_r``, ``doc``, ``grade``: each judged document of each row once, at its highest grade
    (1 where the row gives no grades)."""
    graded = rows.select(
        "_r", "_relevant",
        pl.when(pl.col("_grades").is_null())
        .then(pl.col("_relevant").list.eval(pl.lit(1, pl.Int64)))
        .otherwise(pl.col("_grades")).alias("_grades"),
    )
    return (
        graded.explode(["_relevant", "_grades"], keep_nulls=False)
        .rename({"_relevant": "doc", "_grades": "grade"})
        .drop_nulls("doc")
        .with_columns(pl.col("grade").fill_null(1))
        .group_by(["_r", "doc"]).agg(pl.col("grade").max())
    )
