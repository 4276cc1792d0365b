"""Is the answer in what was retrieved, in what was written, and where did the row fail?

* :func:`answer_positions` gives ``answer_in_context`` and ``answer_rank``: some acceptable
  answer (``reference``, ``references``) occurs in some passage of ``contexts`` after SQuAD's
  ``normalize_answer``, as whole words on Latin-script rows (the "has answer" test of DPR-style
  retrieval evaluation, Karpukhin et al. 2020), as a substring on rows of other scripts; the
  rank is the 1-based position of the first passage holding one.
* :func:`answer_str_em` is ALCE's STR-EM (Gao et al. 2023, ``compute_str_em``): the share of
  the acceptable answers whose normalized form is a substring of the normalized response.
* :func:`failure_stage` names where a row failed (docs/retrieval.md).
"""

from __future__ import annotations

import polars as pl

from pipeline.text.language import is_latin
from pipeline.text.normalize import squad_normalize

#: The stages :func:`failure_stage` names, in the order it decides them.
STAGES: tuple[str, ...] = (
    "correct_abstention", "abstention", "retrieval", "generation", "grounding", "none",
)


def _candidates(reference: pl.Expr, references: pl.Expr) -> pl.Expr:
    """The acceptable answers of a row: ``reference`` then ``references``, nulls left out."""
    return pl.concat_list(reference.cast(pl.String), references.fill_null(
        pl.lit([], pl.List(pl.String)))).list.drop_nulls()


def _answer_pairs(frame: pl.DataFrame) -> pl.DataFrame:
    """``_r``, ``pair``, ``answer``: the acceptable answers of each row as ALCE's ``qa_pairs``
    (one list of aliases each): the ``answer_groups`` of an RGB row, else one pair per answer
    of ``reference`` and ``references``."""
    groups = frame["answer_groups"] if "answer_groups" in frame.columns else None
    rows = frame.select(
        _candidates(pl.col("reference"), pl.col("references")).alias("_answers"),
        (pl.lit(groups) if groups is not None else pl.lit(None, pl.List(pl.List(pl.String))))
        .alias("_groups"),
    ).with_row_index("_r")
    single = rows.filter(pl.col("_groups").is_null()).select(
        "_r", pl.col("_answers").alias("answer")).explode("answer", keep_nulls=False)
    single = single.with_columns(pl.int_range(pl.len()).over("_r").alias("pair"))
    grouped = (
        rows.filter(pl.col("_groups").is_not_null()).select("_r", pl.col("_groups").alias("g"))
        .explode("g", keep_nulls=False)
        .with_columns(pl.int_range(pl.len()).over("_r").alias("pair"))
        .explode("g", keep_nulls=False).rename({"g": "answer"}).drop_nulls("answer")
    )
    return pl.concat([single.select("_r", "pair", "answer"),
                      grouped.select("_r", "pair", "answer")])


def answer_str_em(frame: pl.DataFrame) -> pl.Series:
    """ALCE's STR-EM of each row of ``frame`` (``response``, ``reference``, ``references``,
    optional ``answer_groups``): the share of its ``qa_pairs`` (:func:`_answer_pairs`) with an
    alias whose SQuAD-normalized form is a substring of the normalized response; null when the
    row has no answer. As in ALCE, an alias that normalizes to the empty string is found in
    any response.

    >>> frame = pl.DataFrame({"response": ["It was built in 1889 by Gustave Eiffel.", "Ithar"],
    ...                       "reference": ["1889", "Lunmouth; Ithar"],
    ...                       "references": [["Eiffel", "Paris"], None],
    ...                       "answer_groups": [None, [["Lunmouth"], ["Ithar", "Ithar City"]]]})
    >>> answer_str_em(frame).to_list()
    [0.6666666666666666, 0.5]
    """
    responses = frame.select(squad_normalize(pl.col("response").fill_null("")).alias("written"))
    pairs = _answer_pairs(frame).join(responses.with_row_index("_r"), on="_r")
    found = (
        pairs.with_columns(pl.col("written").str.contains(squad_normalize(pl.col("answer")),
                                                          literal=True).alias("found"))
        .group_by("_r", "pair").agg(pl.col("found").any())
        .group_by("_r").agg(pl.col("found").cast(pl.Float64).mean())
    )
    return responses.with_row_index("_r").join(found, on="_r", how="left",
                                                maintain_order="left")["found"].alias(
        "answer_str_em")


def answer_positions(frame: pl.DataFrame) -> pl.DataFrame:
    """``answer_in_context`` (Int8) and ``answer_rank`` (Int64) for each row of ``frame``
    (``contexts``, ``reference``, ``references``, optional ``answer_groups``, ``lang``), one
    output row per input row; the acceptable answers are those of :func:`_answer_pairs`.
    Both are null on rows without passages or without an acceptable answer; the rank is null
    where no passage holds one.

    >>> frame = pl.DataFrame({"contexts": [["Berlin is big.", "Paris is in France."], ["x"], None],
    ...                       "reference": ["Paris", "Paris", "Paris"],
    ...                       "references": [None, None, None], "lang": ["en", "en", "en"]})
    >>> answer_positions(frame).rows()
    [(1, 2), (0, None), (None, None)]
    """
    pairs = _answer_pairs(frame)
    rows = frame.select(
        pl.col("contexts").cast(pl.List(pl.String)), is_latin(pl.col("lang")).alias("_latin"),
    ).with_row_index("_r").join(
        pairs.group_by("_r").agg(pl.len().alias("_n_answers")), on="_r", how="left",
        maintain_order="left")
    applicable = (pl.col("contexts").list.len() > 0) & (pl.col("_n_answers") > 0)

    def padded(text: pl.Expr) -> pl.Expr:
        normal = squad_normalize(text)
        return pl.when(pl.col("_latin")).then(pl.concat_str(pl.lit(" "), normal, pl.lit(" ")))\
            .otherwise(normal)

    passages = (
        rows.filter(applicable).select("_r", "_latin", "contexts")
        .explode("contexts", keep_nulls=False)
        .with_columns(pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("_r").alias("rank"),
                      padded(pl.col("contexts")).alias("passage"))
    )
    answers = (
        pairs.join(rows.select("_r", "_latin"), on="_r")
        .with_columns(padded(pl.col("answer")).alias("answer"))
        .filter(pl.col("answer").str.strip_chars() != "")
        .select("_r", "answer").unique()
    )
    held = passages.join(answers, on="_r").filter(
        pl.col("passage").str.contains(pl.col("answer"), literal=True)
    ).group_by("_r").agg(pl.col("rank").min().alias("answer_rank"))
    return rows.join(held, on="_r", how="left", maintain_order="left").select(
        pl.when(applicable).then(pl.col("answer_rank").is_not_null()).cast(pl.Int8)
        .alias("answer_in_context"),
        "answer_rank",
    )


def failure_stage(*, unanswerable: pl.Expr, abstained: pl.Expr, answer_in_context: pl.Expr,
                  answered: pl.Expr, hallucination: pl.Expr) -> pl.Expr:
    """Where the row failed, first that applies (docs/retrieval.md):

    * ``correct_abstention``: it declined, and the question is unanswerable or no passage
      holds an answer;
    * ``abstention``: it declined although a passage holds the answer;
    * ``retrieval``: no passage holds an answer and the response does not give one;
    * ``grounding``: the response answers an unanswerable question (it asserts what no source
      answers);
    * ``generation``: the response does not give an acceptable answer (a passage holds it, or
      the row has no passages to tell);
    * ``grounding``: the answer is right but the response states something no passage supports;
    * ``none``.

    ``answered`` is whether the response holds an acceptable answer (STR-EM above 0),
    ``hallucination`` the grounding flag; null inputs leave out the stages they decide (a row
    without a reference is ``grounding`` or ``none``).

    >>> frame = pl.DataFrame({"u": [0, 0, 0, 0, 1, 0], "a": [0, 0, 1, 0, 1, 1],
    ...                       "c": [0, 1, 1, 1, None, 0], "s": [0.0, 0.0, 0.0, 1.0, None, 0.0],
    ...                       "h": [0, 0, 0, 1, None, 0]})
    >>> frame.select(failure_stage(unanswerable=pl.col("u") == 1, abstained=pl.col("a") == 1,
    ...     answer_in_context=pl.col("c") == 1, answered=pl.col("s") > 0,
    ...     hallucination=pl.col("h") == 1)).to_series().to_list()
    ['retrieval', 'generation', 'abstention', 'grounding', 'correct_abstention', \
'correct_abstention']
    >>> frame.select(failure_stage(unanswerable=pl.lit(True), abstained=pl.lit(False),
    ...     answer_in_context=pl.lit(None, pl.Boolean), answered=pl.lit(None, pl.Boolean),
    ...     hallucination=pl.lit(None, pl.Boolean))).item()
    'grounding'
    """
    unanswerable = unanswerable.fill_null(False)
    abstained = abstained.fill_null(False)
    missing = answer_in_context.not_()  # null where it cannot tell
    return (
        pl.when(abstained & (unanswerable | missing.fill_null(False)))
        .then(pl.lit("correct_abstention"))
        .when(abstained).then(pl.lit("abstention"))
        .when(unanswerable).then(pl.lit("grounding"))
        .when(missing.fill_null(False) & answered.not_().fill_null(True))
        .then(pl.lit("retrieval"))
        .when(answered.not_().fill_null(False)).then(pl.lit("generation"))
        .when(hallucination.fill_null(False)).then(pl.lit("grounding"))
        .otherwise(pl.lit("none"))
    )
