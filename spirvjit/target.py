"""Targets: what a kernel is compiled for. The one place target strings are parsed."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Target:
    """A compilation target: ``kind`` is "cpu", "amdgpu" or "nvptx"."""

    kind: str
    triple: str
    arch: str  # the LLVM CPU name, e.g. "znver4", "x86-64-v3", "gfx942" or "sm_90"
    features: str = ""  # the LLVM feature string, e.g. "+avx2,+fma" or "+xnack"

    def __str__(self) -> str:
        return f"{self.kind}:{self.triple}:{self.arch}"

    @property
    def name(self) -> str:
        """The name :func:`parse_target` reads back: "gfx90a:xnack+", "sm_90", "x86-64-v3"."""
        from .backends import target_name_parsers

        parser = target_name_parsers().get(self.kind)
        return parser.name_of(self) if parser else self.arch


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


def parse_target(text: str) -> Target:
    """The target named ``text``: a CPU name (see :func:`parse_cpu_target`), or a GPU name
    one of the GPU backends reads (AMD: ``gfx942``, ``gfx90a:xnack+``, ``gfx9-4-generic``;
    NVIDIA: ``sm_80``, ``sm_90a``).

    GPU names are checked against the processors the bundled LLVM knows, so a GPU LLVM
    adds works without a change here. Raises ValueError listing the valid names otherwise.
    """
    from .backends import target_name_parsers

    name = text.strip()
    for parser in target_name_parsers().values():
        found = parser.parse(name)
        if found is not None:
            return found
    return parse_cpu_target(name)


def parse_targets(text: str) -> list[Target]:
    """Comma-separated target names (``gfx942,sm_90,host``) as Targets."""
    names = [n for n in (part.strip() for part in text.split(",")) if n]
    if not names:
        raise ValueError("no target named; e.g. --target host,gfx942,sm_90")
    return [parse_target(n) for n in names]


_capture_lock = threading.Lock()


@functools.cache
def _llvm_complaints(triple: str, cpu: str, features: str) -> str:
    """What LLVM writes to stderr while making a target machine for ``cpu``: it warns
    about processors and features it does not know and goes on, so the warning is the
    only sign. The C++ side writes to file descriptor 2, so that is what is captured."""
    import llvmlite.binding as llvm

    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    target = llvm.Target.from_triple(triple)
    with _capture_lock, tempfile.TemporaryFile() as sink:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(sink.fileno(), 2)
        try:
            target.create_target_machine(cpu=cpu, features=features)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        sink.seek(0)
        return sink.read().decode(errors="replace")


def check_processor(triple: str, cpu: str, features: str, name: str) -> None:
    """Raises ValueError unless LLVM knows processor ``cpu`` and ``features`` for ``triple``
    (``name``: the target name the user wrote)."""
    complaints = _llvm_complaints(triple, cpu, features)
    if "not a recognized processor" in complaints:
        known = ", ".join(llvm_processors(triple)) or "(LLVM lists none)"
        raise ValueError(f"{name!r} is not a processor LLVM knows for {triple}; known: {known}")
    if "not a recognized" in complaints:  # a feature
        raise ValueError(f"{name!r}: {complaints.strip().splitlines()[0]}")


@functools.cache
def llvm_processors(triple: str) -> tuple[str, ...]:
    """The processor names the bundled LLVM knows for ``triple`` (its ``-mcpu=help`` list).

    LLVM prints that list once per process, so it is read in a child process.
    """
    program = (
        "import llvmlite.binding as l; l.initialize_all_targets(); "
        f"l.Target.from_triple({triple!r}).create_target_machine(cpu='help')"
    )
    try:
        proc = subprocess.run(
            [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return ()
    names = []
    for line in proc.stderr.split("Available features")[0].splitlines():
        match = re.match(r"^\s+(\S+)\s+- Select the", line)
        if match and match.group(1) not in ("generic", "generic-hsa"):
            names.append(match.group(1))
    return tuple(names)
