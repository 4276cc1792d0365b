"""Sentence BLEU identical to sacrebleu, the "textbook" BLEU of some evaluation tools, and BLEU
over the matching orders.

:func:`bleu` reproduces ``sacrebleu.sentence_bleu(hypothesis, [reference]).score / 100``
(sacrebleu 2.x, ``BLEU|nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp``): 13a tokens
(:func:`pipeline.text.tokenize_13a.tokens_13a`), clipped n-gram matches for n = 1..4
(``BLEU._compute_segment_statistics``) and ``BLEU.compute_bleu`` with exponential smoothing and
effective order, doing the same float operations in the same order (a compiled kernel over
the statistics, :func:`pipeline.text.kernels.bleu.sentence_bleu_scores`), so the values are
bit-identical. Two departures, both at the end: sacrebleu reports 0..100 and we divide by 100;
and the score is clipped at 1.0, because sacrebleu's perfect score is
``exp(log(100)) = 100.00000000000004`` (only a perfect match exceeds 1, by 4.4e-16).

Conventions (all from sacrebleu):

* No n-gram match of any order (in particular an empty hypothesis or reference) gives 0.
* Brevity penalty ``exp(1 - r / c)`` when ``c < r``, 0 when ``c == 0``, else 1.
* Exponential smoothing: the k-th order with zero matches gets precision ``100 / (2**k * total)``.
* Effective order: orders the hypothesis is too short for are left out of the geometric mean.

:func:`matched_orders_bleu` is the BLEU of the enhanced text evaluation framework's reference
output (docs/compat.md): case-sensitive whitespace tokens, the geometric mean of the clipped
precisions of the orders 1..k, k the highest order with a match (a higher order never matches
when a lower one does not), times the brevity penalty; 0 without a matching unigram.

The per-row sufficient statistics of :func:`bleu_statistics` are Int64 counts, so corpus BLEU is
:func:`sentence_bleu` over summed statistics with ``effective_order=False`` (the default of
``sacrebleu.corpus_bleu``). Clipped matches come from a numpy kernel over the whole batch
(``pl.map_batches``): tokens get batch-local integer ids and each order needs one sort of
(row, n-gram, side) keys. polars runs a user function once per use of its expression, so store
the statistics as columns and score from those; :func:`bleu` and :func:`textbook_bleu` do so
inside one batch function. Null texts give null statistics and scores (any of the BLEU
variants: an empty response beside a null reference scores null, not 0).

From texts, :func:`text_statistics` gives the match counts and token counts in one pass of the
compiled kernels (:mod:`pipeline.text.kernels`: the 13a tokenizer, token ids, clipped counts),
the token lists never built; the registry and :func:`bleu` use it, and the token-list functions
above stay the reference its tests compare with.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial

import numpy as np
import polars as pl

from pipeline.text.kernels.bleu import frozen, sentence_bleu_scores
from pipeline.text.kernels.buffers import with_nulls
from pipeline.text.kernels.rouge import NO_LCS, part_statistics
from pipeline.text.normalize import python_lower
from pipeline.text.tokenize import whitespace_tokens
from pipeline.text.tokenize_sacrebleu import bleu_token_ids, broadcast, broadcast_pair

MAX_ORDER = 4
#: The precision that replaces a zero n-gram precision in :func:`textbook_bleu`.
TEXTBOOK_FLOOR = 0.0001
# Integer keys stay below this bound, so products of codes never overflow int64.
_KEY_LIMIT = 1 << 62


def statistic_names(max_order: int = MAX_ORDER) -> list[str]:
    """Keys of :func:`bleu_statistics`: ``matches_n``, ``totals_n`` (n = 1..max), the lengths."""
    orders = range(1, max_order + 1)
    return [
        *(f"matches_{n}" for n in orders),
        *(f"totals_{n}" for n in orders),
        "hyp_len",
        "ref_len",
    ]


# --- clipped n-gram matches: numpy over the whole batch -------------------------------------


def _token_ids(hyp: pl.Series, ref: pl.Series) -> tuple[np.ndarray, np.ndarray, int]:
    """Integer ids of the tokens of both sides (equal strings, equal ids), hypotheses first.

    Returns the flat ids, the lengths of the ``2 * rows`` token lists (0 for null) and an upper
    bound of the ids.
    """
    both = pl.concat([hyp.cast(pl.List(pl.String)), ref.cast(pl.List(pl.String))])
    lengths = both.list.len().fill_null(0).cast(pl.Int64).to_numpy()
    values = both.explode(empty_as_null=False, keep_nulls=False)
    if values.null_count() or len(values) != int(lengths.sum()):
        raise ValueError("token lists must not contain null tokens")
    # A fresh categories object per batch: exact string equality, ids dense in the batch.
    ids = values.cast(pl.Categorical(pl.Categories.random())).to_physical().to_numpy()
    return ids.astype(np.int64), lengths, int(ids.max()) + 1 if len(ids) else 1


def _densify(codes: np.ndarray) -> tuple[np.ndarray, int]:
    uniques, inverse = np.unique(codes, return_inverse=True)
    return inverse.astype(np.int64), max(len(uniques), 1)


def _ngram_codes(
    ids: np.ndarray, lengths: np.ndarray, bound: int, n: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """Integer codes of every n-gram (equal n-grams, equal codes), their list index, code bound."""
    lists = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    starts_here = np.ones(len(ids), dtype=bool)  # an n-gram starts before the last n-1 tokens
    ends = np.cumsum(lengths)
    for k in range(1, n):
        starts_here[ends[lengths >= k] - k] = False
    first = np.flatnonzero(starts_here)
    codes, card = ids[first], bound
    for k in range(1, n):  # mixed radix ``bound``, renumbered densely when it grows too large
        if card * bound >= _KEY_LIMIT:
            codes, card = _densify(codes)
        codes, card = codes * bound + ids[first + k], card * bound
    return codes, lists[first], card


def _clipped(codes: np.ndarray, lists: np.ndarray, card: int, rows: int) -> np.ndarray:
    """``sum(min(hyp_count, ref_count))`` per row, from one sort of (row, n-gram, side) keys."""
    if 2 * rows * card >= _KEY_LIMIT:
        codes, card = _densify(codes)
    side = lists >= rows
    ordered = np.sort(((lists - rows * side) * card + codes) * 2 + side)
    if not len(ordered):
        return np.zeros(rows, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))
    counts = np.diff(np.append(starts, len(ordered)))
    gram = ordered[starts] >> 1
    # A hypothesis run followed by a reference run of the same (row, n-gram) is a match.
    paired = np.flatnonzero(gram[1:] == gram[:-1])
    clipped = np.minimum(counts[paired], counts[paired + 1])
    return np.bincount(gram[paired] // card, weights=clipped, minlength=rows).astype(np.int64)


def _match_counts(hyp: pl.Series, ref: pl.Series, orders: Sequence[int]) -> dict[str, pl.Series]:
    """``matches_n`` (Int64, null where a side is null) for each n of ``orders``."""
    rows = len(hyp)
    ids, lengths, bound = _token_ids(hyp, ref)
    missing = np.flatnonzero((hyp.is_null() | ref.is_null()).to_numpy())
    out = {}
    for n in orders:
        counts = pl.Series(_clipped(*_ngram_codes(ids, lengths, bound, n), rows), dtype=pl.Int64)
        out[f"matches_{n}"] = counts.scatter(missing, None) if len(missing) else counts
    return out


def _matches_struct(series: Sequence[pl.Series], max_order: int) -> pl.Series:
    counts = _match_counts(*broadcast_pair(*series), range(1, max_order + 1))
    return pl.DataFrame(counts).to_struct("matches")


def match_counts(hyp_tokens: pl.Expr, ref_tokens: pl.Expr, max_order: int = MAX_ORDER) -> pl.Expr:
    """Every ``matches_n`` (n = 1..``max_order``) from one kernel call, as a struct with those
    fields (Int64, null where a side is null): the tokens get their ids once for all orders.

    >>> import polars as pl
    >>> frame = pl.DataFrame({"h": [["a", "a", "b"]], "r": [["a", "b", "a"]]})
    >>> frame.select(match_counts(pl.col("h"), pl.col("r"), max_order=2)).item()
    {'matches_1': 3, 'matches_2': 1}
    """
    fields = {f"matches_{n}": pl.Int64() for n in range(1, max_order + 1)}
    return pl.map_batches(
        [hyp_tokens, ref_tokens],
        partial(_matches_struct, max_order=max_order),
        return_dtype=pl.Struct(fields),
        is_elementwise=True,
    )


# --- from texts: compiled kernels ------------------------------------------------------------


def text_statistic_fields(max_order: int = MAX_ORDER) -> list[str]:
    """Fields of :func:`text_statistics`: ``matches_n`` (n = 1..max), ``hyp_len``, ``ref_len``."""
    return [*(f"matches_{n}" for n in range(1, max_order + 1)), "hyp_len", "ref_len"]


def _text_statistics_frame(
    hyp: pl.Series, ref: pl.Series, tokenize: str, lang: pl.Series | None, max_order: int
) -> pl.DataFrame:
    parts = bleu_token_ids(hyp, ref, tokenize, lang)
    matches, _, hyp_len, ref_len = part_statistics(parts, len(hyp), max_order, NO_LCS)
    hyp_valid, ref_valid = hyp.is_not_null().to_numpy(), ref.is_not_null().to_numpy()
    both = hyp_valid & ref_valid
    columns = [with_nulls(f"matches_{n}", matches[:, n - 1], both)
               for n in range(1, max_order + 1)]
    columns.append(with_nulls("hyp_len", hyp_len, hyp_valid))
    columns.append(with_nulls("ref_len", ref_len, ref_valid))
    return pl.DataFrame(columns).cast(pl.Int64)


def _text_statistics_batch(series: Sequence[pl.Series], tokenize: str, max_order: int
                           ) -> pl.Series:
    columns = broadcast(*series)
    lang = columns[2] if len(columns) > 2 else None
    frame = _text_statistics_frame(columns[0], columns[1], tokenize, lang, max_order)
    return frame.to_struct("bleu")


def text_statistics(
    hyp_text: pl.Expr, ref_text: pl.Expr, tokenize: str = "13a", lang: pl.Expr | None = None,
    max_order: int = MAX_ORDER,
) -> pl.Expr:
    """Clipped matches of every order and both token counts of sacreBLEU's tokens of two texts,
    from compiled kernels, as a struct with the fields of :func:`text_statistic_fields`
    (Int64; ``matches_n`` null where a text is null, a length where its text is).

    ``tokenize`` and ``lang`` choose the tokenizer of each row as
    :func:`~pipeline.text.tokenize_sacrebleu.bleu_tokens` does; the values equal
    :func:`match_counts` and the list lengths of those tokens. Store the struct as a column and
    read it with :func:`statistics_from_struct`.

    >>> import polars as pl
    >>> pl.select(text_statistics(pl.lit("a a b."), pl.lit("a b a."), max_order=2)).item()
    {'matches_1': 4, 'matches_2': 1, 'hyp_len': 4, 'ref_len': 4}
    """
    inputs = [hyp_text, ref_text] if lang is None else [hyp_text, ref_text, lang]
    fields = {name: pl.Int64() for name in text_statistic_fields(max_order)}
    return pl.map_batches(
        inputs, partial(_text_statistics_batch, tokenize=tokenize, max_order=max_order),
        return_dtype=pl.Struct(fields), is_elementwise=True,
    )


def statistics_from_struct(struct: pl.Expr, max_order: int = MAX_ORDER) -> dict[str, pl.Expr]:
    """The statistics of :func:`bleu_statistics` (keys :func:`statistic_names`) from the struct
    of :func:`text_statistics`: ``totals_n = max(hyp_len - n + 1, 0)``."""
    hyp_len = struct.struct.field("hyp_len")
    stats = {f"matches_{n}": struct.struct.field(f"matches_{n}") for n in range(1, max_order + 1)}
    stats |= {f"totals_{n}": (hyp_len - (n - 1)).clip(lower_bound=0)
              for n in range(1, max_order + 1)}
    stats |= {"hyp_len": hyp_len, "ref_len": struct.struct.field("ref_len")}
    return {name: stats[name] for name in statistic_names(max_order)}


# --- statistics and scores -------------------------------------------------------------------


def _lengths_and_totals(
    hyp_tokens: pl.Expr, ref_tokens: pl.Expr, max_order: int
) -> dict[str, pl.Expr]:
    hyp_len = hyp_tokens.list.len().cast(pl.Int64)
    totals = {
        f"totals_{n}": (hyp_len - (n - 1)).clip(lower_bound=0) for n in range(1, max_order + 1)
    }
    return {**totals, "hyp_len": hyp_len, "ref_len": ref_tokens.list.len().cast(pl.Int64)}


def bleu_statistics(
    hyp_tokens: pl.Expr, ref_tokens: pl.Expr, max_order: int = MAX_ORDER,
    *, matches: pl.Expr | None = None,
) -> dict[str, pl.Expr]:
    """Sufficient statistics of BLEU for one hypothesis and one reference (Int64 expressions).

    ``matches_n`` is the clipped match count ``sum(min(hyp_count, ref_count))`` over n-grams,
    ``totals_n = max(hyp_len - n + 1, 0)``; keys as in :func:`statistic_names`. The match
    counts are the fields of :func:`match_counts` (a numpy kernel), or of ``matches`` when
    given: store that struct as a column once and pass it, since polars may evaluate a user
    function once per use.

    >>> import polars as pl
    >>> frame = pl.DataFrame({"h": [["a", "a", "b"]], "r": [["a", "b", "a"]]})
    >>> frame.select(**bleu_statistics(pl.col("h"), pl.col("r"), max_order=2)).row(0)
    (3, 1, 3, 2, 3, 3)
    """
    struct = match_counts(hyp_tokens, ref_tokens, max_order) if matches is None else matches
    counts = {f"matches_{n}": struct.struct.field(f"matches_{n}")
              for n in range(1, max_order + 1)}
    stats = {**counts, **_lengths_and_totals(hyp_tokens, ref_tokens, max_order)}
    return {name: stats[name] for name in statistic_names(max_order)}


def _statistics_frame(hyp_tokens: pl.Series, ref_tokens: pl.Series) -> pl.DataFrame:
    """:func:`bleu_statistics` of two token columns, with one kernel call for all orders."""
    frame = pl.DataFrame({"hyp": hyp_tokens, "ref": ref_tokens})
    matches = _match_counts(frame["hyp"], frame["ref"], range(1, MAX_ORDER + 1))
    stats = frame.select(**_lengths_and_totals(pl.col("hyp"), pl.col("ref"), MAX_ORDER))
    return stats.with_columns(**matches).select(statistic_names())


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


def sentence_bleu(stats: Mapping[str, pl.Expr], *, effective_order: bool = True) -> pl.Expr:
    """``BLEU.compute_bleu(..., smooth_method="exp").score / 100``, at most 1.0, from statistics
    (:func:`pipeline.text.kernels.bleu.sentence_bleu_scores`); null where a statistic is null.

    ``stats`` maps the names of :func:`statistic_names` to columns (those of
    :func:`bleu_statistics`) or to their sums for corpus BLEU.

    >>> import polars as pl
    >>> counts = [5, 3, 1, 0, 6, 5, 4, 3, 6, 6]
    >>> stats = {name: pl.lit(counts[i]) for i, name in enumerate(statistic_names())}
    >>> round(pl.select(sentence_bleu(stats)).item(), 6)
    0.379918
    """
    names = statistic_names(_order(stats))
    return pl.map_batches(
        [stats[name] for name in names],
        partial(_sentence_bleu_batch, effective_order=effective_order),
        return_dtype=pl.Float64,
        is_elementwise=True,
    )


def _sentence_bleu_batch(series: Sequence[pl.Series], effective_order: bool) -> pl.Series:
    """:func:`sentence_bleu` of one batch: the columns of :func:`statistic_names`, in order."""
    columns = broadcast(*series)
    order = (len(columns) - 2) // 2
    valid = np.ones(len(columns[0]), dtype=np.bool_)
    for column in columns:
        if column.null_count():
            valid &= column.is_not_null().to_numpy()
    values = [column.cast(pl.Int64).fill_null(0).to_numpy() for column in columns]
    scores = sentence_bleu_scores(  # read-only arrays: one compiled signature
        frozen(np.column_stack(values[:order])), frozen(np.column_stack(values[order:2 * order])),
        frozen(values[2 * order]), frozen(values[2 * order + 1]), effective_order,
    )
    return with_nulls("bleu", scores, valid)


def textbook_from_statistics(stats: Mapping[str, pl.Expr]) -> pl.Expr:
    """The score of :func:`textbook_bleu` from :func:`bleu_statistics` of lowercased tokens."""
    log_sum: pl.Expr = pl.lit(0.0)
    for n in range(1, MAX_ORDER + 1):
        matched, total = stats[f"matches_{n}"], stats[f"totals_{n}"]
        precision = matched.cast(pl.Float64) / total.cast(pl.Float64)
        floored = pl.when(matched == 0).then(pl.lit(TEXTBOOK_FLOOR)).otherwise(precision)
        term = pl.lit(1.0 / MAX_ORDER) * floored.log()
        log_sum = log_sum + term if n > 1 else term
    score = brevity_penalty(stats["hyp_len"], stats["ref_len"]) * log_sum.exp()
    return pl.when(stats["hyp_len"] == 0).then(pl.lit(0.0)).otherwise(score)


def matched_orders_from_statistics(stats: Mapping[str, pl.Expr]) -> pl.Expr:
    """The score of :func:`matched_orders_bleu` from :func:`bleu_statistics`.

    ``BP * exp((log p_1 + ... + log p_k) / k)``, summed left to right, over the orders with at
    least one match (the first k); 0.0 when no unigram matches.

    >>> import polars as pl
    >>> counts = [5, 3, 1, 0, 6, 5, 4, 3, 6, 6]
    >>> stats = {name: pl.lit(counts[i]) for i, name in enumerate(statistic_names())}
    >>> pl.select(matched_orders_from_statistics(stats)).item()
    0.5
    """
    log_sum: pl.Expr = pl.lit(0.0)
    orders: pl.Expr = pl.lit(0.0)
    for n in range(1, MAX_ORDER + 1):
        matched, total = stats[f"matches_{n}"], stats[f"totals_{n}"]
        hit = matched > 0
        precision = matched.cast(pl.Float64) / total.cast(pl.Float64)
        term = pl.when(hit).then(precision.log()).otherwise(pl.lit(0.0))
        log_sum = log_sum + term if n > 1 else term
        orders = orders + hit.cast(pl.Float64)
    score = brevity_penalty(stats["hyp_len"], stats["ref_len"]) * (log_sum / orders).exp()
    return pl.when(orders == 0.0).then(pl.lit(0.0)).otherwise(score)


# --- from texts, each step computed once -----------------------------------------------------


def _score_batch(
    series: Sequence[pl.Series],
    tokenize: Callable[[pl.Expr], pl.Expr],
    score: Callable[[Mapping[str, pl.Expr]], pl.Expr],
) -> pl.Series:
    """Tokens, statistics and score of one batch, each materialized once."""
    hyp, ref = broadcast_pair(*series)
    texts = pl.DataFrame([hyp.alias("hyp"), ref.alias("ref")])
    tokens = texts.select(hyp=tokenize(pl.col("hyp")), ref=tokenize(pl.col("ref")))
    stats = _statistics_frame(tokens["hyp"], tokens["ref"])
    missing = (hyp.is_null() | ref.is_null()).alias("missing")
    scored = score({name: pl.col(name) for name in stats.columns})
    return stats.with_columns(missing).select(pl.when(~pl.col("missing")).then(scored)).to_series()


def _scored(
    hyp_text: pl.Expr,
    ref_text: pl.Expr,
    tokenize: Callable[[pl.Expr], pl.Expr],
    score: Callable[[Mapping[str, pl.Expr]], pl.Expr],
) -> pl.Expr:
    return pl.map_batches(
        [hyp_text, ref_text],
        partial(_score_batch, tokenize=tokenize, score=score),
        return_dtype=pl.Float64,
        is_elementwise=True,
    )


def bleu(response: pl.Expr, reference: pl.Expr) -> pl.Expr:
    """``sacrebleu.sentence_bleu(response, [reference]).score / 100`` (Float64 in [0, 1]).

    Case-sensitive 13a tokens, exponential smoothing, effective order; clipped at 1.0.

    >>> import polars as pl
    >>> pl.select(bleu(pl.lit("the cat sat on the mat"), pl.lit("the cat sat on a mat"))).item()
    0.537284965911771
    """
    return pl.map_batches(
        [response, reference], _kernel_bleu_batch, return_dtype=pl.Float64, is_elementwise=True
    )


def _kernel_bleu_batch(series: Sequence[pl.Series]) -> pl.Series:
    """:func:`bleu` of one batch: statistics from the kernels (13a), then the score."""
    hyp, ref = broadcast_pair(*series)
    stats = _text_statistics_frame(hyp, ref, "13a", None, MAX_ORDER)
    scores = statistics_from_struct(pl.struct(pl.all()))
    return stats.select(sentence_bleu(scores)).to_series()


def textbook_tokens(text: pl.Expr) -> pl.Expr:
    """``text.lower().split()`` (CPython's ``str.lower`` and ``str.isspace``)."""
    return whitespace_tokens(python_lower(text))


def textbook_bleu(hyp_text: pl.Expr, ref_text: pl.Expr) -> pl.Expr:
    """Textbook BLEU-4 (Papineni et al., 2002) on :func:`textbook_tokens` (Float64 in [0, 1]).

    ``BP * exp(sum(0.25 * log(p_n) for n in 1..4))``, summed left to right, where ``p_n`` is the
    clipped n-gram precision and ``BP = exp(1 - r / c)`` when ``c < r``, else 1. A zero
    precision, including that of an order the hypothesis is too short for (no n-grams), is
    replaced by ``0.0001``, so a non-empty hypothesis never scores 0; an empty one scores 0.

    >>> import polars as pl
    >>> hyp, ref = pl.lit("the cat sits on the mat"), pl.lit("The cat is on the mat")
    >>> round(pl.select(textbook_bleu(hyp, ref)).item(), 4)
    0.0595
    """
    return _scored(hyp_text, ref_text, textbook_tokens, textbook_from_statistics)


def matched_orders_bleu(hyp_text: pl.Expr, ref_text: pl.Expr) -> pl.Expr:
    """BLEU over the matching orders on case-sensitive ``str.split()`` tokens (Float64 in
    [0, 1]); see :func:`matched_orders_from_statistics`.

    The BLEU of the enhanced text evaluation framework's reference TSV (its appendix's worked
    example shows :func:`textbook_bleu` instead: docs/compat.md).

    >>> import polars as pl
    >>> hyp = pl.lit("Paris is the capital city of France, located in the Île-de-France region.")
    >>> ref = pl.lit("The capital of France is Paris")
    >>> round(pl.select(matched_orders_bleu(hyp, ref)).item(), 4)
    0.3333
    """
    return _scored(hyp_text, ref_text, whitespace_tokens, matched_orders_from_statistics)
