"""Fuzzing the unified binary reader: whatever the bytes, reading (and then reading every
section) returns or raises BinaryFormatError, quickly and without large allocations."""

from __future__ import annotations

import hashlib
import json
import time
import tracemalloc

import ubin_samples as S
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spirvjit.errors import BinaryFormatError
from spirvjit.ubin import format as fmt
from spirvjit.ubin.reader import UnifiedBinary
from spirvjit.ubin.writer import write_bytes

SEED = write_bytes(S.contents())
ROWS = S.sections(SEED)
TIME_LIMIT_S = 0.5  # the seed reads in well under a millisecond
MEMORY_LIMIT = 8 << 20  # far above the seed's decompressed size, far below a zip bomb

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


def check(data: bytes) -> None:
    """Read everything: only BinaryFormatError may escape, quickly, in bounded memory."""
    start = time.perf_counter()
    tracemalloc.start()
    try:
        binary = UnifiedBinary(data)
        binary.verify()
        binary.contents()
    except BinaryFormatError as error:
        assert error.offset is None or 0 <= error.offset <= len(data)
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < MEMORY_LIMIT + 4 * len(data)
    assert time.perf_counter() - start < TIME_LIMIT_S


def test_seed_reads():
    UnifiedBinary(SEED).verify()


@FUZZ
@given(st.integers(0, len(SEED) - 1))
def test_truncation(cut):
    check(SEED[:cut])


@FUZZ
@given(st.lists(st.integers(0, len(SEED) * 8 - 1), min_size=1, max_size=8))
def test_bit_flips(bits):
    data = bytearray(SEED)
    for bit in bits:
        data[bit // 8] ^= 1 << (bit % 8)
    check(bytes(data))


@FUZZ
@given(st.binary(max_size=2048))
def test_random_bytes(data):
    check(data)
    check(fmt.MAGIC + data)  # past the magic number, into the header checks


@FUZZ
@given(st.data())
def test_hostile_table_fields(data):
    """Valid checksums around hostile kinds, compressions, sizes and offsets."""
    fields = list(
        fmt.ENTRY.unpack_from(
            SEED, fmt.HEADER.size + fmt.ENTRY.size * data.draw(st.integers(0, len(ROWS) - 1))
        )
    )
    field = data.draw(st.integers(0, 4))
    fields[field] = data.draw(
        st.one_of(st.integers(0, 2**32 - 1), st.sampled_from([0, 1, 2**31, 2**32 - 1]))
        if field < 2
        else st.one_of(st.integers(0, 2**64 - 1), st.integers(0, len(SEED) + 8))
    )
    index = data.draw(st.integers(0, len(ROWS) - 1))
    count = data.draw(st.sampled_from([len(ROWS), 0, 1, 2**16, 2**16 + 1, 2**32 - 1]))
    table = bytearray(SEED[fmt.HEADER.size : fmt.HEADER.size + fmt.ENTRY.size * len(ROWS)])
    table[index * fmt.ENTRY.size : (index + 1) * fmt.ENTRY.size] = fmt.ENTRY.pack(*fields)
    rest = SEED[fmt.HEADER.size + len(table) :]
    header = fmt.HEADER.pack(
        fmt.MAGIC, fmt.VERSION, count, len(SEED), hashlib.sha256(bytes(table)).digest()
    )
    check(header + bytes(table) + rest)


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)


@FUZZ
@given(st.data())
def test_hostile_metadata(data):
    """Well-formed files whose JSON sections say anything: wrong types, indexes, names."""
    rows = [list(r) for r in ROWS]
    metadata = [r for r in rows if r[0] in fmt.METADATA_KINDS]
    row = data.draw(st.sampled_from(metadata))
    value = json.loads(row[3])
    path_value = value
    # Replace one nested value (or the whole document) by arbitrary JSON.
    while isinstance(path_value, (dict, list)) and path_value and data.draw(st.booleans()):
        keys = list(path_value) if isinstance(path_value, dict) else list(range(len(path_value)))
        key = data.draw(st.sampled_from(keys))
        if not isinstance(path_value[key], (dict, list)) or data.draw(st.booleans()):
            path_value[key] = data.draw(JSON)
            break
        path_value = path_value[key]
    else:
        value = data.draw(JSON)
    # Canonical, so the mutation reaches the schema checks (a reader refuses any other
    # spelling first); non-canonical spellings are covered by test_ubin_hostile.py.
    row[3] = fmt.canonical_json(value)
    row[2] = len(row[3])
    check(S.assemble(rows))


@FUZZ
@given(
    st.integers(0, 1 << 26),
    st.integers(0, 1 << 20),
    st.sampled_from([fmt.SPIRV, fmt.OBJECT, fmt.SOURCE]),
)
def test_zip_bombs(declared, actual, kind):
    """zstd payloads that expand far beyond, or short of, their declared size."""
    import zstandard

    rows = [list(r) for r in ROWS]
    row = next(r for r in rows if r[0] == kind)
    row[3] = zstandard.ZstdCompressor(level=1, write_checksum=True).compress(bytes(actual))
    row[2] = declared
    check(S.assemble(rows))
