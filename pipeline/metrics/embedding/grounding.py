"""Grounding: how many response sentences are supported by the passage they cite.

Sentences come from :func:`pipeline.text.sentences.split_sentences` on the raw response (markers
kept). A sentence is **supported** when all of these hold:

1. it cites exactly one passage: the distinct numbers in its ``[n]`` markers
   (:func:`pipeline.metrics.qa.citation.parse_citation_markers`) are one number ``n`` with
   ``1 <= n <= len(contexts)``; ``[1][2]``, ``[1, 2]``, no marker, or a number outside the
   contexts make it unsupported (``[1][1]`` cites one passage);
2. it is not an abstention: it does not contain an abstention phrase, both folded as in
   :func:`pipeline.metrics.qa.abstention.fold`;
3. the cited passage supports the claim (the sentence with its markers removed and surrounding
   whitespace stripped, ``"Paris is big [1]."`` -> ``"Paris is big ."``) by the rule:

   * ``evidence`` (the default, docs/grounding.md): every number, entity and content
     character bigram of the claim (:mod:`pipeline.text.evidence`) is in the passage or the
     question, and at least ``tau_lex`` of its new units are in the passage or
     ``cosine(embed(claim), embed(passage)) >= tau_sim``;
   * ``cosine`` (the core RAG tool's): ``cosine(embed(claim), embed(passage)) >= tau_sim``.

:func:`grounding_counts` emits the sufficient statistics ``n_sentences`` and ``n_supported``
and, for reading a failure, ``first_unsupported``: the first sentence (as written, markers
kept) that is not supported, null when every sentence is or the row has no passages, and
``unsupported``: every unsupported sentence with all its reasons;
:func:`overlap` and :func:`faithfulness` are expressions over the counts. A row with a null or empty
response has 0 sentences; null ``contexts`` support nothing.

**Rows without passages** (``contexts`` null or empty, :func:`n_contexts` 0): grounding does not
apply, so ``overlap`` and ``faithfulness`` are null there and the views average them over the
rows that had passages. The core RAG tool scores such rows like any other (overlap 0.0,
faithfulness 0.6), which ranks a model that retrieved nothing above one whose passages support
only some sentences; its preset (``core-rag``, docs/compat.md) keeps that rule.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import polars as pl

from pipeline.config import (
    DEFAULT_ABSTENTION_PHRASES,
    DEFAULT_GROUNDING_RULE,
    DEFAULT_TAU_LEX,
    DEFAULT_TAU_SIM,
    GROUNDING_RULES,
)
from pipeline.metrics.arithmetic import safe_div
from pipeline.metrics.embedding import support
from pipeline.metrics.qa.abstention import fold, fold_phrases
from pipeline.metrics.qa.citation import parse_citation_markers, strip_citation_markers
from pipeline.text import claims, evidence
from pipeline.text.sentences import split_sentences

logger = logging.getLogger(__name__)


class Embedder(Protocol):
    """What grounding needs from :class:`pipeline.embed.CachedEmbedder`."""

    def paired_dots(
        self, left: pl.Series, right: pl.Series, *, rows: int = 0, label: str = ""
    ) -> np.ndarray: ...


def grounding_counts(
    frame: pl.DataFrame,
    embedder: Embedder,
    *,
    rule: str = DEFAULT_GROUNDING_RULE,
    tau_sim: float = DEFAULT_TAU_SIM,
    tau_lex: float = DEFAULT_TAU_LEX,
    abstention_phrases: Sequence[str] = DEFAULT_ABSTENTION_PHRASES,
) -> pl.DataFrame:
    """``n_sentences``, ``n_supported`` (Int64, never null), ``first_unsupported`` (String)
    and ``unsupported`` (every unsupported sentence with all its reasons) for each row.

    ``frame`` needs ``response`` (String) and ``contexts`` (List[String], may be null), and
    may have ``question`` (String: what the rule ``evidence`` counts as given); the result has
    one row per input row, in order. ``rule`` is ``evidence`` (the default) or ``cosine`` (the
    core RAG tool's, see the module docstring). Only the claims whose decision needs a cosine,
    and the passages they cite, are embedded, in one deduplicated call.

    >>> from pipeline.embed import CachedEmbedder, EmbeddingCache, HashedNgramBackend
    >>> embedder = CachedEmbedder(HashedNgramBackend(), EmbeddingCache(None))
    >>> frame = pl.DataFrame({"response": ["Paris is in France [1]. It has 9 million people [1]."],
    ...                       "contexts": [["Paris is in France. It has 2 million people."]]})
    >>> row = grounding_counts(frame, embedder).row(0, named=True)
    >>> row["n_sentences"], row["n_supported"], row["first_unsupported"]
    (2, 1, 'It has 9 million people [1].')
    >>> row["unsupported"]
    ['"It has 9 million people [1]." — number 9 not in the passages']
    """
    if rule not in GROUNDING_RULES:
        raise ValueError(f"grounding rule {rule!r} is unknown: use one of {GROUNDING_RULES}")
    if rule == "evidence":
        return claim_counts(frame, embedder, tau_sim=tau_sim, tau_lex=tau_lex,
                            abstention_phrases=abstention_phrases)
    question = pl.col("question") if "question" in frame.columns else pl.lit(None, pl.String)
    rows = frame.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"),
        split_sentences(pl.col("response")).alias("sentence"),
        pl.col("contexts").list.len().fill_null(0).cast(pl.Int64).alias("n_contexts"),
    )
    sentences = (
        rows.explode("sentence").drop_nulls("sentence")
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over("_row").alias("_sentence"))
        .filter(pl.col("n_contexts") > 0)  # without passages grounding does not apply
        .with_columns(_validity_reasons(abstention_phrases).alias("reasons"))
    )
    number = parse_citation_markers(pl.col("sentence")).list.first()
    eligible = sentences.filter(pl.col("reasons").list.len() == 0).select(
        "_row",
        "_sentence",
        number.alias("_passage"),
        strip_citation_markers(pl.col("sentence")).str.strip_chars().alias("claim"),
    )
    passages = (
        frame.select(
            pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"),
            pl.col("contexts").alias("passage"),
            question.fill_null("").alias("question"),
        )
        .join(eligible.select("_row", "_passage").unique(), on="_row", how="semi")
        .with_columns(pl.int_ranges(1, pl.col("passage").list.len() + 1).alias("_passage"))
        .explode("passage", "_passage")
    )
    pairs = eligible.join(passages, on=["_row", "_passage"], how="left", maintain_order="left")
    decided = _cosine_rule(pairs, embedder, tau_sim, frame.height)
    judged = (
        sentences.join(decided, on=["_row", "_sentence"], how="left", maintain_order="left")
        .with_columns(
            pl.col("supported").fill_null(False),
            pl.concat_list("reasons", pl.col("evidence").fill_null([])).alias("reasons"),
        )
    )
    n_supported = judged.filter("supported").group_by("_row").len("n_supported")
    unsupported = (
        judged.filter(~pl.col("supported"))
        .group_by("_row")
        .agg(
            pl.col("sentence").sort_by("_sentence").first().str.strip_chars()
            .alias("first_unsupported"),
            pl.format('"{}" — {}', pl.col("sentence").str.strip_chars(),
                      pl.col("reasons").list.join("; "))
            .sort_by("_sentence").alias("unsupported"),
        )
    )
    with_passages = pl.col("n_contexts") > 0
    return (
        rows.join(n_supported, on="_row", how="left", maintain_order="left")
        .join(unsupported, on="_row", how="left", maintain_order="left")
        .select(
            pl.col("sentence").list.len().fill_null(0).cast(pl.Int64).alias("n_sentences"),
            pl.col("n_supported").fill_null(0).cast(pl.Int64),
            pl.col("first_unsupported").cast(pl.String),
            pl.when(with_passages).then(pl.col("unsupported").fill_null([]))
            .cast(UNSUPPORTED_DTYPE).alias("unsupported"),
            pl.lit(None, pl.Int64).alias("n_misattributed"),
            pl.lit(None, pl.List(pl.Int64)).alias("supported_by"),
        )
    )


#: Every unsupported sentence of a row, as written (markers kept), with all its reasons:
#: ``'"Tampa is in Florida [2]." — cites passage [2], which does not exist (1 passages)'``.
UNSUPPORTED_DTYPE = pl.List(pl.String())


def claim_counts(
    frame: pl.DataFrame,
    embedder: Embedder,
    *,
    tau_sim: float = DEFAULT_TAU_SIM,
    tau_lex: float = DEFAULT_TAU_LEX,
    abstention_phrases: Sequence[str] = DEFAULT_ABSTENTION_PHRASES,
) -> pl.DataFrame:
    """The counts of :func:`grounding_counts` under the rule ``evidence`` (docs/grounding.md):
    ``n_sentences`` (claims: sentences that assert something, :func:`pipeline.text.claims.
    is_claim`), ``n_supported``, ``first_unsupported``, ``unsupported``, ``n_misattributed``
    (supported claims whose cited passages do not state them) and ``supported_by`` (for each
    claim, the passage that states it, 1-based, null when none does).

    A claim without a valid citation is checked against all the row's passages together; a
    claim with citations against its cited passages together, then, when they do not state
    it, against all passages (a citation error, not a hallucination). Only a cited claim whose
    anchors are found but too few of its words is embedded: it is stated when its cosine
    with the cited passages reaches ``tau_sim``.

    >>> from pipeline.embed import CachedEmbedder, EmbeddingCache, HashedNgramBackend
    >>> embedder = CachedEmbedder(HashedNgramBackend(), EmbeddingCache(None))
    >>> frame = pl.DataFrame({"response": ["Here is the answer: Paris lies in France. It has "
    ...                                    "9 million people [2]."],
    ...                       "contexts": [["Paris is in France.", "It has 2 million people."]]})
    >>> row = claim_counts(frame, embedder).row(0, named=True)
    >>> row["n_sentences"], row["n_supported"], row["supported_by"], row["unsupported"]
    (2, 1, [1, None], ['"It has 9 million people [2]." — number 9 not in the passages'])
    """
    frame = frame.with_row_index("_row").with_columns(pl.col("_row").cast(pl.Int64))
    question = pl.col("question") if "question" in frame.columns else pl.lit(None, pl.String)
    lang = pl.col("lang") if "lang" in frame.columns else pl.lit(None, pl.String)
    rows = frame.select(
        "_row", split_sentences(pl.col("response")).alias("sentence"),
        n_contexts(pl.col("contexts")).alias("n_contexts"),
    )
    passages = frame.select(
        "_row", pl.col("contexts"), question.fill_null("").alias("question"), lang.alias("lang")
    ).with_columns(
        claims.stems(claims.readable(pl.col("question"))).alias("_question_stems"),
        claims.numbers(claims.readable(pl.col("question"))).alias("_question_numbers"),
    )
    cited = parse_citation_markers(pl.col("sentence"))
    sentences = (
        rows.explode("sentence").drop_nulls("sentence")
        .with_columns(pl.int_range(pl.len(), dtype=pl.Int64).over("_row").alias("_sentence"))
        .filter(pl.col("n_contexts") > 0)  # without passages grounding does not apply
        .join(passages, on="_row", how="left", maintain_order="left")
        .with_columns(
            strip_citation_markers(pl.col("sentence")).str.strip_chars().alias("claim"),
            cited.list.set_intersection(pl.int_ranges(1, pl.col("n_contexts") + 1))
            .list.unique(maintain_order=True).alias("_cited"),
        )
    )
    folded = fold_phrases(abstention_phrases)
    sentences = sentences.with_columns(**support.claim_units(pl.col("claim"), pl.col("lang")))
    sentences = sentences.with_columns(
        claims.claim_given(pl.col("claim"), pl.col("_question_stems"),
                           pl.col("_question_numbers"), folded,
                           units=(pl.col("cs"), pl.col("cn"))).alias("_is_claim")
    )
    found = sentences.filter("_is_claim").with_columns(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("_claim"),
        pl.col("contexts").list.join("\n").alias("_all"),
        pl.when(pl.col("_cited").list.len() > 0).then(
            pl.col("contexts").list.gather(pl.col("_cited") - 1).list.join("\n")
        ).alias("_cited_text"),
    )
    units = ["_claim_text", "cs", "cn", "cd", "names"]
    first = support.claim_support(
        found.select("_row", "claim", "question", "lang", *units,
                     pl.coalesce("_cited_text", "_all").alias("evidence")),
        tau_lex=tau_lex,
    )
    found = pl.concat([found, first], how="horizontal")
    found = _cosine_fallback(found, embedder, tau_sim, frame.height)
    again = found.filter(~pl.col("stated") & pl.col("_cited_text").is_not_null()
                         & (pl.col("_cited_text") != pl.col("_all")))
    second = support.claim_support(
        again.select("_row", "claim", "question", "lang", *units,
                     pl.col("_all").alias("evidence")),
        tau_lex=tau_lex,
    ).select(pl.col("stated").alias("stated_all"), pl.col("reasons").alias("reasons_all"))
    found = found.join(
        pl.concat([again.select("_claim"), second], how="horizontal"), on="_claim", how="left",
        maintain_order="left",
    ).with_columns(
        (pl.col("stated") | pl.col("stated_all").fill_null(False)).alias("supported"),
        (pl.col("stated_all").fill_null(False)
         | (pl.col("stated") & (cited.list.len() > 0) & (pl.col("_cited").list.len() == 0))
         ).alias("misattributed"),
        pl.coalesce("reasons_all", "reasons").alias("reasons"),
    )
    found = found.join(_stating_passage(found), on="_claim", how="left", maintain_order="left")
    return _claim_totals(rows, found)


def _cosine_fallback(found: pl.DataFrame, embedder: Embedder, tau_sim: float, rows: int
                     ) -> pl.DataFrame:
    """A cited claim whose anchors are in its cited passages but too few of its words is
    stated when ``cosine(claim, cited passages) >= tau_sim`` (rule 2's second way, as in the
    version of the rule that read cited sentences only)."""
    needs = (pl.col("anchored") & ~pl.col("lexical")
             & ~pl.col("claim").str.contains(f"[{evidence.CHARACTER_SCRIPTS}]")
             & ~support.is_record(pl.coalesce("_cited_text", "_all")))
    mask = found.select(needs).to_series().to_numpy()
    if not mask.any():
        return found
    chosen = found.filter(mask).with_columns(pl.coalesce("_cited_text", "_all").alias("_text"))
    cosine = np.full(found.height, np.nan)
    cosine[mask] = embedder.paired_dots(chosen["claim"], chosen["_text"], rows=rows,
                                        label="grounding")
    series = pl.Series("_cosine", cosine, dtype=pl.Float64).fill_nan(None)
    close = (series >= tau_sim).fill_null(False)
    return found.with_columns(
        (pl.col("stated") | close).alias("stated"),
        pl.when(close).then(pl.lit([], pl.List(pl.String))).when(series.is_not_null()).then(
            pl.col("reasons").list.concat(pl.concat_list(
                pl.format("cosine {} < {}", series.round(2), pl.lit(tau_sim))))
        ).otherwise(pl.col("reasons")).alias("reasons"),
    )


def _stating_passage(found: pl.DataFrame) -> pl.DataFrame:
    """``_claim`` and ``supported_by``: for a supported claim, its first cited passage when
    the cited passages state it, else the passage holding most of its stems."""
    cited = found.filter(pl.col("stated")).select(
        "_claim", pl.col("_cited").list.first().cast(pl.Int64).alias("supported_by")
    ).drop_nulls()
    rest = found.filter(pl.col("supported")).join(cited, on="_claim", how="anti")
    if rest.is_empty():
        return cited
    each = rest.select(
        "_claim", claims.stems(claims.readable(pl.col("claim"))).alias("cs"),
        pl.col("contexts").alias("passage"),
        pl.int_ranges(1, pl.col("contexts").list.len() + 1).alias("supported_by"),
    ).explode("passage", "supported_by").with_columns(
        claims.stems(claims.readable(pl.col("passage").fill_null(""))).list.set_intersection(
            "cs").list.len().alias("_shared")
    )
    best = each.sort("_claim", "_shared", "supported_by", descending=[False, True, False]
                     ).group_by("_claim", maintain_order=True).first()
    return pl.concat([cited, best.select("_claim", pl.col("supported_by").cast(pl.Int64))])


def _claim_totals(rows: pl.DataFrame, found: pl.DataFrame) -> pl.DataFrame:
    """One row per input row: the counts and lists of :func:`claim_counts`."""
    per_row = found.sort("_row", "_sentence").group_by("_row", maintain_order=True).agg(
        pl.len().alias("n_sentences"),
        pl.col("supported").sum().alias("n_supported"),
        pl.col("misattributed").sum().alias("n_misattributed"),
        pl.col("sentence").filter(~pl.col("supported")).first().str.strip_chars()
        .alias("first_unsupported"),
        pl.format('"{}" — {}', pl.col("sentence").str.strip_chars(),
                  pl.col("reasons").list.join("; ")).filter(~pl.col("supported"))
        .alias("unsupported"),
        pl.col("supported_by"),
    )
    with_passages = pl.col("n_contexts") > 0
    return rows.join(per_row, on="_row", how="left", maintain_order="left").select(
        pl.col("n_sentences").fill_null(0).cast(pl.Int64),
        pl.col("n_supported").fill_null(0).cast(pl.Int64),
        pl.col("first_unsupported").cast(pl.String),
        pl.when(with_passages).then(pl.col("unsupported").fill_null([]))
        .cast(UNSUPPORTED_DTYPE).alias("unsupported"),
        pl.when(with_passages).then(pl.col("n_misattributed").fill_null(0)).cast(pl.Int64)
        .alias("n_misattributed"),
        pl.when(with_passages).then(pl.col("supported_by").fill_null([]))
        .cast(pl.List(pl.Int64)).alias("supported_by"),
    )


def _validity_reasons(abstention_phrases: Sequence[str]) -> pl.Expr:
    """Why a sentence cannot be supported whatever its passage says (rules 1 and 2): no
    citation, several passages, a passage that does not exist, an abstention (all that hold)."""
    cited = parse_citation_markers(pl.col("sentence"))
    n_cited = cited.list.len()
    first = cited.list.first()
    return pl.concat_list(
        pl.when(n_cited == 0).then(pl.lit("no citation")),
        pl.when(n_cited > 1).then(pl.format("cites {} passages; one is needed", n_cited)),
        pl.when((n_cited == 1) & ~first.is_between(1, pl.col("n_contexts"))).then(
            pl.format("cites passage [{}], which does not exist ({} passages)",
                      first, pl.col("n_contexts"))
        ),
        pl.when(fold(pl.col("sentence")).str.contains_any(fold_phrases(abstention_phrases)))
        .then(pl.lit("abstention")),
    ).list.drop_nulls()


def _cosines(pairs: pl.DataFrame, embedder: Embedder, rows: int) -> np.ndarray:
    """``cosine(claim, passage)`` of every pair (all passages present)."""
    return embedder.paired_dots(pairs["claim"], pairs["passage"], rows=rows, label="grounding")


def _cosine_rule(pairs: pl.DataFrame, embedder: Embedder, tau_sim: float, rows: int
                 ) -> pl.DataFrame:
    """The core RAG tool's decision: ``cosine(claim, passage) >= tau_sim``.

    Only claims and the passages they cite are embedded: a passage no eligible sentence cites
    is never encoded (rows x passages would be several times the text).
    """
    present = pairs.filter(pl.col("passage").is_not_null())
    _warn_unseen_scripts(present)
    cosine = pl.Series("cosine", _cosines(present, embedder, rows), dtype=pl.Float64)
    decided = present.select("_row", "_sentence").with_columns(
        (cosine >= tau_sim).alias("supported"),
        pl.concat_list(pl.format("low similarity: cosine {} < {}", cosine.round(2),
                                 pl.lit(tau_sim))).alias("evidence"),
    )
    return _with_empty_passages(pairs, decided)


def _warn_unseen_scripts(pairs: pl.DataFrame) -> None:
    """Warn (once per process) when the cosine rule judges Han, kana or Thai sentences: with
    the built-in English models it is close to chance there (docs/grounding.md)."""
    n = pairs.select(pl.col("claim").str.contains(f"[{evidence.CHARACTER_SCRIPTS}]").sum()).item()
    if n and not _WARNED:
        _WARNED.append(True)
        logger.warning(
            "grounding rule cosine: %d sentence(s) in Han, kana or Thai script judged by their "
            "cosine with the passage; with an English model this rule is close to chance there "
            "(accuracy 0.58 on Chinese claims with minilm; rule evidence: 0.997; "
            "docs/grounding.md)", n,
        )


#: Whether :func:`_warn_unseen_scripts` has warned in this process.
_WARNED: list[bool] = []


def _with_empty_passages(pairs: pl.DataFrame, decided: pl.DataFrame) -> pl.DataFrame:
    """``decided`` plus the pairs whose cited passage is null: unsupported, with that reason."""
    missing = pairs.filter(pl.col("passage").is_null()).select(
        "_row", "_sentence", pl.lit(False).alias("supported"),
        pl.concat_list(pl.lit("the cited passage is empty")).alias("evidence"),
    )
    decided = decided.with_columns(
        pl.when(~pl.col("supported")).then(pl.col("evidence"))
        .otherwise(pl.lit([], pl.List(pl.String))).alias("evidence")
    )
    return pl.concat([decided, missing])


def n_contexts(contexts: pl.Expr) -> pl.Expr:
    """Passages retrieved for the row: the length of ``contexts``, 0 when it is null (Int64).

    >>> pl.DataFrame({"c": [["p1", "p2"], [], None]}, schema={"c": pl.List(pl.String)}).select(
    ...     n_contexts(pl.col("c")))["c"].to_list()
    [2, 0, 0]
    """
    return contexts.list.len().fill_null(0).cast(pl.Int64)


def overlap(
    n_supported: pl.Expr, n_sentences: pl.Expr, n_contexts: pl.Expr | None = None
) -> pl.Expr:
    """Share of supported sentences, ``n_supported / n_sentences``; 0.0 with no sentences.

    With ``n_contexts``, null where it is 0 (no passage: grounding does not apply); without it,
    such rows score like any other (the core RAG tool's rule).

    >>> pl.select(overlap(pl.lit(1), pl.lit(4)), overlap(pl.lit(0), pl.lit(0)).alias("e")).row(0)
    (0.25, 0.0)
    >>> pl.select(overlap(pl.lit(0), pl.lit(2), pl.lit(0))).item() is None
    True
    """
    ratio = safe_div(n_supported, n_sentences, empty=0.0)
    if n_contexts is None:
        return ratio
    return pl.when(n_contexts > 0).then(ratio)


def faithfulness(
    overlap: pl.Expr, abstained: pl.Expr, answerable: pl.Expr, empty: pl.Expr | None = None
) -> pl.Expr:
    """The core RAG tool's proxy ``min(1, 0.6 + 0.4 * overlap)``, except 0.0 where the response
    gives no answer although the question is answerable: it abstains (``abstained == 1``) or,
    with ``empty``, it is empty (``empty == 1``, :func:`pipeline.metrics.qa.abstention.
    empty_response`).

    0.6 is a baseline, not a finding: an answer none of whose sentences is supported still
    scores 0.6; ``overlap``, the share of supported sentences, is what moves it. On an
    unanswerable question (``answerable`` false) an abstention or an empty response is not
    penalized: it keeps ``0.6 + 0.4 * overlap`` (0.6, since an abstaining sentence is never
    supported). A null ``overlap`` (no passage) gives null, also for an abstaining or empty
    response.

    >>> pl.select(faithfulness(pl.lit(0.5), pl.lit(0), pl.lit(True))).item()
    0.8
    >>> pl.select(faithfulness(pl.lit(0.5), pl.lit(1), pl.lit(True))).item()
    0.0
    >>> pl.select(faithfulness(pl.lit(0.0), pl.lit(1), pl.lit(False))).item()
    0.6
    >>> pl.select(faithfulness(pl.lit(0.0), pl.lit(0), pl.lit(True), pl.lit(1))).item()
    0.0
    """
    silent = abstained.cast(pl.Int8) == 1
    if empty is not None:
        silent = silent | (empty.cast(pl.Int8) == 1)
    refuses = silent & answerable
    return (
        pl.when(overlap.is_null())
        .then(pl.lit(None, dtype=pl.Float64))
        .when(refuses.fill_null(False))
        .then(pl.lit(0.0, dtype=pl.Float64))
        .otherwise((0.6 + 0.4 * overlap.cast(pl.Float64)).clip(upper_bound=1.0))
    )


def claim_faithfulness(n_supported: pl.Expr, n_claims: pl.Expr, n_contexts: pl.Expr) -> pl.Expr:
    """The share of supported claims, RAGAS's faithfulness: null without passages (grounding
    does not apply) or without claims (nothing asserted: an abstention, an empty response).

    >>> pl.select(claim_faithfulness(pl.lit(1), pl.lit(4), pl.lit(2)),
    ...           claim_faithfulness(pl.lit(0), pl.lit(0), pl.lit(2)).alias("none")).row(0)
    (0.25, None)
    """
    return pl.when((n_contexts > 0) & (n_claims > 0)).then(
        n_supported.cast(pl.Float64) / n_claims.cast(pl.Float64)
    )


def hallucination(n_supported: pl.Expr, n_claims: pl.Expr, n_contexts: pl.Expr) -> pl.Expr:
    """1 when some claim is unsupported, 0 when none is (also with no claim), null without
    passages (Int8): the response-level label of RAGTruth.

    >>> pl.select(hallucination(pl.lit(1), pl.lit(2), pl.lit(1)),
    ...           hallucination(pl.lit(0), pl.lit(0), pl.lit(0)).alias("none")).row(0)
    (1, None)
    """
    return pl.when(n_contexts > 0).then((n_supported < n_claims).cast(pl.Int8))
