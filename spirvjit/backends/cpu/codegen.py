"""LLVM IR → optimized IR → host object code, and loading object code to run.

Each kernel is compiled on its own (its first launch pays only for itself);
program-scope variables that kernels write live in a separate data object
that every kernel of the program links against, so they are shared as OpenCL
requires.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import functools
import itertools
import json
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import llvmlite.binding as llvm
from llvmlite import ir
from llvmlite.binding import ffi

from ...errors import CompileError
from ...target import Target
from ...translate.mathlib import vector_declarations
from . import mathcalls, objcheck, opt_worker
from .vectorizer_guard import suspect_wrap_predicate

log = logging.getLogger("spirvjit")


# One TargetMachine per thread and target. LLVM's TargetMachine is not to be used by two
# compilations at once: X86's caches its subtargets in a plain map that compiling a
# function fills, and code generation resets its options per function. Threads compile
# different programs at once (the optimizer and code generator run without the GIL), so
# each gets its own; creating one costs ~0.3 ms, once per thread.
_machines = threading.local()


def target_machine(target: Target, opt: int = 3) -> llvm.TargetMachine:
    """This thread's target machine for ``target`` (created at first need, then reused);
    ``opt``: its code generation level (0: the quick tier's, see ``quick_optimize``)."""
    machines = getattr(_machines, "by_target", None)
    if machines is None:
        machines = _machines.by_target = {}
    machine = machines.get((target, opt))
    if machine is None:
        machine = machines[(target, opt)] = _new_target_machine(target, opt)
    return machine


def unlocked(name: str) -> Callable:
    """llvmlite's C function ``name`` (``LLVMPY_...``) to call without llvmlite's lock.

    llvmlite serializes every call into LLVM through one process-wide lock; the long
    ones, a module's pass pipeline and its code generation, would make the tiered JIT's
    quick compile wait for the whole O3 pipeline running beside it on the other core.
    They are safe without it here: each module lives in an LLVM context of its own
    (``kernel_ir.parse_ir``) and each thread compiles with its own target machine and
    pass builder (LLVM's rule for compiling on several threads at once). ctypes releases
    the GIL during the call. Falls back to the locked call if llvmlite changes."""
    wrapper = getattr(ffi.lib, name)
    return getattr(wrapper, "_cfn", wrapper)


def run_passes(manager: llvm.ModulePassManager, module: llvm.ModuleRef, builder) -> None:
    """``manager.run(module, builder)`` without llvmlite's lock (``unlocked``)."""
    unlocked("LLVMPY_RunNewModulePassManager")(manager, module, builder)


def _emit_unlocked(machine: llvm.TargetMachine, module: llvm.ModuleRef) -> bytes:
    """``machine.emit_object(module)`` without llvmlite's lock (``unlocked``)."""
    with ffi.OutputString() as error:
        buffer = unlocked("LLVMPY_TargetMachineEmitToMemory")(machine, module, 1, error)
        if not buffer:
            raise RuntimeError(str(error))
    try:
        start = ffi.lib.LLVMPY_GetBufferStart(buffer)
        return ctypes.string_at(start, ffi.lib.LLVMPY_GetBufferSize(buffer))
    finally:
        ffi.lib.LLVMPY_DisposeMemoryBuffer(buffer)


def _new_target_machine(target: Target, opt: int = 3) -> llvm.TargetMachine:
    _initialize_llvm()
    llvm_target = llvm.Target.from_triple(target.triple)
    return llvm_target.create_target_machine(
        cpu=target.arch, features=target.features, opt=opt, reloc="pic", codemodel="default"
    )


@functools.cache
def _initialize_llvm() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()


def data_ir(module: ir.Module, mutable_globals: list[ir.GlobalVariable]) -> str:
    """A module that defines only the program's mutable globals."""
    lines = [f'target triple = "{module.triple}"', f'target datalayout = "{module.data_layout}"']
    for gv in mutable_globals:
        lines.append(f'@"{gv.name}" = global {gv.initializer}, align {gv.align}')
    return "\n".join(lines) + "\n"


# Barrier kernels (one inlined copy of the step function per region) are optimized at
# O2: a third less JIT time than O3 and, measured on the suite's barrier kernels (sgemm,
# reduction, n-body, histogram), the same vector code in their hot loops and the same
# run time within the noise. Kernels without barriers keep O3: its non-trivial loop
# unswitching is what gives the guard split's main range plain vector code.
STEPPED_SPEED_LEVEL = 2

# How many modules this process optimizes itself before handing optimization to a
# child process (see opt_worker.py: llvmlite leaks ~90 KiB per optimization). Most
# processes compile far fewer kernels and never start the child; one that compiles
# many keeps at most this many leaks. 0: always the child; None: never.
IN_PROCESS_OPTIMIZATIONS: int | None = 256

_optimizations = itertools.count()


def optimize(module: llvm.ModuleRef, target: Target, speed_level: int = 3) -> llvm.ModuleRef:
    """Runs LLVM's O3 pipeline (``speed_level``: O2 for barrier kernels, see
    ``STEPPED_SPEED_LEVEL``) with loop and SLP vectorization for ``target``.

    Returns the optimized module: ``module`` itself, or (once this process has run
    ``IN_PROCESS_OPTIMIZATIONS`` optimizations) a new module, in ``module``'s context,
    optimized by the child process. Use the returned module.
    """
    limit = IN_PROCESS_OPTIMIZATIONS
    if limit is None or next(_optimizations) < limit or _worker.unavailable:
        return optimize_here(module, target, speed_level)
    bitcode = _worker.optimize(module.as_bitcode(), target, speed_level)
    if bitcode is None:  # the child could not be started: optimize here after all
        return optimize_here(module, target, speed_level)
    try:
        optimized = llvm.parse_bitcode(bitcode, context=module._context)
    except RuntimeError as exc:
        raise CompileError(f"LLVM could not read back kernel {module.name}", str(exc)) from None
    optimized.name = module.name
    return optimized


def optimize_here(module: llvm.ModuleRef, target: Target, speed_level: int = 3) -> llvm.ModuleRef:
    """``optimize`` in this process: returns the optimized module, ``module`` changed in
    place or (when LLVM's loop vectorizer may have miscompiled it) a copy optimized
    without the loop vectorizer, in ``module``'s context.

    First declares the libmvec variants of the libm functions the module calls that
    ``target``'s ISA supports, so the vectorizers can use them (see ``translate.mathlib``).
    """
    names = {fn.name for fn in module.functions}
    # And the other lane counts of mathcalls.py's one variant per libm function.
    for declarations in (
        vector_declarations(target.features, names),
        mathcalls.vector_adapters(target.features, names),
    ):
        if declarations:
            vector_library = llvm.parse_assembly(
                f'target triple = "{target.triple}"\n' + declarations, context=module._context
            )
            vector_library.data_layout = module.data_layout
            module.link_in(vector_library)
    # A copy to optimize again without the loop vectorizer if LLVM 22's wrap-predicate
    # bug may have struck (vectorizer_guard.py).
    original = module.clone()
    _run_pipeline(module, target, speed_level, loop_vectorization=True)
    suspect = suspect_wrap_predicate(module)
    if suspect is None:
        return module
    log.debug("spirvjit: %s: optimized without the loop vectorizer (LLVM 22 bug)", suspect)
    _run_pipeline(original, target, speed_level, loop_vectorization=False)
    original.name = module.name
    return original


def quick_optimize(module: llvm.ModuleRef, target: Target) -> llvm.ModuleRef:
    """The quick tier's few passes (tiered.py): inlining what must be inlined (the kernel
    into its work-group loop), the work-item context out of memory (SROA) and the CFG
    tidied, then code generation at -O0 (``emit_object(..., quick=True)``). About a tenth
    of O3's time, for code several times slower: it runs only until the optimized code is
    in (measured in benchmarks/results/jit_times.md)."""
    pto = llvm.create_pipeline_tuning_options(speed_level=0)
    pb = llvm.create_pass_builder(target_machine(target, QUICK_CODEGEN_LEVEL), pto)
    mpm = llvm.create_new_module_pass_manager()
    for name in QUICK_PASSES:
        getattr(mpm, f"add_{name}_pass")()
    run_passes(mpm, module, pb)
    return module


# The quick tier's passes (llvmlite ModulePassManager.add_<name>_pass) and code
# generation level.
QUICK_PASSES = ("always_inliner", "sroa", "simplify_cfg")
QUICK_CODEGEN_LEVEL = 0


def _run_pipeline(
    module: llvm.ModuleRef, target: Target, speed_level: int, loop_vectorization: bool
) -> None:
    pto = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    pto.loop_vectorization = loop_vectorization
    pto.slp_vectorization = True
    pb = llvm.create_pass_builder(target_machine(target), pto)
    with mathcalls.wrappers_exposed(module):
        run_passes(pb.getModulePassManager(), module, pb)


class _Worker:
    """The optimizing child process (opt_worker.py), started at first need, serving one
    request at a time, restarted when it exits after its ``MAX_REQUESTS``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._served = 0
        self.unavailable = False  # set when the child cannot start: optimize in-process

    def optimize(self, bitcode: bytes, target: Target, speed_level: int = 3) -> bytes | None:
        """The optimized bitcode, or None when no child process can be started."""
        fields = {"triple": target.triple, "arch": target.arch, "features": target.features}
        header = json.dumps({**fields, "speed_level": speed_level}).encode()
        with self._lock:
            process = self._running()
            if process is None:
                return None
            try:
                opt_worker.write_frame(process.stdin, header)
                opt_worker.write_frame(process.stdin, bitcode)
                process.stdin.flush()
                status = process.stdout.read(4)
                reply = opt_worker.read_frame(process.stdout)
            except (OSError, EOFError, ValueError) as exc:
                status, reply, failure = b"", None, str(exc)
            else:
                failure = "it exited mid-request"
            if len(status) != 4 or reply is None:
                self._stop()
                if not self._served:
                    # A child that cannot serve even one request (sys.executable is not
                    # a Python that can import spirvjit, say): optimize in-process.
                    self.unavailable = True
                    return None
                raise CompileError(f"the LLVM optimizer process failed: {failure}")
            self._served += 1
            if self._served >= opt_worker.MAX_REQUESTS:
                self._stop()
        if status != b"\0\0\0\0":
            raise CompileError("LLVM failed to optimize a kernel", reply.decode(errors="replace"))
        return reply

    def _running(self) -> subprocess.Popen | None:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self._stop()
        path = os.pathsep.join(filter(None, [_package_root(), os.environ.get("PYTHONPATH")]))
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _WORKER_MAIN],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": path},
            )
        except OSError:
            self.unavailable = True
            return None
        self._served = 0
        return self._process

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        with contextlib.suppress(OSError):
            process.stdin.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        with contextlib.suppress(OSError):
            process.stdout.close()


# Not ``-m``: this package imports opt_worker, and runpy warns about running a module
# that its package has already imported.
_WORKER_MAIN = (
    "import sys; from spirvjit.backends.cpu import opt_worker; sys.exit(opt_worker.main())"
)


def _package_root() -> str:
    """The directory holding the spirvjit package, so the child imports this copy."""
    return str(Path(__file__).resolve().parents[3])


_worker = _Worker()
atexit.register(_worker._stop)


def emit_object(
    module: llvm.ModuleRef,
    target: Target,
    machine: llvm.TargetMachine | None = None,
    quick: bool = False,
) -> bytes:
    """The host object of ``module``; ``machine``: another target machine for ``target``
    (debug mode's); ``quick``: code generation at -O0 (the quick tier's)."""
    try:
        if machine is not None:  # shared between threads (debug mode's): llvmlite's lock
            return machine.emit_object(module)
        level = QUICK_CODEGEN_LEVEL if quick else 3
        return _emit_unlocked(target_machine(target, level), module)
    except RuntimeError as exc:
        raise CompileError(f"LLVM failed to emit code for kernel {module.name}", str(exc)) from None


def emit_assembly(
    module: llvm.ModuleRef, target: Target, machine: llvm.TargetMachine | None = None
) -> str:
    return (machine or target_machine(target)).emit_assembly(module)


# Held while linking: one JIT library at a time is created, named and counted. Dropping
# a tracker (which unloads its library) takes no lock: ORC's session is thread-safe.
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
def _runtime_libraries() -> None:
    for name, soname in _RUNTIME_LIBRARIES:
        _load_runtime_library(name, soname)


def _new_lljit(target: Target) -> llvm.LLJIT:
    _runtime_libraries()
    return llvm.create_lljit_compiler(_lljit_machine(target))


@functools.cache
def _lljit_machine(target: Target) -> llvm.TargetMachine:
    """The target machine LLJITs are created with: one for the process, which outlives
    them all (a thread's own, ``target_machine``, goes with the thread); they only link
    objects, so no two compilations use it at once."""
    return _new_target_machine(target)


@functools.cache
def _lljit(target: Target) -> llvm.LLJIT:
    """The LLJIT for code that stays loaded as long as the process (crash handler, pool):
    it is never retired, so nothing else is linked into it."""
    return _new_lljit(target)


def load_runtime_module(ir_text: str, label: str, symbols: tuple[str, ...]):
    """Compiles ``ir_text`` (a module of the runtime's own, without triple or data layout)
    for the host and links it for the rest of the process; returns the tracker, whose
    ``[symbol]`` gives the address of each exported ``symbols``. Unoptimized: these are
    small helpers (the thread pool, the crash handler) paid for at first use, and
    optimizing them would cost more than it saves."""
    from ...target import host_target
    from ...translate.kernel_ir import parse_ir

    target = host_target()
    machine = _new_target_machine(target, opt=0)
    header = f'target triple = "{target.triple}"\ntarget datalayout = "{machine.target_data}"\n'
    obj = emit_object(parse_ir(header + ir_text, label), target, machine)
    builder = llvm.JITLibraryBuilder().add_object_img(obj).add_current_process()
    for symbol in symbols:
        builder.export_symbol(symbol)
    with _jit_lock:
        return builder.link(_lljit(target), unique_library_name(f"spirvjit.{label}"))


# Memory: ORC cannot remove a JIT library from its session. Dropping a library's tracker
# frees its code and data, but its JITDylib stays (~9 KiB each, with its symbol names)
# until the LLJIT itself is destroyed. So libraries go into *generations*: one LLJIT
# takes this many libraries, then new ones go into a fresh LLJIT, and a retired one is
# destroyed with its JITDylibs once nothing refers to it any more. llvmlite makes that
# safe: every tracker holds a shared_ptr to its LLJIT, so the LLJIT outlives the last
# library loaded into it however the Python objects are dropped, and ``Generation``
# only keeps the Python handle that links more libraries. An LLJIT costs ~150 KiB and
# ~0.7 ms to create and destroy; 64 libraries keep at most ~0.6 MiB of dead entries per
# live generation (tests/unit/test_jit_memory.py measures both).
LIBRARIES_PER_GENERATION = 64


class Generation:
    """One LLJIT and how many libraries have been linked into it."""

    def __init__(self, target: Target) -> None:
        self.jit = _new_lljit(target)
        self.libraries = 0

    def link(self, builder: llvm.JITLibraryBuilder, stem: str):
        """Links ``builder`` as a new library; the caller holds ``_jit_lock``. Returns
        the library's tracker (the library stays loaded while it is referenced)."""
        self.libraries += 1  # a failed link leaves its JITDylib too
        return builder.link(self.jit, unique_library_name(stem))


_generations: dict[Target, Generation] = {}  # the generation new libraries go into


def _current_generation(target: Target) -> Generation:
    """The generation that takes the next library for ``target`` (under ``_jit_lock``)."""
    found = _generations.get(target)
    if found is None or found.libraries >= LIBRARIES_PER_GENERATION:
        # The retired one lives on in the trackers and DataLibraries that refer to it.
        found = _generations[target] = Generation(target)
    return found


def link(builder: llvm.JITLibraryBuilder, target: Target, stem: str):
    """Links ``builder`` as a new JIT library named after ``stem``; returns its tracker,
    which keeps the library loaded (and its exported addresses valid) while referenced."""
    with _jit_lock:
        return _current_generation(target).link(builder, stem)


_library_ids = itertools.count()


def unique_library_name(stem: str) -> str:
    """JIT library names must be unique per process, also when a program is loaded twice."""
    return f"{stem}.{next(_library_ids)}"


class DataLibrary:
    """A program's writable program-scope variables, linked as one JIT library that the
    program's kernels link against by name: they go into the same generation."""

    def __init__(self, tracker, name: str, generation: Generation) -> None:
        self._tracker = tracker
        self.name = name
        self.generation = generation

    def __getitem__(self, symbol: str) -> int:
        """The address of the exported variable ``symbol``."""
        return self._tracker[symbol]


class LoadedCode:
    """Object code linked into this process; keeps the JIT library alive, and the
    program's data library that the code refers to."""

    def __init__(self, tracker, address: int, data: DataLibrary | None = None):
        self._tracker = tracker
        self._data = data
        self.address = address


def load_data(target: Target, name: str, obj: bytes, symbols: list[str]) -> DataLibrary:
    """Links the program's data object and exports ``symbols``."""
    builder = llvm.JITLibraryBuilder().add_object_img(obj)
    for symbol in symbols:
        builder.export_symbol(symbol)
    with _jit_lock:
        generation = _current_generation(target)
        tracker = generation.link(builder, name)
    return DataLibrary(tracker, tracker.name, generation)


def load_kernel(
    target: Target, name: str, obj: bytes, symbol: str, data: DataLibrary | None
) -> LoadedCode:
    """Links one kernel's object as JIT library ``name`` and returns its runner's address.

    ``data``: the program's data library, if it has one; the kernel goes into its
    generation. Raises NativeCodeRefused when the object is not the kernel
    (``objcheck``: it must define ``symbol`` and nothing else) or LLVM cannot link it.
    """
    why = objcheck.problem(obj, symbol, target.triple)
    if why is not None:
        raise objcheck.NativeCodeRefused(f"object code of {symbol} refused: {why}")
    builder = llvm.JITLibraryBuilder().add_object_img(obj).add_current_process()
    if data is not None:
        builder.add_jit_library(data.name)
    builder.export_symbol(symbol)
    with _jit_lock:
        generation = data.generation if data is not None else _current_generation(target)
        try:
            tracker = generation.link(builder, name)
        except RuntimeError as exc:
            raise objcheck.NativeCodeRefused(
                f"object code of {symbol} does not link: {exc}"
            ) from None
    return LoadedCode(tracker, tracker[symbol], data)
