"""The language of a row: given in the ``lang`` column, or detected from the script of its text.

Metrics that tokenize by language (answer EM/F1 by MLQA's rules, sacreBLEU's tokenizers, ROUGE
on every script) read one ``lang`` per row, an ISO 639-1 code:

1. the record's ``lang`` column, lowercased and stripped, when it is set (``zh``, ``ja``,
   ``ru`` ...; a region or script suffix is dropped: ``zh-Hans`` -> ``zh``);
2. else the RGB ``language`` column (the data set's language, ``en`` or ``zh``), the same way;
3. else **detected** from the letters of ``reference`` and ``response`` together, by script
   (:func:`detect_language`): the script with most letters names the language — Han ``zh``
   (``ja`` when the text also holds kana), kana ``ja``, Hangul ``ko``, Thai ``th``, Cyrillic
   ``ru``, Arabic ``ar``, Devanagari ``hi``, Greek ``el``, Hebrew ``he``, Latin ``en``; a text
   without letters is ``und`` (undetermined).

Detection sees scripts, not languages: Spanish, German or Vietnamese rows are ``en`` for it
(Latin script), Ukrainian ``ru``, Cantonese ``zh``. Set ``lang`` where that matters (MLQA
removes different articles per language). ASCII-only rows are ``en`` without a regex pass.
"""

from __future__ import annotations

import polars as pl

#: Scripts counted by :func:`detect_language`, in the order ties are broken, with the language
#: each stands for.
SCRIPT_LANGUAGES: tuple[tuple[str, str], ...] = (
    ("Han", "zh"),
    ("Hiragana|Katakana", "ja"),
    ("Hangul", "ko"),
    ("Thai", "th"),
    ("Cyrillic", "ru"),
    ("Arabic", "ar"),
    ("Devanagari", "hi"),
    ("Greek", "el"),
    ("Hebrew", "he"),
    ("Latin", "en"),
)
#: The code of a row without letters.
UNDETERMINED = "und"


def _class(scripts: str) -> str:
    return "[" + "".join(f"\\p{{{s}}}" for s in scripts.split("|")) + "]"


def given_language(code: pl.Expr) -> pl.Expr:
    """A given code, lowercased, without region or script suffix; null when empty.

    >>> pl.select(given_language(pl.lit(" zh-Hans "))).item(), pl.select(
    ...     given_language(pl.lit(""))).item()
    ('zh', None)
    """
    base = code.str.strip_chars().str.to_lowercase().str.replace(r"[-_].*$", "")
    return pl.when(base != "").then(base)


def detect_language(*texts: pl.Expr) -> pl.Expr:
    """The language of ``texts`` (concatenated, nulls as empty) by the script with most letters.

    >>> frame = pl.DataFrame({"t": ["Paris", "北京是首都", "東京はどこ", "서울", "Москва", "12 !",
    ...                             "Ça va, señor?"]})
    >>> frame.select(detect_language(pl.col("t")).alias("lang"))["lang"].to_list()
    ['en', 'zh', 'ja', 'ko', 'ru', 'und', 'en']
    """
    text = pl.concat_str([t.fill_null("") for t in texts], separator=" ")
    wide = pl.when(text.str.contains(r"[^\x00-\x7F]")).then(text)  # null: ASCII only
    counts = [wide.str.count_matches(_class(scripts)).fill_null(0)
              for scripts, _ in SCRIPT_LANGUAGES]
    kana = counts[1]
    best = pl.max_horizontal(*counts)
    detected = pl.when(best == 0).then(pl.lit(UNDETERMINED))
    for (_, code), count in zip(SCRIPT_LANGUAGES, counts, strict=True):
        if code == "zh":  # Japanese writes Han with kana
            detected = detected.when(count == best).then(
                pl.when(kana > 0).then(pl.lit("ja")).otherwise(pl.lit("zh"))
            )
        else:
            detected = detected.when(count == best).then(pl.lit(code))
    ascii_letters = text.str.contains(r"[A-Za-z]")
    return (
        pl.when(wide.is_not_null()).then(detected.otherwise(pl.lit(UNDETERMINED)))
        .when(ascii_letters).then(pl.lit("en"))
        .otherwise(pl.lit(UNDETERMINED))
    )


def row_language(lang: pl.Expr, language: pl.Expr, reference: pl.Expr, response: pl.Expr
                 ) -> pl.Expr:
    """``lang`` if given, else the RGB ``language``, else detected (the module docstring).

    >>> frame = pl.DataFrame({"lang": ["ZH", None, None], "language": [None, "zh", None],
    ...                       "ref": ["Paris", "Paris", "Paris"], "resp": ["x", "x", "Москва"]})
    >>> frame.select(row_language(pl.col("lang"), pl.col("language"), pl.col("ref"),
    ...                           pl.col("resp")).alias("lang"))["lang"].to_list()
    ['zh', 'zh', 'ru']
    """
    return pl.coalesce(given_language(lang), given_language(language),
                       detect_language(reference, response))


def is_latin(lang: pl.Expr) -> pl.Expr:
    """Whether a row's language is written in Latin script as far as the metrics know: ``en``,
    the undetermined ``und``, or a code of no script this module detects (``es``, ``de``,
    ``vi``, ``fr`` ...): the rows that keep the English tokenizers under ``auto``.

    >>> codes = pl.Series(["de", "zh", None], dtype=pl.String)
    >>> pl.select(is_latin(pl.lit(codes))).to_series().to_list()
    [True, False, True]
    """
    non_latin = [code for _, code in SCRIPT_LANGUAGES if code != "en"]
    return ~lang.is_in(non_latin).fill_null(False)
