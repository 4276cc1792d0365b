"""sacrebleu's ``13a`` tokenization (mteval-v13a, as used by WMT) as a polars expression.

Reference: sacrebleu 2.x, ``BLEU._preprocess_segment`` (``line.rstrip()``, case kept) followed by
``tokenizers/tokenizer_13a.py`` (``Tokenizer13a``) and ``tokenizers/tokenizer_re.py``
(``TokenizerRegexp``) and the ``str.split()`` of ``extract_all_word_ngrams``.

The substitutions of ``TokenizerRegexp`` use only ASCII classes (``[0-9]`` and literal
punctuation) and each pattern matches exactly one or two code points, so Rust's leftmost
non-overlapping ``replace_all`` makes the same matches as Python's ``re.sub``. Whitespace is
CPython's ``str.isspace`` (which includes U+001C..U+001F), both for ``rstrip`` and for the split.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import polars as pl

from pipeline.text.charclasses import space_class

# ``Tokenizer13a``: literal replacements, in order (HTML entities only matter when '&' occurs,
# and replacing them unconditionally is the same thing). Rows without '<', '\n' or '&' skip them.
_LITERALS_13A = (
    ("<skipped>", ""),
    ("-\n", ""),
    ("\n", " "),
    ("&quot;", '"'),
    ("&amp;", "&"),
    ("&lt;", "<"),
    ("&gt;", ">"),
)
_LITERAL_TRIGGER = "[<\n&]"

# ``TokenizerRegexp``'s first substitution pads every character of
# ``[\{-\~\[-\` -\&\(-\+\:-\@\/]`` with spaces: ASCII punctuation and the space, except
# ``'``, ``,``, ``-`` and ``.``. Both a padded character and the space are non-digits that are
# neither ``.`` nor ``,``, which is all the later substitutions look at, so the padding is done
# last, by the tokenizing regex (each such character is a token of its own).
_PUNCTUATION = r"\x{7b}-\x{7e}\x{5b}-\x{60}\x{21}-\x{26}\x{28}-\x{2b}\x{3a}-\x{40}\x{2f}"
_SUBSTITUTIONS = (
    (r"([^0-9])([.,])", "${1} ${2} "),  # period and comma unless preceded by a digit
    (r"([.,])([^0-9])", " ${1} ${2}"),  # period and comma unless followed by a digit
    (r"([0-9])(-)", "${1} ${2} "),  # dash preceded by a digit
)
_SUBSTITUTION_TRIGGER = "[.,-]"


@cache
def _trailing_space() -> str:
    return f"[{space_class()}]+$"


@cache
def _token_pattern() -> str:
    return f"[{_PUNCTUATION}]|[^{_PUNCTUATION}{space_class()}]+"


def python_rstrip(text: pl.Expr) -> pl.Expr:
    """``str.rstrip()``: trailing ``str.isspace`` characters removed."""
    return text.str.replace(_trailing_space(), "")


def _replace_literals(text: pl.Expr) -> pl.Expr:
    replaced: pl.Expr = pl.when(text.str.contains(_LITERAL_TRIGGER)).then(text)
    for old, new in _LITERALS_13A:
        replaced = replaced.str.replace_all(old, new, literal=True)
    return pl.coalesce(replaced, text)


def _split_periods_commas_dashes(text: pl.Expr) -> pl.Expr:
    """The last three substitutions of ``TokenizerRegexp``, on the space-padded line.

    Each needs a ``.``, ``,`` or ``-``, so only the rows holding one go through them; the others
    are returned unpadded, which the whitespace split cannot tell apart. A string expression
    costs polars about as much on a row it has nothing to do for (even a null one) as on any
    other, and short answers seldom hold one of the three: the rows that do are gathered,
    substituted and scattered back (:func:`_substitute_batch`), a third of the cost.
    """
    return text.map_batches(_substitute_batch, return_dtype=pl.String, is_elementwise=True)


def _substitute_batch(texts: pl.Series) -> pl.Series:
    rows = np.flatnonzero(texts.str.contains(_SUBSTITUTION_TRIGGER).fill_null(False).to_numpy())
    if len(rows) == 0:
        return texts
    chosen = pl.DataFrame({"text": texts.gather(rows)})
    padded = pl.concat_str(pl.lit(" "), pl.col("text"), pl.lit(" "))
    for pattern, replacement in _SUBSTITUTIONS:
        padded = padded.str.replace_all(pattern, replacement)
    return texts.clone().scatter(rows, chosen.select(padded).to_series())


def tokens_13a(text: pl.Expr) -> pl.Expr:
    """Tokens of ``BLEU(tokenize="13a")._preprocess_segment(text).split()`` (List[String]).

    That is ``Tokenizer13a()(text.rstrip()).split()``, case-sensitive; ``[]`` for ``""``.

    >>> import polars as pl
    >>> pl.select(tokens_13a(pl.lit("It's 3.5-4 &amp; (so) on.\\n"))).item().to_list()
    ["It's", '3.5', '-', '4', '&', '(', 'so', ')', 'on', '.']
    """
    spaced = _split_periods_commas_dashes(_replace_literals(python_rstrip(text)))
    return spaced.str.extract_all(_token_pattern())
