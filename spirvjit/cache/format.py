"""The bytes of one disk-cache entry: encoding, and decoding that verifies everything.

An entry is::

    MAGIC (8 bytes) | header length (4 bytes, big-endian) | header (UTF-8 JSON) | payload
    | SHA-256 of everything before it (32 bytes)

The header records the full key parts in readable form (so a miss can be explained
and ``spirvjit cache list`` can show what an entry is) and the payload's size. Decoding
checks the digest first, then everything else: the payload is native code that will be
run, so a truncated, bit-flipped or mislabelled entry must never decode.

Pure functions, no I/O: ``disk.py`` does the files.
"""

from __future__ import annotations

import hashlib
import json
import struct
import time
from collections.abc import Mapping

from .key import KernelKey

MAGIC = b"SJITC\x00\x00\x01"  # the last byte is the format version
FORMAT = 1
_PREFIX = struct.Struct(">8sI")
PREFIX_SIZE = _PREFIX.size
MAX_HEADER = 1 << 20  # key parts are small; a larger length field is corruption
DIGEST_SIZE = 32


class CorruptEntry(Exception):
    """An entry's bytes are not a valid entry (the message says what is wrong)."""


def canonical_parts(parts: Mapping[str, object]) -> str:
    """Key parts as canonical JSON: the form in which two keys' parts compare equal."""
    return json.dumps(parts, sort_keys=True, separators=(",", ":"))


def parts_digest(parts: Mapping[str, object]) -> str:
    """The digest ``KernelKey.digest()`` gives for a key with these (stored) parts."""
    return hashlib.sha256(json.dumps(dict(parts), sort_keys=True).encode()).hexdigest()


def encode(key: KernelKey, payload: bytes, target: str) -> bytes:
    """The entry for ``payload`` under ``key``; ``target`` is a readable target name."""
    header = {
        "format": FORMAT,
        "key": key.parts(),
        "key_digest": key.digest(),
        "payload_size": len(payload),
        "target": target,
        "created": time.time(),
    }
    text = json.dumps(header, sort_keys=True, separators=(",", ":")).encode()
    body = _PREFIX.pack(MAGIC, len(text)) + text + payload
    return body + hashlib.sha256(body).digest()


def header_length(prefix: bytes) -> int:
    """Header length from an entry's first ``PREFIX_SIZE`` bytes; CorruptEntry if invalid."""
    if len(prefix) < PREFIX_SIZE:
        raise CorruptEntry(f"truncated: {len(prefix)} bytes, shorter than the entry prefix")
    magic, length = _PREFIX.unpack_from(prefix)
    if magic != MAGIC:
        raise CorruptEntry("not a spirvjit cache entry of this format (bad magic)")
    if length > MAX_HEADER:
        raise CorruptEntry(f"header length {length} is implausible")
    return length


def decode_header(data: bytes) -> dict:
    """The header of an entry from its first bytes (at least the whole header)."""
    length = header_length(data)
    text = data[PREFIX_SIZE : PREFIX_SIZE + length]
    if len(text) != length:
        raise CorruptEntry("truncated inside the header")
    try:
        header = json.loads(text.decode())
    except (UnicodeDecodeError, ValueError) as exc:
        raise CorruptEntry(f"header is not valid JSON: {exc}") from None
    except RecursionError:  # "[[[[...": the SHA-256 is no MAC, anyone can frame these bytes
        raise CorruptEntry("header nests too deeply to be a cache header") from None
    fields = {
        "format": int,
        "key": dict,
        "key_digest": str,
        "payload_size": int,
        "target": str,
        "created": (int, float),
    }
    if not isinstance(header, dict):
        raise CorruptEntry("header is not a JSON object")
    for name, kind in fields.items():
        if not isinstance(header.get(name), kind):
            raise CorruptEntry(f"header field {name!r} is missing or has the wrong type")
    if header["format"] != FORMAT:
        raise CorruptEntry(f"format {header['format']}, expected {FORMAT}")
    return header


def decode(data: bytes, key: KernelKey | None = None) -> tuple[dict, bytes]:
    """(header, payload) of a whole entry, verified; CorruptEntry says what is wrong.

    Checks the SHA-256 of the whole entry, the framing, the payload's size, that the
    recorded key digest matches the recorded key parts, and, given ``key``, that those
    parts are exactly ``key``'s (the file name alone is never trusted).
    """
    body = data[:-DIGEST_SIZE]
    if (
        len(data) < PREFIX_SIZE + DIGEST_SIZE
        or hashlib.sha256(body).digest() != data[-DIGEST_SIZE:]
    ):
        raise CorruptEntry("SHA-256 mismatch: the entry is truncated or damaged")
    header = decode_header(body)
    payload = body[PREFIX_SIZE + header_length(body) :]
    if len(payload) != header["payload_size"]:
        raise CorruptEntry(
            f"payload is {len(payload)} bytes, the header says {header['payload_size']}"
        )
    if parts_digest(header["key"]) != header["key_digest"]:
        raise CorruptEntry("recorded key parts do not match the recorded key digest")
    if key is not None and canonical_parts(header["key"]) != canonical_parts(key.parts()):
        raise CorruptEntry("recorded key differs from the key looked up")
    return header, payload


def differences(cached: Mapping[str, object], wanted: Mapping[str, object]) -> list[str]:
    """Names of the key parts whose values differ between two keys' parts, in key order."""
    names = list(wanted) + [name for name in cached if name not in wanted]
    return [
        name
        for name in names
        if canonical_parts({"v": cached.get(name)}) != canonical_parts({"v": wanted.get(name)})
    ]
