"""Language detection as one compiled pass over the reference and response buffers.

Reference: the polars stages of :func:`pipeline.text.language.reference_language_stages` (script
counts, function-word points and letters, the order ties are broken in); :func:`detect` returns
the same code for every row. It knows no language: :mod:`pipeline.text.language` passes its
tables.

- ``classes``: one ``uint16`` per code point: the index + 1 of the script class it belongs to
  (:data:`SCRIPT`, 0 for none), :data:`OTHER_SCRIPT` (a character of a script other than
  Latin, Common or Inherited), :data:`LETTER` (``\\p{L}``) and :data:`KNOWN`. The caller fills
  it from the regex classes of the reference; a code point not yet :data:`KNOWN` is reported
  back (``unknown``) and its row left pending, to be read again once it is.
- ``letter_marks``: for each code point below its length, a bit per language whose letter it is.
- :class:`WordTable`: the function words (and the English ones capitalized) with their points
  per language, keyed by their UTF-8 bytes packed in 64 bits (no word is longer than 8 bytes).

A word is a maximal run of letters; the reference and the response never share one (the
reference joins them with a space). Letters count only in words that are not function words.

Three paths, the cheapest first: an ASCII row is screened without a branch per word (a row
without a word that may be foreign is English, or undetermined without a Latin letter); an
ASCII row with one has its words looked up; any other row is decoded and counted in full.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from pipeline.text.kernels.buffers import kernel

#: Bits of ``classes``: the script class index + 1 (0: none of the counted scripts).
SCRIPT = 0x000F
#: Bit of ``classes``: a character of a script other than Latin (not Common or Inherited).
OTHER_SCRIPT = 0x0010
#: Bit of ``classes``: a letter (``\p{L}``).
LETTER = 0x0020
#: Bit of ``classes``: the code point has been classified.
KNOWN = 0x8000
#: Code points of Unicode.
CODE_POINTS = 0x110000
#: The code of a row :func:`detect` does not read (null).
NOT_READ = -1
#: The longest function word in UTF-8 bytes: a key of :class:`WordTable`.
WORD_BYTES = 8

# Helpers called once per word or text: compiled on their own (LLVM inlines them where it
# pays; numba-level inlining, inline="always", made the first compile seconds longer).
_inline = numba.njit(cache=True, nogil=True)
_MULTIPLIER = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing of the word table's keys
_SHIFT = np.uint64(40)
# The screen's filter: a rolling hash of each word (h * 33 + byte), its low 16 bits.
_FILTER_MASK = 0xFFFF
# Bits of _screen: not ASCII, a letter of Latin script, a word that may be foreign.
_WIDE, _LATIN, _CANDIDATE = 1, 2, 4


class WordTable(NamedTuple):
    """Function words for :func:`detect`: open addressing over ``keys`` (the packed bytes, 0
    empty; its length a power of two), ``slot_words`` the index of the word in each slot,
    ``points[j]`` word ``j``'s points per language, ``foreign[j]`` whether English does not
    outweigh it; ``foreign_filter[h]`` is 1 where a foreign word's rolling hash is ``h``
    (most rows have no word that passes it, and are looked up no further)."""

    keys: np.ndarray
    slot_words: np.ndarray
    points: np.ndarray
    foreign: np.ndarray
    foreign_filter: np.ndarray


@_inline
def _slot(key: np.uint64, mask: int) -> int:
    return int(np.int64((key * _MULTIPLIER) >> _SHIFT)) & mask


@_inline
def _lookup(key: np.uint64, keys: np.ndarray, slot_words: np.ndarray) -> int:
    """The index of the word packed in ``key``, -1 if it is none."""
    mask = len(keys) - 1
    slot = _slot(key, mask)
    while keys[slot] != 0:
        if keys[slot] == key:
            return slot_words[slot]
        slot = (slot + 1) & mask
    return -1


def _key(word: bytes) -> np.uint64:
    return np.uint64(int.from_bytes(word, "little"))


def _rolling_hash(word: bytes) -> int:
    h = 0
    for b in word:
        h = h * 33 + b
    return h & _FILTER_MASK


def word_table(words: list[str], points: np.ndarray, foreign: np.ndarray) -> WordTable:
    """A :class:`WordTable` of ``words`` (distinct, at most :data:`WORD_BYTES` bytes) with
    their ``points`` (one row a word, one column a language) and ``foreign`` flags."""
    encoded = [w.encode() for w in words]
    if len(set(encoded)) != len(encoded) or not all(0 < len(w) <= WORD_BYTES for w in encoded):
        raise ValueError(f"function words must be distinct, of 1 to {WORD_BYTES} bytes")
    size = 1 << max(4, (4 * len(encoded) - 1).bit_length())
    keys = np.zeros(size, dtype=np.uint64)
    slot_words = np.full(size, -1, dtype=np.int32)
    foreign_filter = np.zeros(_FILTER_MASK + 1, dtype=np.uint8)
    for j, word in enumerate(encoded):
        # _slot in Python: no compiled function is loaded at import.
        slot = (int(_key(word)) * int(_MULTIPLIER) % (1 << 64)) >> int(_SHIFT) & (size - 1)
        while keys[slot]:
            slot = (slot + 1) & (size - 1)
        keys[slot], slot_words[slot] = _key(word), j
        if foreign[j]:
            foreign_filter[_rolling_hash(word)] = 1
    if foreign_filter[0]:  # the hash between words: every row would pass
        raise ValueError("a foreign word hashes to 0; change the screen's hash")
    return WordTable(keys, slot_words, np.ascontiguousarray(points, dtype=np.int64),
                     np.asarray(foreign, dtype=np.bool_), foreign_filter)


@_inline
def _function_word_language(points: np.ndarray, letters: np.ndarray, min_score: int,
                            point: int) -> int:
    """The first language other than English (index 0) with the highest score, where that is
    at least ``min_score`` points and more than English's; 0 elsewhere."""
    top = -1
    best = 0
    for lang in range(1, len(points)):
        score = points[lang] * point + min(letters[lang], point - 1)
        if score > top:
            top, best = score, lang
    if top // point >= min_score and top // point > points[0]:
        return best
    return 0


@_inline
def _screen(data: np.ndarray, start: int, end: int, ascii: np.ndarray,
            foreign_filter: np.ndarray) -> int:
    """The bits of ``data[start:end]``: ``_WIDE`` (a byte that is not ASCII), ``_LATIN`` (a
    letter of Latin script), ``_CANDIDATE`` (a word whose hash passes the filter). No branch
    but the loop's: where words end no branch predictor can tell."""
    high = 0
    bits = 0
    candidate = 0
    h = 0
    for p in range(start, end):
        b = int(data[p])
        high |= b
        t = ascii[b]
        bits |= t
        candidate |= foreign_filter[h & _FILTER_MASK] & ~t  # a word ends at a non-letter
        h = (h * 33 + b) & -(t & 1)
    candidate |= foreign_filter[h & _FILTER_MASK]
    return (high >> 7) & _WIDE | bits & _LATIN | (candidate & 1) * _CANDIDATE


@_inline
def _ascii_points(data: np.ndarray, start: int, end: int, ascii: np.ndarray, keys: np.ndarray,
                  slot_words: np.ndarray, word_points: np.ndarray, word_foreign: np.ndarray,
                  points: np.ndarray) -> bool:
    """Add the points of the function words of ASCII ``data[start:end]`` to ``points``;
    whether one of them is foreign."""
    foreign = False
    word_start = -1
    key = np.uint64(0)
    for p in range(start, end + 1):
        b = data[p] if p < end else np.uint8(32)
        if ascii[b] & 1:
            if word_start < 0:
                word_start = p
                key = np.uint64(0)
            if p - word_start < WORD_BYTES:
                key |= np.uint64(b) << np.uint64(8 * (p - word_start))
        elif word_start >= 0:
            if p - word_start <= WORD_BYTES:
                j = _lookup(key, keys, slot_words)
                if j >= 0:
                    for lang in range(len(points)):
                        points[lang] += word_points[j, lang]
                    foreign = foreign or word_foreign[j]
            word_start = -1
    return foreign


@kernel
def _read_row(i: int, ref_offsets: np.ndarray, ref_data: np.ndarray, ref_valid: np.ndarray,
              resp_offsets: np.ndarray, resp_data: np.ndarray, resp_valid: np.ndarray,
              classes: np.ndarray, letter_marks: np.ndarray, keys: np.ndarray,
              slot_words: np.ndarray, word_points: np.ndarray, word_foreign: np.ndarray,
              script_codes: np.ndarray, han: int, kana: int, hangul: int, latin: int,
              undetermined: int, min_score: int, point: int, counts: np.ndarray,
              points: np.ndarray, letters: np.ndarray, word_letters: np.ndarray,
              wide: np.ndarray, pending: np.ndarray, unknown: np.ndarray) -> int:
    """The code of row ``i`` read with every count (its scripts, each word's points, the
    letters of the others), :data:`NOT_READ` where it is pending; sets ``wide[i]``,
    ``pending[i]`` and ``unknown``. ``counts`` ... ``word_letters`` are scratch space."""
    n_scripts = len(script_codes)
    n_marks = len(letter_marks)
    n_languages = word_points.shape[1]
    for s in range(n_scripts):
        counts[s] = 0
    for lang in range(n_languages):
        points[lang] = 0
        letters[lang] = 0
        word_letters[lang] = 0
    other = False
    foreign = False
    unseen = False
    for part in range(2):
        offsets, data, valid = ref_offsets, ref_data, ref_valid
        if part == 1:
            offsets, data, valid = resp_offsets, resp_data, resp_valid
        if not valid[i]:
            continue
        end = offsets[i + 1]
        word_start = -1
        key = np.uint64(0)
        marked = False
        p = offsets[i]
        while True:
            letter = False
            size = 1
            cp = np.int64(0)
            if p < end:
                b = data[p]
                cp = np.int64(b)
                if b >= 0x80:
                    wide[i] = True
                    if b < 0xE0:
                        size, cp = 2, np.int64(b & 0x1F)
                    elif b < 0xF0:
                        size, cp = 3, np.int64(b & 0x0F)
                    else:
                        size, cp = 4, np.int64(b & 0x07)
                    for k in range(1, size):
                        cp = (cp << 6) | np.int64(data[p + k] & 0x3F)
                c = classes[cp]
                if c & KNOWN == 0:
                    unknown[cp] = True
                    unseen = True
                else:
                    if c & SCRIPT:
                        counts[(c & SCRIPT) - 1] += 1
                    other = other or (c & OTHER_SCRIPT) != 0
                    letter = (c & LETTER) != 0
            if letter:
                if word_start < 0:
                    word_start = p
                    key = np.uint64(0)
                for k in range(size):
                    if p + k - word_start < WORD_BYTES:
                        key |= np.uint64(data[p + k]) << np.uint64(8 * (p + k - word_start))
                if cp < n_marks and letter_marks[cp]:
                    marked = True
                    for lang in range(n_languages):
                        word_letters[lang] += letter_marks[cp] >> lang & 1
            elif word_start >= 0:
                j = -1
                if p - word_start <= WORD_BYTES:
                    j = _lookup(key, keys, slot_words)
                if j >= 0:
                    for lang in range(n_languages):
                        points[lang] += word_points[j, lang]
                    foreign = foreign or word_foreign[j]
                if marked:
                    for lang in range(n_languages):
                        if j < 0:
                            letters[lang] += word_letters[lang]
                        word_letters[lang] = 0
                    marked = False
                word_start = -1
            if p >= end:
                break
            p += size
    if unseen:
        pending[i] = True
        return NOT_READ
    # By script where the row holds a character of a script other than Latin.
    code = script_codes[latin] if counts[latin] > 0 else undetermined
    if other:
        most = 0
        for s in range(n_scripts):
            most = max(most, counts[s])
        if most == 0:
            code = undetermined
        elif counts[han] > 0 and counts[latin] == most:
            code = script_codes[han]
            if counts[kana] > 0:
                code = script_codes[kana]
            elif counts[hangul] > 0:
                code = script_codes[hangul]
        elif counts[han] == most and counts[kana] > 0:
            code = script_codes[kana]
        else:
            for s in range(n_scripts):
                if counts[s] == most:
                    code = script_codes[s]
                    break
    # A Latin-script row by its function words, where it holds one English does not outweigh.
    if code == 0 and foreign:
        code = _function_word_language(points, letters, min_score, point)
    return code


@kernel
def detect(ref_offsets: np.ndarray, ref_data: np.ndarray, ref_valid: np.ndarray,
           resp_offsets: np.ndarray, resp_data: np.ndarray, resp_valid: np.ndarray,
           rows: np.ndarray, classes: np.ndarray, letter_marks: np.ndarray, keys: np.ndarray,
           slot_words: np.ndarray, word_points: np.ndarray, word_foreign: np.ndarray,
           foreign_filter: np.ndarray, script_codes: np.ndarray, han: int, kana: int,
           hangul: int, latin: int, undetermined: int, min_score: int, point: int
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(codes, wide, pending, unknown)`` of the rows where ``rows`` is True.

    ``codes``: the index of the row's language (the languages of ``word_points``' columns
    first, English 0; then ``script_codes`` of each script class; ``undetermined``),
    :data:`NOT_READ` where ``rows`` is False or the row is pending. ``wide``: the row holds a
    byte other than ASCII. ``pending``: the row holds a code point not yet in ``classes``
    (those are True in ``unknown``).

    Script classes are ``han``, ``kana``, ``hangul`` ... ``latin`` by index; a language scores
    its points times ``point`` plus its letters (at most ``point - 1``).
    """
    n = len(rows)
    n_languages = word_points.shape[1]
    codes = np.full(n, NOT_READ, dtype=np.int8)
    wide = np.zeros(n, dtype=np.bool_)
    pending = np.zeros(n, dtype=np.bool_)
    unknown = np.zeros(CODE_POINTS, dtype=np.bool_)
    counts = np.zeros(len(script_codes), dtype=np.int64)
    points = np.zeros(n_languages, dtype=np.int64)
    letters = np.zeros(n_languages, dtype=np.int64)
    word_letters = np.zeros(n_languages, dtype=np.int64)
    # The ASCII paths' table (bit 0: a letter, bit 1: of Latin script; 0 past ASCII), where
    # every ASCII character is classified and no ASCII letter counts for a language.
    ascii = np.zeros(256, dtype=np.int64)
    screened = True
    for b in range(128):
        c = classes[b]
        screened = screened and (c & KNOWN) != 0 and (b >= len(letter_marks) or
                                                      letter_marks[b] == 0)
        ascii[b] = ((c & LETTER) != 0) | (((c & SCRIPT) == latin + 1) << 1)
    for i in range(n):
        if not rows[i]:
            continue
        seen = _WIDE
        if screened:
            seen = 0
            if ref_valid[i]:
                seen |= _screen(ref_data, ref_offsets[i], ref_offsets[i + 1], ascii,
                                foreign_filter)
            if resp_valid[i]:
                seen |= _screen(resp_data, resp_offsets[i], resp_offsets[i + 1], ascii,
                                foreign_filter)
        if seen & _WIDE:
            codes[i] = _read_row(
                i, ref_offsets, ref_data, ref_valid, resp_offsets, resp_data, resp_valid,
                classes, letter_marks, keys, slot_words, word_points, word_foreign,
                script_codes, han, kana, hangul, latin, undetermined, min_score, point, counts,
                points, letters, word_letters, wide, pending, unknown,
            )
            continue
        code = script_codes[latin] if seen & _LATIN else undetermined
        if code == 0 and seen & _CANDIDATE:
            for lang in range(n_languages):
                points[lang] = 0
                letters[lang] = 0
            foreign = False
            if ref_valid[i]:
                foreign = _ascii_points(ref_data, ref_offsets[i], ref_offsets[i + 1], ascii,
                                        keys, slot_words, word_points, word_foreign, points)
            if resp_valid[i]:
                foreign = _ascii_points(
                    resp_data, resp_offsets[i], resp_offsets[i + 1], ascii, keys, slot_words,
                    word_points, word_foreign, points,
                ) or foreign
            if foreign:
                code = _function_word_language(points, letters, min_score, point)
        codes[i] = code
    return codes, wide, pending, unknown


@kernel
def code_strings(codes: np.ndarray, name_offsets: np.ndarray, names: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """``(offsets, data)`` of a String column holding name ``codes[i]`` (empty where the code
    is :data:`NOT_READ`)."""
    n = len(codes)
    offsets = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        size = 0
        if codes[i] >= 0:
            size = name_offsets[codes[i] + 1] - name_offsets[codes[i]]
        offsets[i + 1] = offsets[i] + size
    data = np.empty(offsets[n], dtype=np.uint8)
    for i in range(n):
        if codes[i] >= 0:
            start = name_offsets[codes[i]]
            for k in range(offsets[i + 1] - offsets[i]):
                data[offsets[i] + k] = names[start + k]
    return offsets, data
