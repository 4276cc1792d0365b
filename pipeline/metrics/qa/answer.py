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
from functools import partial

import numpy as np
import polars as pl

from pipeline.metrics.arithmetic import flag
from pipeline.text.kernels.buffers import with_nulls
from pipeline.text.kernels.squad import multiset_overlap_batch, squad_em_f1_batch
from pipeline.text.tokenize import squad_tokens


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


#: The fields of :func:`answer_scores`.
SCORES = pl.Struct({"em": pl.Int8, "f1": pl.Float64})


def answer_scores(
    response: pl.Expr, reference: pl.Expr, references: pl.Expr | None, n_candidates: int = 1
) -> pl.Expr:
    """EM and F1 (struct ``{em: Int8, f1: Float64}``) of the response against the reference and
    the first ``n_candidates - 1`` entries of ``references``, maximum over them as
    ``get_raw_scores`` takes it (:func:`best_over_references`); null where the response is null.

    Rows whose texts are all pure ASCII are scored by one compiled kernel over the columns'
    buffers (:func:`pipeline.text.kernels.squad.squad_em_f1`) without building token lists;
    the others by :func:`squad_tokens`, :func:`exact_match` and :func:`f1_from_counts`.

    >>> import polars as pl
    >>> frame = pl.DataFrame({"p": ["The cat"], "r": ["cat"]})
    >>> frame.select(answer_scores(pl.col("p"), pl.col("r"), None)).item()
    {'em': 1, 'f1': 1.0}
    """
    fields = [response.alias("response"), reference.alias("reference")]
    if n_candidates > 1:
        if references is None:
            raise ValueError("n_candidates > 1 needs the references column")
        fields.append(references.alias("references"))
    return pl.struct(fields).map_batches(
        partial(_scores_batch, n_candidates=n_candidates), return_dtype=SCORES,
        is_elementwise=True,
    )


def _scores_batch(batch: pl.Series, *, n_candidates: int) -> pl.Series:
    frame = batch.struct.unnest()
    references = frame["references"] if n_candidates > 1 else None
    em, f1, valid, handled = squad_em_f1_batch(
        frame["response"], frame["reference"], references, n_candidates - 1
    )
    rest = np.flatnonzero(~handled)
    if len(rest):  # rows with a non-ASCII text, by the token expressions of the full rules
        scores = _scores_by_tokens(frame[rest], n_candidates)
        em[rest] = scores["em"].fill_null(0).to_numpy()
        f1[rest] = scores["f1"].fill_null(0.0).to_numpy()
        valid = valid.copy()
        valid[rest] = scores["em"].is_not_null().to_numpy()
    return pl.DataFrame(
        [with_nulls("em", em, valid), with_nulls("f1", f1, valid)]
    ).to_struct(batch.name)


def _scores_by_tokens(frame: pl.DataFrame, n_candidates: int) -> pl.DataFrame:
    response = pl.col("_response_tokens")
    refs = [pl.col(f"_ref_tokens_{k}") for k in range(n_candidates)]
    tokens = {"_response_tokens": squad_tokens(pl.col("response")),
              "_ref_tokens_0": squad_tokens(pl.col("reference"))}
    if n_candidates > 1:
        tokens["_alternative_tokens"] = pl.col("references").list.eval(
            squad_tokens(pl.element())
        )
    alternatives = {
        f"_ref_tokens_{k}": pl.col("_alternative_tokens").list.get(k - 1, null_on_oob=True)
        for k in range(1, n_candidates)
    }
    overlaps = [multiset_overlap(response, ref) for ref in refs]
    f1_scores = [
        f1_from_counts(response.list.len(), ref.list.len(), overlap)
        for ref, overlap in zip(refs, overlaps, strict=True)
    ]
    em_scores = [exact_match(response, ref) for ref in refs]
    return (
        frame.lazy().with_columns(**tokens).with_columns(**alternatives)
        .select(em=best_over_references(em_scores, refs, response).cast(pl.Int8),
                f1=best_over_references(f1_scores, refs, response))
        .collect()
    )


def strict_exact_match(prediction: pl.Expr, reference: pl.Expr) -> pl.Expr:
    """1 when the texts are equal after lowercasing and collapsing whitespace only (Int8).

    Takes already normalized texts (:func:`pipeline.text.normalize.lower_collapse`).
    """
    return flag(prediction == reference)
