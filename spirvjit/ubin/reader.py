"""Unified binary bytes → contents, trusting nothing.

``UnifiedBinary`` parses the header, the section table and the metadata sections
eagerly (every length, offset, count and checksum is checked before use) and reads
blobs (SPIR-V, native objects, sources) only when asked, so a loader touches just the
module and the variant it runs, straight from an mmap. Anything wrong raises
BinaryFormatError with the byte offset of the offending field or section.
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from ..errors import BinaryFormatError
from . import schema, signature
from .format import (
    BUILD,
    ENTRY,
    HEADER,
    KERNELS,
    KIND_NAMES,
    MAGIC,
    MAX_SECTIONS,
    OBJECT,
    RAW,
    SOURCE,
    SOURCES,
    SPIRV,
    VARIANTS,
    VERSIONS,
    ZSTD,
    BuildRecord,
    Contents,
    KernelInfo,
    Variant,
    canonical_json,
    max_raw_size,
)


@dataclass(frozen=True, slots=True)
class Section:
    """One section table entry (already checked against the file)."""

    number: int
    kind: int
    compression: int
    offset: int
    stored_size: int
    raw_size: int
    sha256: bytes

    @property
    def kind_name(self) -> str:
        return KIND_NAMES[self.kind]

    def where(self) -> str:
        return f"section {self.number} ({self.kind_name})"


class _Objects(Mapping):
    """A variant's kernel → object code, read from the file on first access."""

    def __init__(self, binary: UnifiedBinary, sections: dict[str, int]):
        self._binary = binary
        self._sections = sections
        self._loaded: dict[str, bytes] = {}

    def __getitem__(self, kernel: str) -> bytes:
        if kernel not in self._loaded:
            self._loaded[kernel] = self._binary.payload(self._sections[kernel])
        return self._loaded[kernel]

    def __iter__(self) -> Iterator[str]:
        return iter(self._sections)

    def __len__(self) -> int:
        return len(self._sections)

    def sizes(self) -> tuple[int, int]:
        """Bytes these objects take decompressed and in the file."""
        sections = [self._binary.sections[n] for n in self._sections.values()]
        return sum(s.raw_size for s in sections), sum(s.stored_size for s in sections)


class UnifiedBinary:
    """A parsed unified binary. ``data`` must stay unchanged while this object is used.

    ``size`` is the size of the file without its signature footer, ``file_size`` with it;
    ``footer`` the signature footer, if any (parsed, not verified: see ``trust``);
    ``location_problem`` why the file's location does not vouch for it (set by
    ``read_file``; a binary made from bytes has no location).
    """

    FROM_BYTES = "it was given as bytes, not read from a file"

    def __init__(self, data: bytes | bytearray | memoryview | mmap.mmap, name: str = "<bytes>"):
        self.name = name
        self._data = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        self.file_size = self.size = len(self._data)
        self.footer: signature.Footer | None = None
        self.location_problem: str | None = self.FROM_BYTES
        self.path: str | None = None  # the resolved path, when read from a file
        self.version = 0  # the format version, read with the table
        self.sections = self._read_table()
        by_kind: dict[int, list[Section]] = {}
        for section in self.sections:
            by_kind.setdefault(section.kind, []).append(section)
        self._check_counts(by_kind)
        self._modules = [s.number for s in by_kind[SPIRV]]
        kernels = self._metadata(by_kind[KERNELS][0])
        self.kernels: tuple[KernelInfo, ...] = schema.kernels_from_json(
            kernels, self._where(by_kind[KERNELS][0]), len(self._modules)
        )
        self.build: BuildRecord = schema.build_from_json(
            self._metadata(by_kind[BUILD][0]), self._where(by_kind[BUILD][0])
        )
        claimed: set[int] = set()
        self.variants: tuple[Variant, ...] = ()
        if VARIANTS in by_kind:
            self.variants = self._read_variants(by_kind[VARIANTS][0], claimed)
        self._sources: dict[str, int] = {}
        if SOURCES in by_kind:
            section = by_kind[SOURCES][0]
            where = self._where(section)
            self._sources = schema.sources_from_json(self._metadata(section), where)
            for name, number in self._sources.items():
                self._claim(number, SOURCE, claimed, where, f"source {name!r}")
        for section in self.sections:
            if section.kind in (OBJECT, SOURCE) and section.number not in claimed:
                raise BinaryFormatError(
                    f"{section.where()} is not referenced by any index", section.offset
                )

    # --- header and table ----------------------------------------------------------------

    def _read_table(self) -> tuple[Section, ...]:
        data = self._data
        if self.size < HEADER.size:
            raise BinaryFormatError(
                f"truncated: {self.size} bytes, the header alone needs {HEADER.size}", self.size
            )
        magic, version, count, file_size, table_sha = HEADER.unpack_from(data, 0)
        if magic != MAGIC:
            raise BinaryFormatError(
                f"not a unified binary (magic {bytes(magic)!r}, expected {MAGIC!r})", 0
            )
        if version not in VERSIONS:
            known = " and ".join(map(str, VERSIONS))
            raise BinaryFormatError(
                f"format version {version} is not supported (this spirvjit reads versions "
                f"{known}); use the spirvjit that wrote it or rebuild the file",
                8,
            )
        self.version = version
        if not 1 <= count <= MAX_SECTIONS:
            raise BinaryFormatError(f"section count {count} not in [1, {MAX_SECTIONS}]", 12)
        if file_size != self.size:
            if file_size >= HEADER.size and self.size - file_size == signature.FOOTER.size:
                self.footer = signature.parse_footer(data, file_size)
                self.size = file_size
            else:
                raise BinaryFormatError(
                    f"header says the file is {file_size} bytes but it is {self.size}: "
                    + ("truncated" if self.size < file_size else "extra bytes at the end"),
                    16,
                )
        table_end = HEADER.size + count * ENTRY.size
        if table_end > self.size:
            raise BinaryFormatError(
                f"truncated: the table of {count} sections ends at byte {table_end}, "
                f"past the end of the file ({self.size})",
                HEADER.size,
            )
        if hashlib.sha256(data[HEADER.size : table_end]).digest() != table_sha:
            raise BinaryFormatError("section table checksum mismatch: the file is corrupted", 24)
        sections = []
        expected = table_end
        for number in range(count):
            at = HEADER.size + number * ENTRY.size
            kind, compression, offset, stored, raw, sha = ENTRY.unpack_from(data, at)
            if kind not in KIND_NAMES:
                raise BinaryFormatError(f"section {number} has unknown kind {kind}", at)
            name = f"section {number} ({KIND_NAMES[kind]})"
            if compression not in (RAW, ZSTD):
                raise BinaryFormatError(f"{name} has unknown compression {compression}", at + 4)
            if offset != expected:
                raise BinaryFormatError(
                    f"{name} starts at byte {offset}, expected {expected} "
                    "(sections follow the table back to back)",
                    at + 8,
                )
            if stored > self.size - offset:
                raise BinaryFormatError(
                    f"{name} of {stored} bytes at byte {offset} runs past the end of the file "
                    f"({self.size} bytes)",
                    at + 16,
                )
            limit = max_raw_size(kind, stored, compression)
            if raw > limit:
                raise BinaryFormatError(
                    f"{name} declares {raw} bytes decompressed, over the limit of {limit}",
                    at + 24,
                )
            if compression == RAW and raw != stored:
                raise BinaryFormatError(
                    f"{name} is uncompressed but declares {raw} raw bytes for {stored} stored",
                    at + 24,
                )
            sections.append(Section(number, kind, compression, offset, stored, raw, sha))
            expected = offset + stored
        if expected != self.size:
            raise BinaryFormatError(
                f"{self.size - expected} bytes after the last section", expected
            )
        return tuple(sections)

    @staticmethod
    def _check_counts(by_kind: dict[int, list[Section]]) -> None:
        for kind, low, high in ((SPIRV, 1, None), (KERNELS, 1, 1), (BUILD, 1, 1)):
            found = by_kind.get(kind, [])
            if len(found) < low or (high is not None and len(found) > high):
                wanted = f"exactly {low}" if high else f"at least {low}"
                raise BinaryFormatError(
                    f"{len(found)} {KIND_NAMES[kind]} sections, expected {wanted}",
                    found[high].offset if high is not None and len(found) > high else HEADER.size,
                )
        for kind in (VARIANTS, SOURCES):
            found = by_kind.get(kind, [])
            if len(found) > 1:
                raise BinaryFormatError(
                    f"{len(found)} {KIND_NAMES[kind]} sections, expected at most 1",
                    found[1].offset,
                )

    # --- payloads --------------------------------------------------------------------------

    def payload(self, number: int) -> bytes:
        """Section ``number``'s raw bytes, after checking its SHA-256 and decompressing."""
        section = self.sections[number]
        stored = self._data[section.offset : section.offset + section.stored_size]
        if hashlib.sha256(stored).digest() != section.sha256:
            raise BinaryFormatError(
                f"{section.where()}: SHA-256 mismatch, the file is corrupted", section.offset
            )
        if section.compression == RAW:
            return bytes(stored)
        return _decompress(stored, section)

    def _metadata(self, section: Section) -> object:
        """A JSON section's value. Strict (docs/ubin.md): ASCII, no duplicate keys, no
        NaN or infinities, and spelled exactly as ``canonical_json`` spells it, so one
        value has one encoding and two readers can never see different documents."""
        raw = self.payload(section.number)
        try:
            value = json.loads(
                raw.decode("ascii"),
                object_pairs_hook=_unique_keys,
                parse_constant=_no_constant,
            )
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            raise BinaryFormatError(
                f"{section.where()}: not valid JSON: {exc}", section.offset
            ) from None
        try:
            canonical = canonical_json(value)
        except (ValueError, RecursionError):  # nesting too deep to re-encode
            canonical = None
        if canonical != raw:
            raise BinaryFormatError(
                f"{section.where()}: JSON is not in canonical form (sorted keys, no "
                "whitespace, ASCII with lowercase \\u escapes, shortest numbers)",
                section.offset,
            )
        return value

    def _where(self, section: Section) -> schema.Where:
        return schema.Where(section.kind_name, section.offset, self.version)

    def _claim(self, number: int, kind: int, claimed: set[int], where, what: str) -> None:
        if not 0 <= number < len(self.sections) or self.sections[number].kind != kind:
            raise where.error(what, f"section {number} is not a {KIND_NAMES[kind]} section")
        if number in claimed:
            raise where.error(what, f"section {number} is referenced twice")
        claimed.add(number)

    def _read_variants(self, section: Section, claimed: set[int]) -> tuple[Variant, ...]:
        where = self._where(section)
        value = where.exact(self._metadata(section), ("variants",), "top level")
        entries = where.field(value, "variants", list, "top level")
        variants = []
        identities = set()
        for i, entry in enumerate(entries):
            fields, objects = schema.variant_from_json(
                entry, where, i, len(self._modules), self.version
            )
            known = {k.name for k in self.kernels if k.module == fields["module"]}
            for kernel, number in objects.items():
                what = f"variant {i}, object {kernel!r}"
                if kernel not in known:
                    raise where.error(what, f"no kernel {kernel!r} in module {fields['module']}")
                self._claim(number, OBJECT, claimed, where, what)
            variant = Variant(**fields, objects=_Objects(self, dict(objects)))
            if variant.identity() in identities:
                raise where.error(f"variant {i}", f"target {variant.name} appears twice")
            identities.add(variant.identity())
            variants.append(variant)
        return tuple(variants)

    # --- public accessors --------------------------------------------------------------------

    @property
    def data(self):
        """The whole file's bytes (with the signature footer, if any), unchanged."""
        return self._data

    @property
    def module_count(self) -> int:
        return len(self._modules)

    def module(self, index: int) -> bytes:
        """The SPIR-V module ``index`` (IndexError when there is no such module)."""
        return self.payload(self._modules[index])

    def module_section(self, index: int) -> Section:
        return self.sections[self._modules[index]]

    @property
    def source_names(self) -> tuple[str, ...]:
        return tuple(self._sources)

    def source(self, name: str) -> bytes:
        return self.payload(self._sources[name])

    def verify(self) -> None:
        """Checks every section's SHA-256 and decompression (what loading does lazily)."""
        for section in self.sections:
            self.payload(section.number)

    def contents(self) -> Contents:
        """Everything, read into memory (to modify and write back)."""
        variants = tuple(
            Variant(
                target=v.target,
                module=v.module,
                spirv_sha256=v.spirv_sha256,
                spec_constants=v.spec_constants,
                compiler_digest=v.compiler_digest,
                llvm_version=v.llvm_version,
                spirvjit_version=v.spirvjit_version,
                objects={k: v.objects[k] for k in v.objects},
                launch_facts=v.launch_facts,
                problem=v.problem,
            )
            for v in self.variants
        )
        return Contents(
            modules=tuple(self.module(i) for i in range(self.module_count)),
            kernels=self.kernels,
            build=self.build,
            variants=variants,
            sources=tuple((n, self.source(n)) for n in self.source_names),
        )


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    """``json.loads``'s object hook: a key given twice is an error, not "last one wins"."""
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise ValueError(f"duplicate key {twice!r}")
    return value


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _check_frame(stored: bytes, section: Section) -> None:
    """The stored bytes must be exactly one zstd frame (docs/ubin.md): no dictionary, the
    content size recorded and equal to the table's raw size, a content checksum (verified
    by the decompressor when it reaches the frame's end), and nothing after it.

    Walks the block headers only (a few thousand at most: blocks hold up to 128 KiB).
    """
    import zstandard

    def bad(message: str) -> BinaryFormatError:
        return BinaryFormatError(f"{section.where()}: {message}", section.offset)

    if stored[:4] != _ZSTD_MAGIC:
        raise bad("not a zstd frame (bad magic)")
    try:
        header = zstandard.frame_header_size(stored)
        params = zstandard.get_frame_parameters(stored)
    except zstandard.ZstdError as exc:
        raise bad(f"bad zstd frame header: {exc}") from None
    if params.dict_id:
        raise bad("zstd frame needs a dictionary")
    if not params.has_checksum:
        raise bad("zstd frame has no content checksum (written by an older spirvjit: rebuild it)")
    if params.content_size != section.raw_size:
        raise bad(
            f"zstd frame says {params.content_size} bytes decompressed, the table says "
            f"{section.raw_size}"
        )
    at = header
    while True:
        if at + 3 > len(stored):
            raise bad("zstd frame truncated inside its blocks")
        word = int.from_bytes(stored[at : at + 3], "little")
        last, kind, size = word & 1, (word >> 1) & 3, word >> 3
        if kind == 3:
            raise bad("zstd frame has a reserved block type")
        at += 3 + (1 if kind == 1 else size)
        if last:
            break
    at += 4  # the content checksum
    if at != len(stored):
        more = "truncated" if at > len(stored) else f"{len(stored) - at} bytes after the frame"
        raise bad(f"not exactly one zstd frame: {more}")


def _decompress(stored: memoryview, section: Section) -> bytes:
    """Decompresses at most ``raw_size`` + 1 bytes: a lying frame cannot exhaust memory."""
    import zstandard

    stored = bytes(stored)
    _check_frame(stored, section)
    wanted = section.raw_size
    chunks, total = [], 0
    try:
        with zstandard.ZstdDecompressor().stream_reader(stored) as reader:
            while total <= wanted:
                chunk = reader.read(min(wanted + 1 - total, 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
    except zstandard.ZstdError as exc:
        raise BinaryFormatError(
            f"{section.where()}: bad zstd data: {exc}", section.offset
        ) from None
    if total != wanted:
        got = f"more than {wanted}" if total > wanted else str(total)
        raise BinaryFormatError(
            f"{section.where()}: decompresses to {got} bytes, the table says {wanted}",
            section.offset,
        )
    return b"".join(chunks)


def read_file(path: str | os.PathLike) -> UnifiedBinary:
    """Parses the unified binary at ``path`` (mapped, not read, when it is not empty).

    Also judges the file's location (``location_problem``): whether another user could
    have written it or could swap it (``safe_paths``), from the status of the file
    actually opened. Raises OSError, or BinaryFormatError when it is not a regular file.
    """
    from ..safe_paths import file_problem, parents_problem

    path = os.fspath(path)
    # The resolved path: the directories checked are those of the file opened.
    # O_NONBLOCK: a FIFO must not block the open; it is refused below.
    real = os.path.realpath(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(real, flags)
    with os.fdopen(fd, "rb"):  # closes fd; the mmap keeps its own reference
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BinaryFormatError(f"{path} is not a regular file")
        data = mmap.mmap(fd, 0, access=mmap.ACCESS_READ) if st.st_size else b""
    binary = UnifiedBinary(data, os.path.basename(path))
    try:
        why = file_problem(st) or parents_problem(real, st)
    except OSError as exc:
        why = f"its directories cannot be examined ({exc.strerror})"
    binary.location_problem = f"{real} {why}" if why else None
    binary.path = real
    return binary
