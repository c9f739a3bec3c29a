"""Unified binaries built by hand for the format and fuzz tests (no compiler needed)."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

from spirvjit.target import Target
from spirvjit.ubin import format as fmt
from spirvjit.ubin.format import ArgInfo, BuildRecord, Contents, KernelInfo, Variant

DATA = Path(__file__).resolve().parents[1] / "data"
SPIRV = (DATA / "reader_kernels.clang22.spv").read_bytes()
TRIPLE = "x86_64-unknown-linux-gnu"
DIGEST = hashlib.sha256(SPIRV).hexdigest()


def kernel(name: str) -> KernelInfo:
    return KernelInfo(
        name=name,
        module=0,
        args=(
            ArgInfo("a", "value", "float32", None, 4, 4),
            ArgInfo("x", "global", "float32x4", "read_only", 8, 16),
        ),
        required_work_group_size=(64, 1, 1),
        execution_modes=("ContractionOff",),
    )


def variant(cpu: str, features: str = "", objects=None, **changes) -> Variant:
    fields = dict(
        target=Target("cpu", TRIPLE, cpu, features),
        module=0,
        spirv_sha256=DIGEST,
        spec_constants=(),
        compiler_digest="0" * 64,
        llvm_version="22.1.0",
        spirvjit_version="0.1.0",
        objects=objects if objects is not None else {"k1": b"\x7fELF" + cpu.encode() * 50},
    )
    fields.update(changes)
    return Variant(**fields)


GPU = Target("nvptx", "nvptx64-nvidia-cuda", "sm_90", "")
COMMON = ("ids32", "uniform", "zero_offset")  # every launch fact: the common launch


def gpu_variant(launch_facts=(), **changes) -> Variant:
    """An sm_90 variant: generic code (no launch facts) or code for ``launch_facts``."""
    tag = ",".join(launch_facts).encode()
    fields = dict(
        target=GPU,
        objects={"k1": b"\x7fELF cubin " + tag * 20, "k2": b"\x7fELF cubin2 " + tag * 20},
        launch_facts=tuple(launch_facts),
    )
    fields.update(changes)
    return variant("sm_90", **fields)


def contents_v2(**changes) -> Contents:
    """A version-2 file: CPU variants, and an sm_90 GPU's generic and common-launch code."""
    return contents(variants=(variant("x86-64-v3"), gpu_variant(), gpu_variant(COMMON)), **changes)


def contents(**changes) -> Contents:
    fields = dict(
        modules=(SPIRV,),
        kernels=(kernel("k1"), kernel("k2")),
        build=BuildRecord(
            producer="clang",
            compiler="clang-22",
            compiler_version="clang version 22",
            flags=("-DN=4",),
            inputs=(("a.cl", "1" * 64),),
            source_digest="2" * 64,
            spirvjit_version="0.1.0",
        ),
        variants=(variant("x86-64-v3"), variant("x86-64")),
        sources=(("a.cl", b"kernel void k1() {}\n"),),
    )
    fields.update(changes)
    return Contents(**fields)


def sections(data: bytes) -> list[list]:
    """The table as [kind, compression, raw size, stored bytes] rows (no checks)."""
    count = fmt.HEADER.unpack_from(data, 0)[2]
    rows = []
    for i in range(count):
        kind, comp, offset, stored, raw, _ = fmt.ENTRY.unpack_from(
            data, fmt.HEADER.size + i * fmt.ENTRY.size
        )
        rows.append([kind, comp, raw, data[offset : offset + stored]])
    return rows


def assemble(rows: list[list], version: int = fmt.VERSION) -> bytes:
    """A well-formed layout (offsets, sizes, checksums) around arbitrary rows."""
    offset = fmt.HEADER.size + fmt.ENTRY.size * len(rows)
    table = b""
    for kind, comp, raw, stored in rows:
        table += fmt.ENTRY.pack(
            kind, comp, offset, len(stored), raw, hashlib.sha256(stored).digest()
        )
        offset += len(stored)
    header = fmt.HEADER.pack(fmt.MAGIC, version, len(rows), offset, hashlib.sha256(table).digest())
    return header + table + b"".join(row[3] for row in rows)


def version(data: bytes) -> int:
    """The format version in ``data``'s header."""
    return fmt.HEADER.unpack_from(data, 0)[1]


def u32(value: int) -> bytes:
    return struct.pack("<I", value)
