"""rouge-score's default tokenizer on ASCII text, and the clipped n-gram overlaps and LCS length
of token ids (ROUGE-N and ROUGE-L, and BLEU's matches), as compiled kernels.

Reference: ``rouge_score`` 0.1.2, ``tokenize.tokenize`` without a stemmer (``text.lower()``,
``[^a-z0-9]+`` -> ``" "``, split), ``rouge_scorer._score_ngrams`` (``sum(min(count_pred,
count_ref))`` over the n-grams, as sacrebleu's ``BLEU._compute_segment_statistics``) and
``_score_lcs`` (``_lcs_table``'s last cell). On ASCII text the tokens are the maximal runs of
ASCII letters and digits, lowercased, which the ``unicode`` tokenizer of
:mod:`pipeline.text.rouge_tokenize` gives there too. Stemming stays in Python, once per distinct
token (:func:`pipeline.text.kernels.bleu.intern_pair` gives the ids).

Per row, the tokens get row-local ids; the n-grams of each order get ids from the pairs (id of
the (n-1)-gram at a position, id of the token n-1 after it) in an open-addressing table; the LCS
is Hyyrö's bit-parallel recurrence ``V' = (V + (V & M)) | (V & ~M)`` over the longer list (bit
``j`` of ``M`` set where its token ``j`` equals the current token of the shorter list), its
length the number of zero bits of ``V``: ``len(shorter) * ceil(len(longer) / 64)`` word steps.
"""

from __future__ import annotations

import numpy as np

from pipeline.text.kernels.bleu import TokenParts, frozen
from pipeline.text.kernels.buffers import kernel

_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_ALL_ONES = np.uint64(0xFFFF_FFFF_FFFF_FFFF)
_MIX = np.uint64(0x9E3779B97F4A7C15)
_SHIFT = np.uint64(32)
_M1 = np.uint64(0x5555_5555_5555_5555)
_M2 = np.uint64(0x3333_3333_3333_3333)
_M4 = np.uint64(0x0F0F_0F0F_0F0F_0F0F)
_H01 = np.uint64(0x0101_0101_0101_0101)
#: ``max_cells`` of :func:`token_statistics` that computes no LCS.
NO_LCS = -1


@kernel
def ascii_rows(offsets: np.ndarray, data: np.ndarray) -> np.ndarray:
    """True for each row whose bytes are all ASCII (a null or empty row is)."""
    rows = len(offsets) - 1
    out = np.ones(rows, dtype=np.bool_)
    for row in range(rows):
        for k in range(offsets[row], offsets[row + 1]):
            if data[k] >= 0x80:
                out[row] = False
                break
    return out


@kernel
def rouge_tokens_ascii(offsets: np.ndarray, data: np.ndarray, take: np.ndarray
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``tokenize.tokenize(text, None)`` of the ASCII rows where ``take`` is True (none
    elsewhere): ``(token_offsets, token_bytes, counts)``, the tokens of all rows in row order
    and each row's token count."""
    rows = len(offsets) - 1
    total = 0
    for row in range(rows):
        if take[row]:
            total += offsets[row + 1] - offsets[row]
    out_bytes = np.empty(total, dtype=np.uint8)
    out_offsets = np.empty(total + 1, dtype=np.int64)  # a bound: only the used part is written
    out_offsets[0] = 0
    counts = np.zeros(rows, dtype=np.int64)
    written, tokens = 0, 0
    for row in range(rows):
        if not take[row]:
            continue
        before = tokens
        open_token = False
        for k in range(offsets[row], offsets[row + 1]):
            b = data[k]
            if 0x41 <= b <= 0x5A:
                b += 0x20
            if (0x61 <= b <= 0x7A) or (0x30 <= b <= 0x39):
                out_bytes[written] = b
                written += 1
                open_token = True
            elif open_token:
                tokens += 1
                out_offsets[tokens] = written
                open_token = False
        if open_token:
            tokens += 1
            out_offsets[tokens] = written
        counts[row] = tokens - before
    return out_offsets[: tokens + 1], out_bytes[:written], counts


@kernel
def _lcs_row(loc: np.ndarray, size_a: int, size_b: int, distinct: np.int64, starts: np.ndarray,
             positions: np.ndarray, state: np.ndarray, mask: np.ndarray) -> np.int64:
    """LCS length of one row whose row-local ids are ``loc[:size_a]`` and
    ``loc[size_a:size_a + size_b]``: the recurrence steps through the shorter list."""
    outer, n_outer, inner, n_inner = 0, size_a, size_a, size_b
    if size_a > size_b:
        outer, n_outer, inner, n_inner = size_a, size_b, 0, size_a
    # Where each token occurs in the longer list: a counting sort by row-local id.
    starts[: distinct + 2] = 0
    for j in range(n_inner):
        starts[loc[inner + j] + 2] += 1
    for t in range(2, distinct + 2):
        starts[t] += starts[t - 1]
    for j in range(n_inner):  # afterwards token t's positions are starts[t]:starts[t + 1]
        t = loc[inner + j] + 1
        positions[starts[t]] = j
        starts[t] += 1
    words = (n_inner + 63) // 64
    state[:words] = _ALL_ONES
    mask[:words] = _ZERO
    for i in range(n_outer):
        t = loc[outer + i]
        first, last = starts[t], starts[t + 1]
        if first == last:
            continue  # M = 0 leaves V as it is
        for p in range(first, last):
            mask[positions[p] >> 6] |= _ONE << np.uint64(positions[p] & 63)
        carry = _ZERO
        for w in range(words):
            v, m = state[w], mask[w]
            total = v + (v & m)
            low = _ONE if total < v else _ZERO
            total += carry
            carry = low | (_ONE if total < carry else _ZERO)
            state[w] = total | (v & ~m)
        for p in range(first, last):
            mask[positions[p] >> 6] = _ZERO
    zeros = np.int64(64 * words)
    for w in range(words):  # popcount
        x = state[w]
        x = x - ((x >> _ONE) & _M1)
        x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
        x = (x + (x >> np.uint64(4))) & _M4
        zeros -= np.int64((x * _H01) >> np.uint64(56))
    return zeros


@kernel
def token_statistics(hyp: np.ndarray, hyp_offsets: np.ndarray, ref: np.ndarray,
                     ref_offsets: np.ndarray, bound: int, max_order: int, max_cells: int
                     ) -> tuple[np.ndarray, np.ndarray]:
    """``(matches, lcs)`` of each row's token ids (ids below ``bound``).

    ``matches[row, n - 1]`` is ``sum(min(hyp_count, ref_count))`` over the n-grams of order
    n = 1..``max_order``; ``lcs[row]`` the LCS length, -1 where the two token counts multiply
    to more than ``max_cells`` (not computed), and 0 everywhere when ``max_cells`` is
    :data:`NO_LCS`. A row with an empty side has 0 of everything.
    """
    rows = len(hyp_offsets) - 1
    matches = np.zeros((rows, max_order), dtype=np.int64)
    lcs = np.zeros(rows, dtype=np.int64)
    longest, widest = 1, 1
    for row in range(rows):
        size_a = hyp_offsets[row + 1] - hyp_offsets[row]
        size_b = ref_offsets[row + 1] - ref_offsets[row]
        longest = max(longest, size_a + size_b)
        if size_a * size_b <= max_cells:
            widest = max(widest, size_a, size_b)
    stamp = np.empty(max(bound, 1), dtype=np.int64)
    stamp[:] = -1
    local = np.zeros(max(bound, 1), dtype=np.int64)
    loc = np.empty(longest, dtype=np.int64)
    gram = np.empty(longest, dtype=np.int64)
    count_a = np.empty(longest + 1, dtype=np.int64)
    count_b = np.empty(longest + 1, dtype=np.int64)
    capacity = 16
    while capacity < 2 * longest:
        capacity *= 2
    keys = np.zeros(capacity, dtype=np.int64)
    values = np.zeros(capacity, dtype=np.int64)
    tags = np.zeros(capacity, dtype=np.int64)
    starts = np.empty(longest + 2, dtype=np.int64)
    positions = np.empty(widest, dtype=np.int64)
    state = np.empty((widest + 63) // 64, dtype=np.uint64)
    mask = np.empty((widest + 63) // 64, dtype=np.uint64)
    table = capacity - 1
    tag = 0
    for row in range(rows):
        size_a = hyp_offsets[row + 1] - hyp_offsets[row]
        size_b = ref_offsets[row + 1] - ref_offsets[row]
        if size_a == 0 or size_b == 0:
            continue
        size = size_a + size_b
        # Row-local ids, response tokens first.
        distinct = np.int64(0)  # not a literal 0: _lcs_row compiles for one type
        for k in range(size):
            token = hyp[hyp_offsets[row] + k] if k < size_a else ref[ref_offsets[row] + k - size_a]
            if stamp[token] != row:
                stamp[token] = row
                local[token] = distinct
                distinct += 1
            loc[k] = local[token]
            gram[k] = loc[k]
        count_a[:distinct] = 0
        count_b[:distinct] = 0
        for k in range(size_a):
            count_a[loc[k]] += 1
        for k in range(size_a, size):
            count_b[loc[k]] += 1
        clipped = 0
        for k in range(distinct):
            clipped += min(count_a[k], count_b[k])
        matches[row, 0] = clipped
        for n in range(2, max_order + 1):
            if size_a < n or size_b < n or clipped == 0:
                break  # no n-gram on a side, or no (n-1)-gram in common: no n-gram either
            tag += 1
            grams = 0
            for k in range(size - n + 1):
                if size_a - n < k < size_a:
                    continue  # would span the two lists
                key = gram[k] * (size + 1) + loc[k + n - 1]
                slot = np.int64(((np.uint64(key) * _MIX) >> _SHIFT) & np.uint64(table))
                while tags[slot] == tag and keys[slot] != key:
                    slot = (slot + 1) & table
                if tags[slot] != tag:
                    tags[slot] = tag
                    keys[slot] = key
                    values[slot] = grams
                    count_a[grams] = 0
                    count_b[grams] = 0
                    grams += 1
                index = values[slot]
                gram[k] = index
                if k < size_a:
                    count_a[index] += 1
                else:
                    count_b[index] += 1
            clipped = 0
            for k in range(grams):
                clipped += min(count_a[k], count_b[k])
            matches[row, n - 1] = clipped
        if max_cells < 0:
            continue
        if size_a * size_b > max_cells:
            lcs[row] = -1
        elif matches[row, 0] > 0:  # without a common token the LCS is 0
            lcs[row] = _lcs_row(loc, size_a, size_b, distinct, starts, positions, state, mask)
    return matches, lcs


def part_statistics(parts: TokenParts, rows: int, max_order: int, max_cells: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(matches, lcs, hyp_len, ref_len)`` of :func:`token_statistics` and the token counts,
    over the ``rows`` rows of a batch tokenized in parts (each part overrides its rows)."""
    matches = np.zeros((rows, max_order), dtype=np.int64)
    lcs = np.zeros(rows, dtype=np.int64)
    hyp_len = np.zeros(rows, dtype=np.int64)
    ref_len = np.zeros(rows, dtype=np.int64)
    for chosen, ids in parts:
        counts, lengths = token_statistics(
            frozen(ids.hyp), frozen(ids.hyp_offsets), frozen(ids.ref), frozen(ids.ref_offsets),
            ids.bound, max_order, max_cells,
        )
        where = slice(None) if chosen is None else chosen
        matches[where] = counts
        lcs[where] = lengths
        hyp_len[where] = np.diff(ids.hyp_offsets)
        ref_len[where] = np.diff(ids.ref_offsets)
    return matches, lcs, hyp_len, ref_len
