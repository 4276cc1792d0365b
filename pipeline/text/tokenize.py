"""Tokenizers as polars expressions returning ``List[String]``."""

from __future__ import annotations

import polars as pl

from pipeline.text.charclasses import (
    ASCII_SPACE_CLASS,
    ASCII_WORD_CLASS,
    space_class,
    word_class,
)
from pipeline.text.kernels.buffers import with_wide_rows
from pipeline.text.kernels.squad import squad_tokens_batch
from pipeline.text.normalize import (
    ascii_lower_remove_punctuation,
    python_lower,
    squad_core,
)


def whitespace_tokens(text: pl.Expr) -> pl.Expr:
    """``text.split()``: maximal runs of non-``str.isspace`` characters; ``[]`` for ``""``."""
    return text.str.extract_all(f"[^{space_class()}]+")


def punctuation_deleted_words(text: pl.Expr) -> pl.Expr:
    """``re.sub(r"[^\\w\\s]", "", text.lower()).split()``, exactly: the text lowercased, every
    character that is neither a word character nor whitespace deleted, then split at whitespace.

    The word unit of the enhanced text evaluation framework (``preprocess_text``, see
    docs/compat.md): "Île-de-France" is one word, "9-11" becomes ``911`` and "don't" ``dont``.

    >>> import polars as pl
    >>> text = pl.lit("Paris, in Île-de-France, isn't (9-11) far.")
    >>> pl.select(punctuation_deleted_words(text)).item().to_list()
    ['paris', 'in', 'îledefrance', 'isnt', '911', 'far']
    """
    return whitespace_tokens(punctuation_deleted_text(text))


def punctuation_deleted_text(text: pl.Expr) -> pl.Expr:
    """``re.sub(r"[^\\w\\s]", "", text.lower())``: :func:`punctuation_deleted_words` before the
    split."""
    kept = f"[^{word_class()}{space_class()}]"
    return python_lower(text).str.replace_all(kept, "")


def squad_tokens(text: pl.Expr) -> pl.Expr:
    """``get_tokens`` of the official SQuAD v2 script: ``normalize_answer(s).split()``.

    The tokens joined by single spaces equal ``normalize_answer(s)``, so two texts have equal
    normalizations exactly when their token lists are equal. Pure ASCII rows are tokenized by a
    compiled kernel over the column's buffers (:mod:`pipeline.text.kernels.squad`, equal to
    :func:`squad_tokens_ascii`), the others by :func:`squad_tokens_unicode`.

    >>> import polars as pl
    >>> pl.select(squad_tokens(pl.lit("The cat, the hat."))).item().to_list()
    ['cat', 'hat']
    """
    return text.map_batches(
        _squad_tokens_batch, return_dtype=pl.List(pl.String), is_elementwise=True
    )


def _squad_tokens_batch(text: pl.Series) -> pl.Series:
    tokens, wide = squad_tokens_batch(text)
    # The rows with a non-ASCII character, by the full rules.
    return with_wide_rows(text, tokens, wide, squad_tokens_unicode)


def squad_tokens_unicode(text: pl.Expr) -> pl.Expr:
    """:func:`squad_tokens` for any text, step by step as the official script does it."""
    return whitespace_tokens(squad_core(text))


_BOUNDARY = r"(?-u:\b)"  # ASCII word boundary: Python's \b on ASCII text
_W = ASCII_WORD_CLASS
# A whole word other than "a", "an" and "the" (``--`` is class difference).
_KEPT_WORD = (
    f"{_BOUNDARY}(?:"
    f"[{_W}--a]"  # one character
    f"|[{_W}--a][{_W}]|a[{_W}--n]"  # two
    f"|[{_W}--t][{_W}]{{2}}|t[{_W}--h][{_W}]|th[{_W}--e]"  # three
    f"|[{_W}]{{4,}}"
    f"){_BOUNDARY}"
)
# On ASCII text, a token of ``remove_articles(text).split()``: a maximal run of kept words and of
# characters that are neither word characters nor whitespace.
_ASCII_TOKEN = f"(?:[^{_W}{ASCII_SPACE_CLASS}]|{_KEPT_WORD})+"


def squad_tokens_ascii(text: pl.Expr) -> pl.Expr:
    """:func:`squad_tokens` for pure ASCII text as polars expressions, with one regex pass for
    articles and splitting (the ASCII kernel's expression twin, kept as its reference).

    On ASCII text, lowercasing and removing punctuation is one per-character substitution
    (:func:`~pipeline.text.normalize.ascii_lower_remove_punctuation`) that keeps the text ASCII;
    there ``re``'s ``\\b`` is Rust's ASCII word boundary ``(?-u:\\b)`` and ``str.isspace`` is
    :data:`~pipeline.text.charclasses.ASCII_SPACE_CLASS`. Replacing each whole word
    ``a``/``an``/``the`` by a space and splitting on whitespace leaves the maximal runs of whole
    non-article words and of characters that are neither word characters nor whitespace; one
    ``extract_all`` finds those runs directly (words are matched whole, from boundary to
    boundary, so a match never starts or ends inside a word).

    >>> import polars as pl
    >>> pl.select(squad_tokens_ascii(pl.lit("A an-the\\x1fthe\\x01an, Anne"))).item().to_list()
    ['anthe', '\\x01', 'anne']
    """
    return ascii_lower_remove_punctuation(text).str.extract_all(_ASCII_TOKEN)
