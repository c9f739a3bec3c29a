"""Repairs the OpConstantNull of an event clang-22's SPIR-V back end writes one word too long.

``async_work_group_copy(..., 0)`` passes a null ``event_t`` (LLVM: ``target("spirv.Event")
zeroinitializer``). The back end may write its OpConstantNull with the result type repeated
after the result id, once or more (``OpConstantNull %event %null %event %event``: seen with
one and two copies in one module, the first null of the module being right); the
instruction has exactly two operands, so spirv-val and spirvjit's reader refuse the module
("too many operand words"). The repair drops the repeated type words of exactly that
spelling, which no correct producer writes, so it stops acting when clang is fixed. Found
with the async-copy kernels of tests/kernels/test_public_samples.py; no upstream report
found yet.
"""

from __future__ import annotations

import struct

_OP_CONSTANT_NULL = 46


def repair_constant_nulls(spirv: bytes) -> tuple[bytes, int]:
    """``spirv`` with each ``OpConstantNull %T %id %T...`` cut to its three words, and how
    many were. A module that is not little-endian SPIR-V, or is malformed, comes back
    unchanged (the reader reports what is wrong with it)."""
    if len(spirv) < 20 or len(spirv) % 4:
        return spirv, 0
    words = list(struct.unpack(f"<{len(spirv) // 4}I", spirv))
    if words[0] != 0x07230203:
        return spirv, 0
    out = words[:5]
    repaired = 0
    pos = 5
    while pos < len(words):
        count, opcode = words[pos] >> 16, words[pos] & 0xFFFF
        if count == 0 or pos + count > len(words):
            return spirv, 0
        inst = words[pos : pos + count]
        if opcode == _OP_CONSTANT_NULL and count > 3 and set(inst[3:]) == {inst[1]}:
            inst = [(3 << 16) | opcode, inst[1], inst[2]]
            repaired += 1
        out += inst
        pos += count
    if not repaired:
        return spirv, 0
    return struct.pack(f"<{len(out)}I", *out), repaired
