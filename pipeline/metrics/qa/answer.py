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

import polars as pl

from pipeline.metrics.common import flag

_EMPTY_TOKENS = pl.lit([], dtype=pl.List(pl.String))


def _has_repeats(tokens: pl.Expr) -> pl.Expr:
    return tokens.list.n_unique() < tokens.list.len()


def _occurrence_tagged(tokens: pl.Expr) -> pl.Expr:
    """Each token suffixed with its occurrence number, so a set of tags is the token multiset."""
    element = pl.element()
    occurrence = element.cum_count().over(element).cast(pl.String)
    return tokens.list.eval(element + "\x00" + occurrence)


def multiset_overlap(left: pl.Expr, right: pl.Expr) -> pl.Expr:
    """Size of the multiset intersection of two token lists.

    Equals ``sum((Counter(a) & Counter(b)).values())`` of the official script.

    When either side has no repeated token the plain set intersection has the same size; only
    rows where both sides repeat a token pay for occurrence tagging.

    >>> import polars as pl
    >>> frame = pl.DataFrame({"a": [["x", "x", "y"]], "b": [["x", "x", "x"]]})
    >>> frame.select(multiset_overlap(pl.col("a"), pl.col("b"))).item()
    2
    """
    both_repeat = _has_repeats(left) & _has_repeats(right)
    set_size = left.list.set_intersection(right).list.len()
    tagged_left = _occurrence_tagged(pl.when(both_repeat).then(left).otherwise(_EMPTY_TOKENS))
    tagged_right = _occurrence_tagged(pl.when(both_repeat).then(right).otherwise(_EMPTY_TOKENS))
    tagged_size = tagged_left.list.set_intersection(tagged_right).list.len()
    return pl.when(both_repeat).then(tagged_size).otherwise(set_size).cast(pl.Int64)


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
