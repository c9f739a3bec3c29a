"""Fuzzing read_module: whatever the input, it returns a Module or raises SpirvError,
quickly. The corpus is the committed clang-22 / llvm-spirv-15 fixtures in tests/data."""

from __future__ import annotations

import gc
import struct
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spirvjit.errors import SpirvError
from spirvjit.spirv import grammar
from spirvjit.spirv.disasm import disassemble
from spirvjit.spirv.reader import read_module

DATA = Path(__file__).resolve().parents[1] / "data"
CORPUS = [path.read_bytes() for path in sorted(DATA.glob("reader_kernels.*.spv"))]
OPCODES = sorted(grammar.INSTRUCTIONS)
# Generous: the fixtures parse in about a millisecond; this only catches blow-ups.
TIME_LIMIT_S = 0.5

FUZZ = settings(
    max_examples=120,
    deadline=None,  # timing is asserted per parse, without hypothesis' flaky deadline
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


def check(data: bytes) -> None:
    """Parse ``data``: only SpirvError may escape, and the parse must be quick.

    A module that reads also disassembles (the disassembler trusts the reader's checks).
    """
    # No garbage collection inside the timed window: late in a full test run the heap holds
    # hundreds of compiled kernels. CI once measured 6.4 s here for an input that parsed in
    # milliseconds when hypothesis retried it; a full collection of that heap is the likely
    # pause (not proven). This guard is for blow-ups in the reader, not for the process.
    gc.disable()
    try:
        start = time.perf_counter()
        try:
            module = read_module(data)
        except SpirvError as error:
            assert error.offset is None or 0 <= error.offset <= len(data) // 4
        else:
            disassemble(module)
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    assert elapsed < TIME_LIMIT_S


def words_of(data: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def pack(words: list[int]) -> bytes:
    return struct.pack(f"<{len(words)}I", *words)


def boundaries(words: list[int]) -> list[int]:
    """Word offsets where instructions start (and the end)."""
    offsets, pos = [], 5
    while pos < len(words):
        offsets.append(pos)
        pos += max(1, words[pos] >> 16)
    return [*offsets, len(words)]


def test_corpus_reads() -> None:
    assert len(CORPUS) >= 2
    for data in CORPUS:
        read_module(data)


corpus = st.sampled_from(CORPUS)


@FUZZ
@given(corpus, st.data())
def test_truncated(data: bytes, draw) -> None:
    size = draw.draw(st.integers(0, len(data)))
    check(data[:size])


@FUZZ
@given(corpus, st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 2**32 - 1)), max_size=4))
def test_word_mutations(data: bytes, mutations: list[tuple[int, int]]) -> None:
    words = words_of(data)
    for index, value in mutations:
        words[index % len(words)] = value
    check(pack(words))


@FUZZ
@given(
    corpus,
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 31)), min_size=1, max_size=4),
)
def test_bit_flips(data: bytes, flips: list[tuple[int, int]]) -> None:
    words = words_of(data)
    for index, bit in flips:
        words[5 + index % (len(words) - 5)] ^= 1 << bit
    check(pack(words))


@FUZZ
@given(st.binary(max_size=512))
def test_random_bytes(data: bytes) -> None:
    check(data)


@FUZZ
@given(st.lists(st.integers(0, 2**32 - 1), max_size=128), st.integers(0, 200))
def test_random_words_after_a_valid_header(body: list[int], bound: int) -> None:
    check(pack([grammar.MAGIC_NUMBER, 0x00010400, 0, bound, 0, *body]))


@FUZZ
@given(
    corpus,
    st.data(),
    st.sampled_from(OPCODES),
    st.lists(st.integers(0, 300) | st.integers(0, 2**32 - 1), max_size=8),
)
def test_instruction_insertion(data: bytes, draw, opcode: int, operands: list[int]) -> None:
    words = words_of(data)
    at = draw.draw(st.sampled_from(boundaries(words)))
    new = [(len(operands) + 1) << 16 | opcode, *operands]
    check(pack(words[:at] + new + words[at:]))


@FUZZ
@given(corpus, st.data())
def test_instruction_removal_and_duplication(data: bytes, draw) -> None:
    words = words_of(data)
    starts = boundaries(words)
    i = draw.draw(st.integers(0, len(starts) - 2))
    one = words[starts[i] : starts[i + 1]]
    if draw.draw(st.booleans()):
        words = words[: starts[i]] + words[starts[i + 1] :]
    else:
        j = draw.draw(st.sampled_from(starts))
        words = words[:j] + one + words[j:]
    check(pack(words))


@pytest.mark.parametrize("size_words", [1 << 16, 1 << 18])
def test_huge_string_and_word_count_stay_linear(size_words: int) -> None:
    """A string with no nul as long as the input, and an instruction claiming 65535 words."""
    header = [grammar.MAGIC_NUMBER, 0x00010000, 0, 10, 0]
    opcode = grammar.OPCODES["OpSourceContinued"]
    chunk = [0xFFFF << 16 | opcode, *([0x41414141] * 0xFFFE)]
    body = (chunk * (size_words // len(chunk) + 1))[:size_words]
    check(pack(header + body))
