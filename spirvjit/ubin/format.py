"""The unified binary layout (docs/ubin.md) and the in-memory model of its contents.

Layout, all integers little-endian::

    header   magic (8) | version u32 | section count u32 | file size u64 | table sha256 (32)
    table    one entry per section: kind u32 | compression u32 | offset u64
             | stored size u64 | raw size u64 | sha256 of the stored bytes (32)
    payloads the sections' stored bytes, back to back in table order, ending at file size

Metadata sections (kernel table, build record, variant and source indexes) are canonical
JSON; blobs (SPIR-V modules, native objects, sources) are zstd-compressed.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field

from ..target import Target

# \x89 catches 7-bit transfers, \r\n and \x1a catch text-mode line-ending mangling (as PNG).
MAGIC = b"\x89UBIN\r\n\x1a"
# Format versions (docs/ubin.md#versioning). A writer writes the lowest version that
# holds the contents, so a file without launch-specialised variants stays readable by
# every spirvjit that reads version 1.
VERSION = 1  # the base format
LAUNCH_FACTS_VERSION = 2  # version 1 + every variant names its launch facts
VERSIONS = (VERSION, LAUNCH_FACTS_VERSION)  # what this spirvjit reads
HEADER = struct.Struct("<8sIIQ32s")
ENTRY = struct.Struct("<IIQQQ32s")

# Section kinds.
SPIRV = 1
KERNELS = 2
BUILD = 3
VARIANTS = 4
OBJECT = 5
SOURCES = 6
SOURCE = 7
KIND_NAMES = {
    SPIRV: "spirv",
    KERNELS: "kernels",
    BUILD: "build",
    VARIANTS: "variants",
    OBJECT: "object",
    SOURCES: "sources",
    SOURCE: "source",
}
METADATA_KINDS = frozenset({KERNELS, BUILD, VARIANTS, SOURCES})

# Compression of a section's stored bytes.
RAW = 0
ZSTD = 1
ZSTD_LEVEL = 19  # fixed: the same inputs must give the same bytes

# Limits a reader enforces before allocating anything; a writer refuses to exceed them.
MAX_SECTIONS = 1 << 16
MAX_RAW_BYTES = 256 << 20  # any one section, decompressed
MAX_METADATA_BYTES = 16 << 20  # a JSON section
# zstd can expand a few bytes into gigabytes; real SPIR-V and objects compress 3-10x.
MAX_RATIO = 1024
MIN_RATIO_ALLOWANCE = 4096  # tiny sections may compress better than MAX_RATIO allows


def max_raw_size(kind: int, stored: int, compression: int) -> int:
    """The largest raw size a section of this kind and stored size may declare."""
    limit = MAX_METADATA_BYTES if kind in METADATA_KINDS else MAX_RAW_BYTES
    if compression == ZSTD:
        limit = min(limit, stored * MAX_RATIO + MIN_RATIO_ALLOWANCE)
    return limit


def canonical_json(value: object) -> bytes:
    """The one JSON spelling of ``value``: sorted keys, no spaces, ASCII only."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    ).encode("ascii")


@dataclass(frozen=True, slots=True)
class ArgInfo:
    """One kernel argument.

    ``kind`` is the address space of a pointer ("global", "constant", "local") or "value"
    / "struct" for by-value arguments; ``type`` the element (or value) type as in
    "float32", "int32x4" (None when unknown, e.g. ``char*`` or a struct); ``access``
    "read_only" when the module marks the pointer NoWrite, "none" for NoReadWrite, None
    when unknown; ``size``/``align`` the by-value size and alignment (pointer size for
    pointers).
    """

    name: str
    kind: str
    type: str | None
    access: str | None
    size: int
    align: int


@dataclass(frozen=True, slots=True)
class KernelInfo:
    """One kernel: which module defines it, its arguments and execution modes."""

    name: str
    module: int
    args: tuple[ArgInfo, ...]
    required_work_group_size: tuple[int, int, int] | None = None
    work_group_size_hint: tuple[int, int, int] | None = None
    execution_modes: tuple[str, ...] = ()
    static_local_bytes: int = 0


@dataclass(frozen=True, slots=True)
class BuildRecord:
    """How the SPIR-V was made. No times or paths: the same build gives the same record."""

    producer: str  # "clang", "translator", "python" or "spirv" (prebuilt modules only)
    compiler: str | None  # e.g. "clang-22"
    compiler_version: str | None  # the compiler's first --version line
    flags: tuple[str, ...]
    inputs: tuple[tuple[str, str], ...]  # (file name, sha256) in command-line order
    source_digest: str  # sha256 over the inputs' names and digests
    spirvjit_version: str


@dataclass(frozen=True, slots=True)
class Variant:
    """Native code of the kernels of one module for one target.

    Valid only for the module whose SPIR-V hashes to ``spirv_sha256``, these spec
    constants and the spirvjit compiler and LLVM that built it (symbol names and code
    generation depend on all of them).
    """

    target: Target
    module: int
    spirv_sha256: str
    spec_constants: tuple[tuple[int, int | float | bool], ...]
    compiler_digest: str
    llvm_version: str
    spirvjit_version: str
    objects: dict[str, bytes] = field(compare=False)  # kernel -> object file
    # The launch facts (backends/gpu/abi.py LAUNCH_FACTS, sorted) the code assumes: () is
    # the generic code, right for every launch; a GPU variant specialised for the common
    # launch has ("ids32", "uniform", "zero_offset") and runs only launches that keep
    # them. As read from the file: ``problem`` says why they are unusable, if they are.
    launch_facts: tuple[str, ...] = ()
    # Why this spirvjit cannot use the variant at all (malformed or unknown launch
    # facts, read from a file), or None. Such a variant is passed over at load.
    problem: str | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        """The target as ``inspect`` shows it, e.g. "cpu:x86_64-unknown-linux-gnu:x86-64-v3",
        with the launch facts of a specialised variant: "nvptx:...:sm_90 [ids32,uniform,...]"."""
        facts = f" [{','.join(self.launch_facts)}]" if self.launch_facts else ""
        return f"{self.target}{facts}"

    def identity(self) -> tuple[str, str, str, str, tuple[str, ...]]:
        t = self.target
        return (t.kind, t.triple, t.arch, t.features, self.launch_facts)


@dataclass(frozen=True, slots=True)
class Contents:
    """Everything a unified binary holds, fully in memory (what the writer takes)."""

    modules: tuple[bytes, ...]
    kernels: tuple[KernelInfo, ...]
    build: BuildRecord
    variants: tuple[Variant, ...] = ()
    sources: tuple[tuple[str, bytes], ...] = ()  # (file name, bytes)
