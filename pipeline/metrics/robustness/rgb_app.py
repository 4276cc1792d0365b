"""The RGB app's checks, reproduced for the ``rgb-app`` preset (docs/compat.md).

Reference: the ``RGBEvaluator`` methods its documentation prints (``normalize_answer``,
``is_correct``, ``corrects_error``, ``is_rejection``, ``detects_error``; the spec is
``004_ed34dc59fe6eac90.txt`` among the replaced tools). Where these rules differ from the
default lenient checks (:mod:`~pipeline.metrics.robustness.rgb` flexible mode and
:mod:`~pipeline.metrics.robustness.rgb_detect`):

* phrases and keywords are matched in ``response.lower()`` only: no curly-quote folding and no
  whitespace collapsing ("I don’t know" with a curly apostrophe is no rejection), and the raw
  response is read, citation markers included;
* error keywords are plain substrings, without word boundaries: "error" is found in "errors"
  and in "terror";
* answers are compared after the app's ``normalize_answer`` (lowercase, strip, drop a trailing
  run of ``.!?,;:``, collapse whitespace); an empty side never matches; the token rule counts
  the answer's **distinct** tokens (``set(...)``), 80% of which must be response tokens;
* on counterfactual rows a correct response is also a correction (``corrects_error``): it is not
  correct when it contains the normalized fake answer but not the normalized true answer.

The app scores one answer string per row; with ``answer_groups`` every group must match (any
alternative of a group), which is the app's rule for one group of one answer. A null response
gives null.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from pipeline.metrics.arithmetic import flag
from pipeline.metrics.robustness.rgb import TOKEN_RECALL_THRESHOLD, all_groups_matched
from pipeline.metrics.robustness.rgb_detect import fake_denied
from pipeline.text.normalize import collapse_whitespace, python_lower

_ALT = "__alt"


def app_normalize(text: pl.Expr) -> pl.Expr:
    """``normalize_answer`` of the app: ``" ".join(re.sub(r"[.!?,;:]+$", "",
    text.lower().strip()).split())``.

    Collapsing whitespace first and stripping the space a removed run can leave gives the same
    text: the trailing run holds no whitespace, so it is the same run either way.

    >>> pl.select(app_normalize(pl.lit("  The capital is Paris!!! "))).item()
    'the capital is paris'
    >>> pl.select(app_normalize(pl.lit("Paris. !"))).item()
    'paris.'
    """
    collapsed = collapse_whitespace(python_lower(text))
    return collapsed.str.replace(r"[.!?,;:]+$", "").str.strip_chars_end(" ")


def _app_alternative_matches(long: pl.DataFrame, *, strict: bool) -> pl.Series:
    """``is_correct(response, alternative, strict)`` per (row, group, alternative) row."""
    frame = long.select(
        pl.int_range(pl.len()).alias(_ALT),
        app_normalize(pl.col("response")).alias("r"),
        app_normalize(pl.col("alternative")).alias("a"),
    )
    r, a = pl.col("r"), pl.col("a")
    both = (r != "") & (a != "")
    if strict:
        return frame.select(both & (r == a)).to_series()
    contained = r.str.contains(a, literal=True) | (
        (r.str.len_chars() < a.str.len_chars()) & a.str.contains(r, literal=True)
    )
    numerator, denominator = TOKEN_RECALL_THRESHOLD
    tokens = (
        frame.select(_ALT, r.str.split(" ").alias("rt"), a.str.split(" ").list.unique().alias("at"))
        .explode("at")
        .filter(pl.col("at") != "")
        .group_by(_ALT)
        .agg(hits=pl.col("rt").list.contains(pl.col("at")).sum(), n=pl.len())
    )
    recall = frame.join(tokens, on=_ALT, how="left").sort(_ALT)
    enough = (pl.col("hits") * denominator >= pl.col("n") * numerator).fill_null(False)
    return recall.select(both & (contained | enough)).to_series()


def _app_contains_answer(long: pl.DataFrame) -> pl.Series:
    """``normalize_answer(alternative) in normalize_answer(response)`` (``""`` is in anything)."""
    r, a = app_normalize(pl.col("response")), app_normalize(pl.col("alternative"))
    return long.select(r.str.contains(a, literal=True)).to_series()


def app_correct(
    response: pl.Expr,
    answer_groups: pl.Expr,
    *,
    fake_answer: pl.Expr | None = None,
    strict: bool = False,
) -> pl.Expr:
    """``is_correct`` for every group; where ``fake_answer`` is a non-empty string, also
    ``corrects_error``: the response must not hold the fake answer without the true one (Int8).

    >>> df = pl.DataFrame({"r": ["York.", "York", "It is New York City, not York"],
    ...                    "a": [[["New York City"]]] * 3, "f": [None, "York", "York"]})
    >>> df.select(app_correct(pl.col("r"), pl.col("a"), fake_answer=pl.col("f")).alias("ok")
    ...           )["ok"].to_list()
    [1, 0, 1]
    """

    def matches(long: pl.DataFrame) -> pl.Series:
        return _app_alternative_matches(long, strict=strict)

    correct = all_groups_matched(response, answer_groups, matches)
    if fake_answer is None:
        return correct
    usable = fake_answer.is_not_null() & (fake_answer != "")
    fake_in_response = app_normalize(response).str.contains(app_normalize(fake_answer),
                                                            literal=True)
    true_in_response = all_groups_matched(response, answer_groups, _app_contains_answer) == 1
    only_fake = (usable & fake_in_response & ~true_in_response).fill_null(False)
    return pl.when(only_fake & correct.is_not_null()).then(pl.lit(0, pl.Int8)).otherwise(correct)


def app_rejection_phrase(response: pl.Expr, *, phrases: Sequence[str]) -> pl.Expr:
    """The first of ``phrases`` (primary, then secondary, in list order) that is a substring of
    ``response.lower()`` (String); null when none is or the response is null.

    >>> df = pl.DataFrame({"r": ["It is unclear.", "I don’t know", "I don't know"]})
    >>> df.select(app_rejection_phrase(pl.col("r"), phrases=["i don't know", "unclear"])
    ...           .alias("p"))["p"].to_list()
    ['unclear', None, "i don't know"]
    """
    lowered = python_lower(response)
    found = [
        pl.when(lowered.str.contains(phrase, literal=True)).then(pl.lit(phrase, dtype=pl.String))
        for phrase in phrases
        if phrase
    ]
    return pl.coalesce(found).cast(pl.String) if found else pl.lit(None, dtype=pl.String)


def app_error_detected(
    response: pl.Expr, fake_answer: pl.Expr, *, keywords: Sequence[str]
) -> pl.Expr:
    """``detects_error``: a keyword is a substring of ``response.lower()``, or, for a non-empty
    fake answer, ``"not " + fake.lower()`` or ``fake.lower() + " is wrong"`` is (Int8; null for
    a null response).

    >>> df = pl.DataFrame({"r": ["There are errors here.", "It is not London."],
    ...                    "f": ["x", "London"]})
    >>> df.select(app_error_detected(pl.col("r"), pl.col("f"), keywords=["error"]).alias("d")
    ...           )["d"].to_list()
    [1, 1]
    """
    lowered = python_lower(response)
    detected = fake_denied(lowered, python_lower(fake_answer))
    words = [k for k in keywords if k]
    if words:
        detected = detected | lowered.str.contains_any(words).fill_null(False)
    return pl.when(response.is_not_null()).then(flag(detected))
