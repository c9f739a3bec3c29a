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
# Version 2: GPU variants that name their launch facts (generic and common-launch code).
SEED2 = write_bytes(S.contents_v2())
TIME_LIMIT_S = 0.5  # CPU seconds; the seed reads in well under a millisecond
MEMORY_LIMIT = 8 << 20  # far above the seed's decompressed size, far below a zip bomb

FUZZ = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)


def check(data: bytes) -> None:
    """Read everything: only BinaryFormatError may escape, quickly, in bounded memory."""
    start = time.thread_time()
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
    assert time.thread_time() - start < TIME_LIMIT_S


def test_seed_reads():
    UnifiedBinary(SEED).verify()
    assert S.version(SEED) == 1 and S.version(SEED2) == 2
    binary = UnifiedBinary(SEED2)
    binary.verify()
    assert [v.launch_facts for v in binary.variants if v.target == S.GPU] == [(), S.COMMON]


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
    seed = data.draw(st.sampled_from([SEED, SEED2]))
    rows = S.sections(seed)
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
    check(S.assemble(rows, S.version(seed)))


@FUZZ
@given(JSON, st.sampled_from([1, 2]))
def test_hostile_launch_facts(value, entry):
    """Any ``launch_facts`` value: the file reads; the variant is usable only with a
    sorted list of distinct known facts, and otherwise says why, naming the entry."""
    rows = S.sections(SEED2)
    row = next(r for r in rows if r[0] == fmt.VARIANTS)
    index = json.loads(row[3])
    index["variants"][entry]["launch_facts"] = value
    row[3] = fmt.canonical_json(index)
    row[2] = len(row[3])
    data = S.assemble(rows, 2)
    check(data)
    try:
        variant = UnifiedBinary(data).variants[entry]
    except BinaryFormatError as error:  # the same identity twice: the file is refused
        assert "appears twice" in str(error)
        return
    ok = (
        isinstance(value, list)
        and all(isinstance(f, str) for f in value)
        and value == sorted(set(value))
        and set(value) <= set(S.COMMON)
    )
    assert (variant.problem is None) == ok, (value, variant.problem)
    if not ok:
        assert variant.problem.startswith(f"variant {entry} (nvptx:"), variant.problem


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


# -- a seeded mutation campaign: the whole read path, signatures and `inspect` included -------

_KEY = bytes(range(32))  # a fixed Ed25519 key: the signed seed is the same in every run


def _signed_seed() -> bytes | None:
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        return None
    from spirvjit.ubin import signature

    pem = ed25519.Ed25519PrivateKey.from_private_bytes(_KEY).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return signature.sign_bytes(SEED, pem)


_INTERESTING = [0, 1, 2, 7, 8, 55, 56, 64, 120, 255, 2**16, 2**31 - 1, 2**32 - 1, 2**63, 2**64 - 1]


def _random_json(rng) -> object:
    pick = rng.randrange(8)
    if pick == 0:
        return None
    if pick == 1:
        return rng.choice([True, False])
    if pick == 2:
        return rng.choice(_INTERESTING + [-1, -(2**63)])
    if pick == 3:
        return rng.choice([0.5, -0.0, 1e308, 4.0])
    if pick == 4:
        return rng.choice(["", "k1", "../x", "\x1b[2J", "x86-64", "a" * 300, "\u202e"])
    if pick == 5:
        return [_random_json(rng) for _ in range(rng.randrange(3))]
    return {rng.choice(["name", "module", "x", "kind"]): _random_json(rng) for _ in range(2)}


def _mutate_json(rng, value: object) -> object:
    """One random change somewhere in a JSON value."""
    node, parent, key = value, None, None
    while isinstance(node, (dict, list)) and node and rng.random() < 0.75:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        parent, key = node, rng.choice(keys)
        node = node[key]
    if parent is None:
        return _random_json(rng)
    action = rng.randrange(4)
    if action == 0 and isinstance(parent, dict):
        del parent[key]
    elif action == 1 and isinstance(parent, dict):
        parent[rng.choice(["extra", "name", "zz", key + "_"])] = _random_json(rng)
    elif action == 2 and isinstance(parent, list):
        parent.append(parent[key])
    else:
        parent[key] = _random_json(rng)
    return value


def mutate(rng, seed: bytes) -> bytes:
    """One mutant of ``seed`` (bytes, table fields, JSON, sections, zstd, footer)."""
    import zstandard

    data = bytearray(seed)
    how = rng.randrange(8)
    if how == 0:  # bit flips anywhere
        for _ in range(rng.randrange(1, 9)):
            bit = rng.randrange(len(data) * 8)
            data[bit // 8] ^= 1 << (bit % 8)
        return bytes(data)
    if how == 1:  # a header or table field set to an interesting value, checksum fixed
        count = fmt.HEADER.unpack_from(seed, 0)[2]
        end = fmt.HEADER.size + fmt.ENTRY.size * count
        at = rng.randrange(8, end - 4) & ~3
        size = rng.choice([4, 8])
        data[at : at + size] = (rng.choice(_INTERESTING) % 2 ** (8 * size)).to_bytes(size, "little")
        if rng.random() < 0.7:
            data[24:56] = hashlib.sha256(bytes(data[56:end])).digest()
        return bytes(data)
    if how == 2:  # truncated, or bytes appended
        if rng.random() < 0.5:
            return bytes(data[: rng.randrange(len(data))])
        return bytes(data) + rng.randbytes(rng.choice([1, 8, 119, 120, 121, 300]))
    version = S.version(seed)
    signed = len(seed) - fmt.HEADER.unpack_from(seed, 0)[3]
    body, footer = seed[: len(seed) - signed], seed[len(seed) - signed :]
    rows = S.sections(body)
    if how == 3:  # one JSON section changed, written canonically or not
        row = rng.choice([r for r in rows if r[0] in fmt.METADATA_KINDS])
        value = _mutate_json(rng, json.loads(row[3]))
        row[3] = (
            fmt.canonical_json(value)
            if rng.random() < 0.8
            else json.dumps(value, indent=rng.choice([None, 1])).encode()
        )
        row[2] = len(row[3])
    elif how == 4:  # sections dropped, duplicated, swapped or retyped
        i, j = rng.randrange(len(rows)), rng.randrange(len(rows))
        action = rng.randrange(4)
        if action == 0:
            del rows[i]
        elif action == 1:
            rows.insert(j, list(rows[i]))
        elif action == 2:
            rows[i], rows[j] = rows[j], rows[i]
        else:
            rows[i][0] = rng.choice(list(fmt.KIND_NAMES) + [0, 8, 2**32 - 1])
    elif how == 5:  # a blob's zstd frame: other content, sizes, checksum or frame count
        row = rng.choice([r for r in rows if r[1] == fmt.ZSTD])
        raw = rng.randbytes(rng.randrange(64)) * rng.choice([1, 100, 10000])
        frame = zstandard.ZstdCompressor(
            level=1, write_checksum=rng.random() < 0.8, write_content_size=rng.random() < 0.9
        ).compress(raw)
        if rng.random() < 0.3:
            frame += frame if rng.random() < 0.5 else rng.randbytes(4)
        row[3] = frame
        row[2] = rng.choice([len(raw), len(raw) + 1, max(len(raw) - 1, 0), rng.randrange(1 << 20)])
    elif how == 6 and footer:  # the signature footer
        blob = bytearray(footer)
        at = rng.randrange(len(blob))
        blob[at] ^= 1 << rng.randrange(8)
        return bytes(S.assemble(rows, version)) + bytes(blob)
    else:  # a section's stored bytes changed, digests recomputed (signature now stale)
        row = rng.choice(rows)
        stored = bytearray(row[3])
        if stored:
            stored[rng.randrange(len(stored))] ^= 0xFF
        row[3] = bytes(stored)
    return S.assemble(rows, version) + footer


def read_all(data: bytes) -> None:
    """Everything a user can do to a file without running its native code."""
    from spirvjit.ubin.api import gpu_variants
    from spirvjit.ubin.describe import describe, render
    from spirvjit.ubin.trust import judge

    binary = UnifiedBinary(data)
    binary.verify()
    binary.contents()
    judge(binary, "trusted")
    render(describe(binary))
    for module in range(binary.module_count):  # the GPU code a load would pick
        gpu_variants(binary, module, S.DIGEST, {})


def campaign(seed: int, count: int, hang_s: float = 2.0) -> dict:
    """``count`` mutants of the seeds from ``random.Random(seed)``; the outcome counts."""
    import collections
    import random
    import traceback

    rng = random.Random(seed)
    seeds = [SEED, SEED2] + [s for s in [_signed_seed()] if s]
    escapes: collections.Counter = collections.Counter()
    rejected = hangs = 0
    slowest = 0.0
    for _ in range(count):
        data = mutate(rng, rng.choice(seeds))
        start = time.thread_time()
        try:
            read_all(data)
        except BinaryFormatError:
            rejected += 1
        except Exception as exc:  # an escape: record where it came from
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            escapes[f"{type(exc).__name__} at {frame.filename}:{frame.lineno}"] += 1
        took = time.thread_time() - start
        slowest = max(slowest, took)
        hangs += took > hang_s
    return {
        "inputs": count,
        "rejected": rejected,
        "escapes": dict(escapes),
        "hangs": hangs,
        "slowest_s": round(slowest, 3),
    }


def test_mutation_campaign_sample():
    """A fixed-seed sample in CI; `python tests/unit/test_ubin_fuzz.py N SEED` runs more."""
    result = campaign(seed=13, count=400)
    assert result["escapes"] == {} and result["hangs"] == 0, result


if __name__ == "__main__":  # the long run: a crash shows as this process's exit status
    import sys

    print(json.dumps(campaign(int(sys.argv[2]) if len(sys.argv) > 2 else 1, int(sys.argv[1]))))
