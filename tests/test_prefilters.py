"""The pre-filters of the refusal rule and the number reader change no result: on the labeled
abstentions, generated texts and real responses and references, the filtered readings equal
the readings of every text."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import polars as pl
import pytest

from pipeline.text import refusals
from pipeline.text.numbers import _read_digits, as_digits_series
from pipeline.text.refusals import REFUSAL_FACTORS, may_refuse, refuses, refuses_all

ROOT = Path(__file__).resolve().parent.parent
RAGTRUTH = Path("/work/shared/data/ragtruth/ragtruth_dev.parquet")

_GENERATED = [
    "I don't know.", "I DON\u2019T   KNOW", "No answer", "There is no answer.", "unanswerable",
    "The context does not mention any delays; the bridge opened in 1932.",
    "Sorry, I couldn't find that information [1] in the provided documents.",
    "no [2]answer", "Paris.", "", "   ", "\x1f", "I can\u2019t\nanswer that", "无法回答。",
    "文档中没有提到。", "回答できません", "답변드릴 수 없습니다", "Ich weiß es nicht.",
    "Je ne sais pas.", "No lo sé.", "Non lo so.", "Não sei.", "Не знаю.",
    "The total is five hundred and twelve dollars.", "1,642 metres", "3,5 Prozent",
    "约四十一万两千辆", "百分之五", "$2.5 billion", "5\u20137 days", "zwischen 5 und 7 Tagen",
    "quatre-vingt-dix", "treinta y cinco", "Millionen", "often written", "similar recent",
    "\U000f0a10x\U000f0a11", "ΟΔΟΣ ΣΑΣ", "İstanbul", None,
]


def _texts() -> list[str | None]:
    labeled = [json.loads(line)["text"] for line in
               (ROOT / "tests/golden/abstentions_labeled.jsonl").read_text().splitlines() if line]
    sample = pl.read_parquet(ROOT / "data/sample/records.parquet")
    texts = labeled + _GENERATED + sample["response"].to_list() + sample["reference"].to_list()
    if RAGTRUTH.exists():
        texts += pl.read_parquet(RAGTRUTH)["response"].to_list()
    # Every text also cut at each of its first clause ends and joined with another.
    cut = [t.split(".")[0] for t in texts if t]
    return texts + cut + [f"{a} {b}" for a, b in zip(cut, reversed(cut), strict=True)]


@pytest.fixture(scope="module")
def texts() -> pl.DataFrame:
    return pl.DataFrame({"text": _texts()}, schema={"text": pl.String})


def test_refusal_prefilter_changes_no_verdict(texts: pl.DataFrame) -> None:
    out = texts.select(filtered=refuses(pl.col("text")), every=refuses_all(pl.col("text")),
                       candidate=may_refuse(pl.col("text")))
    assert out["filtered"].to_list() == out["every"].to_list()
    assert out["filtered"].sum() > 300  # the labeled refusals and more
    # The pre-filter is a superset: every refusal is a candidate.
    assert out.filter(pl.col("every") & ~pl.col("candidate")).height == 0
    assert out["filtered"].null_count() == 1


def test_refusal_factors_are_strings_of_the_patterns() -> None:
    assert "no idea" in REFUSAL_FACTORS and "无法回答" not in REFUSAL_FACTORS
    assert min(len(f) for f in REFUSAL_FACTORS) >= 2


def test_bundled_refusal_factors_are_those_of_the_rules() -> None:
    """The bundled file is current (else every start derives them again, 0.12 s). After a rule
    changes, write it again: ``python -c "from pipeline.text import refusals as r;
    open('pipeline/data/refusal_factors.json', 'w').write(r.factors_file_text(
    r.STRONG_PATTERN + '|' + r.WEAK_PATTERN))"``."""
    pattern = f"{refusals.STRONG_PATTERN}|{refusals.WEAK_PATTERN}"
    bundled = resources.files("pipeline.data").joinpath(refusals.FACTORS_FILE).read_text()
    assert bundled == refusals.factors_file_text(pattern)
    assert refusals.bundled_factors(pattern) == refusals.derive_factors(pattern) == REFUSAL_FACTORS
    # Another pattern (an edited rule) is never given the bundled factors.
    assert refusals.bundled_factors(pattern + "|new rule") is None


@pytest.mark.parametrize("lang", [None, "en", "de", "fr", "es", "it", "zh"])
def test_number_prefilter_changes_no_text(texts: pl.DataFrame, lang: str | None) -> None:
    text = texts["text"]
    langs = pl.Series([lang] * len(text), dtype=pl.String)
    filtered = as_digits_series(text, langs)
    assert filtered.to_list() == _read_digits(text.str.to_lowercase(), langs).to_list()
    assert filtered.null_count() == 1
    read = "3.5%" if lang in ("de", "fr", "es", "it") else "1642 m"
    assert read in filtered.to_list()
