"""Answer exact match and token F1, identical to the official SQuAD v2 evaluation script.

Reference: ``evaluate-v2.0.py`` (``normalize_answer``, ``get_tokens``, ``compute_exact``,
``compute_f1`` and the max over gold answers in ``get_raw_scores``). The functions take token
lists produced by :func:`pipeline.text.tokenize.squad_tokens`, so each text is tokenized once.

Conventions (all from the official script):

* EM is 1 when the normalized strings are equal; equal normalizations are equal token lists.
* F1 is 1 when both token lists are empty, 0 when exactly one is, else the harmonic mean of
  token precision and recall over the multiset intersection (repeated tokens count as often as
  they occur on both sides).
* Over several references the maximum is taken, ignoring references that normalize to the empty
  string unless all of them do.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipeline.metrics.arithmetic import flag
from pipeline.text.kernels.squad import multiset_overlap_batch


def multiset_overlap(left: pl.Expr, right: pl.Expr) -> pl.Expr:
    """Size of the multiset intersection of two token lists (Int64; null where either is null).

    Equals ``sum((Counter(a) & Counter(b)).values())`` of the official script; computed by a
    compiled kernel over both columns' buffers (:mod:`pipeline.text.kernels.squad`).

    >>> import polars as pl
    >>> frame = pl.DataFrame({"a": [["x", "x", "y"]], "b": [["x", "x", "x"]]})
    >>> frame.select(multiset_overlap(pl.col("a"), pl.col("b"))).item()
    2
    """
    return pl.map_batches(
        [left, right], _overlap_batch, return_dtype=pl.Int64, is_elementwise=True
    )


def _overlap_batch(columns: Sequence[pl.Series]) -> pl.Series:
    left, right = columns
    return multiset_overlap_batch(left, right)


def exact_match(prediction_tokens: pl.Expr, reference_tokens: pl.Expr) -> pl.Expr:
    """``compute_exact``: 1 when the normalized texts are equal (Int8)."""
    return flag(prediction_tokens == reference_tokens)


def token_f1(prediction_tokens: pl.Expr, reference_tokens: pl.Expr) -> pl.Expr:
    """``compute_f1`` of the official SQuAD v2 script (Float64 in [0, 1])."""
    n_same = multiset_overlap(prediction_tokens, reference_tokens)
    return f1_from_counts(prediction_tokens.list.len(), reference_tokens.list.len(), n_same)


def f1_from_counts(n_pred: pl.Expr, n_ref: pl.Expr, n_same: pl.Expr) -> pl.Expr:
    """``compute_f1`` from token counts and the multiset overlap (computed once per pair)."""
    precision = n_same.cast(pl.Float64) / n_pred.cast(pl.Float64)
    recall = n_same.cast(pl.Float64) / n_ref.cast(pl.Float64)
    return (
        pl.when((n_pred == 0) | (n_ref == 0))
        .then((n_pred == n_ref).cast(pl.Float64))
        .when(n_same == 0)
        .then(0.0)
        .otherwise((2 * precision * recall) / (precision + recall))
    )


def best_over_references(
    scores: list[pl.Expr], reference_tokens: list[pl.Expr], prediction_tokens: pl.Expr
) -> pl.Expr:
    """Maximum of per-reference ``scores``, as ``get_raw_scores`` takes it.

    A reference that is null (absent) is skipped; references whose tokens are empty are skipped
    unless every present reference is empty, in which case the script scores against ``""``:
    1.0 when the prediction also normalizes to empty, else 0.0.
    """
    if len(scores) != len(reference_tokens):
        raise ValueError("one score per reference is required")
    non_empty = [
        pl.when(reference_tokens[k].list.len() > 0).then(scores[k].cast(pl.Float64))
        for k in range(len(scores))
    ]
    all_empty_score = (prediction_tokens.list.len() == 0).cast(pl.Float64)
    return pl.max_horizontal(non_empty).fill_null(all_empty_score)


def strict_exact_match(prediction: pl.Expr, reference: pl.Expr) -> pl.Expr:
    """1 when the texts are equal after lowercasing and collapsing whitespace only (Int8).

    Takes already normalized texts (:func:`pipeline.text.normalize.lower_collapse`).
    """
    return flag(prediction == reference)
