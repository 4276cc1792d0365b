"""A labeled grounding benchmark built from the real RGB data (claims x passages, supported or not).

Reads three files of the RGB benchmark (Chen et al., 2023; JSON lines, see the README.md next to
them): ``en_fact.json`` (English, 100 rows), ``zh_fact.json`` (Chinese, 100 rows) and
``zh_refine.json`` (Chinese, 300 rows). Every row gives a query, its answer, ``positive``
(retrieved snippets about the answer) and ``negative`` (snippets on the same topic); the fact files
also give ``fakeanswer`` and ``positive_wrong`` (the positive snippets with the answer replaced by
the fake answer). Snippets are used exactly as they are in the files (real retrieval text, with
their "Feb 7, 2021 ... " date prefixes and trailing " ..."); passages only join them with " ".

Answers. ``answer`` is a string, a list of strings or a list of lists (alternatives per part;
a mix of strings and lists is read as parts too, a string part being its own single
alternative). The *alternatives* used to find the answer are: the string; every string of a list
of strings (read as alternatives: any one found satisfies the row); the first part's list of a
list of lists. *All alternatives* are the strings of every part. Text matches are plain substring
tests, case-insensitive (this only matters for Latin text).

Per RGB row:

* The answer-bearing snippets are the positive snippets that contain an alternative after their
  leading date prefix ("Nov 17, 2019 ... " is the search result's page date, not evidence); only
  when no positive snippet qualifies does a match inside a date prefix count. A row with no
  answer-bearing snippet is skipped (``main`` reports how many per file). ``a`` is the first
  alternative, in answer order, that occurs in the first answer-bearing snippet (index ``i``).
* ``stated`` passage: snippet ``i`` and the first two other positive snippets (in file order,
  ``i`` left out), joined in file order. It contains ``a`` by construction.
* ``same_topic`` passage: the first three ``negative`` snippets (file order) that contain none of
  the row's answer alternatives (any part), not even as loose tokens (:func:`restates`: RGB's
  negatives often restate the answer in another form, "Tampa Bay, Florida", "Liu Yifei",
  "November 18th"); the condition is left out for a row where none qualifies.
* ``counterfactual`` passage (fact files only): the ``positive_wrong`` snippets at the indices of
  the stated passage's snippets, joined in the same way. Kept only when it contains the fake
  answer and none of the row's answer alternatives (any part, so also not ``a``); otherwise the
  condition is left out for that row. When the answer and the fake answer are lists of strings of
  the same length (zh_fact row 13), the fake answer paired with ``a`` is the one at ``a``'s index;
  otherwise a list fake answer counts when any of its strings occurs (the first one found is
  recorded).

Claims, each paired with every passage condition of its row (same claim text, different passage):

* ``quote``: the sentence of snippet ``i`` that contains ``a``, as a model would quote it
  (without the page's own reference marks such as ``[42]`` or ``[a]``). The
  snippet is split into sentences -- English on ". ", "! ", "? " (the mark stays with its
  sentence; not after a single letter, a dotted initialism such as "U.S." or a common
  abbreviation such as "Jan." or "Mr."), on " ... " and on the " ; " and " · " list separators
  of search snippets; Chinese on 。！？；(kept with the sentence) and " ... ". A boundary inside
  the occurrence of ``a`` is ignored, so the sentence always holds the whole answer. Leading date
  prefixes ("Feb 7, 2021 ... ", "3 days ago ... "), leading and trailing "..." / "…" and
  whitespace are stripped. A sentence that is then little more than the answer (under 3 words,
  English, or 4 word characters, Chinese, besides it; "Release date. May 29, 2020 ; No.")
  takes in the sentences before it, then those after it, until it is not or the snippet runs
  out, keeping the snippet's text between them. A sentence longer than 40 words (English) or 60
  characters (Chinese) is cut to a window of at most that size around the answer: English on
  word boundaries, centred on the answer; Chinese first as the widest run of comma-separated
  clauses (，,、：:) around the answer that fits, else a centred character window that does not
  cut a run of Latin letters or digits. Trailing ",;:，、；：" are dropped and "." (English) or
  "。" (Chinese) is appended when the text does not end in terminal punctuation.
* ``answer``: a concise answer sentence, English ``f"{q}: {a}."`` with ``q`` the query without a
  trailing "?", Chinese ``f"{q}：{a}。"`` with ``q`` the query without a trailing "？"/"?" (no
  second "." is added when ``a`` itself ends in "." such as "U.S.").
* ``window`` (English only, and only when the English claims of the two kinds above number under
  500): the 12 words of the quote's sentence around the answer, answer included, same cuts and
  punctuation as ``quote``.

Labels: ``supported`` is True for ``stated`` and False for ``same_topic`` and ``counterfactual``.
Rows come out by file (en_fact, zh_fact, zh_refine), then RGB row, then kind, then condition
(stated, same_topic, counterfactual). Nothing is random; the output is the same on every run.

    python bench/grounding_claims.py OUT.parquet [--rgb-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]

SOURCES = (("en_fact", "en"), ("zh_fact", "zh"), ("zh_refine", "zh"))
CONDITIONS = ("stated", "same_topic", "counterfactual")
STATED_EXTRA = 2  # further positive snippets in the stated passage
SAME_TOPIC_MAX = 3  # negative snippets in the same_topic passage
MAX_WORDS_EN = 40
MAX_CHARS_ZH = 60
WINDOW_WORDS = 12
MIN_EXTRA_WORDS_EN = 3  # a quote holds at least this many words besides the answer, if it can
MIN_EXTRA_CHARS_ZH = 4
MIN_CLAIMS_PER_LANG = 500

SCHEMA = {
    "claim_id": pl.String, "lang": pl.String, "source": pl.String, "row_id": pl.Int64,
    "kind": pl.String, "condition": pl.String, "supported": pl.Boolean, "question": pl.String,
    "claim": pl.String, "passage": pl.String, "answer": pl.String, "fake_answer": pl.String,
}

_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
DATE_PREFIX = re.compile(
    rf"^\s*(?:{_MONTH}\s+\d{{1,2}},\s+\d{{4}}|\d+\s+(?:minutes?|hours?|days?|weeks?)\s+ago)"
    r"\s*(?:\.\.\.|…)\s*"
)
ELLIPSIS_EDGE = re.compile(r"^(?:\s|\.\.\.|…)+|(?:\s|\.\.\.|…)+$")
# English boundaries: " ... " (dropped), or spaces after . ! ? (the mark stays with its sentence).
EN_BOUNDARY = re.compile(r"\s+(?:\.\.\.|…|;|·)(?:\s+|$)|(?<=[.!?])\s+")
ZH_BOUNDARY = re.compile(r"\s+(?:\.\.\.|…)(?:\s+|$)|(?<=[。！？；])\s*")
ABBREVIATIONS = frozenset((
    "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "vs", "etc", "no", "nos", "inc", "co",
    "corp", "ltd", "gen", "gov", "sen", "rep", "rev", "col", "lt", "sgt", "capt", "ft", "mt",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "est",
    "approx", "dept", "univ", "fig", "vol", "pp",
))
TERMINAL = re.compile(r"[.!?。！？][\"'”’」』)）]*$")
ZH_CLAUSE = re.compile(r"(?<=[，,、：:])")


def find_ci(text: str, needle: str, start: int = 0) -> re.Match[str] | None:
    """The first case-insensitive occurrence of ``needle`` in ``text`` from ``start``."""
    return re.compile(re.escape(needle), re.IGNORECASE).search(text, start)


def contains_ci(text: str, needle: str) -> bool:
    return find_ci(text, needle) is not None


def answer_parts(answer: object) -> list[list[str]]:
    """The answer as parts, each a list of alternatives.

    A string is one part of one alternative; a list of strings is one part whose strings are
    alternatives; a list holding lists is a list of parts (a string element is a one-alternative
    part).
    """
    if isinstance(answer, str):
        return [[answer]]
    if not isinstance(answer, list) or not answer:
        raise ValueError(f"unexpected answer shape: {answer!r}")
    if all(isinstance(x, str) for x in answer):
        return [list(answer)]
    return [[str(y) for y in x] if isinstance(x, list) else [str(x)] for x in answer]


def _tokens(text: str) -> set[str]:
    """Lowercase word tokens plus the digit runs inside them ("18th" gives "18th" and "18")."""
    lowered = text.lower()
    return set(re.findall(r"[^\W_]+", lowered)) | set(re.findall(r"\d+", lowered))


def restates(snippet: str, alternative: str) -> bool:
    """Whether ``snippet`` holds every token of ``alternative`` (Latin words and digit runs;
    Han characters one by one), in any order or form: "Tampa Bay, Florida" restates "Tampa,
    Florida", "Liu Yifei" restates "Yifei Liu", "November 18th ... 2020" restates "November
    18, 2020". Such a negative snippet may state the fact, so it is no same-topic passage."""
    tokens = _tokens(alternative)
    han = set(re.findall(r"[\u4e00-\u9fff]", alternative))
    words = {t for t in tokens if not re.search(r"[\u4e00-\u9fff]", t)}
    if not words and not han:
        return False
    return words <= _tokens(snippet) and all(ch in snippet for ch in han)


def date_prefix_end(snippet: str) -> int:
    """Where the text after the snippet's leading date prefixes begins (0 when there is none)."""
    end = 0
    while (m := DATE_PREFIX.match(snippet, end)) is not None and m.end() > end:
        end = m.end()
    return end


def locate_answer(snippet: str, alternatives: list[str], in_prefix: bool
                  ) -> tuple[str, int, int] | None:
    """``(a, start, end)``: the first alternative found after the snippet's date prefix, or
    (``in_prefix``) anywhere in it."""
    from_pos = 0 if in_prefix else date_prefix_end(snippet)
    for alt in alternatives:
        if alt and (m := find_ci(snippet, alt, from_pos)) is not None:
            return alt, m.start(), m.end()
    return None


def _is_en_boundary(text: str, m: re.Match[str]) -> bool:
    if m.group(0).strip():
        return True  # " ... ", " ; ", " · "
    before = text[: m.start()]
    if not before.endswith("."):
        return True  # "!" or "?"
    if before.endswith(".."):
        return True  # "word... Next"
    word = before.rsplit(None, 1)[-1] if before.split() else ""
    core = word.rstrip(".").lstrip("(\"'“‘")
    if len(core) == 1 and core.isalpha():
        return False  # an initial: "J. Smith"
    if re.fullmatch(r"(?:[A-Za-z]\.)+[A-Za-z]", core):
        return False  # "U.S.", "a.m."
    return core.lower() not in ABBREVIATIONS


def sentences(snippet: str, start: int, end: int, lang: str) -> tuple[list[tuple[int, int]], int]:
    """The sentence spans of ``snippet`` (no boundary inside ``[start, end)``) and the index of
    the one holding ``[start, end)``."""
    pattern = EN_BOUNDARY if lang == "en" else ZH_BOUNDARY
    cuts = [(m.start(), m.end()) for m in pattern.finditer(snippet)
            if (m.end() <= start or m.start() >= end)
            and (lang != "en" or _is_en_boundary(snippet, m))]
    starts = [0, *(e for _, e in cuts)]
    ends = [*(b for b, _ in cuts), len(snippet)]
    spans = list(zip(starts, ends, strict=True))
    return spans, next(k for k, (lo, hi) in enumerate(spans) if lo <= start and hi >= end)


def too_short(text: str, a_start: int, a_end: int, lang: str) -> bool:
    """Is ``text`` little more than the answer (under 3 English words or 4 Chinese characters
    besides it)?"""
    rest = text[:a_start] + " " + text[a_end:]
    if lang == "en":
        return len(re.findall(r"\w+", rest)) < MIN_EXTRA_WORDS_EN
    return len(re.findall(r"\w", rest)) < MIN_EXTRA_CHARS_ZH


def clean_sentence(text: str, a_start: int, a_end: int) -> tuple[str, int, int]:
    """Strip date prefixes, leading/trailing ellipses and whitespace, keeping the answer span."""
    while True:
        cut = date_prefix_end(text)
        m = ELLIPSIS_EDGE.match(text)
        cut = max(cut, m.end() if m else 0)
        if cut == 0 or cut > a_start:
            break
        text, a_start, a_end = text[cut:], a_start - cut, a_end - cut
    m = ELLIPSIS_EDGE.search(text, a_end)
    if m is not None and m.end() == len(text):
        text = text[: m.start()]
    return text, a_start, a_end


def en_word_window(text: str, a_start: int, a_end: int, size: int) -> str:
    """At most ``size`` whole words of ``text`` centred on the answer span."""
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    if len(words) <= size:
        return text
    first = next(k for k, (_, e) in enumerate(words) if e > a_start)
    last = max(k for k, (s, _) in enumerate(words) if s < a_end)
    span = last - first + 1
    if span >= size:
        return text[words[first][0]: words[last][1]]
    lo = max(0, first - (size - span) // 2)
    hi = min(len(words), lo + size)
    lo = max(0, hi - size)
    return text[words[lo][0]: words[hi - 1][1]]


def zh_char_window(text: str, a_start: int, a_end: int, size: int) -> str:
    """At most ``size`` characters around the answer: whole clauses if they fit, else centred."""
    if len(text) <= size:
        return text
    cuts = sorted({0, len(text), *(m.start() for m in ZH_CLAUSE.finditer(text))})
    lo = max(c for c in cuts if c <= a_start)
    hi = min(c for c in cuts if c >= a_end)
    if hi - lo <= size:
        while True:  # widen by whole clauses, right first, while it fits
            right = [c for c in cuts if c > hi]
            left = [c for c in cuts if c < lo]
            if right and right[0] - lo <= size:
                hi = right[0]
            elif left and hi - left[-1] <= size:
                lo = left[-1]
            else:
                return text[lo:hi].strip()
    span = a_end - a_start
    if span >= size:
        return text[a_start:a_end]
    lo = max(0, a_start - (size - span) // 2)
    hi = min(len(text), lo + size)
    lo = max(0, hi - size)
    def inside_word(k: int) -> bool:  # is position k inside a run of Latin letters or digits?
        pair = text[k - 1: k + 1]
        return len(pair) == 2 and pair.isascii() and pair.isalnum()

    while 0 < lo < a_start and inside_word(lo):
        lo += 1
    while a_end < hi < len(text) and inside_word(hi):
        hi -= 1
    return text[lo:hi].strip()


def finish(text: str, lang: str) -> str:
    """Drop trailing commas and the like, then end with terminal punctuation."""
    text = text.strip().rstrip(",;:，、；： ").strip()
    if not TERMINAL.search(text):
        text += "." if lang == "en" else "。"
    return text


def quote_claim(snippet: str, start: int, end: int, lang: str, max_words: int | None = None) -> str:
    """The sentence of ``snippet`` around ``[start, end)``, cleaned and cut (see the docstring)."""
    spans, k = sentences(snippet, start, end, lang)
    first = last = k
    while True:
        s_lo, s_hi = spans[first][0], spans[last][1]
        text, a_start, a_end = clean_sentence(snippet[s_lo:s_hi], start - s_lo, end - s_lo)
        if not too_short(text, a_start, a_end, lang):
            break
        if first > 0:
            first -= 1
        elif last < len(spans) - 1:
            last += 1
        else:
            break
    if lang == "en":
        text = en_word_window(text, a_start, a_end, max_words or MAX_WORDS_EN)
    else:
        text = zh_char_window(text, a_start, a_end, MAX_CHARS_ZH)
    # A model quoting a web page leaves out its reference marks ("[42][43]", "[a]").
    marks = r"\s*\[(?:\d+|[a-z])\]\s*" if lang == "en" else r"\[(?:\d+|[a-z])\]"
    text = re.sub(marks, " " if lang == "en" else "", text)
    return finish(text.strip(), lang)


def answer_claim(query: str, a: str, lang: str) -> str:
    if lang == "en":
        q = query.strip().rstrip("?").rstrip()
        return f"{q}: {a}" + ("" if a.endswith(".") else ".")
    q = query.strip().rstrip("？?").rstrip()
    return f"{q}：{a}" + ("" if a.endswith("。") else "。")


def _fake_for(row: dict, a: str, alternatives: list[str], text: str) -> str | None:
    """The fake answer paired with ``a`` if ``text`` holds it (see the docstring), else None."""
    fake = row.get("fakeanswer")
    if fake is None:
        return None
    if isinstance(fake, str):
        return fake if contains_ci(text, fake) else None
    fakes = [str(f) for f in (x for part in answer_parts(fake) for x in part)]
    if isinstance(row["answer"], list) and len(fakes) == len(alternatives) and a in alternatives:
        paired = fakes[alternatives.index(a)]
        return paired if contains_ci(text, paired) else None
    return next((f for f in fakes if contains_ci(text, f)), None)


def _fake_label(row: dict) -> str | None:
    fake = row.get("fakeanswer")
    if fake is None or isinstance(fake, str):
        return fake
    return "、".join(str(x) for part in answer_parts(fake) for x in part)


def read_rows(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def build_row(row: dict, source: str, lang: str, with_window: bool) -> tuple[list[dict], str]:
    """The claim rows of one RGB row and a status: "ok" or why it was skipped."""
    parts = answer_parts(row["answer"])
    alternatives = parts[0]
    all_alts = [x for part in parts for x in part if x]
    positive: list[str] = row["positive"]
    found = None
    for in_prefix in (False, True):
        for i, snippet in enumerate(positive):
            if (hit := locate_answer(snippet, alternatives, in_prefix)) is not None:
                found = i, hit
                break
        if found is not None:
            break
    if found is None:
        return [], "no answer-bearing positive snippet"
    i, (a, a_start, a_end) = found
    indices = sorted([i, *[j for j in range(len(positive)) if j != i][:STATED_EXTRA]])
    passages = {"stated": " ".join(positive[j] for j in indices)}
    negatives = [s for s in row.get("negative", [])
                 if not any(contains_ci(s, alt) or restates(s, alt) for alt in all_alts)
                 ][:SAME_TOPIC_MAX]
    if negatives:
        passages["same_topic"] = " ".join(negatives)
    fake_label = _fake_label(row)
    if "positive_wrong" in row:
        wrong: list[str] = row["positive_wrong"]
        text = " ".join(wrong[j] for j in indices if j < len(wrong))
        fake = _fake_for(row, a, alternatives, text)
        if fake is not None and not any(contains_ci(text, alt) for alt in all_alts):
            passages["counterfactual"] = text
            fake_label = fake
    claims = {"quote": quote_claim(positive[i], a_start, a_end, lang),
              "answer": answer_claim(row["query"], a, lang)}
    if with_window and lang == "en":
        claims["window"] = quote_claim(positive[i], a_start, a_end, lang, WINDOW_WORDS)
    out = []
    for kind, claim in claims.items():
        for condition in CONDITIONS:
            if condition not in passages:
                continue
            out.append({
                "claim_id": f"{source}-{row['id']}-{kind}-{condition}", "lang": lang,
                "source": source, "row_id": int(row["id"]), "kind": kind, "condition": condition,
                "supported": condition == "stated", "question": row["query"], "claim": claim,
                "passage": passages[condition], "answer": a, "fake_answer": fake_label,
            })
    return out, "ok"


def _build(rgb_dir: Path, with_window: bool) -> tuple[list[dict], Counter[tuple[str, str]]]:
    rows: list[dict] = []
    status: Counter[tuple[str, str]] = Counter()
    for source, lang in SOURCES:
        for row in read_rows(rgb_dir / f"{source}.json"):
            claims, why = build_row(row, source, lang, with_window)
            rows.extend(claims)
            status[source, why] += 1
    return rows, status


def build_claims(rgb_dir: Path) -> tuple[pl.DataFrame, Counter[tuple[str, str]]]:
    """The labeled claims and, per (source, status), how many RGB rows were used or skipped."""
    rows, status = _build(rgb_dir, with_window=False)
    if sum(r["lang"] == "en" for r in rows) < MIN_CLAIMS_PER_LANG:
        rows, status = _build(rgb_dir, with_window=True)
    return pl.DataFrame(rows, schema=SCHEMA), status


#: Hand-labeled claims (bench/data/README.md): paraphrases, frames and word order in five
#: languages; the English and Chinese ones join the RGB claims.
HANDWRITTEN = Path(__file__).resolve().parent / "data" / "claims_handwritten.jsonl"
_CONDITIONS = {"counterfactual": "counterfactual", "baseless": "same_topic",
               "same_topic": "same_topic"}


def handwritten_claims(path: Path = HANDWRITTEN, langs: tuple[str, ...] = ("en", "zh")
                       ) -> pl.DataFrame:
    """The hand-labeled claims of ``langs`` in :data:`SCHEMA`: a supported claim is
    ``stated``, a counterfactual one ``counterfactual``, a baseless or same-topic one
    ``same_topic``; ``kind`` is the file's kind (paraphrase, frame, ...), ``source``
    ``handwritten``."""
    raw = pl.read_ndjson(path).filter(pl.col("lang").is_in(list(langs)))
    return raw.select(
        pl.col("id").alias("claim_id"), "lang", pl.lit("handwritten").alias("source"),
        pl.int_range(pl.len(), dtype=pl.Int64).alias("row_id"), "kind",
        pl.when(pl.col("label") == "supported").then(pl.lit("stated"))
        .otherwise(pl.col("kind").replace_strict(_CONDITIONS, default="same_topic"))
        .alias("condition"),
        (pl.col("label") == "supported").alias("supported"), "question", "claim", "passage",
        pl.lit(None, pl.String).alias("answer"), pl.lit(None, pl.String).alias("fake_answer"),
    ).cast(SCHEMA)  # type: ignore[arg-type]


def labeled_claims(rgb_dir: Path, *, paraphrases: bool = True) -> pl.DataFrame:
    """The labeled grounding claims built from the RGB files in ``rgb_dir`` (see the
    docstring), followed, with ``paraphrases``, by the hand-labeled English and Chinese
    claims (:func:`handwritten_claims`)."""
    claims = build_claims(Path(rgb_dir))[0]
    if not paraphrases:
        return claims
    return pl.concat([claims, handwritten_claims()])


def slice_claims(frame: pl.DataFrame, per_group: int) -> pl.DataFrame:
    """The first ``per_group`` claims (in frame order) of each (lang, condition)."""
    return frame.filter(pl.int_range(pl.len()).over("lang", "condition") < per_group)


def default_rgb_dir() -> Path:
    if env := os.environ.get("RGB_DIR"):
        return Path(env)
    for base in (ROOT, ROOT.parent):
        if (base / "shared" / "data" / "rgb").is_dir():
            return base / "shared" / "data" / "rgb"
    return ROOT.parent / "shared" / "data" / "rgb"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="output Parquet file")
    parser.add_argument("--rgb-dir", type=Path, default=None,
                        help="folder of the RGB JSON-lines files (default: $RGB_DIR or "
                             "shared/data/rgb next to or inside the repository)")
    args = parser.parse_args(argv)
    rgb_dir = args.rgb_dir or default_rgb_dir()
    frame, status = build_claims(rgb_dir)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(args.out)
    with pl.Config(tbl_rows=100):
        print(frame.group_by("lang", "condition", "kind", maintain_order=True).len()
              .sort("lang", "condition", "kind"))
    for (source, why), n in sorted(status.items()):
        print(f"{source}: {n} rows {'used' if why == 'ok' else 'skipped (' + why + ')'}")
    for lang, n in frame.group_by("lang").len().sort("lang").iter_rows():
        flag = "" if n >= MIN_CLAIMS_PER_LANG else f"  (under {MIN_CLAIMS_PER_LANG})"
        print(f"{lang}: {n} claims{flag}")
    if "window" in frame["kind"]:
        print(f"en: under {MIN_CLAIMS_PER_LANG} claims of two kinds; added the 'window' kind")
    print(f"total: {frame.height} claims, {frame['supported'].sum()} supported -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
