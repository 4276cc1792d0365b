"""Keyword metrics: golden rows, data-file loaders, and a pure-Python oracle."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import polars as pl
import pytest
import simplemma
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.metrics.lexical import keywords as kw
from pipeline.metrics.lexical.keywords import (
    content_coverage,
    keyword_overlap,
    keywords,
    load_stopwords,
    load_synonym_table,
    load_synonyms,
)

GOLDEN = Path(__file__).parent / "golden"
STOP = load_stopwords()
SYNONYMS = load_synonyms()


# --- oracle: the module docstring's steps, one text at a time, simplemma called directly -----
# Kana, CJK ideographs and Thai: runs of their letters are read as character bigrams.
UNSPACED = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0e7f"
GRAMMAR = set("的了是在和也而或这那们吗呢吧啊么被のはがをにでとも")
UNIT = re.compile(
    rf"(?:(?=[{UNSPACED}])[^\W_])+"  # a run of letters of those scripts
    rf"|[^\W_{UNSPACED}]+(?:'[^\W_{UNSPACED}]+)*"  # a word of the other scripts
)


def oracle_keywords(text: str, stop: frozenset[str] = STOP) -> list[str]:
    lemmas = []
    for word in UNIT.findall(text.lower().replace("\u2019", "'")):
        if re.match(f"[{UNSPACED}]", word):
            units = [word] if len(word) == 1 else [a + b for a, b in itertools.pairwise(word)]
            lemmas += [u for u in units if u not in stop and not GRAMMAR & set(u)]
            continue
        word = re.sub(r"'s$", "", word)
        lemma = simplemma.lemmatize(word, lang="en").lower()
        if word not in stop and lemma not in stop:
            lemmas.append(lemma)
    return list(dict.fromkeys(lemmas))


def oracle_coverage(response: str, reference: str, synonyms: dict[str, str]) -> float:
    expected = {synonyms.get(k, k) for k in oracle_keywords(reference)}
    found = {synonyms.get(k, k) for k in oracle_keywords(response)}
    return len(expected & found) / len(expected) if expected else 1.0


# --- helpers ---------------------------------------------------------------------------------
def frame(**columns: list[str | None]) -> pl.DataFrame:
    return pl.DataFrame(columns, schema=dict.fromkeys(columns, pl.String))


def coverage(responses, references, synonyms=None) -> list[float | None]:
    out = frame(response=responses, reference=references).select(
        content_coverage(keywords(pl.col("response")), keywords(pl.col("reference")), synonyms)
    )
    return out.to_series().to_list()


def read_jsonl(name: str) -> list[dict]:
    return [json.loads(line) for line in (GOLDEN / name).read_text("utf-8").splitlines()]


# --- golden rows -----------------------------------------------------------------------------
def test_golden_keywords():
    rows = read_jsonl("keywords_extraction.jsonl")
    out = frame(text=[r["text"] for r in rows]).select(keywords(pl.col("text"))).to_series()
    for row, found in zip(rows, out, strict=True):
        assert found.to_list() == row["keywords"], row["note"]
        assert oracle_keywords(row["text"]) == row["keywords"], row["note"]


def test_golden_coverage():
    rows = read_jsonl("keywords_coverage.jsonl")
    for synonyms, groups in (("packaged", None), ("none", {})):
        chosen = [r for r in rows if r["synonyms"] == synonyms]
        scores = coverage([r["response"] for r in chosen], [r["reference"] for r in chosen], groups)
        oracle_groups = SYNONYMS if groups is None else groups
        for row, value in zip(chosen, scores, strict=True):
            assert value == pytest.approx(row["score"], abs=1e-15), row["note"]
            assert oracle_coverage(row["response"], row["reference"], oracle_groups) == (
                pytest.approx(row["score"])
            ), row["note"]


@pytest.mark.parametrize(
    ("question", "response", "expected"),
    [
        ("Who discovered penicillin?", "Alexander Fleming discovered penicillin in 1928.", 1.0),
        ("Who discovered penicillin?", "Fleming, in 1928.", 0.0),
        ("Which car did she buy?", "She purchased an automobile.", 1.0),
        ("What is it?", "", 1.0),
    ],
)
def test_keyword_overlap(question, response, expected):
    out = frame(q=[question], r=[response]).select(
        keyword_overlap(keywords(pl.col("q")), keywords(pl.col("r")))
    )
    assert out.item() == expected


def test_nulls_propagate():
    assert coverage([None, "car"], ["car", None]) == [None, None]
    assert frame(t=[None]).select(keywords(pl.col("t"))).item() is None


def test_custom_stopwords_replace_the_packaged_list():
    out = frame(t=["the car"]).select(keywords(pl.col("t"), stopwords=frozenset({"car"})))
    assert out.item().to_list() == ["the"]


def test_lemmatizer_runs_once_per_distinct_word(monkeypatch):
    calls: list[str] = []
    real = simplemma.lemmatize

    def counting(word: str, lang: str) -> str:
        calls.append(word)
        return real(word, lang=lang)

    monkeypatch.setattr(kw, "_LEMMAS", {})
    monkeypatch.setattr(simplemma, "lemmatize", counting)  # imported by _lemma when first needed
    texts = ["zorbs glimmer", "glimmer zorbs", "zorbs"] * 1000
    out = frame(t=texts).select(keywords(pl.col("t"))).to_series()
    assert sorted(calls) == ["glimmer", "zorbs"]
    assert out[1].to_list() == ["glimmer", "zorb"]
    frame(t=texts).select(keywords(pl.col("t")))  # cached: no new call
    assert len(calls) == 2


# --- data files ------------------------------------------------------------------------------
def test_packaged_data_files():
    assert 150 <= len(STOP) <= 250
    assert {"the", "is", "don't", "of"} <= STOP
    groups = set(SYNONYMS.values())
    assert len(groups) >= 60
    assert not set(SYNONYMS) & STOP  # a stopword could never be matched
    assert all(SYNONYMS[c] == c for c in groups)  # canonical is a member, the smallest
    assert SYNONYMS["physician"] == "doctor" and SYNONYMS["purchase"] == "buy"


def test_custom_files(tmp_path):
    stop = tmp_path / "stop.txt"
    stop.write_text("# comment\nThe   \n\nof # trailing comment\n", encoding="utf-8")
    assert load_stopwords(stop) == frozenset({"the", "of"})
    synonyms = tmp_path / "syn.tsv"
    synonyms.write_text("# groups\nZebra,\tHorses\ncouch\tsofa, settee\n", encoding="utf-8")
    assert load_synonyms(synonyms) == {
        "horse": "horse",
        "zebra": "horse",
        "couch": "couch",
        "sofa": "couch",
        "settee": "couch",
    }
    groups = load_synonyms(synonyms)
    assert coverage(["a zebra"], ["horses"], groups) == [1.0]
    assert coverage(["a zebra"], ["horses"], {}) == [0.0]


def test_phrases_and_members_of_two_groups(tmp_path):
    """A phrase member is one keyword, matched before words; a member of two groups is a
    synonym of both groups' members, which stay no synonyms of each other."""
    path = tmp_path / "syn.tsv"
    path.write_text("Solar  Energy, sunlight\npower, electricity\npower, energy\n", "utf-8")
    table = load_synonym_table(path)
    assert table.phrases == ("solar energy",)
    assert load_synonyms(path)["sunlight"] == "solar energy"
    assert load_synonyms(path)["power"] == "electricity|energy|power"
    texts = frame(t=["Plants use solar\tenergy.", "solar power"]).select(
        keywords(pl.col("t"), phrases=table.phrases)
    ).to_series()
    assert [k.to_list() for k in texts] == [["plant", "use", "solar energy"], ["solar", "power"]]
    pairs = [("sunlight", "solar energy"), ("power", "energy"), ("electricity", "power"),
             ("energy", "electricity"), ("electricity energy", "power energy")]
    got = frame(r=[a for a, _ in pairs], q=[b for _, b in pairs]).select(
        content_coverage(keywords(pl.col("r"), phrases=table.phrases),
                         keywords(pl.col("q"), phrases=table.phrases), table)
    ).to_series()
    assert got.to_list() == [1.0, 1.0, 1.0, 0.0, 1.0]


def test_groups_sharing_their_smallest_member_stay_apart(tmp_path):
    """apple is in both groups: banana and cherry are synonyms of apple, not of each other."""
    path = tmp_path / "syn.tsv"
    path.write_text("apple, banana\napple, cherry\n", "utf-8")
    table = load_synonym_table(path)
    pairs = [("banana", "cherry"), ("cherry", "banana"), ("apple", "banana"),
             ("banana", "apple"), ("cherry", "apple"), ("apple", "cherry")]
    got = frame(r=[a for a, _ in pairs], q=[b for _, b in pairs]).select(
        content_coverage(keywords(pl.col("r")), keywords(pl.col("q")), table)
    ).to_series()
    assert got.to_list() == [0.0, 0.0, 1.0, 1.0, 1.0, 1.0]


def test_packaged_groups_of_the_enhanced_framework():
    """The default file has the framework's groups (docs/compat.md), phrases included."""
    assert SYNONYMS["generate"] == SYNONYMS["produce"] == SYNONYMS["make"] == "create"
    assert SYNONYMS["solar energy"] == SYNONYMS["sunlight"] == SYNONYMS["sun"]
    assert SYNONYMS["electrical energy"] == SYNONYMS["power"] == SYNONYMS["electricity"]
    assert "energy" not in SYNONYMS


@pytest.mark.parametrize(
    ("content", "message"),
    [
        # A space makes one member, a phrase: the group has only it.
        ("car automobile\n", r"line 1: a synonym group needs two words"),
        ("car\n", r"line 1: a synonym group needs two words"),
        ("cars, car\n", r"line 1: a synonym group needs two words"),
        ("ok, fine\nnew-york, nyc\n", r"line 2: 'new-york' is not a word or a phrase"),
        ("ok, fine\nsolar  energy!, sun\n", r"line 2: 'solar  energy!' is not a word or a phrase"),
    ],
)
def test_malformed_synonyms_name_file_and_line(tmp_path, content, message):
    path = tmp_path / "bad_synonyms.tsv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=rf"bad_synonyms\.tsv, {message}"):
        load_synonyms(path)


def test_synonym_members_are_lemmatized_as_keywords_are(tmp_path):
    """simplemma by default; WordNet's noun lemmas under the enhanced-framework preset."""
    path = tmp_path / "syn.tsv"
    path.write_text("oceans, seas\nbought, purchased\n", encoding="utf-8")
    assert load_synonym_table(path, lemmatizer="wordnet").concept == {
        "ocean": "ocean", "sea": "ocean", "bought": "bought", "purchased": "bought"
    }
    assert load_synonym_table(path).concept["purchase"] == "buy"
    with pytest.raises(ValueError, match="unknown lemmatizer 'porter'"):
        load_synonym_table(path, lemmatizer="porter")


def test_malformed_stopwords_name_file_and_line(tmp_path):
    path = tmp_path / "bad_stop.txt"
    path.write_text("the\nof the\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad_stop\.txt, line 2: 'of the' is not a single word"):
        load_stopwords(path)


# --- properties ------------------------------------------------------------------------------
# fmt: off
VOCABULARY = [
    "The", "the", "cars", "car", "automobile", "bought", "purchase", "doctor's", "physicians",
    "isn't", "Don’t", "it's", "state-of-the-art", "running", "ran", "1990", "5G", "café",
    "O'Brien", "ones", "was", "big", "LARGE", "children", "snake_case", "'quoted'", "x-ray",
    "法国", "的", "首都是巴黎", "巴黎", "東京は日本の首都です", "コーヒー", "ไทย", "Tokyo东京",
    "京", "和", "１２", "Москва", "[1]", "。", "・",
]
# fmt: on
SEPARATORS = [" ", ", ", ". ", "-", "\n", "! ", "'", ""]
texts = st.lists(
    st.tuples(st.sampled_from(VOCABULARY), st.sampled_from(SEPARATORS)), max_size=8
).map(lambda parts: "".join(word + sep for word, sep in parts))


# Batches of 8-20 pairs (hypothesis draws lists near their minimum size): as many pairs as
# before against the oracle, at a fraction of the polars runs.
@settings(max_examples=examples(62), deadline=None)
@given(st.lists(st.tuples(texts, texts), min_size=8, max_size=20))
def test_equals_oracle(pairs):
    responses, references = [p[0] for p in pairs], [p[1] for p in pairs]
    found = frame(t=references).select(keywords(pl.col("t"))).to_series()
    assert [k.to_list() for k in found] == [oracle_keywords(t) for t in references]
    expected = [oracle_coverage(r, g, SYNONYMS) for r, g in pairs]
    assert coverage(responses, references) == expected


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(texts, min_size=1, max_size=8))
def test_identity_scores_one(batch):
    assert coverage(batch, batch) == [1.0] * len(batch)



# --- scripts written without spaces: character bigrams ---------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("法国的首都是巴黎[1]。", ["法国", "首都", "巴黎", "1"]),
        ("巴黎", ["巴黎"]),
        ("京", ["京"]),
        ("的", []),
        ("中华人民共和国", ["中华", "华人", "人民", "民共"]),
        ("東京は日本の首都です", ["東京", "日本", "首都"]),
        ("コーヒーを飲む", ["コー", "ーヒ", "ヒー", "飲む"]),
        ("กรุงเทพ ไทย", ["กร", "รุ", "ุง", "งเ", "เท", "ทพ", "ไท", "ทย"]),
        ("Tokyo东京's cars", ["tokyo", "东京", "s", "car"]),  # no possessive after a run
        ("東京・大阪、京都。", ["東京", "大阪", "京都"]),
        ("Москва и Париж", ["москва", "и", "париж"]),  # English stopwords only
    ],
)
def test_character_bigrams(text, expected):
    assert frame(t=[text]).select(keywords(pl.col("t"))).item().to_list() == expected


def test_chinese_coverage():
    responses = ["法国的首都是巴黎[1]。", "巴黎是法国首都。", "首都是柏林。", "巴黎"]
    references = ["巴黎", "法国的首都是巴黎", "法国的首都是巴黎", "的了"]
    assert coverage(responses, references) == [1.0, 1.0, 1 / 3, 1.0]
    assert coverage(responses, references) == [
        oracle_coverage(r, g, SYNONYMS) for r, g in zip(responses, references, strict=True)]


def test_chinese_keyword_overlap():
    out = frame(q=["法国的首都是哪里？"], r=["法国的首都是巴黎。"]).select(
        keyword_overlap(keywords(pl.col("q")), keywords(pl.col("r")))
    )
    assert out.item() == 2 / 3  # 法国, 首都 of 法国, 首都, 哪里


def test_stopwords_apply_to_bigrams():
    out = frame(t=["我去北京"]).select(keywords(pl.col("t"), stopwords=frozenset({"北京"})))
    assert out.item().to_list() == ["我去", "去北"]


def test_english_keywords_are_unchanged_by_the_bigrams():
    """Texts without kana, CJK ideographs or Thai keep their keywords (golden rows above)."""
    texts = ["The children's cars were bought in 1990.", "Café naïve Ωmega, state-of-the-art."]
    out = frame(t=texts).select(keywords(pl.col("t"))).to_series()
    assert [k.to_list() for k in out] == [
        ["child", "car", "buy", "1990"], ["café", "naïve", "ωmega", "state", "art"]]
