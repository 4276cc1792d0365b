"""The bytes behind ``row_hash``: records in ``polars_hash``'s row encoding, version 1.

``polars_hash.hash_rows(..., version=1)`` writes each row as the concatenation of its values,
each a tag byte and a payload (the package's ``row_encode.rs``, whose authors fix version 1
forever):

* null (any type): ``00``;
* integer: ``03``, a sign byte (``01`` when the value is >= 0, else ``00``), the magnitude in
  base 128, least significant group first, the high bit set on every group but the last;
* float: ``04`` and the eight big-endian bytes of the value, ``-0.0`` as ``0.0`` and every NaN
  as the canonical one;
* string: ``05``, the byte length in base 128, the UTF-8 bytes;
* list: ``0c``, the element count in base 128, each element encoded as above;
* a row, as a struct: ``0d``, its number of columns in base 128, each column's value.

Its generic encoder looks every value up by index through polars' chunked arrays and keeps every
row's bytes for the hash that follows (0.75 CPU-s a million records of the benchmark, encoding
and XXH3-128). :func:`hash_rows` writes the same bytes for the record schema's types straight
from the Arrow buffers (strings as Arrow string views, the layout polars keeps them in, so
nothing is copied first; integers, floats, lists of those and lists of lists), one row at a time
into a scratch buffer, and hashes each row there with XXH3-128
(:mod:`pipeline.text.kernels.xxh3`): 0.48 CPU-s. The tests check the hashes against
``polars_hash``'s (its encoding hashed by its XXH3-128) on every type and level.

A column is described to the kernels by *nodes*: one row of :data:`NODE_FIELDS` integers each
(the addresses of its buffers in this process, its Arrow offset and, for a list, its child
node), so one compiled signature serves every schema. The addresses are read only while the
Arrow arrays that own them are alive (the callers hold them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numba
import numpy as np
import pyarrow as pa

from pipeline.text.kernels.buffers import kernel
from pipeline.text.kernels.memory import copy, load_u64, read_i64, read_u8, read_u32, store_u8
from pipeline.text.kernels.xxh3 import SECRET, xxh3_128

#: The helpers take addresses and integers only: an array argument is passed with its reference
#: count taken and dropped, 30-100 ns a value. The hot ones are inlined by numba (faster by a
#: quarter than LLVM's choice); the rest are called, since inlining everything more than doubled
#: the compile time of a cold run (14 s against about 6 s, for 12 % less time a row).
inlined = numba.njit(cache=True, nogil=True, inline="always")
helper = numba.njit(cache=True, nogil=True)

#: Node kinds.
NULL, STRING, INTEGER, FLOAT, LIST = 0, 1, 2, 3, 4
#: Columns of the node table: kind, validity bitmap address (0: no nulls), Arrow offset, main
#: buffer address (string views, integers, floats or list offsets), child node (lists) or first
#: data buffer in the buffer table (strings).
NODE_FIELDS = 5
_KIND, _VALIDITY, _OFFSET, _MAIN, _CHILD = range(NODE_FIELDS)

TAG_NULL, TAG_INT, TAG_FLOAT, TAG_STRING, TAG_LIST, TAG_STRUCT = 0x00, 0x03, 0x04, 0x05, 0x0C, 0x0D
# Bit patterns of float64 (Rust's f64::NAN is the canonical NaN) and base-128 groups.
_CANONICAL_NAN = np.uint64(0x7FF8000000000000)
_INFINITY = np.uint64(0x7FF0000000000000)
_NO_SIGN = np.uint64(0x7FFFFFFFFFFFFFFF)
_NEGATIVE_ZERO = np.uint64(0x8000000000000000)
_BYTE = np.uint64(0xFF)
_GROUP = np.uint64(0x80)
_LOW_BITS = np.uint64(0x7F)


# The helpers below take addresses and integers only: an array argument would be passed with a
# reference count taken and dropped, about 30-100 ns a value even where numba inlines the call.


@inlined
def _field(nodes: int, node: int, field: int) -> int:  # pragma: no cover - compiled
    return read_i64(nodes + 8 * (NODE_FIELDS * node + field))


@inlined
def _is_valid(nodes: int, node: int, i: int) -> bool:  # pragma: no cover - compiled
    bitmap = _field(nodes, node, _VALIDITY)
    if bitmap == 0:
        return True
    bit = _field(nodes, node, _OFFSET) + i
    return (read_u8(bitmap + (bit >> 3)) >> (bit & 7)) & 1 == 1


@inlined
def _tag(out: int, pos: int, tag: int) -> int:  # pragma: no cover - compiled
    store_u8(out + pos, tag)
    return pos + 1


@inlined
def _varint(out: int, pos: int, value: np.uint64) -> int:  # pragma: no cover
    """Base 128, least significant group first; the new position."""
    while value >= _GROUP:
        store_u8(out + pos, np.int64((value & _LOW_BITS) | _GROUP))
        pos += 1
        value >>= np.uint64(7)
    store_u8(out + pos, np.int64(value))
    return pos + 1


@inlined
def _leaf(
    nodes: int, buffers: int, node: int, i: int, out: int, pos: int
) -> int:  # pragma: no cover - compiled
    """Encode value ``i`` of a leaf node (null, string, integer, float) at ``pos``: nulls and
    strings here, numbers in :func:`_number` (a call: fewer copies of the code to compile)."""
    kind = _field(nodes, node, _KIND)
    if kind == NULL or not _is_valid(nodes, node, i):
        return _tag(out, pos, TAG_NULL)
    if kind != STRING:
        return _number(nodes, node, i, out, pos)
    # A 16-byte view: the length, then the bytes themselves up to 12, else a prefix, the data
    # buffer's number and the offset in it.
    view = _field(nodes, node, _MAIN) + 16 * (_field(nodes, node, _OFFSET) + i)
    length = read_u32(view)
    address = view + 4
    if length > 12:
        first = _field(nodes, node, _CHILD) + read_u32(view + 8)
        address = read_i64(buffers + 8 * first) + read_u32(view + 12)
    pos = _varint(out, _tag(out, pos, TAG_STRING), np.uint64(length))
    if length > 0:
        copy(out + pos, address, length)
    return pos + length


@helper
def _number(
    nodes: int, node: int, i: int, out: int, pos: int
) -> int:  # pragma: no cover - compiled
    """Encode value ``i`` (not null) of an integer or float node at ``pos``."""
    at = _field(nodes, node, _MAIN) + 8 * (_field(nodes, node, _OFFSET) + i)
    if _field(nodes, node, _KIND) == INTEGER:
        value = read_i64(at)
        pos = _tag(out, pos, TAG_INT)
        pos = _tag(out, pos, 1 if value >= 0 else 0)
        magnitude = np.uint64(value) if value >= 0 else np.uint64(0) - np.uint64(value)
        return _varint(out, pos, magnitude)
    # FLOAT: -0.0 as 0.0 (polars' float equality), every NaN as the canonical one.
    bits = load_u64(at)
    if bits & _NO_SIGN > _INFINITY:
        bits = _CANONICAL_NAN
    elif bits == _NEGATIVE_ZERO:
        bits = np.uint64(0)
    store_u8(out + pos, TAG_FLOAT)
    for k in range(8):
        store_u8(out + pos + 1 + k, np.int64((bits >> np.uint64(56 - 8 * k)) & _BYTE))
    return pos + 9


@inlined
def _list_bounds(nodes: int, node: int, i: int) -> tuple[int, int]:  # pragma: no cover
    at = _field(nodes, node, _MAIN) + 8 * (_field(nodes, node, _OFFSET) + i)
    return read_i64(at), read_i64(at + 8)


@inlined
def _value(
    nodes: int, buffers: int, node: int, i: int, out: int, pos: int
) -> int:  # pragma: no cover - compiled
    """Encode value ``i`` of ``node`` at ``pos``; the new position."""
    if _field(nodes, node, _KIND) != LIST:
        return _leaf(nodes, buffers, node, i, out, pos)
    return _list(nodes, buffers, node, i, out, pos)


@helper
def _list(
    nodes: int, buffers: int, node: int, i: int, out: int, pos: int
) -> int:  # pragma: no cover - compiled
    """Encode value ``i`` of a list node at ``pos`` (lists nest at most twice, as the record
    schema's ``List(List(String))``); the new position."""
    if not _is_valid(nodes, node, i):
        return _tag(out, pos, TAG_NULL)
    start, end = _list_bounds(nodes, node, i)
    pos = _varint(out, _tag(out, pos, TAG_LIST), np.uint64(end - start))
    child = _field(nodes, node, _CHILD)
    nested = _field(nodes, child, _KIND) == LIST
    grandchild = _field(nodes, child, _CHILD)
    for j in range(start, end):
        if not nested:
            pos = _leaf(nodes, buffers, child, j, out, pos)
        elif not _is_valid(nodes, child, j):
            pos = _tag(out, pos, TAG_NULL)
        else:
            inner_start, inner_end = _list_bounds(nodes, child, j)
            pos = _tag(out, pos, TAG_LIST)
            pos = _varint(out, pos, np.uint64(inner_end - inner_start))
            for k in range(inner_start, inner_end):
                pos = _leaf(nodes, buffers, grandchild, k, out, pos)
    return pos


@kernel
def _hash(
    node_table: np.ndarray, buffer_table: np.ndarray, columns: np.ndarray, levels: np.ndarray,
    row_levels: np.ndarray, scratch: np.ndarray, low: np.ndarray, high: np.ndarray,
) -> None:  # pragma: no cover - compiled
    """XXH3-128 of each row's encoding (written to ``scratch``, at least as long as the
    longest row) into ``low[i]`` and ``high[i]``; row ``i`` holds the columns whose level is at
    most ``row_levels[i]``."""
    nodes = node_table.ctypes.data
    buffers = buffer_table.ctypes.data
    out = scratch.ctypes.data
    secret = SECRET.ctypes.data
    for i in range(len(row_levels)):
        fields = 0
        for c in range(len(columns)):
            if levels[c] <= row_levels[i]:
                fields += 1
        pos = _varint(out, _tag(out, 0, TAG_STRUCT), np.uint64(fields))
        for c in range(len(columns)):
            if levels[c] <= row_levels[i]:
                pos = _value(nodes, buffers, columns[c], i, out, pos)
        low[i], high[i] = xxh3_128(out, pos, secret)


def _describe(array: pa.Array, nodes: list[list[int]], buffers: list[int], bound: list[int],
              depth: int = 0) -> int:
    """Add the nodes of ``array`` (children first); its node's index. ``bound[0]`` grows by
    the most bytes the values can take: 11 a value (a tag and a 64-bit length or integer in
    base 128) and the bytes of its strings. Lists nest at most twice (the kernel's limit, the
    record schema's ``List(List(String))``); deeper ones raise ``TypeError``."""
    bound[0] += 11 * len(array)
    validity = array.buffers()[0]
    bitmap = 0 if validity is None or array.null_count == 0 else validity.address
    kind_of = array.type
    if pa.types.is_null(kind_of):
        nodes.append([NULL, 0, 0, 0, 0])
    elif pa.types.is_string_view(kind_of):
        # the byte lengths of the values that are not null
        views = np.frombuffer(array.buffers()[1], dtype=np.uint32).reshape(-1, 4)
        lengths = views[array.offset:array.offset + len(array), 0]
        if bitmap:
            bits = np.unpackbits(np.frombuffer(array.buffers()[0], dtype=np.uint8),
                                 bitorder="little")
            lengths = lengths[bits[array.offset:array.offset + len(array)].view(np.bool_)]
        bound[0] += int(lengths.sum(dtype=np.int64))
        first = len(buffers)
        buffers.extend(b.address for b in array.buffers()[2:])
        nodes.append([STRING, bitmap, array.offset, array.buffers()[1].address, first])
    elif kind_of == pa.int64():
        nodes.append([INTEGER, bitmap, array.offset, array.buffers()[1].address, 0])
    elif kind_of == pa.float64():
        nodes.append([FLOAT, bitmap, array.offset, array.buffers()[1].address, 0])
    elif pa.types.is_large_list(kind_of):
        if depth == 2:
            raise TypeError(f"no row encoding for lists nested more than twice: {kind_of}")
        child = _describe(array.values, nodes, buffers, bound, depth + 1)
        nodes.append([LIST, bitmap, array.offset, array.buffers()[1].address, child])
    else:
        raise TypeError(f"no row encoding for Arrow type {kind_of}")
    return len(nodes) - 1


def hash_rows(
    columns: Sequence[pa.Array], levels: Sequence[int], row_levels: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) 64-bit halves of the XXH3-128 of each row of ``columns`` (Arrow arrays of
    equal length: string views, int64, float64, large lists of those, nulls) in
    ``polars_hash``'s row encoding version 1, row ``i`` holding column ``c`` where
    ``levels[c] <= row_levels[i]``. The encodings are not kept: each row is written to the
    start of one scratch buffer and hashed there. The buffer is as long as every value of
    ``columns`` together could take, a bound on any one row; only the longest row's bytes of it
    are ever touched (the rest is reserved, not used, memory)."""
    lengths = {len(column) for column in columns}
    if lengths != {len(row_levels)}:
        raise ValueError(f"columns of {sorted(lengths)} rows for {len(row_levels)} row levels")
    nodes: list[list[int]] = []
    buffers: list[int] = [0]
    bound = [16]  # a row's own tag and column count
    roots = [_describe(column, nodes, buffers, bound) for column in columns]
    scratch = np.empty(bound[0], dtype=np.uint8)
    low = np.empty(len(row_levels), dtype=np.uint64)
    high = np.empty(len(row_levels), dtype=np.uint64)
    _hash(np.array(nodes, dtype=np.int64).reshape(-1, NODE_FIELDS),
          np.array(buffers, dtype=np.int64), np.array(roots, dtype=np.int64),
          np.array(levels, dtype=np.int64), np.ascontiguousarray(row_levels, dtype=np.int64),
          scratch, low, high)
    return low, high
