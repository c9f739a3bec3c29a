"""Debug mode on the host CPU: kernels built from a module's debug information, loaded as
shared objects so that gdb sees them.

LLVM's JIT linker (ORC, through llvmlite) does not tell gdb about the code it links:
llvmlite exposes neither the GDB JIT interface plug-in nor perf listeners for it. A
debug-mode kernel is therefore linked by ``ld.lld -shared`` into a shared object in a
private directory of this process and loaded with ``dlopen`` (ctypes): gdb learns of it
from the dynamic linker, as of any library, with its symbols and DWARF, so that
``break kernel.cl:LINE`` works before the kernel is even compiled (a pending
breakpoint). Ordinary kernels keep the JIT linker.

Debug mode applies to modules with line information (``-g`` with the translator
producer; see docs/debugging.md) and is chosen per kernel load:

- ``SPIRVJIT_DEBUG_INFO=1``: always (for such modules);
- ``SPIRVJIT_DEBUG_INFO=0``: never;
- unset: when a debugger traces this process (``TracerPid`` in ``/proc/self/status``),
  i.e. the program runs under gdb.

The kernel is translated with DWARF metadata (``translate/debuginfo.py``) and not
optimized, so each variable lives in its stack slot and each line has its code; it is
its own cache entry (specialization ``("debug", "1")``).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import itertools
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping

import llvmlite.binding as llvm
from llvmlite import ir

from ... import config
from ...errors import CompileError
from ...target import Target
from ...toolchain import require_tool
from ...translate.debuginfo import has_debug_info
from . import codegen, objcheck
from .codegen import LoadedCode

DEBUG_OPTION = "spirvjit:debug"
DEBUG_SPECIALIZATION = (("debug", "1"),)

_lock = threading.Lock()
_directory: str | None = None
_numbers = itertools.count()
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def traced() -> bool:
    """Whether a debugger (gdb, strace) traces this process."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("TracerPid:"):
                    return line.split()[1] != "0"
    except OSError:
        pass
    return False


def wanted(module) -> bool:
    """Whether kernels of SPIR-V ``module`` load in debug mode now (see the module doc)."""
    setting = config.setting("SPIRVJIT_DEBUG_INFO").strip()
    if setting == "0" or (setting in ("", "auto") and not traced()):
        return False
    return has_debug_info(module)  # last: it reads the whole module


def is_debug_module(module: llvm.ModuleRef) -> bool:
    """Whether ``module`` is a debug-mode kernel (jit._optimized names it so)."""
    from ...jit import DEBUG_MODULE_SUFFIX

    return module.name.endswith(DEBUG_MODULE_SUFFIX)


@functools.cache
def _target_machine(target: Target) -> llvm.TargetMachine:
    """``target``'s machine at -O0: no instruction scheduling or sinking, every value
    in its stack slot between lines, so that gdb's line steps and prologue skipping
    find each line's code in order (at -O3 the ids computed at a function's entry
    are scheduled among its first lines)."""
    codegen.target_machine(target)  # initializes LLVM's native target
    llvm_target = llvm.Target.from_triple(target.triple)
    return llvm_target.create_target_machine(
        cpu=target.arch, features=target.features, opt=0, reloc="pic", codemodel="default"
    )


def emit_object(module: llvm.ModuleRef, target: Target) -> bytes:
    return codegen.emit_object(module, target, _target_machine(target))


def emit_assembly(module: llvm.ModuleRef, target: Target) -> str:
    return codegen.emit_assembly(module, target, _target_machine(target))


def without_vex(module: ir.Module) -> None:
    """Has every function of a debug translation compiled without AVX (SSE only).

    gdb (13 at least) steps over a breakpoint by executing the instruction elsewhere
    (displaced stepping) and mis-relocates VEX-encoded instructions with a RIP-relative
    operand (``vaddss .LCPI0_0(%rip), ...``): a breakpoint that is not taken, such as a
    conditional one (``if spirvjit_gid[0] == 3``) for other work-items, then makes the
    kernel read a wrong address and crash. Debug code is slow anyway; scalar SSE gives
    the same results. All functions, wrappers included, so that no call passes a vector
    between AVX and non-AVX code (their calling conventions differ for 256-bit vectors).
    """
    if "x86_64" not in module.triple and "i686" not in module.triple:
        return
    for fn in module.functions:
        if not fn.is_declaration:
            # llvmlite knows no string attributes: add it to the set as LLVM prints it.
            set.add(fn.attributes, '"target-features"="-avx"')


def _private_directory() -> str:
    """This process's directory of debug-mode shared objects, removed at exit."""
    global _directory
    if _directory is None:
        _directory = tempfile.mkdtemp(prefix=f"spirvjit-debug-{os.getpid()}-")
        atexit.register(shutil.rmtree, _directory, True)
    return _directory


def load_kernel(
    target: Target,
    kernel: str,
    obj: bytes,
    symbol: str,
    data_symbols: Mapping[str, int] | None = None,
) -> LoadedCode:
    """Links kernel object ``obj`` into a shared object, loads it and returns its runner.

    ``data_symbols``: the addresses of the program's writable program-scope variables
    (its data library, linked by the JIT), bound into the shared object as absolute
    symbols so that debug-mode and ordinary kernels share them. Raises
    NativeCodeRefused as ``codegen.load_kernel`` does, CompileError when the linker fails.
    """
    why = objcheck.problem(obj, symbol, target.triple)
    if why is not None:
        raise objcheck.NativeCodeRefused(f"object code of {symbol} refused: {why}")
    linker = require_tool("ld.lld", "loading kernels in debug mode (SPIRVJIT_DEBUG_INFO)")
    with _lock:
        directory = _private_directory()
        stem = os.path.join(directory, f"{_UNSAFE.sub('_', kernel)[:64]}.{next(_numbers)}")
    with open(stem + ".o", "wb") as f:
        f.write(obj)
    command = [linker, "-shared", "--hash-style=gnu", "-o", stem + ".so", stem + ".o"]
    command += [f"--defsym={name}={address:#x}" for name, address in (data_symbols or {}).items()]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CompileError(f"the linker failed on debug-mode kernel {kernel}: {exc}") from None
    if done.returncode != 0:
        raise CompileError(f"the linker failed on debug-mode kernel {kernel}", done.stderr)
    with contextlib.suppress(OSError):
        os.unlink(stem + ".o")
    library = ctypes.CDLL(stem + ".so", mode=os.RTLD_NOW | os.RTLD_LOCAL)
    address = ctypes.cast(library[symbol], ctypes.c_void_p).value
    # The library stays loaded for the process's life: gdb keeps reading its DWARF, and
    # unloading code a launch may still be running in would be unsafe.
    return LoadedCode(library, address)
