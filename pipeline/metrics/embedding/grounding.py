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
from pipeline.metrics.common import safe_div
from pipeline.metrics.qa.abstention import fold, fold_phrases
from pipeline.metrics.qa.citation import parse_citation_markers, strip_citation_markers
from pipeline.text import evidence
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
    ['"It has 9 million people [1]." — number 9 not in the passage']
    """
    if rule not in GROUNDING_RULES:
        raise ValueError(f"grounding rule {rule!r} is unknown: use one of {GROUNDING_RULES}")
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
    if rule == "cosine":
        decided = _cosine_rule(pairs, embedder, tau_sim, frame.height)
    else:
        decided = _evidence_rule(pairs, embedder, tau_sim, tau_lex, frame.height)
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
        )
    )


#: Every unsupported sentence of a row, as written (markers kept), with all its reasons:
#: ``'"Tampa is in Florida [2]." — cites passage [2], which does not exist (1 passages)'``.
UNSUPPORTED_DTYPE = pl.List(pl.String())


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


def _evidence_rule(pairs: pl.DataFrame, embedder: Embedder, tau_sim: float, tau_lex: float,
                   rows: int) -> pl.DataFrame:
    """The default decision: every anchor of the claim (number, named entity, content
    character bigram) is in the passage or the question, and either ``coverage >= tau_lex``
    or ``cosine(claim, passage) >= tau_sim``. Only the claims whose decision hangs on the
    cosine (anchors found, coverage below ``tau_lex``) are embedded."""
    present = pairs.filter(pl.col("passage").is_not_null())
    facts = claim_evidence(present)
    anchored = (facts["missing_numbers"].list.len() == 0) & (
        facts["missing_entities"].list.len() == 0
    ) & (facts["missing_characters"].list.len() == 0)
    lexical = facts["coverage"] >= tau_lex
    says_something = present["claim"].str.contains(r"[\p{L}\p{N}]")
    anchored = anchored & says_something
    needs_cosine = (anchored & ~lexical).to_numpy()
    cosine = np.full(present.height, np.nan)
    cosine[needs_cosine] = _cosines(present.filter(needs_cosine), embedder, rows)
    cosine_series = pl.Series("cosine", cosine, dtype=pl.Float64).fill_nan(None)
    supported = anchored & (lexical | (cosine_series >= tau_sim).fill_null(False))
    decided = present.select("_row", "_sentence").with_columns(
        supported.alias("supported"),
        pl.concat_list(
            facts["missing_numbers"].to_frame().select(
                pl.first().list.eval(pl.format("number {} not in the passage", pl.element()))
            ).to_series(),
            facts["missing_entities"].to_frame().select(
                pl.first().list.eval(pl.format('"{}" not in the passage', pl.element()))
            ).to_series(),
            facts["missing_characters"].to_frame().select(
                pl.first().list.eval(pl.format('"{}" not in the passage', pl.element()))
            ).to_series(),
            pl.when(~says_something).then(pl.lit(["the sentence has no words to support"]))
            .otherwise(pl.lit([], pl.List(pl.String))),
            pl.when(cosine_series.is_not_null() & (cosine_series < tau_sim)).then(
                pl.concat_list(pl.format(
                    "low similarity: {}% of its words in the passage (< {}%), cosine {} < {}",
                    (facts["coverage"] * 100).round(0).cast(pl.Int64),
                    pl.lit(round(tau_lex * 100)), cosine_series.round(2), pl.lit(tau_sim),
                ))
            ).otherwise(pl.lit([], pl.List(pl.String))),
        ).alias("evidence"),
    )
    return _with_empty_passages(pairs, decided)


def claim_evidence(pairs: pl.DataFrame) -> pl.DataFrame:
    """The lexical evidence of each (``claim``, ``passage``, ``question``) row of ``pairs``
    (:mod:`pipeline.text.evidence`), one output row per input row, in order:

    * ``missing_numbers``: the claim's numbers found neither in the passage nor the question;
    * ``missing_entities``: its capitalized runs with a content word found in neither;
    * ``missing_characters``: runs of adjacent content bigrams (Han, kana, Thai) found in
      neither, as the characters they span;
    * ``coverage``: the share of the claim's *new* units (content words, character bigrams
      and numbers not in the question) found in the passage; of all its units when none is
      new; 1.0 when it has none.

    >>> pairs = pl.DataFrame({"claim": ["The game was in Tampa, Florida in 2021.",
    ...                                 "香港第五任行政长官：梁振英。"],
    ...                       "passage": ["Played in Glendale, Arizona in 2021.",
    ...                                   "第五任行政长官林郑月娥"],
    ...                       "question": ["Where was the game?", "香港第五任行政长官？"]})
    >>> claim_evidence(pairs).rows()
    [([], ['Tampa, Florida'], [], 0.3333333333333333), ([], [], ['梁振英'], 0.0)]
    """
    question = pl.col("question").fill_null("")
    # A passage or question is cited by several sentences: each distinct text is read once.
    texts = pl.concat([pairs.select(pl.col("passage").alias("text")),
                       pairs.select(question.alias("text"))]).unique()
    read = texts.select(
        "text", evidence.words(pl.col("text")).alias("w"),
        evidence.numbers(pl.col("text")).alias("n"),
    )
    units = pairs.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("_pair"),
        evidence.content_words(pl.col("claim")).alias("cw"),
        evidence.numbers(pl.col("claim")).list.unique(maintain_order=True).alias("cn"),
        pl.col("passage"), question.alias("question"),
    ).join(read.rename({"text": "passage", "w": "pw", "n": "pn"}), on="passage", how="left",
           maintain_order="left"
    ).join(read.rename({"text": "question", "w": "qw", "n": "qn"}), on="question", how="left",
           maintain_order="left").drop("passage", "question")
    bigrams = _bigrams(pairs)
    units = units.join(
        bigrams.group_by("_pair").agg(pl.col("bigram").unique(maintain_order=True).alias("cb")),
        on="_pair", how="left", maintain_order="left",
    ).with_columns(pl.col("cb").fill_null(pl.lit([], pl.List(pl.String))))
    # Bigrams are searched only in the texts of claims that have some (a null text finds none).
    with_bigrams = pl.col("cb").list.len() > 0
    empty = pl.lit([], pl.List(pl.String))
    passage_text = pl.when(with_bigrams).then(pairs["passage"].str.to_lowercase())
    question_text = pl.when(with_bigrams).then(
        pairs["question"].fill_null("").str.to_lowercase()
    )
    # Per kind of unit (words, bigrams, numbers): the claim's units, those new to the question,
    # those of them missing from the passage, and all its units found in the passage.
    found = units.select(
        "_pair",
        pl.col("cw").list.set_difference("qw").alias("w_new"),
        pl.col("cn").list.set_difference("qn").alias("n_new"),
        pl.col("cb").list.set_difference(
            evidence.found(question_text, pl.col("cb")).fill_null(empty)
        ).alias("b_new"),
        pl.col("cw").list.set_intersection("pw").list.len().alias("w_all"),
        pl.col("cn").list.set_intersection("pn").list.len().alias("n_all"),
        evidence.found(passage_text, pl.col("cb")).fill_null(empty).alias("b_found"),
        (pl.col("cw").list.len() + pl.col("cb").list.len() + pl.col("cn").list.len())
        .alias("n_units"),
        "pw", "pn",
    ).with_columns(
        pl.col("w_new").list.set_difference("pw").alias("_miss_w"),
        pl.col("n_new").list.set_difference("pn").alias("missing_numbers"),
        pl.col("b_new").list.set_difference("b_found").alias("_miss_b"),
    )
    n_new = pl.sum_horizontal(pl.col(c).list.len() for c in ("w_new", "n_new", "b_new"))
    n_missing = pl.sum_horizontal(
        pl.col(c).list.len() for c in ("_miss_w", "missing_numbers", "_miss_b")
    )
    n_all_found = pl.col("w_all") + pl.col("n_all") + pl.col("b_found").list.len()
    coverage = (
        pl.when(n_new > 0).then((n_new - n_missing) / n_new)
        .when(pl.col("n_units") > 0).then(n_all_found / pl.col("n_units"))
        .otherwise(1.0)
    )
    found = found.with_columns(coverage.cast(pl.Float64).alias("coverage"))
    return (
        found.select("_pair", "missing_numbers", "coverage")
        .join(_missing_entities(pairs, found), on="_pair", how="left", maintain_order="left")
        .join(_missing_characters(bigrams, found), on="_pair", how="left",
              maintain_order="left")
        .select(
            "missing_numbers",
            pl.col("missing_entities").fill_null(pl.lit([], pl.List(pl.String))),
            pl.col("missing_characters").fill_null(pl.lit([], pl.List(pl.String))),
            "coverage",
        )
    )


def _bigrams(pairs: pl.DataFrame) -> pl.DataFrame:
    """One row per character bigram of each claim: ``_pair``, ``_run``, ``_offset``, ``bigram``
    (a one-character run is its own unit)."""
    runs = pairs.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("_pair"),
        evidence.character_runs(pl.col("claim").str.to_lowercase()).alias("run"),
    ).with_columns(pl.int_ranges(0, pl.col("run").list.len()).alias("_run"))
    runs = runs.explode("run", "_run").drop_nulls("run")
    return runs.with_columns(
        pl.int_ranges(0, (pl.col("run").str.len_chars() - 1).clip(lower_bound=1)).alias("_offset")
    ).explode("_offset").select(
        "_pair", "_run", "_offset", "run",
        pl.col("run").str.slice(pl.col("_offset"), 2).alias("bigram"),
    )


def _missing_entities(pairs: pl.DataFrame, found: pl.DataFrame) -> pl.DataFrame:
    """``_pair`` and ``missing_entities``: the entities with a content word not found."""
    spans = pairs.select(
        pl.int_range(pl.len(), dtype=pl.Int64).alias("_pair"),
        evidence.entities(pl.col("claim")).alias("entity"),
    ).with_columns(pl.int_ranges(0, pl.col("entity").list.len()).alias("_entity"))
    spans = spans.explode("entity", "_entity").drop_nulls("entity")
    return (
        spans.join(found.select("_pair", "_miss_w"), on="_pair", how="inner")
        .filter(evidence.content_words(pl.col("entity")).list.set_intersection("_miss_w")
                .list.len() > 0)
        .group_by("_pair")
        .agg(pl.col("entity").sort_by("_entity").unique(maintain_order=True)
             .alias("missing_entities"))
    )


def _missing_characters(bigrams: pl.DataFrame, found: pl.DataFrame) -> pl.DataFrame:
    """``_pair`` and ``missing_characters``: runs of adjacent anchor bigrams not found, as the
    characters they cover (``梁振`` + ``振英`` -> ``梁振英``)."""
    missing = found.select("_pair", pl.col("_miss_b").alias("bigram")).explode("bigram")
    hits = (
        bigrams.join(missing.drop_nulls(), on=["_pair", "bigram"], how="semi")
        .filter(evidence.bigram_anchor(pl.col("bigram")))
        .sort("_pair", "_run", "_offset")
    )
    block = pl.col("_offset") - pl.int_range(pl.len()).over("_pair", "_run")
    return (
        hits.with_columns(block.alias("_block"))
        .group_by("_pair", "_run", "_block")
        .agg(pl.col("run").first(), pl.col("_offset").min().alias("start"),
             pl.col("_offset").max().alias("end"))
        .with_columns(
            pl.col("run").str.slice(pl.col("start"), pl.col("end") - pl.col("start") + 2)
            .alias("span")
        )
        .sort("_pair", "_run", "start")
        .group_by("_pair", maintain_order=True)
        .agg(pl.col("span").unique(maintain_order=True).alias("missing_characters"))
    )


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
