"""Registry entries of the families ``retrieval`` (trec_eval's measures, with relevance
judgments) and ``context`` (is the answer in what was retrieved; where the row failed), and
``answer_str_em`` of the answer family. docs/retrieval.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import polars as pl

from pipeline.metrics.embedding import grounding
from pipeline.metrics.retrieval import context, trec
from pipeline.metrics.spec import NEEDS_EMBEDDER, Inputs, MetricSpec, count

_RANKING = "_ranking"
_POSITIONS = "_answer_positions"
_REFERENCE_GROUNDING = "_reference_grounding"
#: The intermediate groups :func:`intermediates` knows.
INTERMEDIATE_GROUPS: frozenset[str] = frozenset({_RANKING, _POSITIONS, _REFERENCE_GROUNDING})
#: The cut-offs of the registered ``_at_k`` measures (a config's ``[retrieval] k`` replaces them
#: in its runs: :func:`at_k_specs`).
KS = trec.DEFAULT_KS
_AT_K_NAME = re.compile(r"(precision|recall|hit|ndcg)_at_([1-9][0-9]*)")


def ranked_ids() -> pl.Expr:
    """The ids of the retrieved passages in rank order: ``context_ids``, else the passage
    numbers of ``contexts`` (``"1"``, ``"2"`` ...)."""
    numbers = pl.int_ranges(1, pl.col("contexts").list.len() + 1).cast(pl.List(pl.String))
    return pl.coalesce(pl.col("context_ids"), numbers)


def relevant_ids() -> pl.Expr:
    """The judged relevant ids: ``relevant_ids``, else the passages ``gold_citations`` names
    (their ids in ``context_ids``, or their numbers)."""
    gold = pl.col("gold_citations")
    by_id = pl.col("context_ids").list.gather(gold - 1, null_on_oob=True).list.drop_nulls()
    by_number = gold.cast(pl.List(pl.String))
    return pl.coalesce(pl.col("relevant_ids"),
                       pl.when(pl.col("context_ids").is_not_null()).then(by_id)
                       .otherwise(by_number))


def _ranking(inputs: Inputs) -> pl.Expr:
    ks = inputs.config.retrieval_k
    names = [*trec.measure_names(ks), "n_relevant", "n_retrieved"]
    dtype = pl.Struct({name: pl.Int64() if name.startswith("n_") else pl.Float64()
                       for name in names})

    def run(batch: pl.Series) -> pl.Series:
        return trec.ranking_measures(batch.struct.unnest(), ks).to_struct(_RANKING)

    return pl.struct(
        ranked_ids().alias("ranked_ids"), relevant_ids().alias("relevant_ids"), "relevance",
    ).map_batches(run, return_dtype=dtype)


def _positions(inputs: Inputs) -> pl.Expr:
    """``answer_in_context`` and ``answer_rank`` as a struct (the metrics leave out the
    unanswerable rows: their reference says there is no answer to look for)."""
    dtype = pl.Struct({"answer_in_context": pl.Int8(), "answer_rank": pl.Int64()})

    def run(batch: pl.Series) -> pl.Series:
        return context.answer_positions(batch.struct.unnest()).to_struct(_POSITIONS)

    return pl.struct("contexts", "reference", "references", "answer_groups", "lang").map_batches(
        run, return_dtype=dtype)


#: A reference of at most this many words and one sentence is one short answer: its context
#: recall is whether a passage holds it (``answer_in_context``), not the claim rule's.
SHORT_ANSWER_WORDS = 10


def is_short_answer(reference: pl.Expr) -> pl.Expr:
    """Whether ``reference`` is one short answer (:data:`SHORT_ANSWER_WORDS`, no sentence end
    inside).

    >>> pl.select(is_short_answer(pl.Series(["Paris", "It opened in 1889. It is tall."]))
    ...           ).to_series().to_list()
    [True, False]
    """
    words = reference.str.count_matches(r"\S+")
    return (words <= SHORT_ANSWER_WORDS) & ~reference.str.contains(r"[.!?。！？]\s*\S")


def _reference_grounding(inputs: Inputs) -> pl.Expr:
    """The grounding counts of a longer reference read as a response: its claims the
    passages support (the evidence rule of docs/grounding.md); null for one short answer."""
    embedder = inputs.require_embedder()
    config = inputs.config
    dtype = pl.Struct({"n_sentences": pl.Int64(), "n_supported": pl.Int64()})

    def run(batch: pl.Series) -> pl.Series:
        frame = batch.struct.unnest().with_row_index("_r")
        longer = frame.filter(~is_short_answer(pl.col("response").fill_null("")))
        counts = grounding.grounding_counts(
            longer.drop("_r"), embedder, rule=config.grounding_rule,
            tau_sim=config.tau_sim, tau_lex=config.tau_lex,
            abstention_phrases=config.abstention_phrases,
        ).select("n_sentences", "n_supported").with_columns(longer["_r"])
        return frame.select("_r").join(counts, on="_r", how="left", maintain_order="left") \
            .select("n_sentences", "n_supported").to_struct(_REFERENCE_GROUNDING)

    return pl.struct(
        pl.col("reference").alias("response"), "contexts", "question", "lang"
    ).map_batches(run, return_dtype=dtype)


def intermediates(inputs: Inputs, needed: set[str]) -> dict[str, pl.Expr]:
    """The frame-level results the retrieval and context metrics read."""
    builders = {_RANKING: _ranking, _POSITIONS: _positions,
                _REFERENCE_GROUNDING: _reference_grounding}
    return {name: build(inputs) for name, build in builders.items() if name in needed}


def _field(group: str, name: str) -> pl.Expr:
    return pl.col(group).struct.field(name)


def _answerable(name: str) -> pl.Expr:
    """A field of the answer positions, null on unanswerable rows."""
    return pl.when(pl.col("unanswerable") == 0).then(_field(_POSITIONS, name))


def _measure(name: str, description: str) -> MetricSpec:
    return MetricSpec(name, "retrieval", lambda _: _field(_RANKING, name), pl.Float64(),
                      description, needs=(_RANKING,), nullable=True)


def _str_em(_: Inputs) -> pl.Expr:
    def run(batch: pl.Series) -> pl.Series:
        return context.answer_str_em(batch.struct.unnest())

    return pl.struct("response", "reference", "references", "answer_groups").map_batches(
        run, return_dtype=pl.Float64())


def _context_recall(_: Inputs) -> pl.Expr:
    n = _field(_REFERENCE_GROUNDING, "n_sentences")
    applicable = (pl.col("contexts").list.len() > 0) & (pl.col("unanswerable") == 0)
    claims = _field(_REFERENCE_GROUNDING, "n_supported").cast(pl.Float64) / n.cast(pl.Float64)
    return pl.when(applicable).then(
        pl.when(n.is_null()).then(pl.col("answer_in_context").cast(pl.Float64))
        .when(n > 0).then(claims)
    )


def _failure_stage(_: Inputs) -> pl.Expr:
    return context.failure_stage(
        unanswerable=pl.col("unanswerable") == 1, abstained=pl.col("abstained") == 1,
        answer_in_context=pl.col("answer_in_context") == 1,
        answered=pl.col("answer_str_em") > 0, hallucination=pl.col("hallucination") == 1,
    )


_DESCRIPTIONS = {
    "precision": "Relevant passages among the first {k}, over {k} (trec_eval P_{k}).",
    "recall": "Relevant passages among the first {k}, over the judged relevant documents, "
              "retrieved or not (trec_eval recall_{k}).",
    "hit": "1 when a relevant passage is among the first {k} (trec_eval success_{k}).",
    "ndcg": "nDCG of the first {k}, gain = grade (trec_eval ndcg_cut_{k}).",
}


def at_k_specs(ks: Sequence[int]) -> tuple[MetricSpec, ...]:
    """The ``*_at_{k}`` measures for the cut-offs ``ks`` (``[retrieval] k``), measure by measure.

    >>> [spec.name for spec in at_k_specs([2])]
    ['precision_at_2', 'recall_at_2', 'hit_at_2', 'ndcg_at_2']
    """
    return tuple(_measure(f"{name}_at_{k}", text.format(k=k))
                 for name, text in _DESCRIPTIONS.items() for k in ks)


def at_k_spec(name: str) -> MetricSpec | None:
    """The spec of the measure ``name`` when it is an ``*_at_{k}`` column, else None (a scores
    table of a run with other cut-offs is read with it).

    >>> at_k_spec("ndcg_at_20").family, at_k_spec("answer_f1")
    ('retrieval', None)
    """
    match = _AT_K_NAME.fullmatch(name)
    if match is None:
        return None
    measure, k = match.groups()
    return _measure(name, _DESCRIPTIONS[measure].format(k=k))


SPECS: tuple[MetricSpec, ...] = (
    *at_k_specs(KS),
    _measure("reciprocal_rank", "1 / rank of the first relevant passage, 0 when none is "
                                "retrieved (trec_eval recip_rank)."),
    _measure("average_precision", "Precision at each relevant passage retrieved, summed over "
                                  "the judged relevant documents (trec_eval map)."),
    count("n_relevant", "retrieval", lambda _: _field(_RANKING, "n_relevant"),
          "Judged relevant documents of the row (grade >= 1; sufficient statistic).",
          needs=(_RANKING,)),
    count("n_retrieved", "retrieval", lambda _: _field(_RANKING, "n_retrieved"),
          "Distinct passages ranked (sufficient statistic).", needs=(_RANKING,)),
    MetricSpec(
        "answer_in_context", "context",
        lambda _: _answerable("answer_in_context"), pl.Int8(),
        "1 when an acceptable answer occurs in some passage after SQuAD normalization (whole "
        "words on Latin-script rows); null without passages or on unanswerable rows.",
        needs=(_POSITIONS, "unanswerable"), nullable=True,
    ),
    MetricSpec(
        "answer_rank", "context", lambda _: _answerable("answer_rank"), pl.Int64(),
        "1-based rank of the first passage holding an acceptable answer; null when none does.",
        needs=(_POSITIONS, "unanswerable"), lower=1.0, upper=None, higher_is_better=False,
        nullable=True, kind="score",
    ),
    MetricSpec(
        "context_recall", "context", _context_recall, pl.Float64(),
        "Share of the reference's claims that the passages support (the grounding evidence "
        "rule; RAGAS context recall without an LLM); a one-short-answer reference: "
        "answer_in_context. Null without passages or claims.",
        needs=(_REFERENCE_GROUNDING, "unanswerable", "answer_in_context", NEEDS_EMBEDDER),
        nullable=True,
    ),
    MetricSpec(
        "answer_str_em", "answer", _str_em, pl.Float64(),
        "Share of the acceptable answers (RGB: answer groups) contained in the response after "
        "SQuAD normalization (ALCE's STR-EM for long-form QA).",
        nullable=True,
    ),
    MetricSpec(
        "failure_stage", "context", _failure_stage, pl.String(),
        "Where the row failed: retrieval, generation, grounding, abstention, "
        "correct_abstention or none (docs/retrieval.md).",
        needs=("unanswerable", "abstained", "answer_in_context", "answer_str_em",
               "hallucination"),
        lower=None, upper=None, higher_is_better=None,
    ),
)
