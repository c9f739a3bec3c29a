"""Crash reports: which kernel was running when the process took a fatal signal.

A kernel that faults in unchecked mode (a wild pointer, a NULL buffer in a helper, a
stack overflow of private arrays) kills the process with SIGSEGV or SIGBUS, in a worker
thread, in JIT code that no Python traceback names. Before each CPU launch the launcher
writes a description of it (kernel, NDRange, arguments, and the hint to rerun with
SPIRVJIT_CHECK=1) into a buffer; a signal handler, JIT-compiled from the LLVM IR below
(async-signal-safe: it only calls write(2) and sigaction(2)), writes that buffer to
stderr, puts the previous handler back and returns: the faulting instruction runs again
and faults into the previous handler (Python's faulthandler when enabled, which then
dumps every thread's Python stack, or the default action). Signal handlers are
process-wide, so this covers every worker thread.

Set SPIRVJIT_CRASH_REPORT=0 to leave the signal handlers alone.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import threading
from collections.abc import Sequence

log = logging.getLogger("spirvjit")

MESSAGE_BYTES = 8192
_SIGACTION_BYTES = 256  # glibc's struct sigaction is 152 bytes on x86-64 and AArch64
_SIGNALS = (signal.SIGSEGV, signal.SIGBUS)
_SA_SIGINFO = 4
_SA_ONSTACK = 0x08000000

_IR = """
@spirvjit_crash_message = global [{message} x i8] zeroinitializer
@spirvjit_crash_length = global i64 0
@spirvjit_crash_previous = global [2 x [{action} x i8]] zeroinitializer

declare i64 @write(i32, ptr, i64)
declare i32 @sigaction(i32, ptr, ptr)

define void @spirvjit_crash_handler(i32 %sig, ptr %info, ptr %context) {{
entry:
  %n = load volatile i64, ptr @spirvjit_crash_length
  %some = icmp sgt i64 %n, 0
  br i1 %some, label %report, label %chain
report:
  %w = call i64 @write(i32 2, ptr @spirvjit_crash_message, i64 %n)
  br label %chain
chain:
  %bus = icmp eq i32 %sig, {sigbus}
  %slot = select i1 %bus, i64 1, i64 0
  %previous = getelementptr [2 x [{action} x i8]], ptr @spirvjit_crash_previous, i64 0, i64 %slot
  %r = call i32 @sigaction(i32 %sig, ptr %previous, ptr null)
  ret void
}}
"""


class _SigAction(ctypes.Structure):
    _fields_ = [
        ("handler", ctypes.c_void_p),
        ("mask", ctypes.c_ulong * 16),
        ("flags", ctypes.c_int),
        ("restorer", ctypes.c_void_p),
    ]


class CrashReporter:
    """The JIT-compiled handler and its message buffer (one per process)."""

    def __init__(self) -> None:
        from llvmlite import binding as llvm

        from ...target import host_target
        from ...translate.kernel_ir import parse_ir
        from . import codegen

        target = host_target()
        text = _IR.format(message=MESSAGE_BYTES, action=_SIGACTION_BYTES, sigbus=signal.SIGBUS)
        machine = codegen.target_machine(target)
        header = f'target triple = "{target.triple}"\ntarget datalayout = "{machine.target_data}"\n'
        module = parse_ir(header + text, "crash handler")
        obj = codegen.emit_object(module, target)
        symbols = (
            "spirvjit_crash_handler",
            "spirvjit_crash_message",
            "spirvjit_crash_length",
            "spirvjit_crash_previous",
        )
        builder = llvm.JITLibraryBuilder().add_object_img(obj).add_current_process()
        for symbol in symbols:
            builder.export_symbol(symbol)
        with codegen._jit_lock:
            self._tracker = builder.link(
                codegen._lljit(target), codegen.unique_library_name("spirvjit.crash")
            )
        self.handler = self._tracker["spirvjit_crash_handler"]
        self.message = self._tracker["spirvjit_crash_message"]
        self.length = ctypes.c_int64.from_address(self._tracker["spirvjit_crash_length"])
        self.previous = self._tracker["spirvjit_crash_previous"]

    def install(self) -> None:
        """Installs the handler for SIGSEGV and SIGBUS, keeping the previous actions."""
        libc = ctypes.CDLL(None, use_errno=True)
        action = _SigAction(handler=self.handler, flags=_SA_SIGINFO | _SA_ONSTACK)
        for slot, sig in enumerate(_SIGNALS):
            previous = ctypes.c_void_p(self.previous + slot * _SIGACTION_BYTES)
            if libc.sigaction(int(sig), ctypes.byref(action), previous) != 0:
                raise OSError(ctypes.get_errno(), f"sigaction({sig.name}) failed")

    def set(self, text: bytes) -> None:
        n = min(len(text), MESSAGE_BYTES)
        self.length.value = 0  # never a half-written message
        ctypes.memmove(self.message, text, n)
        self.length.value = n

    def clear(self) -> None:
        self.length.value = 0


_reporter: CrashReporter | None = None
_state = "new"  # "new", "on" or "off"
_lock = threading.Lock()


def reporter() -> CrashReporter | None:
    """The process's crash reporter, installed on first use (None: off or unavailable)."""
    global _reporter, _state
    if _state == "new":
        with _lock:
            if _state == "new":
                _state = "off"
                if os.environ.get("SPIRVJIT_CRASH_REPORT", "1").strip() not in ("0", "no", "off"):
                    try:
                        found = CrashReporter()
                        found.install()
                        _reporter, _state = found, "on"
                    except Exception as exc:  # never let the safety net stop a launch
                        log.warning("spirvjit: crash reports unavailable: %s", exc)
    return _reporter


def launch_header(name: str, signature: str, global_size, local_size, offset, dims: int) -> str:
    """The part of a launch's description that is the same for every launch of a plan."""
    return (
        f"\nspirvjit: fatal signal while kernel '{name}'({signature}) was running, "
        f"global_size={tuple(global_size[:dims])}, local_size={tuple(local_size[:dims])}, "
        f"global_offset={tuple(offset[:dims])}\n"
    )


HINT = (
    "spirvjit: rerun with SPIRVJIT_CHECK=1 (or kernel(..., check=True)) to have the "
    "out-of-bounds access or NULL dereference reported as a LaunchError\n"
)


_DTYPE_NAMES: dict = {}


def describe_args(args: Sequence, storages: Sequence) -> str:
    """Each argument in a few characters: arrays by dtype, shape and address (from the
    packed ``storages``). Called before every launch, so it avoids NumPy's slow paths
    (``str(dtype)``, ``.ctypes``)."""
    parts = []
    for value, storage in zip(args, storages, strict=False):
        dtype = getattr(value, "dtype", None)
        if type(storage) is ctypes.c_void_p and dtype is not None:  # a buffer
            name = _DTYPE_NAMES.get(dtype)
            if name is None:
                name = _DTYPE_NAMES[dtype] = str(dtype)
            shape = list(getattr(value, "shape", ()))
            parts.append(f"{name}{shape} @{storage.value or 0:#x}")
        else:
            parts.append(repr(value)[:60])
    return "arguments: " + ", ".join(parts) + "\n"
