"""Answer matching of the RGB benchmark (Chen et al. 2023, "Benchmarking Large Language Models in
Retrieval-Augmented Generation"), in two modes.

``official`` reproduces the matching of ``evalue.py`` in chen700564/RGB (written from its
description, not copied): on Chinese sets every ASCII space (U+0020, the script's
``replace(" ", "")``) is removed from the response; a response containing ``信息不足`` or
``insufficient information`` (case-sensitive, after that removal) is a rejection and its answer is
not checked; otherwise the response is lowercased (``str.lower``) and a group matches when any
lowercased alternative is a plain substring of it, with no word boundaries ("art" is found in
"start"). A row is correct when it has at least one group and every group matches; a rejection is
correct only at noise rate 1.0.

``flexible`` (the default mode) normalizes both sides with :func:`flexible_normalize` and matches an
alternative by containment either way or by 80% token recall; ``strict=True`` asks for equality.

Answers are ``answer_groups: List[List[String]]``: every group is required, any alternative of a
group suffices. :func:`answer_groups_from_json` builds them from RGB's ``answer`` field at ingest.
Null response or null ``answer_groups`` gives null; a row with no groups, or a group with no
(non-null) alternatives, is 0.
"""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from pipeline.metrics.arithmetic import flag
from pipeline.text.normalize import collapse_whitespace, python_lower

#: Rejection phrases of the official script (case-sensitive).
REJECTION_PHRASES = ["信息不足", "insufficient information"]
#: Error-detection phrases of the official script (case-sensitive), counterfactual sets.
ERROR_DETECTION_PHRASES = ["事实性错误", "factual errors"]
#: A Han character: marks Chinese text (``language = "auto"`` at ingest, official mode without a
#: ``language``).
HAN_PATTERN = r"\p{Han}"
#: Share of an alternative's tokens that must occur in the response (flexible mode).
TOKEN_RECALL_THRESHOLD = (4, 5)
#: Trailing characters removed by the flexible normalization.
_TRAILING_PUNCTUATION = r"[.!?,;:\s]+$"

_ROW, _GROUP, _ALT = "__row", "__group", "__alt"


def answer_groups_from_json(answer: object) -> list[list[str]]:
    """RGB's ``answer`` field as groups of alternatives.

    A string is one group with one alternative; in a list, a string element is a one-alternative
    group and a list element is a group of alternatives.

    >>> answer_groups_from_json(["1月3日", ["1月12日", "1月12号"]])
    [['1月3日'], ['1月12日', '1月12号']]
    """
    if isinstance(answer, str):
        return [[answer]]
    if not isinstance(answer, list):
        raise TypeError(f"RGB answer must be a string or a list, got {type(answer).__name__}")
    groups: list[list[str]] = []
    for element in answer:
        if isinstance(element, str):
            groups.append([element])
        elif isinstance(element, list) and all(isinstance(alt, str) for alt in element):
            groups.append(list(element))
        else:
            raise TypeError(
                f"RGB answer element must be a string or a list of strings: {element!r}"
            )
    return groups


def all_groups_matched(
    response: pl.Expr,
    answer_groups: pl.Expr,
    alternative_matches: Callable[[pl.DataFrame], pl.Series],
) -> pl.Expr:
    """1 where every group has an alternative for which ``alternative_matches`` is true (Int8).

    ``alternative_matches`` receives one row per (row, group, alternative) with string columns
    ``response`` and ``alternative`` (null where a group or the group list is empty) and returns a
    boolean Series of that length.
    """

    def score(packed: pl.Series) -> pl.Series:
        frame = packed.struct.unnest().with_row_index(_ROW)
        long = (
            frame.with_columns(pl.int_ranges(pl.col("groups").list.len()).alias(_GROUP))
            .explode("groups", _GROUP, empty_as_null=True)
            .explode("groups", empty_as_null=True)
            .rename({"groups": "alternative"})
        )
        matched = long.select(_ROW, _GROUP, alternative_matches(long).fill_null(False).alias("m"))
        per_row = (
            matched.group_by(_ROW, _GROUP)
            .agg(pl.col("m").any() & pl.col(_GROUP).is_not_null().all())
            .group_by(_ROW)
            .agg(pl.col("m").all())
        )
        result = (
            frame.select(_ROW)
            .join(per_row, on=_ROW, how="left")
            .sort(_ROW)
            .get_column("m")
            .fill_null(False)
        )
        return result.cast(pl.Int8)

    packed = pl.struct(response.alias("response"), answer_groups.alias("groups"))
    mapped = packed.map_batches(score, return_dtype=pl.Int8, is_elementwise=True)
    return pl.when(response.is_not_null() & answer_groups.is_not_null()).then(mapped)


# --- official mode -------------------------------------------------------------------------------


def _official_text(response: pl.Expr, chinese: pl.Expr | bool) -> pl.Expr:
    """The response as the script checks it: ASCII spaces removed on Chinese sets."""
    removed = response.str.replace_all(" ", "", literal=True)
    if isinstance(chinese, bool):
        return removed if chinese else response
    return pl.when(chinese).then(removed).otherwise(response)


def official_rejected(response: pl.Expr, *, chinese: pl.Expr | bool) -> pl.Expr:
    """1 when the response contains a rejection phrase of the official script (Int8).

    Case-sensitive and checked after the Chinese space removal, so "Insufficient information"
    is no rejection, and on Chinese sets neither is "insufficient information" (its space goes).
    """
    text = _official_text(response, chinese)
    return flag(text.str.contains_any(REJECTION_PHRASES))


def official_error_detected(response: pl.Expr, *, chinese: pl.Expr | bool = False) -> pl.Expr:
    """1 when the response flags factual errors (``factual errors`` / ``事实性错误``) (Int8).

    Case-sensitive. The script looks at the space-removed response on Chinese sets; pass
    ``chinese`` to do the same (default: the response as is).
    """
    text = _official_text(response, chinese)
    return flag(text.str.contains_any(ERROR_DETECTION_PHRASES))


def _official_alternative_matches(long: pl.DataFrame) -> pl.Series:
    response = python_lower(pl.col("response"))
    alternative = python_lower(pl.col("alternative"))
    return long.select(response.str.contains(alternative, literal=True)).to_series()


def official_correct(
    response: pl.Expr, answer_groups: pl.Expr, *, chinese: pl.Expr | bool, noise_rate: pl.Expr
) -> pl.Expr:
    """Correctness as counted by the official RGB script (Int8).

    A rejection (see :func:`official_rejected`) is 1 at noise rate 1.0 and 0 otherwise (a null
    noise rate counts as not 1.0); any other response is 1 when every group has an alternative
    that is a substring of the lowercased response.

    >>> df = pl.DataFrame({"r": ["It was the start.", "信息不足"], "a": [[["ART"]], [["x"]]]})
    >>> df.select(official_correct(pl.col("r"), pl.col("a"), chinese=True,
    ...                            noise_rate=pl.lit(1.0)).alias("ok"))["ok"].to_list()
    [1, 1]
    """
    text = _official_text(response, chinese)
    rejected = official_rejected(response, chinese=chinese) == 1
    at_full_noise = (noise_rate == 1.0).fill_null(False)
    matched = all_groups_matched(text, answer_groups, _official_alternative_matches)
    return (
        pl.when(response.is_null())
        .then(None)
        .when(rejected)
        .then(flag(at_full_noise))
        .otherwise(matched)
        .cast(pl.Int8)
    )


# --- flexible mode -------------------------------------------------------------------------------


def flexible_normalize(text: pl.Expr) -> pl.Expr:
    """Lowercase, collapse whitespace, strip, drop trailing ``.!?,;:``."""
    return collapse_whitespace(python_lower(text)).str.replace(_TRAILING_PUNCTUATION, "")


def _flexible_alternative_matches(long: pl.DataFrame, *, strict: bool) -> pl.Series:
    frame = long.select(
        pl.int_range(pl.len()).alias(_ALT),
        flexible_normalize(pl.col("response")).alias("r"),
        flexible_normalize(pl.col("alternative")).alias("a"),
    )
    r, a = pl.col("r"), pl.col("a")
    if strict:
        return frame.select((r != "") & (r == a)).to_series()
    contained = (r != "") & (
        r.str.contains(a, literal=True)
        | ((r.str.len_chars() < a.str.len_chars()) & a.str.contains(r, literal=True))
    )
    numerator, denominator = TOKEN_RECALL_THRESHOLD
    tokens = (
        frame.select(_ALT, r.str.split(" ").alias("rt"), a.str.split(" ").alias("at"))
        .explode("at")
        .filter(pl.col("at") != "")
        .group_by(_ALT)
        .agg(
            hits=pl.col("rt").list.contains(pl.col("at")).sum(),
            n=pl.len(),
        )
    )
    recall = frame.join(tokens, on=_ALT, how="left").sort(_ALT)
    enough = (r != "") & (pl.col("hits") * denominator >= pl.col("n") * numerator).fill_null(False)
    return recall.select(contained | enough).to_series()


def flexible_correct(response: pl.Expr, answer_groups: pl.Expr, *, strict: bool = False) -> pl.Expr:
    """1 when every group has an alternative matching the response, both normalized (Int8).

    After :func:`flexible_normalize`, an alternative matches a non-empty response when it is a
    substring of the response, when the shorter response is a substring of it, or when at least
    80% of its whitespace tokens (counted with repeats) are tokens of the response. With
    ``strict=True`` only equality counts. An empty normalized response matches nothing.

    >>> df = pl.DataFrame({"r": ["Paris."], "a": [[["The capital of France is Paris"]]]})
    >>> df.select(flexible_correct(pl.col("r"), pl.col("a")).alias("ok"))["ok"].to_list()
    [1]
    """

    def matches(long: pl.DataFrame) -> pl.Series:
        return _flexible_alternative_matches(long, strict=strict)

    return all_groups_matched(response, answer_groups, matches)


def official_rejection_phrase(response: pl.Expr, *, chinese: pl.Expr | bool) -> pl.Expr:
    """The official rejection phrase the response contains, in script order (String, or null)."""
    text = _official_text(response, chinese)
    found = [
        pl.when(text.str.contains(phrase, literal=True)).then(pl.lit(phrase, dtype=pl.String))
        for phrase in REJECTION_PHRASES
    ]
    return pl.coalesce(found).cast(pl.String)
