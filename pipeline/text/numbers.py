"""Numbers as people write them, read as polars expressions (no per-row Python).

Two readers share the tables of this module:

* :func:`numbers` (the grounding rule's, :mod:`pipeline.text.claims`): the distinct numbers of a
  text in one string form, whatever the language: a ``,`` or ``.`` before exactly three digits
  separates thousands, any other is a decimal point; number words (:data:`WORD_FORMS`) and
  Chinese numerals (:func:`han_numbers`) count, and a duration counts in hours and minutes;
* :func:`as_digits` (``numeric_accuracy``'s, :mod:`pipeline.metrics.lexical.numeric`): the text
  rewritten so that every number it states is written in digits, by the row's language:

  - **separators**: in ``en`` (and any language not listed in :data:`DECIMAL_COMMA`) a comma
    between well-formed groups of three separates thousands (``1,642`` = 1642) and any other
    comma separates numbers (``3,5`` is 3 and 5); in :data:`DECIMAL_COMMA` languages a point
    between well-formed groups separates thousands (``1.642`` = 1642) and a comma is the
    decimal mark (``3,5`` = 3.5, ``1.642,5`` = 1642.5; a point elsewhere stays a decimal
    point: ``3.5`` = 3.5). A no-break, narrow no-break or thin space between well-formed
    groups separates thousands everywhere, a plain space in the :data:`DECIMAL_COMMA`
    languages (``1 642``);
  - **number words** 0-99 of English in every row, and of German, French and Spanish in rows of
    that language (:func:`cardinal_words`: ``five``, ``twenty-seven``, ``siebenundzwanzig``,
    ``quatre-vingt-dix``, ``treinta y cinco``, ``veintidós``); not ``one``, ``ein(e)``,
    ``un(e)``, ``uno``/``una`` (pronouns and articles as often as numbers);
  - **scale words** after a number, in digits or words (:data:`SCALES`: ``hundred``,
    ``thousand``, ``million``, ``billion``, ``Millionen``, ``Milliarden``, ``mille``,
    ``millions``, ``milliards``, ``mil``, ``millones``, ``万``, ``亿``): ``1.5 million`` =
    1500000, ``two hundred fifty`` = 250, ``3万`` = 30000; a singular scale word alone after
    ``a`` is its value (``a thousand`` = 1000);
  - **Chinese numerals** from 一 to 万亿 (:func:`han_value`: ``四十一万两千`` = 412000,
    ``三亿五千万`` = 350000000, ``二〇一八`` = 2018, ``三点五`` = 3.5; a lone ``一`` is not a
    number, nor is any other lone digit character);
  - **units** in one spelling (:data:`UNITS`) after the number, separated by one space: ``1642
    metres`` = ``1642 m``, ``$5`` = ``5 USD`` = ``5 dollars`` = ``5 usd``; percent in every
    listed spelling becomes ``%`` glued to the number (``3,5 Prozent`` = ``3.5%``,
    ``百分之五`` = ``5%``);
  - **ranges** (``5–7 days``, ``5 to 7 days``, ``5-7 days``, ``between 5 and 7 days``, ``zwischen
    5 und 7``, ``entre 5 y 7``, ``de 5 à 7``): the unit after the second number is written
    after the first too (``5 d to 7 d``), so a range reads as its two endpoints with the unit.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from functools import cache, partial

import polars as pl

from pipeline.text.evidence import CHARACTER_SCRIPTS

_WORD = rf"[^\W_{CHARACTER_SCRIPTS}]+"
_NUMBER = r"\p{Nd}+(?:[.,]\p{Nd}+)*"

#: Word forms read as one form: number words as digits, unit words as one name.
WORD_FORMS: dict[str, str] = {
    # "one" is a pronoun as often as a number ("one of the best"): not read as 1.
    **dict.fromkeys(("two", "zwei", "deux", "dos"), "2"),
    **dict.fromkeys(("three", "drei", "trois", "tres"), "3"),
    **dict.fromkeys(("four", "vier", "quatre", "cuatro"), "4"),
    **dict.fromkeys(("five", "fünf", "cinq", "cinco"), "5"),
    **dict.fromkeys(("six", "sechs", "seis"), "6"),
    **dict.fromkeys(("seven", "sieben", "sept", "siete"), "7"),
    **dict.fromkeys(("eight", "acht", "huit", "ocho"), "8"),
    **dict.fromkeys(("nine", "neun", "neuf", "nueve"), "9"),
    **dict.fromkeys(("ten", "zehn", "dix", "diez"), "10"),
    **dict.fromkeys(("eleven", "elf", "onze"), "11"),
    **dict.fromkeys(("twelve", "zwölf", "douze", "doce"), "12"),
    "thirteen": "13", "fourteen": "14", "fifteen": "15", "sixteen": "16", "seventeen": "17",
    "eighteen": "18", "nineteen": "19",
    **dict.fromkeys(("twenty", "zwanzig", "vingt", "veinte"), "20"),
    **dict.fromkeys(("thirty", "dreißig", "trente", "treinta"), "30"),
    **dict.fromkeys(("forty", "vierzig", "quarante", "cuarenta"), "40"),
    **dict.fromkeys(("fifty", "fünfzig", "cinquante", "cincuenta"), "50"),
    **dict.fromkeys(("sixty", "sechzig", "soixante", "sesenta"), "60"),
    **dict.fromkeys(("seventy", "siebzig", "setenta"), "70"),
    **dict.fromkeys(("eighty", "achtzig", "ochenta"), "80"),
    **dict.fromkeys(("ninety", "neunzig", "noventa"), "90"),
    # Ordinals from the third on (first and second are words as often: "a second look").
    **dict.fromkeys(("third", "dritte", "dritten", "troisième", "tercero", "tercera"), "3"),
    **dict.fromkeys(("fourth", "vierte", "vierten", "quatrième", "cuarto", "cuarta"), "4"),
    **dict.fromkeys(("fifth", "fünfte", "fünften", "cinquième", "quinto", "quinta"), "5"),
    **dict.fromkeys(("hundred", "hundert", "cien", "ciento"), "100"),
    **dict.fromkeys(("thousand", "tausend", "mille", "mil"), "1000"),
    **dict.fromkeys(("first", "erste", "ersten", "premier", "première", "primero", "primera"),
                    "1st"),
    **dict.fromkeys(("second", "zweite", "zweiten", "deuxième", "segundo", "segunda"), "2nd"),
    # Month names (not those that are words or names as often: may, march, mars, august,
    # avril).
    **dict.fromkeys(("january", "januar", "janvier", "enero"), "1"),
    **dict.fromkeys(("february", "februar", "février", "febrero"), "2"),
    **dict.fromkeys(("märz", "marzo"), "3"),
    **dict.fromkeys(("april", "abril"), "4"),
    **dict.fromkeys(("mai", "mayo"), "5"),
    **dict.fromkeys(("june", "juni", "juin", "junio"), "6"),
    **dict.fromkeys(("july", "juli", "juillet", "julio"), "7"),
    **dict.fromkeys(("août", "agosto"), "8"),
    **dict.fromkeys(("september", "septembre", "septiembre"), "9"),
    **dict.fromkeys(("october", "oktober", "octobre", "octubre"), "10"),
    **dict.fromkeys(("november", "novembre", "noviembre"), "11"),
    **dict.fromkeys(("december", "dezember", "décembre", "diciembre"), "12"),
    **dict.fromkeys(("m", "meter", "meters", "metre", "metres", "metern", "mètre", "mètres",
                     "metro", "metros"), "m"),
    **dict.fromkeys(("km", "kilometer", "kilometers", "kilometre", "kilometres",
                     "kilometern", "kilomètre", "kilomètres", "kilómetro", "kilómetros"), "km"),
    **dict.fromkeys(("kg", "kilogram", "kilograms", "kilogramm", "kilogramme",
                     "kilogrammes", "kilogramo", "kilogramos"), "kg"),
    **dict.fromkeys(("percent", "percentage", "prozent", "pourcent", "porcentaje", "ciento"),
                    "percent"),
    **dict.fromkeys(("min", "mins", "minute", "minutes", "minuten", "minutos"), "minute"),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours", "stunde", "stunden", "heure", "heures",
                     "hora", "horas"), "hour"),
    **dict.fromkeys(("usd", "dollar", "dollars", "$"), "dollar"),
    **dict.fromkeys(("eur", "euro", "euros", "€"), "euro"),
}


_NUMBER_WORDS = sorted(w for w, form in WORD_FORMS.items() if form.isdigit())
_ORDINALS = frozenset(("third", "dritte", "dritten", "troisième", "tercero", "tercera",
                       "fourth", "vierte", "vierten", "quatrième", "cuarto", "cuarta",
                       "fifth", "fünfte", "fünften", "cinquième", "quinto", "quinta"))
_CARDINALS = "|".join(w for w in _NUMBER_WORDS if int(WORD_FORMS[w]) < 100
                      and w not in _ORDINALS)
#: Number words joined into one number ("cuarenta y cinco", "vingt et un"): not read here.
_JOINED = rf"\b(?:{_CARDINALS})\s+(?:y|et|und|and)\s+(?:{_CARDINALS})\b"


_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
         "eighty": 80, "ninety": 90}
_UNITS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
          "eight": 8, "nine": 9}
_COMPOUND = rf"(?i)\b(?:{'|'.join(_TENS)})-(?:{'|'.join(_UNITS)})\b"
#: Chinese digits (``两`` and ``〇`` too) and the units that make Chinese numerals.
_HAN_DIGITS = {"零": "0", "〇": "0", "一": "1", "二": "2", "两": "2", "三": "3", "四": "4",
               "五": "5", "六": "6", "七": "7", "八": "8", "九": "9"}
#: A Chinese numeral: digits with at least one unit (``六千三百``, ``五十五``,
#: ``四十一万两千``), or two digits or more (``二〇一八``); a lone ``一`` (一种) is no number.
HAN_NUMERAL = (
    "(?:[0-9零〇一二两三四五六七八九十百千万亿]*[十百千万亿][零〇一二两三四五六七八九十百千万亿]*"
    "|[零〇一二三四五六七八九]{2,})"
)


def _compound_value(word: pl.Expr) -> pl.Expr:
    """``twenty-seven`` -> ``"27"``."""
    tens, units = word.str.to_lowercase().str.split("-").list.first(), word.str.to_lowercase(
    ).str.split("-").list.last()
    return (tens.replace_strict(_TENS, return_dtype=pl.Int64)
            + units.replace_strict(_UNITS, return_dtype=pl.Int64)).cast(pl.String)


def _section_value(section: pl.Expr) -> pl.Expr:
    """The value of a Chinese numeral below 万 written with ASCII digits (``6千3百`` ->
    6300, ``十8`` -> 18); digits alone read as written (``2018``)."""
    def part(unit: str, scale: int) -> pl.Expr:
        digit = section.str.extract(rf"(\d?){unit}", 1)
        present = section.str.contains(unit)
        value = pl.when(digit == "").then(1).otherwise(digit.cast(pl.Int64, strict=False))
        return pl.when(present).then(value * scale).otherwise(0)

    last = section.str.extract(r"(\d)$", 1).cast(pl.Int64, strict=False).fill_null(0)
    with_units = part("千", 1000) + part("百", 100) + part("十", 10) + last
    plain = section.cast(pl.Int64, strict=False)
    return pl.when(section.str.contains("[十百千]")).then(with_units).otherwise(plain).fill_null(0)


def _below_wan(digits: pl.Expr) -> pl.Expr:
    """The value of a Chinese numeral below 亿 whose digits are ASCII (``41万2千`` -> 412000)."""
    high = digits.str.extract(r"^(.*)万", 1)
    low = pl.when(high.is_not_null()).then(digits.str.extract(r"万(.*)$", 1)).otherwise(digits)
    high_value = pl.when(high == "").then(1).otherwise(_section_value(high)).fill_null(0)
    return high_value * 10000 + _section_value(low)


def han_value(run: pl.Expr) -> pl.Expr:
    """The value of a Chinese numeral (:data:`HAN_NUMERAL`) from 一 to 万亿 (Int64).

    >>> runs = pl.Series(["四十一万两千", "三亿五千万", "一万亿", "二〇一八", "一千零五"])
    >>> pl.select(han_value(runs)).to_series().to_list()
    [412000, 350000000, 1000000000000, 2018, 1005]
    """
    digits = run.str.replace_many(list(_HAN_DIGITS), list(_HAN_DIGITS.values()))
    yi = digits.str.extract(r"^(.*)亿", 1)
    below = pl.when(yi.is_not_null()).then(digits.str.extract(r"亿(.*)$", 1)).otherwise(digits)
    yi_value = pl.when(yi == "").then(1).otherwise(_below_wan(yi)).fill_null(0)
    return yi_value * 100_000_000 + _below_wan(below)


def han_numbers(text: pl.Expr) -> pl.Expr:
    """The Chinese numerals of ``text`` as digit strings (``List[String]``).

    >>> pl.select(han_numbers(pl.lit("全长六千三百公里，约四十一万两千辆，二〇一八年，一种"))
    ...           ).item().to_list()
    ['6300', '412000', '2018']
    """
    return text.map_batches(_han_numbers_series, return_dtype=pl.List(pl.String),
                            is_elementwise=True)


def _han_numbers_series(text: pl.Series) -> pl.Series:
    """:func:`han_numbers` of a batch; :func:`han_value`'s expression is planned only for a
    batch that holds a Chinese numeral (planning it costs about 0.1 s a call)."""
    found = text.str.extract_all(HAN_NUMERAL)
    if not (found.list.len() > 0).any():
        return found
    return found.list.eval(han_value(pl.element()).cast(pl.String))


#: A digit, a thousands separator and three digits (``1,642``, ``1.642``, ``1 642``).
_THOUSANDS = r"(\p{Nd})[.,\u00a0\u202f ](\p{Nd}{3})\b"


def numbers(text: pl.Expr) -> pl.Expr:
    """The distinct numbers of ``text`` in one form (``List[String]``): a ``,`` or ``.``
    before exactly three digits separates thousands, any other is a decimal point; number
    words count (:data:`WORD_FORMS`), and a duration in hours or minutes counts in the
    other unit too (:func:`_durations`).

    >>> pl.select(numbers(pl.lit("1,642 m, 1.642 m, 3,5 %, five days, 2.75, 4.0"))).item().to_list()
    ['1642', '3.5', '2.75', '4', '5']
    >>> pl.select(numbers(pl.lit("tres horas, 90 minutes"))).item().to_list()
    ['90', '3', '180', '1.5']
    """
    thousands = _THOUSANDS
    digits = (
        text.str.replace_all(r"\b(\d{1,2})\.(\d{1,2})\.(\d{4})\b", "$1 $2 $3")  # 29.05.1953
        .str.replace_all(thousands, "${1}${2}").str.replace_all(thousands, "${1}${2}")
        .str.extract_all(_NUMBER)
        .list.eval(pl.element().str.replace_all(",", ".").str.replace(r"\.0+$", "")
                   .str.replace(r"^0+(\d)", "$1"))
    )
    compounds = text.str.extract_all(_COMPOUND).list.eval(_compound_value(pl.element()))
    # A number word in a compound ("three-person") describes rather than counts, and one
    # before a multiplier ("two dozen") is part of a number not read here.
    spelled = (
        text.str.to_lowercase().str.replace_all(_COMPOUND, " ").str.replace_all(_JOINED, " ")
        .str.replace_all(rf"\b(?:{_CARDINALS})-", " ")
        .str.replace_all(r"\b[^\W_]+\s+(?:dozen|dozens|million|millions|billion|billions)\b",
                         " ")
        .str.extract_all(_WORD)
        .list.eval(pl.element().filter(pl.element().is_in(_NUMBER_WORDS)).replace(WORD_FORMS))
    )
    return digits.list.concat(compounds).list.concat(spelled).list.concat(
        han_numbers(text)).list.concat(_durations(text, thousands)).list.unique(
        maintain_order=True)


_HOURS = "|".join(w for w, form in WORD_FORMS.items() if form == "hour")
_MINUTES = "|".join(w for w, form in WORD_FORMS.items() if form == "minute")
_AMOUNT = rf"\d+(?:[.,]\d+)?|\b(?:{_CARDINALS})"


def duration_numbers(text: pl.Expr) -> pl.Expr:
    """The numbers :func:`numbers` adds for the durations of ``text`` read in the other unit
    (``6 hours`` -> ``"360"``): not written in the text, so a reason names them as such.

    >>> pl.select(duration_numbers(pl.lit("6 hours"))).item().to_list()
    ['360']
    """
    return _durations(text, _THOUSANDS)


def _durations(text: pl.Expr, thousands: str) -> pl.Expr:
    """The durations of ``text`` in the other unit: hours in minutes (``three hours`` ->
    ``"180"``), minutes in hours where that is exact to two decimals
    (``90 minutos`` -> ``"1.5"``), so a duration reads as
    one number in either unit."""
    lowered = text.str.to_lowercase().str.replace_all(thousands, "${1}${2}")

    def amounts(unit: str, factor: float) -> pl.Expr:
        value = (
            pl.element().str.extract(rf"^({_AMOUNT})", 1).replace(WORD_FORMS)
            .str.replace(",", ".").cast(pl.Float64, strict=False) * factor
        )
        exact = value.filter((value * 100) == (value * 100).round())
        written = pl.when(exact == exact.round()).then(exact.cast(pl.Int64).cast(pl.String)) \
            .otherwise(exact.cast(pl.String))
        return lowered.str.extract_all(rf"(?:{_AMOUNT})\s*(?:{unit})\b").list.eval(written)

    return amounts(_HOURS, 60.0).list.concat(amounts(_MINUTES, 1 / 60))


# --- as_digits: the reading of numeric_accuracy ----------------------------------------------

#: Languages whose decimal mark is a comma and whose thousands separator is a point or a space.
DECIMAL_COMMA: tuple[str, ...] = ("de", "fr", "es", "it", "pt", "nl", "ru")

_EN_UNITS = ("zero", "", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
             "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
             "eighteen", "nineteen")
_EN_TENS = ("twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
_DE_UNITS = ("", "eins", "zwei", "drei", "vier", "fünf", "sechs", "sieben", "acht", "neun",
             "zehn", "elf", "zwölf", "dreizehn", "vierzehn", "fünfzehn", "sechzehn",
             "siebzehn", "achtzehn", "neunzehn")
_DE_TENS = ("zwanzig", "dreißig", "vierzig", "fünfzig", "sechzig", "siebzig", "achtzig",
            "neunzig")
_FR_UNITS = ("zéro", "", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf", "dix",
             "onze", "douze", "treize", "quatorze", "quinze", "seize", "dix-sept", "dix-huit",
             "dix-neuf")
_FR_TENS = ("vingt", "trente", "quarante", "cinquante", "soixante")
_ES_UNITS = ("cero", "", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve",
             "diez", "once", "doce", "trece", "catorce", "quince", "dieciséis", "diecisiete",
             "dieciocho", "diecinueve", "veinte", "veintiuno", "veintidós", "veintitrés",
             "veinticuatro", "veinticinco", "veintiséis", "veintisiete", "veintiocho",
             "veintinueve")
_ES_TENS = ("treinta", "cuarenta", "cincuenta", "sesenta", "setenta", "ochenta", "noventa")
#: The unit words of a compound that may not stand alone ("one" is a pronoun, "un" an article).
_COMPOUND_ONES = {"en": "one", "de": "ein", "fr": "un", "es": "uno"}


def _spellings(*parts: str) -> list[str]:
    """``parts`` joined by a hyphen or a space in every combination (a ``-`` inside a part
    too): ``("vingt", "et", "un")`` -> ``vingt-et-un``, ``vingt et un`` ..."""
    pieces = [piece for part in parts for piece in part.split("-")]
    return ["".join(itertools.chain.from_iterable(zip(pieces, (*seps, ""), strict=True)))
            for seps in itertools.product("- ", repeat=len(pieces) - 1)]


@cache
def cardinal_words(lang: str) -> dict[str, int]:
    """The number words 0-99 of ``lang`` (``en``, ``de``, ``fr``, ``es``) and their values,
    every hyphen or space spelling.

    >>> words = cardinal_words("fr")
    >>> words["quatre-vingt-dix-sept"], words["soixante et onze"], words["vingt-et-un"]
    (97, 71, 21)
    >>> cardinal_words("de")["siebenundzwanzig"], cardinal_words("es")["treinta y dos"]
    (27, 32)
    """
    one = _COMPOUND_ONES[lang]
    table: dict[str, int] = {}
    if lang == "en":
        table |= {w: n for n, w in enumerate(_EN_UNITS) if w}
        for k, tens in enumerate(_EN_TENS):
            table[tens] = 20 + 10 * k
            for n, unit in enumerate((one, *_EN_UNITS[2:10]), start=1):
                table |= dict.fromkeys(_spellings(tens, unit), 20 + 10 * k + n)
    elif lang == "de":
        table |= {w: n for n, w in enumerate(_DE_UNITS) if w} | {"dreissig": 30}
        for k, tens in enumerate((*_DE_TENS, "dreissig")):
            value = 20 + 10 * (k if k < 8 else 1)
            table[tens] = value
            for n, unit in enumerate((one, *_DE_UNITS[2:10]), start=1):
                table[f"{unit}und{tens}"] = value + n
    elif lang == "fr":
        table |= {s: n for n, w in enumerate(_FR_UNITS) if w for s in _spellings(w)}
        units = (one, *_FR_UNITS[2:20])
        for k, tens in enumerate(_FR_TENS):
            table[tens] = 20 + 10 * k
            for n, unit in enumerate(units[:9], start=1):
                table |= dict.fromkeys(_spellings(tens, "et", unit) if n == 1 else
                                       _spellings(tens, unit), 20 + 10 * k + n)
        for n, unit in enumerate(units[9:], start=10):  # soixante-dix .. soixante-dix-neuf
            table |= dict.fromkeys(_spellings("soixante", "et", unit) if n == 11 else
                                   _spellings("soixante", unit), 60 + n)
        table |= dict.fromkeys([*_spellings("quatre", "vingts"), *_spellings("quatre", "vingt")],
                               80)
        for n, unit in enumerate(units, start=1):  # quatre-vingt-un .. quatre-vingt-dix-neuf
            table |= dict.fromkeys(_spellings("quatre", "vingt", unit), 80 + n)
    else:
        table |= {w: n for n, w in enumerate(_ES_UNITS) if w and w != "veintiuno"}
        table |= {"dieciseis": 16, "veintidos": 22, "veintitres": 23, "veintiseis": 26}
        for k, tens in enumerate(_ES_TENS):
            table[tens] = 30 + 10 * k
            for n, unit in enumerate((one, *_ES_UNITS[2:10]), start=1):
                table[f"{tens} y {unit}"] = 30 + 10 * k + n
    return table


#: Scale words, by language, and the power of ten they multiply by.
SCALES: dict[str, dict[str, int]] = {
    "en": {"hundred": 2, "thousand": 3, "million": 6, "millions": 6, "billion": 9,
           "billions": 9, "trillion": 12, "bn": 9},
    "de": {"hundert": 2, "tausend": 3, "million": 6, "millionen": 6, "mio": 6,
           "milliarde": 9, "milliarden": 9, "mrd": 9, "billion": 12, "billionen": 12},
    "fr": {"cent": 2, "cents": 2, "mille": 3, "million": 6, "millions": 6, "milliard": 9,
           "milliards": 9},
    "es": {"cien": 2, "ciento": 2, "mil": 3, "millón": 6, "millon": 6, "millones": 6,
           "mil millones": 9, "billón": 12, "billones": 12},
}
#: Plural scale words, which alone say "many", not a number ("millions of people").
_PLURAL_SCALES = frozenset(("millions", "billions", "millionen", "milliarden", "billionen",
                            "cents", "milliards", "millones", "billones"))
#: Units in one spelling (the key), written after the number; ``%`` is glued to it.
UNITS: dict[str, tuple[str, ...]] = {
    "%": ("%", "％", "﹪", "percent", "per cent", "pct", "prozent", "pourcent", "pour cent",
          "por ciento", "per cento", "por cento", "procent"),
    "m": ("m", "meter", "meters", "metre", "metres", "metern", "mètre", "mètres", "metro",
          "metros", "米"),
    "km": ("km", "kilometer", "kilometers", "kilometre", "kilometres", "kilometern",
           "kilomètre", "kilomètres", "kilómetro", "kilómetros", "公里", "千米"),
    "cm": ("cm", "centimeter", "centimeters", "centimetre", "centimetres", "zentimeter",
           "zentimetern", "centimètre", "centimètres", "centímetro", "centímetros", "厘米"),
    "mm": ("mm", "millimeter", "millimeters", "millimetre", "millimetres", "millimetern",
           "millimètre", "millimètres", "milímetro", "milímetros", "毫米"),
    "kg": ("kg", "kilogram", "kilograms", "kilogramm", "kilogramme", "kilogrammes",
           "kilogramo", "kilogramos", "kilo", "kilos", "公斤", "千克"),
    "g": ("g", "gram", "grams", "gramm", "gramme", "grammes", "gramo", "gramos", "克"),
    "usd": ("usd", "us$", "$", "dollar", "dollars", "dólar", "dólares", "美元"),
    "eur": ("eur", "€", "euro", "euros", "欧元"),
    "h": ("h", "hr", "hrs", "hour", "hours", "stunde", "stunden", "heure", "heures", "hora",
          "horas", "小时"),
    "min": ("min", "mins", "minute", "minutes", "minuten", "minuto", "minutos", "分钟"),
    "d": ("day", "days", "tag", "tage", "tagen", "jour", "jours", "día", "días", "dia", "dias",
          "天"),
    "year": ("year", "years", "jahr", "jahre", "jahren", "ans", "année", "années", "año",
             "años", "年"),
}
#: Units written before the number (``$5``, ``EUR 20``).
_PREFIX_UNITS = {"usd": ("us$", "$", "usd"), "eur": ("€", "eur")}

# Private-use marks: a number word (or number) being composed, and a scale word.
_OPEN, _CLOSE, _SCALE = "\U000f0a10", "\U000f0a11", "\U000f0a12"
_GROUP_OPEN, _GROUP_CLOSE = "\U000f0a13", "\U000f0a14"
_HAN_CHARS = "零〇一二两三四五六七八九十百千万亿"
_HAN_DECIMAL = rf"(?:{HAN_NUMERAL}|[{_HAN_CHARS[:10]}])点[零〇一二三四五六七八九]+"
_HAN_PIECE = (rf"百分之(?:{_HAN_DECIMAL}|{HAN_NUMERAL}|[{_HAN_CHARS[:10]}])|{_HAN_DECIMAL}|"
              rf"{HAN_NUMERAL}|[^{_HAN_CHARS}]+|.")
_SPACES = "\u00a0\u202f\u2009"


def _alternation(words: list[str]) -> str:
    """A regex alternation of ``words``, longest first (leftmost-first matching)."""
    return "|".join(_escape(w) for w in sorted(words, key=lambda w: (-len(w), w)))


def _escape(word: str) -> str:
    return "".join(f"\\{c}" if c in r".^$*+?()[]{}|\-" else c for c in word)


def _han_as_digits(text: pl.Expr) -> pl.Expr:
    """``text`` with its Chinese numerals in digits (``三点五`` -> ``3.5``, ``百分之五`` ->
    ``5%``); rows without a Chinese digit character are not scanned."""
    piece = pl.element()
    percent = piece.str.starts_with("百分之")
    number = piece.str.strip_prefix("百分之")

    def whole(run: pl.Expr) -> pl.Expr:
        single = run.replace_strict(_HAN_DIGITS, default=None, return_dtype=pl.String)
        return pl.coalesce(single, han_value(run).cast(pl.String))

    fraction = number.str.extract(r"点(.*)$", 1).str.replace_many(
        list(_HAN_DIGITS), list(_HAN_DIGITS.values()))
    value = (
        pl.when(number.str.contains(f"^(?:{_HAN_DECIMAL})$"))
        .then(pl.concat_str(whole(number.str.extract(r"^(.*)点", 1)), pl.lit("."), fraction))
        .when(number.str.contains(f"^(?:{HAN_NUMERAL})$") | percent)
        .then(whole(number))
        .otherwise(piece)
    )
    written = pl.when(percent).then(value + "%").otherwise(value)
    han = pl.when(text.str.contains(f"[{_HAN_CHARS}]")).then(text)
    return pl.coalesce(han.str.extract_all(_HAN_PIECE).list.eval(written).list.join(""), text)


def _grouped(text: pl.Expr, group: str, spaces: str) -> pl.Expr:
    """``text`` with the thousands separators ``group`` (a comma or point) and ``spaces``
    removed between well-formed groups (1-3 digits, then groups of exactly three) of a run of
    digits; any other ``group`` character between digits is left as it is."""
    run = rf"(?-u:\b)[0-9]+(?:[{_escape(group)}{spaces}][0-9]+)+"
    marked = text.str.replace_all(run, f"{_GROUP_OPEN}$0{_GROUP_CLOSE}")
    for n in range(5, 0, -1):
        groups = rf"[{_escape(group)}{spaces}]([0-9]{{3}})" * n
        joined = "".join(f"${{{k}}}" for k in range(1, n + 2))
        marked = marked.str.replace_all(rf"{_GROUP_OPEN}([0-9]{{1,3}}){groups}{_GROUP_CLOSE}",
                                        joined)
    return marked.str.replace_many([_GROUP_OPEN, _GROUP_CLOSE], ["", ""])


def _separators(text: pl.Expr, decimal_comma: bool) -> pl.Expr:
    """Digits with ``.`` as the decimal mark and no thousands separator (module docstring)."""
    if not decimal_comma:
        return _grouped(text, ",", _SPACES).str.replace_all(r"([0-9]),([0-9])", "$1, $2")
    return _grouped(text, ".", _SPACES + " ").str.replace_all(r"([0-9]),([0-9])", "$1.$2")


def _words_as_digits(text: pl.Expr, lang: str) -> pl.Expr:
    """Number words and scale words of English and ``lang`` marked (:func:`_composed` reads
    them)."""
    words = cardinal_words("en") | (cardinal_words(lang) if lang in _COMPOUND_ONES else {})
    scales = SCALES["en"] | SCALES.get(lang, {})
    marks = {w: f"{_OPEN}{n}{_CLOSE}" for w, n in words.items()}
    marks |= {w: f"{_SCALE}{'0' * k}{_CLOSE}" for w, k in scales.items()}
    pattern = rf"\b(?:{_alternation(list(marks))})\b"
    # Marked in two passes: the words (whole words only), then each marked word's form.
    text = text.str.replace_all(pattern, f"{_GROUP_OPEN}$0{_GROUP_CLOSE}")
    return text.str.replace_many({f"{_GROUP_OPEN}{w}{_GROUP_CLOSE}": m for w, m in marks.items()})


def _composed(text: pl.Expr, lang: str) -> pl.Expr:
    """The marked number and scale words of :func:`_words_as_digits` composed and in digits."""
    # A number in digits before a scale word is composed too ("1.5 million").
    text = text.str.replace_all(rf"([0-9]+(?:\.[0-9]+)?)\s*{_SCALE}", f"{_OPEN}$1{_CLOSE} {_SCALE}")
    gap = r"(?:\s+|-)(?:(?:and|und|et|y)\s+)?"
    for scale in (2, 3, 6, 9, 12):
        # A number times the scale: "2 hundred" -> 200, "1.5 million" -> 1500000.
        zeros = "0" * scale
        for places in range(min(scale, 3), 0, -1):
            text = text.str.replace_all(
                rf"{_OPEN}([0-9]+)\.([0-9]{{{places}}}){_CLOSE}\s*{_SCALE}{zeros}{_CLOSE}",
                f"{_OPEN}${{1}}${{2}}{'0' * (scale - places)}{_CLOSE}")
        text = text.str.replace_all(rf"{_OPEN}([0-9]+){_CLOSE}\s*{_SCALE}{zeros}{_CLOSE}",
                                    f"{_OPEN}${{1}}{zeros}{_CLOSE}")
        text = text.str.replace_all(rf"\ba\s+{_SCALE}({zeros}){_CLOSE}", f"{_OPEN}1$1{_CLOSE}")
        # A round number plus a smaller one: "200 50" (two hundred fifty) -> 250.
        for places in range(scale, 0, -1):
            text = text.str.replace_all(
                rf"{_OPEN}([0-9]*[1-9]){zeros}{_CLOSE}{gap}{_OPEN}([0-9]{{{places}}}){_CLOSE}",
                f"{_OPEN}${{1}}{'0' * (scale - places)}${{2}}{_CLOSE}")
    # A scale word alone: its value where singular outside English (German "hundert",
    # French "mille", Spanish "mil"), else nothing ("millions of", "hundred").
    lone = {f"{_SCALE}{'0' * k}{_CLOSE}": "" for k in (2, 3, 6, 9, 12)}
    if lang != "en":
        lone |= {f"{_SCALE}{'0' * k}{_CLOSE}": f"1{'0' * k}" for k in (2, 3)}
    return text.str.replace_many(lone).str.replace_many([_OPEN, _CLOSE], ["", ""])


_NUMERAL = r"[0-9]+(?:\.[0-9]+)?"
_SUFFIX = {s: unit for unit, spellings in UNITS.items() for s in spellings}
_UNIT_NAMES = "|".join(_escape(u) for u in UNITS if u != "%")
_RANGE = r"(?:[-\u2010-\u2014\u2212]|to|until|bis|à|au|a|al|hasta)"


def _units(text: pl.Expr) -> pl.Expr:
    """Units after their number in one spelling (:data:`UNITS`), percent glued to it; the
    unit of a range's second number written after the first too."""
    prefix = "|".join(_escape(w) for unit in _PREFIX_UNITS.values() for w in unit)
    text = text.str.replace_all(rf"(?:^|\b|\B)({prefix})\s?({_NUMERAL})\b", "$2 $1")
    suffixes = _alternation(list(_SUFFIX))
    # Marked in two passes, as the number words: the spellings after a number, then each one.
    text = text.str.replace_all(rf"({_NUMERAL})\s*({suffixes})(?:\b|$|(\W))",
                                f"$1{_GROUP_OPEN}$2{_GROUP_CLOSE}$3")
    forms = {f"{_GROUP_OPEN}{s}{_GROUP_CLOSE}": ("%" if u == "%" else f" {u}")
             for s, u in _SUFFIX.items()}
    text = text.str.replace_many(forms)
    text = text.str.replace_all(r"百分之\s*([0-9]+(?:\.[0-9]+)?)", "$1%")
    unit = rf"(%|\s(?:{_UNIT_NAMES})\b)"
    text = text.str.replace_all(
        rf"\b(?:between|zwischen|entre)\s+({_NUMERAL})\s+(?:and|und|et|y|e)\s+({_NUMERAL}){unit}",
        "${1}${3} to ${2}${3}")
    return text.str.replace_all(rf"({_NUMERAL})\s*{_RANGE}\s*({_NUMERAL}){unit}",
                                "${1}${3} to ${2}${3}")


def as_digits(text: pl.Expr, lang: pl.Expr | None = None) -> pl.Expr:
    """``text`` lowercased with every number it states in digits (``.`` decimal mark, no
    thousands separator) and its units in one spelling, read by the row's language ``lang``
    (ISO 639-1; null or absent: English); see the module docstring.

    >>> frame = pl.DataFrame({"text": ["Its deepest point is 1,642 metres.", "3,5 Prozent",
    ...     "at most five unused days", "约四十一万两千辆", "$2.5 billion", "5–7 days"],
    ...     "lang": ["en", "de", "en", "zh", "en", "en"]})
    >>> for row in frame.select(as_digits(pl.col("text"), pl.col("lang"))).to_series():
    ...     print(row)
    its deepest point is 1642 m.
    3.5%
    at most 5 unused days
    约412000辆
    2500000000 usd
    5 d to 7 d
    """
    lang = pl.lit(None, pl.String) if lang is None else lang.cast(pl.String)
    return pl.struct(text=text, lang=lang).map_batches(
        lambda rows: as_digits_series(rows.struct.field("text"), rows.struct.field("lang")),
        return_dtype=pl.String, is_elementwise=True)


#: How each language's rows are read: the number words of which language (English alone
#: where not listed), and whether the comma is the decimal mark.
_READINGS = (("de", "de", True), ("fr", "fr", True), ("es", "es", True),
             ("comma", "en", True), ("en", "en", False))


#: What :func:`as_digits` can rewrite in a lowercased text: an ASCII digit (the separator, scale
#: and unit steps read only texts holding one), a Chinese digit character (the Chinese step),
#: a number or scale word of any language's reading as a whole word (the word step's pattern
#: for any language is part of this alternation) or one of the private-use marks (removed at
#: the end). Every step leaves a text without any of them as it is, so such a text comes out
#: lowercased and otherwise unchanged (tests/test_prefilters.py checks it on real texts).
_REWRITTEN = (
    f"[0-9{_HAN_CHARS}{_OPEN}{_CLOSE}{_SCALE}{_GROUP_OPEN}{_GROUP_CLOSE}]|"
    + r"\b(?:" + _alternation(sorted({
        word for lang in ("en", *_COMPOUND_ONES)
        for word in (*cardinal_words(lang), *SCALES.get(lang, {}))
    })) + r")\b"
)


def as_digits_series(text: pl.Series, lang: pl.Series) -> pl.Series:
    """:func:`as_digits` of a batch: each step is computed once, on the rows of its language
    (an expression would repeat the shared steps in every branch), and only on the rows that
    hold something to rewrite (:data:`_REWRITTEN`); the others are lowercased alone."""
    lowered = text.str.to_lowercase()
    read = lowered.str.contains(_REWRITTEN).fill_null(False)
    if read.all():
        return _read_digits(lowered, lang).rename(text.name)
    if not read.any():
        return lowered
    return lowered.scatter(read.arg_true(), _read_digits(lowered.filter(read), lang.filter(read)))


def _read_digits(text: pl.Series, lang: pl.Series) -> pl.Series:
    """:func:`as_digits_series` of lowercased texts, every step as the rows need it."""
    code = pl.col("lang").fill_null("en")
    reading = (pl.when(code.is_in(["de", "fr", "es"])).then(code)
               .when(code.is_in(DECIMAL_COMMA)).then(pl.lit("comma")).otherwise(pl.lit("en")))
    frame = pl.DataFrame({"text": text, "lang": lang}).with_row_index("_row").with_columns(
        reading=reading)
    frame = _step(frame, f"[{_HAN_CHARS}]", _han_as_digits)
    parts = []
    for name, words, decimal_comma in _READINGS:
        part = frame.filter(pl.col("reading") == name)
        if part.height:
            part = _step(part, r"[0-9][,.\s][0-9]", partial(_separators,
                                                           decimal_comma=decimal_comma))
            part = part.with_columns(text=_words_as_digits(pl.col("text"), words))
            part = _step(part, _SCALE, partial(_composed, lang=words))
            parts.append(part.with_columns(
                text=pl.col("text").str.replace_many([_OPEN, _CLOSE], ["", ""])))
    read = pl.concat(parts).sort("_row") if parts else frame
    return _step(read, "[0-9]", _units)["text"].rename(text.name)


def _step(frame: pl.DataFrame, pattern: str, step: Callable[[pl.Expr], pl.Expr]) -> pl.DataFrame:
    """``frame`` with ``step`` applied to its ``text`` where that holds ``pattern`` (the other
    rows are not scanned; nothing is done when no row holds it)."""
    holds = pl.col("text").str.contains(pattern)
    if not frame.select(holds.any()).item():
        return frame
    return frame.with_columns(text=pl.coalesce(step(pl.when(holds).then(pl.col("text"))), "text"))
