"""Answer exact match and token F1 of the official MLQA v1 evaluation script, and the per-row
choice between it and SQuAD v2.

Reference: ``mlqa_evaluation_v1.py`` of facebookresearch/MLQA (``f1_score``,
``exact_match_score``, ``metric_max_over_ground_truths``). Tokens come from
:func:`pipeline.text.mlqa.mlqa_tokens` (``normalize_answer(s, lang).split()``), so each text is
tokenized once.

Conventions (all from the MLQA script, which differ from SQuAD v2 at the empty string):

* EM is 1 when the normalized strings are equal, so 1 when both are empty.
* F1 is 0 whenever the multiset overlap is 0, **including when both token lists are empty**
  (SQuAD v2 gives 1 there); otherwise the harmonic mean of token precision and recall,
  evaluated as the script does, ``(2 * precision * recall) / (precision + recall)``.
* Over several references the plain maximum is taken; references that normalize to the empty
  string are not skipped (SQuAD v2 skips them). Null (absent) references are skipped; a row
  without any reference is scored against ``""`` (the script has no such case: ``max([])``).

:func:`answer_scores` picks the scorer per row (``scorer="auto"``): SQuAD v2, exactly the
expressions of :mod:`pipeline.metrics.qa.answer`, where the row's language is ``en`` or
unknown (null or ``und``) with Latin-script text, MLQA under the row's language elsewhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Literal

import polars as pl

from pipeline.metrics.qa.answer import (
    best_over_references,
    exact_match,
    f1_from_counts,
    multiset_overlap,
)
from pipeline.text.mlqa import mlqa_tokens, mlqa_tokens_each
from pipeline.text.normalize import by_ascii
from pipeline.text.tokenize import squad_tokens

Scorer = Literal["auto", "squad-v2", "mlqa"]
#: The values of ``[answer] scorer``.
SCORERS: tuple[Scorer, ...] = ("auto", "squad-v2", "mlqa")
#: Language codes that mean "not known": the scorer is chosen from the text's script.
UNKNOWN_LANGUAGES: tuple[str, ...] = ("und",)

# A letter of any script but Latin.
_NON_LATIN_LETTER = r"[\p{L}--\p{Latin}]"


def mlqa_exact(prediction_tokens: pl.Expr, reference_tokens: pl.Expr) -> pl.Expr:
    """``exact_match_score``: 1 when the normalized texts are equal (Int8), 1 for two empties.

    >>> frame = pl.DataFrame({"p": [["北", "京"], []], "r": [["北", "京"], []]})
    >>> frame.select(mlqa_exact(pl.col("p"), pl.col("r"))).to_series().to_list()
    [1, 1]
    """
    return exact_match(prediction_tokens, reference_tokens)


def mlqa_f1_from_counts(n_pred: pl.Expr, n_ref: pl.Expr, n_same: pl.Expr) -> pl.Expr:
    """``f1_score`` from token counts and the multiset overlap: 0.0 when the overlap is 0."""
    return pl.when(n_same == 0).then(0.0).otherwise(f1_from_counts(n_pred, n_ref, n_same))


def mlqa_f1(
    prediction_tokens: pl.Expr, reference_tokens: pl.Expr, n_same: pl.Expr | None = None
) -> pl.Expr:
    """``f1_score`` of the MLQA script (Float64 in [0, 1]); 0.0 for two empty token lists.

    ``n_same`` is the multiset overlap when already computed
    (:func:`~pipeline.metrics.qa.answer.multiset_overlap`).

    >>> frame = pl.DataFrame({"p": [["北", "京"], []], "r": [["在", "北", "京", "举"], []]})
    >>> frame.select(mlqa_f1(pl.col("p"), pl.col("r"))).to_series().to_list()
    [0.6666666666666666, 0.0]
    """
    if n_same is None:
        n_same = multiset_overlap(prediction_tokens, reference_tokens)
    return mlqa_f1_from_counts(prediction_tokens.list.len(), reference_tokens.list.len(), n_same)


def mlqa_best_over_references(
    scores: Sequence[pl.Expr], prediction_tokens: pl.Expr, *, f1: bool
) -> pl.Expr:
    """``metric_max_over_ground_truths``: the maximum of the per-reference ``scores`` (Float64).

    A null score (absent reference) is skipped; with none present the row is scored against
    ``""``: EM 1 when the prediction normalizes to empty, F1 0.0.
    """
    if f1:
        against_empty = pl.lit(0.0, dtype=pl.Float64)
    else:
        against_empty = (prediction_tokens.list.len() == 0).cast(pl.Float64)
    best = pl.max_horizontal([score.cast(pl.Float64) for score in scores])
    return best.fill_null(pl.when(prediction_tokens.is_not_null()).then(against_empty))


def is_latin_text(text: pl.Expr) -> pl.Expr:
    """True where ``text`` holds no letter of a script other than Latin (null stays null).

    >>> frame = pl.DataFrame({"t": ["Ça va?", "12 !", "北京", "Москва", ""]})
    >>> frame.select(is_latin_text(pl.col("t"))).to_series().to_list()
    [True, True, False, False, True]
    """
    return by_ascii(
        text,
        lambda ascii_text: pl.when(ascii_text.is_not_null()).then(pl.lit(True)),
        lambda other: other.str.contains(_NON_LATIN_LETTER).not_(),
    )


def squad_rows(lang: pl.Expr, texts: Sequence[pl.Expr], *, scorer: Scorer) -> pl.Expr:
    """Rows scored by SQuAD v2 rather than MLQA (Boolean, never null).

    ``squad-v2``: every row; ``mlqa``: none; ``auto``: rows whose ``lang`` is ``en``, and rows
    whose ``lang`` is null or ``und`` when every text in ``texts`` (nulls skipped) is Latin
    script (:func:`is_latin_text`). Any other code, ``es``/``de``/``vi`` included, is MLQA's:
    its articles and punctuation rules are the point of setting it.

    >>> frame = pl.DataFrame({"lang": ["en", "zh", "de", None, None, "und"],
    ...                       "text": ["北京", "Paris", "Paris", "Paris", "北京", "12"]})
    >>> frame.select(squad_rows(pl.col("lang"), [pl.col("text")], scorer="auto"))[
    ...     "lang"].to_list()
    [True, False, False, True, False, True]
    """
    if scorer not in SCORERS:
        raise ValueError(f"unknown answer scorer {scorer!r}; expected one of {SCORERS}")
    if scorer == "squad-v2":
        return pl.lit(True)
    if scorer == "mlqa":
        return pl.lit(False)
    unknown = lang.is_null() | lang.is_in(UNKNOWN_LANGUAGES)
    latin = pl.all_horizontal(
        is_latin_text(pl.when(unknown).then(text)).fill_null(True) for text in texts
    )
    return ((lang == "en") | (unknown & latin)).fill_null(False)


def answer_tokens(text: pl.Expr, lang: pl.Expr, squad: pl.Expr) -> pl.Expr:
    """SQuAD v2 tokens (:func:`~pipeline.text.tokenize.squad_tokens`) on ``squad`` rows,
    MLQA tokens under the row's ``lang`` on the others; each row is tokenized once."""
    return pl.coalesce(
        squad_tokens(pl.when(squad).then(text)),
        mlqa_tokens(pl.when(squad).then(None).otherwise(text), lang),
    )


def answer_tokens_each(texts: pl.Expr, lang: pl.Expr, squad: pl.Expr) -> pl.Expr:
    """:func:`answer_tokens` of every string of a ``List[String]`` column."""
    return pl.coalesce(
        pl.when(squad).then(texts).list.eval(squad_tokens(pl.element())),
        mlqa_tokens_each(pl.when(squad).then(None).otherwise(texts), lang),
    )


def answer_em(
    response_tokens: pl.Expr, reference_tokens: Sequence[pl.Expr], squad: pl.Expr
) -> pl.Expr:
    """Answer EM (Int8) from :func:`answer_tokens` of the response and each reference
    candidate (null where absent): SQuAD v2's on ``squad`` rows, MLQA's on the others."""
    scores = [exact_match(response_tokens, ref) for ref in reference_tokens]
    return (
        pl.when(squad)
        .then(best_over_references(scores, list(reference_tokens), response_tokens))
        .otherwise(mlqa_best_over_references(scores, response_tokens, f1=False))
        .cast(pl.Int8)
    )


def answer_f1(
    response_tokens: pl.Expr,
    reference_tokens: Sequence[pl.Expr],
    squad: pl.Expr,
    overlaps: Sequence[pl.Expr] | None = None,
) -> pl.Expr:
    """Answer F1 (Float64) from :func:`answer_tokens` as :func:`answer_em`; ``overlaps`` are
    the multiset overlaps of the response with each candidate when already computed."""
    if overlaps is None:
        overlaps = [multiset_overlap(response_tokens, ref) for ref in reference_tokens]
    n_pred = response_tokens.list.len()
    squad_scores = [
        f1_from_counts(n_pred, ref.list.len(), n_same)
        for ref, n_same in zip(reference_tokens, overlaps, strict=True)
    ]
    mlqa_scores = [
        mlqa_f1_from_counts(n_pred, ref.list.len(), n_same)
        for ref, n_same in zip(reference_tokens, overlaps, strict=True)
    ]
    return (
        pl.when(squad)
        .then(best_over_references(squad_scores, list(reference_tokens), response_tokens))
        .otherwise(mlqa_best_over_references(mlqa_scores, response_tokens, f1=True))
    )


def answer_scores(
    response: pl.Expr,
    reference: pl.Expr,
    references: pl.Expr | None,
    lang: pl.Expr,
    *,
    scorer: Scorer = "auto",
    n_candidates: int = 1,
) -> pl.Expr:
    """Struct ``{answer_em, answer_f1}`` of ``response`` against ``reference`` and the first
    ``n_candidates - 1`` entries of ``references``, by ``scorer`` (see :func:`squad_rows`).

    ``lang`` is the row's code (``pipeline.text.language.row_language``). On SQuAD v2 rows the
    values equal ``answer_em``/``answer_f1`` of the registry today; on the others, MLQA's.

    Both come from one batch function over the input columns that computes the tokens, the
    candidates and the overlaps as columns, stage by stage, as the registry's intermediates do
    (written as one expression, every use of a token list would rebuild it). Hence one struct:
    ``.struct.unnest()`` gives both columns from one run of that function, whereas two
    ``.struct.field`` expressions would each run it (polars does not share a batch function).

    >>> frame = pl.DataFrame({"response": ["北京", "the Eiffel Tower"],
    ...                       "reference": ["2022年冬奥会在北京举行。", "Eiffel Tower"],
    ...                       "lang": ["zh", "en"]})
    >>> scores = answer_scores(pl.col("response"), pl.col("reference"), None, pl.col("lang"))
    >>> frame.select(scores.struct.unnest()).rows()
    [(0, 0.33333333333333337), (1, 1.0)]
    """
    if scorer not in SCORERS:
        raise ValueError(f"unknown answer scorer {scorer!r}; expected one of {SCORERS}")
    fields = {"response": response, "reference": reference, "lang": lang.cast(pl.String)}
    if n_candidates > 1:
        if references is None:
            raise ValueError("n_candidates > 1 needs the references column")
        fields["references"] = references
    return pl.struct([expr.alias(name) for name, expr in fields.items()]).map_batches(
        partial(_scores_batch, scorer=scorer, n_candidates=n_candidates),
        return_dtype=pl.Struct({"answer_em": pl.Int8, "answer_f1": pl.Float64}),
        is_elementwise=True,
    ).alias("answer")


def _scores_batch(batch: pl.Series, *, scorer: Scorer, n_candidates: int) -> pl.Series:
    lang = pl.col("lang")
    texts = [pl.col("response"), pl.col("reference")]
    if n_candidates > 1:
        texts.append(pl.col("references").list.join(" "))
    squad = pl.col("_squad")
    response = pl.col("_response_tokens")
    candidates = [pl.col(f"_candidate_{k}") for k in range(n_candidates)]
    stages: list[dict[str, pl.Expr]] = [
        {"_squad": squad_rows(lang, texts, scorer=scorer)},
        {"_response_tokens": answer_tokens(pl.col("response"), lang, squad),
         "_candidate_0": answer_tokens(pl.col("reference"), lang, squad)}
        | ({"_alternatives": answer_tokens_each(pl.col("references"), lang, squad)}
           if n_candidates > 1 else {}),
        {f"_candidate_{k}": pl.col("_alternatives").list.get(k - 1, null_on_oob=True)
         for k in range(1, n_candidates)},
        {f"_overlap_{k}": multiset_overlap(response, candidate)
         for k, candidate in enumerate(candidates)},
    ]
    frame = batch.struct.unnest().lazy()
    for stage in stages:
        if stage:
            frame = frame.with_columns(**stage)
    overlaps = [pl.col(f"_overlap_{k}") for k in range(n_candidates)]
    scores = frame.select(
        answer_em=answer_em(response, candidates, squad),
        answer_f1=answer_f1(response, candidates, squad, overlaps),
    )
    return scores.collect().to_struct(batch.name)
