"""WordNet lemmas and synonyms (pipeline.text.wordnet) and their tables (wordnet_table).

Three oracles: a hand-written dict for the builder; a line-for-line transcription of nltk
3.8.1's ``_morphy``, ``WordNetLemmatizer.lemmatize`` and ``synsets`` over the shipped tables (the
version the enhanced text evaluation framework pins); and nltk itself (the installed version),
its ``WordNetCorpusReader`` reading a dict directory written from the shipped tables. nltk 3.9
dropped 3.8.1's repeated rounds of suffix rules (step 4 of the module docstring), so nltk itself
is compared where one round decides.
"""

from __future__ import annotations

import functools
import warnings
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest
from conftest import examples
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.rules.files import WORDNET_EXCEPTIONS_FILE, WORDNET_SENSES_FILE
from pipeline.text.wordnet import WordNet, load_wordnet, morphy, noun_lemmas, synonyms
from pipeline.text.wordnet_table import LICENSE_FILE, POS_FILES, build, main

TINY = Path(__file__).parent / "fixtures" / "wordnet-tiny"
WN = load_wordnet()


# --- the builder, on a hand-written dict -------------------------------------------------------
def test_builder_reads_the_dict_format(tmp_path: Path, capsys):
    """index.noun has CRLF line ends and a licence header; aurar is listed twice (the last
    line wins, as in nltk); adv.exc is empty."""
    assert main([str(TINY), str(tmp_path)]) == 0
    assert "wrote 11 senses and 6 exception forms" in capsys.readouterr().out
    senses = pl.read_parquet(tmp_path / WORDNET_SENSES_FILE)
    assert senses.select(pl.col("pos").cast(pl.String), "lemma", "synset").rows() == [
        ("n", "a", 500), ("n", "cooky", 400), ("n", "ocean", 100), ("n", "ocean", 200),
        ("n", "sea", 100), ("n", "sea", 300),
        ("v", "compose", 10), ("v", "write", 10), ("v", "write", 20),
        ("a", "deep", 50), ("r", "deep", 60),
    ]
    exceptions = pl.read_parquet(tmp_path / WORDNET_EXCEPTIONS_FILE)
    assert exceptions.select(pl.col("pos").cast(pl.String), "form", "base", "rank").rows() == [
        ("n", "aurar", "eyrir", 0), ("n", "bases", "base", 0), ("n", "bases", "basis", 1),
        ("n", "mitochondria", "mitochondrion", 0), ("v", "wrote", "write", 0),
        ("a", "deeper", "deep", 0),
    ]
    assert senses.schema["synset"] == pl.UInt32 and exceptions.schema["rank"] == pl.UInt8
    assert (tmp_path / LICENSE_FILE).read_bytes() == b"Tiny fixture licence: free to use.\n"


def test_builder_names_a_malformed_index_line(tmp_path: Path):
    source = tmp_path / "dict"
    source.mkdir()
    for path in TINY.iterdir():
        (source / path.name).write_bytes(path.read_bytes())
    (source / "index.verb").write_text("write v 2 0 2 0 00000010\n", "utf-8")
    with pytest.raises(ValueError, match=r"index\.verb: malformed line for 'write'"):
        build(source, tmp_path / "out")


def test_tiny_tables_lemmas_and_synonyms(tmp_path: Path):
    senses, exceptions = build(TINY, tmp_path)
    tiny = WordNet(senses, exceptions)
    words = pl.Series(["oceans", "seas", "cookies", "bases", "wrote", "as", "mitochondria"])
    assert noun_lemmas(words, tiny).to_list() == [
        "ocean", "sea", "cooky", "bases", "wrote", "a", "mitochondria"
    ]
    got = synonyms(pl.Series(["oceans", "wrote", "deeper", "x"]), tiny)
    assert sorted(got.rows()) == [
        ("deeper", "deep"), ("oceans", "ocean"), ("oceans", "sea"),
        ("wrote", "compose"), ("wrote", "write"),
    ]


# --- the shipped tables -------------------------------------------------------------------------
def test_shipped_tables_are_wordnet_3_0():
    assert WN.senses.height == 206_941 and WN.exceptions.height == 6_048
    assert WN.senses.group_by("pos").len().sort("pos")["len"].to_list() == [
        146_312, 25_047, 30_002, 5_580
    ]
    licence = Path(__file__).parents[1] / "pipeline" / "data" / LICENSE_FILE
    assert "WordNet 3.0 Copyright 2006 by Princeton University" in licence.read_text("utf-8")


@pytest.mark.parametrize(
    ("word", "lemma"),
    [
        ("wrote", "wrote"),  # no noun: the framework's "wrote" and "written" stay apart
        ("written", "written"),
        ("oceans", "ocean"),
        ("cookies", "cooky"),
        ("mitochondria", "mitochondrion"),  # noun.exc
        ("glasses", "glass"),  # -ses -> s is shorter than -s
        ("was", "wa"),  # WordNet nouns, all three
        ("as", "a"),
        ("does", "doe"),
        ("is", "is"),  # "i" is no WordNet noun
        ("discuss", "discus"),
        ("dogss", "dog"),  # a second round of rules (nltk 3.8.1 only)
        ("h2o", "h2o"),
        ("", ""),
    ],
)
def test_noun_lemmas_golden(word, lemma):
    assert noun_lemmas(pl.Series([word])).to_list() == [lemma]


def test_synonyms_golden():
    got = synonyms(pl.Series(["ocean", "wrote", "poem", "zzzz"]))
    found = got.group_by("word").agg(pl.col("synonym").sort())
    by_word = dict(found.iter_rows())
    assert by_word["ocean"] == ["ocean", "sea"]
    assert by_word["poem"] == ["poem", "verse_form"]
    assert {"write", "compose", "pen", "indite", "publish", "spell"} <= set(by_word["wrote"])
    assert "written" not in by_word["wrote"] and "zzzz" not in by_word


def test_empty_and_null_words():
    assert noun_lemmas(pl.Series([], dtype=pl.String)).to_list() == []
    assert noun_lemmas(pl.Series(["dogs", None])).to_list() == ["dog", None]
    assert synonyms(pl.Series([None], dtype=pl.String)).height == 0


# --- oracle: nltk 3.8.1, transcribed, over the shipped tables -----------------------------------
# fmt: off
SUBSTITUTIONS = {  # nltk 3.8.1 WordNetCorpusReader.MORPHOLOGICAL_SUBSTITUTIONS
    "n": [("s", ""), ("ses", "s"), ("ves", "f"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
          ("shes", "sh"), ("men", "man"), ("ies", "y")],
    "v": [("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
          ("ing", "e"), ("ing", "")],
    "a": [("er", ""), ("est", ""), ("er", "e"), ("est", "e")],
    "r": [],
}
# fmt: on
Tables = tuple[dict[tuple[str, str], list[int]], dict[tuple[str, int], list[str]],
               dict[str, dict[str, list[str]]]]


@functools.cache
def oracle_tables() -> Tables:
    """The oracle's indexes (synsets of a lemma, members of a synset, exceptions of a form),
    built once, when a test first needs them (a Python loop over 206,941 senses: not while
    the tests are collected)."""
    offsets: dict[tuple[str, str], list[int]] = defaultdict(list)
    members: dict[tuple[str, int], list[str]] = defaultdict(list)
    for pos, lemma, synset in WN.senses.iter_rows():
        offsets[lemma, pos].append(synset)
        members[pos, synset].append(lemma)
    exceptions: dict[str, dict[str, list[str]]] = {pos: {} for pos in POS_FILES}
    for pos, form, base, _rank in WN.exceptions.sort("rank").iter_rows():
        exceptions[pos].setdefault(form, []).append(base)
    return offsets, members, exceptions


def oracle_morphy(form: str, pos: str, rounds: int | None = None) -> list[str]:
    """``_morphy`` of nltk 3.8.1; ``rounds=1`` gives nltk 3.9's (no further rounds)."""
    offsets, _, by_pos = oracle_tables()
    exceptions, substitutions = by_pos[pos], SUBSTITUTIONS[pos]

    def apply_rules(forms):
        return [form[: -len(old)] + new for form in forms for old, new in substitutions
                if form.endswith(old)]

    def filter_forms(forms):
        return list(dict.fromkeys(form for form in forms if (form, pos) in offsets))

    if form in exceptions:
        return filter_forms([form, *exceptions[form]])
    forms = apply_rules([form])
    results = filter_forms([form, *forms])
    if results or rounds == 1:
        return results
    while forms:
        forms = apply_rules(forms)
        results = filter_forms(forms)
        if results:
            return results
    return []


def oracle_lemmatize(word: str, rounds: int | None = None) -> str:
    lemmas = oracle_morphy(word, "n", rounds)
    return min(lemmas, key=len) if lemmas else word


def oracle_synonyms(word: str, rounds: int | None = None) -> set[str]:
    lemma = word.lower()
    offsets, members, _ = oracle_tables()
    return {name for pos in POS_FILES for form in oracle_morphy(lemma, pos, rounds)
            for offset in offsets[form, pos] for name in members[pos, offset]}


ROOTS = [*WN.senses["lemma"].unique().sort().gather_every(97).to_list(),
         *(form for pos in ("n", "v") for form in WN.exceptions.filter(pl.col("pos") == pos)
           .sort("rank")["form"].unique(maintain_order=True)),
         "dog", "class", "box", "church", "wife", "man", "city", "write", "bake", "sing", "big",
         "ocean", "cooky"]
SUFFIXES = ["", "s", "es", "ses", "ies", "ves", "xes", "zes", "ches", "shes", "men", "ss", "sss",
            "sses", "ing", "ings", "ed", "er", "est", "e", "y"]
WORDS = st.one_of(
    st.builds(lambda root, suffix: root + suffix, st.sampled_from(ROOTS),
              st.sampled_from(SUFFIXES)),
    st.text(alphabet="acehimnorsvxyz_'-", max_size=9),
)


# a few lists of many words: each call is a batch
@settings(max_examples=examples(30), deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=80))
def test_lemmas_and_synonyms_equal_nltk_3_8_1(words):
    assert noun_lemmas(pl.Series(words, dtype=pl.String)).to_list() == [
        oracle_lemmatize(w) for w in words
    ]
    for pos in POS_FILES:
        forms = morphy(pl.Series(words, dtype=pl.String), pos).sort("word", "rank")
        got = dict(forms.group_by("word", maintain_order=True).agg("form").iter_rows())
        assert {w: got.get(w, []) for w in words} == {w: oracle_morphy(w, pos) for w in words}
    found: dict[str, set[str]] = defaultdict(set)
    for word, synonym in synonyms(pl.Series(words, dtype=pl.String)).iter_rows():
        found[word].add(synonym)
    assert {w: found[w] for w in words} == {w: oracle_synonyms(w) for w in words}


# --- oracle: nltk's own reader over a dict written from the shipped tables -----------------------
@pytest.fixture(scope="module")
def nltk_reader(tmp_path_factory: pytest.TempPathFactory):
    """nltk's WordNetCorpusReader over index, exception and data files written from the shipped
    tables (synsets renumbered by their byte offsets in the data files written here)."""
    import nltk.data
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    data = tmp_path_factory.mktemp("nltk_data")
    root = data / "corpora" / "wordnet"  # nltk_data's layout: the reader maps "wordnet" to it
    root.mkdir(parents=True)
    (root / "lexnames").write_text("00 all.all 0\n", "utf-8")
    (root / "index.sense").write_text("", "utf-8")
    for pos, suffix in POS_FILES.items():
        offsets, lines, at = {}, [], 0
        senses = WN.senses.filter(pl.col("pos") == pos)
        for synset, names in senses.group_by("synset").agg("lemma").sort("synset").iter_rows():
            members = " ".join(f"{name} 0" for name in names)
            line = f"{at:08d} 00 {pos} {len(names):02x} {members} 000 | synset {synset}\n"
            offsets[synset] = at
            lines.append(line)
            at += len(line.encode("utf-8"))
        (root / f"data.{suffix}").write_text("".join(lines), "utf-8")
        index = senses.group_by("lemma", maintain_order=True).agg("synset").sort("lemma")
        (root / f"index.{suffix}").write_text("".join(
            f"{lemma} {pos} {len(ids)} 0 {len(ids)} 0 "
            + " ".join(f"{offsets[i]:08d}" for i in ids) + "\n"
            for lemma, ids in index.iter_rows()
        ), "utf-8")
        exceptions = (WN.exceptions.filter(pl.col("pos") == pos).sort("form", "rank")
                      .group_by("form", maintain_order=True).agg("base"))
        (root / f"{suffix}.exc").write_text("".join(
            f"{form} {' '.join(bases)}\n" for form, bases in exceptions.iter_rows()
        ), "utf-8")
    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        patch.setattr(nltk.data, "path", [str(data)])  # nothing else: no downloaded data
        warnings.simplefilter("ignore")  # "multilingual functions are not available"
        yield WordNetCorpusReader(str(root), None)


def test_nltk_reader_over_the_shipped_tables(nltk_reader):
    assert {lemma.name() for s in nltk_reader.synsets("oceans") for lemma in s.lemmas()} == {
        "ocean", "sea"
    }
    assert nltk_reader._morphy("wrote", "v") == ["write"]
    assert nltk_reader._morphy("wrote", "n") == []


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(WORDS, min_size=1, max_size=25))
def test_one_round_equals_nltk_reading_the_shipped_tables(nltk_reader, words):
    """Where one round of rules decides, nltk's reader over the shipped tables agrees with the
    transcription, so with the polars code (previous test); where it does not, nltk 3.9+
    finds nothing."""
    for word in words:
        for pos in POS_FILES:
            assert nltk_reader._morphy(word, pos) == oracle_morphy(word, pos, rounds=1)
        lemmas = nltk_reader._morphy(word, "n")
        assert (min(lemmas, key=len) if lemmas else word) == oracle_lemmatize(word, rounds=1)
        names = {lemma.name().lower() for synset in nltk_reader.synsets(word)
                 for lemma in synset.lemmas()}
        assert names == oracle_synonyms(word, rounds=1)
