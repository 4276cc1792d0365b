"""Registry entries of the text-comparison families: lexical, relevance, semantic, grounding.

Every metric compares ``_response`` (the response without citation markers, unless configured
otherwise) with the ``reference`` (only the primary reference: ``references`` alternatives are
used by the answer metrics alone), with the ``question``, or, for grounding, the raw response's
sentences with the passages they cite.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from pipeline.metrics.embedding import grounding, semantic
from pipeline.metrics.lexical import bleu, framework_tfidf, keywords, numeric, rouge, tfidf
from pipeline.metrics.qa import abstention
from pipeline.metrics.spec import NEEDS_EMBEDDER, NEEDS_IDF, Inputs, MetricSpec, count
from pipeline.rules.files import STOPWORDS_FILE, SYNONYMS_FILE
from pipeline.text.numbers import as_digits
from pipeline.text.tokenize import punctuation_deleted_words

#: Intermediate column holding the compared response text.
RESPONSE = "_response"

#: Intermediate struct of the ROUGE-1/2 overlaps, the LCS length and the token counts (compiled
#: kernels from the texts, one call a batch).
_ROUGE_STATS = "_rouge_statistics"
#: Intermediate struct of the BLEU match counts of every order and the token counts (compiled
#: kernels from the texts, one call a batch).
_BLEU_MATCHES = "_bleu_matches"
_KEYWORDS = ("_response_keywords", "_reference_keywords", "_question_keywords")
_GROUNDING = "_grounding"


#: The intermediate groups :func:`intermediates` knows (names a spec may list in ``needs``).
INTERMEDIATE_GROUPS: frozenset[str] = frozenset(
    {"_rouge_tokens", "_bleu_tokens", "_keywords", "_grounding"}
)


def intermediates(inputs: Inputs, needed: set[str], response: pl.Expr) -> dict[str, pl.Expr]:
    """Token lists and frame-level results shared by several metrics of these families."""
    columns: dict[str, pl.Expr] = {}
    stem = inputs.config.rouge_stemmer
    if "_rouge_tokens" in needed:
        if inputs.config.compat_preset == "enhanced-framework":  # its ROUGE's words
            columns[_ROUGE_STATS] = rouge.rouge_token_statistics(
                punctuation_deleted_words(response), punctuation_deleted_words(pl.col("reference"))
            )
        else:
            columns[_ROUGE_STATS] = rouge.rouge_text_statistics(
                response, pl.col("reference"), inputs.config.rouge_tokenizer, pl.col("lang"), stem
            )
    if "_bleu_tokens" in needed:
        columns[_BLEU_MATCHES] = bleu.text_statistics(
            response, pl.col("reference"), inputs.config.bleu_tokenize, pl.col("lang")
        )
    if "_keywords" in needed:
        config = inputs.config
        stopwords = keywords.load_stopwords(
            config.stopwords_file, bundled=config.bundled(STOPWORDS_FILE)
        )
        phrases = _synonyms(inputs).phrases
        extract = keywords.framework_keywords if _framework_keywords(inputs) else keywords.keywords
        sources = {_KEYWORDS[0]: response, _KEYWORDS[1]: pl.col("reference"),
                   _KEYWORDS[2]: pl.col("question")}
        if not _framework_keywords(inputs):
            # Numbers as written ("1,642 metres" = "1642 m"), where words are spaced: the
            # character bigrams of Chinese or Japanese read numbers as written already.
            spaced = ~pl.col("lang").fill_null("en").is_in(["zh", "ja", "ko", "th"])
            sources = {name: pl.when(spaced).then(as_digits(text, pl.col("lang")))
                       .otherwise(text) for name, text in sources.items()}
        columns.update(
            (name, extract(text, stopwords=stopwords, phrases=phrases))
            for name, text in sources.items()
        )
    if "_grounding" in needed:
        columns[_GROUNDING] = _grounding_counts(inputs)
    return columns


def _framework_keywords(inputs: Inputs) -> bool:
    """Under the enhanced-framework preset the keyword metrics key texts, and find keywords, as
    that framework does (WordNet; :mod:`pipeline.metrics.lexical.keywords`)."""
    return inputs.config.compat_preset == "enhanced-framework"


def _tfidf_relevance(inputs: Inputs) -> pl.Expr:
    """TF-IDF relevance with the run's document frequencies; under the enhanced-framework
    preset, that framework's vectorizer fitted on its fixed corpus
    (:mod:`pipeline.metrics.lexical.framework_tfidf`), which needs no corpus statistics."""
    if inputs.config.compat_preset == "enhanced-framework":
        return framework_tfidf.framework_tfidf_relevance(pl.col("question"), pl.col(RESPONSE))
    return tfidf.tfidf_relevance(pl.col("question"), pl.col(RESPONSE), inputs.require_idf())


def _synonyms(inputs: Inputs) -> keywords.SynonymTable:
    """The synonym groups of the config: its file, else the preset's or the bundled one."""
    config = inputs.config
    return keywords.load_synonym_table(
        config.synonyms_file, bundled=config.bundled(SYNONYMS_FILE),
        lemmatizer="wordnet" if _framework_keywords(inputs) else "simplemma",
    )


def _without_keywords(inputs: Inputs) -> float:
    """The keyword scores of a reference (question) without keywords: nothing to cover, 1.0;
    the enhanced text evaluation framework's 0.0 under its preset."""
    return 0.0 if _framework_keywords(inputs) else 1.0


def _grounding_counts(inputs: Inputs) -> pl.Expr:
    embedder = inputs.require_embedder()
    config = inputs.config

    def run(batch: pl.Series) -> pl.Series:
        counts = grounding.grounding_counts(
            batch.struct.unnest(), embedder, rule=config.grounding_rule,
            tau_sim=config.tau_sim, tau_lex=config.tau_lex,
            abstention_phrases=config.abstention_phrases,
        )
        return counts.to_struct(_GROUNDING)

    dtype = pl.Struct({"n_sentences": pl.Int64(), "n_supported": pl.Int64(),
                       "first_unsupported": pl.String(),
                       "unsupported": grounding.UNSUPPORTED_DTYPE,
                       "n_misattributed": pl.Int64(), "supported_by": pl.List(pl.Int64())})
    return pl.struct("response", "contexts", "question", "lang").map_batches(
        run, return_dtype=dtype
    )


def _embedding_cosine(
    fn: Callable[..., pl.Series], left: str, right: str
) -> Callable[[Inputs], pl.Expr]:
    def build(inputs: Inputs) -> pl.Expr:
        embedder = inputs.require_embedder()

        def run(batch: pl.Series) -> pl.Series:
            pair = batch.struct.unnest()
            return fn(pair[left], pair[right], embedder)

        return pl.struct(pl.col(left), pl.col(right)).map_batches(run, return_dtype=pl.Float64)

    return build


def _semantic_relevance(inputs: Inputs) -> pl.Expr:
    """The question-response cosine; clamped to ``[0, 1]`` under the enhanced-framework preset,
    whose ``similarity`` clamps every cosine it returns."""
    cosine = _embedding_cosine(semantic.semantic_relevance, "question", RESPONSE)(inputs)
    return cosine.clip(0.0, 1.0) if inputs.config.compat_preset == "enhanced-framework" else cosine


def _col(name: str) -> Callable[[Inputs], pl.Expr]:
    return lambda _: pl.col(name)


def _rouge_counts(n: int) -> list[MetricSpec]:
    names = (f"rouge_{n}_overlap", f"rouge_{n}_pred", f"rouge_{n}_ref")
    what = (f"matching {n}-grams (clipped)", f"{n}-grams in the response",
            f"{n}-grams in the reference")

    def part(index: int) -> Callable[[Inputs], pl.Expr]:
        field = (f"overlap_{n}", "n_pred", "n_ref")[index]
        if index == 0:  # the overlap, from the shared kernel's struct
            return lambda _: pl.col(_ROUGE_STATS).struct.field(field)
        return lambda _: rouge.ngram_total(pl.col(_ROUGE_STATS).struct.field(field), n)

    return [
        count(name, "lexical", part(i), f"ROUGE-{n} sufficient statistic: {text}.",
              needs=("_rouge_tokens",))
        for i, (name, text) in enumerate(zip(names, what, strict=True))
    ]


def _rouge_f(name: str, overlap: str, n_pred: str, n_ref: str, label: str) -> MetricSpec:
    return MetricSpec(
        name, "lexical",
        lambda _: rouge.rouge_fmeasure(pl.col(overlap), pl.col(n_pred), pl.col(n_ref)),
        pl.Float64(),
        f"{label} F-measure, equal to rouge-score (use_stemmer per config; [lexical] "
        "rouge_tokenizer: auto reads non-Latin rows with the unicode tokenizer; preset "
        "enhanced-framework: on its punctuation-deleted words).",
        needs=(overlap, n_pred, n_ref),
    )


#: Output column of each BLEU sufficient statistic: ``bleu_matches_1`` ... ``bleu_ref_len``.
_BLEU_STATS = {f"bleu_{key}": key for key in bleu.statistic_names()}


def _bleu_stat(key: str) -> Callable[[Inputs], pl.Expr]:
    return lambda _: bleu.statistics_from_struct(pl.col(_BLEU_MATCHES))[key]


def _sentence_bleu(_: Inputs) -> pl.Expr:
    return bleu.sentence_bleu({key: pl.col(name) for name, key in _BLEU_STATS.items()})


def _answerable(inputs: Inputs) -> pl.Expr:
    """Not ``unanswerable`` (the one rule, :func:`pipeline.metrics.registry.unanswerable_rule`);
    under a compat preset also not an insufficient-context row, as faithfulness always had it."""
    unanswerable = pl.col("unanswerable") == 1
    if inputs.config.compat_preset is not None:
        token = inputs.config.insufficient_context_reference
        unanswerable = unanswerable | abstention.is_reference(pl.col("reference"), token)
    return ~unanswerable


def _faithfulness(inputs: Inputs) -> pl.Expr:
    """The share of supported claims (RAGAS's definition), null without passages or claims;
    under the core RAG tool's preset its proxy ``min(1, 0.6 + 0.4 overlap)``, 0.0 when the
    response abstains on an answerable question, as that tool does."""
    if inputs.config.compat_preset != "core-rag":
        return grounding.claim_faithfulness(
            pl.col("n_supported"), pl.col("n_sentences"), pl.col("n_contexts")
        )
    return grounding.faithfulness(pl.col("overlap"), pl.col("abstained"), _answerable(inputs))


def _overlap(inputs: Inputs) -> pl.Expr:
    """Null on rows without passages, except under the core RAG tool's preset."""
    applicable = None if inputs.config.compat_preset == "core-rag" else pl.col("n_contexts")
    return grounding.overlap(pl.col("n_supported"), pl.col("n_sentences"), applicable)


SPECS: tuple[MetricSpec, ...] = (
    *_rouge_counts(1),
    *_rouge_counts(2),
    count("rouge_l_lcs", "lexical",
          lambda _: pl.col(_ROUGE_STATS).struct.field("lcs"),
          "ROUGE-L sufficient statistic: longest common subsequence of the token lists.",
          needs=("_rouge_tokens",)),
    _rouge_f("rouge_1", "rouge_1_overlap", "rouge_1_pred", "rouge_1_ref", "ROUGE-1"),
    _rouge_f("rouge_2", "rouge_2_overlap", "rouge_2_pred", "rouge_2_ref", "ROUGE-2"),
    _rouge_f("rouge_l", "rouge_l_lcs", "rouge_1_pred", "rouge_1_ref", "ROUGE-L"),
    *(
        count(name, "lexical", _bleu_stat(key),
              "BLEU sufficient statistic (sacreBLEU tokens of [lexical] bleu_tokenize) for "
              "corpus BLEU in SQL.",
              needs=("_bleu_tokens",))
        for name, key in _BLEU_STATS.items()
    ),
    MetricSpec(
        "bleu", "lexical", _sentence_bleu,
        pl.Float64(),
        "sacrebleu.sentence_bleu(response, [reference]).score / 100 (exp smoothing, effective "
        "order; tokenizer [lexical] bleu_tokenize: auto is zh on Chinese rows, char on "
        "Japanese, Korean and Thai, 13a otherwise).",
        needs=tuple(_BLEU_STATS),
    ),
    MetricSpec(
        "bleu_textbook", "lexical",
        lambda _: bleu.textbook_bleu(pl.col(RESPONSE), pl.col("reference")),
        pl.Float64(),
        "Uniform 1-4-gram BLEU with brevity penalty, zero precisions replaced by 0.0001.",
    ),
    MetricSpec(
        "bleu_matched_orders", "lexical",
        lambda _: bleu.matched_orders_bleu(pl.col(RESPONSE), pl.col("reference")),
        pl.Float64(),
        "BLEU over the matching orders: geometric mean of the 1..k-gram precisions (k the "
        "highest order with a match), case-sensitive whitespace tokens, brevity penalty.",
    ),
    MetricSpec(
        "numeric_accuracy", "lexical",
        lambda inputs: numeric.numeric_accuracy(
            pl.col(RESPONSE), pl.col("reference"), pl.col("lang"),
            written=inputs.config.compat_preset != "enhanced-framework",  # its digits alone
        ),
        pl.Float64(), "Share of the reference's numbers found in the response (1.0 if none).",
    ),
    MetricSpec(
        "content_coverage", "lexical",
        lambda inputs: keywords.content_coverage(
            pl.col(_KEYWORDS[0]), pl.col(_KEYWORDS[1]), _synonyms(inputs),
            wordnet=_framework_keywords(inputs), empty=_without_keywords(inputs),
        ),
        pl.Float64(),
        "Share of reference keywords (lemmatized, stopwords removed, synonyms) in the response.",
        needs=("_keywords",),
    ),
    MetricSpec(
        "keyword_overlap", "relevance",
        lambda inputs: keywords.keyword_overlap(
            pl.col(_KEYWORDS[2]), pl.col(_KEYWORDS[0]), _synonyms(inputs),
            wordnet=_framework_keywords(inputs), empty=_without_keywords(inputs),
            wordnet_limit=keywords.FRAMEWORK_SYNONYM_LIMIT,
        ),
        pl.Float64(), "Share of question keywords found in the response (content_coverage rules).",
        needs=("_keywords",),
    ),
    MetricSpec(
        "tfidf_relevance", "relevance", _tfidf_relevance, pl.Float64(),
        "Cosine of question and response TF-IDF vectors; idf over the run's distinct texts "
        "(preset enhanced-framework: over its fixed corpus).",
        # Under the enhanced-framework preset the idf is the fixed corpus's: the engines ask
        # pipeline.scoring.needs_corpus, which then skips the first pass.
        needs=(NEEDS_IDF,),
    ),
    MetricSpec(
        "semantic_relevance", "relevance", _semantic_relevance, pl.Float64(),
        "Cosine of question and response sentence embeddings (not clamped; preset "
        "enhanced-framework: clamped to [0, 1]).",
        needs=(NEEDS_EMBEDDER,), lower=-1.0,
    ),
    MetricSpec(
        "semantic_similarity", "semantic",
        _embedding_cosine(semantic.semantic_similarity, RESPONSE, "reference"),
        pl.Float64(), "Cosine of response and reference sentence embeddings, clamped to [0, 1].",
        needs=(NEEDS_EMBEDDER,),
    ),
    count("n_sentences", "grounding", lambda _: pl.col(_GROUNDING).struct.field("n_sentences"),
          "Claims judged: the response's sentences that assert something (rule evidence: not "
          "a header, greeting, abstention or restated question; rule cosine: every sentence).",
          needs=("_grounding", NEEDS_EMBEDDER)),
    count("n_supported", "grounding", lambda _: pl.col(_GROUNDING).struct.field("n_supported"),
          "Claims a passage of the row supports (rule evidence: the cited passages, else any; "
          "its numbers, names, record facts and content characters are there and its words "
          "match; rule cosine: its one cited passage, cosine >= tau_sim). docs/grounding.md.",
          needs=("_grounding", NEEDS_EMBEDDER)),
    MetricSpec(
        "first_unsupported", "grounding",
        lambda _: pl.col(_GROUNDING).struct.field("first_unsupported"), pl.String(),
        "The first response sentence (as written) that no cited passage supports; null when "
        "every sentence is supported or the row has no passages. For reading failures.",
        needs=("_grounding", NEEDS_EMBEDDER), lower=None, upper=None, higher_is_better=None,
        nullable=True,
    ),
    MetricSpec(
        "unsupported_sentences", "grounding",
        lambda _: pl.col(_GROUNDING).struct.field("unsupported"), grounding.UNSUPPORTED_DTYPE,
        "Every unsupported response sentence, as written, with all its reasons ('\"...\" — "
        "no citation; abstention'); empty when all are supported, null without passages.",
        needs=("_grounding", NEEDS_EMBEDDER), lower=None, upper=None, higher_is_better=None,
        nullable=True,
    ),
    count("n_contexts", "grounding", lambda _: grounding.n_contexts(pl.col("contexts")),
          "Passages retrieved for the row (0 when contexts is null or empty).", needs=()),
    MetricSpec(
        "overlap", "grounding", _overlap, pl.Float64(),
        "Supported sentences / all sentences (0.0 for an empty response); null without "
        "passages (preset core-rag: 0.0).",
        needs=("n_supported", "n_sentences", "n_contexts"), nullable=True,
    ),
    MetricSpec(
        "faithfulness", "grounding", _faithfulness, pl.Float64(),
        "Supported claims / claims (RAGAS's definition: 0 for a wholly unsupported answer, 1 "
        "for a wholly supported one); null without passages or without claims (an abstention, "
        "an empty response). Preset core-rag: min(1, 0.6 + 0.4 overlap), 0.0 for an "
        "abstention on an answerable question. docs/grounding.md.",
        needs=("overlap", "abstained", "unanswerable", "n_supported", "n_sentences",
               "n_contexts"), nullable=True,
    ),
    MetricSpec(
        "hallucination", "grounding",
        lambda _: grounding.hallucination(pl.col("n_supported"), pl.col("n_sentences"),
                                          pl.col("n_contexts")),
        pl.Int8(),
        "1 when at least one claim of the response is supported by no passage (what RAGTruth "
        "labels), 0 when every claim is; null without passages. docs/grounding.md.",
        needs=("n_supported", "n_sentences", "n_contexts"), nullable=True,
        higher_is_better=False, kind="flag",
    ),
    count("n_misattributed", "citation",
          lambda _: pl.col(_GROUNDING).struct.field("n_misattributed").fill_null(0),
          "Claims supported by the row's passages but not by the passages they cite: a "
          "citation error, not a hallucination (rule evidence; 0 under rule cosine).",
          needs=("_grounding", NEEDS_EMBEDDER)),
)

