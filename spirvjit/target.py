"""Targets: what a kernel is compiled for. The one place target strings are parsed."""

from __future__ import annotations

import functools
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Target:
    """A compilation target: ``kind`` is "cpu" (later "amdgpu", "nvptx")."""

    kind: str
    triple: str
    arch: str  # the LLVM CPU name, e.g. "znver4" or "x86-64-v3"
    features: str = ""  # the LLVM feature string, e.g. "+avx2,+fma"

    def __str__(self) -> str:
        return f"{self.kind}:{self.triple}:{self.arch}"


@functools.cache
def host_target() -> Target:
    """The CPU this process runs on, with the features LLVM detects on it."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    return Target(
        kind="cpu",
        triple=llvm.get_process_triple(),
        arch=llvm.get_host_cpu_name(),
        features=llvm.get_host_cpu_features().flatten(),
    )
