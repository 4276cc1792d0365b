"""Keyword metrics: how much of a reference's (or a question's) content a response mentions.

Keywords of a text (:func:`keywords`), in this order:

1. Lowercase (polars ``str.to_lowercase``); the typographic apostrophe ’ becomes '.
2. Phrases first: a multi-word member of the synonym groups ("solar energy") that occurs as
   whole words, with any whitespace between its words, is one keyword, taken as it is (not
   lemmatized, never a stopword). Longer phrases are tried first.
3. Words in the rest: maximal runs of Unicode letters, combining marks and digits; an
   apostrophe between two such runs stays inside the word ("don't", "o'brien"). Hyphens,
   underscores and all other characters separate words ("state-of-the-art" -> state, of, the,
   art). A final possessive 's is removed ("Einstein's" -> einstein). Digit runs are words.
   Chinese, Japanese and Thai put no spaces between words, so the letters of those scripts
   (kana, CJK ideographs and Thai: :data:`~pipeline.text.rouge_tokenize.CHARACTER_TOKEN_RANGES`)
   are read apart: a run of them gives its **character bigrams**, each pair of adjacent
   characters (code points), in order ("巴黎是首都" -> 巴黎, 黎是, 是首, 首都 before step 4),
   and a one-character run is its own keyword ("Tokyo东京" -> tokyo, 东京). Bigrams are what CJK
   search engines index without a dictionary (Lucene's ``CJKBigramFilter``): they find
   two-character words, the most common length, without segmenting, and a longer word is
   found through all its bigrams. Single characters would match far too much.
4. Words in the stopword list are dropped; so are bigrams and lone characters that are in it
   or hold one of :data:`GRAMMAR_CHARACTERS`, particles that are almost never part of a
   content word (的 了 是 在 和 ..., Japanese の は が を ...): "法国的首都是巴黎" keeps 法国,
   首都, 巴黎 and drops 国的, 的首, 都是, 是巴, which a correct answer worded differently
   would not contain.
5. Each remaining word is lemmatized with simplemma (English) and the lemma lowercased
   ("cars" -> car, "bought" -> buy); a word whose lemma is a stopword is dropped too
   ("was" -> be). Bigrams are kept as they are.
6. Distinct keywords, in order of first occurrence.

Text without characters of those scripts gives the keywords it gave before they were split;
"法国的首都是巴黎" used to be a single keyword, so a reference "巴黎" was not covered by it. A
synonym member of those scripts is found when it is one bigram (two characters) or one lone
character.

Steps 1-3 and 6 are polars expressions (phrases, character runs and words are one regex
alternation, phrases first; runs become bigrams by list expressions, in batches that have
runs only). Steps 4-5 (with the possessive strip) run in Python once per *distinct word* of a
batch, never per row: each distinct word's keyword (or null for a stopword) is computed, its
lemma taken from the module-level cache ``_LEMMAS`` (filled on first sight by
``simplemma.lemmatize``), and the lists are mapped with ``replace_strict`` inside one
``map_batches``. The cache grows with the vocabulary the process has seen. Lemmas are
simplemma's, quirks included ("Fleming" -> fleme, "data" stays data).

Synonyms: a file of symmetric groups (:func:`load_synonym_table`); a single-word member is
lemmatized like a keyword, a multi-word member (a phrase) is kept as written. Each keyword
stands for a *concept*: the group's canonical member (its smallest member) when the keyword is
in one group, the keyword itself when it is in none. Reference keywords of one concept count
once, and "car" in the reference is found by "automobile" in the response. A member listed in
two groups is a synonym of the members of both, which do not thereby become synonyms of each
other ("power" in "electricity, power" and in "energy, power": electricity is not energy); its
concept is the set of its synonyms, and a response keyword covers the concepts of all its
synonyms.

Scores (Float64 in [0, 1]) take keyword lists, so each text is keyworded once and reused:

* ``content_coverage = |C(reference) ∩ V(response)| / |C(reference)|`` where ``C`` is the set
  of concepts of the keywords and ``V`` the set of concepts they cover (``C`` itself when no
  member is in two groups); 1.0 when the reference has no keyword (empty, or only stopwords:
  nothing to cover); null when either list is null.
* ``keyword_overlap``: the same with the question in the place of the reference.

The stopword list (``pipeline/data/stopwords_en.txt``) and the synonym groups
(``pipeline/data/synonyms.tsv``) are package data; a user file of the same format replaces them.

The enhanced text evaluation framework (``[compat] preset = "enhanced-framework"``,
docs/compat.md) keys its texts as its ``preprocess_text(t, lemmatize=True)`` does
(:func:`framework_keywords`): its words (:func:`~pipeline.text.tokenize.punctuation_deleted_words`:
lowercased, punctuation deleted, split at whitespace: "step-by-step" -> stepbystep, "350°F" ->
350f), each lemmatized as a noun by WordNet (:func:`~pipeline.text.wordnet.noun_lemmas`, nltk
3.8.1's ``WordNetLemmatizer``: "oceans" -> ocean, "wrote" stays wrote, "was" -> wa), then the
lemmas in its stopword list dropped (scikit-learn 1.3.0's ``ENGLISH_STOP_WORDS``,
``pipeline/data/enhanced-framework.stopwords_en.txt``; the word itself is not checked). Its
coverage also counts a reference keyword one of whose WordNet synonyms is a response keyword
(``wordnet=True``: the members of every synset of the keyword, all parts of speech,
:func:`~pipeline.text.wordnet.synonyms`: "ocean" is found by "sea"), scores 0.0, not 1.0, when
the reference has no keyword, and its keyword overlap looks synonyms up only for a question of
fewer than 20 keywords (:data:`FRAMEWORK_SYNONYM_LIMIT`). The preset's synonym groups still
apply, their single-word members lemmatized the same way; phrases are matched in the
punctuation-deleted text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, partial
from pathlib import Path
from types import MappingProxyType

import polars as pl

from pipeline.metrics.arithmetic import safe_div
from pipeline.rules.files import STOPWORDS_FILE, SYNONYMS_FILE, bundled_file, read_text
from pipeline.text import wordnet
from pipeline.text.charclasses import space_class
from pipeline.text.rouge_tokenize import CHARACTER_TOKEN_RANGES, character_token_class
from pipeline.text.tokenize import punctuation_deleted_text, punctuation_deleted_words

LEMMA_LANGUAGE = "en"
#: How single words are lemmatized: simplemma (the default) or WordNet as a noun (the
#: enhanced-framework preset).
LEMMATIZERS: tuple[str, ...] = ("simplemma", "wordnet")
#: The enhanced text evaluation framework looks WordNet synonyms up only for a question of fewer
#: keywords than this (``len(question_words) < 20`` in its keyword overlap).
FRAMEWORK_SYNONYM_LIMIT = 20
#: The enhanced-framework preset's stopword list (scikit-learn 1.3.0's ENGLISH_STOP_WORDS).
FRAMEWORK_STOPWORDS_FILE = bundled_file(STOPWORDS_FILE, "enhanced-framework")

_WORD = r"[\p{L}\p{M}\p{N}]+(?:'[\p{L}\p{M}\p{N}]+)*"
_LETTER = r"[\p{L}\p{M}\p{N}]"
#: A run of letters of the scripts written without spaces (read as character bigrams).
_CHARACTER_RUN = rf"[{_LETTER}&&[{character_token_class()}]]+"
_SPACED_LETTER = rf"[{_LETTER}--[{character_token_class()}]]"
#: A keyword unit: a character run, or a word of the other scripts.
_UNIT = rf"{_CHARACTER_RUN}|{_SPACED_LETTER}+(?:'{_SPACED_LETTER}+)*"
#: Whether a unit is (made of) characters of those scripts: it starts with one.
_IS_CHARACTERS = re.compile("^[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in CHARACTER_TOKEN_RANGES)
                            + "]")
#: Chinese and Japanese particles: a bigram or lone character holding one is not a keyword.
#: Narrower than the grounding rule's list (:data:`pipeline.text.evidence.FUNCTION_CHARACTERS`,
#: bigrams it merely does not require), since a dropped bigram is never compared: characters
#: that also build common content words (都 in 首都, 地 in 地球, 得 in 获得, 及 in 埃及, 与 in
#: 参与) are left out.
GRAMMAR_CHARACTERS = "的了是在和也而或这那们吗呢吧啊么被" + "のはがをにでとも"
_GRAMMAR = frozenset(GRAMMAR_CHARACTERS)
_FILE_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_FILE_PHRASE = re.compile(r"[^\W_]+(?:'[^\W_]+)*(?: [^\W_]+(?:'[^\W_]+)*)+")
#: Joins the synonyms that make the concept of a member of several groups.
_JOIN = "|"
#: Joins the concepts a keyword covers (no word, phrase or concept contains it).
_SEPARATOR = "\x1f"

#: Lemma of each distinct word seen so far (lowercase word -> lowercase lemma).
_LEMMAS: dict[str, str] = {}


def _lemma(word: str) -> str:
    lemma = _LEMMAS.get(word)
    if lemma is None:
        # simplemma's rule modules take 0.1 s to import: paid by the runs that read keywords
        import simplemma

        lemma = simplemma.lemmatize(word, lang=LEMMA_LANGUAGE).lower()
        _LEMMAS[word] = lemma
    return lemma


def _content_lines(text: str) -> list[tuple[int, str]]:
    """(line number, content) of lines that are not blank once ``#`` comments are removed."""
    stripped = ((n, line.split("#", 1)[0].strip()) for n, line in enumerate(text.splitlines(), 1))
    return [(n, content) for n, content in stripped if content]


def _as_word(raw: str, source: str, line: int) -> str:
    word = raw.strip().lower().replace("\u2019", "'")
    if not _FILE_WORD.fullmatch(word):
        raise ValueError(f"{source}, line {line}: {raw.strip()!r} is not a single word")
    return word


def _as_member(raw: str, source: str, line: int) -> str:
    """A synonym member as written: a word, or a phrase of words separated by single spaces."""
    phrase = " ".join(raw.strip().lower().replace("\u2019", "'").split())
    if not (_FILE_PHRASE.fullmatch(phrase) or _FILE_WORD.fullmatch(phrase)):
        raise ValueError(f"{source}, line {line}: {raw.strip()!r} is not a word or a phrase")
    return phrase


def _lemmatized(members: Iterable[str], lemmatizer: str) -> dict[str, str]:
    """Each member's lemma (``lemmatizer`` of :data:`LEMMATIZERS`); a phrase is its own."""
    distinct = set(members)
    words = sorted(m for m in distinct if " " not in m)
    if lemmatizer == "wordnet":
        lemmas = wordnet.noun_lemmas(pl.Series(words, dtype=pl.String)).to_list()
    elif lemmatizer == "simplemma":
        lemmas = [_lemma(word) for word in words]
    else:
        raise ValueError(f"unknown lemmatizer {lemmatizer!r}: use one of {LEMMATIZERS}")
    return {m: m for m in distinct if " " in m} | dict(zip(words, lemmas, strict=True))


@cache
def _stopwords(path: Path | None, bundled: str) -> frozenset[str]:
    text, source = read_text(path, bundled)
    return frozenset(_as_word(content, source, n) for n, content in _content_lines(text))


def load_stopwords(path: Path | None = None, *, bundled: str = STOPWORDS_FILE) -> frozenset[str]:
    """Stopwords, one word per line (lowercased; ``#`` comments), from ``path`` or the bundled
    file ``bundled`` (``pipeline/data/``): the packaged list by default.

    >>> "the" in load_stopwords(), "describe" in load_stopwords(bundled=FRAMEWORK_STOPWORDS_FILE)
    (True, True)
    """
    return _stopwords(None if path is None else Path(path), bundled)


@dataclass(frozen=True)
class SynonymTable:
    """Synonym groups as the keyword metrics use them (see the module docstring).

    ``concept`` maps each member to its concept (the group's smallest member, or ``group:``
    and the group's members joined by ``|`` when that member is in other groups too; for a
    member of several groups its synonyms joined by ``|``), ``covers`` each member to the
    concepts it covers, and ``phrases`` lists the multi-word members, longest first.
    """

    concept: Mapping[str, str]
    covers: Mapping[str, tuple[str, ...]]
    phrases: tuple[str, ...]

    @classmethod
    def from_concepts(cls, concept: Mapping[str, str]) -> SynonymTable:
        """A table of disjoint groups given as ``member -> canonical member``."""
        covers = {member: (key,) for member, key in concept.items()}
        phrases = _longest_first(m for m in concept if " " in m)
        return cls(MappingProxyType(dict(concept)), MappingProxyType(covers), phrases)


def _longest_first(phrases: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(phrases), key=lambda p: (-len(p), p)))


@cache
def _synonym_table(path: Path | None, bundled: str, lemmatizer: str) -> SynonymTable:
    text, source = read_text(path, bundled)
    lines = [
        (n, content, [_as_member(raw, source, n) for raw in re.split(r"[\t,]+", content)])
        for n, content in _content_lines(text)
    ]
    lemma = _lemmatized((m for _, _, written in lines for m in written), lemmatizer)
    groups: list[list[str]] = []
    for n, content, written in lines:
        members = sorted({lemma[m] for m in written})
        if len(members) < 2:
            raise ValueError(
                f"{source}, line {n}: a synonym group needs two words with different lemmas, "
                f"got {content!r}"
            )
        groups.append(members)
    synonyms: dict[str, set[str]] = {}
    in_groups: dict[str, list[list[str]]] = {}
    for members in groups:
        for member in members:
            synonyms.setdefault(member, set()).update(members)
            in_groups.setdefault(member, []).append(members)
    def group_key(members: list[str]) -> str:
        # The smallest member names its group, unless it is in other groups too.
        return members[0] if len(in_groups[members[0]]) == 1 else "group:" + _JOIN.join(members)

    concept = {
        member: group_key(found[0]) if len(found) == 1 else _JOIN.join(sorted(synonyms[member]))
        for member, found in in_groups.items()
    }
    covers = {
        member: tuple(sorted({concept[other] for other in synonyms[member]}))
        for member in synonyms
    }
    phrases = _longest_first(m for m in concept if " " in m)
    return SynonymTable(MappingProxyType(concept), MappingProxyType(covers), phrases)


def load_synonym_table(
    path: Path | None = None, *, bundled: str = SYNONYMS_FILE, lemmatizer: str = "simplemma"
) -> SynonymTable:
    """Synonym groups from ``path``, or the bundled file ``bundled`` (``pipeline/data/``).

    One group per line, members separated by tabs or commas; ``#`` comments. A member is a
    word (lowercased and lemmatized by ``lemmatizer``, one of :data:`LEMMATIZERS`, as keywords
    are: list base forms) or a phrase of words (lowercased, kept as written, matched before
    words: "solar energy"). A group needs two distinct members; a member may be in several
    groups (see the module docstring).

    >>> table = load_synonym_table()
    >>> table.concept["automobile"], table.concept["solar energy"]
    ('auto', 'solar energy')
    """
    return _synonym_table(None if path is None else Path(path), bundled, lemmatizer)


def load_synonyms(path: Path | None = None, *, bundled: str = SYNONYMS_FILE) -> dict[str, str]:
    """Synonym groups as ``member -> concept`` (the group's smallest member for a member of one
    group; :func:`load_synonym_table` says more). The packaged groups by default.

    >>> load_synonyms()["automobile"]
    'auto'
    """
    return dict(load_synonym_table(path, bundled=bundled).concept)


def _keyword(word: str, stopwords: frozenset[str]) -> str | None:
    """The keyword of one lowercase word or phrase, or None for a stopword (possessive 's
    removed); a phrase is its own keyword."""
    if " " in word:
        return word
    if _IS_CHARACTERS.match(word):  # a bigram or a lone character: not lemmatized
        return None if word in stopwords or not _GRAMMAR.isdisjoint(word) else word
    if word.endswith("'s"):
        word = word[:-2]
    if word in stopwords:
        return None
    lemma = _lemma(word)
    return None if lemma in stopwords else lemma


def _lemmatize_lists(words: pl.Series, stopwords: frozenset[str]) -> pl.Series:
    """Keywords of a ``List[String]`` column of words (steps 4-5, without the distinct step).

    Python runs once per distinct word of the batch (:func:`_keyword`); the lists are mapped by
    polars with ``replace_strict`` (stopwords map to null and are dropped). Character runs are
    first replaced by their bigrams (:func:`_with_bigrams`).
    """
    vocabulary = words.explode(empty_as_null=False, keep_nulls=False).unique()
    if vocabulary.str.contains(f"^{_CHARACTER_RUN}$").any():
        words = _with_bigrams(words)
        vocabulary = words.explode(empty_as_null=False, keep_nulls=False).unique()
    return _mapped(words, vocabulary.to_list(), stopwords)


def _with_bigrams(words: pl.Series) -> pl.Series:
    """Lists of units with each character run of two or more characters replaced, in place,
    by its character bigrams in order (list expressions over the whole batch)."""
    element = pl.element()
    is_run = element.str.contains(f"^{_CHARACTER_RUN}$") & (element.str.len_chars() > 1)
    run = pl.when(is_run).then(element)  # null for the other units: not split
    pairs = run.str.split("").list.eval(pl.element() + pl.element().shift(-1))
    bigrams = pairs.list.drop_nulls().list.join(_SEPARATOR)
    joined = words.list.eval(pl.coalesce(bigrams, element)).list.join(_SEPARATOR)
    split = joined.str.split(_SEPARATOR).list.eval(element.filter(element != ""))
    # Null rows stay null (a null list joins to null and splits to null).
    return split.rename(words.name)


def _mapped(words: pl.Series, vocabulary: list[str], stopwords: frozenset[str]) -> pl.Series:
    """The lists of ``words`` with each unit replaced by its keyword, stopwords dropped."""
    lemmas = [_keyword(word, stopwords) for word in vocabulary]
    mapping = pl.element().replace_strict(
        pl.Series(vocabulary, dtype=pl.String), pl.Series(lemmas, dtype=pl.String)
    )
    return words.list.eval(mapping.drop_nulls())


def _lowered(text: pl.Expr) -> pl.Expr:
    return text.str.to_lowercase().str.replace_all("\u2019", "'", literal=True)


def keyword_words(text: pl.Expr) -> pl.Expr:
    """Steps 1 and 3 of :func:`keywords`: lowercased words (the possessive 's still attached)."""
    return _lowered(text).str.extract_all(_WORD)


def phrase_pattern(phrases: Sequence[str]) -> str:
    """The regex of keyword units (character runs and words, step 3) with ``phrases`` tried
    first, as whole words, any whitespace between them.

    >>> print(phrase_pattern(["solar energy"]).split("|")[0])
    \\b(?:solar\\s+energy)\\b
    """
    if not phrases:
        return _UNIT
    ordered = _longest_first(phrases)
    alternatives = (r"\s+".join(re.escape(word) for word in p.split()) for p in ordered)
    return rf"\b(?:{'|'.join(alternatives)})\b|{_UNIT}"


def keywords(
    text: pl.Expr, *, stopwords: frozenset[str] | None = None, phrases: Sequence[str] = ()
) -> pl.Expr:
    """Distinct keywords of a text (``List[String]``), as the module docstring describes.

    ``stopwords`` defaults to the packaged list (:func:`load_stopwords`); ``phrases`` are the
    multi-word synonym members (:attr:`SynonymTable.phrases`) kept as one keyword each.

    >>> import polars as pl
    >>> pl.select(keywords(pl.lit("The children's cars were bought in 1990."))).item().to_list()
    ['child', 'car', 'buy', '1990']
    >>> text = pl.lit("Plants turn Solar  Energy into sugar.")
    >>> pl.select(keywords(text, phrases=["solar energy"])).item().to_list()
    ['plant', 'turn', 'solar energy', 'sugar']
    >>> pl.select(keywords(pl.lit("法国的首都是巴黎。"))).item().to_list()
    ['法国', '首都', '巴黎']
    """
    stop = load_stopwords() if stopwords is None else frozenset(stopwords)
    found = _lowered(text).str.extract_all(phrase_pattern(phrases))
    if phrases:
        found = found.list.eval(pl.element().str.replace_all(r"\s+", " "))
    lemmas = found.map_batches(
        partial(_lemmatize_lists, stopwords=stop),
        return_dtype=pl.List(pl.String),
        is_elementwise=True,
    )
    return lemmas.list.unique(maintain_order=True)


def _wordnet_lists(words: pl.Series, stopwords: frozenset[str]) -> pl.Series:
    """:func:`framework_keywords` of a ``List[String]`` column of words and phrases (without the
    distinct step): WordNet noun lemmas of the batch's distinct words, computed by joins; lemmas
    in ``stopwords`` map to null and are dropped; a phrase is its own keyword."""
    vocabulary = words.explode(empty_as_null=False, keep_nulls=False).unique()
    table = pl.DataFrame({"word": vocabulary, "lemma": wordnet.noun_lemmas(vocabulary)})
    keyword = (
        pl.when(pl.col("word").str.contains(" ", literal=True)).then(pl.col("word"))
        .when(pl.col("lemma").is_in(sorted(stopwords))).then(None)
        .otherwise(pl.col("lemma"))
    )
    table = table.with_columns(keyword=keyword)
    mapping = pl.element().replace_strict(table["word"], table["keyword"])
    return words.list.eval(mapping.drop_nulls())


def framework_keywords(
    text: pl.Expr, *, stopwords: frozenset[str] | None = None, phrases: Sequence[str] = ()
) -> pl.Expr:
    """Distinct keywords of a text as the enhanced text evaluation framework extracts them
    (``List[String]``, in order of first occurrence; the module docstring says how).

    ``stopwords`` defaults to its list (:data:`FRAMEWORK_STOPWORDS_FILE`); ``phrases`` (the
    preset's multi-word synonym members) are matched in the punctuation-deleted text as whole
    words, before words, and kept as one keyword each.

    >>> import polars as pl
    >>> text = pl.lit("Who wrote the oceans' 350°F step-by-step cookies? It was written.")
    >>> pl.select(framework_keywords(text)).item().to_list()
    ['wrote', 'ocean', '350f', 'stepbystep', 'cooky', 'wa', 'written']
    """
    stop = (load_stopwords(bundled=FRAMEWORK_STOPWORDS_FILE) if stopwords is None
            else frozenset(stopwords))
    if phrases:
        space = f"[{space_class()}]"
        alternatives = (f"{space}+".join(re.escape(word) for word in phrase.split())
                        for phrase in _longest_first(phrases))
        # Matches start where a word starts; a phrase must end where a word ends.
        pattern = f"(?:{'|'.join(alternatives)})(?:{space}|$)|[^{space_class()}]+"
        found = punctuation_deleted_text(text).str.extract_all(pattern).list.eval(
            pl.element().str.replace_all(f"{space}+", " ").str.strip_suffix(" ")
        )
    else:
        found = punctuation_deleted_words(text)
    lemmas = found.map_batches(
        partial(_wordnet_lists, stopwords=stop),
        return_dtype=pl.List(pl.String),
        is_elementwise=True,
    )
    return lemmas.list.unique(maintain_order=True)


def _table(synonyms: SynonymTable | Mapping[str, str] | None) -> SynonymTable:
    if synonyms is None:
        return load_synonym_table()
    if isinstance(synonyms, SynonymTable):
        return synonyms
    return SynonymTable.from_concepts(synonyms)


def canonical_keywords(
    keyword_lists: pl.Expr, synonyms: SynonymTable | Mapping[str, str]
) -> pl.Expr:
    """Distinct concepts of keyword lists (:attr:`SynonymTable.concept`; others stay as they
    are)."""
    table = _table(synonyms)
    if not table.concept:
        return keyword_lists.list.unique()
    old, new = list(table.concept), list(table.concept.values())
    return keyword_lists.list.eval(pl.element().replace(old, new)).list.unique()


def covered_concepts(
    keyword_lists: pl.Expr, synonyms: SynonymTable | Mapping[str, str]
) -> pl.Expr:
    """Distinct concepts that keyword lists cover (:attr:`SynonymTable.covers`): a keyword's
    own concept and, for a member of several groups, those of all its synonyms."""
    table = _table(synonyms)
    if all(len(keys) == 1 for keys in table.covers.values()):
        return canonical_keywords(keyword_lists, table)
    old = list(table.covers)
    new = [_SEPARATOR.join(keys) for keys in table.covers.values()]
    joined = keyword_lists.list.eval(pl.element().replace(old, new)).list.join(_SEPARATOR)
    covered = joined.str.split(_SEPARATOR).list.eval(pl.element().filter(pl.element() != ""))
    return covered.list.unique()


def _wordnet_found(pair: pl.Series, limit: int | None) -> pl.Series:
    """Per row of a struct of keyword lists ``reference`` and ``response``: the reference
    keywords one of whose WordNet synonyms (:func:`~pipeline.text.wordnet.synonyms`) is a
    response keyword (``[]`` for none; none either where the reference has ``limit`` keywords
    or more). Joins over the batch's distinct reference keywords, never a loop over rows."""
    rows = pair.struct.unnest().with_row_index("row")
    reference = rows.select("row", "reference")
    if limit is not None:
        reference = reference.filter(pl.col("reference").list.len() < limit)
    expected = reference.explode("reference").drop_nulls().rename({"reference": "word"})
    found = rows.select("row", synonym="response").explode("synonym").drop_nulls()
    pairs = wordnet.synonyms(expected["word"].unique()).join(
        found.select("synonym").unique(), on="synonym", how="semi"
    )
    hits = (
        expected.join(pairs, on="word")
        .join(found, on=["row", "synonym"], how="semi")
        .group_by("row")
        .agg(pl.col("word").unique(maintain_order=True))
    )
    out = rows.select("row").join(hits, on="row", how="left", maintain_order="left")
    empty = pl.lit([], dtype=pl.List(pl.String))
    return out.select(pl.col("word").fill_null(empty)).to_series().rename(pair.name)


def content_coverage(
    response: pl.Expr,
    reference: pl.Expr,
    synonyms: SynonymTable | Mapping[str, str] | None = None,
    *,
    wordnet: bool = False,
    empty: float = 1.0,
    wordnet_limit: int | None = None,
) -> pl.Expr:
    """Share of the reference's keyword concepts found in the response (Float64 in [0, 1]).

    Takes keyword lists (:func:`keywords`). ``synonyms`` is a :class:`SynonymTable` or a
    mapping ``member -> canonical member`` of disjoint groups; the packaged groups by default,
    ``{}`` for none. ``empty`` (1.0) when the reference has no keyword. ``wordnet=True`` (the
    enhanced-framework preset) also finds a reference keyword by its WordNet synonyms, for a
    reference of fewer than ``wordnet_limit`` keywords when given (the module docstring).

    >>> import polars as pl
    >>> response = keywords(pl.lit("She purchased an automobile."))
    >>> reference = keywords(pl.lit("She bought a red car."))
    >>> pl.select(content_coverage(response, reference)).item()
    0.6666666666666666
    >>> poem = framework_keywords(pl.lit("The deep blue sea."))
    >>> pl.select(content_coverage(poem, framework_keywords(pl.lit("The ocean.")), {},
    ...                            wordnet=True)).item()
    1.0
    """
    return pl.struct(reference=reference, response=response).map_batches(
        partial(_coverage_batch, table=_table(synonyms), wordnet=wordnet, empty=empty,
                wordnet_limit=wordnet_limit),
        return_dtype=pl.Float64,
        is_elementwise=True,
    )


def _coverage_batch(
    pair: pl.Series, *, table: SynonymTable, wordnet: bool, empty: float,
    wordnet_limit: int | None,
) -> pl.Series:
    """:func:`content_coverage` of a batch (a struct of ``reference`` and ``response`` keyword
    lists), each list column computed once: polars does not share an expression containing
    ``list.eval`` between its uses, so as one expression the reference's concepts were built
    three times."""
    frame = pair.struct.unnest()
    lists = frame.select(
        expected=canonical_keywords(pl.col("reference"), table),
        covered=covered_concepts(pl.col("response"), table),
    )
    if wordnet:
        by_synonym = _wordnet_found(pair, wordnet_limit).alias("by_synonym")
        lists = lists.with_columns(by_synonym).with_columns(
            pl.col("covered").list.set_union(canonical_keywords(pl.col("by_synonym"), table))
        )
    found = lists.select(
        pl.col("expected").list.set_intersection(pl.col("covered")).list.len().alias("found"),
        pl.col("expected").list.len().alias("expected"),
    )
    return found.select(
        safe_div(pl.col("found"), pl.col("expected"), empty=empty)
    ).to_series().rename(pair.name)


def keyword_overlap(
    question: pl.Expr,
    response: pl.Expr,
    synonyms: SynonymTable | Mapping[str, str] | None = None,
    *,
    wordnet: bool = False,
    empty: float = 1.0,
    wordnet_limit: int | None = None,
) -> pl.Expr:
    """Share of the question's keyword concepts the response mentions (Float64 in [0, 1]).

    :func:`content_coverage` with the question as the reference side; ``empty`` (1.0) when the
    question has no keyword. The enhanced-framework preset passes ``wordnet=True``,
    ``empty=0.0`` and ``wordnet_limit=FRAMEWORK_SYNONYM_LIMIT`` (which counts only with
    ``wordnet``).
    """
    return content_coverage(response, question, synonyms, wordnet=wordnet, empty=empty,
                            wordnet_limit=wordnet_limit)
