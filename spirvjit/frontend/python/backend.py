"""LLVM IR -> SPIR-V with the SPIR-V back end inside llvmlite's LLVM (no external tool).

LLVM 22.1's SPIR-V back end keeps module state in a static (``SPIRVModuleAnalysis::MAI``,
llvm/llvm-project#160613, fixed after 22.1 by #160956): the second, third, ... module
compiled in one process can come out with ids defined twice, and a target machine used
for two modules crashes. So each module is compiled in a forked child, which starts from
this process's state, where the back end has never run: every compile is a first one.
The child also keeps the back end's fatal errors ("LLVM ERROR: ...", which abort) from
taking the user's process down. Where fork is unavailable (Windows) or the child does not
answer, the module is compiled here and checked, and compiled again if its ids collide
(after which this process's children are no longer clean: their output is checked too).
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
import warnings

from ...errors import CompileError, SpirvError

TRIPLE = "spirv64-unknown-unknown"
# SPIR-V extensions spirvjit translates, as the OpenCL front end allows them in clang's
# output: without them the back end stops the process ("LLVM ERROR: The atomic float
# instruction requires ...") on a float atomic.
SPIRV_EXTENSIONS = "+SPV_EXT_shader_atomic_float_add,+SPV_EXT_shader_atomic_float_min_max"
CHILD_TIMEOUT_S = 120
_lock = threading.Lock()
_initialized = False
_data_layout: str | None = None


def _llvm():
    import llvmlite.binding as llvm

    global _initialized
    if not _initialized:
        llvm.initialize_all_targets()
        llvm.initialize_all_asmprinters()
        llvm.set_option("spirvjit", f"--spirv-ext={SPIRV_EXTENSIONS}")  # once per process
        _initialized = True
    return llvm


def _target_machine():
    llvm = _llvm()
    try:
        target = llvm.Target.from_triple(TRIPLE)
    except RuntimeError as exc:
        raise CompileError(
            f"this llvmlite has no SPIR-V target ({exc}); llvmlite 0.50 has"
        ) from exc
    # Codegen at O0: at O2, loop strength reduction turns p[i] in a loop into i8 GEPs,
    # and the back end then types the pointer argument char* (see _emit_here).
    return target.create_target_machine(opt=0)


def data_layout() -> str:
    """The spirv64 data layout (creating a target machine runs no back-end pass)."""
    global _data_layout
    with _lock:
        if _data_layout is None:
            _data_layout = str(_target_machine().target_data)
        return _data_layout


def compiler_version() -> str:
    """What compiles Python kernels to SPIR-V, for build records."""
    import llvmlite

    major, minor, patch = _llvm().llvm_version_info
    return f"llvmlite {llvmlite.__version__} (LLVM {major}.{minor}.{patch})"


def _emit_here(llvm_ir: str, name: str) -> bytes:
    llvm = _llvm()
    tm = _target_machine()  # one per module: see the module docstring
    try:
        mod = llvm.parse_assembly(llvm_ir)
        mod.name = name
        mod.verify()
    except RuntimeError as exc:  # a lowering bug, not the user's: say so
        raise CompileError(f"internal error: invalid LLVM IR for {name}: {exc}", llvm_ir) from exc
    # Only SROA (locals to registers) and CFG cleanup: InstCombine would rewrite
    # constant-offset GEPs to i8 GEPs, and the back end deduces a kernel argument's
    # pointee type from its uses before it reads kernel_arg_type, so an int* argument
    # read at [1] would become a char*. spirvjit's JIT optimizes (O3) later anyway.
    pb = llvm.create_pass_builder(tm, llvm.create_pipeline_tuning_options(speed_level=0))
    mpm = llvm.create_new_module_pass_manager()
    mpm.add_sroa_pass()
    mpm.add_simplify_cfg_pass()
    mpm.run(mod, pb)
    return bytes(tm.emit_object(mod))


def _read_all(fd: int, deadline: float) -> bytes | None:
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _emit_forked(llvm_ir: str, name: str) -> bytes | None:
    """Compiles in a forked child; None when the child gives no answer in time."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        with warnings.catch_warnings():  # 3.12+ warns about fork in a threaded process
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
    except OSError:  # no memory or process slots for a child: compile here instead
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        return None
    if pid == 0:  # the child: compile, write status + bytes, leave without cleanup
        status, payload = 1, b""
        try:
            os.close(out_r)
            os.close(err_r)
            os.dup2(err_w, 2)
            payload, status = _emit_here(llvm_ir, name), 0
        except CompileError as exc:
            payload, status = str(exc).encode(), 2
        except BaseException as exc:  # noqa: BLE001 (reported to the parent)
            payload = f"{type(exc).__name__}: {exc}".encode()
        try:
            view = memoryview(bytes([status]) + payload)
            while view:
                view = view[os.write(out_w, view) :]
        finally:
            os._exit(0)
    os.close(out_w)
    os.close(err_w)
    deadline = time.monotonic() + CHILD_TIMEOUT_S
    try:
        data = _read_all(out_r, deadline)
        log = _read_all(err_r, time.monotonic() + 5) or b""
    finally:
        os.close(out_r)
        os.close(err_r)
    if data is None:
        os.kill(pid, signal.SIGKILL)
    try:
        _, wait_status = os.waitpid(pid, 0)
    except ChildProcessError:  # SIGCHLD ignored: the child was reaped already
        wait_status = None
    if data is None:
        return None
    if not data:
        how = "it stopped"
        if wait_status is not None:
            code = os.waitstatus_to_exitcode(wait_status)
            how = f"signal {-code}" if code < 0 else f"exit status {code}"
        raise CompileError(
            f"LLVM's SPIR-V back end failed on {name} ({how})", log.decode(errors="replace")
        )
    if data[0] == 0:
        return data[1:]
    text = data[1:].decode(errors="replace")
    if data[0] == 2:
        raise CompileError(text)
    raise CompileError(
        f"LLVM's SPIR-V back end failed on {name}: {text}", log.decode(errors="replace")
    )


def emit_spirv(llvm_ir: str, name: str) -> bytes:
    """LLVM IR text -> SPIR-V binary."""
    from ...spirv.reader import read_module

    data_layout()  # initialise LLVM here, once, so children need not
    if hasattr(os, "fork") and sys.platform != "darwin":
        spirv = _emit_forked(llvm_ir, name)
        if spirv is not None:
            try:  # a child of a process that compiled in-process inherits its state
                read_module(spirv)
                return spirv
            except SpirvError:
                pass

    with _lock:
        for _attempt in range(3):
            spirv = _emit_here(llvm_ir, name)
            try:
                read_module(spirv)
                return spirv
            except SpirvError as exc:  # the back end's stale state: ids defined twice
                last = exc
    raise CompileError(f"LLVM's SPIR-V back end produced an invalid module for {name}: {last}")
