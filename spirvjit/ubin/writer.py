"""Contents → unified binary bytes. Deterministic: the same contents give the same bytes."""

from __future__ import annotations

import hashlib
import os

from ..errors import BinaryFormatError
from ..files import write_atomic
from . import schema
from .format import (
    BUILD,
    ENTRY,
    HEADER,
    KERNELS,
    LAUNCH_FACTS_VERSION,
    MAGIC,
    MAX_SECTIONS,
    OBJECT,
    RAW,
    SOURCE,
    SOURCES,
    SPIRV,
    VARIANTS,
    VERSION,
    ZSTD,
    ZSTD_LEVEL,
    Contents,
    canonical_json,
    max_raw_size,
)


class _Sections:
    """Sections in table order, each (kind, compression, raw bytes, stored bytes)."""

    def __init__(self) -> None:
        self.items: list[tuple[int, int, bytes, bytes]] = []

    def add(self, kind: int, raw: bytes, compress: bool) -> int:
        import zstandard

        stored = raw
        compression = RAW
        if compress:
            # One thread, the content size (zstd's default) and a content checksum, which
            # the reader requires: the output depends only on the input and the level.
            compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL, write_checksum=True)
            stored = compressor.compress(raw)
            compression = ZSTD
        if len(raw) > max_raw_size(kind, len(stored), compression):
            raise BinaryFormatError(f"section {len(self.items)} is too large ({len(raw)} bytes)")
        self.items.append((kind, compression, raw, stored))
        return len(self.items) - 1


def write_bytes(contents: Contents) -> bytes:
    """The unified binary of ``contents``; see docs/ubin.md for the layout.

    Tables are sorted (kernels by module and name, variants by target, objects by
    kernel, sources by name), so the order contents were gathered in does not matter.
    Raises BinaryFormatError when the contents are inconsistent (a variant or kernel
    naming a module that is not there, duplicate variant targets, unsafe source names).
    """
    _check(contents)
    # The lowest version that holds the contents: files without launch-specialised
    # variants stay version 1, which every reader reads.
    version = LAUNCH_FACTS_VERSION if any(v.launch_facts for v in contents.variants) else VERSION
    sections = _Sections()
    # Metadata first: a reader gets everything it needs from the start of the file.
    sections.add(KERNELS, canonical_json(schema.kernels_to_json(contents.kernels)), False)
    sections.add(BUILD, canonical_json(schema.build_to_json(contents.build)), False)
    variants = sorted(contents.variants, key=lambda v: v.identity())
    sources = sorted(contents.sources)
    # Blob section numbers are known up front: modules, then objects, then sources.
    first_blob = 2 + bool(variants) + bool(sources)
    next_blob = first_blob + len(contents.modules)
    index = []
    for variant in variants:
        numbers = {}
        for kernel in sorted(variant.objects):
            numbers[kernel] = next_blob
            next_blob += 1
        index.append(schema.variant_to_json(variant, numbers, version))
    if variants:
        sections.add(VARIANTS, canonical_json({"variants": index}), False)
    if sources:
        entries = [{"name": n, "section": next_blob + i} for i, (n, _) in enumerate(sources)]
        sections.add(SOURCES, canonical_json({"sources": entries}), False)
    for module in contents.modules:
        sections.add(SPIRV, bytes(module), True)
    for variant in variants:
        for kernel in sorted(variant.objects):
            sections.add(OBJECT, bytes(variant.objects[kernel]), True)
    for _, data in sources:
        sections.add(SOURCE, bytes(data), True)
    if len(sections.items) > MAX_SECTIONS:
        raise BinaryFormatError(f"too many sections ({len(sections.items)} > {MAX_SECTIONS})")
    return _layout(sections.items, version)


def _layout(items: list[tuple[int, int, bytes, bytes]], version: int) -> bytes:
    offset = HEADER.size + ENTRY.size * len(items)
    table = bytearray()
    for kind, compression, raw, stored in items:
        digest = hashlib.sha256(stored).digest()
        table += ENTRY.pack(kind, compression, offset, len(stored), len(raw), digest)
        offset += len(stored)
    header = HEADER.pack(MAGIC, version, len(items), offset, hashlib.sha256(table).digest())
    return b"".join([header, bytes(table), *(stored for *_, stored in items)])


def _check(contents: Contents) -> None:
    modules = len(contents.modules)
    if modules == 0:
        raise BinaryFormatError("a unified binary needs at least one SPIR-V module")
    for kernel in contents.kernels:
        if not 0 <= kernel.module < modules:
            raise BinaryFormatError(f"kernel {kernel.name!r} names module {kernel.module}")
    identities = [v.identity() for v in contents.variants]
    if len(set(identities)) != len(identities):
        raise BinaryFormatError("two native variants have the same target")
    for variant in contents.variants:
        if not 0 <= variant.module < modules:
            raise BinaryFormatError(f"variant {variant.name} names module {variant.module}")
        # What a reader would reject (unknown, repeated or unsorted facts; facts on CPU
        # code) is never written, so no file this writer makes has a rejected variant.
        _facts, problem = schema.launch_facts_from_json(list(variant.launch_facts), variant.target)
        if problem is not None or variant.problem is not None:
            raise BinaryFormatError(f"variant {variant.name}: {variant.problem or problem}")
    names = [name for name, _ in contents.sources]
    if len(set(names)) != len(names):
        raise BinaryFormatError("two embedded sources have the same name")
    for name in names:
        if not schema.file_name_ok(name):
            raise BinaryFormatError(f"embedded source name {name!r} is not a bare file name")


def write_file(contents: Contents, path: str | os.PathLike) -> None:
    """Writes the unified binary to ``path`` atomically (a reader never sees half a file),
    with the permissions of any other output file (0666 less the umask)."""
    write_atomic(path, write_bytes(contents), mode=0o666)
