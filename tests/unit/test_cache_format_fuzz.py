"""Fuzzing the two disk-cache entry formats (spirvjit/cache/format.py, object code, and
spirvjit/frontend/source_cache.py, SPIR-V from source) past their SHA-256: the digest is
no MAC, anyone can frame any header with a valid one, so the header's JSON is hostile
input. Whatever it holds, decoding returns an entry or raises the format's own error
(CorruptEntry, CorruptSourceEntry), which the lookups treat as a miss."""

from __future__ import annotations

import hashlib
import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from spirvjit.cache import format as cache_format
from spirvjit.cache.key import KernelKey
from spirvjit.frontend import source_cache as sc

FUZZ = settings(max_examples=400, deadline=None, database=None, derandomize=True)

leaves = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
)
values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


def _frame(prefix, magic: bytes, header: object, payload: bytes) -> bytes:
    text = json.dumps(header, allow_nan=True).encode()
    body = prefix.pack(magic, len(text)) + text + payload
    return body + hashlib.sha256(body).digest()


KEY = KernelKey(
    spirv_digest="ab" * 32, entry_point="k", spec_constants=((1, "4"),), triple="x86_64",
    cpu="znver4", features="+avx2", options=(), specialization=(), spirvjit_version="1",
    llvm_version="22", compiler_digest="cd" * 8,
)  # fmt: skip


def _object_header() -> dict:
    data = cache_format.encode(KEY, b"obj", "t")
    return cache_format.decode_header(data[:-32])


def _source_header(key: str) -> dict:
    entry = sc.Entry(b"\x03\x02\x23\x07", (("/a.h", "00"),), (("/", 5),), ("warned",))
    data = sc.encode(key, {}, entry)
    length = sc._PREFIX.unpack_from(data)[1]
    return json.loads(data[sc._PREFIX.size : sc._PREFIX.size + length])


@FUZZ
@given(field=st.sampled_from(sorted(_object_header())), value=values, payload=st.binary(max_size=8))
def test_object_entry_with_any_field_value(field, value, payload):
    header = _object_header() | {field: value}
    data = _frame(cache_format._PREFIX, cache_format.MAGIC, header, payload)
    try:
        _, got = cache_format.decode(data, KEY)
    except cache_format.CorruptEntry:
        return
    assert got == payload  # decoded: it gives back the framed payload


@FUZZ
@given(field=st.sampled_from(sorted(_source_header("k" * 64))), value=values)
def test_source_entry_with_any_field_value(field, value):
    key = "k" * 64
    header = _source_header(key) | {field: value}
    try:
        entry = sc.decode(_frame(sc._PREFIX, sc.MAGIC, header, b"\x03\x02\x23\x07"), key)
    except sc.CorruptSourceEntry:
        return
    assert entry.spirv == b"\x03\x02\x23\x07"  # decoded: it gives back the framed SPIR-V


def test_a_source_entry_with_an_infinite_directory_time_never_decodes():
    """``"dirs": [["/", Infinity]]``: int() raised OverflowError out of decode."""
    key = "k" * 64
    header = _source_header(key) | {"dirs": [["/", math.inf]]}
    data = _frame(sc._PREFIX, sc.MAGIC, header, b"\x03\x02\x23\x07")
    try:
        sc.decode(data, key)
    except sc.CorruptSourceEntry as exc:
        assert "OverflowError" in str(exc)
    else:
        raise AssertionError("decoded")
