"""Language detection's kernel (``pipeline/text/kernels/language.py``) against its reference,
the polars stages of :func:`pipeline.text.language.reference_language_stages`.

Random mixes of scripts, the function words of every profile (lower case and capitalized), the
letters that break ties, nulls, empty texts and given codes: ``lang``, the Latin flag and the
rows read for their scripts must be the same on every row. Every code point alone, too
(planes 4-13 and 15-16 sampled).
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.text.language import (
    LATIN,
    LETTERS,
    STOPWORDS,
    language_stages,
    reference_language_stages,
)

_WORDS = sorted(set().union(*map(set, STOPWORDS.values())))
_PIECES = [
    *_WORDS,
    *(w.capitalize() for w in _WORDS),
    *(w.upper() for w in _WORDS[:20]),
    *"".join(LETTERS.values()), *"".join(LETTERS.values()).upper(), "ß", "ẞ",
    "tower", "Paris", "Müller", "straße", "città", "ação", "niño", "1889", "",
    "東京", "北京是首都", "ひらがな", "カタカナー", "서울", "กรุงเทพ", "Москва", "привет",
    "العربية", "हिन्दी", "Αθήνα", "עברית", "თბილისი", "Երևան", "አዲስ",
    "e\u0301", "\u0301", "\ue000", "\ue101", "①", "²", "٣", "０", "Ａ", "ǅ", "İ", "ﬁ", "😀",
]
_SEPARATORS = [" ", "  ", ", ", ". ", "\n", "-", "'", "(", ") ", "", "\t", "[2] ", "。", "、"]
_text = st.lists(st.tuples(st.sampled_from(_PIECES), st.sampled_from(_SEPARATORS)),
                 max_size=12).map(lambda parts: "".join(w + s for w, s in parts))
_code = st.sampled_from([None, None, None, "", " ", "en", "DE", "zh-Hans", "fr_CA", "x"])


def _run(stages: Callable[..., list[dict[str, pl.Expr]]], frame: pl.DataFrame) -> pl.DataFrame:
    lazy = frame.lazy()
    for stage in stages("lang", "language", "ref", "resp"):
        lazy = lazy.with_columns(**stage)
    return lazy.select(
        "lang", LATIN, pl.col("_lang_wide").is_not_null().alias("wide")
    ).collect()


def _assert_same(frame: pl.DataFrame) -> None:
    got = _run(language_stages, frame)
    want = _run(reference_language_stages, frame)
    if not got.equals(want):  # the rows that differ, with their texts
        differ = ~pl.Series([a == b for a, b in zip(got.rows(), want.rows(), strict=True)])
        raise AssertionError(pl.concat([frame, got.select(pl.all().name.prefix("got_")),
                                        want.select(pl.all().name.prefix("want_"))],
                                       how="horizontal").filter(differ))


# Whole frames of 10-40 rows per example: ~1,900 rows against the reference stages, at a
# fraction of the polars runs.
@settings(max_examples=examples(110), deadline=None)
@given(st.lists(st.tuples(_code, _code, st.none() | _text, st.none() | _text),
                min_size=10, max_size=40))
def test_kernel_equals_the_polars_stages(rows: list[tuple]) -> None:
    frame = pl.DataFrame(rows, schema={"lang": pl.String, "language": pl.String,
                                       "ref": pl.String, "resp": pl.String}, orient="row")
    _assert_same(frame)


@settings(max_examples=examples(35), deadline=None)
@given(st.lists(st.tuples(st.none() | st.text(max_size=20), st.none() | st.text(max_size=20)),
                min_size=10, max_size=40))
def test_kernel_equals_the_polars_stages_on_any_text(rows: list[tuple]) -> None:
    frame = pl.DataFrame(rows, schema={"ref": pl.String, "resp": pl.String}, orient="row")
    _assert_same(frame.with_columns(lang=pl.lit(None, pl.String),
                                    language=pl.lit(None, pl.String)))


#: Planes 4-13 are unassigned in every Unicode version to date and planes 15-16 are private
#: use: every 97th of their code points stands for the rest (planes 0-3 and 14 are read whole).
_SAMPLED_PLANES = (range(0x40000, 0xE0000), range(0xF0000, 0x110000))


def _code_points() -> list[str]:
    whole = (c for c in range(0x40000) if not 0xD800 <= c < 0xE000)
    sampled = (c for plane in _SAMPLED_PLANES for c in plane[::97])
    return [chr(c) for c in (*whole, *range(0xE0000, 0xF0000), *sampled)]


def test_every_code_point_of_the_used_planes_alone_and_beside_words() -> None:
    chars = _code_points()
    frame = pl.DataFrame({"ref": chars}).with_columns(
        resp=pl.lit("der Turm und die"), lang=pl.lit(None, pl.String),
        language=pl.lit(None, pl.String),
    )
    _assert_same(frame)
    # Each code point inside a word, then as the word between two function words.
    _assert_same(frame.with_columns(ref="de" + pl.col("ref") + "r und " + pl.col("ref")))


def test_empty_and_null_frames() -> None:
    schema = {"lang": pl.String, "language": pl.String, "ref": pl.String, "resp": pl.String}
    _assert_same(pl.DataFrame(schema=schema))
    _assert_same(pl.DataFrame([(None, None, None, None)] * 3, schema=schema, orient="row"))


def test_a_slice_of_a_column_is_read_at_its_offset() -> None:
    frame = pl.DataFrame({
        "ref": ["Москва", "Der Turm ist nicht alt", "東京はどこ", "the tower", ""] * 3,
        "resp": [None, "und die Stadt", "x", "La tour est à Paris et elle", "señor"] * 3,
    }).with_columns(lang=pl.lit(None, pl.String), language=pl.lit(None, pl.String))
    for start in range(4):
        _assert_same(frame.slice(start, 9))
