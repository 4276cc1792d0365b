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
#: Helper column of :func:`language_stages`: whether the row's language is read with the
#: English tokenizers under ``auto`` (:func:`is_latin`), computed once per row.
LATIN = "_lang_latin"
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


def language_stages(lang: str, language: str, reference: str, response: str
                    ) -> list[dict[str, pl.Expr]]:
    """Column stages that set ``lang`` of each row (the module docstring): ``lang`` if given,
    else the RGB ``language``, else detected from ``reference`` and ``response`` by script.

    Stages, so that the script counts are computed once per row and only on the rows that need
    them (no code given, some non-ASCII text); the ``_lang_*`` helper columns are left for the
    caller to drop, :data:`LATIN` among them for the metrics that choose a tokenizer by it.

    >>> frame = pl.DataFrame({"lang": ["ZH", None, None, None, None, None, None],
    ...                       "language": [None, "zh-CN", None, None, None, None, None],
    ...                       "ref": ["x", "x", "Москва", "東京はどこ", "서울", "12 !", "Ça va"],
    ...                       "resp": ["x", "x", "x", "x", "x", "", "señor"]}).lazy()
    >>> for stage in language_stages("lang", "language", "ref", "resp"):
    ...     frame = frame.with_columns(**stage)
    >>> frame.collect()["lang"].to_list()
    ['zh', 'zh', 'ru', 'ja', 'ko', 'und', 'en']
    """
    given = pl.coalesce(given_language(pl.col(lang)), given_language(pl.col(language)))
    texts = [pl.col(c) for c in (reference, response)]
    # Only rows without a code and with some non-ASCII text are read for their script; the
    # others are "en" when they hold an ASCII letter, else undetermined.
    wide_rows = given.is_null() & pl.any_horizontal(
        t.str.contains(r"[^\x00-\x7F]").fill_null(False) for t in texts
    )
    to_detect = pl.concat_str([pl.when(wide_rows).then(t.fill_null("")) for t in texts],
                              separator=" ")
    ascii_letter = pl.any_horizontal(t.str.contains(r"[A-Za-z]").fill_null(False) for t in texts)
    counts = pl.col("_lang_counts")
    codes = [code for _, code in SCRIPT_LANGUAGES]
    # The first script with most letters (arg_max takes the first maximum).
    best = counts.list.arg_max().replace_strict(dict(enumerate(codes)), return_dtype=pl.String)
    detected = (
        pl.when(counts.is_null()).then(
            pl.when(pl.col("_lang_ascii")).then(pl.lit("en")).otherwise(pl.lit(UNDETERMINED))
        )
        .when(counts.list.max() == 0).then(pl.lit(UNDETERMINED))
        .when((best == "zh") & (counts.list.get(1) > 0)).then(pl.lit("ja"))  # Han with kana
        .otherwise(best)
    )
    wide = pl.col("_lang_wide")
    return [
        {"_lang_given": given, "_lang_wide": to_detect,
         "_lang_ascii": pl.when(given.is_null()).then(ascii_letter)},
        {"_lang_counts": pl.when(wide.is_not_null()).then(pl.concat_list(
            [wide.str.count_matches(_class(scripts)).fill_null(0)
             for scripts, _ in SCRIPT_LANGUAGES]
        ))},
        {lang: pl.coalesce(pl.col("_lang_given"), detected)},
        {LATIN: is_latin(pl.col(lang))},
    ]


def detect_language(frame: pl.DataFrame, reference: str, response: str) -> pl.Series:
    """The detected language of each row of ``frame`` (no code given): a convenience over
    :func:`language_stages`.

    >>> frame = pl.DataFrame({"r": ["Paris", "北京是首都", "東京はどこ", "Ça va, señor?"]})
    >>> detect_language(frame, "r", "r").to_list()
    ['en', 'zh', 'ja', 'en']
    """
    lazy = frame.lazy().with_columns(
        _lang_in=pl.lit(None, pl.String), _language_in=pl.lit(None, pl.String)
    )
    for stage in language_stages("_lang_in", "_language_in", reference, response):
        lazy = lazy.with_columns(**stage)
    return lazy.collect()["_lang_in"].alias("lang")


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
