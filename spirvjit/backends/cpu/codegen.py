"""LLVM IR → optimized IR → host object code, and loading object code to run.

Each kernel is compiled on its own (its first launch pays only for itself);
program-scope variables that kernels write live in a separate data object
that every kernel of the program links against, so they are shared as OpenCL
requires.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import itertools
import threading

import llvmlite.binding as llvm
from llvmlite import ir

from ...target import Target
from ...translate.mathlib import vector_declarations
from . import objcheck


@functools.cache
def target_machine(target: Target) -> llvm.TargetMachine:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm_target = llvm.Target.from_triple(target.triple)
    return llvm_target.create_target_machine(
        cpu=target.arch, features=target.features, opt=3, reloc="pic", codemodel="default"
    )


def data_ir(module: ir.Module, mutable_globals: list[ir.GlobalVariable]) -> str:
    """A module that defines only the program's mutable globals."""
    lines = [f'target triple = "{module.triple}"', f'target datalayout = "{module.data_layout}"']
    for gv in mutable_globals:
        lines.append(f'@"{gv.name}" = global {gv.initializer}, align {gv.align}')
    return "\n".join(lines) + "\n"


def optimize(module: llvm.ModuleRef, target: Target) -> None:
    """Runs LLVM's O3 pipeline with loop and SLP vectorization for ``target``.

    First declares the libmvec variants of the libm functions the module calls that
    ``target``'s ISA supports, so the vectorizers can use them (see ``translate.mathlib``).
    """
    declarations = vector_declarations(target.features, {fn.name for fn in module.functions})
    if declarations:
        vector_library = llvm.parse_assembly(f'target triple = "{target.triple}"\n' + declarations)
        vector_library.data_layout = module.data_layout
        module.link_in(vector_library)
    tm = target_machine(target)
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(module, pb)


def emit_object(module: llvm.ModuleRef, target: Target) -> bytes:
    return target_machine(target).emit_object(module)


def emit_assembly(module: llvm.ModuleRef, target: Target) -> str:
    return target_machine(target).emit_assembly(module)


_jit_lock = threading.Lock()


# Kernels call libm for math, its vector variants in libmvec, and the compiler runtime
# in libgcc_s for conversions the CPU has no instruction for (double -> half).
_RUNTIME_LIBRARIES = (("m", "libm.so.6"), ("mvec", "libmvec.so.1"), ("gcc_s", "libgcc_s.so.1"))


def _load_runtime_library(name: str, soname: str) -> None:
    # The soname first: ctypes.util.find_library runs ldconfig in a subprocess
    # (milliseconds of every process's first launch).
    try:
        llvm.load_library_permanently(soname)
        return
    except RuntimeError:
        pass
    path = ctypes.util.find_library(name)
    if path:
        llvm.load_library_permanently(path)


@functools.cache
def _lljit(target: Target) -> llvm.LLJIT:
    for name, soname in _RUNTIME_LIBRARIES:
        _load_runtime_library(name, soname)
    return llvm.create_lljit_compiler(target_machine(target))


_library_ids = itertools.count()


def unique_library_name(stem: str) -> str:
    """JIT library names must be unique per process, also when a program is loaded twice."""
    return f"{stem}.{next(_library_ids)}"


class LoadedCode:
    """Object code linked into this process; keeps the JIT library alive."""

    def __init__(self, tracker, address: int):
        self._tracker = tracker
        self.address = address


def load_data(target: Target, name: str, obj: bytes, symbols: list[str]) -> tuple[object, str]:
    """Links the program's data object; returns its tracker and the library's name."""
    with _jit_lock:
        builder = llvm.JITLibraryBuilder().add_object_img(obj)
        for symbol in symbols:
            builder.export_symbol(symbol)
        library = unique_library_name(name)
        return builder.link(_lljit(target), library), library


def load_kernel(
    target: Target, name: str, obj: bytes, symbol: str, data_library: str | None
) -> LoadedCode:
    """Links one kernel's object as JIT library ``name`` and returns its runner's address.

    Raises NativeCodeRefused when the object is not the kernel (``objcheck``: it must
    define ``symbol`` and nothing else) or LLVM cannot link it.
    """
    why = objcheck.problem(obj, symbol, target.triple)
    if why is not None:
        raise objcheck.NativeCodeRefused(f"object code of {symbol} refused: {why}")
    with _jit_lock:
        builder = llvm.JITLibraryBuilder().add_object_img(obj).add_current_process()
        if data_library:
            builder.add_jit_library(data_library)
        try:
            tracker = builder.export_symbol(symbol).link(_lljit(target), unique_library_name(name))
        except RuntimeError as exc:
            raise objcheck.NativeCodeRefused(
                f"object code of {symbol} does not link: {exc}"
            ) from None
        return LoadedCode(tracker, tracker[symbol])
