"""sacreBLEU's ``intl``, ``zh``, ``char`` and ``none`` tokenizers as polars expressions, and the
per-row choice of a BLEU tokenizer (:func:`bleu_tokens`).

Reference: sacrebleu 2.x, ``tokenizers/tokenizer_intl.py`` (``TokenizerV14International``),
``tokenizer_zh.py`` (``TokenizerZh``), ``tokenizer_char.py`` (``TokenizerChar``),
``tokenizer_none.py`` (``NoneTokenizer``), each preceded by ``BLEU._preprocess_segment``'s
``line.rstrip()`` and followed by the ``str.split()`` of ``extract_all_word_ngrams``: every
function returns ``tokenizer(text.rstrip()).split()`` (List[String]; ``[]`` for ``""``, null for
null). Whitespace is CPython's ``str.isspace`` throughout (:func:`charclasses.space_class`).

* ``intl``: ``(\\P{N})(\\p{P})`` -> ``\\1 \\2 ``, then ``(\\p{P})(\\P{N})`` -> `` \\1 \\2``, then
  every ``\\p{S}`` padded with spaces (mteval-v14's international tokenization: punctuation is
  split off unless it sits between digits; symbols always). sacrebleu runs these with the
  ``regex`` package, whose Unicode database is newer than CPython's and than Rust's: the
  classes are derived from ``regex`` itself (a dependency of nltk), so newly encoded characters
  agree too. The two substitutions are fixed-width and leftmost non-overlapping in both engines.
* ``zh``: ``line.strip()``, every character of ``_is_chinese_char`` padded with spaces, then
  ``TokenizerRegexp`` (13a's rules without 13a's HTML unescaping and without its padding of the
  line with a space on each side: ``"2019."`` at the end of a line stays one token).
* ``char``: ``" ".join(line)``: every non-whitespace character is a token.
* ``none``: no tokenization; BLEU splits at whitespace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

import numpy as np
import polars as pl
import regex  # sacrebleu's engine for ``intl``; installed with nltk

from pipeline.text.charclasses import _code_points, _stored, points_class, space_class
from pipeline.text.kernels.bleu import (
    TokenIds,
    TokenParts,
    column_buffers,
    frozen,
    intern_pair,
    row_offsets,
    token_ids_of_lists,
    tokenize_13a,
)
from pipeline.text.tokenize import whitespace_tokens
from pipeline.text.tokenize_13a import (
    _PUNCTUATION,
    _SUBSTITUTION_TRIGGER,
    _SUBSTITUTIONS,
    python_rstrip,
    tokens_13a,
)

#: The ``tokenize`` values :func:`bleu_tokens` accepts.
BLEU_TOKENIZE: tuple[str, ...] = ("auto", "13a", "intl", "zh", "char", "none")
#: Under ``auto``: the tokenizer of the rows of each language; the other rows take ``13a``.
AUTO_TOKENIZE: dict[str, str] = {"zh": "zh", "ja": "char", "ko": "char", "th": "char"}

# ``TokenizerZh._UCODE_RANGES`` as ``_is_chinese_char`` applies them (``start <= ch <= end``,
# inclusive). Two of sacrebleu's bounds are written ``u'\u20000'`` and ``u'\u2f800'``: a
# four-digit escape followed by a digit, i.e. two-character strings, so they compare as
# ``'\u2000' < ch <= '\u2a6d'`` and ``'\u2f80' < ch <= '\u2fa1'``: all of General Punctuation
# (curly quotes, dashes, U+2028/U+2029 ...) through Supplemental Arrows-B is "Chinese", and CJK
# Extension B (U+20000 ...) is not; neither are the ideographs after U+9FBB.
_CHINESE_RANGES: tuple[tuple[int, int], ...] = (
    (0x3400, 0x4DB5),
    (0x4E00, 0x9FA5),
    (0x9FA6, 0x9FBB),
    (0xF900, 0xFA2D),
    (0xFA30, 0xFA6A),
    (0xFA70, 0xFAD9),
    (0x2001, 0x2A6D),  # sacrebleu: (u'\u20000', u'\u2a6d6')
    (0x2F81, 0x2FA1),  # sacrebleu: (u'\u2f800', u'\u2fa1d')
    (0xFF00, 0xFFEF),
    (0x2E80, 0x2EFF),
    (0x3000, 0x303F),
    (0x31C0, 0x31EF),
    (0x2F00, 0x2FDF),
    (0x2FF0, 0x2FFF),
    (0x3100, 0x312F),
    (0x31A0, 0x31BF),
    (0xFE10, 0xFE1F),
    (0xFE30, 0xFE4F),
    (0x2600, 0x26FF),
    (0x2700, 0x27BF),
    (0x3200, 0x32FF),
    (0x3300, 0x33FF),
)


def _chinese_points() -> np.ndarray:
    return np.unique(np.concatenate([np.arange(a, b + 1) for a, b in _CHINESE_RANGES]))


@cache
def chinese_class() -> str:
    """Class body of the characters ``TokenizerZh._is_chinese_char`` holds for."""
    return points_class(_chinese_points())


@cache
def _chinese_nonspace_class() -> str:
    """:func:`chinese_class` without the ``str.isspace`` characters (U+2001..U+200A, U+3000 ...):
    padding those with spaces makes no token."""
    points = _chinese_points()
    keep = np.array([not chr(int(cp)).isspace() for cp in points])
    return points_class(points[keep])


def _regex_property_body(prop: str) -> str:
    points, text = _code_points()
    runs = [np.arange(m.start(), m.end()) for m in regex.finditer(rf"\p{{{prop}}}+", text)]
    return points_class(points[np.concatenate(runs)])


@cache
def regex_property_class(prop: str) -> str:
    """Class body of ``\\p{prop}`` as the ``regex`` package matches it (``P``, ``S``, ``N``).

    Derived by scanning every code point once (half a second) and kept in the cache folder of
    :mod:`pipeline.text.charclasses` under the ``regex`` version.
    """
    return _stored(f"regex-{prop}-class-{regex.__version__}", lambda: _regex_property_body(prop))


# --- intl ------------------------------------------------------------------------------------


def tokens_intl(text: pl.Expr) -> pl.Expr:
    """``TokenizerV14International()(text.rstrip()).split()`` (List[String]).

    >>> import polars as pl
    >>> pl.select(tokens_intl(pl.lit("“Bonjour,” dit-il: 1,000€ en 2019."))).item().to_list()
    ['“', 'Bonjour', ',', '”', 'dit', '-', 'il', ':', '1,000', '€', 'en', '2019.']
    """
    punct, symbol, number = (regex_property_class(p) for p in ("P", "S", "N"))
    line = python_rstrip(text)
    line = line.str.replace_all(f"([^{number}])([{punct}])", "${1} ${2} ")
    line = line.str.replace_all(f"([{punct}])([^{number}])", " ${1} ${2}")
    # The third substitution pads every symbol: a symbol is a token of its own.
    return line.str.extract_all(f"[{symbol}]|[^{symbol}{space_class()}]+")


# --- zh --------------------------------------------------------------------------------------


@cache
def _zh_token_pattern() -> str:
    return (
        f"[{_PUNCTUATION}]|[{_chinese_nonspace_class()}]"
        f"|[^{_PUNCTUATION}{chinese_class()}{space_class()}]+"
    )


def python_strip(text: pl.Expr) -> pl.Expr:
    """``str.strip()``: leading and trailing ``str.isspace`` characters removed."""
    return python_rstrip(text).str.replace(f"^[{space_class()}]+", "")


def _unpadded_substitutions(texts: pl.Series) -> pl.Series:
    """``TokenizerRegexp``'s period, comma and dash rules on the line as it is (``zh`` does not
    pad it), on the rows holding one of the three; the others need none."""
    rows = np.flatnonzero(texts.str.contains(_SUBSTITUTION_TRIGGER).fill_null(False).to_numpy())
    if len(rows) == 0:
        return texts
    line = pl.col("text")
    for pattern, replacement in _SUBSTITUTIONS:
        line = line.str.replace_all(pattern, replacement)
    chosen = pl.DataFrame({"text": texts.gather(rows)}).select(line).to_series()
    return texts.clone().scatter(rows, chosen)


def tokens_zh(text: pl.Expr) -> pl.Expr:
    """``TokenizerZh()(text.rstrip()).split()`` (List[String]).

    Padding a Chinese character (a non-digit that is neither ``.``, ``,`` nor ``-``) with spaces
    changes none of the matches of ``TokenizerRegexp``'s rules, which only look at those, and
    neither does padding its ASCII punctuation: both are done by the tokenizing regex, in which
    each such character is a token of its own.

    >>> import polars as pl
    >>> pl.select(tokens_zh(pl.lit("法国的首都是巴黎[1]。 It's 3.5"))).item().to_list()
    ['法', '国', '的', '首', '都', '是', '巴', '黎', '[', '1', ']', '。', "It's", '3.5']
    """
    spaced = python_strip(text).map_batches(
        _unpadded_substitutions, return_dtype=pl.String, is_elementwise=True
    )
    return spaced.str.extract_all(_zh_token_pattern())


# --- char and none ---------------------------------------------------------------------------


def tokens_char(text: pl.Expr) -> pl.Expr:
    """``TokenizerChar()(text.rstrip()).split()``: every non-whitespace character (List[String]).

    >>> import polars as pl
    >>> pl.select(tokens_char(pl.lit("東京 は\\u3000ok!"))).item().to_list()
    ['東', '京', 'は', 'o', 'k', '!']
    """
    return text.str.extract_all(f"[^{space_class()}]")


def tokens_none(text: pl.Expr) -> pl.Expr:
    """``NoneTokenizer()(text.rstrip()).split()``: the text split at whitespace (List[String])."""
    return whitespace_tokens(text)


TOKENIZERS: dict[str, Callable[[pl.Expr], pl.Expr]] = {
    "13a": tokens_13a,
    "intl": tokens_intl,
    "zh": tokens_zh,
    "char": tokens_char,
    "none": tokens_none,
}


# --- per row ---------------------------------------------------------------------------------


def broadcast_pair(left: pl.Series, right: pl.Series) -> tuple[pl.Series, pl.Series]:
    """Two input columns of a batch function at one length (a literal arrives as one row)."""
    left, right = broadcast(left, right)
    return left, right


def broadcast(*columns: pl.Series) -> list[pl.Series]:
    """Input columns of a batch function at one length (a literal arrives as one row)."""
    rows = max((len(column) for column in columns), default=0)
    out = [column.new_from_index(0, rows) if len(column) == 1 and rows != 1 else column
           for column in columns]
    if any(len(column) != rows for column in out):
        raise ValueError(f"input columns differ in length: {[len(c) for c in columns]}")
    return out


def _tokenized(texts: pl.Series, name: str) -> pl.Series:
    return pl.DataFrame({"text": texts}).select(TOKENIZERS[name](pl.col("text"))).to_series()


def _auto_batch(series: Sequence[pl.Series]) -> pl.Series:
    """The tokens of each row by the tokenizer of its language; each tokenizer sees only its
    rows (gathered, tokenized, put back in order), so a batch without such rows is 13a alone."""
    text, lang = broadcast_pair(*series)
    text, lang = text.cast(pl.String), lang.cast(pl.String)
    if not lang.is_in(list(AUTO_TOKENIZE)).any():
        return _tokenized(text, "13a")
    names = lang.replace_strict(AUTO_TOKENIZE, default="13a")
    parts, rows = [], []
    for name in dict.fromkeys(["13a", *AUTO_TOKENIZE.values()]):
        chosen = np.flatnonzero((names == name).to_numpy())
        if len(chosen):
            parts.append(_tokenized(text.gather(chosen), name))
            rows.append(chosen)
    order = np.argsort(np.concatenate(rows), kind="stable")
    return pl.concat(parts).gather(order)


def bleu_tokens(text: pl.Expr, tokenize: str, lang: pl.Expr | None = None) -> pl.Expr:
    """The tokens sacreBLEU's BLEU counts n-grams of, with the tokenizer ``tokenize``
    (List[String], null for null).

    ``tokenize`` is a sacreBLEU tokenizer name (``13a``, ``intl``, ``zh``, ``char``, ``none``)
    or ``auto``: by the row's ``lang`` (an ISO 639-1 code, as ``pipeline.text.language`` gives
    it), ``zh`` for ``zh``, ``char`` for ``ja``, ``ko`` and ``th`` (sacreBLEU's MeCab
    tokenizers are not used), ``13a`` for any other code, a null one, or when ``lang`` is None.
    The ``13a`` rows take :func:`~pipeline.text.tokenize_13a.tokens_13a` unchanged.

    >>> import polars as pl
    >>> frame = pl.DataFrame({"t": ["巴黎。", "巴黎。", "東京"], "lang": ["zh", "en", "ja"]})
    >>> frame.select(bleu_tokens(pl.col("t"), "auto", pl.col("lang"))).to_series().to_list()
    [['巴', '黎', '。'], ['巴黎。'], ['東', '京']]
    """
    if tokenize not in BLEU_TOKENIZE:
        raise ValueError(f"tokenize must be one of {', '.join(BLEU_TOKENIZE)}, got {tokenize!r}")
    if tokenize != "auto":
        return TOKENIZERS[tokenize](text)
    if lang is None:
        return tokens_13a(text)
    return pl.map_batches(
        [text, lang], _auto_batch, return_dtype=pl.List(pl.String), is_elementwise=True
    )


# --- token ids for the statistics kernels ------------------------------------------------------


#: The tokenizers a row can take, by code (:func:`_row_tokenizers`); ``13a`` is code 0.
_CODED: tuple[str, ...] = tuple(name for name in BLEU_TOKENIZE if name != "auto")
_13A = _CODED.index("13a")


def _row_tokenizers(rows: int, tokenize: str, lang: pl.Series | None) -> np.ndarray:
    """The tokenizer of each row, as :func:`bleu_tokens` chooses it: codes into
    :data:`_CODED` (``int8``)."""
    if tokenize not in BLEU_TOKENIZE:
        raise ValueError(f"tokenize must be one of {', '.join(BLEU_TOKENIZE)}, got {tokenize!r}")
    if tokenize != "auto":
        return np.full(rows, _CODED.index(tokenize), dtype=np.int8)
    if lang is None or not lang.cast(pl.String).is_in(list(AUTO_TOKENIZE)).any():
        return np.full(rows, _13A, dtype=np.int8)
    codes = {language: _CODED.index(name) for language, name in AUTO_TOKENIZE.items()}
    chosen = lang.cast(pl.String).replace_strict(codes, default=_13A, return_dtype=pl.Int8)
    return chosen.fill_null(_13A).to_numpy()


def _ids_by_expression(hyp: pl.Series, ref: pl.Series, name: str) -> TokenIds:
    frame = pl.DataFrame({"hyp": hyp, "ref": ref})
    tokenize = TOKENIZERS[name]
    tokens = frame.select(hyp=tokenize(pl.col("hyp")), ref=tokenize(pl.col("ref")))
    return token_ids_of_lists(tokens["hyp"], tokens["ref"])


def bleu_token_ids(
    hyp: pl.Series, ref: pl.Series, tokenize: str, lang: pl.Series | None = None
) -> TokenParts:
    """Token ids of :func:`bleu_tokens` for a response and a reference column (a null text has
    no tokens), as :data:`~pipeline.text.kernels.bleu.TokenParts`.

    The ``13a`` rows run the compiled tokenizer (:func:`pipeline.text.kernels.bleu.tokenize_13a`),
    except those holding ``<`` or ``&``; those and the rows of the other tokenizers take the
    polars expressions of :data:`TOKENIZERS`, gathered by tokenizer.
    """
    hyp, ref = hyp.cast(pl.String), ref.cast(pl.String)
    rows = len(hyp)
    codes = _row_tokenizers(rows, tokenize, lang)
    parts: TokenParts = []
    kernel_rows = codes == _13A
    rest = ~kernel_rows
    if kernel_rows.any():
        hyp_offsets, hyp_data, hyp_valid = column_buffers(hyp)
        ref_offsets, ref_data, ref_valid = column_buffers(ref)
        hyp_take, ref_take = kernel_rows & hyp_valid, kernel_rows & ref_valid
        hyp_tokens = tokenize_13a(hyp_offsets, hyp_data, hyp_take)
        ref_tokens = tokenize_13a(ref_offsets, ref_data, ref_take)
        hyp_ids, ref_ids, first = intern_pair(
            frozen(hyp_tokens[0]), frozen(hyp_tokens[1]),
            frozen(ref_tokens[0]), frozen(ref_tokens[1]),
        )
        parts.append((None, TokenIds(hyp_ids, row_offsets(hyp_tokens[2]), ref_ids,
                                     row_offsets(ref_tokens[2]), max(len(first), 1))))
        # A row holding '<' or '&' on a side is the expression's, both sides.
        undone = (hyp_take & ~hyp_tokens[3]) | (ref_take & ~ref_tokens[3])
        rest = undone | rest
    for code in np.unique(codes[rest]).tolist():
        chosen = np.flatnonzero(rest & (codes == code))
        name = _CODED[code]
        if len(chosen) == rows:
            parts.append((None, _ids_by_expression(hyp, ref, name)))
        else:
            ids = _ids_by_expression(hyp.gather(chosen), ref.gather(chosen), name)
            parts.append((chosen, ids))
    return parts
