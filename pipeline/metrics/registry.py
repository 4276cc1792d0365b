"""The one registry of metrics: name -> spec. The CLI, the docs table and the tests read it.

A spec's ``build`` receives :class:`~pipeline.metrics.spec.Inputs` (the configuration, the
number of reference candidates and the run's shared resources) and returns an unaliased
``pl.Expr`` over input columns, intermediate columns (names starting with ``_``, see
:func:`intermediates`) and other metrics it ``needs``. The driver computes everything level by
level and applies ``.alias(name)`` here, in one place.

The answer, citation, abstention and usage metrics are defined here; the text-comparison
families (lexical, relevance, semantic, grounding) in :mod:`pipeline.metrics.text_specs`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import polars as pl

from pipeline.config import Config
from pipeline.config import did_you_mean as _did_you_mean
from pipeline.metrics import text_specs
from pipeline.metrics.arithmetic import flag
from pipeline.metrics.composite import composite_specs
from pipeline.metrics.qa import abstention, answer, answer_mlqa, citation, usage
from pipeline.metrics.retrieval import retrieval_specs
from pipeline.metrics.robustness import rgb_specs
from pipeline.metrics.spec import NEEDS_EMBEDDER, NEEDS_IDF, Inputs, MetricSpec, candidate
from pipeline.text.language import LATIN
from pipeline.text.normalize import lower_collapse

__all__ = ["FAMILIES", "REGISTRY", "Inputs", "MetricSpec", "resolve"]


#: The compared response text (citation markers stripped unless configured otherwise).
RESPONSE = text_specs.RESPONSE


def _tokens(k: int) -> str:
    return f"_ref_tokens_{k}"


#: SQuAD tokens of every entry of ``references`` (a list of token lists).
_ALTERNATIVE_TOKENS = "_alternative_tokens"


#: Answer EM and F1 of every row when all rows are scored by SQuAD v2 (struct em, f1).
_ANSWER_SCORES = "_answer_scores"


def _overlap(k: int) -> str:
    return f"_overlap_{k}"


def _lowered(k: int) -> str:
    return f"_ref_lower_{k}"


def compared_response(config: Config) -> pl.Expr:
    """The response text that answer, lexical and semantic metrics compare."""
    if config.strip_citation_markers:
        return citation.strip_citation_markers(pl.col("response"))
    return pl.col("response")


def intermediates(inputs: Inputs, needed: Iterable[str]) -> list[dict[str, pl.Expr]]:
    """Columns computed once and shared by several metrics (dropped from the output).

    Returned as stages: a stage's expressions may use columns of earlier stages. The first
    stage is always ``_response`` (the response, without citation markers when the config says
    so), the text that answer, lexical and semantic metrics compare.

    ``needed`` names groups: ``_tokens`` (SQuAD tokens of the response and every candidate;
    when every row is scored by SQuAD v2, the struct ``_answer_scores`` of answer EM and F1
    instead, :func:`pipeline.metrics.qa.answer.answer_scores`), ``_overlap`` (their multiset
    overlap, which needs ``_tokens``; nothing more under SQuAD v2),
    ``_lowered`` (lowercased, whitespace-collapsed texts), ``_predicted_citations``, and the
    groups of :func:`pipeline.metrics.text_specs.intermediates` and
    :func:`pipeline.metrics.composite.composite_specs.intermediates`.
    """
    needed = set(needed)
    if "_overlap" in needed:
        needed.add("_tokens")
    response = compared_response(inputs.config)
    columns: dict[str, pl.Expr] = {}
    alternatives: dict[str, pl.Expr] = {}
    overlaps: dict[str, pl.Expr] = {}
    clean = pl.col(RESPONSE)
    squad = _squad_rows(inputs.config)
    if "_tokens" in needed and squad is None:
        # Every row by SQuAD v2: EM and F1 in one pass over the texts, no token columns.
        columns[_ANSWER_SCORES] = answer.answer_scores(
            clean, candidate(0), pl.col("references") if inputs.n_candidates > 1 else None,
            inputs.n_candidates,
        )
    elif "_tokens" in needed and squad is not None:  # MLQA's rules off the Latin rows
        columns["_response_tokens"] = answer_mlqa.answer_tokens(clean, pl.col("lang"), squad)
        columns[_tokens(0)] = answer_mlqa.answer_tokens(candidate(0), pl.col("lang"), squad)
        if inputs.n_candidates > 1:
            # Every alternative reference tokenized in one pass over the list elements, not
            # once per candidate position over mostly null columns.
            columns[_ALTERNATIVE_TOKENS] = answer_mlqa.answer_tokens_each(
                pl.col("references"), pl.col("lang"), squad
            )
        for k in range(1, inputs.n_candidates):
            alternatives[_tokens(k)] = pl.col(_ALTERNATIVE_TOKENS).list.get(
                k - 1, null_on_oob=True
            )
    if "_overlap" in needed and squad is not None:
        for k in range(inputs.n_candidates):
            overlaps[_overlap(k)] = answer.multiset_overlap(
                pl.col("_response_tokens"), pl.col(_tokens(k))
            )
    if "_lowered" in needed:
        columns["_response_lower"] = lower_collapse(clean)
        for k in range(inputs.n_candidates):
            columns[_lowered(k)] = lower_collapse(candidate(k))
    if "_predicted_citations" in needed:
        columns["_predicted_citations"] = citation.predicted_citations(
            pl.col("citations"), pl.col("response")
        )
    columns.update(text_specs.intermediates(inputs, needed, clean))
    columns.update(composite_specs.intermediates(inputs, needed, clean))
    columns.update(retrieval_specs.intermediates(inputs, needed))
    stages = [{RESPONSE: response}, columns, alternatives,
              overlaps]
    return [stage for stage in stages if stage]


def _squad_rows(config: Config) -> pl.Expr | None:
    """The rows answer EM/F1 score by SQuAD v2 under ``[answer] scorer``: None for every row
    (``squad-v2``), else a Boolean expression: none (``mlqa``), or under ``auto`` the rows of
    a Latin-script language (:func:`pipeline.text.language.is_latin`: ``en``, undetermined,
    or a code of no other detected script such as ``es``); the others by MLQA's rules."""
    if config.answer_scorer == "squad-v2":
        return None
    if config.answer_scorer == "mlqa":
        return pl.lit(False)
    return pl.col(LATIN)


def _answer_em(inputs: Inputs) -> pl.Expr:
    squad = _squad_rows(inputs.config)
    if squad is None:
        return pl.col(_ANSWER_SCORES).struct.field("em")
    response = pl.col("_response_tokens")
    refs = [pl.col(_tokens(k)) for k in range(inputs.n_candidates)]
    return answer_mlqa.answer_em(response, refs, squad)


def _answer_f1(inputs: Inputs) -> pl.Expr:
    squad = _squad_rows(inputs.config)
    if squad is None:
        return pl.col(_ANSWER_SCORES).struct.field("f1")
    response = pl.col("_response_tokens")
    refs = [pl.col(_tokens(k)) for k in range(inputs.n_candidates)]
    overlaps = [pl.col(_overlap(k)) for k in range(inputs.n_candidates)]
    return answer_mlqa.answer_f1(response, refs, squad, overlaps)


def _answer_em_strict(inputs: Inputs) -> pl.Expr:
    response = pl.col("_response_lower")
    scores = [
        answer.strict_exact_match(response, pl.col(_lowered(k)))
        for k in range(inputs.n_candidates)
    ]
    return pl.max_horizontal(scores).cast(pl.Int8)


def _citation_counts(index: int) -> Callable[[Inputs], pl.Expr]:
    def build(_: Inputs) -> pl.Expr:
        counts = citation.citation_counts(
            pl.col("_predicted_citations"), pl.col("gold_citations")
        )
        return counts[index]

    return build


_COUNTS = ("citation_n_pred", "citation_n_gold", "citation_n_correct")


def _citation_score(
    fn: Callable[[pl.Expr, pl.Expr, pl.Expr], pl.Expr],
) -> Callable[[Inputs], pl.Expr]:
    def build(_: Inputs) -> pl.Expr:
        return fn(*(pl.col(name) for name in _COUNTS))

    return build


def _abstained(inputs: Inputs) -> pl.Expr:
    config = inputs.config
    return abstention.abstained(pl.col("response"), phrases=config.abstention_phrases,
                                rules=bool(config.abstention_rules))


def unanswerable_rule(inputs: Inputs) -> pl.Expr:
    """Whether the row's question is unanswerable (Boolean, never null): the one rule,
    :func:`pipeline.metrics.qa.abstention.is_unanswerable`, with the configured references and
    types. By default any reference that is an abstention (:func:`~pipeline.metrics.qa.
    abstention.unanswerable_references`) and a row without any gold answer count; under a
    compat preset only the abstention reference and ``question_type`` do, as before."""
    config = inputs.config
    if config.compat_preset is not None:
        return abstention.is_unanswerable(
            pl.col("reference"), pl.col("question_type"),
            unanswerable_references=(config.abstention_reference,),
            unanswerable_types=config.unanswerable_types,
        )
    return abstention.is_unanswerable(
        pl.col("reference"), pl.col("question_type"), pl.col("references"),
        unanswerable_references=abstention.unanswerable_references(
            abstention_reference=config.abstention_reference,
            insufficient_context_reference=config.insufficient_context_reference,
            abstention_phrases=config.abstention_phrases,
        ),
        unanswerable_types=config.unanswerable_types, rules=bool(config.abstention_rules),
    )


def _abstention_correct(inputs: Inputs) -> pl.Expr:
    if inputs.config.compat_preset == "intellidocu":
        return abstention.abstention_exact(
            pl.col("response"), pl.col("reference"), token=inputs.config.abstention_reference
        )
    return abstention.abstention_correct(pl.col("abstained"), pl.col("unanswerable"))


def _insufficient_context(inputs: Inputs) -> pl.Expr:
    if inputs.config.compat_preset == "hotpot-gen":
        return abstention.insufficient_context_exact(
            pl.col(RESPONSE), pl.col("reference"),
            insufficient_context_reference=inputs.config.insufficient_context_reference,
        )
    return abstention.insufficient_context_detected(
        pl.col("abstained"),
        pl.col("reference"),
        insufficient_context_reference=inputs.config.insufficient_context_reference,
    )


def _idk_with_citation(inputs: Inputs) -> pl.Expr:
    return abstention.idk_with_citation(
        pl.col("response"), phrases=inputs.config.abstention_phrases
    )


_CORE_SPECS: tuple[MetricSpec, ...] = (
    MetricSpec(
        "answer_em", "answer", _answer_em, pl.Int8(),
        "Exact match after SQuAD v2 normalize_answer; max over references.",
        needs=("_tokens",),
    ),
    MetricSpec(
        "answer_f1", "answer", _answer_f1, pl.Float64(),
        "SQuAD v2 token F1 (multiset overlap of normalized tokens); max over references.",
        needs=("_tokens", "_overlap"),
    ),
    MetricSpec(
        "answer_em_strict", "answer", _answer_em_strict, pl.Int8(),
        "Exact match after lowercasing and collapsing whitespace only; max over references.",
        needs=("_lowered",),
    ),
    MetricSpec(
        "citation_n_pred", "citation", _citation_counts(0), pl.Int64(),
        "Number of distinct passages cited (sufficient statistic); null without gold.",
        needs=("_predicted_citations",), upper=None, higher_is_better=None, nullable=True,
    ),
    MetricSpec(
        "citation_n_gold", "citation", _citation_counts(1), pl.Int64(),
        "Number of distinct gold passages (sufficient statistic); null without gold.",
        needs=("_predicted_citations",), upper=None, higher_is_better=None, nullable=True,
    ),
    MetricSpec(
        "citation_n_correct", "citation", _citation_counts(2), pl.Int64(),
        "Number of cited passages that are gold (sufficient statistic); null without gold.",
        needs=("_predicted_citations",), upper=None, higher_is_better=None, nullable=True,
    ),
    MetricSpec(
        "citation_precision", "citation", _citation_score(citation.citation_precision),
        pl.Float64(), "Share of cited passages that are gold (1.0 when both sets are empty).",
        needs=_COUNTS, nullable=True,
    ),
    MetricSpec(
        "citation_recall", "citation", _citation_score(citation.citation_recall),
        pl.Float64(), "Share of gold passages that are cited (1.0 when both sets are empty).",
        needs=_COUNTS, nullable=True,
    ),
    MetricSpec(
        "citation_f1", "citation", _citation_score(citation.citation_f1), pl.Float64(),
        "Harmonic mean of citation precision and recall.",
        needs=_COUNTS, nullable=True,
    ),
    MetricSpec(
        "abstained", "abstention", _abstained, pl.Int8(),
        "1 when the response is a refusal: it says the sources or the model lack the answer "
        "and asserts nothing else (ten languages, pipeline.text.refusals), or contains a "
        "configured phrase beyond the defaults (presets: any configured phrase).",
        higher_is_better=None,
    ),
    MetricSpec(
        "unanswerable", "abstention", lambda inputs: flag(unanswerable_rule(inputs)),
        pl.Int8(),
        "1 when the question is unanswerable: its reference is an abstention (\"I don't know\", "
        "\"unanswerable\", \"no answer\", the abstention reference, a phrase, or a refusal such "
        "as \"The context does not mention the salary band.\"), it has no gold "
        "answer (SQuAD v2), or its question_type says so (presets: the abstention reference or "
        "question_type only).",
        higher_is_better=None,
    ),
    MetricSpec(
        "abstention_correct", "abstention", _abstention_correct, pl.Int8(),
        "Unanswerable rows only: 1 when the response abstains (preset intellidocu: is exactly "
        "the token); null for answerable rows.",
        needs=("abstained", "unanswerable"), nullable=True,
    ),
    MetricSpec(
        "empty_response", "abstention",
        lambda _: abstention.empty_response(pl.col("response")), pl.Int8(),
        "1 when the response is null or empty once citation markers and whitespace are "
        "removed (faithfulness 0.0 on answerable questions).",
        higher_is_better=False,
    ),
    MetricSpec(
        "insufficient_context_detected", "abstention", _insufficient_context, pl.Int8(),
        "Rows whose reference is the insufficient-context token: 1 when the response abstains "
        "(preset hotpot-gen: is the token).",
        needs=("abstained",), nullable=True,
    ),
    MetricSpec(
        "idk_with_citation", "abstention", _idk_with_citation, pl.Int8(),
        "1 when a sentence abstains and carries a [n] citation marker (should be 0).",
        higher_is_better=False,
    ),
    MetricSpec(
        "total_tokens", "usage",
        lambda _: usage.total_tokens(
            pl.col("total_tokens"), pl.col("prompt_tokens"), pl.col("completion_tokens")
        ),
        pl.Int64(), "total_tokens, else prompt_tokens + completion_tokens.",
        upper=None, higher_is_better=False, nullable=True,
    ),
    MetricSpec(
        "latency_ms", "usage", lambda _: pl.col("latency_ms").cast(pl.Float64), pl.Float64(),
        "Latency in milliseconds, carried through.",
        upper=None, higher_is_better=False, nullable=True,
    ),
)

_SPECS: tuple[MetricSpec, ...] = (
    *_CORE_SPECS, *text_specs.SPECS, *composite_specs.SPECS, *rgb_specs.SPECS,
    *retrieval_specs.SPECS,
)
#: The intermediate groups :func:`intermediates` computes (with those of ``text_specs``).
INTERMEDIATE_GROUPS: frozenset[str] = frozenset(
    {"_tokens", "_overlap", "_lowered", "_predicted_citations"}
) | text_specs.INTERMEDIATE_GROUPS | composite_specs.INTERMEDIATE_GROUPS \
    | retrieval_specs.INTERMEDIATE_GROUPS
#: Resources the driver prepares once per run.
RESOURCES: frozenset[str] = frozenset({NEEDS_IDF, NEEDS_EMBEDDER})


def check_needs(specs: Iterable[MetricSpec]) -> dict[str, MetricSpec]:
    """The specs by name, after checking every ``needs`` entry names a metric of ``specs``, an
    intermediate group or a resource: a typo fails when the registry is built, not silently.

    >>> check_needs([MetricSpec("x", "f", lambda _: pl.lit(1.0), pl.Float64(), "", needs=("y",))])
    Traceback (most recent call last):
    ...
    ValueError: metric 'x' needs 'y', which is no metric, intermediate group or resource
    """
    by_name = {spec.name: spec for spec in specs}
    for spec in by_name.values():
        for need in spec.needs:
            if need not in by_name and need not in INTERMEDIATE_GROUPS | RESOURCES:
                raise ValueError(
                    f"metric {spec.name!r} needs {need!r}, which is no metric, intermediate "
                    "group or resource"
                )
    return by_name


REGISTRY: dict[str, MetricSpec] = check_needs(_SPECS)
_SPECS_AT_K = tuple(spec.name for spec in _SPECS if retrieval_specs.at_k_spec(spec.name))
FAMILIES: dict[str, tuple[str, ...]] = {}
for _spec in _SPECS:
    FAMILIES[_spec.family] = (*FAMILIES.get(_spec.family, ()), _spec.name)


class UnknownMetricError(ValueError):
    """A requested metric or family does not exist."""


def with_cutoffs(ks: Sequence[int]) -> tuple[MetricSpec, ...]:
    """The registered specs with the ``*_at_{k}`` retrieval measures of the cut-offs ``ks``
    (``[retrieval] k``) in place of the default ones.

    >>> [s.name for s in with_cutoffs([2]) if s.name.endswith("_at_2")]
    ['precision_at_2', 'recall_at_2', 'hit_at_2', 'ndcg_at_2']
    """
    if tuple(ks) == retrieval_specs.KS:
        return _SPECS
    specs: list[MetricSpec] = []
    for spec in _SPECS:
        if retrieval_specs.at_k_spec(spec.name) is None:
            specs.append(spec)
        elif spec.name == _SPECS_AT_K[0]:
            specs.extend(retrieval_specs.at_k_specs(ks))
    return tuple(specs)


def resolve(
    selection: Iterable[str] | None, extra: Sequence[MetricSpec] = (),
    *, ks: Sequence[int] = retrieval_specs.KS,
) -> tuple[MetricSpec, ...]:
    """Specs for the named metrics or families plus the metrics they need, in registry order,
    then ``extra`` (user-defined metrics, family ``user``, :mod:`pipeline.metrics.user`); the
    retrieval measures at the cut-offs ``ks``."""
    builtin = with_cutoffs(ks)
    specs = (*builtin, *extra)
    if selection is None:
        return specs
    by_name = {spec.name: spec for spec in specs}
    families: dict[str, tuple[str, ...]] = {}
    for spec in specs:
        families[spec.family] = (*families.get(spec.family, ()), spec.name)
    wanted: set[str] = set()
    for name in selection:
        name = name.strip()
        if name in families:
            wanted.update(families[name])
        elif name in by_name:
            wanted.add(name)
        else:
            raise UnknownMetricError(
                f"unknown metric or family {name!r}{_did_you_mean(name, [*families, *by_name])}"
                f"; families: {', '.join(families)}; metrics: {', '.join(by_name)}"
            )
    pending = list(wanted)
    while pending:
        for need in by_name[pending.pop()].needs:
            if need in by_name and need not in wanted:
                wanted.add(need)
                pending.append(need)
    return tuple(spec for spec in specs if spec.name in wanted)


def levels(specs: Iterable[MetricSpec]) -> list[list[MetricSpec]]:
    """Group specs so each group only needs intermediates or metrics of earlier groups."""
    specs = list(specs)
    depth: dict[str, int] = {}
    by_name = {**REGISTRY, **{spec.name: spec for spec in specs}}

    def level(spec: MetricSpec) -> int:
        if spec.name not in depth:
            metric_needs = [by_name[n] for n in spec.needs if n in by_name]
            depth[spec.name] = 1 + max((level(n) for n in metric_needs), default=-1)
        return depth[spec.name]

    grouped: dict[int, list[MetricSpec]] = {}
    for spec in specs:
        grouped.setdefault(level(spec), []).append(spec)
    return [grouped[k] for k in sorted(grouped)]


def metric_expressions(specs: Iterable[MetricSpec], inputs: Inputs) -> list[pl.Expr]:
    """Aliased, dtype-cast expressions for ``specs`` (the one place names are applied)."""
    return [spec.build(inputs).cast(spec.dtype).alias(spec.name) for spec in specs]


def markdown_table(
    specs: Iterable[MetricSpec] | None = None, *, origins: Mapping[str, str] | None = None
) -> str:
    """The metric catalogue as a Markdown table (embedded in ``docs/metrics.md``): the
    registered metrics, or ``specs``; with ``origins`` (metric -> where it is defined), an
    ``origin`` column after ``family``."""
    header = ["metric", "family", *(["origin"] if origins is not None else []), "kind", "dtype",
              "range", "better", "description"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for spec in _SPECS if specs is None else specs:
        if spec.upper is not None:
            value_range = (f"[{spec.lower:g}, {spec.upper:g}]" if spec.lower is not None
                           else f"<= {spec.upper:g}")
        else:
            value_range = f">= {spec.lower:g}" if spec.lower is not None else "any"
        better = {True: "higher", False: "lower", None: "-"}[spec.higher_is_better]
        nullable = " Nullable." if spec.nullable else ""
        origin = [] if origins is None else [origins.get(spec.name, "built-in")]
        cells = [f"`{spec.name}`", spec.family, *origin, str(spec.kind), str(spec.dtype),
                 value_range, better, f"{spec.description}{nullable}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
