"""Numeric accuracy: the share of the reference's numbers that the response also states.

:func:`quantities` reads the distinct numbers of a text as people write them, each with its
unit; :func:`numeric_accuracy` compares those of reference and response. All of it is regex,
list expressions and joins over whole batches.

**Numbers as people write them** (the default; issue 34). The text is first rewritten by
:func:`~pipeline.text.numbers.as_digits` with the row's ``lang``: number words (English in every
row; German, French, Spanish in their rows; not "one", "ein", "un", "uno"), scale words
("1.5 million", "3万"), Chinese numerals (一 … 万亿, ``三点五``, ``百分之五``), thousands
separators and decimal commas by language (``en``: ``1,642`` = 1642, ``3,5`` is 3 and 5;
``de fr es it pt nl ru``: ``1.642`` = 1642, ``3,5`` = 3.5), unit spellings in one form
(``metres`` = ``m``, ``$`` = ``USD`` = ``dollars`` = ``usd``, ``Prozent`` = ``%``) and ranges.
The result is then read by the rules below for digits, and a unit directly after a number stays
with it (``"1642 m"``). Two quantities are the same when their numbers are (canonical spelling;
a percentage is another number than the bare one, as below) and their units are the same **or
one side has none** (``1642`` matches ``1642 m``; ``1642 km`` does not; units are never
converted: ``1.642 km`` is not ``1642 m``). **A range is its two endpoints**, each with the
range's unit (``5–7 days`` = ``5 to 7 days`` = ``between 5 and 7 days`` = ``5 d``, ``7 d``;
``5-10%`` = 5% and 10%): a range matches the same range, a single number counts for one
endpoint (``5 days`` against ``5–7 days``: 0.5), and a number inside a range is not an endpoint
(``6`` against ``5–7``: 0). ``written=False`` reads digits alone by the rules below (the
``enhanced-framework`` preset, whose tool reads digits only).

**Digits** (:func:`numbers`, and the second step of :func:`quantities`):

Fullwidth forms are folded first: the digits ``０-９`` become ``0-9`` and ``．`` ``，`` ``＋``
become ``.`` ``,`` ``+`` ("１，２３４．５" is 1234.5); the fullwidth minus and percent are already
known below. Chinese, Japanese and Thai are written without spaces, so a character of those scripts
(:data:`~pipeline.text.rouge_tokenize.CHARACTER_TOKEN_RANGES`: kana, CJK ideographs, Thai) counts
as a separator, never as a letter a number is glued to: "共有70个议席" has 70, "第3名" 3,
"1月3日" 1 and 3, "气温为-5度" -5. Texts with neither are read exactly as before.

What counts as a number (ASCII digits ``0-9``, after that folding):

* A run of digits that starts a word: it is not preceded by a letter, digit or underscore.
  Digits glued after letters are part of an identifier and are *not* numbers ("covid19",
  "h2o", "mp3", "B12"); digits followed by letters *are* ("10km" -> 10, "3rd" -> 3,
  "1990s" -> 1990). A hyphen splits words, so "covid-19" has the number 19.
* An optional decimal part ``.digits`` ("3.5"), or a leading-dot decimal ".5" (= 0.5) when the
  dot itself starts a word. A comma is never a decimal mark; "1.2.3" gives 1.2 and 3.
* Thousands separators: commas between well-formed groups (1-3 digits, then groups of exactly
  3) are removed, "1,234,567.5" = 1234567.5. Any other comma separates numbers:
  "1,2345" -> 1 and 2345, "3,5" -> 3 and 5. Spaces never group digits ("1 234" is 1 and 234).
* Sign: a dash (``-`` U+2010-U+2014 U+2212 U+FE63 U+FF0D) or ``+`` directly before the digits
  (or before ".5") is a sign only when it starts a word, i.e. follows the start of the text,
  whitespace or punctuation: "-5", "(−5)", "a −5" are -5 and "+5" is 5. After a letter or
  digit it is a separator: "2010-2015" is 2010 and 2015, "17-year" is 17, "x-5" is 5,
  "1+2" is 1 and 2. "--5" keeps the second dash as the sign.
* Percent: ``%``, ``％``, ``﹪``, "percent", "per cent" (any case, optional spaces) after
  the digits mark a percentage: "45%" = "45 %" = "45 percent" = "45 Per Cent". A percentage is
  a different value from the bare number: "45" in the reference needs a bare 45 in the
  response and "45%" needs a percentage (no conversion to 0.45; "45 percentage points" is a
  bare 45). In "5-10%" only 10 is a percentage.
* No exponents: "1e6" is 1. Read as digits alone (``written=False``), "1.5 million" is 1.5
  and "five" is not a number; written numbers are the default reading (above).

Canonical spelling: "-" for the sign, no "+", no leading zeros ("007" = 7), no trailing zeros
in the fraction and no empty fraction ("3.50" = 3.5, "3.0" = 3), "-0" = 0, then "%" for a
percentage. Two numbers are equal when their canonical spellings are equal.

Score: the share of the reference's distinct quantities found in the response (digits alone:
``|numbers(reference) ∩ numbers(response)| / |numbers(reference)|``), 1.0 when the reference has
no number (nothing to get wrong), null when either text is null.
"""

from __future__ import annotations

import polars as pl

from pipeline.metrics.arithmetic import safe_div, share_found
from pipeline.text.charclasses import word_class
from pipeline.text.numbers import UNITS, as_digits_series
from pipeline.text.rouge_tokenize import character_token_class

_DASHES = "\\-\u2010\u2011\u2012\u2013\u2014\u2212\ufe63\uff0d"
# "per cent" ends at a character CPython's ``re`` does not count as a word character (Rust's
# ``\b`` also counts combining marks such as U+3099): that character is kept (group 2).
_PERCENT = rf"(?i)([0-9])\s*(?:[%\uff05\ufe6a]|per\s*cent(?:$|([^{word_class()}])))"
# A sign directly before the digits (or ".5") when the character before it is not a word
# character; ``\B`` before a non-word character means exactly that (no look-behind needed).
# A plus sign becomes a space, so a dash before it ("-+5") is not taken for the sign.
_MINUS = rf"\B[{_DASHES}](\.?[0-9])"
_PLUS = r"\B\+(\.?[0-9])"
_RAW = r"(?:\B-)?(?:\b[0-9]+(?:,[0-9]+)*(?:\.[0-9]+)?|\B\.[0-9]+)%?"
_WELL_FORMED = r"^-?[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?%?$"
#: Fullwidth digits, full stop, comma and plus sign, and their ASCII forms.
_FULLWIDTH = [*(chr(0xFF10 + d) for d in range(10)), "\uff0e", "\uff0c", "\uff0b"]
_ASCII = [*(str(d) for d in range(10)), ".", ",", "+"]
# A space after a character of the scripts written without spaces, before what may start a
# number: the digits (or the sign, or ".5") then start a word.
_UNSPACED = rf"([{character_token_class()}])([0-9.+{_DASHES}])"


def _folded(text: pl.Expr) -> pl.Expr:
    """``text`` with fullwidth forms folded and a space after the characters of unspaced
    scripts before a number; ASCII rows are passed through untouched (and unscanned)."""
    wide = pl.when(text.str.len_bytes() != text.str.len_chars()).then(text)
    spaced = wide.str.replace_many(_FULLWIDTH, _ASCII).str.replace_all(_UNSPACED, "${1} ${2}")
    return pl.coalesce(spaced, text)


def _canonical(number: pl.Expr) -> pl.Expr:
    """Canonical spelling of one extracted number (``-?digits(.digits)?%?``)."""
    return (
        number.str.replace(r"^(-?)\.", "${1}0.")
        .str.replace(r"^(-?)0+([0-9])", "${1}${2}")
        .str.replace(r"(\.[0-9]*?)0+(%?)$", "${1}${2}")
        .str.replace(r"\.(%?)$", "${1}")
        .str.replace(r"^-0(%?)$", "0${1}")
    )


def numbers(text: pl.Expr) -> pl.Expr:
    """Distinct numbers of a text in canonical spelling (``List[String]``, first-seen order).

    >>> import polars as pl
    >>> text = pl.lit("From 1,200.50 to −3.0 (45 per cent) in 2010-2015")
    >>> pl.select(numbers(text)).item().to_list()
    ['1200.5', '-3', '45%', '2010', '2015']
    >>> pl.select(numbers(pl.lit("第六届共有70个议席，增长３．５％"))).item().to_list()
    ['70', '3.5%']
    """
    marked = (
        _folded(text).str.replace_all(_PERCENT, "${1}%${2}")
        .str.replace_all(_MINUS, "-${1}")
        .str.replace_all(_PLUS, " ${1}")
    )
    element = pl.element()
    # Well-formed thousands groups lose their commas; other commas split the token in pieces.
    split_commas = (
        pl.when(element.str.contains(_WELL_FORMED))
        .then(element.str.replace_all(",", "", literal=True))
        .otherwise(element.str.replace_all(",", " ", literal=True))
    )
    pieces = marked.str.extract_all(_RAW).list.eval(split_commas).list.join(" ")
    return (
        pieces.str.extract_all(r"\S+")
        .list.eval(_canonical(element))
        .list.unique(maintain_order=True)
    )


_UNIT = "|".join(unit for unit in UNITS if unit != "%")
_QUANTITY = rf"(?:\B-)?(?:\b[0-9]+(?:\.[0-9]+)?|\B\.[0-9]+)%?(?: (?:{_UNIT})\b)?"


def quantities(text: pl.Expr, lang: pl.Expr | None = None) -> pl.Expr:
    """Distinct numbers of a text as people write them, each with its unit when one follows
    (``List[String]``: ``"1642 m"``, ``"3.5%"``, ``"5"``), read by the row's language.

    The text is first read by :func:`~pipeline.text.numbers.as_digits` (number words, Chinese
    numerals, separators by language, units, ranges), then as :func:`numbers` reads digits
    (signs, canonical spelling, identifiers such as ``covid19`` are no numbers).

    >>> frame = pl.DataFrame({"text": ["Its deepest point is 1,642 metres.", "3,5 %",
    ...     "five to seven days", "约四十一万两千辆"], "lang": ["en", "de", "en", "zh"]})
    >>> frame.select(quantities(pl.col("text"), pl.col("lang"))).to_series().to_list()
    [['1642 m'], ['3.5%'], ['5 d', '7 d'], ['412000']]
    """
    lang = pl.lit(None, pl.String) if lang is None else lang.cast(pl.String)
    return pl.struct(text=text, lang=lang).map_batches(
        _quantities_batch, return_dtype=pl.List(pl.String), is_elementwise=True)


def _quantities_batch(rows: pl.Series) -> pl.Series:
    """:func:`quantities` of a batch (each step computed once)."""
    folded = pl.select(_folded(pl.lit(rows.struct.field("text")))).to_series()
    read = pl.DataFrame({"text": as_digits_series(folded, rows.struct.field("lang"))})
    marked = read.with_columns(text=_folded(pl.col("text"))).select(
        pl.col("text").str.replace_all(_PERCENT, "${1}%${2}")
        .str.replace_all(_MINUS, "-${1}")
        .str.replace_all(_PLUS, " ${1}")
    ).to_series()
    element = pl.element()
    unit = element.str.extract(r"( \S+)$", 1).fill_null("")
    return pl.select(marked.str.extract_all(_QUANTITY).list.eval(
        pl.concat_str(_canonical(element.str.extract(r"^(\S+)", 1)), unit)
    ).list.unique(maintain_order=True)).to_series().rename(rows.name)


def _found(pair: pl.Series) -> pl.Series:
    """Share of the reference's quantities found among the response's (1.0 where the reference
    has none, null where either is null): the same number (a percentage is another number)
    with the same unit, or without a unit on one side."""
    frame = pair.struct.unnest().with_row_index("_row")

    def exploded(side: str) -> pl.DataFrame:
        token = pl.col("token")
        return frame.select("_row", token=pl.col(side)).explode("token").drop_nulls().with_columns(
            key=pl.concat_str(pl.col("_row"), token, separator="|"),
            value=pl.concat_str(pl.col("_row"), token.str.extract(r"^(\S+)", 1), separator="|"),
            bare=~token.str.contains(" ", literal=True),
        )

    expected, candidates = exploded("expected"), exploded("candidates")
    found = expected.filter(
        pl.col("key").is_in(candidates["key"].implode())
        | pl.col("value").is_in(candidates.filter("bare")["value"].implode())
        | (pl.col("bare") & pl.col("value").is_in(candidates["value"].implode()))
    ).group_by("_row").len("found")
    return frame.join(found, on="_row", how="left").select(
        pl.when(pl.col("candidates").is_not_null()).then(safe_div(
            pl.col("found").fill_null(0), pl.col("expected").list.len(), empty=1.0))
    ).to_series().rename(pair.name)


def numeric_accuracy(
    response: pl.Expr, reference: pl.Expr, lang: pl.Expr | None = None, *, written: bool = True
) -> pl.Expr:
    """Share of the reference's distinct numbers that occur in the response (Float64 in [0, 1]).

    Takes the texts and the row's language; see the module docstring for what counts as the
    same number. ``written=False`` reads digits alone (:func:`numbers`), as the
    ``enhanced-framework`` preset does. 1.0 when the reference has no number.

    >>> import polars as pl
    >>> response, reference = pl.lit("It rose 45 percent to 1,234."), pl.lit("1234 (+45%), 3.0")
    >>> pl.select(numeric_accuracy(response, reference)).item()
    0.6666666666666666
    >>> pl.select(numeric_accuracy(pl.lit("at most five unused days"), pl.lit("5 days"))).item()
    1.0
    """
    if not written:
        return share_found(numbers(reference), numbers(response), empty=1.0)
    return pl.struct(expected=quantities(reference, lang), candidates=quantities(response, lang)
                     ).map_batches(_found, return_dtype=pl.Float64, is_elementwise=True)
