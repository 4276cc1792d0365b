"""Sentence splitting as polars expressions (one regex pass per rule, no per-row Python).

:func:`split_sentences` turns a text into a ``List[String]`` of sentences by these rules, applied
in order:

1. **Boundary.** A sentence ends after a run of terminal punctuation ``[.!?]+``, optionally
   followed by closing quotes or a parenthesis (``" ' ” ’ )``) and by citation markers
   (:data:`pipeline.text.markers.CITATION_MARKER`, e.g. ``[1]``, ``[2][3]``, ``[1, 2]``,
   with or without spaces before them), *when* what comes next is whitespace followed by an
   uppercase letter (``\\p{Lu}``), a digit (``\\p{Nd}``) or an opening quote or parenthesis
   (``" ' “ ‘ (``). Markers after the punctuation therefore stay with the preceding sentence:
   ``"Paris is big. [1] It ..."`` and ``"Paris is big.[1][2] It"`` both end the first sentence
   after the markers. Text ending in punctuation simply ends.
2. **CJK boundary.** Chinese and Japanese put no space between sentences, so a run of the
   sentence terminals ``。！？｡`` (ideographic and halfwidth full stop, fullwidth ``!`` and ``?``;
   any mix of them and ``．``, e.g. ``？！``) ends a sentence *without* whitespace after it,
   whatever follows. The fullwidth full stop ``．`` (U+FF0E, Japanese technical writing) does the
   same unless a digit follows it (``３．５`` is a decimal); this follows Unicode's sentence
   boundaries (UAX #29), where ``。！？`` are STerm, always terminal, and ``．`` is ATerm like
   ``.``. Closing quotes and brackets (``」 』 ） 】 〕 》 〉 ” ’`` and the ASCII ones above) and
   citation markers after the run stay with the sentence, as in rule 1:
   ``"北京是首都[1]。上海很大[2]。"`` gives ``"北京是首都[1]。"`` and ``"上海很大[2]。"``;
   ``"他说：“好！”[3]然后走了。"`` ends the first sentence after ``[3]``.
3. **Newlines.** Every line break is a boundary as well (list items, paragraphs), whatever
   precedes it.
4. **Not boundaries.** A period does not end a sentence when it belongs to

   * a listed abbreviation (:data:`ABBREVIATIONS`, matched case-sensitively as a whole word,
     also with a capitalized first letter: ``Mr.``, ``e.g.``, ``E.g.``, ``U.S.``, ``p.m.``);
   * a number abbreviation followed by a number (:data:`NUMBER_ABBREVIATIONS`: ``No. 5``,
     ``Fig. 3``); elsewhere (``The answer is no. Then``) it ends the sentence;
   * a single uppercase letter standing alone, i.e. an initial (``J. K. Rowling``,
     ``J.K. Rowling``, ``A.M.``); consequently ``"... vitamin C. It ..."`` is not split. A
     letter right after a symbol is a unit, not an initial: ``"... to 350°F. Then ..."`` ends
     the sentence;
   * an ellipsis of three or more periods (``"Wait... What?"`` is one sentence; ``…`` is not
     terminal punctuation either); a ``?`` or ``!`` after the ellipsis still ends the sentence.

   Decimals (``3.5``) and other periods not followed by whitespace (``example.com``,
   ``end.Start``) never end a sentence, because rule 1 requires whitespace after the boundary;
   the ASCII ``.!?`` never end one without whitespace, even before CJK text.
5. **Clean-up.** Each piece is stripped of surrounding whitespace; empty pieces are dropped.
   A null text gives a null list; ``""`` or whitespace gives an empty list.

Technique: a private-use "hold" character is inserted right after each period of rule 4, so
rule 1's pattern cannot see that period as the end of a sentence; a split sentinel is inserted
with ``str.replace_all`` at rules 1, 2 and 3, the hold characters are removed and the text is split
at the sentinels. Both private-use characters are removed from the input first.
"""

from __future__ import annotations

import re

import polars as pl

from pipeline.text.markers import CITATION_MARKER

#: Abbreviations whose final period never ends a sentence (case-sensitive, whole words; a
#: capitalized variant of each lowercase entry is added: ``e.g.`` -> ``E.g.``).
ABBREVIATIONS: tuple[str, ...] = (
    "Mr.", "Mrs.", "Ms.", "Dr.", "Prof.", "St.", "Sr.", "Jr.", "Mt.", "Lt.", "Col.", "Gen.",
    "vs.", "e.g.", "i.e.", "etc.", "cf.", "approx.", "ca.", "al.",
    "U.S.", "U.K.", "a.m.", "p.m.", "Inc.", "Ltd.", "Corp.",
)
#: Abbreviations that do not end a sentence when a number follows (``No. 5``, ``Fig. 3``).
NUMBER_ABBREVIATIONS: tuple[str, ...] = ("No.", "Nos.", "Fig.", "Figs.", "Vol.", "Eq.", "pp.")

# Private-use code points: the hold after a protected period, and the split sentinel.
_HOLD = "\U000f0a01"
_SPLIT = "\U000f0a02"

_OPENERS = "\"'“‘("
_CLOSERS = "\"'”’)"
#: Sentence terminals that end a sentence with no whitespace after them (UAX #29 STerm).
CJK_TERMINALS = "。！？｡"
#: The fullwidth full stop: terminal like ``。`` unless a digit follows (UAX #29 ATerm).
FULLWIDTH_PERIOD = "．"
#: Closing quotes and brackets that stay with a sentence ended by a CJK terminal.
CJK_CLOSERS = "」』）】〕》〉”’\"')"


def _alternation(abbreviations: tuple[str, ...]) -> str:
    stems = {a.removesuffix(".") for a in abbreviations}
    stems |= {s[0].upper() + s[1:] for s in stems}
    # Longest first, so that ``Mrs`` is tried before ``Mr`` (leftmost-first alternation).
    return "|".join(re.escape(s) for s in sorted(stems, key=lambda s: (-len(s), s)))


_ABBREVIATION = rf"\b({_alternation(ABBREVIATIONS)})\."
_NUMBER_ABBREVIATION = rf"\b({_alternation(NUMBER_ABBREVIATIONS)})\.(\s*\p{{Nd}})"
_INITIAL = r"\b(\p{Lu})\."
# An "initial" right after a symbol is a unit (350°F.): its period is released again.
_UNIT_AFTER_SYMBOL = rf"(\p{{S}}\p{{Lu}}\.){_HOLD}"
_ELLIPSIS = r"(\.{3,})"
_BOUNDARY = (
    rf"([.!?]+[{re.escape(_CLOSERS)}]*(?:\s*{CITATION_MARKER})*)"
    rf"\s+([\p{{Lu}}\p{{Nd}}{re.escape(_OPENERS)}])"
)
_CJK_TAIL = rf"[{re.escape(CJK_CLOSERS)}]*(?:\s*{CITATION_MARKER})*"
_CJK_RUN = f"[{CJK_TERMINALS}{FULLWIDTH_PERIOD}]*"
# A run that holds an STerm ends the sentence; a run of fullwidth full stops only does when no
# digit (nor another terminal: the next rule takes that run) follows; the character after it is
# captured and put back, and the end of the text counts as such a character.
_CJK_BOUNDARY = rf"({FULLWIDTH_PERIOD}*[{CJK_TERMINALS}]{_CJK_RUN}{_CJK_TAIL})"
_FULLWIDTH_PERIOD_BOUNDARY = (
    rf"({FULLWIDTH_PERIOD}+{_CJK_TAIL})([^0-9０-９{CJK_TERMINALS}{FULLWIDTH_PERIOD}{_SPLIT}]|$)"
)
_NEWLINE = r"\s*[\n\r\u2028\u2029]\s*"


def split_sentences(text: pl.Expr) -> pl.Expr:
    """Split ``text`` into sentences (``List[String]``) by the rules in the module docstring.

    >>> import polars as pl
    >>> text = pl.lit("Dr. Smith paid $3.5 million. [1] Was it J. K. Rowling?[2][3] Yes.\\nNo")
    >>> pl.select(split_sentences(text)).item().to_list()
    ['Dr. Smith paid $3.5 million. [1]', 'Was it J. K. Rowling?[2][3]', 'Yes.', 'No']
    >>> pl.select(split_sentences(pl.lit("北京是首都[1]。上海很大？！[2]好。"))).item().to_list()
    ['北京是首都[1]。', '上海很大？！[2]', '好。']
    """
    cleaned = text.str.replace_all(f"[{_HOLD}{_SPLIT}]", "")
    held = (
        cleaned.str.replace_all(_ELLIPSIS, f"${{1}}{_HOLD}")
        .str.replace_all(_NUMBER_ABBREVIATION, f"${{1}}.{_HOLD}${{2}}")
        .str.replace_all(_ABBREVIATION, f"${{1}}.{_HOLD}")
        .str.replace_all(_INITIAL, f"${{1}}.{_HOLD}")
        .str.replace_all(_UNIT_AFTER_SYMBOL, "${1}")
    )
    marked = held.str.replace_all(_BOUNDARY, f"${{1}}{_SPLIT}${{2}}")
    # Rule 2 on the rows with non-ASCII characters only (the others pass unscanned).
    wide = pl.when(text.str.len_bytes() != text.str.len_chars()).then(marked)
    marked = pl.coalesce(
        wide.str.replace_all(_FULLWIDTH_PERIOD_BOUNDARY, f"${{1}}{_SPLIT}${{2}}")
        .str.replace_all(_CJK_BOUNDARY, f"${{1}}{_SPLIT}"),
        marked,
    )
    marked = marked.str.replace_all(_NEWLINE, _SPLIT).str.replace_all(_HOLD, "", literal=True)
    pieces = marked.str.split(_SPLIT).list.eval(pl.element().str.strip_chars())
    return pieces.list.filter(pl.element() != "")
