"""WordNet 3.0 lemmas and synonyms as nltk 3.8.1 gives them, computed over a vocabulary.

Reproduces, for the enhanced text evaluation framework (docs/compat.md), which pins nltk 3.8.1:

* :func:`noun_lemmas`: ``WordNetLemmatizer().lemmatize(word)`` (part of speech noun), the
  shortest of ``_morphy(word, "n")`` (the first of the shortest), else the word itself;
* :func:`synonyms`: ``{l.name().lower() for s in wordnet.synsets(word) for l in s.lemmas()}``,
  the members of every synset of every form ``_morphy(word, pos)`` gives for noun, verb,
  adjective and adverb.

``_morphy(form, pos)`` of nltk 3.8.1, for one part of speech:

1. a form in the exception list of ``pos`` gives the form and its base forms, and nothing else;
2. otherwise the form, then the form with each suffix rule of ``pos`` (:data:`SUBSTITUTIONS`,
   in nltk's order) applied once where the form ends with its suffix;
3. of those, the ones WordNet indexes under ``pos``, in that order, without repeats;
4. when step 2 gives none (and the form is no exception), the rules are applied again to all
   the rule outputs of the round before, indexed or not, round after round, until a round has
   indexed forms (those are the result) or no outputs. nltk 3.9 dropped this step.

"wrote" stays ``wrote`` as a noun (no noun rule applies, "wrote" is no noun) while its verb
forms are ``write``; "oceans" -> ``ocean``; "as" -> ``a`` and "was" -> ``wa`` (both are
WordNet nouns). Everything runs as polars joins over the distinct words given, never per row;
the only Python loops are over the parts of speech, the suffix rules and the rounds of step 4.

The tables (``pipeline/data/wordnet-3.0-*.parquet``, built by :mod:`pipeline.text.wordnet_table`
from the WordNet 3.0 dict files, Princeton's licence in ``LICENSE-wordnet-3.0.txt``) are read on
first use and kept for the process.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from functools import cache, cached_property

import polars as pl

from pipeline.rules.files import WORDNET_EXCEPTIONS_FILE, WORDNET_SENSES_FILE, read_bytes
from pipeline.text.normalize import python_lower
from pipeline.text.wordnet_table import POS_FILES

#: nltk's ``MORPHOLOGICAL_SUBSTITUTIONS`` (WordNet's morphy suffix rules), in its order.
SUBSTITUTIONS: dict[str, tuple[tuple[str, str], ...]] = {
    "n": (("s", ""), ("ses", "s"), ("ves", "f"), ("xes", "x"), ("zes", "z"), ("ches", "ch"),
          ("shes", "sh"), ("men", "man"), ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""),
          ("ing", "e"), ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}

_FORMS = {"word": pl.String(), "form": pl.String(), "rank": pl.UInt32()}


@dataclass(frozen=True)
class WordNet:
    """The shipped tables: ``senses`` (pos, lemma, synset) and ``exceptions`` (pos, form,
    base, rank); see :mod:`pipeline.text.wordnet_table`. Split by part of speech on first use.
    """

    senses: pl.DataFrame
    exceptions: pl.DataFrame

    @cached_property
    def _by_pos(self) -> dict[str, tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]]:
        split = {}
        for pos in POS_FILES:
            senses = self.senses.filter(pl.col("pos") == pos)
            lemmas = senses.select("lemma").unique()
            split[pos] = (senses, lemmas, self.exceptions.filter(pl.col("pos") == pos))
        return split

    def of(self, pos: str) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        """The senses, the distinct lemmas and the exceptions of one part of speech."""
        return self._by_pos[pos]


@cache
def load_wordnet() -> WordNet:
    """The packaged WordNet 3.0 tables, read once per process."""
    frames = [pl.read_parquet(io.BytesIO(read_bytes(None, name)[0]))
              for name in (WORDNET_SENSES_FILE, WORDNET_EXCEPTIONS_FILE)]
    return WordNet(*frames)


def _ranked(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` (word, form, order...) with ``rank`` 0, 1, ... per word in that order."""
    order = [name for name in frame.columns if name not in ("word", "form")]
    return (
        frame.sort("word", *order)
        .select("word", "form", rank=pl.int_range(pl.len(), dtype=pl.UInt32).over("word"))
    )


def _apply_rules(forms: pl.DataFrame, pos: str) -> pl.DataFrame:
    """Each (word, form, rank) with every rule of ``pos`` applied once where it applies, ranked
    in nltk's order: by the input form's rank, then by rule."""
    outputs = [
        forms.filter(pl.col("form").str.ends_with(old)).select(
            "word",
            form=pl.col("form").str.head(-len(old)) + new,
            parent=pl.col("rank"),
            rule=pl.lit(index, dtype=pl.UInt32),
        )
        for index, (old, new) in enumerate(SUBSTITUTIONS[pos])
    ]
    if not outputs:
        return pl.DataFrame(schema=_FORMS)
    return _ranked(pl.concat(outputs))


def _indexed(forms: pl.DataFrame, lemmas: pl.DataFrame) -> pl.DataFrame:
    """The forms WordNet indexes, each once per word (its first rank), re-ranked from 0."""
    found = forms.join(lemmas, left_on="form", right_on="lemma", how="semi")
    first = found.group_by("word", "form").agg(pl.col("rank").min())
    return _ranked(first)


def morphy(words: pl.Series, pos: str, wordnet: WordNet | None = None) -> pl.DataFrame:
    """nltk 3.8.1 ``_morphy(word, pos)`` of each distinct word: (word, form, rank), the forms of
    a word in nltk's order (``rank`` from 0); a word with no form has no row.

    >>> forms = morphy(pl.Series(["dishes", "wrote"]), "v")
    >>> forms.sort("word", "rank").rows()
    [('dishes', 'dish', 0), ('wrote', 'write', 0)]
    """
    _, lemmas, exceptions = (load_wordnet() if wordnet is None else wordnet).of(pos)
    vocabulary = pl.DataFrame({"word": words.cast(pl.String)}).drop_nulls().unique()
    listed = vocabulary.join(exceptions, left_on="word", right_on="form", how="semi")
    # 1. exceptions: the word itself, then its base forms
    excepted = pl.concat([
        listed.select("word", form="word", order=pl.lit(0, dtype=pl.UInt32)),
        listed.join(exceptions, left_on="word", right_on="form").select(
            "word", form="base", order=pl.col("rank").cast(pl.UInt32) + 1
        ),
    ])
    # 2. the others: the word itself, then one round of rules
    rest = vocabulary.join(listed, on="word", how="anti").select(
        "word", form="word", rank=pl.lit(0, dtype=pl.UInt32)
    )
    once = _apply_rules(rest, pos)
    results = [
        _indexed(excepted.rename({"order": "rank"}), lemmas),
        _indexed(pl.concat([rest, once.with_columns(pl.col("rank") + 1)]), lemmas),
    ]
    # 4. words still without a form: further rounds over all the previous round's outputs
    frontier = once.join(results[1], on="word", how="anti")
    while frontier.height:
        frontier = _apply_rules(frontier.unique(["word", "form"], keep="first"), pos)
        found = _indexed(frontier, lemmas)
        results.append(found)
        frontier = frontier.join(found, on="word", how="anti")
    return pl.concat(results)


def noun_lemmas(words: pl.Series, wordnet: WordNet | None = None) -> pl.Series:
    """``WordNetLemmatizer().lemmatize(word)`` of nltk 3.8.1 for each word, in order (null stays
    null): the shortest noun form of :func:`morphy` (the first of the shortest), else the word.

    >>> noun_lemmas(pl.Series(["oceans", "wrote", "cookies", "mitochondria", "h2o"])).to_list()
    ['ocean', 'wrote', 'cooky', 'mitochondrion', 'h2o']
    """
    forms = morphy(words, "n", wordnet)
    shortest = (
        forms.sort("word", pl.col("form").str.len_chars(), "rank")
        .group_by("word", maintain_order=True)
        .agg(lemma=pl.col("form").first())
    )
    given = pl.DataFrame({"word": words.cast(pl.String)})
    lemmas = given.join(shortest, on="word", how="left", maintain_order="left")
    return lemmas.select(pl.coalesce("lemma", "word")).to_series().rename(words.name)


def synonyms(words: pl.Series, wordnet: WordNet | None = None) -> pl.DataFrame:
    """(word, synonym) for each distinct word: the members of every synset of ``synsets(word)``
    of nltk 3.8.1 (all four parts of speech), lowercased, ``_`` between words; the word itself
    among them when WordNet has it.

    >>> found = synonyms(pl.Series(["ocean"]))
    >>> sorted(found["synonym"])
    ['ocean', 'sea']
    """
    wn = load_wordnet() if wordnet is None else wordnet
    keys = (
        pl.DataFrame({"word": words.cast(pl.String)}).drop_nulls().unique()
        .with_columns(lookup=python_lower(pl.col("word")))  # synsets() lowercases the word
    )
    synsets = pl.concat([
        morphy(keys["lookup"], pos, wn)
        .join(wn.of(pos)[0], left_on="form", right_on="lemma")
        .select(lookup="word", pos=pl.col("pos"), synset="synset")
        for pos in POS_FILES
    ])
    return (
        keys.join(synsets, on="lookup")
        .join(wn.senses, on=["pos", "synset"])
        .select("word", synonym="lemma")
        .unique(maintain_order=True)
    )
