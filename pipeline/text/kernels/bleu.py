"""sacreBLEU's ``13a`` tokenizer, and integer ids for the tokens of two columns, as compiled
kernels.

Reference: sacrebleu 2.x, as :mod:`pipeline.text.tokenize_13a`: ``BLEU._preprocess_segment``'s
``line.rstrip()``, ``Tokenizer13a``, ``TokenizerRegexp`` and the ``str.split()`` of
``extract_all_word_ngrams``.

The tokenizer reads the UTF-8 bytes of any text: every rule of ``13a`` names ASCII characters
only, and a character outside ASCII is a non-digit none of them matches, so substituting and
splitting byte by byte makes the same tokens as ``re`` on code points. Only whitespace is wider
than ASCII: CPython's ``str.isspace`` (:data:`SPACE_POINTS`), for ``rstrip`` and for the split.
Rows holding ``<`` or ``&`` (``<skipped>`` and the HTML entities) are left to the polars
expression; :func:`tokenize_13a` says which.

Token ids: :func:`intern_pair` numbers the tokens of a response and a reference column (equal
bytes, equal ids); :class:`TokenIds` carries them, per row, to the statistics kernel
(:func:`pipeline.text.kernels.rouge.token_statistics`). A batch whose rows are tokenized in
different ways is a list of :data:`TokenParts`: the ids of all rows, then of the rows that
another tokenizer reads, each part overriding the rows it names.

The score: :func:`sentence_bleu_scores` is ``BLEU.compute_bleu`` (exponential smoothing) over
rows of statistics, with sacrebleu's float operations in its order.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import polars as pl

from pipeline.text.kernels.buffers import kernel, string_buffers

#: Code points of CPython's ``str.isspace`` (a test checks the running interpreter agrees).
SPACE_POINTS: tuple[int, ...] = (
    *range(0x09, 0x0E), *range(0x1C, 0x21), 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B),
    0x2028, 0x2029, 0x202F, 0x205F, 0x3000,
)

#: Multipliers of :func:`_token_hash` (odd 64-bit constants: the golden ratio's and splitmix64's).
_MIX = np.uint64(0x9E3779B97F4A7C15)
_MIX_LENGTH = np.uint64(0xBF58476D1CE4E5B9)
_SHIFT = np.uint64(32)
_BYTE = np.uint64(8)
_EMPTY_IDS = np.zeros(0, dtype=np.int32)


def _byte_classes() -> np.ndarray:
    """Class of each byte value for the 13a split: 0 a token's byte, 1 ASCII whitespace, 2 a
    character rule 1 pads (``[{-~[-` -&(-+:-@/]`` but the space), 3 the first byte of a
    character that may be wider whitespace (:func:`space_length` decides), 4 ``<`` or ``&``
    (rows left to the expression), 5 ``.``, ``,`` or ``-`` (rules 2-4), 6 ``\n``."""
    classes = np.zeros(256, dtype=np.uint8)
    for first, last in ((0x7B, 0x7E), (0x5B, 0x60), (0x21, 0x26), (0x28, 0x2B), (0x3A, 0x40),
                        (0x2F, 0x2F)):
        classes[first : last + 1] = 2
    classes[[0x09, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20]] = 1
    classes[[0xC2, 0xE1, 0xE2, 0xE3]] = 3
    classes[[0x3C, 0x26]] = 4
    classes[[0x2E, 0x2C, 0x2D]] = 5
    classes[0x0A] = 6
    return classes


_CLASSES = _byte_classes()


class TokenIds(NamedTuple):
    """Integer token ids of the rows of two columns (a response and a reference).

    ``hyp[hyp_offsets[i]:hyp_offsets[i + 1]]`` are the ids of row ``i``'s response tokens (the
    same for ``ref``); within a row, equal ids are equal tokens; every id is below ``bound``.
    """

    hyp: np.ndarray
    hyp_offsets: np.ndarray
    ref: np.ndarray
    ref_offsets: np.ndarray
    bound: int


#: ``(rows, ids)`` pairs: ``ids`` of the rows ``rows`` names (row indices), or of every row of the
#: batch where ``rows`` is None; a later pair overrides the rows of an earlier one.
TokenParts = list[tuple[np.ndarray | None, TokenIds]]


def frozen(array: np.ndarray) -> np.ndarray:
    """A read-only view: kernels take read-only arrays (Arrow buffers are), so each compiles
    for one type of argument."""
    view = array.view()
    view.setflags(write=False)
    return view


# --- the 13a tokenizer -------------------------------------------------------------------------


@kernel
def space_length(buf: np.ndarray, i: int, end: int) -> int:
    """Bytes of the ``str.isspace`` character at ``buf[i]`` (valid UTF-8), 0 if it is none."""
    b = buf[i]
    if b < 0x80:
        return 1 if (0x09 <= b <= 0x0D) or (0x1C <= b <= 0x20) else 0
    if b == 0xC2:
        return 2 if i + 1 < end and (buf[i + 1] == 0x85 or buf[i + 1] == 0xA0) else 0
    if i + 2 >= end or b < 0xE1 or b > 0xE3:
        return 0
    c, d = buf[i + 1], buf[i + 2]
    if b == 0xE1:  # U+1680
        return 3 if c == 0x9A and d == 0x80 else 0
    if b == 0xE3:  # U+3000
        return 3 if c == 0x80 and d == 0x80 else 0
    if c == 0x80:  # U+2000..U+200A, U+2028, U+2029, U+202F
        return 3 if d <= 0x8A or d == 0xA8 or d == 0xA9 or d == 0xAF else 0
    return 3 if c == 0x81 and d == 0x9F else 0  # U+205F


@kernel
def _substitute(src: np.ndarray, n: int, dst: np.ndarray, rule: int) -> int:
    """``TokenizerRegexp``'s rule ``rule`` (``re.sub``: leftmost, non-overlapping) of
    ``src[:n]`` into ``dst``; returns the length written. Rule 2: ``([^0-9])([.,])`` ->
    ``\\1 \\2 ``; rule 3: ``([.,])([^0-9])`` -> `` \\1 \\2``; rule 4: ``([0-9])(-)`` ->
    ``\\1 \\2 ``."""
    k, out = 0, 0
    while k < n:
        if k + 1 < n:
            a, b = src[k], src[k + 1]
            a_digit, b_digit = 0x30 <= a <= 0x39, 0x30 <= b <= 0x39
            if rule == 2:
                hit = not a_digit and (b == 0x2E or b == 0x2C)
            elif rule == 3:
                hit = (a == 0x2E or a == 0x2C) and not b_digit
            else:
                hit = a_digit and b == 0x2D
            if hit:
                first = 0x20 if rule == 3 else a
                second = a if rule == 3 else 0x20
                dst[out] = first
                dst[out + 1] = second
                dst[out + 2] = 0x20 if rule == 3 else b
                dst[out + 3] = b if rule == 3 else 0x20
                out += 4
                k += 2
                continue
        dst[out] = src[k]
        out += 1
        k += 1
    return out


@kernel
def _split(line: np.ndarray, start: int, end: int, out_bytes: np.ndarray,
           out_offsets: np.ndarray, written: int, tokens: int, plain_only: bool
           ) -> tuple[int, int, bool]:
    """``str.split()`` of ``line[start:end]`` with rule 1 (each character of class 2 is a
    token), appended to the token buffers; returns ``(written, tokens, True)``, or ``False``
    at the first byte of class 4 and above when ``plain_only`` (the row needs every rule)."""
    k = start
    open_token = False
    while k < end:
        b = line[k]
        kind = _CLASSES[b]
        if plain_only and kind >= 4:
            return written, tokens, False
        width = 1 if kind == 1 or kind == 6 else 0
        if kind == 3:
            width = space_length(line, k, end)
        if width == 0 and kind != 2:
            out_bytes[written] = b
            written += 1
            open_token = True
            k += 1
            continue
        if open_token:
            tokens += 1
            out_offsets[tokens] = written
            open_token = False
        if width:
            k += width
            continue
        out_bytes[written] = b
        written += 1
        tokens += 1
        out_offsets[tokens] = written
        k += 1
    if open_token:
        tokens += 1
        out_offsets[tokens] = written
    return written, tokens, True


@kernel
def tokenize_13a(offsets: np.ndarray, data: np.ndarray, take: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """13a tokens of the rows where ``take`` is True, as string buffers.

    Returns ``(token_offsets, token_bytes, counts, done)``: the tokens of all rows in row order,
    each row's token count, and False for the rows not tokenized (not taken, or holding ``<``
    or ``&``: no tokens).
    """
    rows = len(offsets) - 1
    longest, total = 0, 0
    for row in range(rows):
        if take[row]:
            size = offsets[row + 1] - offsets[row]
            longest = max(longest, size)
            total += size
    # Rules 2-4 add two bytes at most for each '.', ',' or '-', and the line gets a space on
    # each side: at most five bytes a byte of the line. Tokens never outgrow their line.
    one = np.empty(5 * longest + 16, dtype=np.uint8)
    two = np.empty(5 * longest + 16, dtype=np.uint8)
    out_bytes = np.empty(total, dtype=np.uint8)
    out_offsets = np.empty(total + 1, dtype=np.int64)  # a bound: only the used part is written
    out_offsets[0] = 0
    counts = np.zeros(rows, dtype=np.int64)
    done = take.copy()
    written, tokens = 0, 0
    for row in range(rows):
        if not take[row]:
            continue
        # Fast path: a row without '.', ',', '-', '\n', '<' or '&' is split as it is (rule 1
        # alone applies, and trailing whitespace makes no token). The bytes are screened first:
        # most answers end with a '.', and a split undone at its last byte costs a whole pass.
        start, size = offsets[row], offsets[row + 1] - offsets[row]
        special = 0
        for k in range(start, start + size):
            special |= _CLASSES[data[k]] >= 4
        if not special:
            before = tokens
            written, tokens, _ = _split(data, start, start + size, out_bytes, out_offsets,
                                        written, tokens, False)
            counts[row] = tokens - before
            continue
        # ``line.rstrip()``, into ``two``.
        for k in range(size):
            two[k] = data[offsets[row] + k]
        while size > 0:
            last = size - 1
            while last > 0 and (two[last] & 0xC0) == 0x80:
                last -= 1
            if space_length(two, last, size) != size - last:
                break
            size = last
        # Tokenizer13a: '-\n' removed, then '\n' -> ' '; the line padded with a space on each
        # side (into ``one``). '<skipped>' and the entities are the expression's rows.
        one[0] = 0x20
        n, k, special, points, dashes = 1, 0, False, False, False
        while k < size:
            b = two[k]
            kind = _CLASSES[b]
            if kind == 4:
                special = True
                break
            if kind == 5:
                if b == 0x2D:
                    if k + 1 < size and two[k + 1] == 0x0A:
                        k += 2
                        continue
                    dashes = True
                else:
                    points = True
            one[n] = 0x20 if kind == 6 else b
            n += 1
            k += 1
        if special:
            done[row] = False
            continue
        one[n] = 0x20
        n += 1
        line, spare = one, two
        # Rules 2 and 3 match a '.' or ',' only, rule 4 a '-' only, and none adds either: a rule
        # whose character the line lacks leaves it as it is.
        if points:
            for rule in range(2, 4):
                n = _substitute(line, n, spare, rule)
                line, spare = spare, line
        if dashes:
            n = _substitute(line, n, spare, 4)
            line, spare = spare, line
        # ``str.split()``; rule 1 pads ``[{-~[-` -&(-+:-@/]``: each such character is a token.
        before = tokens
        written, tokens, _ = _split(line, 0, n, out_bytes, out_offsets, written, tokens, False)
        counts[row] = tokens - before
    return out_offsets[: tokens + 1], out_bytes[:written], counts, done


# --- token ids ---------------------------------------------------------------------------------


@kernel
def _token_hash(buf: np.ndarray, start: int, end: int) -> tuple[np.uint64, np.uint64]:
    """``(hash, key)`` of the string ``buf[start:end]``: a string of at most 8 bytes is its own
    key (its bytes, little-endian; with its length, equal keys are equal strings); a longer one
    has key 0 and a hash of its 8-byte words."""
    size = end - start
    key = np.uint64(0)
    if size <= 8:
        for k in range(end - 1, start - 1, -1):
            key = (key << _BYTE) | np.uint64(buf[k])
        h = (key ^ (np.uint64(size) * _MIX_LENGTH)) * _MIX
    else:
        h = np.uint64(size) * _MIX_LENGTH
        word = np.uint64(0)
        for k in range(start, end):
            word = (word << _BYTE) | np.uint64(buf[k])
            if (k - start) % 8 == 7:
                h = (h ^ word) * _MIX
                word = np.uint64(0)
        h = (h ^ word) * _MIX
    return h ^ (h >> _SHIFT), key


@kernel
def _same_bytes(buf: np.ndarray, start: int, old: np.ndarray, old_start: int, size: int) -> bool:
    for k in range(size):  # noqa: SIM110 - a loop numba compiles, not a generator
        if old[old_start + k] != buf[start + k]:
            return False
    return True


@kernel
def _find(slots: np.ndarray, hashes: np.ndarray, keys: np.ndarray, sizes: np.ndarray,
          first: np.ndarray, h: np.uint64, key: np.uint64, buf: np.ndarray, start: int,
          size: int, offsets_a: np.ndarray, bytes_a: np.ndarray, offsets_b: np.ndarray,
          bytes_b: np.ndarray) -> tuple[int, np.int64]:
    """``(id, slot)`` of the string ``buf[start:start + size]`` in the table, or ``(-1, the
    free slot where it goes)``."""
    mask = len(slots) - 1
    slot = np.int64(h & np.uint64(mask))
    count_a = len(offsets_a) - 1
    while slots[slot] >= 0:
        candidate = slots[slot]
        if hashes[candidate] == h and sizes[candidate] == size and keys[candidate] == key:
            if size <= 8:
                return candidate, slot
            seen = first[candidate]
            if seen < count_a:
                if _same_bytes(buf, start, bytes_a, offsets_a[seen], size):
                    return candidate, slot
            elif _same_bytes(buf, start, bytes_b, offsets_b[seen - count_a], size):
                return candidate, slot
        slot = (slot + 1) & mask
    return -1, slot


@kernel
def _grown(slots: np.ndarray, hashes: np.ndarray, n_ids: int) -> np.ndarray:
    """Twice the slots, every id rehashed into them."""
    capacity = 2 * len(slots)
    mask = capacity - 1
    grown = np.empty(capacity, dtype=np.int32)
    grown[:] = -1
    for known in range(n_ids):
        slot = np.int64(hashes[known] & np.uint64(mask))
        while grown[slot] >= 0:
            slot = (slot + 1) & mask
        grown[slot] = known
    return grown


@kernel
def intern_pair(offsets_a: np.ndarray, bytes_a: np.ndarray, offsets_b: np.ndarray,
                bytes_b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Dense ids of the strings of two buffers: equal bytes, equal ids (first seen, first id).

    Returns ``(ids_a, ids_b, first)``: ``first[i]`` is where id ``i`` first occurs, an index
    into ``a`` below ``len(offsets_a) - 1`` and into ``b`` (minus that) from there on. A string
    of at most 8 bytes is compared by its key (:func:`_token_hash`), a longer one byte by byte.
    """
    count_a, count_b = len(offsets_a) - 1, len(offsets_b) - 1
    total = count_a + count_b
    capacity = 1024
    while capacity < 2 * min(total, 1 << 16):
        capacity *= 2
    slots = np.empty(capacity, dtype=np.int32)
    slots[:] = -1
    hashes = np.empty(max(total, 1), dtype=np.uint64)
    keys = np.empty(max(total, 1), dtype=np.uint64)
    sizes = np.empty(max(total, 1), dtype=np.int64)
    first = np.empty(max(total, 1), dtype=np.int64)
    ids = (np.empty(count_a, dtype=np.int32), np.empty(count_b, dtype=np.int32))
    n_ids = 0
    for side in range(2):  # one buffer at a time: no array chosen per string
        offsets = offsets_a if side == 0 else offsets_b
        buf = bytes_a if side == 0 else bytes_b
        out = ids[side]
        base = 0 if side == 0 else count_a
        for index in range(len(offsets) - 1):
            start, end = offsets[index], offsets[index + 1]
            h, key = _token_hash(buf, start, end)
            found, slot = _find(slots, hashes, keys, sizes, first, h, key, buf, start,
                                end - start, offsets_a, bytes_a, offsets_b, bytes_b)
            if found < 0:
                found = n_ids
                slots[slot] = found
                hashes[found] = h
                keys[found] = key
                sizes[found] = end - start
                first[found] = base + index
                n_ids += 1
                if 2 * n_ids > len(slots):
                    slots = _grown(slots, hashes, n_ids)
            out[index] = found
    return ids[0], ids[1], first[:n_ids].copy()


@kernel
def gather_strings(offsets_a: np.ndarray, bytes_a: np.ndarray, offsets_b: np.ndarray,
                   bytes_b: np.ndarray, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The strings ``which`` (indices as :func:`intern_pair`'s ``first``) as string buffers."""
    count_a = len(offsets_a) - 1
    out_offsets = np.zeros(len(which) + 1, dtype=np.int64)
    for k in range(len(which)):
        at = which[k]
        size = offsets_a[at + 1] - offsets_a[at] if at < count_a else (
            offsets_b[at - count_a + 1] - offsets_b[at - count_a])
        out_offsets[k + 1] = out_offsets[k] + size
    out_bytes = np.empty(out_offsets[-1], dtype=np.uint8)
    for k in range(len(which)):
        at = which[k]
        buf = bytes_a if at < count_a else bytes_b
        start = offsets_a[at] if at < count_a else offsets_b[at - count_a]
        for j in range(out_offsets[k + 1] - out_offsets[k]):
            out_bytes[out_offsets[k] + j] = buf[start + j]
    return out_offsets, out_bytes


# --- from columns ------------------------------------------------------------------------------


def row_offsets(counts: np.ndarray) -> np.ndarray:
    """Offsets (``int64``, one more than rows) of rows holding ``counts`` items each."""
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


def _flat_tokens(tokens: pl.Series) -> tuple[pl.Series, np.ndarray]:
    """The tokens of a ``List[String]`` column in row order, and each row's count (0 for null)."""
    counts = tokens.list.len().fill_null(0).cast(pl.Int64).to_numpy()
    values = tokens.explode(empty_as_null=False, keep_nulls=False)
    if values.null_count() or len(values) != int(counts.sum()):
        raise ValueError("token lists must not contain null tokens")
    return values.cast(pl.String), counts


def column_buffers(texts: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`~pipeline.text.kernels.buffers.string_buffers`, read-only (:func:`frozen`)."""
    offsets, data, valid = string_buffers(texts)
    return frozen(offsets), frozen(data), valid


def token_ids_of_lists(hyp: pl.Series, ref: pl.Series) -> TokenIds:
    """:class:`TokenIds` of two ``List[String]`` columns (a null list has no tokens)."""
    hyp_values, hyp_counts = _flat_tokens(hyp)
    ref_values, ref_counts = _flat_tokens(ref)
    hyp_offsets, hyp_bytes, _ = column_buffers(hyp_values)
    ref_offsets, ref_bytes, _ = column_buffers(ref_values)
    hyp_ids, ref_ids, first = intern_pair(hyp_offsets, hyp_bytes, ref_offsets, ref_bytes)
    return TokenIds(hyp_ids, row_offsets(hyp_counts), ref_ids, row_offsets(ref_counts),
                    max(len(first), 1))


def empty_token_ids(rows: int) -> TokenIds:
    """:class:`TokenIds` of ``rows`` rows without tokens."""
    offsets = np.zeros(rows + 1, dtype=np.int64)
    return TokenIds(_EMPTY_IDS, offsets, _EMPTY_IDS, offsets, 1)


# --- the score from the statistics ---------------------------------------------------------------

#: ``sacrebleu.utils.my_log(0.0)``.
LOG_ZERO = -9999999999.0


@kernel
def sentence_bleu_scores(matches: np.ndarray, totals: np.ndarray, hyp_len: np.ndarray,
                         ref_len: np.ndarray, effective_order: bool) -> np.ndarray:
    """``BLEU.compute_bleu(..., smooth_method="exp").score / 100`` of each row, at most 1.0.

    ``matches`` and ``totals`` are ``(rows, max_order)`` int64 arrays of clipped matches and
    n-gram counts; the float operations are sacrebleu 2.x's, in its order (exponential smoothing,
    ``my_log``, the left-to-right ``sum`` of the logs, the brevity penalty), so the values are
    bit-identical; ``/ 100`` is correctly rounded.
    """
    rows, order = matches.shape
    out = np.empty(rows, dtype=np.float64)
    precisions = np.empty(order, dtype=np.float64)
    for row in range(rows):
        matched_any = False
        for n in range(order):
            matched_any = matched_any or matches[row, n] != 0
        if not matched_any:  # sacrebleu's early stop: no match of any order scores 0
            out[row] = 0.0
            continue
        smooth_mteval = 1.0
        eff_order = order
        for n in range(order):
            precisions[n] = 0.0
        for n in range(order):
            total = totals[row, n]
            if total == 0:
                break
            if effective_order:
                eff_order = n + 1
            if matches[row, n] == 0:
                smooth_mteval *= 2.0
                precisions[n] = 100.0 / (smooth_mteval * total)
            else:
                precisions[n] = 100.0 * matches[row, n] / total
        log_sum = 0.0
        for n in range(eff_order):
            log_sum += LOG_ZERO if precisions[n] == 0.0 else math.log(precisions[n])
        c, r = hyp_len[row], ref_len[row]
        if c >= r:
            bp = 1.0
        elif c > 0:
            bp = math.exp(1.0 - r / c)
        else:
            bp = 0.0
        out[row] = min(bp * math.exp(log_sum / eff_order) / 100.0, 1.0)
    return out
