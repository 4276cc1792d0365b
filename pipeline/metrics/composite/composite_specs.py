"""Registry entries of the category-aware composite families: quality, safety, composite
relevance, and the overall layer (accuracy composite, weighted overall score, pass flags,
failure mode, suggestions).

Each family's rules (patterns, weights, ranges, thresholds, feedback texts) are TOML data files
under ``pipeline/data/`` that ``[composite]`` in the config can replace; :mod:`pipeline.rules`
loads them once when the config is read, and the builders take them from ``config.rules``. All
of them read the compared response (``_response``: citation markers stripped unless configured
otherwise).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from pipeline.metrics.composite import overall, quality, relevance_composite, safety
from pipeline.metrics.spec import Inputs, MetricSpec
from pipeline.text.sentences import split_sentences

_RESPONSE = "_response"
#: Intermediate columns of the quality family, computed once per batch for the metrics that
#: read them (polars does not share an expression containing ``list.eval`` between uses): the
#: response's sentences, and its words in the quality rules' unit.
SENTENCES = "_quality_sentences"
WORDS = "_quality_words"
INTERMEDIATE_GROUPS: frozenset[str] = frozenset({SENTENCES, WORDS})


def intermediates(inputs: Inputs, needed: set[str], response: pl.Expr) -> dict[str, pl.Expr]:
    """The columns of :data:`INTERMEDIATE_GROUPS` in ``needed``."""
    columns: dict[str, pl.Expr] = {}
    if SENTENCES in needed:
        columns[SENTENCES] = split_sentences(response)
    if WORDS in needed:
        columns[WORDS] = quality.words(response, _quality_rules(inputs).word_unit)
    return columns


def _quality_rules(inputs: Inputs) -> quality.QualityRules:
    return inputs.config.rules.quality


def _on_response(
    fn: Callable[..., pl.Expr], part: str, *, counts_words: bool = False,
    reads_sentences: bool = False,
) -> Callable[[Inputs], pl.Expr]:
    """``fn(response, rules=<part of the quality rules>)``, with the rules' word unit and the
    shared words when ``counts_words``, and the shared sentences when ``reads_sentences``."""

    def build(inputs: Inputs) -> pl.Expr:
        rules = _quality_rules(inputs)
        shared: dict[str, object] = {}
        if counts_words:
            shared.update(unit=rules.word_unit, tokens=pl.col(WORDS))
        if reads_sentences:
            shared["sentences"] = pl.col(SENTENCES)
        return fn(pl.col(_RESPONSE), rules=getattr(rules, part), **shared)

    return build


def _composite_quality(inputs: Inputs) -> pl.Expr:
    fluency, coherence, conciseness, readability = (pl.col(name) for name in _QUALITY_PARTS)
    return quality.composite_quality(
        fluency, coherence, conciseness, readability, pl.col("length_ok"),
        rules=_quality_rules(inputs).composite,
    )


def _quality_feedback(inputs: Inputs) -> pl.Expr:
    return quality.band_feedback(pl.col("composite_quality"), _quality_rules(inputs).feedback_bands)


_QUALITY_PARTS = ("fluency_score", "coherence_score", "conciseness_score", "readability_score")


def _safety(name: str) -> Callable[[Inputs], pl.Expr]:
    def build(inputs: Inputs) -> pl.Expr:
        return safety.safety_scores(
            pl.col(_RESPONSE), rules=inputs.config.rules.safety,
            category=pl.col("scoring_category"),
        )[name]

    return build


def _relevance_rules(inputs: Inputs) -> relevance_composite.RelevanceRules:
    return inputs.config.rules.relevance


def _relevance(fn: Callable[..., pl.Expr], *columns: str) -> Callable[[Inputs], pl.Expr]:
    """``fn(*columns, rules=<relevance rules>)``."""
    return lambda inputs: fn(*(pl.col(c) for c in columns), rules=_relevance_rules(inputs))


def _adjustment(inputs: Inputs) -> pl.Expr:
    components = {name: pl.col(name) for name in ("step_completeness", "creativity_score")}
    return relevance_composite.relevance_adjustment(
        pl.col("category"), components, rules=_relevance_rules(inputs)
    )


def _composite_relevance(inputs: Inputs) -> pl.Expr:
    components = {name: pl.col(name) for name in relevance_composite.COMPOSITE_INPUTS}
    return relevance_composite.composite_relevance(
        components, pl.col("relevance_adjustment"), pl.col("refusal_score"),
        rules=_relevance_rules(inputs),
    )


#: The overall layer's expressions of the last rules built (rules -> columns): each of its
#: eleven specs reads one column of the same build (0.07 s a scoring call when built for each).
_LAST_OVERALL: list[tuple[overall.OverallRules, dict[str, pl.Expr]]] = []


def _overall_columns(rules: overall.OverallRules) -> dict[str, pl.Expr]:
    """:func:`overall.overall_scores` of ``rules``, built once while the same rules object is
    asked for (expressions are immutable: sharing them is safe)."""
    if not _LAST_OVERALL or _LAST_OVERALL[0][0] is not rules:
        _LAST_OVERALL[:] = [(rules, overall.overall_scores(rules=rules))]
    return _LAST_OVERALL[0][1]


def _overall(name: str) -> Callable[[Inputs], pl.Expr]:
    def build(inputs: Inputs) -> pl.Expr:
        return _overall_columns(inputs.config.rules.overall)[name]

    return build


def _category(fn: Callable[..., pl.Expr]) -> Callable[[Inputs], pl.Expr]:
    def build(inputs: Inputs) -> pl.Expr:
        return fn(pl.col("category"), rules=_relevance_rules(inputs))

    return build


def _score(name: str, family: str, build: Callable[[Inputs], pl.Expr], description: str,
           needs: tuple[str, ...] = (), nullable: bool = False) -> MetricSpec:
    return MetricSpec(name, family, build, pl.Float64(), description, needs=needs,
                      nullable=nullable)


def _text(name: str, family: str, build: Callable[[Inputs], pl.Expr], description: str,
          needs: tuple[str, ...] = ()) -> MetricSpec:
    return MetricSpec(name, family, build, pl.String(), description, needs=needs, lower=None,
                      upper=None, higher_is_better=None)


def _flag(name: str, family: str, build: Callable[[Inputs], pl.Expr], description: str,
          higher_is_better: bool | None, needs: tuple[str, ...] = ()) -> MetricSpec:
    return MetricSpec(name, family, build, pl.Int8(), description, needs=needs,
                      higher_is_better=higher_is_better)


_REL = "relevance_composite"
#: Safety rules may check perspective balance only for some categories.
_SAFETY_NEEDS = ("scoring_category",)
_OVERALL_NEEDS = (*overall.INPUT_COLUMNS,)
#: How the default rules score the accuracy and relevance areas of an unanswerable question.
_UNANSWERABLE_AREA = " (unanswerable questions: 1 when the response abstains)"

SPECS: tuple[MetricSpec, ...] = (
    _text("scoring_category", "composite", _category(relevance_composite.canonical_category),
          "Category the composites use: the canonical name, or the default for unknown ones."),
    _flag("category_known", "composite", _category(relevance_composite.category_is_known),
          "1 when the row's category is a known name or alias, 0 when it fell back.", None),
    _flag("length_ok", "quality", _on_response(quality.length_ok, "length", counts_words=True),
          "1 when the response's word count is within the configured bounds.", True,
          needs=(WORDS,)),
    _text("length_feedback", "quality",
          _on_response(quality.length_feedback, "length", counts_words=True),
          "Too short / Too long / Appropriate length (N words, ideal: a-b).", needs=(WORDS,)),
    _score("fluency_score", "quality",
           _on_response(quality.fluency_score, "fluency", reads_sentences=True),
           "Sentence mean: 1.0 well-formed, 0.5 not capitalized, 0.3 implausibly short word.",
           needs=(SENTENCES,)),
    _score("coherence_score", "quality",
           _on_response(quality.coherence_score, "coherence", reads_sentences=True),
           "min(1, connective hits / max(1, 2 (sentences - 1))); 1.0 for one sentence.",
           needs=(SENTENCES,)),
    _score("conciseness_score", "quality",
           _on_response(quality.conciseness_score, "conciseness", counts_words=True),
           "0.7 type-token ratio + 0.3 repetition score.", needs=(WORDS,)),
    _score("readability_score", "quality",
           _on_response(quality.readability_score, "readability", counts_words=True,
                        reads_sentences=True),
           "clamp01(1 - (0.39 words/sentence + 11.8 chars/word - 15.59) / 20).",
           needs=(WORDS, SENTENCES)),
    _score("composite_quality", "quality", _composite_quality,
           "0.3 fluency + 0.3 coherence + 0.2 conciseness + 0.2 readability, x0.7 off length.",
           needs=(*_QUALITY_PARTS, "length_ok")),
    _text("quality_feedback", "quality", _quality_feedback,
          "Five quality bands at 0.8 / 0.6 / 0.4 / 0.2.", needs=("composite_quality",)),
    MetricSpec("bias_categories", "safety", _safety("bias_categories"), pl.List(pl.String()),
               "Bias categories whose patterns match the response (data-file order).",
               needs=_SAFETY_NEEDS, lower=None, upper=None, higher_is_better=None),
    _flag("has_bias_risk", "safety", _safety("has_bias_risk"),
          "1 when any bias category matches.", False, needs=_SAFETY_NEEDS),
    MetricSpec("bias_severity", "safety", _safety("bias_severity"), pl.Float64(),
               "Highest severity of the matched categories (0.0 when none).",
               needs=_SAFETY_NEEDS, higher_is_better=False),
    _score("perspective_balance", "safety", _safety("perspective_balance"),
           "min(1, balancing phrases / max(1, absolute phrases)); 1.0 without absolute phrases.",
           needs=_SAFETY_NEEDS),
    _score("safety_score", "safety", _safety("safety_score"),
           "1.0 without bias risk, else 1 - 0.7 severity.", needs=_SAFETY_NEEDS),
    _text("safety_feedback", "safety", _safety("safety_feedback"),
          "No safety concerns detected / High, Moderate or Minor note with the categories.",
          needs=_SAFETY_NEEDS),
    _score("intent_match", _REL, _relevance(relevance_composite.intent_match, "question",
                                            _RESPONSE),
           "1.0 when the response answers the question's detected intent, else 0.5."),
    MetricSpec("refusal_score", _REL, _relevance(relevance_composite.refusal_score, _RESPONSE),
               pl.Float64(), "1.0 when a refusal pattern occurs, else 0.0.",
               higher_is_better=False),
    _flag("is_refusal", _REL, _relevance(relevance_composite.is_refusal, "refusal_score"),
          "refusal_score > 0.7.", False,
          needs=("refusal_score",)),
    _score("depth_score", _REL,
           _relevance(relevance_composite.depth_score, _RESPONSE, "category"),
           "1.0 within the category's word range, else len/L_min below and L_max/len above."),
    _score("step_completeness", _REL,
           _relevance(relevance_composite.step_completeness, _RESPONSE),
           "min(1, steps / 8): step words and numbered items (used for Instructional)."),
    _score("creativity_score", _REL,
           _relevance(relevance_composite.creativity_score, _RESPONSE),
           "min(1, 0.25 indicator families + 0.25 [distinct words > 15]) (used for Creative)."),
    _score("relevance_adjustment", _REL, _adjustment,
           "0.3 step_completeness (Instructional), 0.2 creativity_score (Creative), else 0.",
           needs=("step_completeness", "creativity_score")),
    _score("composite_relevance", _REL, _composite_relevance,
           "clamp01(0.4 semantic + 0.2 tfidf + 0.2 keyword + 0.2 intent + adjustment "
           "- 0.5 refusal).",
           needs=(*relevance_composite.COMPOSITE_INPUTS, "relevance_adjustment", "refusal_score"),
           nullable=True),
    _text("relevance_feedback", _REL,
          _relevance(relevance_composite.relevance_feedback, "composite_relevance"),
          "Five relevance bands at 0.8 / 0.6 / 0.4 / 0.2.", needs=("composite_relevance",)),
    _score("composite_accuracy", "overall", _overall("composite_accuracy"),
           "0.35 semantic + 0.20 ROUGE-1 + 0.15 coverage + 0.10 numeric + 0.10 ROUGE-2 "
           "+ 0.05 EM + 0.05 BLEU.", needs=_OVERALL_NEEDS, nullable=True),
    _text("accuracy_feedback", "overall", _overall("accuracy_feedback"),
          "Five accuracy bands at 0.8 / 0.6 / 0.4 / 0.2 (with a caution for Creative).",
          needs=_OVERALL_NEEDS),
    _score("overall_score", "overall", _overall("overall_score"),
           "Category-weighted sum of accuracy, relevance, safety and quality; on unanswerable "
           "questions accuracy and relevance are whether the response abstains (1 or 0).",
           needs=_OVERALL_NEEDS, nullable=True),
    *(
        _flag(f"passed_{area}", "overall", _overall(f"passed_{area}"),
              f"1 when the {area} composite reaches its pass threshold{note}.", True,
              needs=_OVERALL_NEEDS)
        for area, note in (("accuracy", _UNANSWERABLE_AREA), ("relevance", _UNANSWERABLE_AREA),
                           ("safety", ""), ("quality", ""))
    ),
    _text("primary_failure_mode", "overall", _overall("primary_failure_mode"),
          "First rule that holds: empty_response, correct_abstention (a pass), "
          "answered_unanswerable, unwarranted_abstention, refusal_to_answer, safety_issue, "
          "retrieval, irrelevant_response, factual_error, partial_relevance, partial_accuracy, "
          "grounding (an unsupported claim), else pass "
          "(preset enhanced-framework: from refusal_to_answer on).", needs=_OVERALL_NEEDS),
    _flag("passed_overall", "overall", _overall("passed_overall"),
          "1 when the failure mode is pass or a passing mode (correct_abstention), else 0.", True,
          needs=_OVERALL_NEEDS),
    MetricSpec("suggestions", "overall", _overall("suggestions"), pl.List(pl.String()),
               "What to improve, by the rules of overall.toml (or that all criteria are met).",
               needs=_OVERALL_NEEDS, lower=None, upper=None, higher_is_better=None),
    _text("overall_feedback", "overall", _overall("overall_feedback"),
          "One line: overall score, category, passed and failed areas, primary issue.",
          needs=_OVERALL_NEEDS),
)

