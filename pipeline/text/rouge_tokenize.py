"""The tokenizer of Google's ``rouge-score`` package as a polars expression.

Reference: ``rouge_score.tokenize.tokenize`` 0.1.2 (``DefaultTokenizer``): ``text.lower()``,
``[^a-z0-9]+`` replaced by a space, split, tokens longer than 3 characters stemmed with nltk's
``PorterStemmer()`` when stemming is on, and only tokens matching ``^[a-z0-9]+$`` kept.

Without stemming the tokens are exactly the maximal ``[a-z0-9]`` runs of the lowercased text.
Lowercasing is CPython's (:func:`pipeline.text.normalize.python_lower`), so characters such as the
Kelvin sign (U+212A, lowercased to ASCII ``k``) or ``İ`` (to ``i`` + U+0307) tokenize as in the
package.

Stemming is the one place with per-word Python: each distinct token of a batch is stemmed once
and the word -> stem mapping is cached in a module-level dict for the life of the process (it grows
with the vocabulary seen); rows are then mapped with polars.

That tokenizer keeps only ``[a-z0-9]``, so Chinese, Russian or Thai text has no tokens and scores 0
even against itself. :func:`unicode_rouge_tokens` is the tokenizer for those scripts, meant to be
handed to ``RougeScorer(..., tokenizer=T)`` as an object whose ``tokenize(text)`` is::

    re.findall("[<C>]|[^\\W_<C>]+", text.lower())

where ``<C>`` (:data:`CHARACTER_TOKEN_RANGES`) is kana, the CJK ideographs (with extension A and
the compatibility block) and Thai: each such character is one token, since those scripts put no
spaces between words; in every other script a token is a maximal run of letters and digits
(``str.isalnum()``, underscore excluded). No stemming: ``RougeScorer`` ignores ``use_stemmer`` when
it is given a tokenizer. :func:`rouge_tokens_for` picks a tokenizer by name (:data:`TOKENIZERS`);
``"auto"`` keeps the package's tokenizer on Latin-script rows and uses the Unicode one on the
others.
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from pipeline.config import ROUGE_TOKENIZERS
from pipeline.text.charclasses import word_class
from pipeline.text.kernels.bleu import (
    TokenIds,
    TokenParts,
    column_buffers,
    frozen,
    gather_strings,
    intern_pair,
    row_offsets,
    token_ids_of_lists,
)
from pipeline.text.kernels.buffers import strings_from_buffers
from pipeline.text.kernels.rouge import ascii_rows, rouge_tokens_ascii
from pipeline.text.language import UNDETERMINED, is_latin
from pipeline.text.normalize import python_lower

if TYPE_CHECKING:
    from nltk.stem.porter import PorterStemmer

_TOKEN = "[a-z0-9]+"
_VALID_TOKEN = "^[a-z0-9]+$"
_VALID_STEM = re.compile(_TOKEN)
# Only tokens longer than this are stemmed (``len(x) > 3`` in ``rouge_score.tokenize``).
_MAX_UNSTEMMED_LENGTH = 3

#: Code point ranges whose characters are each one token of :func:`unicode_rouge_tokens`: kana
#: (U+3040-U+30FF), CJK extension A (U+3400-U+4DBF), CJK unified ideographs (U+4E00-U+9FFF), CJK
#: compatibility ideographs (U+F900-U+FAFF) and Thai (U+0E00-U+0E7F), as ``(first, last)``.
CHARACTER_TOKEN_RANGES: tuple[tuple[int, int], ...] = (
    (0x3040, 0x30FF), (0x3400, 0x4DBF), (0x4E00, 0x9FFF), (0xF900, 0xFAFF), (0x0E00, 0x0E7F),
)
#: A letter or digit of a script other than Latin (``Common`` and ``Inherited`` characters, such as
#: ASCII digits and combining accents, belong to every script): a text holding one is not Latin.
NON_LATIN_CHARACTER = r"[[\p{L}\p{N}]--[\p{Latin}\p{Common}\p{Inherited}]]"
#: Tokenizer names of :func:`rouge_tokens_for` (``[lexical] rouge_tokenizer``).
TOKENIZERS: tuple[str, ...] = ROUGE_TOKENIZERS

#: Word -> Porter stem, filled lazily; shared by every batch of the process.
_STEMS: dict[str, str] = {}


@cache
def _stemmer() -> PorterStemmer:
    # nltk (0.1 s to import) is loaded only by runs that stem, not by every command.
    from nltk.stem.porter import PorterStemmer

    # The mode rouge-score uses: ``porter.PorterStemmer()`` (NLTK_EXTENSIONS).
    return PorterStemmer()


def _long_word_stems(words: pl.Series) -> tuple[list[str], list[str]]:
    """The words of ``words`` (distinct) longer than 3 characters and their cached stems."""
    long_words = words.filter(words.str.len_chars() > _MAX_UNSTEMMED_LENGTH).to_list()
    missing = [word for word in long_words if word not in _STEMS]
    if missing:
        stem = _stemmer().stem
        _STEMS.update((word, stem(word)) for word in missing)
    return long_words, [_STEMS[word] for word in long_words]


def _stem_lists(tokens: pl.Series) -> pl.Series:
    """Every token longer than 3 characters replaced by its cached Porter stem."""
    words = tokens.explode(empty_as_null=False, keep_nulls=False).unique()
    long_words, stems = _long_word_stems(words)
    if not long_words:
        return tokens
    stemmed = tokens.list.eval(pl.element().replace(long_words, stems))
    if all(_VALID_STEM.fullmatch(stem) for stem in stems):
        return stemmed
    # A stem outside [a-z0-9]+ (none is known) is dropped, as the package's final check does.
    return stemmed.list.eval(pl.element().filter(pl.element().str.contains(_VALID_TOKEN)))


def rouge_tokens(text: pl.Expr, *, stem: bool = False) -> pl.Expr:
    """``rouge_score.tokenize.tokenize(text, stemmer)`` as ``List[String]``; null stays null.

    ``stem=True`` reproduces ``RougeScorer(..., use_stemmer=True)``.

    >>> import polars as pl
    >>> pl.select(rouge_tokens(pl.lit("The cats' 2 dogs-running!"))).item().to_list()
    ['the', 'cats', '2', 'dogs', 'running']
    >>> pl.select(rouge_tokens(pl.lit("The cats' 2 dogs-running!"), stem=True)).item().to_list()
    ['the', 'cat', '2', 'dog', 'run']
    """
    tokens = python_lower(text).str.extract_all(_TOKEN)
    if not stem:
        return tokens
    return tokens.map_batches(_stem_lists, return_dtype=pl.List(pl.String), is_elementwise=True)


def character_token_class() -> str:
    """Class body (polars' regex syntax) of :data:`CHARACTER_TOKEN_RANGES`: the characters of
    the scripts written without spaces between words."""
    return "".join(f"\\x{{{a:x}}}-\\x{{{b:x}}}" for a, b in CHARACTER_TOKEN_RANGES)


def _ranges(regex_escape: bool) -> str:
    if regex_escape:
        return character_token_class()
    return "".join(f"{chr(a)}-{chr(b)}" for a, b in CHARACTER_TOKEN_RANGES)


#: The Unicode tokenizer's pattern for Python's ``re`` (the reference the tests compare with).
UNICODE_TOKEN_PATTERN = f"[{_ranges(False)}]|[^\\W_{_ranges(False)}]+"


@cache
def _unicode_pattern() -> str:
    """:data:`UNICODE_TOKEN_PATTERN` for polars' regex engine: Rust's ``\\w`` differs from
    CPython's at the margins, so the word class is CPython's own (:func:`word_class`)."""
    ranges = _ranges(True)
    return f"[{ranges}]|[[{word_class()}]--[_{ranges}]]+"


def unicode_rouge_tokens(text: pl.Expr) -> pl.Expr:
    """``re.findall(UNICODE_TOKEN_PATTERN, text.lower())`` as ``List[String]``; null stays null.

    Kana, CJK ideographs and Thai (:data:`CHARACTER_TOKEN_RANGES`) give one token per character;
    other scripts give maximal runs of ``str.isalnum()`` characters. Lowercasing and the word
    class are the running CPython's, so the tokens equal ``re``'s exactly.

    >>> import polars as pl
    >>> pl.select(unicode_rouge_tokens(pl.lit("东京 is Tokyo; Москва_2!"))).item().to_list()
    ['东', '京', 'is', 'tokyo', 'москва', '2']
    """
    return python_lower(text).str.extract_all(_unicode_pattern())


def _latin_text(text: pl.Expr) -> pl.Expr:
    """False where ``text`` holds a :data:`NON_LATIN_CHARACTER`; ASCII rows skip the regex."""
    wide = pl.when(text.str.len_bytes() != text.str.len_chars()).then(text)
    return ~wide.str.contains(NON_LATIN_CHARACTER).fill_null(False)


def rouge_tokens_for(
    text: pl.Expr, tokenizer: str = "auto", lang: pl.Expr | None = None, stem: bool = False
) -> pl.Expr:
    """ROUGE tokens of ``text`` (``List[String]``) by the tokenizer named ``tokenizer``.

    * ``"rouge-score"``: :func:`rouge_tokens` (the package's tokenizer, ``stem`` applies);
    * ``"unicode"``: :func:`unicode_rouge_tokens` (``stem`` is ignored, as ``RougeScorer`` does
      with a custom tokenizer);
    * ``"auto"``: ``"rouge-score"`` on Latin-script rows, ``"unicode"`` on the others. A row is
      Latin-script when ``lang`` (the row's language, :mod:`pipeline.text.language`) is a
      Latin-script code (:func:`~pipeline.text.language.is_latin`: ``en``, ``und``, codes of no
      other detected script); without ``lang``, or where it is null or ``und`` (a row with no
      letter of a script that module detects, such as Georgian or Tamil), when the text holds no
      letter or digit of another script (:data:`NON_LATIN_CHARACTER`). Pass the row's one
      ``lang`` so that response and reference get the same tokenizer. Latin rows are tokenized
      exactly as by :func:`rouge_tokens` and never run the Unicode tokenizer (its input is null
      on them), so an English column costs what :func:`rouge_tokens` costs.

    >>> import polars as pl
    >>> frame = pl.DataFrame({"t": ["The Cats!", "东京 Cats"], "lang": ["en", "zh"]})
    >>> frame.select(rouge_tokens_for(pl.col("t"), "auto", pl.col("lang"))).to_series().to_list()
    [['the', 'cats'], ['东', '京', 'cats']]
    """
    if tokenizer == "rouge-score":
        return rouge_tokens(text, stem=stem)
    if tokenizer == "unicode":
        return unicode_rouge_tokens(text)
    if tokenizer != "auto":
        raise ValueError(f"unknown ROUGE tokenizer {tokenizer!r}: use one of {TOKENIZERS}")
    if lang is None:
        latin = _latin_text(text)
    else:  # the text's script decides where lang is null or undetermined only
        by_text = lang.is_null() | (lang == UNDETERMINED)
        latin = pl.when(by_text).then(_latin_text(pl.when(by_text).then(text)))
        latin = latin.otherwise(is_latin(lang))
    # The package's tokenizer runs on the whole column (masking its input cost more than its
    # work on the other rows); the Unicode one sees the other rows only.
    return pl.when(latin).then(rouge_tokens(text, stem=stem)).otherwise(
        unicode_rouge_tokens(pl.when(latin).then(None).otherwise(text))
    )


# --- token ids for the statistics kernels ------------------------------------------------------


def _stemmed_rows(tokenizer: str, lang: pl.Series | None, rows: int) -> np.ndarray:
    """The ASCII rows ``stem`` applies to: those of the package's tokenizer (under ``auto``, of
    a Latin-script ``lang``, or none: ASCII text is Latin)."""
    if tokenizer == "unicode":
        return np.zeros(rows, dtype=np.bool_)
    if tokenizer == "rouge-score" or lang is None:
        return np.ones(rows, dtype=np.bool_)
    frame = pl.DataFrame({"lang": lang.cast(pl.String)})
    by_text = pl.col("lang").is_null() | (pl.col("lang") == UNDETERMINED)
    latin = frame.select(by_text | is_latin(pl.col("lang")).fill_null(False)).to_series()
    return latin.to_numpy()


def _stem_ids(ids: np.ndarray, counts: np.ndarray, stemmed: np.ndarray, stem_of: np.ndarray,
              valid: np.ndarray, shift: int) -> tuple[np.ndarray, np.ndarray]:
    """Token ids of one side with the rows ``stemmed`` mapped to ``shift + stem_of[id]`` and
    their tokens of an invalid stem dropped; returns the ids and the new counts per row."""
    if stemmed.all():
        mapped, keep = shift + stem_of[ids], valid[ids]
    else:
        on = np.repeat(stemmed, counts)
        mapped = np.where(on, shift + stem_of[ids], ids)
        keep = ~on | valid[ids]
    if keep.all():
        return mapped.astype(np.int32), counts
    row = np.repeat(np.arange(len(counts)), counts)
    return mapped[keep].astype(np.int32), np.bincount(row[keep], minlength=len(counts))


def _kernel_ids(pred: tuple[np.ndarray, np.ndarray, np.ndarray],
                ref: tuple[np.ndarray, np.ndarray, np.ndarray],
                stemmed: np.ndarray | None) -> TokenIds:
    """Ids of the package's tokens of two columns (offsets, bytes, the ASCII rows to read),
    stemmed on the rows ``stemmed``: each distinct word once (:data:`_STEMS`)."""
    pred_tokens = rouge_tokens_ascii(*pred)
    ref_tokens = rouge_tokens_ascii(*ref)
    pred_buffers = (frozen(pred_tokens[0]), frozen(pred_tokens[1]))
    ref_buffers = (frozen(ref_tokens[0]), frozen(ref_tokens[1]))
    pred_ids, ref_ids, first = intern_pair(*pred_buffers, *ref_buffers)
    pred_counts, ref_counts, bound = pred_tokens[2], ref_tokens[2], max(len(first), 1)
    if stemmed is not None and len(first):
        word_offsets, word_bytes = gather_strings(*pred_buffers, *ref_buffers, frozen(first))
        words = strings_from_buffers("word", word_offsets, word_bytes)
        long_words, stems = _long_word_stems(words)
        stemmed_words = words.replace(long_words, stems) if long_words else words
        stem_offsets, stem_bytes, _ = column_buffers(stemmed_words)
        stem_of, _, distinct = intern_pair(stem_offsets, stem_bytes, stem_offsets[:1], stem_bytes)
        valid = stemmed_words.str.contains(_VALID_TOKEN).to_numpy()
        pred_ids, pred_counts = _stem_ids(pred_ids, pred_counts, stemmed, stem_of, valid, bound)
        ref_ids, ref_counts = _stem_ids(ref_ids, ref_counts, stemmed, stem_of, valid, bound)
        bound += len(distinct)
    return TokenIds(pred_ids, row_offsets(pred_counts), ref_ids, row_offsets(ref_counts), bound)


def rouge_token_ids(
    pred: pl.Series, ref: pl.Series, tokenizer: str = "auto", lang: pl.Series | None = None,
    stem: bool = False,
) -> TokenParts:
    """Token ids of :func:`rouge_tokens_for` for a prediction and a reference column (a null
    text has no tokens), as :data:`~pipeline.text.kernels.bleu.TokenParts`.

    The rows whose two texts are ASCII run the compiled tokenizer
    (:func:`pipeline.text.kernels.rouge.rouge_tokens_ascii`): there the package's tokenizer and
    the ``unicode`` one give the same tokens, and ``stem`` applies as :func:`rouge_tokens_for`
    says. The other rows take :func:`rouge_tokens_for` itself.
    """
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"unknown ROUGE tokenizer {tokenizer!r}: use one of {TOKENIZERS}")
    pred, ref = pred.cast(pl.String), ref.cast(pl.String)
    rows = len(pred)
    pred_offsets, pred_data, pred_valid = column_buffers(pred)
    ref_offsets, ref_data, ref_valid = column_buffers(ref)
    ascii_text = ascii_rows(pred_offsets, pred_data) & ascii_rows(ref_offsets, ref_data)
    stemmed = _stemmed_rows(tokenizer, lang, rows) & ascii_text if stem else None
    parts: TokenParts = [(None, _kernel_ids((pred_offsets, pred_data, pred_valid & ascii_text),
                                            (ref_offsets, ref_data, ref_valid & ascii_text),
                                            stemmed))]
    rest = np.flatnonzero((pred_valid | ref_valid) & ~ascii_text)
    if len(rest):
        frame = pl.DataFrame({"pred": pred.gather(rest), "ref": ref.gather(rest)})
        row_lang = None
        if lang is not None:
            frame = frame.with_columns(lang=lang.cast(pl.String).gather(rest))
            row_lang = pl.col("lang")
        tokens = frame.select(
            pred=rouge_tokens_for(pl.col("pred"), tokenizer, row_lang, stem),
            ref=rouge_tokens_for(pl.col("ref"), tokenizer, row_lang, stem),
        )
        parts.append((rest, token_ids_of_lists(tokens["pred"], tokens["ref"])))
    return parts
