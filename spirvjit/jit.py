"""The first-launch pipeline: SPIR-V → LLVM IR → optimized IR → object → loaded code.

The stages are plain functions run in order; timing, logging
(SPIRVJIT_DEBUG) and dumping (SPIRVJIT_DUMP) wrap them from outside.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import config
from .backends.cpu import abi as cpu_abi
from .backends.cpu import codegen
from .spirv.module import Module
from .target import Target
from .translate.abi import TargetABI
from .translate.amdgcn import unsupported_call
from .translate.module import ModuleTranslator, Translation, translate
from .translate.signature import KernelSignature

log = logging.getLogger("spirvjit")

_FILE_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass
class StageTimes:
    """Seconds spent per stage of one JIT, in pipeline order."""

    seconds: dict[str, float] = field(default_factory=dict)

    def run(self, name: str, fn: Callable, *args):
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


def _gpu():
    """The GPU back end, imported at its first use: CPU-only processes never load it."""
    from .backends.gpu import codegen

    return codegen


def _abi(target: Target) -> TargetABI:
    if target.is_gpu:
        return _gpu().abi(target)
    return cpu_abi.CpuABI(target.triple, str(codegen.target_machine(target).target_data))


def key_options(target: Target) -> tuple[str, ...]:
    """What besides the target decides a kernel's code: on GPUs, the device library."""
    if not target.is_gpu:
        return ()
    library = _gpu().device_library(target)
    return (f"devicelib={library.kind}:{library.fingerprint}" if library else "devicelib=none",)


def quick_look(
    module: Module, target: Target, spec_constants: dict, prefix: str
) -> tuple[dict[str, KernelSignature] | None, bool]:
    """(kernel signatures, whether the program has writable program-scope variables)
    without translating function bodies; signatures are None where only a full
    translation can tell. Checks the entry points and the spec constant ids."""
    translator = ModuleTranslator(module, _abi(target), spec_constants, prefix)
    return translator.signatures(), translator.has_mutable_globals()


def translate_program(
    module: Module, target: Target, spec_constants: dict, prefix: str
) -> Translation:
    """Translates the module once per program and wraps every kernel for the target."""
    if target.is_gpu:
        return _gpu().translate_program(module, target, spec_constants, prefix)
    translation = translate(module, _abi(target), spec_constants, prefix)
    for index, (name, fn) in enumerate(translation.kernel_functions.items()):
        cpu_abi.emit_kernel_wrappers(
            translation.module, fn, translation.kernels[name], f"{prefix}.k{index}"
        )
    return translation


def runner_symbol(module: Module, prefix: str, kernel: str, target: Target) -> str:
    """The exported symbol of a kernel's native code: on the CPU its runner, named after
    the entry point's index; on a GPU the entry point, named after the kernel."""
    if target.is_gpu:
        return kernel
    index = [entry.name for entry in module.entry_points].index(kernel)
    return f"{prefix}.k{index}.run"


def compile_kernel(
    translation: Translation, target: Target, symbol: str, dump_as: str | None, times: StageTimes
) -> bytes:
    """Kernel IR → optimized → object code; dumps each stage when SPIRVJIT_DUMP is set.

    The object code is a host object file, an AMD code object or an NVIDIA cubin (PTX
    where ptxas is not installed)."""
    directory = config.dump_dir() if dump_as else None
    llmod = _optimized(translation, target, symbol, dump_as, times, directory)
    if directory is not None:
        # From a copy: code generation changes the module (AMDGPU structurizes it), so
        # a second emission from the same module can fail.
        assembly = _assembly_of(llmod.clone(), target)
        dump(directory, dump_as, {"opt.ll": str(llmod), "s": assembly})
    if target.is_gpu:
        return times.run("obj", _gpu().emit, llmod, target, f"{symbol} for {target.name}")
    return times.run("obj", codegen.emit_object, llmod, target)


def kernel_assembly(translation: Translation, target: Target, symbol: str) -> str:
    """What ``compile_kernel`` would produce, as assembly (GCN, PTX, x86-64, ...)."""
    return _assembly_of(_optimized(translation, target, symbol, None, StageTimes(), None), target)


def _assembly_of(llmod, target: Target) -> str:
    return (_gpu().assembly if target.is_gpu else codegen.emit_assembly)(llmod, target)


def _optimized(translation, target, symbol, dump_as, times, directory):
    if target.is_gpu:
        text = times.run("llir", _gpu().kernel_module, translation, target, symbol)
    else:
        text = times.run(
            "llir", codegen.kernel_ir, translation.module, symbol, translation.mutable_globals
        )
    unsupported = unsupported_call(text, dump_as or symbol, target.name)
    if unsupported is not None:
        raise unsupported
    if directory is not None:
        dump(directory, dump_as, {"ll": text})  # before parsing: IR LLVM rejects is kept too
    llmod = times.run("parse", codegen.parse, text, dump_as or symbol)
    if target.is_gpu:
        times.run("opt", _gpu().optimize, llmod, target, symbol)
    else:
        llmod = times.run("opt", codegen.optimize, llmod, target)
    return llmod


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
