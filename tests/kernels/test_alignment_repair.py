"""clang-22's SPIR-V back end writes the alignment of 128-byte-or-more private arrays as a
signed byte (``Alignment 4294967168`` for 128, ``0`` for 256 and up); the reader refused
those modules (differential tester, seed 51 kernel 2: a private ``long16`` array).
frontend/alignment_repair.py repairs them."""

from __future__ import annotations

import random
import struct

import numpy as np
import pytest

from spirvjit.frontend.alignment_repair import repair_alignments

# Private arrays aligned to 64 (valid already), 128 (written as -128) and 256/512 (written
# as 0), and a long16 array, whose natural alignment is 128: each read at an index the
# compiler cannot fold.
ALIGNED = """
kernel void aligned_arrays(global long *out, int i)
{
    __attribute__((aligned(64))) long a[16];
    __attribute__((aligned(128))) long b[16];
    __attribute__((aligned(256))) long c[16];
    __attribute__((aligned(512))) long d[16];
    long16 e[4];
    for (int k = 0; k < 16; ++k) { a[k] = k + i; b[k] = k * i; c[k] = k - i; d[k] = k ^ i; }
    for (int k = 0; k < 4; ++k) e[k] = (long16)(k * i);
    out[get_global_id(0)] = a[i & 15] + b[(i + 1) & 15] + c[(i + 2) & 15] + d[(i + 3) & 15]
                          + e[i & 3].s5 + (long)(((size_t)b | (size_t)c | (size_t)d) & 127);
}
"""


def _reference(i: int) -> int:
    a, b, c, d = (i & 15) + i, ((i + 1) & 15) * i, ((i + 2) & 15) - i, ((i + 3) & 15) ^ i
    return a + b + c + d + (i & 3) * i


def test_private_arrays_aligned_128_and_more_compile_and_run(build, producer) -> None:
    program = build(ALIGNED, producer=producer)
    out = np.zeros(4, np.int64)
    for i in (0, 5, 15, 100, -7):
        program.kernel("aligned_arrays")(out, np.int32(i), global_size=4)
        assert (out == _reference(i)).all(), (i, out)


def _module(*instructions: list[int]) -> bytes:
    words = [0x07230203, 0x00010400, 0, 100, 0]
    for inst in instructions:
        words += [len(inst) << 16 | inst[0], *inst[1:]]
    return struct.pack(f"<{len(words)}I", *words)


def _decorate(target: int, value: int) -> list[int]:
    return [71, target, 44, value]  # OpDecorate %target Alignment value


def _load(result: int, pointer: int, align: int) -> list[int]:
    return [61, 1, result, pointer, 0x2, align]  # OpLoad %1 %result %pointer Aligned align


def test_minus_128_becomes_128_and_zero_the_largest_claimed_alignment() -> None:
    spirv = _module(
        _decorate(5, 0xFFFFFF80),
        _decorate(6, 0),
        _decorate(7, 16),
        _load(8, 6, 1024),
        _load(9, 5, 128),
    )
    repaired, count = repair_alignments(spirv)
    assert count == 2
    assert repaired == _module(
        _decorate(5, 128),
        _decorate(6, 1024),
        _decorate(7, 16),
        _load(8, 6, 1024),
        _load(9, 5, 128),
    )


def test_zero_without_claims_is_256_and_valid_modules_are_untouched() -> None:
    repaired, count = repair_alignments(_module(_decorate(6, 0)))
    assert count == 1 and repaired == _module(_decorate(6, 256))
    valid = _module(_decorate(5, 8), _load(8, 5, 8))
    assert repair_alignments(valid) == (valid, 0)


def test_other_invalid_values_are_left_for_the_reader_to_refuse() -> None:
    """Only clang's two spellings are repaired: anything else is hostile input."""
    for value in (3, 0xFFFFFF00, 1 << 17, 0x80000000):
        spirv = _module(_decorate(5, value))
        assert repair_alignments(spirv) == (spirv, 0)


@pytest.mark.parametrize("seed", range(4))
def test_random_and_truncated_modules_never_raise(seed: int) -> None:
    """Fuzz: the repair runs before the reader, on whatever the producer wrote."""
    rng = random.Random(seed)
    base = _module(_decorate(5, 0xFFFFFF80), _decorate(6, 0), _load(8, 6, 1024))
    for _ in range(2000):
        data = bytearray(base)
        for _ in range(rng.randint(1, 6)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        data = bytes(data[: rng.randint(0, len(data))])
        repaired, count = repair_alignments(data)
        assert isinstance(repaired, bytes) and len(repaired) == len(data)
        assert (count == 0) == (repaired == data)
