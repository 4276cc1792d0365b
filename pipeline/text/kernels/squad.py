"""SQuAD v2 tokens and multiset overlaps as compiled kernels over whole columns.

Reference: ``evaluate-v2.0.py``, ``get_tokens`` (``normalize_answer(s).split()``) and the
``Counter(gold) & Counter(pred)`` of ``compute_f1``. The kernels read the Arrow buffers of a
column (:mod:`pipeline.text.kernels.buffers`) in one pass; the polars expressions of
:mod:`pipeline.text.tokenize` wrap them with ``map_batches``.

Only pure ASCII rows are tokenized here. There CPython's ``str.lower`` maps ``A-Z`` to ``a-z``
and nothing else, ``re``'s ``\\w`` is ``[A-Za-z0-9_]`` and ``str.isspace`` is
``\\t\\n\\v\\f\\r``, ``\\x1c``-``\\x1f`` and the space; a row holding any other byte is reported
as *wide* and left to the polars expression of the full Unicode rules.
"""

from __future__ import annotations

import string

import numpy as np
import polars as pl
import pyarrow as pa

from pipeline.text.kernels.buffers import arrow_array, kernel, string_buffers, with_nulls

# Byte classes of the ASCII path, after lowercasing; any byte of a non-ASCII character is wide.
_SPACE, _WORD, _OTHER, _DELETED, _WIDE = 0, 1, 2, 3, 4


def _byte_tables() -> tuple[np.ndarray, np.ndarray]:
    classes = np.full(256, _WIDE, dtype=np.uint8)
    classes[:128] = _OTHER
    for ch in "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f ":
        classes[ord(ch)] = _SPACE
    for ch in string.ascii_letters + string.digits:
        classes[ord(ch)] = _WORD
    for ch in string.punctuation:  # removed before articles are looked for ("_" too)
        classes[ord(ch)] = _DELETED
    lower = np.arange(256, dtype=np.uint8)
    lower[ord("A") : ord("Z") + 1] += ord("a") - ord("A")
    return classes, lower


_CLASSES, _LOWER = _byte_tables()
_SMALL_PAIR = 64  # rows with at most this many token pairs compare every pair


@kernel
def _is_article(out: np.ndarray, start: int, length: int) -> bool:
    if length == 1:
        return out[start] == 97  # a
    if length == 2:
        return out[start] == 97 and out[start + 1] == 110  # an
    if length == 3:
        return out[start] == 116 and out[start + 1] == 104 and out[start + 2] == 101  # the
    return False


@kernel
def ascii_tokens(
    offsets: np.ndarray, data: np.ndarray, valid: np.ndarray, classes: np.ndarray,
    lower: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``get_tokens`` of every valid pure ASCII row: ``(list_offsets, token_offsets, bytes,
    wide)``. Rows that are null or wide (hold a non-ASCII byte) get no tokens.

    A token is a maximal run of characters that are not whitespace once punctuation is deleted
    and each whole word ``a``/``an``/``the`` replaced by a space; words are written as they
    come and taken back when their run turns out to be an article.
    """
    n = len(offsets) - 1
    total = offsets[n] - offsets[0]
    list_offsets = np.empty(n + 1, dtype=np.int64)
    list_offsets[0] = 0
    token_offsets = np.empty(total + 1, dtype=np.int64)
    token_offsets[0] = 0
    out = np.empty(total, dtype=np.uint8)
    wide = np.zeros(n, dtype=np.bool_)
    n_tokens = 0
    w = 0
    for i in range(n):
        if valid[i]:
            row_tokens = n_tokens
            row_w = w
            token_start = -1
            word_start = -1
            end = offsets[i + 1]
            for j in range(offsets[i], end + 1):
                c = 32
                kind = _SPACE
                if j < end:
                    c = data[j]
                    kind = classes[c]
                    if kind == _DELETED:
                        continue
                    if kind == _WIDE:  # left to the Unicode rules: take back what was written
                        wide[i] = True
                        n_tokens = row_tokens
                        w = row_w
                        break
                if kind != _WORD and word_start >= 0:
                    if _is_article(out, word_start, w - word_start):
                        w = word_start
                        if token_start >= 0 and w > token_start:
                            n_tokens += 1
                            token_offsets[n_tokens] = w
                        token_start = -1
                    word_start = -1
                if kind == _SPACE:
                    if token_start >= 0:
                        n_tokens += 1
                        token_offsets[n_tokens] = w
                        token_start = -1
                else:
                    if token_start < 0:
                        token_start = w
                    if kind == _WORD and word_start < 0:
                        word_start = w
                    out[w] = lower[c]
                    w += 1
        list_offsets[i + 1] = n_tokens
    return list_offsets, token_offsets[: n_tokens + 1], out[:w], wide


def squad_tokens_batch(text: pl.Series) -> tuple[pl.Series, np.ndarray]:
    """``get_tokens`` of the pure ASCII rows of a String column (``List[String]``, null on the
    other rows) and the mask of the non-null rows it left out (non-ASCII)."""
    offsets, data, valid = string_buffers(text)
    list_offsets, token_offsets, out, wide = ascii_tokens(offsets, data, valid, _CLASSES, _LOWER)
    tokens = pa.LargeStringArray.from_buffers(
        len(token_offsets) - 1, pa.py_buffer(token_offsets), pa.py_buffer(out)
    )
    missing = ~valid | wide
    lists = pa.LargeListArray.from_arrays(
        arrow_array(list_offsets), tokens,
        mask=arrow_array(missing) if bool(missing.any()) else None,
    )
    return pl.Series(text.name, lists, dtype=pl.List(pl.String)), wide


@kernel
def _same_bytes(
    data_a: np.ndarray, a0: int, a1: int, data_b: np.ndarray, b0: int, b1: int
) -> bool:
    if a1 - a0 != b1 - b0:
        return False
    for k in range(a1 - a0):  # noqa: SIM110 (a loop, not a generator, compiles in numba)
        if data_a[a0 + k] != data_b[b0 + k]:
            return False
    return True


@kernel
def _fnv1a(data: np.ndarray, start: int, end: int) -> np.uint64:
    h = np.uint64(14695981039346656037)
    for k in range(start, end):
        h = (h ^ np.uint64(data[k])) * np.uint64(1099511628211)
    return h


@kernel
def _pair_overlap(
    lists_a: np.ndarray, offsets_a: np.ndarray, data_a: np.ndarray, a0: int, a1: int,
    lists_b: np.ndarray, offsets_b: np.ndarray, data_b: np.ndarray, b0: int, b1: int,
    used: np.ndarray,
) -> int:
    """Multiset overlap of tokens ``a0:a1`` and ``b0:b1``: each token of ``a`` takes the first
    equal token of ``b`` not taken yet (the Counter intersection's size)."""
    used[: b1 - b0] = False
    count = 0
    for x in range(a0, a1):
        for y in range(b0, b1):
            if not used[y - b0] and _same_bytes(
                data_a, offsets_a[x], offsets_a[x + 1], data_b, offsets_b[y], offsets_b[y + 1]
            ):
                used[y - b0] = True
                count += 1
                break
    return count


@kernel
def _order_by_hash(hashes: np.ndarray) -> np.ndarray:
    """The positions of ``hashes`` in ascending order (Shell sort: ``np.argsort`` compiles
    numba's quicksort, seconds of the first run, for lists of a few hundred tokens)."""
    n = len(hashes)
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        order[i] = i
    gap = n // 2
    while gap > 0:
        for i in range(gap, n):
            item = order[i]
            key = hashes[item]
            j = i
            while j >= gap and hashes[order[j - gap]] > key:
                order[j] = order[j - gap]
                j -= gap
            order[j] = item
        gap //= 2
    return order


@kernel
def _row_overlap(
    lists_a: np.ndarray, offsets_a: np.ndarray, data_a: np.ndarray, a0: int, a1: int,
    lists_b: np.ndarray, offsets_b: np.ndarray, data_b: np.ndarray, b0: int, b1: int,
    used: np.ndarray,
) -> int:
    """Multiset overlap of tokens ``a0:a1`` and ``b0:b1`` (``used`` holds ``b1 - b0``)."""
    if a1 == a0 or b1 == b0:
        return 0
    if (a1 - a0) * (b1 - b0) <= _SMALL_PAIR:
        return _pair_overlap(lists_a, offsets_a, data_a, a0, a1,
                             lists_b, offsets_b, data_b, b0, b1, used)
    hash_a = np.empty(a1 - a0, dtype=np.uint64)
    for x in range(a0, a1):
        hash_a[x - a0] = _fnv1a(data_a, offsets_a[x], offsets_a[x + 1])
    hash_b = np.empty(b1 - b0, dtype=np.uint64)
    for y in range(b0, b1):
        hash_b[y - b0] = _fnv1a(data_b, offsets_b[y], offsets_b[y + 1])
    order_a = _order_by_hash(hash_a)
    order_b = _order_by_hash(hash_b)
    p = 0
    q = 0
    count = 0
    while p < len(order_a) and q < len(order_b):
        ha = hash_a[order_a[p]]
        hb = hash_b[order_b[q]]
        if ha < hb:
            p += 1
        elif hb < ha:
            q += 1
        else:
            p_end = p
            while p_end < len(order_a) and hash_a[order_a[p_end]] == ha:
                p_end += 1
            q_end = q
            while q_end < len(order_b) and hash_b[order_b[q_end]] == hb:
                q_end += 1
            used[: q_end - q] = False
            for u in range(p, p_end):
                x = a0 + order_a[u]
                for v in range(q, q_end):
                    y = b0 + order_b[v]
                    if not used[v - q] and _same_bytes(
                        data_a, offsets_a[x], offsets_a[x + 1],
                        data_b, offsets_b[y], offsets_b[y + 1],
                    ):
                        used[v - q] = True
                        count += 1
                        break
            p = p_end
            q = q_end
    return count


@kernel
def multiset_overlaps(
    lists_a: np.ndarray, offsets_a: np.ndarray, data_a: np.ndarray,
    lists_b: np.ndarray, offsets_b: np.ndarray, data_b: np.ndarray,
) -> np.ndarray:
    """``sum((Counter(a) & Counter(b)).values())`` of each row's token lists.

    Small rows compare every pair. Larger ones sort each side by a 64-bit hash of the token;
    tokens of one hash on both sides are matched by their bytes, so a collision costs time,
    never a wrong count.
    """
    n = len(lists_a) - 1
    result = np.zeros(n, dtype=np.int64)
    longest = 1
    for i in range(n):
        longest = max(longest, lists_b[i + 1] - lists_b[i], lists_a[i + 1] - lists_a[i])
    used = np.zeros(longest, dtype=np.bool_)
    for i in range(n):
        result[i] = _row_overlap(lists_a, offsets_a, data_a, lists_a[i], lists_a[i + 1],
                                 lists_b, offsets_b, data_b, lists_b[i], lists_b[i + 1], used)
    return result


@kernel
def _same_tokens(
    offsets_a: np.ndarray, data_a: np.ndarray, a0: int, a1: int,
    offsets_b: np.ndarray, data_b: np.ndarray, b0: int, b1: int,
) -> bool:
    if a1 - a0 != b1 - b0:
        return False
    for k in range(a1 - a0):
        if not _same_bytes(data_a, offsets_a[a0 + k], offsets_a[a0 + k + 1],
                           data_b, offsets_b[b0 + k], offsets_b[b0 + k + 1]):
            return False
    return True


@kernel
def _f1(n_pred: int, n_ref: int, n_same: int) -> float:
    """``compute_f1`` from counts, in the float operations of ``answer.f1_from_counts``."""
    if n_pred == 0 or n_ref == 0:
        return 1.0 if n_pred == n_ref else 0.0
    if n_same == 0:
        return 0.0
    precision = n_same / n_pred
    recall = n_same / n_ref
    return (2.0 * precision * recall) / (precision + recall)


@kernel
def squad_em_f1(
    resp_lists: np.ndarray, resp_offsets: np.ndarray, resp_data: np.ndarray,
    resp_valid: np.ndarray, resp_wide: np.ndarray,
    ref_lists: np.ndarray, ref_offsets: np.ndarray, ref_data: np.ndarray,
    ref_wide: np.ndarray,
    alt_rows: np.ndarray, alt_lists: np.ndarray, alt_offsets: np.ndarray,
    alt_data: np.ndarray, alt_wide: np.ndarray, n_alternatives: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``get_raw_scores``' EM and F1 of each row from the tokens of :func:`ascii_tokens`:
    ``(em, f1, handled)``.

    The candidates of row ``i`` are the reference, then the first ``n_alternatives`` entries
    ``alt_rows[i]:alt_rows[i + 1]`` of the alternatives. A null or empty candidate is skipped;
    with none left the score is against ``""``: 1 when the response has no tokens, else 0. A row
    whose response or any candidate is wide is not handled (left to the Unicode rules); a null
    response is handled and its scores are meaningless (null to the caller).
    """
    n = len(resp_lists) - 1
    em = np.zeros(n, dtype=np.int8)
    f1 = np.zeros(n, dtype=np.float64)
    handled = np.ones(n, dtype=np.bool_)
    longest = 1
    for i in range(n):
        longest = max(longest, ref_lists[i + 1] - ref_lists[i])
    for j in range(len(alt_lists) - 1):
        longest = max(longest, alt_lists[j + 1] - alt_lists[j])
    used = np.zeros(longest, dtype=np.bool_)
    for i in range(n):
        if not resp_valid[i]:
            continue
        alt_end = min(alt_rows[i + 1], alt_rows[i] + n_alternatives)
        if resp_wide[i] or ref_wide[i]:
            handled[i] = False
            continue
        for j in range(alt_rows[i], alt_end):
            if alt_wide[j]:
                handled[i] = False
                break
        if not handled[i]:
            continue
        a0, a1 = resp_lists[i], resp_lists[i + 1]
        best_em = -1
        best_f1 = -1.0
        for c in range(alt_rows[i] - 1, alt_end):
            if c < alt_rows[i]:  # the reference
                lists_b, offsets_b, data_b = ref_lists, ref_offsets, ref_data
                b0, b1 = ref_lists[i], ref_lists[i + 1]
            else:
                lists_b, offsets_b, data_b = alt_lists, alt_offsets, alt_data
                b0, b1 = alt_lists[c], alt_lists[c + 1]
            if b1 == b0:
                continue
            same = _same_tokens(resp_offsets, resp_data, a0, a1, offsets_b, data_b, b0, b1)
            best_em = max(best_em, 1 if same else 0)
            n_same = _row_overlap(resp_lists, resp_offsets, resp_data, a0, a1,
                                  lists_b, offsets_b, data_b, b0, b1, used)
            best_f1 = max(best_f1, _f1(a1 - a0, b1 - b0, n_same))
        if best_em < 0:
            empty = a1 == a0
            em[i] = 1 if empty else 0
            f1[i] = 1.0 if empty else 0.0
        else:
            em[i] = best_em
            f1[i] = best_f1
    return em, f1, handled


def list_buffers(column: pl.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(list_offsets, valid, offsets, data)`` of a ``List[String]`` column: row ``i`` holds
    the strings ``list_offsets[i]:list_offsets[i + 1]`` of the flattened ``(offsets, data)``
    (none for a null row)."""
    lengths = column.list.len().fill_null(0).to_numpy().astype(np.int64, copy=False)
    list_offsets = np.zeros(len(column) + 1, dtype=np.int64)
    np.cumsum(lengths, out=list_offsets[1:])
    valid = column.is_not_null().to_numpy()
    values = column.explode(empty_as_null=False, keep_nulls=False)
    offsets, data, _ = string_buffers(values)
    return list_offsets, valid, offsets, data


def multiset_overlap_batch(left: pl.Series, right: pl.Series) -> pl.Series:
    """Multiset overlap (Int64) of two ``List[String]`` columns; null where either is null."""
    lists_a, valid_a, offsets_a, data_a = list_buffers(left)
    lists_b, valid_b, offsets_b, data_b = list_buffers(right)
    counts = multiset_overlaps(lists_a, offsets_a, data_a, lists_b, offsets_b, data_b)
    return with_nulls(left.name, counts, valid_a & valid_b)


def _ascii_token_buffers(
    text: pl.Series,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(list_offsets, token_offsets, bytes, valid, wide)`` of a String column's tokens."""
    offsets, data, valid = string_buffers(text)
    list_offsets, token_offsets, out, wide = ascii_tokens(offsets, data, valid, _CLASSES, _LOWER)
    return list_offsets, token_offsets, out, valid, wide


def squad_em_f1_batch(
    response: pl.Series, reference: pl.Series, references: pl.Series | None,
    n_alternatives: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(em, f1, valid, handled)`` of :func:`squad_em_f1` over a String response, a String
    reference and a ``List[String]`` of alternatives (None: no alternatives); ``valid`` is
    False where the response is null."""
    resp_lists, resp_offsets, resp_data, resp_valid, resp_wide = _ascii_token_buffers(response)
    ref_lists, ref_offsets, ref_data, _, ref_wide = _ascii_token_buffers(reference)
    if references is None or n_alternatives <= 0:
        alt_rows = np.zeros(len(response) + 1, dtype=np.int64)
        references = pl.Series([], dtype=pl.List(pl.String))
        n_alternatives = 0
    else:
        lengths = references.list.len().fill_null(0).to_numpy().astype(np.int64, copy=False)
        alt_rows = np.zeros(len(references) + 1, dtype=np.int64)
        np.cumsum(lengths, out=alt_rows[1:])
    values = references.explode(empty_as_null=False, keep_nulls=False)
    alt_lists, alt_offsets, alt_data, _, alt_wide = _ascii_token_buffers(values)
    em, f1, handled = squad_em_f1(
        resp_lists, resp_offsets, resp_data, resp_valid, resp_wide,
        ref_lists, ref_offsets, ref_data, ref_wide,
        alt_rows, alt_lists, alt_offsets, alt_data, alt_wide, n_alternatives,
    )
    return em, f1, resp_valid, handled
