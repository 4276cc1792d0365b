"""Reads and writes of raw memory for compiled kernels: words at an address, bytes copied.

The row kernels (:mod:`pipeline.text.kernels.rows`, :mod:`pipeline.text.kernels.xxh3`) read
Arrow buffers by address, so one compiled signature serves any set of columns and no numpy
array (whose reference count numba takes and drops at every call) is passed between helpers.
An address is only read while the Arrow array that owns it is alive; the callers keep it.
Words are read in the machine's byte order, little-endian on the platforms numba supports for
these wheels (x86-64, AArch64), which is what the row encoding and XXH3 specify.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


def _loader(width: int, result: Any) -> Any:
    @intrinsic
    def load(typingctx: Any, address: Any) -> Any:  # pragma: no cover - compiled
        """The ``width``-byte unsigned integer at ``address`` (any alignment), zero-extended
        to a 64-bit ``result``."""

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            pointer = builder.inttoptr(args[0], ir.IntType(8 * width).as_pointer())
            value = builder.load(pointer, align=1)
            return value if width == 8 else builder.zext(value, ir.IntType(64))

        return result(types.int64), codegen

    return load


# Typed names for the intrinsics (called from compiled code with the argument types shown):
# bits as uint64, and sizes, offsets and addresses as int64.
load_u8 = cast(Callable[[int], Any], _loader(1, types.uint64))
load_u32 = cast(Callable[[int], Any], _loader(4, types.uint64))
load_u64 = cast(Callable[[int], Any], _loader(8, types.uint64))
read_u8 = cast(Callable[[int], int], _loader(1, types.int64))
read_u32 = cast(Callable[[int], int], _loader(4, types.int64))
read_i64 = cast(Callable[[int], int], _loader(8, types.int64))


@intrinsic
def _store_u8(typingctx: Any, address: Any, value: Any) -> Any:  # pragma: no cover - compiled
    """Write the low byte of ``value`` at ``address``."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        pointer = builder.inttoptr(args[0], ir.IntType(8).as_pointer())
        builder.store(builder.trunc(args[1], ir.IntType(8)), pointer)
        return context.get_dummy_value()

    return types.void(types.int64, types.int64), codegen


@intrinsic
def _copy(typingctx: Any, target: Any, source: Any, n: Any) -> Any:  # pragma: no cover
    """Copy ``n`` bytes from address ``source`` to address ``target``."""

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        byte_pointer = ir.IntType(8).as_pointer()
        cgutils.raw_memcpy(builder, builder.inttoptr(args[0], byte_pointer),
                           builder.inttoptr(args[1], byte_pointer), args[2], 1)
        return context.get_dummy_value()

    return types.void(types.int64, types.int64, types.int64), codegen


store_u8 = cast(Callable[[int, Any], None], _store_u8)
copy = cast(Callable[[int, int, Any], None], _copy)
