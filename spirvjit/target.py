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


# The x86-64 psABI micro-architecture levels (x86-64 psABI 1.0, section 3.1.1) as LLVM
# feature names; each level includes the ones before it. LLVM's CPU names are the same.
_LEVEL_ADDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("x86-64", ("cmov", "cx8", "fxsr", "mmx", "sse", "sse2")),
    ("x86-64-v2", ("cx16", "popcnt", "sahf", "sse3", "sse4.1", "sse4.2", "ssse3")),
    ("x86-64-v3", ("avx", "avx2", "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave")),
    ("x86-64-v4", ("avx512bw", "avx512cd", "avx512dq", "avx512f", "avx512vl")),
)


def _accumulate() -> dict[str, frozenset[str]]:
    levels, features = {}, frozenset()
    for name, adds in _LEVEL_ADDS:
        features |= frozenset(adds)
        levels[name] = features
    return levels


X86_64_LEVELS: dict[str, frozenset[str]] = _accumulate()
CPU_TARGET_NAMES: tuple[str, ...] = ("host", "generic", *X86_64_LEVELS)


def enabled_features(features: str) -> frozenset[str]:
    """The features an LLVM feature string turns on: "+avx2,-avx512f" -> {"avx2"}."""
    return frozenset(f[1:] for f in features.split(",") if f.startswith("+"))


def parse_cpu_target(text: str) -> Target:
    """The CPU target named ``text`` on this host's triple.

    "host" is this machine's exact CPU and features; "generic" LLVM's baseline CPU for
    the triple; "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4" the psABI levels (x86-64
    hosts only). Raises ValueError listing the valid names otherwise.
    """
    host = host_target()
    name = text.strip()
    if name == "host":
        return host
    if name == "generic":
        return Target("cpu", host.triple, "generic", "")
    on_x86 = host.triple.startswith("x86_64")
    if name in X86_64_LEVELS and on_x86:
        features = ",".join("+" + f for f in sorted(X86_64_LEVELS[name]))
        return Target("cpu", host.triple, name, features)
    valid = CPU_TARGET_NAMES if on_x86 else ("host", "generic")
    why = (
        f"{name!r} is an x86-64 level but this host is {host.triple}"
        if name in X86_64_LEVELS
        else f"unknown CPU target {name!r}"
    )
    raise ValueError(f"{why}; valid targets: {', '.join(valid)}")
