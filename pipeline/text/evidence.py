"""Scripts written without spaces between words, read as characters by the grounding rule.

The default grounding rule (:mod:`pipeline.metrics.embedding.support`, docs/grounding.md) reads
Latin-script (and Cyrillic, Greek ...) text as words (:mod:`pipeline.text.claims`) and the
scripts below as runs of characters, whose bigrams it looks for in the passages:

* :data:`CHARACTER_SCRIPTS`: Han, Hiragana, Katakana and Thai;
* :data:`FUNCTION_CHARACTERS`: characters of Chinese and Japanese grammar (的, 了, 是 ...), never
  a missing term by themselves.
"""

from __future__ import annotations

import polars as pl

#: Scripts written without spaces between words: read as character bigrams.
CHARACTER_SCRIPTS = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Thai}"
_CHARACTER_RUN = rf"[{CHARACTER_SCRIPTS}]+"

#: Characters of Chinese and Japanese grammar: a bigram holding one is not an anchor.
FUNCTION_CHARACTERS = "的了是在和有也都就而及与或被把这那其之于以为对从到们着过得地吗呢吧啊么所"


def character_runs(text: pl.Expr) -> pl.Expr:
    """The runs of :data:`CHARACTER_SCRIPTS` characters in ``text`` (``List[String]``).

    >>> pl.select(character_runs(pl.lit("香港立法会有70个议席"))).item().to_list()
    ['香港立法会有', '个议席']
    """
    return text.str.extract_all(_CHARACTER_RUN)
