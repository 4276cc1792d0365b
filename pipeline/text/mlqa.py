"""Normalization and tokenization of the official MLQA v1 evaluation script, as polars expressions.

Reference: ``mlqa_evaluation_v1.py`` of facebookresearch/MLQA (``normalize_answer(s, lang)``,
``whitespace_tokenize``, ``mixed_segmentation``). For the seven MLQA languages the tokens equal
``normalize_answer(s, lang).split()`` character for character:

1. ``s.lower()`` (CPython's, see :func:`~pipeline.text.normalize.python_lower`);
2. delete every character of ``PUNCT``: the code points whose ``unicodedata.category`` starts
   with ``P`` (this interpreter's Unicode database) plus ``string.punctuation`` (which adds the
   ASCII symbols ``$+<=>^`|~``);
3. articles, ``re.sub(pattern, " ", text)`` with ``re``'s Unicode ``\\b``:

   ==  ================================================================
   en  ``\\b(a|an|the)\\b``
   es  ``\\b(un|una|unos|unas|el|la|los|las)\\b``
   de  ``\\b(ein|eine|einen|einem|eines|einer|der|die|das|den|dem|des)\\b``
   vi  ``\\b(của|là|cái|chiếc|những)\\b``
   ar  ``\\sال^|ال``: the first branch can never match (``^`` after a consumed character), so
       every ``ال`` becomes a space, inside words too
   hi  none
   zh  none
   ==  ================================================================

4. tokens: ``text.split()``, or for ``zh`` ``mixed_segmentation``: each character of
   ``[\\u4e00-\\u9fa5]`` (and of ``PUNCT``, of which none is left after step 2) is a token, the
   runs between them are split at whitespace. Other Han characters (extension A, beyond U+9FA5,
   compatibility ideographs) and kana stay inside runs, as in the script.

``normalize_answer`` joins the tokens with single spaces; tokens hold no whitespace, so equal
normalizations are equal token lists, and ``normalize_answer(s).split()`` (what ``f1_score``
counts) gives the tokens back.

Other language codes, for which the script raises ``Unknown Language``, and a null code get one
documented extension (:data:`SPACELESS_RANGES`): no articles, and each character of a script
written without spaces between words (Han, kana, Thai, Lao, Khmer, Myanmar), with the combining
marks of that script that follow it, is a token; the rest is split at whitespace. Japanese and
Thai are thus segmented per character like MLQA's Chinese, while Korean, Russian, French ... keep
whitespace tokens (Korean is written with spaces between words).
"""

from __future__ import annotations

import string
import unicodedata
from functools import cache

import numpy as np
import polars as pl

from pipeline.text.charclasses import (
    _code_points,
    _stored,
    points_class,
    ranges_class,
    space_class,
    word_class,
)
from pipeline.text.normalize import python_lower

#: The languages of the official script.
MLQA_LANGUAGES: tuple[str, ...] = ("en", "es", "hi", "vi", "de", "ar", "zh")

#: The article alternations of ``remove_articles``, in the script's order.
ARTICLES: dict[str, tuple[str, ...]] = {
    "en": ("a", "an", "the"),
    "es": ("un", "una", "unos", "unas", "el", "la", "los", "las"),
    "vi": ("của", "là", "cái", "chiếc", "những"),
    "de": ("ein", "eine", "einen", "einem", "eines", "einer",
           "der", "die", "das", "den", "dem", "des"),
}
#: What ``re.sub('\\sال^|ال', ' ', text)`` replaces (everywhere) for Arabic.
ARABIC_ARTICLE = "\u0627\u0644"

#: ``[\u4e00-\u9fa5]`` of ``mixed_segmentation``, as a Rust class body.
MLQA_CJK_CLASS = r"\x{4e00}-\x{9fa5}"

#: Code point ranges of the scripts written without spaces between words, segmented per
#: character under the extension: CJK symbols (after the ideographic space), kana and kanbun,
#: CJK strokes, Han (extension A, unified, compatibility, the supplementary planes up to
#: extension H), halfwidth katakana, kana supplements, Thai, Lao, Myanmar, Khmer.
SPACELESS_RANGES: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0E7F),  # Thai
    (0x0E80, 0x0EFF),  # Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x19E0, 0x19FF),  # Khmer symbols
    (0x3001, 0x303F),  # CJK symbols and punctuation, without U+3000 IDEOGRAPHIC SPACE
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x3190, 0x319F),  # Kanbun
    (0x31C0, 0x31FF),  # CJK strokes, Katakana phonetic extensions
    (0x3400, 0x4DBF),  # Han extension A
    (0x4E00, 0x9FFF),  # Han
    (0xF900, 0xFAFF),  # Han compatibility
    (0xFF65, 0xFF9F),  # halfwidth Katakana
    (0x1B000, 0x1B16F),  # kana supplement, extended, small kana
    (0x20000, 0x323AF),  # Han extensions B to H, compatibility supplement
)

_OTHER = "other"


def _derive_punctuation_class() -> str:
    points, text = _code_points()
    # One category look-up per code point, once (then cached on disk).
    member = np.fromiter(
        (unicodedata.category(ch).startswith("P") for ch in text), dtype=bool, count=len(text)
    )
    member |= np.isin(points, [ord(ch) for ch in string.punctuation])
    return points_class(points[member])


@cache
def punctuation_class() -> str:
    """Class body of the script's ``PUNCT``: category ``P*`` (this interpreter's Unicode
    database) or ``string.punctuation``.

    >>> pl.select(pl.lit("a,b。c$d€e«f").str.replace_all(f"[{punctuation_class()}]", "")).item()
    'abcd€ef'
    """
    return _stored("mlqa-punct-class", _derive_punctuation_class)


@cache
def spaceless_class() -> str:
    """Class body of :data:`SPACELESS_RANGES`."""
    starts = np.array([a for a, _ in SPACELESS_RANGES])
    ends = np.array([b for _, b in SPACELESS_RANGES])
    return ranges_class(starts, ends)


@cache
def spaceless_mark_class() -> str:
    """Class body of the combining marks (category ``M*``) inside :data:`SPACELESS_RANGES`."""
    points = np.concatenate([np.arange(a, b + 1) for a, b in SPACELESS_RANGES])
    member = np.array([unicodedata.category(chr(p)).startswith("M") for p in points], dtype=bool)
    return points_class(points[member])


def remove_punctuation(text: pl.Expr) -> pl.Expr:
    """``remove_punc``: delete every character of ``PUNCT``.

    >>> pl.select(remove_punctuation(pl.lit("«¿Qué?» — 北京。$5"))).item()
    'Qué  北京5'
    """
    return text.str.replace_all(f"[{punctuation_class()}]", "")


@cache
def _article_pattern(lang: str) -> str:
    non_word = f"[^{word_class()}]"
    alternation = "|".join(ARTICLES[lang])
    # ``\b(...)\b`` without look-around: the boundary characters are captured and put back.
    return f"(^|{non_word})(?:{alternation})({non_word}|$)"


def remove_articles(text: pl.Expr, lang: str) -> pl.Expr:
    """``remove_articles(text, lang)`` of the script for one fixed language.

    A match is a maximal run of word characters (``str.isalnum()`` or ``_``) that equals an
    article; it becomes one space. Matches consume one boundary character on each side, so two
    articles one character apart need a second pass; after it none can remain (the proof is in
    :func:`pipeline.text.normalize.remove_articles`). Arabic replaces every ``ال``.

    >>> pl.select(remove_articles(pl.lit("der hund, die katze€des"), "de")).item()
    '  hund,   katze€ '
    >>> pl.select(remove_articles(pl.lit("الكتاب"), "ar")).item()
    ' كتاب'
    """
    if lang == "ar":
        return text.str.replace_all(ARABIC_ARTICLE, " ", literal=True)
    if lang not in ARTICLES:
        return text
    pattern = _article_pattern(lang)
    return text.str.replace_all(pattern, "${1} ${2}").str.replace_all(pattern, "${1} ${2}")


@cache
def _segment_pattern(lang: str) -> str:
    spaces = space_class()
    if lang == "zh":
        return f"[{MLQA_CJK_CLASS}]|[^{spaces}{MLQA_CJK_CLASS}]+"
    if lang in MLQA_LANGUAGES:
        return f"[^{spaces}]+"
    spaceless = spaceless_class()
    return f"[{spaceless}][{spaceless_mark_class()}]*|[^{spaces}{spaceless}]+"


def segment(text: pl.Expr, lang: str) -> pl.Expr:
    """``white_space_fix`` before the join, for one fixed language: ``text.split()``,
    ``mixed_segmentation(text)`` for ``zh``, the extension's segmentation for other codes.

    >>> pl.select(segment(pl.lit("2022年 冬奥会 ok"), "zh")).item().to_list()
    ['2022', '年', '冬', '奥', '会', 'ok']
    >>> pl.select(segment(pl.lit("東京タワー 1958年"), "ja")).item().to_list()
    ['東', '京', 'タ', 'ワ', 'ー', '1958', '年']
    >>> pl.select(segment(pl.lit("กินข้าว"), "th")).item().to_list()
    ['กิ', 'น', 'ข้', 'า', 'ว']
    """
    return text.str.extract_all(_segment_pattern(lang))


def mlqa_core(text: pl.Expr) -> pl.Expr:
    """The language-independent steps of ``normalize_answer``: lower, then remove ``PUNCT``."""
    return remove_punctuation(python_lower(text))


def tokens_for(core: pl.Expr, lang: str) -> pl.Expr:
    """Tokens of a text already through :func:`mlqa_core`, for one fixed language."""
    return segment(remove_articles(core, lang), lang)


def _group(lang: str) -> str:
    return lang if lang in MLQA_LANGUAGES else _OTHER


def _groups(lang: pl.Expr) -> pl.Expr:
    """The rule group of each row: its code when MLQA knows it, else ``"other"``."""
    return pl.when(lang.is_in(MLQA_LANGUAGES)).then(lang).otherwise(pl.lit(_OTHER))


def _by_group(core: pl.Expr, lang: str | pl.Expr) -> pl.Expr:
    if isinstance(lang, str):
        return tokens_for(core, _group(lang))
    groups = _groups(lang)
    # Each branch sees the text nulled outside its rows, so every row is tokenized once.
    return pl.coalesce(
        tokens_for(pl.when(groups == group).then(core), group)
        for group in (*MLQA_LANGUAGES, _OTHER)
    )


def mlqa_tokens(text: pl.Expr, lang: str | pl.Expr) -> pl.Expr:
    """``normalize_answer(text, lang).split()`` of the MLQA script (``List[String]``).

    ``lang`` is one code for every row or an expression with one code per row (ISO 639-1,
    lowercase, without region: ``pipeline.text.language.language_stages`` gives those). Codes
    outside :data:`MLQA_LANGUAGES`, and null, take the extension of the module docstring. A null
    text gives null.

    >>> frame = pl.DataFrame({"text": ["2022年冬奥会在北京举行。", "The Eiffel-Tower!",
    ...                                "Los Ángeles", "東京タワー"],
    ...                       "lang": ["zh", "en", "es", "ja"]})
    >>> for tokens in frame.select(mlqa_tokens(pl.col("text"), pl.col("lang")))["text"]:
    ...     print(tokens.to_list())
    ['2022', '年', '冬', '奥', '会', '在', '北', '京', '举', '行']
    ['eiffeltower']
    ['ángeles']
    ['東', '京', 'タ', 'ワ', 'ー']
    """
    return _by_group(mlqa_core(text), lang)


def mlqa_normalized(text: pl.Expr, lang: str | pl.Expr) -> pl.Expr:
    """``normalize_answer(text, lang)`` of the MLQA script: the tokens joined by one space.

    >>> pl.select(mlqa_normalized(pl.lit("Der Hund, das Haus."), "de")).item()
    'hund haus'
    """
    return mlqa_tokens(text, lang).list.join(" ")


def mlqa_tokens_each(texts: pl.Expr, lang: str | pl.Expr) -> pl.Expr:
    """:func:`mlqa_tokens` of every string of a ``List[String]`` column (``List[List[String]]``).

    Each row's list is tokenized under that row's code, in one pass over the list elements per
    rule group (``list.eval`` sees no other column, so the code is fixed within a group).

    >>> frame = pl.DataFrame({"refs": [["北京", "北京市"], ["the cat"]], "lang": ["zh", "en"]})
    >>> frame.select(mlqa_tokens_each(pl.col("refs"), pl.col("lang")))["refs"].to_list()
    [[['北', '京'], ['北', '京', '市']], [['cat']]]
    """
    if isinstance(lang, str):
        return texts.list.eval(mlqa_tokens(pl.element(), _group(lang)))
    groups = _groups(lang)
    return pl.coalesce(
        pl.when(groups == group).then(texts).list.eval(mlqa_tokens(pl.element(), group))
        for group in (*MLQA_LANGUAGES, _OTHER)
    )
