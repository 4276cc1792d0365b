"""Sentence BLEU identical to sacrebleu, and the "textbook" BLEU of some evaluation tools.

``bleu`` reproduces ``sacrebleu.sentence_bleu(hypothesis, [reference]).score / 100`` (sacrebleu
2.x, signature ``BLEU|nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp``): 13a tokens
(:func:`pipeline.text.tokenize_13a.tokens_13a`), clipped n-gram matches for n = 1..4
(``BLEU._compute_segment_statistics``), and ``BLEU.compute_bleu`` with exponential smoothing and
effective order, performing the same float operations in the same order, so the values are
bit-identical. The only departure is the scale: sacrebleu reports 0..100, we divide by 100.

Conventions (from sacrebleu):

* No n-gram match of any order (in particular an empty hypothesis or reference) gives 0.
* Brevity penalty ``exp(1 - r / c)`` when ``c < r``, 0 when ``c == 0``, else 1.
* Exponential smoothing: the k-th order with zero matches gets precision ``100 / (2**k * total)``.
* Effective order: orders the hypothesis is too short for are left out of the geometric mean.

Per-segment sufficient statistics (:func:`bleu_statistics`) are plain Int64 counts, so corpus
BLEU is :func:`sentence_bleu` over summed statistics with ``effective_order=False``
(``sacrebleu.corpus_bleu``'s default).

Null texts give null statistics and null scores.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from pipeline.metrics.answer import multiset_overlap
from pipeline.text.normalize import python_lower
from pipeline.text.tokenize import whitespace_tokens
from pipeline.text.tokenize_13a import tokens_13a

MAX_ORDER = 4
#: ``sacrebleu.utils.my_log(0.0)``.
LOG_ZERO = -9999999999.0
#: Precision that replaces a zero n-gram precision in :func:`textbook_bleu`.
TEXTBOOK_FLOOR = 0.0001
# Tokens never contain whitespace, so space-joined n-grams are unambiguous.
_JOIN = " "


def statistic_names(max_order: int = MAX_ORDER) -> list[str]:
    """Keys of :func:`bleu_statistics`: ``matches_n``, ``totals_n`` (n = 1..max), lengths."""
    orders = range(1, max_order + 1)
    return [
        *(f"matches_{n}" for n in orders),
        *(f"totals_{n}" for n in orders),
        "hyp_len",
        "ref_len",
    ]


def ngrams(tokens: pl.Expr, n: int) -> pl.Expr:
    """The n-grams of a token list, each joined by a space (``[]`` when shorter than n)."""
    if n == 1:
        return tokens
    element = pl.element()
    shifted = [element.shift(-k) for k in range(n)]
    return tokens.list.eval(pl.concat_str(shifted, separator=_JOIN).drop_nulls())


def bleu_statistics(
    hyp_tokens: pl.Expr, ref_tokens: pl.Expr, max_order: int = MAX_ORDER
) -> dict[str, pl.Expr]:
    """Sufficient statistics of BLEU for one hypothesis and one reference (Int64 each).

    ``matches_n`` is the clipped n-gram match count ``sum(min(hyp_count, ref_count))``,
    ``totals_n = max(hyp_len - n + 1, 0)``; keys as in :func:`statistic_names`.

    >>> import polars as pl
    >>> frame = pl.DataFrame({"h": [["a", "a", "b"]], "r": [["a", "b", "a"]]})
    >>> stats = bleu_statistics(pl.col("h"), pl.col("r"), max_order=2)
    >>> frame.select(**stats).row(0)
    (3, 1, 3, 2, 3, 3)
    """
    hyp_len = hyp_tokens.list.len().cast(pl.Int64)
    stats = {"hyp_len": hyp_len, "ref_len": ref_tokens.list.len().cast(pl.Int64)}
    for n in range(1, max_order + 1):
        stats[f"matches_{n}"] = multiset_overlap(ngrams(hyp_tokens, n), ngrams(ref_tokens, n))
        stats[f"totals_{n}"] = pl.max_horizontal(hyp_len - (n - 1), pl.lit(0, dtype=pl.Int64))
    return {name: stats[name] for name in statistic_names(max_order)}


def _order(stats: Mapping[str, pl.Expr]) -> int:
    order = sum(1 for name in stats if name.startswith("matches_"))
    if order < 1 or set(stats) != set(statistic_names(order)):
        raise ValueError(f"expected the keys {statistic_names(order)}, got {sorted(stats)}")
    return order


def brevity_penalty(hyp_len: pl.Expr, ref_len: pl.Expr) -> pl.Expr:
    """``exp(1 - r / c)`` when ``c < r``, 0.0 when ``c == 0``, else 1.0 (Float64)."""
    shorter = pl.lit(1.0) - ref_len.cast(pl.Float64) / hyp_len.cast(pl.Float64)
    return (
        pl.when(hyp_len >= ref_len)
        .then(pl.lit(1.0))
        .when(hyp_len > 0)
        .then(shorter.exp())
        .otherwise(pl.lit(0.0))
    )


def divide_exactly(numerator: pl.Expr, divisor: float) -> pl.Expr:
    """``numerator / divisor`` correctly rounded, as Python's ``/`` (for finite numerators).

    polars divides a float column by a scalar as a product with ``1 / divisor``, which can be one
    ulp off (``9.688464563433238 / 100``); dividing by a column of ``divisor`` is exact.
    """
    return numerator / (numerator * 0.0 + divisor)


def _my_log(value: pl.Expr) -> pl.Expr:
    """``sacrebleu.utils.my_log``: ``log``, floored to ``-9999999999`` at 0."""
    return pl.when(value == 0.0).then(pl.lit(LOG_ZERO)).otherwise(value.log())


def sentence_bleu(stats: Mapping[str, pl.Expr], *, effective_order: bool = True) -> pl.Expr:
    """``BLEU.compute_bleu(..., smooth_method="exp").score / 100`` from sufficient statistics.

    ``stats`` maps the names of :func:`statistic_names` to expressions (those of
    :func:`bleu_statistics`, their columns, or their sums for corpus BLEU).

    >>> import polars as pl
    >>> counts = [5, 3, 1, 0, 6, 5, 4, 3, 6, 6]
    >>> stats = {name: pl.lit(v) for name, v in zip(statistic_names(), counts)}
    >>> round(pl.select(sentence_bleu(stats)).item(), 6)
    0.379918
    """
    order = _order(stats)
    float_of = {name: expr.cast(pl.Float64) for name, expr in stats.items()}
    nothing_reached = float_of["totals_1"] == 0.0  # the effective order stays at max_order
    reached = pl.lit(True)  # every order up to n has n-grams: the loop has not stopped
    halvings = pl.lit(0.0)  # log2 of ``smooth_mteval``
    eff_order = pl.lit(0.0)
    log_sum = pl.lit(0.0)
    for n in range(1, order + 1):
        matched, total = float_of[f"matches_{n}"], float_of[f"totals_{n}"]
        reached = reached & (total != 0.0)
        halvings = halvings + (reached & (matched == 0.0)).cast(pl.Float64)
        precision = (
            pl.when(~reached)
            .then(pl.lit(0.0))
            .when(matched == 0.0)
            .then(pl.lit(100.0) / (pl.lit(2.0).pow(halvings) * total))
            .otherwise(pl.lit(100.0) * matched / total)
        )
        term = _my_log(precision)
        if effective_order:  # orders beyond the effective order are not summed (+ 0.0 is exact)
            term = pl.when(reached | nothing_reached).then(term).otherwise(pl.lit(0.0))
        log_sum = log_sum + term if n > 1 else term
        eff_order = eff_order + reached.cast(pl.Float64)
    if not effective_order:
        eff_order = pl.lit(float(order))
    eff_order = pl.when(eff_order == 0.0).then(pl.lit(float(order))).otherwise(eff_order)
    bp = brevity_penalty(stats["hyp_len"], stats["ref_len"])
    no_match = pl.all_horizontal([float_of[f"matches_{n}"] == 0.0 for n in range(1, order + 1)])
    score = pl.when(no_match).then(pl.lit(0.0)).otherwise(bp * (log_sum / eff_order).exp())
    return divide_exactly(score, 100.0)


def bleu(response: pl.Expr, reference: pl.Expr) -> pl.Expr:
    """``sacrebleu.sentence_bleu(response, [reference]).score / 100`` (Float64 in [0, 1]).

    >>> import polars as pl
    >>> pl.select(bleu(pl.lit("the cat sat on the mat"), pl.lit("the cat sat on a mat"))).item()
    0.537284965911771
    """
    return sentence_bleu(bleu_statistics(tokens_13a(response), tokens_13a(reference)))


def textbook_tokens(text: pl.Expr) -> pl.Expr:
    """``text.lower().split()`` (CPython's ``str.lower`` and ``str.isspace``)."""
    return whitespace_tokens(python_lower(text))


def textbook_bleu(hyp_text: pl.Expr, ref_text: pl.Expr) -> pl.Expr:
    """Textbook BLEU-4 on lowercased whitespace tokens (Float64 in [0, 1]).

    ``BP * exp(sum(0.25 * log(p_n) for n in 1..4))`` (summed left to right), where ``p_n`` is the
    clipped n-gram precision (Papineni et al., 2002) and ``BP = exp(1 - r / c)`` when ``c < r``,
    0 when the hypothesis is empty, else 1. A zero precision, including an order the hypothesis
    is too short for, is replaced by ``0.0001``; so a non-empty hypothesis never scores 0.

    >>> import polars as pl
    >>> hyp, ref = pl.lit("the cat sits on the mat"), pl.lit("The cat is on the mat")
    >>> round(pl.select(textbook_bleu(hyp, ref)).item(), 4)
    0.0595
    """
    stats = bleu_statistics(textbook_tokens(hyp_text), textbook_tokens(ref_text))
    log_sum: pl.Expr | None = None
    for n in range(1, MAX_ORDER + 1):
        matched, total = stats[f"matches_{n}"], stats[f"totals_{n}"]
        precision = matched.cast(pl.Float64) / total.cast(pl.Float64)
        floored = pl.when(matched == 0).then(pl.lit(TEXTBOOK_FLOOR)).otherwise(precision)
        term = pl.lit(1.0 / MAX_ORDER) * floored.log()
        log_sum = term if log_sum is None else log_sum + term
    assert log_sum is not None
    return brevity_penalty(stats["hyp_len"], stats["ref_len"]) * log_sum.exp()
