"""Run configuration: read once at the edge (CLI flags or a TOML file) into a frozen object.

Metrics never read the environment or files; they receive the values they need as keyword
arguments from :class:`Config`, and the composite rule files as typed objects
(:attr:`Config.rules`, read by :mod:`pipeline.rules`). :meth:`Config.signature` renders the
settings that change scores so every score row records how it was computed.

This module sits on the bottom floor: it imports from ``pipeline`` only the version, the record
schema, :mod:`pipeline.rules` and its own parts below it (docs/architecture.md):
:mod:`pipeline.config_error` (:class:`ConfigError`, :func:`did_you_mean`),
:mod:`pipeline.config_user_metrics` (:class:`UserMetricDef`) and :mod:`pipeline.config_file`
(the TOML tables read into keyword values), whose public names it re-exports.
"""

from __future__ import annotations

import hashlib
import math
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from functools import cache, cached_property
from importlib.metadata import version
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pipeline import __version__

# Defined in the modules below this one and re-exported: every name stays importable from here.
from pipeline.config_error import ConfigError as ConfigError
from pipeline.config_error import did_you_mean as did_you_mean
from pipeline.config_file import parse_tables, toml_like
from pipeline.config_user_metrics import METRIC_NAME as METRIC_NAME
from pipeline.config_user_metrics import USER_METRIC_KINDS as USER_METRIC_KINDS
from pipeline.config_user_metrics import UserMetricDef as UserMetricDef
from pipeline.rules import RuleFileError, RuleSet, load_rules
from pipeline.rules.files import (
    STOPWORDS_FILE,
    SYNONYMS_FILE,
    WORDNET_EXCEPTIONS_FILE,
    WORDNET_SENSES_FILE,
    bundled_file,
    files_digest,
    read_bytes,
)
from pipeline.rules.rgb import (
    DEFAULT_ERROR_KEYWORDS,
    DEFAULT_PRIMARY_REJECTIONS,
    DEFAULT_SECONDARY_REJECTIONS,
    RGB_APP_ERROR_KEYWORDS,
    RGB_APP_PRIMARY_REJECTIONS,
    RGB_APP_SECONDARY_REJECTIONS,
)
from pipeline.schema import RECORD_SCHEMA

#: Phrases whose presence marks a response as an abstention (matched case-insensitively after
#: folding curly quotes and collapsing whitespace; see ``pipeline.metrics.qa.abstention``).
ENGLISH_ABSTENTION_PHRASES: tuple[str, ...] = (
    "i don't know",
    "i do not know",
    "i don't have enough information",
    "i do not have enough information",
    "not enough information",
    "insufficient context",
    "insufficient information",
    "it is not mentioned in the document",
    "not mentioned in the document",
    "not mentioned in the provided",
    "the document does not mention",
    "the documents do not mention",
    "the context does not provide",
    "the provided context does not",
    "i can not answer the question because of the insufficient information in documents",
    "i cannot answer the question because of the insufficient information in documents",
    "i cannot answer",
    "i can't answer",
    "i can not answer",
    "unable to answer",
    "cannot be determined from",
    "no answer found",
)
#: Chinese abstention phrases (Simplified, then Traditional); RGB's own instruction asks for
#: "文档信息不足，因此我无法基于提供的文档回答该问题。".
CHINESE_ABSTENTION_PHRASES: tuple[str, ...] = (
    "我不知道",
    "不知道答案",
    "无法回答",
    "不能回答",
    "无法基于提供的文档回答",
    "无法根据提供的",
    "信息不足",
    "没有足够的信息",
    "没有提到",
    "没有提及",
    "未提及",
    "没有相关信息",
    "找不到相关信息",
    "無法回答",
    "資訊不足",
    "沒有提到",
    "沒有足夠的資訊",
)
#: The default list: English and Chinese. A compat preset left at it uses the English phrases
#: alone, as the tool it reproduces did.
DEFAULT_ABSTENTION_PHRASES: tuple[str, ...] = (
    ENGLISH_ABSTENTION_PHRASES + CHINESE_ABSTENTION_PHRASES
)

#: Version of the refusal rule set (``pipeline.text.refusals``); in the signature when it is on.
ABSTENTION_RULES_VERSION = "refusals-v1"

#: Reference text that marks a question as unanswerable from its contexts.
DEFAULT_ABSTENTION_REFERENCE = "It is not mentioned in the document."
#: Reference text of rows that test whether a model detects insufficient context.
DEFAULT_INSUFFICIENT_CONTEXT_REFERENCE = "insufficient context"
#: ``question_type`` values that mark a question as unanswerable.
DEFAULT_UNANSWERABLE_TYPES: tuple[str, ...] = ("impossible", "unanswerable")

#: Embedding backend used for semantic and grounding metrics (see ``pipeline.embed``).
DEFAULT_EMBEDDING_BACKEND = "minilm"
#: Built-in embedding backends (see ``pipeline.embed.specs.backend_from_spec``).
EMBEDDING_BACKENDS: tuple[str, ...] = ("minilm", "minilm-f32", "static", "hashed")
#: The embedding backend of preset ``enhanced-framework`` when ``[embedding] backend`` is left
#: at its default: the float32 model its semantic scores come from (docs/compat.md).
ENHANCED_FRAMEWORK_EMBEDDING_BACKEND = "minilm-f32"
SENTENCE_TRANSFORMERS_PREFIX = "sentence-transformers:"
#: Most texts per inference batch of the embedding model.
DEFAULT_EMBEDDING_BATCH_SIZE = 256
#: Most padded tokens (texts x longest text) per inference batch.
DEFAULT_EMBEDDING_BATCH_TOKENS = 8192
#: ``[embedding] device``: ``auto`` uses CUDA when onnxruntime has it and a GPU is visible.
EMBEDDING_DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")
#: Minimum cosine between a sentence and its cited passage for the sentence to be supported
#: (calibrated for all-MiniLM-L6-v2).
DEFAULT_TAU_SIM = 0.65
#: Answer EM/F1 rules (docs/metrics.md): ``auto`` (SQuAD v2 on English and Latin-script rows,
#: the official MLQA v1 rules of the row's language elsewhere), ``squad-v2`` or ``mlqa``.
ANSWER_SCORERS: tuple[str, ...] = ("auto", "squad-v2", "mlqa")
#: sacreBLEU tokenizers of BLEU; ``auto``: ``zh`` for Chinese rows, ``char`` for Japanese,
#: Korean and Thai, ``13a`` otherwise.
BLEU_TOKENIZERS: tuple[str, ...] = ("auto", "13a", "intl", "zh", "char", "none")
#: ROUGE tokenizers; ``auto``: rouge-score's on Latin-script rows, ``unicode`` on the others.
ROUGE_TOKENIZERS: tuple[str, ...] = ("auto", "rouge-score", "unicode")
#: What each multilingual setting is under a compat preset left at its default: the replaced
#: tools' own (English) rules, so their numbers stay theirs on every row.
PRESET_TEXT_RULES = {"answer_scorer": "squad-v2", "bleu_tokenize": "13a",
                     "rouge_tokenizer": "rouge-score"}

#: Grounding decisions (docs/grounding.md): ``evidence`` (the default: the claim's numbers,
#: entities and content characters are in its cited passage, and its words or its embedding
#: match it) or ``cosine`` (the core RAG tool's: cosine of claim and whole passage >= tau_sim).
GROUNDING_RULES: tuple[str, ...] = ("evidence", "cosine")
DEFAULT_GROUNDING_RULE = "evidence"
#: Rule ``evidence``: least share of a claim's new content words found in its passage for the
#: words alone to support it (below it, the cosine decides).
DEFAULT_TAU_LEX = 0.5
#: ``[retrieval] k``: the cut-offs of precision/recall/hit/nDCG at k (docs/retrieval.md).
DEFAULT_RETRIEVAL_K: tuple[int, ...] = (1, 3, 5, 10)
#: The largest cut-off ``[retrieval] k`` takes.
MAX_RETRIEVAL_K = 1000
#: Version of the ``evidence`` rule in the signature (its units and checks, docs/grounding.md).
GROUNDING_RULE_VERSION = "v2"
#: The same threshold calibrated for the ``static`` backend, its default: the τ whose decisions
#: agree best with MiniLM's at 0.65 on generated claim/passage pairs (docs/embeddings.md).
STATIC_TAU_SIM = 0.74
#: Default ``tau_sim`` of each backend that has its own (others use :data:`DEFAULT_TAU_SIM`).
BACKEND_TAU_SIM: Mapping[str, float] = MappingProxyType({"static": STATIC_TAU_SIM})


#: RGB answer-matching modes (see ``docs/rgb.md``): lenient normalized matching, normalized
#: equality, or the published benchmark script's rules.
RGB_MODES: tuple[str, ...] = ("flexible", "strict", "official")
DEFAULT_RGB_MODE = "flexible"


@cache
def _installed_version(package: str) -> str:
    """The installed version of ``package``, read once a process: each read parses its
    metadata (4 ms), and the signature is written once a batch."""
    return version(package)


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/rag-eval`` (``~/.cache/rag-eval`` by default).

    Read here, at the configuration edge; metrics never look at the environment.
    """
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rag-eval"


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/rag-eval/embeddings`` (``~/.cache/rag-eval/embeddings`` by default)."""
    return cache_root() / "embeddings"


#: Environment variable that turns the view templates off when set to ``0``.
VIEW_TEMPLATES_ENV = "RAG_EVAL_VIEW_TEMPLATES"


def view_templates_dir() -> Path | None:
    """``$XDG_CACHE_HOME/rag-eval/views``, where built view databases are kept as templates
    (:mod:`pipeline.view_templates`); None when ``RAG_EVAL_VIEW_TEMPLATES`` is ``0``, so that
    every build binds its views."""
    if os.environ.get(VIEW_TEMPLATES_ENV, "").strip() == "0":
        return None
    return cache_root() / "views"


#: Presets that reproduce a replaced tool number for number (docs/compat.md): the tool's phrase
#: lists, thresholds and formulas where they differ from the defaults. ``None``: the defaults.
COMPAT_PRESETS: tuple[str, ...] = (
    "enhanced-framework", "rgb-app", "hotpot-gen", "intellidocu", "core-rag",
)

#: The TOML name of each multilingual setting, for messages.
_SETTING_NAMES = {"answer_scorer": "[answer] scorer", "bleu_tokenize": "[lexical] bleu_tokenize",
                  "rouge_tokenizer": "[lexical] rouge_tokenizer"}


#: Columns an input file can be labelled with on the command line (``--model``, ``--run-label``).
LABEL_COLUMNS: tuple[str, ...] = ("model", "run")


@dataclass(frozen=True)
class Config:
    """Everything that changes how records are read or scored.

    ``columns`` maps a canonical column name to the name used in the input files
    (``{"response": "answer"}``; ``[columns]`` and ``--column``); unmapped columns are read under
    their canonical names or a known layout's name (:mod:`pipeline.io.columns`). Several
    canonical columns may read one file column (``{"id": "question"}`` with
    ``{"question": "question"}``). ``input_labels`` gives the ``model`` or ``run`` of the rows
    of one input file, by the path as given (``--input PATH --model NAME``); neither changes a
    score, so neither is in the signature.
    ``metrics`` limits a run to the named metrics or families (``None``: all).
    """

    columns: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: ``[columns] keep``: the inputs' other columns (no canonical column reads them: a user's
    #: ``label``) carried into ``texts.parquet``; None (left out) keeps every one, ``()`` none.
    #: Not in the signature: it changes no score.
    keep_columns: tuple[str, ...] | None = None
    #: Input path (as given) -> {column: value} for the columns of :data:`LABEL_COLUMNS`.
    input_labels: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    abstention_phrases: tuple[str, ...] = DEFAULT_ABSTENTION_PHRASES
    abstention_reference: str = DEFAULT_ABSTENTION_REFERENCE
    #: ``[abstention] rules``: read refusals by meaning (``pipeline.text.refusals``) besides the
    #: phrases; ``None`` is on, off under a compat preset (its tool matched phrases only).
    abstention_rules: bool | None = None
    insufficient_context_reference: str = DEFAULT_INSUFFICIENT_CONTEXT_REFERENCE
    unanswerable_types: tuple[str, ...] = DEFAULT_UNANSWERABLE_TYPES
    metrics: tuple[str, ...] | None = None
    #: Remove ``[n]`` citation markers from the response before answer, lexical and semantic
    #: metrics (EM, F1, ROUGE, BLEU, similarity).
    strip_citation_markers: bool = True
    #: ROUGE with the Porter stemmer (``rouge-score``'s ``use_stemmer=True``).
    rouge_stemmer: bool = False
    #: ``[answer] scorer`` (:data:`ANSWER_SCORERS`); "" is ``auto`` (a preset: ``squad-v2``).
    answer_scorer: str = ""
    #: ``[lexical] bleu_tokenize`` (:data:`BLEU_TOKENIZERS`); "" is ``auto`` (a preset: ``13a``).
    bleu_tokenize: str = ""
    #: ``[lexical] rouge_tokenizer`` (:data:`ROUGE_TOKENIZERS`); "" is ``auto`` (a preset:
    #: ``rouge-score``).
    rouge_tokenizer: str = ""
    #: ``minilm`` (default), ``hashed`` or ``sentence-transformers:<name or local path>``; left
    #: out (""), ``minilm``, or ``minilm-f32`` under preset ``enhanced-framework``: a backend
    #: given explicitly, ``minilm`` included, beats the preset's.
    embedding_backend: str = ""
    embedding_batch_size: int = DEFAULT_EMBEDDING_BATCH_SIZE
    embedding_batch_tokens: int = DEFAULT_EMBEDDING_BATCH_TOKENS
    #: ``auto`` (CUDA when available), ``cpu`` or ``cuda``; never part of the signature (CPU
    #: and GPU vectors agree within float error).
    embedding_device: str = "auto"
    #: Where embeddings are cached on disk; None keeps them in memory for this process only.
    embedding_cache_dir: Path | None = None
    #: Store cached vectors as float16 (half the disk; cosines move by < 1e-3).
    embedding_cache_float16: bool = False
    #: Grounding threshold: cosine(sentence, cited passage) >= tau_sim supports a sentence.
    #: Left out (NaN), it is the backend's calibrated default (:data:`BACKEND_TAU_SIM`).
    tau_sim: float = math.nan
    #: ``evidence`` or ``cosine`` (:data:`GROUNDING_RULES`); left out (""), ``evidence``, or
    #: ``cosine`` under preset ``core-rag``.
    grounding_rule: str = ""
    #: Rule ``evidence``: least share of new content words in the passage (:data:`DEFAULT_TAU_LEX`).
    tau_lex: float = DEFAULT_TAU_LEX
    #: ``[retrieval] k``: cut-offs of the ``*_at_{k}`` retrieval measures, ascending.
    retrieval_k: tuple[int, ...] = DEFAULT_RETRIEVAL_K
    #: Replacement stopword list and synonym table for keyword metrics (None: bundled files).
    stopwords_file: Path | None = None
    synonyms_file: Path | None = None
    #: Replacement rule files of the composite families (None: ``pipeline/data/*.toml``).
    quality_rules_file: Path | None = None
    safety_rules_file: Path | None = None
    relevance_rules_file: Path | None = None
    overall_rules_file: Path | None = None
    #: RGB suite: answer-matching mode and the phrase lists of the lenient checks.
    rgb_mode: str = DEFAULT_RGB_MODE
    rgb_primary_rejections: tuple[str, ...] = DEFAULT_PRIMARY_REJECTIONS
    rgb_secondary_rejections: tuple[str, ...] = DEFAULT_SECONDARY_REJECTIONS
    rgb_error_keywords: tuple[str, ...] = DEFAULT_ERROR_KEYWORDS
    #: ``[compat] preset``: one of :data:`COMPAT_PRESETS`, or None for the defaults.
    compat_preset: str | None = None
    #: User-defined metrics: ``[metrics.NAME]`` tables and the loaded plug-ins' functions
    #: (:mod:`pipeline.metrics.user`).
    user_metrics: tuple[UserMetricDef, ...] = ()
    #: Plug-in modules to import for their ``@pipeline.metric`` functions (``[plugins] modules``
    #: and ``--plugin``).
    plugins: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        unknown = sorted(set(self.columns) - set(RECORD_SCHEMA))
        if unknown:
            raise ConfigError(
                f"the column mapping ([columns] or --column) names unknown canonical column(s) "
                f"{unknown}{did_you_mean(unknown[0], RECORD_SCHEMA)}; known: "
                f"{', '.join(RECORD_SCHEMA)}"
            )
        empty = sorted(name for name, source in self.columns.items() if not source)
        if empty:
            raise ConfigError(f"the column mapping gives no file column for {empty}")
        self._check_labels()
        # A preset replaces the settings left out, never one given: "left out" is the default
        # object itself (a list read from a file is another object, even when equal to it).
        if self.compat_preset and self.abstention_phrases is DEFAULT_ABSTENTION_PHRASES:
            object.__setattr__(self, "abstention_phrases", ENGLISH_ABSTENTION_PHRASES)
        if self.abstention_rules is None:
            object.__setattr__(self, "abstention_rules", self.compat_preset is None)
        if not self.abstention_phrases or any(not p.strip() for p in self.abstention_phrases):
            raise ConfigError("[abstention] phrases must be a non-empty list of non-empty strings")
        if not self.embedding_backend:
            backend = (ENHANCED_FRAMEWORK_EMBEDDING_BACKEND
                       if self.compat_preset == "enhanced-framework"
                       else DEFAULT_EMBEDDING_BACKEND)
            object.__setattr__(self, "embedding_backend", backend)
        if math.isnan(self.tau_sim):
            object.__setattr__(
                self, "tau_sim", BACKEND_TAU_SIM.get(self.embedding_backend, DEFAULT_TAU_SIM)
            )
        if not (math.isfinite(self.tau_sim) and -1.0 <= self.tau_sim <= 1.0):
            raise ConfigError(f"[grounding] tau_sim must be in [-1, 1], got {self.tau_sim}")
        for name, allowed in (("answer_scorer", ANSWER_SCORERS),
                              ("bleu_tokenize", BLEU_TOKENIZERS),
                              ("rouge_tokenizer", ROUGE_TOKENIZERS)):
            if not getattr(self, name):
                default = PRESET_TEXT_RULES[name] if self.compat_preset else "auto"
                object.__setattr__(self, name, default)
            if getattr(self, name) not in allowed:
                raise ConfigError(
                    f"{_SETTING_NAMES[name]} {getattr(self, name)!r} is unknown: use one of "
                    f"{', '.join(allowed)}"
                )
        if not self.grounding_rule:
            rule = "cosine" if self.compat_preset == "core-rag" else DEFAULT_GROUNDING_RULE
            object.__setattr__(self, "grounding_rule", rule)
        if self.grounding_rule not in GROUNDING_RULES:
            raise ConfigError(
                f"[grounding] rule {self.grounding_rule!r} is unknown: use one of "
                f"{', '.join(GROUNDING_RULES)}"
            )
        if not (math.isfinite(self.tau_lex) and 0.0 <= self.tau_lex <= 1.0):
            raise ConfigError(f"[grounding] tau_lex must be in [0, 1], got {self.tau_lex}")
        if not self.retrieval_k or any(
            isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_RETRIEVAL_K
            for k in self.retrieval_k
        ):
            raise ConfigError(
                f"[retrieval] k must be a non-empty list of integers from 1 to "
                f"{MAX_RETRIEVAL_K}, got {list(self.retrieval_k)}"
            )
        object.__setattr__(self, "retrieval_k", tuple(sorted(set(self.retrieval_k))))
        if self.embedding_batch_size < 1:
            raise ConfigError("[embedding] batch_size must be a positive integer")
        if self.embedding_batch_tokens < 256:
            raise ConfigError("[embedding] batch_tokens must be at least 256")
        if self.embedding_device not in EMBEDDING_DEVICES:
            raise ConfigError(
                f"[embedding] device {self.embedding_device!r} is unknown: use one of "
                f"{', '.join(EMBEDDING_DEVICES)}"
            )
        backend = self.embedding_backend
        if backend not in EMBEDDING_BACKENDS and not (
            backend.startswith(SENTENCE_TRANSFORMERS_PREFIX)
            and backend[len(SENTENCE_TRANSFORMERS_PREFIX):].strip()
        ):
            raise ConfigError(
                f"[embedding] backend {backend!r} is unknown: use one of "
                f"{', '.join(EMBEDDING_BACKENDS)} or '{SENTENCE_TRANSFORMERS_PREFIX}<name or path>'"
            )
        if self.compat_preset is not None and self.compat_preset not in COMPAT_PRESETS:
            raise ConfigError(
                f"[compat] preset {self.compat_preset!r} is unknown: use one of "
                f"{', '.join(COMPAT_PRESETS)}"
            )
        if self.compat_preset == "rgb-app":
            self._use_rgb_app_lists()
        if self.rgb_mode not in RGB_MODES:
            raise ConfigError(
                f"[rgb] mode {self.rgb_mode!r} is unknown: use one of {', '.join(RGB_MODES)}"
            )
        for key, phrases in (
            ("primary_rejections", self.rgb_primary_rejections),
            ("secondary_rejections", self.rgb_secondary_rejections),
            ("error_keywords", self.rgb_error_keywords),
        ):
            if any(not p.strip() for p in phrases):
                raise ConfigError(f"[rgb] {key} must not contain empty strings")
        names = [d.name for d in self.user_metrics]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ConfigError(f"user-defined metric(s) {twice} defined twice")
        object.__setattr__(self, "user_metrics", tuple(self.user_metrics))
        object.__setattr__(self, "plugins", tuple(self.plugins))
        if self.keep_columns is not None:
            object.__setattr__(self, "keep_columns", tuple(self.keep_columns))
        object.__setattr__(self, "columns", MappingProxyType(dict(self.columns)))
        object.__setattr__(self, "input_labels", MappingProxyType(
            {path: MappingProxyType(dict(labels)) for path, labels in self.input_labels.items()}
        ))

    def _check_labels(self) -> None:
        for path, labels in self.input_labels.items():
            unknown = sorted(set(labels) - set(LABEL_COLUMNS))
            if unknown:
                raise ConfigError(
                    f"{path}: cannot label the column(s) {unknown} per input; "
                    f"labels: {', '.join(LABEL_COLUMNS)}"
                )
            for column, value in labels.items():
                if not isinstance(value, str) or not value.strip():
                    raise ConfigError(f"{path}: the {column} label must be a non-empty text")

    def _use_rgb_app_lists(self) -> None:
        """Preset ``rgb-app``: the RGB lists left out become the app's own (lists set in
        ``[rgb]`` are kept, even when equal to the defaults); the signature's RGB digest then
        names the app's lists."""
        for name, default, app in (
            ("rgb_primary_rejections", DEFAULT_PRIMARY_REJECTIONS, RGB_APP_PRIMARY_REJECTIONS),
            ("rgb_secondary_rejections", DEFAULT_SECONDARY_REJECTIONS,
             RGB_APP_SECONDARY_REJECTIONS),
            ("rgb_error_keywords", DEFAULT_ERROR_KEYWORDS, RGB_APP_ERROR_KEYWORDS),
        ):
            if getattr(self, name) is default:  # left out (see __post_init__)
                object.__setattr__(self, name, app)

    def __getstate__(self) -> dict[str, Any]:
        """Pickle support (a run's config travels to distributed workers, which read the rule
        files again on first use: the loaded rules are not pickled)."""
        state = {**self.__dict__, "columns": dict(self.columns),
                 "input_labels": {k: dict(v) for k, v in self.input_labels.items()}}
        state.pop("rules", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        labels = state.get("input_labels", {})
        self.__dict__.update({
            **state, "columns": MappingProxyType(dict(state["columns"])),
            "input_labels": MappingProxyType(
                {k: MappingProxyType(dict(v)) for k, v in labels.items()}
            ),
        })

    @cached_property
    def rules(self) -> RuleSet:
        """The composite rule files, read and checked once per config (and parsed once per
        content in the process); ``ValueError`` naming the file and the key when malformed."""
        return load_rules(self.quality_rules_file, self.safety_rules_file,
                          self.relevance_rules_file, self.overall_rules_file,
                          preset=self.compat_preset)

    def bundled(self, name: str) -> str:
        """The bundled data file (``pipeline/data/``) that stands for ``name`` under this
        config's compat preset: ``synonyms.tsv`` is ``enhanced-framework.synonyms.tsv`` under
        that preset (docs/compat.md)."""
        return bundled_file(name, self.compat_preset)

    def with_metrics(self, metrics: tuple[str, ...] | None) -> Config:
        """A copy restricted to ``metrics`` (names or families)."""
        return replace(self, metrics=metrics)

    def signature(self) -> str:
        """A compact, stable description of the scoring settings and package version.

        Example: ``rag-eval|v:0.1.0|norm:squad-v2|abst:3f2a9c1e|absref:It is not ...``.
        Column mappings and metric selection do not change any score, so they are left out.
        """
        phrases = "\n".join(self.abstention_phrases).encode()
        digest = hashlib.sha256(phrases).hexdigest()[:8]
        return (
            f"rag-eval|v:{__version__}|norm:{self.answer_scorer}|"
            f"markers:{'strip' if self.strip_citation_markers else 'keep'}|cite:set|"
            f"abst:{ABSTENTION_RULES_VERSION + '+' if self.abstention_rules else ''}"
            f"{len(self.abstention_phrases)}-{digest}|"
            f"absref:{self.abstention_reference}|icref:{self.insufficient_context_reference}|"
            f"unans:{','.join(self.unanswerable_types)}|"
            f"rouge:{'stem' if self.rouge_stemmer else 'nostem'}"
            f"{'' if self.rouge_tokenizer == 'rouge-score' else '-' + self.rouge_tokenizer}|"
            f"bleu:{self.bleu_tokenize}-exp-eff|"
            f"kw:{self.keyword_digest()}|tfidf:{self.tfidf_mode()}|"
            f"emb:{self.embedding_backend}|tau:{self.tau_sim:g}|{self.grounding_signature()}"
            f"comp:{self.composite_digest()}|"
            f"rgb:{self.rgb_mode}-{self.rgb_phrase_digest()}"
            + (f"|compat:{self.compat_preset}" if self.compat_preset else "")
            + "".join(f"|{d.signature_part()}" for d in self.selected_user_metrics())
        )

    def selected_user_metrics(self) -> tuple[UserMetricDef, ...]:
        """The user-defined metrics this config's selection scores (every one without a
        selection or when it names the family ``user``), sorted by name."""
        chosen = self.user_metrics
        if self.metrics is not None and "user" not in self.metrics:
            names = {name.strip() for name in self.metrics}
            chosen = tuple(d for d in chosen if d.name in names)
        return tuple(sorted(chosen, key=lambda d: d.name))

    def grounding_signature(self) -> str:
        """The grounding rule's part of the signature, ``|`` included: ``ground:evidence-v2|
        lex:0.5|`` for the default rule, nothing for ``cosine`` (whose decision ``tau``
        already describes, so the core RAG tool's signature is unchanged)."""
        if self.grounding_rule == "cosine":
            return ""
        return f"ground:{self.grounding_rule}-{GROUNDING_RULE_VERSION}|lex:{self.tau_lex:g}|"

    def tfidf_mode(self) -> str:
        """What ``tfidf_relevance``'s idf comes from: the run's distinct texts, or under the
        enhanced-framework preset that framework's fixed eight-document corpus (docs/compat.md).
        """
        if self.compat_preset == "enhanced-framework":
            return "framework-fixed-corpus"
        return "corpus-distinct"

    def rgb_phrase_digest(self) -> str:
        """Short digest of the RGB rejection phrases and error keywords."""
        lists = (self.rgb_primary_rejections, self.rgb_secondary_rejections,
                 self.rgb_error_keywords)
        text = "\0".join("\n".join(phrases) for phrases in lists)
        return hashlib.sha256(text.encode()).hexdigest()[:8]

    def composite_digest(self) -> str:
        """Short digest of the bytes of the quality, safety, relevance and overall rule files
        behind :attr:`rules`."""
        return self.rules.digest

    def keyword_digest(self) -> str:
        """Short digest of what fixes the keyword lists: the bytes of the stopword and synonym
        files and the lemmatizer's version (the lists themselves are built only by runs that
        use them; building the synonym table loads simplemma's dictionary, 0.2 s). Under the
        enhanced-framework preset, its keyword rule and the bytes of the WordNet tables it
        reads instead of simplemma (docs/compat.md)."""
        files = [(self.stopwords_file, self.bundled(STOPWORDS_FILE)),
                 (self.synonyms_file, self.bundled(SYNONYMS_FILE))]
        prefix = f"simplemma {_installed_version('simplemma')}"
        if self.compat_preset == "enhanced-framework":
            files += [(None, WORDNET_SENSES_FILE), (None, WORDNET_EXCEPTIONS_FILE)]
            prefix = "enhanced-framework keywords: wordnet 3.0, nltk 3.8.1 morphy"
        return files_digest(
            (read_bytes(path, bundled)[0] for path, bundled in files), prefix=prefix.encode()
        )


_SECTIONS = {"columns", "abstention", "answer", "metrics", "lexical", "keywords", "embedding",
             "grounding", "composite", "rgb", "compat", "plugins", "retrieval"}


#: How errors name a config given as TOML text or as a dict (whose relative paths are taken
#: from the current directory).
TEXT_CONFIG = "config (TOML text)"
DICT_CONFIG = "config (dict)"


def load_config(
    path: str | Path | None = None, *, text: str | None = None,
    data: Mapping[str, Any] | None = None, **overrides: Any,
) -> Config:
    """Read a TOML config file, TOML ``text`` or a ``data`` dict of the same tables (defaults
    when none is given) and apply keyword overrides. All three are checked by the same rules,
    with the same errors; a dict's errors name its section and key (``[abstention] phrases``).

    File layout::

        [columns]                 # canonical = "name in your files"
        response = "answer"
        keep = ["label"]          # other columns carried into texts.parquet (left out: all)

        [abstention]
        phrases = ["i don't know", "insufficient context"]
        reference = "It is not mentioned in the document."
        insufficient_context_reference = "insufficient context"
        unanswerable_types = ["impossible"]

        [answer]
        strip_citation_markers = true   # score "Paris [1]" as "Paris"
        scorer = "auto"            # or "squad-v2", "mlqa" (auto: SQuAD v2 on Latin rows, else MLQA)

        [metrics]
        select = ["answer", "citation_f1"]

        [lexical]
        rouge_stemmer = false      # true matches rouge-score's use_stemmer=True
        rouge_tokenizer = "auto"   # or "rouge-score", "unicode" (auto: unicode on non-Latin rows)
        bleu_tokenize = "auto"     # or "13a", "intl", "zh", "char", "none" (sacreBLEU's)

        [keywords]                 # replace the bundled lists (paths relative to this file)
        stopwords = "my_stopwords.txt"
        synonyms = "my_synonyms.tsv"

        [embedding]
        backend = "minilm"         # or "static", "hashed", "sentence-transformers:<name or path>"
        device = "auto"            # or "cpu", "cuda" (onnxruntime's CUDAExecutionProvider)
        batch_size = 256           # most texts per inference batch
        batch_tokens = 8192        # most padded tokens per inference batch
        cache_dir = "~/.cache/rag-eval/embeddings"
        cache_float16 = false      # store cached vectors as float16

        [grounding]
        tau_sim = 0.65             # default: the backend's calibrated value
        rule = "evidence"          # or "cosine" (the core RAG tool's; preset core-rag)
        tau_lex = 0.5              # rule evidence: share of new content words in the passage

        [retrieval]                # with context_ids / relevant_ids (docs/retrieval.md)
        k = [1, 3, 5, 10]          # cut-offs of precision/recall/hit/ndcg_at_{k}

        [rgb]                      # RGB robustness suite (docs/rgb.md)
        mode = "flexible"          # or "strict", or "official" (the benchmark script's rules)
        primary_rejections = ["insufficient information in documents", "cannot answer"]
        secondary_rejections = ["i don't know", "not mentioned"]
        error_keywords = ["incorrect", "wrong", "factual errors"]

        [composite]                # replace the rule files of the composite families
        quality = "my_quality.toml"
        safety = "my_safety.toml"
        relevance = "my_relevance.toml"
        overall = "my_overall.toml"

        [compat]                   # reproduce a replaced tool exactly (docs/compat.md)
        preset = "rgb-app"         # or "enhanced-framework", "hotpot-gen", "intellidocu",
                                   # "core-rag"

    A ``columns`` override (``--column``) is merged into the file's ``[columns]``, replacing the
    mapping of the canonical columns it names.

    Without a file (or without ``[embedding] cache_dir``) the embedding cache lives in
    :func:`default_cache_dir`; pass ``embedding_cache_dir=None`` explicitly for no disk cache.
    """
    values: dict[str, Any] = {"embedding_cache_dir": default_cache_dir()}
    if sum(given is not None for given in (path, text, data)) > 1:
        raise ConfigError("give a config file, TOML text or a dict, not several")
    if text is not None:
        path = Path(TEXT_CONFIG)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    elif data is not None:
        path = Path(DICT_CONFIG)
        data = toml_like(data, path)
    elif path is not None:
        path = Path(path)
        try:
            data = tomllib.loads(path.read_bytes().decode("utf-8"))
        except FileNotFoundError as exc:
            raise ConfigError(f"config file not found: {path}") from exc
        except IsADirectoryError as exc:
            raise ConfigError(f"{path}: is a directory, not a config file") from exc
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the config file: {exc.strerror}") from exc
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); TOML is UTF-8") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    if data is not None and path is not None:
        for name in sorted(set(data) - _SECTIONS):
            what = f"section [{name}]" if isinstance(data[name], dict) else f"key {name!r}"
            raise ConfigError(
                f"{path}: unknown {what}{did_you_mean(name, _SECTIONS)}; the config holds the "
                f"sections {', '.join(sorted(_SECTIONS))}"
            )
        values.update(parse_tables(data, path))
    columns = overrides.pop("columns", None)
    if columns:  # --column entries replace the file's mapping of the same canonical columns
        values["columns"] = {**values.get("columns", {}), **columns}
    values.update({k: v for k, v in overrides.items() if v is not None})
    known = {f.name for f in fields(Config)}
    bad = sorted(set(values) - known)
    if bad:
        raise ConfigError(f"unknown config option(s) {bad}")
    config = Config(**values)
    try:  # the rule files are read here, once, so a malformed one fails before any work
        config.rules  # noqa: B018
    except RuleFileError as exc:
        raise ConfigError(str(exc)) from exc
    return config
