"""Refusals: a text that declines to answer, read from what its clauses say, in ten languages.

A **refusal** (an abstention) is a text that says the sources or the writer lack the answer and
asserts nothing else. The rule reads clauses, not phrases:

1. **Clauses.** Citation markers (``[1]``) are removed. A clause ends at a line break, at
   ``; :`` (a colon before a space) and the CJK terminals ``。！？；：``, at ``.!?`` before a
   space and an uppercase letter, a digit or an opening quote (so ``"... question "Why?" is:"``
   stays whole), and before a contrasting conjunction after a comma (``, but``, ``, aber``,
   ``, mais``, ``，但``, ``が、``, ``지만`` ...: :data:`CONTRAST`). The text is then lowercased,
   curly quotes straightened and whitespace collapsed (:func:`fold`).
2. **Each clause is one of four kinds** (:func:`clause_kind`, first that holds):

   * ``STRONG`` -- it declines the question itself: "I cannot answer", "unable to answer based
     on the given passages", "I don't know." as the whole clause, "no answer", "the question
     cannot be answered", 无法回答, 回答できません, 답변드릴 수 없습니다, "ich kann die Frage
     nicht beantworten", "не могу ответить";
   * ``WEAK`` -- it says that some information is missing: "the documents do not mention the
     warranty period", "no information about ...", "I couldn't find that information", "not
     enough information", "I'm not sure", "I don't know why ...", 没有提到, 記載されていません,
     언급되어 있지 않습니다, "der Kontext erwähnt ... nicht", "не указано". A lack statement
     needs a source as its subject ("the context does not provide", never "the company does not
     provide refunds") unless its verb is about texts ("is not mentioned");
   * ``FILLER`` -- it says nothing about the world: an apology, "unfortunately", "based on the
     context," alone, a lead-in ending in a colon ("Here is my answer:"), advice to look
     elsewhere ("please contact HR", "you may want to check the manual"), "I hope this helps";
   * ``OTHER`` -- anything else: it asserts something.

3. **A text refuses** when it has a ``STRONG`` or ``WEAK`` clause and either no ``OTHER``
   clause at all, or its first clause that is not filler is ``STRONG`` (a refusal followed by
   its reasons: "Unable to answer based on given passages. Passage 1 discusses concrete, ...").
   So "The context does not mention any delays; the bridge opened in 1932." answers (a weak
   clause, then an assertion), as does "I don't know why people like it, but the capital is
   Paris."; "There is no charge for the first bag." and "Unknown Pleasures is the debut album"
   have no refusal clause at all.

The languages are English, Chinese (Simplified and Traditional), German, French, Spanish,
Italian, Portuguese, Japanese, Korean and Russian (:data:`RULES`, one table per language in
:mod:`pipeline.text.refusal_rules`); every language's patterns are joined into one alternation
per kind, so a text of any language costs the same four regex passes per clause. The labeled set
``tests/golden/abstentions_labeled.jsonl`` measures the rule (precision and recall per language
in docs/metrics.md).

Limits: a partial answer ("A P60 shows your pay. A tax return copy is not mentioned, so I can't
answer that part.") answers; a refusal whose first substantive clause is a lack statement
followed by what the sources do say ("The context does not give the salary band. It only says
the role is in Berlin.") answers too; a refusal worded in none of the patterns (a deflection
such as "Passage 2 describes the steps.") is not seen.

>>> import polars as pl
>>> texts = ["The provided documents do not mention the warranty period, so I can't say.",
...          "The context does not mention any delays; the bridge opened in 1932.",
...          "Sorry, I couldn't find that information in the provided documents.",
...          "I don't know why people like it, but the capital is Paris.", "No Doubt"]
>>> pl.select(refuses(pl.lit(pl.Series(texts)))).to_series().to_list()
[True, False, True, False, False]
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from importlib import resources

import polars as pl

from pipeline.text.markers import CITATION_MARKER
from pipeline.text.refusal_rules import RULES as RULES
from pipeline.text.refusal_rules import LanguageRules as LanguageRules

#: Clause kinds (:func:`clause_kind`), as Int8 codes.
FILLER, OTHER, WEAK, STRONG = 0, 1, 2, 3

_SEP = "\x1f"
_QUOTES_FROM = ["\u2019", "\u2018", "\u02bc", "\u201c", "\u201d", "\u00ab", "\u00bb"]
_QUOTES_TO = ["'", "'", "'", '"', '"', '"', '"']

#: Conjunctions after a comma that start a new clause ("..., but the capital is Paris").
CONTRAST: tuple[str, ...] = (
    "but", "however", "although", "though", "yet", "whereas", "while", "which",
    "aber", "jedoch", "doch", "allerdings", "mais", "cependant", "toutefois", "pourtant",
    "pero", "sin embargo", "aunque", "ma", "tuttavia", "però", "mas", "porém", "contudo",
    "no entanto", "но", "однако", "а", "зато",
)
_CJK_CONTRAST = ("但是", "但", "不过", "不過", "然而", "可是", "只是")
#: Conjunctions that open a fronted concessive clause ("Although X, Y"): it ends at its comma.
CONCESSIVE: tuple[str, ...] = (
    "although", "though", "even though", "while", "whilst", "obwohl", "bien que", "aunque",
    "sebbene", "anche se", "embora", "хотя",
)


def _dfa(pattern: str) -> str:
    r"""``pattern`` rewritten for the regex crate's lazy DFA, which gives up on Unicode word
    boundaries in non-ASCII text and on large Unicode classes (a 100-fold slowdown measured on
    the combined patterns): a ``\b`` that opens or closes an alternative becomes a start, end,
    space or punctuation character; one inside an alternative is dropped; ``\w`` becomes
    ``[^\s]`` and a bounded lazy gap ``{0,n}?`` an unbounded one (clauses are short)."""
    pattern = re.sub(r"(^|\(\?:|\|)\\b", r"\1(?:^|[\\s\\p{P}])", pattern)
    pattern = re.sub(r"\\b(\)|\||$)", r"(?:$|[\\s\\p{P}])\1", pattern)
    pattern = re.sub(r"\{0,\d+\}\?", "*?", pattern.replace(r"\b", ""))
    return pattern.replace(r"\w", r"[^\s]")


def _any(patterns: list[str]) -> str:
    return "|".join(f"(?:{_dfa(p)})" for p in patterns)


STRONG_PATTERN = _any([p for rules in RULES.values() for p in rules.strong])
WEAK_PATTERN = _any([p for rules in RULES.values() for p in rules.weak])
_PREFIX = _any([p for rules in RULES.values() for p in rules.prefixes])
_FILLER_SENTENCE = _any([p for rules in RULES.values() for p in rules.filler])
#: A filler clause, whole: filler prefixes, then nothing or a filler sentence, or a lead-in
#: ending in a colon.
FILLER_PATTERN = (rf"^(?:(?:{_PREFIX})[\s\p{{P}}]*)*(?:(?:{_FILLER_SENTENCE}))?[\s\p{{P}}]*$"
                  r"|[:：]$")

# --- Pre-filter: the texts that may refuse ----------------------------------------------------
# Every clause of a text is a substring of the text without citation markers, folded (the
# clause ends only insert separators at whitespace and punctuation; the whitespace runs inside
# a clause are whole runs of the text and fold alike). A clause that matches STRONG_PATTERN or
# WEAK_PATTERN holds one of the strings that every match of that pattern holds (its factors,
# read from the pattern below), so a text whose folded form holds none of them has no refusal
# clause and does not refuse: the clause rule runs on the others alone.

_CAP = 64
_Set = frozenset[str]

class _Info:
    """What a regex piece is known to match: ``exact``, every string it matches (a small
    finite set), or None; ``factors``, strings one of which every match holds, or None."""

    def __init__(self, exact: _Set | None, factors: _Set | None) -> None:
        self.exact = exact
        self.factors = factors if factors is not None else (
            exact if exact is not None and "" not in exact else None)


def _product(sets: list[_Set]) -> _Set | None:
    size = 1
    for s in sets:
        size *= len(s)
    if size > _CAP:
        return None
    return frozenset("".join(p) for p in itertools.product(*sets))


def _better(a: _Set | None, b: _Set | None) -> _Set | None:
    def score(s: _Set) -> tuple[int, int]:
        return (min(len(w) for w in s), -len(s))
    if a is None or b is None:
        return b if a is None else a
    return a if score(a) >= score(b) else b


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p, self.i = pattern, 0

    def parse(self) -> _Info:
        info = self._alternation()
        if self.i != len(self.p):
            raise ValueError(f"unparsed at {self.i}: {self.p[self.i:self.i + 20]!r}")
        return info

    def _alternation(self) -> _Info:
        branches = [self._concat()]
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            branches.append(self._concat())
        if len(branches) == 1:
            return branches[0]
        exact: _Set | None = None
        if all(b.exact is not None for b in branches):
            exact = frozenset().union(*(b.exact for b in branches if b.exact is not None))
            exact = exact if len(exact) <= _CAP else None
        factors = None
        if all(b.factors is not None for b in branches):
            factors = frozenset().union(*(b.factors for b in branches if b.factors is not None))
        return _Info(exact, factors)

    def _concat(self) -> _Info:
        items: list[_Info] = []
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            items.append(self._quantified())
        best: _Set | None = None
        run: list[_Set] = []

        def close(run: list[_Set]) -> _Set | None:
            whole = _product(run) if run else None
            return whole if whole is not None and "" not in whole else None

        for item in items:
            best = _better(best, item.factors)
            if item.exact is None:
                best = _better(best, close(run))
                run = []
                continue
            if _product([*run, item.exact]) is None:
                best = _better(best, close(run))
                run = []
            run.append(item.exact)
        best = _better(best, close(run))
        exact = _product([i.exact for i in items if i.exact is not None]) if all(
            i.exact is not None for i in items) else None
        return _Info(exact, best)

    def _quantified(self) -> _Info:
        atom = self._atom()
        p = self.p
        if self.i < len(p) and p[self.i] in "?*+{":
            c = p[self.i]
            if c == "{":
                end = p.index("}", self.i)
                low = int(p[self.i + 1:end].split(",")[0])
                self.i = end + 1
            else:
                low = 0 if c in "?*" else 1
                self.i += 1
            if self.i < len(p) and p[self.i] == "?":
                self.i += 1
            if c == "?" and atom.exact is not None:
                return _Info(atom.exact | {""}, None)
            return _Info(None, atom.factors if low >= 1 else None)
        return atom

    def _atom(self) -> _Info:
        p = self.p
        c = p[self.i]
        if c == "(":
            self.i += 3 if p.startswith("(?:", self.i) else 1
            inner = self._alternation()
            if p[self.i] != ")":
                raise ValueError("unbalanced")
            self.i += 1
            return inner
        if c == "[":
            end = self.i + 2 + (p[self.i + 1] == "^")
            while p[end] != "]":
                end += 2 if p[end] == "\\" else 1
            body = p[self.i + 1:end]
            self.i = end + 1
            plain = not body.startswith("^") and not any(ch in body for ch in "\\-[")
            return _Info(frozenset(body) if plain else None, None)
        if c in "^$":
            self.i += 1
            return _Info(frozenset({""}), None)
        if c == ".":
            self.i += 1
            return _Info(None, None)
        if c == "\\":
            e = p[self.i + 1]
            if e == "x":
                self.i += 4
                return _Info(frozenset({chr(int(p[self.i - 2:self.i], 16))}), None)
            if e in "pP":
                self.i = p.index("}", self.i) + 1
                return _Info(None, None)
            self.i += 2
            if e.isalnum():
                return _Info(None, None)
            return _Info(frozenset({e}), None)
        self.i += 1
        return _Info(frozenset({c}), None)


def derive_factors(pattern: str) -> tuple[str, ...]:
    """Strings one of which every match of ``pattern`` holds, sorted (the parser above)."""
    factors = tuple(sorted(_Parser(pattern).parse().factors or ()))
    if not factors:
        raise ValueError("a refusal pattern matches without a required string")
    return factors


#: The bundled factors of the refusal patterns (``pipeline/data/``), with the SHA-256 of the
#: pattern they were derived from: deriving them takes 0.12 s, paid at every start otherwise.
FACTORS_FILE = "refusal_factors.json"


def _pattern_digest(pattern: str) -> str:
    return hashlib.sha256(pattern.encode()).hexdigest()


def bundled_factors(pattern: str) -> tuple[str, ...] | None:
    """The bundled factors when they were derived from ``pattern`` itself, else None."""
    try:
        saved = json.loads(resources.files("pipeline.data").joinpath(FACTORS_FILE).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(saved, dict) or saved.get("pattern_sha256") != _pattern_digest(pattern):
        return None
    return tuple(saved["factors"])


def factors_file_text(pattern: str) -> str:
    """The text of :data:`FACTORS_FILE` for ``pattern`` (a test checks the bundled file)."""
    saved = {"pattern_sha256": _pattern_digest(pattern), "factors": derive_factors(pattern)}
    return json.dumps(saved, ensure_ascii=False, indent=0) + "\n"


_REFUSAL_PATTERN = f"{STRONG_PATTERN}|{WEAK_PATTERN}"
#: Strings one of which every match of STRONG_PATTERN or WEAK_PATTERN holds: the bundled ones
#: while the rules are those they were derived from, derived again after a rule changes.
REFUSAL_FACTORS: tuple[str, ...] = (
    bundled_factors(_REFUSAL_PATTERN) or derive_factors(_REFUSAL_PATTERN)
)

#: ``.!?`` (and closing quotes) before a space and what starts a sentence.
_SENTENCE_END = r"""([.!?…]+["'”’)\]]*)\s+(\p{Lu}|\p{Nd}|["“‘(])"""
#: Ends of clauses in any script: line breaks, semicolons, colons before a space, CJK terminals.
_HARD_END = r"\n|[;；。！？：]|:\s"
_CONTRAST_PATTERN = _dfa(
    rf"([,，、]\s*)((?:{'|'.join(CONTRAST)})\b|{'|'.join(_CJK_CONTRAST)})"
)
_CONCESSIVE_PATTERN = _dfa(
    rf"(^|{_SEP})((?:(?:{'|'.join(CONCESSIVE)})\b|虽然|雖然|尽管|儘管)[^,，{_SEP}]*[,，])"
)
#: Japanese "…が、" / "…けど、" and Korean "…지만" end a clause where they stand.
_CONJUNCTIVE_END = r"(が|けれども|けれど|けど|지만)([、,]|\s)"


def fold(text: pl.Expr) -> pl.Expr:
    """Lowercase, straighten quotes and guillemets, collapse whitespace runs to one space.

    >>> pl.select(fold(pl.lit("I Don\u2019t   KNOW"))).item()
    "i don't know"
    """
    return (text.str.to_lowercase().str.replace_many(_QUOTES_FROM, _QUOTES_TO)
            .str.replace_all(r"\s\s+|[^\S ]", " "))


def _pieces(text: pl.Expr) -> pl.Expr:
    """The folded text split at clause ends, stripped; empty pieces kept (they are filler)."""
    marked = (
        text.str.replace_all(CITATION_MARKER, "")
        .str.replace_all(_SENTENCE_END, f"${{1}}{_SEP}${{2}}")
        .str.replace_all(_HARD_END, f"${{0}}{_SEP}")
        .str.replace_all(_CONJUNCTIVE_END, f"${{1}}${{2}}{_SEP}")
    )
    folded = (fold(marked).str.replace_all(_CONTRAST_PATTERN, f"${{1}}{_SEP}${{2}}")
              .str.replace_all(_CONCESSIVE_PATTERN, f"${{1}}${{2}}{_SEP}"))
    return folded.str.replace_all(rf"\s*{_SEP}\s*", _SEP).str.strip_chars().str.split(_SEP)


def clauses(text: pl.Expr) -> pl.Expr:
    """The text's clauses, folded, without citation markers and empty pieces
    (``List[String]``; rule 1 of the module docstring).

    >>> text = pl.lit("Sorry, but I can't say [1]. See the manual;ok")
    >>> pl.select(clauses(text)).item().to_list()
    ['sorry,', "but i can't say .", 'see the manual;', 'ok']
    """
    return _pieces(text).list.eval(pl.element().filter(pl.element() != ""))


def clause_kind(clause: pl.Expr) -> pl.Expr:
    """:data:`STRONG`, :data:`WEAK`, :data:`FILLER` or :data:`OTHER` for a folded clause
    (Int8; rule 2 of the module docstring).

    >>> kinds = pl.Series(["i cannot answer that.", "the text does not mention it.",
    ...                    "sorry!", "paris is the capital."])
    >>> pl.select(clause_kind(pl.lit(kinds))).to_series().to_list()
    [3, 2, 0, 1]
    """
    return (
        pl.when(clause.str.contains(STRONG_PATTERN)).then(pl.lit(STRONG, pl.Int8))
        .when(clause.str.contains(WEAK_PATTERN)).then(pl.lit(WEAK, pl.Int8))
        .when(clause.str.contains(FILLER_PATTERN)).then(pl.lit(FILLER, pl.Int8))
        .otherwise(pl.lit(OTHER, pl.Int8))
    )


def _verdict(kind: pl.Expr) -> pl.Expr:
    """Rule 3 over one text's clause kinds (an aggregation inside ``list.eval``)."""
    substantive = kind.filter(kind != FILLER)
    return (substantive.max() >= WEAK) & (
        (kind != OTHER).all() | (substantive.first() == STRONG)
    )


def refuses(text: pl.Expr) -> pl.Expr:
    """Whether the text is a refusal (Boolean; null for a null text; rule 3 of the module
    docstring): it has a refusal clause and asserts nothing else, or its first clause that is
    not filler declines the question itself. The clause rule reads only the texts that may
    refuse (:func:`may_refuse`); the others are False."""
    return text.map_batches(_refuses_batch, return_dtype=pl.Boolean, is_elementwise=True)


def may_refuse(text: pl.Expr) -> pl.Expr:
    """Whether the text holds one of :data:`REFUSAL_FACTORS` once folded: every text that
    refuses does (the pre-filter above); null for a null text."""
    return fold(text.str.replace_all(CITATION_MARKER, "")).str.contains_any(
        list(REFUSAL_FACTORS))


def _refuses_batch(text: pl.Series) -> pl.Series:
    """:func:`refuses` of a batch: the clause rule on the rows :func:`may_refuse`."""
    frame = pl.DataFrame({"text": text})
    candidate = frame.select(may_refuse(pl.col("text")).fill_null(False)).to_series()
    verdict = frame.select(pl.when(pl.col("text").is_not_null()).then(False)).to_series()
    if candidate.any():
        found = frame.filter(candidate).select(refuses_all(pl.col("text"))).to_series()
        verdict = verdict.scatter(candidate.arg_true(), found)
    return verdict.rename(text.name)


def refuses_all(text: pl.Expr) -> pl.Expr:
    """:func:`refuses` with the clause rule read on every text (no pre-filter)."""
    kinds = _pieces(text).list.eval(clause_kind(pl.element()))
    return kinds.list.eval(_verdict(pl.element())).list.first().fill_null(
        pl.when(text.is_not_null()).then(pl.lit(False))
    )
