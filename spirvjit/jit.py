"""The first-launch pipeline: SPIR-V → LLVM IR → optimized IR → native code.

The stages are the target's backend methods (``backends/base.py``) run in order;
timing, logging (SPIRVJIT_DEBUG) and dumping (SPIRVJIT_DUMP) wrap them from outside.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import config
from .backends import backend
from .spirv.module import Module
from .target import Target
from .translate.amdgcn import unsupported_call
from .translate.kernel_ir import parse_ir
from .translate.module import ModuleTranslator, Translation
from .translate.signature import KernelSignature

log = logging.getLogger("spirvjit")

_FILE_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


class Abandoned(Exception):
    """A compile given up between two of its stages (``abandoned_when``)."""


_abandon = threading.local()  # .check: this thread's abandon_when condition


@contextlib.contextmanager
def abandoned_when(check: Callable[[], bool]) -> Iterator[None]:
    """Within: every stage this thread starts (``StageTimes.run``) raises Abandoned
    instead once ``check()`` is true. A background compile nobody waits for can so be
    given up at the next stage boundary (the tiered JIT's at process exit)."""
    _abandon.check = check
    try:
        yield
    finally:
        _abandon.check = None


@dataclass
class StageTimes:
    """Seconds spent per stage of one JIT, in pipeline order."""

    seconds: dict[str, float] = field(default_factory=dict)

    def run(self, name: str, fn: Callable, *args):
        check = getattr(_abandon, "check", None)
        if check is not None and check():
            raise Abandoned(f"compile abandoned before its {name} stage")
        start = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - start

    @property
    def total(self) -> float:
        return sum(self.seconds.values())

    def __str__(self) -> str:
        parts = ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in self.seconds.items())
        return f"{self.total * 1e3:.1f} ms ({parts})"


def quick_look(
    module: Module, target: Target, spec_constants: dict, prefix: str
) -> tuple[dict[str, KernelSignature] | None, bool]:
    """(kernel signatures, whether the program has writable program-scope variables)
    without translating function bodies; signatures are None where only a full
    translation can tell. Checks the entry points and the spec constant ids."""
    translator = ModuleTranslator(module, backend(target.kind).abi(target), spec_constants, prefix)
    return translator.signatures(), translator.has_mutable_globals()


def key_options(target: Target) -> tuple[str, ...]:
    """What besides the target decides a kernel's code (e.g. a GPU's device library)."""
    return backend(target.kind).key_options(target)


def translate_program(
    module: Module, target: Target, spec_constants: dict, prefix: str, options: tuple = ()
) -> Translation:
    """Translates the module once per program and wraps every kernel for the target."""
    owner = backend(target.kind)
    return owner.translate_program(module, target, spec_constants, prefix, options)


def kernel_symbol(module: Module, prefix: str, kernel: str, target: Target) -> str:
    """The exported symbol of a kernel's native code (the backend names it)."""
    return backend(target.kind).kernel_symbol(module, prefix, kernel)


def compile_kernel(
    translation: Translation,
    target: Target,
    symbol: str,
    dump_as: str | None,
    times: StageTimes,
    specialization: tuple = (),
    dump_stem: str | None = None,
) -> bytes:
    """Kernel IR → optimized → object code; dumps each stage when SPIRVJIT_DUMP is set,
    as ``<dump_stem>.<stage>`` (``dump_as``, the kernel's name, also names it in errors).

    The object code is whatever the target's backend emits: a host object file, an AMD
    code object, an NVIDIA cubin (PTX where ptxas is not installed)."""
    directory = config.dump_dir() if dump_as else None
    stem = dump_stem or dump_as
    llmod = _optimized(translation, target, symbol, dump_as, times, directory, specialization, stem)
    owner = backend(target.kind)
    if directory is not None:
        # From a copy: code generation changes the module (AMDGPU structurizes it), so
        # a second emission from the same module can fail.
        assembly = owner.assembly(llmod.clone(), target)
        dump(directory, stem, {"opt.ll": str(llmod), "s": assembly})
    return times.run("obj", owner.emit, llmod, target, f"{symbol} for {target.name}")


def kernel_assembly(
    translation: Translation, target: Target, symbol: str, specialization: tuple = ()
) -> str:
    """What ``compile_kernel`` would produce, as assembly (GCN, PTX, x86-64, ...)."""
    llmod = _optimized(translation, target, symbol, None, StageTimes(), None, specialization)
    return backend(target.kind).assembly(llmod, target)


def _optimized(
    translation, target, symbol, dump_as, times, directory, specialization=(), stem=None
):
    owner = backend(target.kind)
    text = times.run("llir", owner.kernel_ir, translation, target, symbol, specialization)
    unsupported = unsupported_call(text, dump_as or symbol, target.name)
    unsupported = unsupported or translation.untranslatable(text, dump_as or symbol)
    if unsupported is not None:
        raise unsupported
    if directory is not None:
        # Before parsing: IR that LLVM rejects is kept too.
        dump(directory, stem or dump_as, {"ll": text})
    llmod = times.run("parse", parse_ir, text, dump_as or symbol)
    # The optimized module may be a new one (the CPU optimizes in a child process
    # after many kernels: codegen.optimize).
    if QUICK_TIER in specialization:
        # The quick tier (backends/cpu/tiered.py): the name tells the backend to run its
        # few passes and generate code at -O0.
        llmod.name += QUICK_MODULE_SUFFIX
        llmod = times.run("opt", owner.optimize, llmod, target, symbol)
    elif ("debug", "1") in specialization:
        # Debug mode keeps the code as translated, so every variable has its stack slot
        # and every line its code; the name tells the backend to generate code at -O0
        # (backends/cpu/debugload.py).
        llmod.name += DEBUG_MODULE_SUFFIX
    else:
        llmod = times.run("opt", owner.optimize, llmod, target, symbol)
    return llmod


DEBUG_MODULE_SUFFIX = " (debug mode)"

# The specialization of a kernel's quick tier (backends/cpu/tiered.py): never cached.
QUICK_TIER = ("tier", "0")
QUICK_MODULE_SUFFIX = " (quick tier)"


def dump(directory: Path, kernel: str, files: dict[str, str | bytes]) -> None:
    """Writes ``<kernel>.<suffix>`` files; a dump failure is logged, never raised."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        stem = _FILE_SAFE.sub("_", kernel)
        for suffix, content in files.items():
            path = directory / f"{stem}.{suffix}"
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)
    except OSError as exc:
        log.warning("spirvjit: cannot write stage dumps to %s: %s", directory, exc)
