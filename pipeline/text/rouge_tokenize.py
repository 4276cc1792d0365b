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
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

import polars as pl

from pipeline.text.normalize import python_lower

if TYPE_CHECKING:
    from nltk.stem.porter import PorterStemmer

_TOKEN = "[a-z0-9]+"
_VALID_TOKEN = "^[a-z0-9]+$"
_VALID_STEM = re.compile(_TOKEN)
# Only tokens longer than this are stemmed (``len(x) > 3`` in ``rouge_score.tokenize``).
_MAX_UNSTEMMED_LENGTH = 3

#: Word -> Porter stem, filled lazily; shared by every batch of the process.
_STEMS: dict[str, str] = {}


@cache
def _stemmer() -> PorterStemmer:
    # nltk (0.1 s to import) is loaded only by runs that stem, not by every command.
    from nltk.stem.porter import PorterStemmer

    # The mode rouge-score uses: ``porter.PorterStemmer()`` (NLTK_EXTENSIONS).
    return PorterStemmer()


def _stem_lists(tokens: pl.Series) -> pl.Series:
    """Every token longer than 3 characters replaced by its cached Porter stem."""
    words = tokens.explode(empty_as_null=False, keep_nulls=False).unique()
    long_words = words.filter(words.str.len_chars() > _MAX_UNSTEMMED_LENGTH).to_list()
    missing = [word for word in long_words if word not in _STEMS]
    if missing:
        stem = _stemmer().stem
        _STEMS.update((word, stem(word)) for word in missing)
    if not long_words:
        return tokens
    stems = [_STEMS[word] for word in long_words]
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
