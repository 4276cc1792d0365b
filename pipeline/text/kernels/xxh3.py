"""XXH3-128 (xxHash 0.8, seed 0, default secret) of bytes in memory, for compiled kernels.

The function of ``xxhash.h``'s ``XXH3_128bits`` (``XXH3_128bits_internal`` with its length
classes 0-16, 17-128, 129-240 and the long-input loop of 64-byte stripes), written on 64-bit
words with the scalar code paths of the reference; the same function as ``xxhash-rust``'s
``xxh3_128``, which ``polars_hash``'s ``nchash.xxh3_128`` runs. The tests compare both on every
length class (``tests/test_kernels_rows.py``).

Inputs are read as little-endian words, as the reference's ``XXH_readLE64``: these kernels
load words natively, so they assume a little-endian machine (x86-64, AArch64).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from pipeline.text.kernels.buffers import kernel
from pipeline.text.kernels.memory import load_u8, load_u32, load_u64

#: The helpers: integer arguments only, so a call passes no reference-counted array (LLVM
#: inlines the small ones; numba's own inlining made them no faster).
helper = numba.njit(cache=True, nogil=True)

PRIME32_1 = np.uint64(0x9E3779B1)
PRIME32_2 = np.uint64(0x85EBCA77)
PRIME32_3 = np.uint64(0xC2B2AE3D)
PRIME64_1 = np.uint64(0x9E3779B185EBCA87)
PRIME64_2 = np.uint64(0xC2B2AE3D27D4EB4F)
PRIME64_3 = np.uint64(0x165667B19E3779F9)
PRIME64_4 = np.uint64(0x85EBCA77C2B2AE63)
PRIME64_5 = np.uint64(0x27D4EB2F165667C5)
PRIME_MX1 = np.uint64(0x165667919E3779F9)
PRIME_MX2 = np.uint64(0x9FB21C651E98DF25)
_LOW32 = np.uint64(0xFFFFFFFF)

#: ``XXH3_kSecret``: the 192 bytes of the default secret.
SECRET = np.frombuffer(bytes.fromhex(
    "b8fe6c3923a44bbe7c01812cf721ad1cded46de9839097db7240a4a4b7b3671f"
    "cb79e64eccc0e578825ad07dccff7221b8084674f743248ee03590e6813a264c"
    "3c2852bb91c300cb88d0658b1b532ea371644897a20df94e3819ef46a9deacd8"
    "a8fa763fe39c343ff9dcbbc7c70b4f1d8a51e04bcdb45931c89f7ec9d9787364"
    "eac5ac8334d3ebc3c581a0fffa1363eb170ddd51b7f0da49d3165526 29d4689e"
    "2b16be587d47a1fc8ff8b8d17ad031ce45cb3a8f95160428afd7fbcabb4b407e"
    .replace(" ", "")
), dtype=np.uint8)
SECRET_SIZE = 192
STRIPE_LEN = 64
STRIPES_PER_BLOCK = (SECRET_SIZE - STRIPE_LEN) // 8
BLOCK_LEN = STRIPE_LEN * STRIPES_PER_BLOCK


@intrinsic
def _mul128(typingctx: Any, a: Any, b: Any) -> Any:  # pragma: no cover - compiled
    """The full 128-bit product of two uint64: (low, high)."""
    result = types.UniTuple(types.uint64, 2)

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        wide = ir.IntType(128)
        product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        low = builder.trunc(product, ir.IntType(64))
        high = builder.trunc(builder.lshr(product, ir.Constant(wide, 64)), ir.IntType(64))
        return context.make_tuple(builder, result, [low, high])

    return result(types.uint64, types.uint64), codegen


mul128 = cast(Callable[[Any, Any], tuple[np.uint64, np.uint64]], _mul128)


@helper
def _fold64(a: np.uint64, b: np.uint64) -> np.uint64:  # pragma: no cover - compiled
    low, high = mul128(a, b)
    return low ^ high


@helper
def _xorshift(value: np.uint64, shift: int) -> np.uint64:  # pragma: no cover - compiled
    return value ^ (value >> np.uint64(shift))


@helper
def _avalanche(h: np.uint64) -> np.uint64:  # pragma: no cover - compiled
    """``XXH3_avalanche``."""
    return _xorshift(_xorshift(h, 37) * PRIME_MX1, 32)


@helper
def _avalanche64(h: np.uint64) -> np.uint64:  # pragma: no cover - compiled
    """``XXH64_avalanche``."""
    h = _xorshift(h, 33) * PRIME64_2
    h = _xorshift(h, 29) * PRIME64_3
    return _xorshift(h, 32)


@helper
def _swap32(x: np.uint64) -> np.uint64:  # pragma: no cover - compiled
    return (((x << np.uint64(24)) & np.uint64(0xFF000000))
            | ((x << np.uint64(8)) & np.uint64(0x00FF0000))
            | ((x >> np.uint64(8)) & np.uint64(0x0000FF00))
            | ((x >> np.uint64(24)) & np.uint64(0x000000FF)))


@helper
def _swap64(x: np.uint64) -> np.uint64:  # pragma: no cover - compiled
    return (_swap32(x & _LOW32) << np.uint64(32)) | _swap32(x >> np.uint64(32))


@helper
def _rotl32(x: np.uint64, r: int) -> np.uint64:  # pragma: no cover - compiled
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & _LOW32


@helper
def _mix16(data: int, secret: int) -> np.uint64:  # pragma: no cover - compiled
    """``XXH3_mix16B`` with seed 0."""
    return _fold64(load_u64(data) ^ load_u64(secret), load_u64(data + 8) ^ load_u64(secret + 8))


@helper
def _mix32(
    low: np.uint64, high: np.uint64, first: int, second: int, secret: int
) -> tuple[np.uint64, np.uint64]:  # pragma: no cover - compiled
    """``XXH128_mix32B`` with seed 0."""
    low = (low + _mix16(first, secret)) ^ (load_u64(second) + load_u64(second + 8))
    high = (high + _mix16(second, secret + 16)) ^ (load_u64(first) + load_u64(first + 8))
    return low, high


@helper
def _finish_mid(
    low: np.uint64, high: np.uint64, n: np.uint64
) -> tuple[np.uint64, np.uint64]:  # pragma: no cover - compiled
    """The last step of the 17-128 and 129-240 byte classes."""
    h_low = low + high
    h_high = low * PRIME64_1 + high * PRIME64_4 + n * PRIME64_2
    return _avalanche(h_low), np.uint64(0) - _avalanche(h_high)


@helper
def _upto16(data: int, n: int, secret: int) -> tuple[np.uint64, np.uint64]:  # pragma: no cover
    """``XXH3_len_0to16_128b`` with seed 0."""
    length = np.uint64(n)
    if n > 8:
        flip_low = load_u64(secret + 32) ^ load_u64(secret + 40)
        flip_high = load_u64(secret + 48) ^ load_u64(secret + 56)
        input_low = load_u64(data)
        input_high = load_u64(data + n - 8)
        m_low, m_high = mul128(input_low ^ input_high ^ flip_low, PRIME64_1)
        m_low += (length - np.uint64(1)) << np.uint64(54)
        input_high ^= flip_high
        m_high += input_high + (input_high & _LOW32) * (PRIME32_2 - np.uint64(1))
        m_low ^= _swap64(m_high)
        h_low, h_high = mul128(m_low, PRIME64_2)
        h_high += m_high * PRIME64_2
        return _avalanche(h_low), _avalanche(h_high)
    if n >= 4:
        input_64 = load_u32(data) + (load_u32(data + n - 4) << np.uint64(32))
        flip = load_u64(secret + 16) ^ load_u64(secret + 24)
        m_low, m_high = mul128(input_64 ^ flip, PRIME64_1 + (length << np.uint64(2)))
        m_high += m_low << np.uint64(1)
        m_low ^= m_high >> np.uint64(3)
        m_low = _xorshift(_xorshift(m_low, 35) * PRIME_MX2, 28)
        return m_low, _avalanche(m_high)
    if n > 0:
        c1 = load_u8(data)
        c2 = load_u8(data + (n >> 1))
        c3 = load_u8(data + n - 1)
        combined_low = (c1 << np.uint64(16)) | (c2 << np.uint64(24)) | c3 | (length << np.uint64(8))
        combined_high = _rotl32(_swap32(combined_low), 13)
        flip_low = load_u32(secret) ^ load_u32(secret + 4)
        flip_high = load_u32(secret + 8) ^ load_u32(secret + 12)
        return _avalanche64(combined_low ^ flip_low), _avalanche64(combined_high ^ flip_high)
    flip_low = load_u64(secret + 64) ^ load_u64(secret + 72)
    flip_high = load_u64(secret + 80) ^ load_u64(secret + 88)
    return _avalanche64(flip_low), _avalanche64(flip_high)


@helper
def _pair(
    even: np.uint64, odd: np.uint64, data: int, key: int
) -> tuple[np.uint64, np.uint64]:  # pragma: no cover - compiled
    """``XXH3_scalarRound`` of two adjacent lanes (each adds its input to the other)."""
    first = load_u64(data)
    second = load_u64(data + 8)
    keyed_first = first ^ load_u64(key)
    keyed_second = second ^ load_u64(key + 8)
    even += second + (keyed_first & _LOW32) * (keyed_first >> np.uint64(32))
    odd += first + (keyed_second & _LOW32) * (keyed_second >> np.uint64(32))
    return even, odd


@helper
def _scramble(lane: np.uint64, key: int) -> np.uint64:  # pragma: no cover - compiled
    """``XXH3_scalarScrambleRound`` of one lane."""
    return (_xorshift(lane, 47) ^ load_u64(key)) * PRIME32_1


@helper
def _mix2(first: np.uint64, second: np.uint64, key: int) -> np.uint64:  # pragma: no cover
    """``XXH3_mix2Accs``."""
    return _fold64(first ^ load_u64(key), second ^ load_u64(key + 8))


@helper
def _long(data: int, n: int, secret: int) -> tuple[np.uint64, np.uint64]:  # pragma: no cover
    """``XXH3_hashLong_128b`` (more than 240 bytes), the eight lanes in registers."""
    a0, a1, a2, a3 = PRIME32_3, PRIME64_1, PRIME64_2, PRIME64_3
    a4, a5, a6, a7 = PRIME64_4, PRIME32_2, PRIME64_5, PRIME32_1
    blocks = (n - 1) // BLOCK_LEN
    stripes_left = ((n - 1) - BLOCK_LEN * blocks) // STRIPE_LEN
    scramble = secret + SECRET_SIZE - STRIPE_LEN
    # Every full block, then the stripes of the last one, then the last 64 bytes (which may
    # overlap them) with the secret at SECRET_SIZE - 64 - 7.
    for b in range(blocks + 2):
        if b < blocks:
            stripes, start, key = STRIPES_PER_BLOCK, data + b * BLOCK_LEN, secret
        elif b == blocks:
            stripes, start, key = stripes_left, data + b * BLOCK_LEN, secret
        else:
            stripes, start, key = 1, data + n - STRIPE_LEN, secret + SECRET_SIZE - STRIPE_LEN - 7
        for s in range(stripes):
            stripe = start + STRIPE_LEN * s
            lanes = key + 8 * s
            a0, a1 = _pair(a0, a1, stripe, lanes)
            a2, a3 = _pair(a2, a3, stripe + 16, lanes + 16)
            a4, a5 = _pair(a4, a5, stripe + 32, lanes + 32)
            a6, a7 = _pair(a6, a7, stripe + 48, lanes + 48)
        if b < blocks:
            a0, a1 = _scramble(a0, scramble), _scramble(a1, scramble + 8)
            a2, a3 = _scramble(a2, scramble + 16), _scramble(a3, scramble + 24)
            a4, a5 = _scramble(a4, scramble + 32), _scramble(a5, scramble + 40)
            a6, a7 = _scramble(a6, scramble + 48), _scramble(a7, scramble + 56)
    length = np.uint64(n)
    low_key = secret + 11
    high_key = secret + SECRET_SIZE - 64 - 11
    low = (length * PRIME64_1 + _mix2(a0, a1, low_key) + _mix2(a2, a3, low_key + 16)
           + _mix2(a4, a5, low_key + 32) + _mix2(a6, a7, low_key + 48))
    high = (~(length * PRIME64_2) + _mix2(a0, a1, high_key) + _mix2(a2, a3, high_key + 16)
            + _mix2(a4, a5, high_key + 32) + _mix2(a6, a7, high_key + 48))
    return _avalanche(low), _avalanche(high)


@helper
def xxh3_128(data: int, n: int, secret: int) -> tuple[np.uint64, np.uint64]:  # pragma: no cover
    """(low, high) 64-bit halves of XXH3-128 of the ``n`` bytes at address ``data``; ``secret``
    is the address of :data:`SECRET`."""
    if n <= 16:
        return _upto16(data, n, secret)
    length = np.uint64(n)
    if n <= 128:
        low = length * PRIME64_1
        high = np.uint64(0)
        if n > 32:
            if n > 64:
                if n > 96:
                    low, high = _mix32(low, high, data + 48, data + n - 64, secret + 96)
                low, high = _mix32(low, high, data + 32, data + n - 48, secret + 64)
            low, high = _mix32(low, high, data + 16, data + n - 32, secret + 32)
        low, high = _mix32(low, high, data, data + n - 16, secret)
        return _finish_mid(low, high, length)
    if n <= 240:
        low = length * PRIME64_1
        high = np.uint64(0)
        for i in range(32, 160, 32):
            low, high = _mix32(low, high, data + i - 32, data + i - 16, secret + i - 32)
        low = _avalanche(low)
        high = _avalanche(high)
        for i in range(160, n + 1, 32):
            low, high = _mix32(low, high, data + i - 32, data + i - 16, secret + 3 + i - 160)
        low, high = _mix32(low, high, data + n - 16, data + n - 32, secret + 136 - 17 - 16)
        return _finish_mid(low, high, length)
    return _long(data, n, secret)


@kernel
def hash_spans(
    data: np.ndarray, offsets: np.ndarray, low: np.ndarray, high: np.ndarray
) -> None:  # pragma: no cover - compiled
    """XXH3-128 of each span ``data[offsets[i]:offsets[i + 1]]`` into ``low[i]``, ``high[i]``."""
    base = data.ctypes.data
    secret = SECRET.ctypes.data
    for i in range(len(offsets) - 1):
        low[i], high[i] = xxh3_128(base + offsets[i], offsets[i + 1] - offsets[i], secret)
