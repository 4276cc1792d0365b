"""Numbers as people write them (issue 34): number words, separators by language, units,
ranges and currencies in ``numeric_accuracy``, the keywords of content coverage, and the
newcomer's rows through ``pipeline.score``."""

from __future__ import annotations

import polars as pl
import pytest

import pipeline
from pipeline.metrics.lexical.numeric import numeric_accuracy, quantities
from pipeline.text.claims import numbers as claim_numbers
from pipeline.text.numbers import as_digits, cardinal_words, han_value


def accuracy(response: str, reference: str, lang: str | None = "en") -> float:
    frame = pl.DataFrame({"response": [response], "reference": [reference], "lang": [lang]},
                         schema={"response": pl.String, "reference": pl.String,
                                 "lang": pl.String})
    return frame.select(numeric_accuracy(pl.col("response"), pl.col("reference"),
                                         pl.col("lang"))).item()


def read(text: str, lang: str | None = "en") -> list[str]:
    frame = pl.DataFrame({"text": [text], "lang": [lang]},
                         schema={"text": pl.String, "lang": pl.String})
    return frame.select(quantities(pl.col("text"), pl.col("lang"))).item().to_list()


@pytest.mark.parametrize(
    ("response", "reference", "lang", "expected"),
    [
        ("at most five unused days", "5 days", "en", 1.0),
        ("at most 5 unused days", "five days", "en", 1.0),
        ("Its deepest point is 1642 m.", "1,642 metres", "en", 1.0),
        ("3.5 percent", "3,5 %", "de", 1.0),
        ("3.5 percent", "3,5 %", "es", 1.0),
        ("3,5 Prozent", "3.5%", "de", 1.0),
        ("3.5", "3,5 %", "de", 0.0),  # a percentage is another number, as before
        ("约412000辆", "四十一万两千辆", "zh", 1.0),
        ("四十一万两千", "412000", "zh", 1.0),
        ("1642 km", "1,642 metres", "en", 0.0),  # another unit
        ("1642", "1,642 metres", "en", 1.0),  # no unit on one side
        ("$5", "5 dollars", "en", 1.0),
        ("USD 5", "5 US dollars", "en", 1.0),
        ("5 €", "5 euros", "fr", 1.0),
        ("EUR 5", "$5", "en", 0.0),
        ("5 to 7 days", "5–7 days", "en", 1.0),
        ("between 5 and 7 days", "5-7 days", "en", 1.0),
        ("5 days", "5–7 days", "en", 0.5),  # a range is its two endpoints
        ("6 days", "5–7 days", "en", 0.0),
        ("5-10%", "5% to 10%", "en", 1.0),
        ("1.5 million", "1,500,000", "en", 1.0),
        ("two hundred fifty", "250", "en", 1.0),
        ("siebenundzwanzig Tage", "27 Tage", "de", 1.0),
        ("quatre-vingt-dix-sept ans", "97 ans", "fr", 1.0),
        ("treinta y cinco días", "35 días", "es", 1.0),
        ("Paris", "Paris", "en", 1.0),  # no number: 1.0, as before
    ],
)
def test_written_numbers_match(response, reference, lang, expected):
    assert accuracy(response, reference, lang) == expected


def test_separators_by_language():
    # English: a comma between groups of three separates thousands, any other separates
    # numbers; a decimal comma in English text is not read as a decimal (nor as 35).
    assert read("1,642 m", "en") == ["1642 m"]
    assert read("rose 3,5 times", "en") == ["3", "5"]
    assert read("1.642 m", "en") == ["1.642 m"]
    # German, French, Spanish: the point groups thousands, the comma is the decimal mark.
    assert read("1.642 m", "de") == ["1642 m"]
    assert read("1,642 m", "de") == ["1.642 m"]
    assert read("1.642,5 m", "es") == ["1642.5 m"]
    assert read("1 642 m", "fr") == ["1642 m"]
    assert read("1\u202f642 m", "en") == ["1642 m"]
    assert read("3.5 %", "de") == ["3.5%"]
    assert read("1,642 metres", None) == ["1642 m"]  # no language: English


def test_words_of_other_languages_only_in_their_rows():
    assert read("dos and don'ts", "en") == []
    assert read("dos días", "es") == ["2 d"]
    assert read("one of the best", "en") == []  # "one" is a pronoun as often
    assert read("twenty-one", "en") == ["21"]
    assert read("millions of people", "en") == []
    assert read("a thousand people", "en") == ["1000"]
    assert read("mil personas", "es") == ["1000"]


def test_chinese_numerals():
    assert pl.select(han_value(pl.Series(["三亿五千万", "一万亿", "十万"]))).to_series(
    ).to_list() == [350_000_000, 1_000_000_000_000, 100_000]
    assert read("三点五米", "zh") == ["3.5 m"]
    assert read("百分之五", "zh") == ["5%"]
    assert read("全长六千三百公里", "zh") == ["6300 km"]
    assert read("一种方法", "zh") == []


def test_identifiers_and_signs_are_read_as_before():
    assert read("covid19 and -5 degrees", "en") == ["-5"]
    assert read("2010-2015", "en") == ["2010", "2015"]


def test_number_word_tables():
    assert cardinal_words("en")["ninety nine"] == 99
    assert cardinal_words("de")["einundzwanzig"] == 21
    assert cardinal_words("fr")["soixante-dix"] == 70
    assert cardinal_words("es")["veintidós"] == 22
    assert not {"one", "ein", "un", "uno"} & {w for lang in ("en", "de", "fr", "es")
                                              for w in cardinal_words(lang)}


def test_as_digits_keeps_text_without_numbers():
    frame = pl.DataFrame({"text": ["Paris is the capital.", None]})
    assert frame.select(as_digits(pl.col("text"))).to_series().to_list() == [
        "paris is the capital.", None]


def test_nulls_and_empty():
    frame = pl.DataFrame({"response": [None, "5", "x"], "reference": ["5", None, ""]},
                         schema={"response": pl.String, "reference": pl.String})
    out = frame.select(numeric_accuracy(pl.col("response"), pl.col("reference")))
    assert out.to_series().to_list() == [None, None, 1.0]


def test_claim_numbers_unchanged():
    text = pl.lit("1,642 m, 1.642 m, 3,5 %, five days, 2.75, 4.0")
    assert pl.select(claim_numbers(text)).item().to_list() == ["1642", "3.5", "2.75", "4", "5"]


def test_newcomer_rows_through_score():
    frame = pl.DataFrame({
        "id": ["q1", "q2"], "model": "m",
        "question": ["How many unused days can be carried over?", "How deep is the lake?"],
        "reference": ["5 days", "1,642 metres"],
        "response": ["You can carry over at most five unused days.",
                     "Its deepest point is 1642 m."],
    })
    scores = pipeline.score(frame).scores.sort("id")
    assert scores["numeric_accuracy"].to_list() == [1.0, 1.0]
    assert "factual_error" not in scores["primary_failure_mode"].to_list()
    assert scores["content_coverage"][1] == 1.0
