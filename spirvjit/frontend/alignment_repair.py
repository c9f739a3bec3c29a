"""Repairs the ``Alignment`` decorations clang-22's SPIR-V back end writes wrong.

The back end keeps an alloca's alignment in a signed byte before it writes the
decoration: ``__attribute__((aligned(128)))`` (and every private ``long16``/``double16``
array, whose natural alignment is 128) comes out as ``Alignment 4294967168`` (-128), and
256 or more as ``Alignment 0``. Neither is a valid alignment, so the reader refuses the
module; the memory accesses of the same variables carry the right ``Aligned`` operands.
Found by the differential tester (seed 51); no upstream report found yet. The repair only
touches values no correct producer writes, so it stops acting when clang is fixed.

-128 is 128. 0 lost the value: it becomes the largest alignment any load or store of the
module claims, at least 256 (the allocation may then be over-aligned, never under-).
"""

from __future__ import annotations

import struct

_OP_DECORATE = 71
_OP_LOAD, _OP_STORE = 61, 62
_ALIGNMENT = 44
_MEMORY_ALIGNED = 0x2
_SIGNED_128 = 0xFFFFFF80
_MAX_ALIGNMENT = 1 << 16


def _claimed_alignments(words: list[int]) -> int:
    """The largest ``Aligned`` operand of an OpLoad or OpStore in ``words``."""
    largest = 0
    pos = 5
    while pos < len(words):
        count, opcode = words[pos] >> 16, words[pos] & 0xFFFF
        if count == 0 or pos + count > len(words):
            break
        # OpLoad: type, result, pointer, mask, ...; OpStore: pointer, object, mask, ...
        mask_at = {_OP_LOAD: 4, _OP_STORE: 3}.get(opcode)
        if mask_at is not None and count > mask_at + 1 and words[pos + mask_at] & _MEMORY_ALIGNED:
            value = words[pos + mask_at + 1]  # Volatile (0x1) has no operand before it
            if not value & (value - 1) and value <= _MAX_ALIGNMENT:
                largest = max(largest, value)
        pos += count
    return largest


def repair_alignments(spirv: bytes) -> tuple[bytes, int]:
    """``spirv`` with clang's wrong ``Alignment`` decorations repaired, and how many were.
    A module that is not little-endian SPIR-V, or is malformed, comes back unchanged (the
    reader reports what is wrong with it)."""
    if len(spirv) < 20 or len(spirv) % 4:
        return spirv, 0
    words = list(struct.unpack(f"<{len(spirv) // 4}I", spirv))
    if words[0] != 0x07230203:
        return spirv, 0
    repaired = 0
    lost: int | None = None
    pos = 5
    while pos < len(words):
        count, opcode = words[pos] >> 16, words[pos] & 0xFFFF
        if count == 0 or pos + count > len(words):
            return spirv, 0
        if opcode == _OP_DECORATE and count == 4 and words[pos + 2] == _ALIGNMENT:
            value = words[pos + 3]
            if value == _SIGNED_128:
                words[pos + 3] = 128
                repaired += 1
            elif value == 0:
                if lost is None:
                    lost = max(256, _claimed_alignments(words))
                words[pos + 3] = lost
                repaired += 1
        pos += count
    if not repaired:
        return spirv, 0
    return struct.pack(f"<{len(words)}I", *words), repaired
