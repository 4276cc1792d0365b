"""ROUGE-N and ROUGE-L identical to Google's ``rouge-score`` package.

Reference: ``rouge_score`` 0.1.2, ``RougeScorer(["rouge1", "rouge2", "rougeL"])`` called as
``score(target=reference, prediction=response)``: ``_create_ngrams``, ``_score_ngrams``,
``_score_lcs`` and ``scoring.fmeasure``. The functions take token lists produced by
:func:`pipeline.text.rouge_tokenize.rouge_tokens`, so each text is tokenized once.

Scores are computed from per-row sufficient statistics (``overlap``, ``n_pred``, ``n_ref``), so
corpus-level micro scores can be summed in SQL:

* ROUGE-N: ``overlap`` is the clipped n-gram overlap ``sum(min(count_pred, count_ref))``;
  ``n_pred``/``n_ref`` are the n-gram counts ``max(len - n + 1, 0)``.
* ROUGE-L: ``overlap`` is the LCS length of the two token lists; ``n_pred``/``n_ref`` are the
  token counts.

Conventions (all from the package): precision is 0 when ``n_pred`` is 0, recall is 0 when
``n_ref`` is 0, and F is 0 when P + R is 0; so an empty side (or both) scores 0, never 1. A null
token list gives null statistics and scores. The LCS of a row whose two token counts multiply
to more than :data:`MAX_LCS_CELLS` (two texts of about a million tokens each) is not computed:
``rouge_l_lcs`` and ``rouge_l`` are null there, with a logged warning. One huge response
against a short reference is fast (the recurrence steps through the shorter list).

``overlap`` of both kinds is a numpy kernel over the whole batch (``pl.map_batches``, row-wise so
polars may split batches): tokens get batch-local integer ids, clipped n-gram counts come from
one sort of (row, n-gram, side) keys, and the LCS from Hyyrö's bit-parallel recurrence over rows
bucketed by length. Python loops run over n-gram offsets, token positions and 64-bit words,
never over rows. Store the statistics as columns and score from those columns: polars may run a
user function once per use of the expression.

From texts, :func:`rouge_text_statistics` gives the overlaps, the LCS length and the token counts
in one pass of the compiled kernels (:mod:`pipeline.text.kernels`: rouge-score's tokenizer on
ASCII rows, token ids, n-gram counts and a bit-parallel LCS per row), the token lists never built
except for the rows :func:`~pipeline.text.rouge_tokenize.rouge_token_ids` leaves to the
expressions; the registry uses it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import partial

import numpy as np
import polars as pl

from pipeline.metrics.arithmetic import harmonic_mean, safe_div
from pipeline.text.kernels.bleu import TokenParts, token_ids_of_lists
from pipeline.text.kernels.buffers import with_nulls
from pipeline.text.kernels.rouge import part_statistics
from pipeline.text.rouge_tokenize import rouge_token_ids
from pipeline.text.tokenize_sacrebleu import broadcast

log = logging.getLogger(__name__)

# Integer keys stay below this bound, so products of ids never overflow int64.
_KEY_LIMIT = 1 << 62
_WORD = 64
_ALL_ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
# Rows of one LCS chunk times their padded reference length (bounds the memory of a chunk).
_MAX_CELLS = 1 << 22
#: Most ``len(response tokens) * len(reference tokens)`` of a row whose LCS is computed (about
#: ten seconds of work); above it ``rouge_l_lcs`` and ``rouge_l`` are null and a warning says so.
MAX_LCS_CELLS = 1 << 34
#: A row whose longer token list is longer than this gets the LCS on one Python integer
#: (:func:`_lcs_wide`) instead of numpy words added with a Python loop over the words.
_WIDE_TOKENS = 1 << 12
#: Most bytes of match masks :func:`_lcs_wide` keeps for repeated tokens.
_WIDE_MASK_BYTES = 64 << 20


def _flat(tokens: pl.Series) -> tuple[pl.Series, np.ndarray]:
    """The tokens of all rows in row order and each row's length (0 for null rows)."""
    lengths = tokens.list.len().fill_null(0).cast(pl.Int64).to_numpy()
    values = tokens.explode(empty_as_null=False, keep_nulls=False)
    if values.null_count() or len(values) != int(lengths.sum()):
        raise ValueError("token lists must not contain null tokens")
    return values, lengths


def _dense_ids(pred: pl.Series, ref: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Flat integer token ids of both sides (equal strings, equal ids), row lengths, id bound.

    The ids of the prediction tokens come first, then those of the reference tokens.
    """
    if len(pred) != len(ref):
        raise ValueError(f"token columns differ in length: {len(pred)} != {len(ref)}")
    pred_values, pred_len = _flat(pred)
    ref_values, ref_len = _flat(ref)
    both = pl.concat([pred_values.cast(pl.String), ref_values.cast(pl.String)])
    # A fresh categories object per batch (polars marks ``Categories`` unstable): ids are dense
    # in the batch and freed with it; the cast is exact string equality.
    ids = both.cast(pl.Categorical(pl.Categories.random())).to_physical().to_numpy()
    bound = int(ids.max()) + 1 if len(ids) else 1
    return ids.astype(np.int64), pred_len, ref_len, bound


def _row_starts(lengths: np.ndarray) -> np.ndarray:
    return np.cumsum(lengths) - lengths


def _densify(codes: np.ndarray) -> tuple[np.ndarray, int]:
    uniques, inverse = np.unique(codes, return_inverse=True)
    return inverse.astype(np.int64), max(len(uniques), 1)


def _run_starts(ordered: np.ndarray) -> np.ndarray:
    """Index of the first element of each run of equal values of a sorted array."""
    if not len(ordered):
        return np.zeros(0, dtype=np.int64)
    return np.flatnonzero(np.concatenate([[True], ordered[1:] != ordered[:-1]]))


def _with_nulls(result: np.ndarray, pred: pl.Series, ref: pl.Series) -> pl.Series:
    """``result`` as Int64, null where a side is null or ``result`` is negative (not
    computed)."""
    out = pl.Series(result, dtype=pl.Int64)
    missing = (pred.is_null() | ref.is_null()).to_numpy() | (result < 0)
    if missing.any():
        out = out.scatter(np.flatnonzero(missing), None)
    return out


def _overlap_batch(series: Sequence[pl.Series], n: int) -> pl.Series:
    """Clipped n-gram overlap per row: one sort of (row, n-gram, side) keys of both sides."""
    pred, ref = series
    return _with_nulls(_overlaps(*_dense_ids(pred, ref), len(pred), n), pred, ref)


def _overlaps(
    ids: np.ndarray, pred_len: np.ndarray, ref_len: np.ndarray, bound: int, rows: int, n: int
) -> np.ndarray:
    """:func:`_overlap_batch` from the tokens' dense ids (:func:`_dense_ids`)."""
    # Both sides as one flat list of 2 * rows rows: predictions first, then references.
    lengths = np.concatenate([pred_len, ref_len])
    row = np.repeat(np.arange(2 * rows, dtype=np.int64), lengths)
    codes, card = ids, bound
    if n > 1:
        # An n-gram starts anywhere but in the last n - 1 positions of its row; it is encoded
        # as one integer in mixed radix ``bound`` (renumbered densely if that grows too large).
        starts_here = np.ones(len(ids), dtype=bool)
        ends = np.cumsum(lengths)
        for k in range(1, n):
            starts_here[ends[lengths >= k] - k] = False
        first = np.flatnonzero(starts_here)
        codes, row = ids[first], row[first]
        for k in range(1, n):
            if card * bound >= _KEY_LIMIT:
                codes, card = _densify(codes)
            codes, card = codes * bound + ids[first + k], card * bound
    if 2 * rows * card >= _KEY_LIMIT:
        codes, card = _densify(codes)
    side = row >= rows
    ordered = np.sort(((row - rows * side) * card + codes) * 2 + side)
    # Runs of equal (row, n-gram, side); a prediction run followed by a reference run of the
    # same (row, n-gram) contributes the smaller of the two counts.
    starts = _run_starts(ordered)
    counts = np.diff(np.append(starts, len(ordered)))
    gram = ordered[starts] >> 1
    paired = np.flatnonzero(gram[1:] == gram[:-1])
    clipped = np.minimum(counts[paired], counts[paired + 1])
    overlap = np.bincount(gram[paired] // card, weights=clipped, minlength=rows)
    return overlap.astype(np.int64)


def ngram_overlap(
    pred_tokens: pl.Expr, ref_tokens: pl.Expr, n: int
) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """ROUGE-N sufficient statistics ``(overlap, n_pred, n_ref)`` as Int64 expressions.

    ``overlap`` is ``sum(min(pred[g], ref[g]))`` over the n-gram counters of ``_create_ngrams``
    (repeated n-grams are clipped exactly); ``n_pred``/``n_ref`` are ``max(len - n + 1, 0)``.
    ``overlap`` runs a numpy kernel: store it as a column and score from that column, since
    polars may evaluate a repeated user function once per use.

    >>> import polars as pl
    >>> frame = pl.DataFrame({"p": [["the", "the", "cat"]], "r": [["the", "cat", "the"]]})
    >>> overlap, n_pred, n_ref = ngram_overlap(pl.col("p"), pl.col("r"), 2)
    >>> frame.select(overlap.alias("o"), n_pred.alias("np"), n_ref.alias("nr")).row(0)
    (1, 2, 2)
    """
    if n < 1:
        raise ValueError(f"ROUGE-N requires n >= 1, got {n}")
    overlap = pl.map_batches(
        [pred_tokens, ref_tokens],
        partial(_overlap_batch, n=n),
        return_dtype=pl.Int64,
        is_elementwise=True,
    )
    return overlap, _ngram_count(pred_tokens, n), _ngram_count(ref_tokens, n)


def _ngram_count(tokens: pl.Expr, n: int) -> pl.Expr:
    return (tokens.list.len().cast(pl.Int64) - (n - 1)).clip(lower_bound=0)


def _lcs_batch(series: Sequence[pl.Series]) -> pl.Series:
    """LCS length per row, bit-parallel over rows bucketed by padded length."""
    pred, ref = series
    return _with_nulls(_lcs_lengths(*_dense_ids(pred, ref), len(pred)), pred, ref)


def _lcs_lengths(
    ids: np.ndarray, pred_len: np.ndarray, ref_len: np.ndarray, bound: int, rows: int
) -> np.ndarray:
    """:func:`_lcs_batch` from the tokens' dense ids (:func:`_dense_ids`)."""
    ids = ids.astype(np.int32) if bound < np.iinfo(np.int32).max else ids
    # The LCS is symmetric: the recurrence steps through the shorter list of each row (a
    # Python step per position) with bit vectors over the longer one, so one huge response
    # against a short reference costs a few steps over long vectors, not a step per token.
    starts = (_row_starts(pred_len), _row_starts(ref_len) + int(pred_len.sum()))
    swap = pred_len > ref_len
    pred_start = np.where(swap, starts[1], starts[0])
    ref_start = np.where(swap, starts[0], starts[1])
    pred_len, ref_len = np.minimum(pred_len, ref_len), np.maximum(pred_len, ref_len)
    # Rows are bucketed by (reference, prediction) length rounded up to a power of two, so
    # padding at most doubles the work; the reference padding is at least one byte of bits.
    ref_cap = np.maximum(_ceil_pow2(ref_len), 8)
    bucket = ref_cap * (1 << 32) + _ceil_pow2(pred_len)
    result = np.zeros(rows, dtype=np.int64)
    busy = (pred_len > 0) & (ref_len > 0)
    too_long = busy & (pred_len * ref_len > MAX_LCS_CELLS)
    if too_long.any():
        log.warning(
            "ROUGE-L: %d row(s) whose response and reference token counts multiply to more "
            "than %d are left null (rouge_l_lcs, rouge_l): their LCS would take minutes",
            int(too_long.sum()), MAX_LCS_CELLS,
        )
        result[too_long] = -1  # null (:func:`_with_nulls`)
        busy &= ~too_long
    wide = busy & (ref_len > _WIDE_TOKENS)
    for row in np.flatnonzero(wide).tolist():
        outer = ids[pred_start[row] : pred_start[row] + pred_len[row]]
        inner = ids[ref_start[row] : ref_start[row] + ref_len[row]]
        result[row] = _lcs_wide(outer, inner)
    busy &= ~wide
    for key in np.unique(bucket[busy]).tolist():
        members = np.flatnonzero(busy & (bucket == key))
        cap = key >> 32
        step = max(_MAX_CELLS // cap, 1)
        for lo in range(0, len(members), step):
            chunk = members[lo : lo + step]
            longest = int(pred_len[chunk].max())
            pred_ids = _padded(ids, pred_start[chunk], pred_len[chunk], longest, fill=-1)
            ref_ids = _padded(ids, ref_start[chunk], ref_len[chunk], cap, fill=-2)
            result[chunk] = _bit_parallel_lcs(np.ascontiguousarray(pred_ids.T), ref_ids)
    return result


#: Fields of :func:`rouge_statistics`.
STATISTICS = ("overlap_1", "overlap_2", "lcs")


def _statistics_batch(series: Sequence[pl.Series]) -> pl.Series:
    pred, ref = series
    dense = (*_dense_ids(pred, ref), len(pred))
    columns = {"overlap_1": _overlaps(*dense, 1), "overlap_2": _overlaps(*dense, 2),
               "lcs": _lcs_lengths(*dense)}
    return pl.DataFrame(
        {name: _with_nulls(values, pred, ref) for name, values in columns.items()}
    ).to_struct("rouge")


def rouge_statistics(pred_tokens: pl.Expr, ref_tokens: pl.Expr) -> pl.Expr:
    """ROUGE-1 and ROUGE-2 clipped overlaps and the LCS length from one kernel call, as a
    struct with the fields :data:`STATISTICS` (Int64, null where a side is null): the tokens
    get their ids once for the three. Equal to :func:`ngram_overlap` and :func:`lcs_length`.

    >>> import polars as pl
    >>> frame = pl.DataFrame({"p": [["the", "the", "cat"]], "r": [["the", "cat", "the"]]})
    >>> frame.select(rouge_statistics(pl.col("p"), pl.col("r"))).item()
    {'overlap_1': 3, 'overlap_2': 1, 'lcs': 2}
    """
    return pl.map_batches(
        [pred_tokens, ref_tokens], _statistics_batch,
        return_dtype=pl.Struct({name: pl.Int64() for name in STATISTICS}), is_elementwise=True,
    )


#: Fields of :func:`rouge_text_statistics` and :func:`rouge_token_statistics`.
TEXT_STATISTICS = ("overlap_1", "overlap_2", "lcs", "n_pred", "n_ref")
_TEXT_DTYPE = pl.Struct({name: pl.Int64() for name in TEXT_STATISTICS})


def _parts_struct(parts: TokenParts, pred_valid: np.ndarray, ref_valid: np.ndarray
                  ) -> pl.Series:
    """The struct of :data:`TEXT_STATISTICS` of a batch tokenized in ``parts``."""
    overlaps, lcs, n_pred, n_ref = part_statistics(parts, len(pred_valid), 2, MAX_LCS_CELLS)
    both = pred_valid & ref_valid
    too_long = int(np.count_nonzero(both & (lcs < 0)))
    if too_long:
        log.warning(
            "ROUGE-L: %d row(s) whose response and reference token counts multiply to more "
            "than %d are left null (rouge_l_lcs, rouge_l): their LCS would take minutes",
            too_long, MAX_LCS_CELLS,
        )
    columns = [with_nulls("overlap_1", overlaps[:, 0], both),
               with_nulls("overlap_2", overlaps[:, 1], both),
               with_nulls("lcs", lcs, both & (lcs >= 0)),
               with_nulls("n_pred", n_pred, pred_valid), with_nulls("n_ref", n_ref, ref_valid)]
    return pl.DataFrame(columns).cast(pl.Int64).to_struct("rouge")


def _text_statistics_batch(series: Sequence[pl.Series], tokenizer: str, stem: bool
                           ) -> pl.Series:
    columns = broadcast(*series)
    pred, ref = columns[0], columns[1]
    lang = columns[2] if len(columns) > 2 else None
    parts = rouge_token_ids(pred, ref, tokenizer, lang, stem)
    return _parts_struct(parts, pred.is_not_null().to_numpy(), ref.is_not_null().to_numpy())


def rouge_text_statistics(
    pred_text: pl.Expr, ref_text: pl.Expr, tokenizer: str = "rouge-score",
    lang: pl.Expr | None = None, stem: bool = False,
) -> pl.Expr:
    """ROUGE-1/2 overlaps, LCS length and token counts of two texts from compiled kernels, as
    a struct with the fields :data:`TEXT_STATISTICS` (Int64).

    The tokens are those of :func:`~pipeline.text.rouge_tokenize.rouge_tokens_for` with the same
    ``tokenizer``, ``lang`` and ``stem``, and the values those of :func:`rouge_statistics` and
    the list lengths: ``n_pred`` / ``n_ref`` are token counts (null where that text is null),
    the others null where a text is null (``lcs`` also over :data:`MAX_LCS_CELLS`). ROUGE-N's
    n-gram counts are :func:`ngram_total` of the token counts. Store the struct as a column.

    >>> import polars as pl
    >>> pl.select(rouge_text_statistics(pl.lit("The cat, the cat!"), pl.lit("the cat sat"))).item()
    {'overlap_1': 2, 'overlap_2': 1, 'lcs': 2, 'n_pred': 4, 'n_ref': 3}
    """
    inputs = [pred_text, ref_text] if lang is None else [pred_text, ref_text, lang]
    return pl.map_batches(
        inputs, partial(_text_statistics_batch, tokenizer=tokenizer, stem=stem),
        return_dtype=_TEXT_DTYPE, is_elementwise=True,
    )


def _token_statistics_batch(series: Sequence[pl.Series]) -> pl.Series:
    pred, ref = broadcast(*series)
    parts: TokenParts = [(None, token_ids_of_lists(pred, ref))]
    return _parts_struct(parts, pred.is_not_null().to_numpy(), ref.is_not_null().to_numpy())


def rouge_token_statistics(pred_tokens: pl.Expr, ref_tokens: pl.Expr) -> pl.Expr:
    """:func:`rouge_text_statistics` of two ``List[String]`` token columns (a null list gives
    null statistics), from the same kernel.

    >>> import polars as pl
    >>> frame = pl.DataFrame({"p": [["the", "the", "cat"]], "r": [["the", "cat", "the"]]})
    >>> frame.select(rouge_token_statistics(pl.col("p"), pl.col("r"))).item()
    {'overlap_1': 3, 'overlap_2': 1, 'lcs': 2, 'n_pred': 3, 'n_ref': 3}
    """
    return pl.map_batches(
        [pred_tokens, ref_tokens], _token_statistics_batch, return_dtype=_TEXT_DTYPE,
        is_elementwise=True,
    )


def ngram_total(length: pl.Expr, n: int) -> pl.Expr:
    """The n-grams of a list of ``length`` tokens: ``max(length - n + 1, 0)`` (Int64)."""
    return (length.cast(pl.Int64) - (n - 1)).clip(lower_bound=0)


def _ceil_pow2(lengths: np.ndarray) -> np.ndarray:
    """Smallest power of two >= each length (1 for 0)."""
    exponent = np.ceil(np.log2(np.maximum(lengths, 1))).astype(np.int64)
    return np.left_shift(1, exponent)


def _padded(
    ids: np.ndarray, start: np.ndarray, length: np.ndarray, cap: int, fill: int
) -> np.ndarray:
    """Rows of ``ids`` as a (rows, cap) matrix, ``fill`` after each row's end."""
    columns = np.arange(cap)
    inside = columns < length[:, None]
    index = np.where(inside, start[:, None] + columns, 0)
    return np.where(inside, ids[index], fill)


def _lcs_wide(outer: np.ndarray, inner: np.ndarray) -> int:
    """LCS length of one row whose longer list (``inner``) is long: the recurrence of
    :func:`_bit_parallel_lcs` on one Python integer of ``len(inner)`` bits, whose additions
    carry across words in C. The match masks of repeated tokens are kept while they fit in
    :data:`_WIDE_MASK_BYTES`."""
    size = len(inner)
    full = (1 << size) - 1
    masks: dict[int, int] = {}
    budget = _WIDE_MASK_BYTES // max(size // 8, 1)
    state = full
    for token in outer.tolist():
        mask = masks.get(token)
        if mask is None:
            bits = np.packbits(inner == token, bitorder="little")
            mask = int.from_bytes(bits.tobytes(), "little")
            if len(masks) < budget:
                masks[token] = mask
        match = state & mask
        state = ((state + match) | (state - match)) & full
    return size - state.bit_count()


def _bit_parallel_lcs(pred_ids: np.ndarray, ref_ids: np.ndarray) -> np.ndarray:
    """LCS lengths of padded rows (``pred_ids`` position-major, ``ref_ids`` row-major).

    Hyyrö's bit-vector recurrence ``V' = (V + (V & M)) | (V & ~M)``, where bit ``j`` of ``M``
    is set when reference token ``j`` equals the current prediction token; the LCS length is
    the number of zero bits of ``V``. Padding never matches (prediction padding -1, reference
    padding -2), so padded bits and positions leave ``V`` unchanged. Vectors longer than 64
    bits are arrays of words added with carry.
    """
    rows, cap = ref_ids.shape
    width = -(-cap // _WORD)
    masks = np.zeros((rows, width * 8), dtype=np.uint8)
    state = np.full((rows, width), _ALL_ONES, dtype=np.uint64)
    for token in pred_ids:
        equal = ref_ids == token[:, None]
        masks[:, : cap // 8] = np.packbits(equal.ravel(), bitorder="little").reshape(rows, -1)
        m = masks.view("<u8")
        if width == 1:
            v, m1 = state[:, 0], m[:, 0]
            state[:, 0] = (v + (v & m1)) | (v & ~m1)
            continue
        carry = np.zeros(rows, dtype=np.uint64)
        for w in range(width):
            v, mw = state[:, w], m[:, w]
            total = v + (v & mw)
            low = total < v
            total += carry
            carry = (low | (total < carry)).astype(np.uint64)
            state[:, w] = total | (v & ~mw)
    return _WORD * width - np.bitwise_count(state).sum(axis=1, dtype=np.int64)


def lcs_length(pred_tokens: pl.Expr, ref_tokens: pl.Expr) -> pl.Expr:
    """Length of the longest common subsequence of two token lists (Int64), as ``_lcs_table``.

    Bit-parallel (Allison-Dix / Hyyrö) over all rows at once; references of any length use
    multi-word bit vectors with carry. 0 when either side is empty. The work per row is
    ``len(pred) * len(ref)`` vectorized comparisons to build the match masks, as the package's
    table but in numpy, plus ``len(pred) * ceil(len(ref) / 64)`` word operations; the
    Python steps are over the shorter of the two lists.

    >>> import polars as pl
    >>> frame = pl.DataFrame({"p": [["a", "b", "c", "d"]], "r": [["b", "x", "d", "a"]]})
    >>> frame.select(lcs_length(pl.col("p"), pl.col("r"))).item()
    2
    """
    return pl.map_batches(
        [pred_tokens, ref_tokens], _lcs_batch, return_dtype=pl.Int64, is_elementwise=True
    )


def rouge_precision(overlap: pl.Expr, n_pred: pl.Expr, n_ref: pl.Expr) -> pl.Expr:
    """``overlap / n_pred`` (Float64), 0.0 when ``n_pred`` is 0; ``n_ref`` is unused.

    Equals ``_score_ngrams`` (``overlap / max(n_pred, 1)``) and ``_score_lcs`` (0 when a side is
    empty, where the LCS is 0 anyway).
    """
    del n_ref
    return safe_div(overlap, n_pred, empty=0.0)


def rouge_recall(overlap: pl.Expr, n_pred: pl.Expr, n_ref: pl.Expr) -> pl.Expr:
    """``overlap / n_ref`` (Float64), 0.0 when ``n_ref`` is 0; ``n_pred`` is unused."""
    del n_pred
    return safe_div(overlap, n_ref, empty=0.0)


def rouge_fmeasure(overlap: pl.Expr, n_pred: pl.Expr, n_ref: pl.Expr) -> pl.Expr:
    """``scoring.fmeasure``: ``2 * P * R / (P + R)``, 0.0 when ``P + R`` is 0 (Float64).

    Same operations in the same order as the package, so the value is bit-identical.

    >>> import polars as pl
    >>> pl.select(rouge_fmeasure(pl.lit(1), pl.lit(2), pl.lit(4))).item()
    0.3333333333333333
    """
    precision = rouge_precision(overlap, n_pred, n_ref)
    recall = rouge_recall(overlap, n_pred, n_ref)
    return harmonic_mean(precision, recall)
