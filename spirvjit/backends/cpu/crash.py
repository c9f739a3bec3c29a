"""Crash reports: which kernel was running when the process took a fatal signal.

A kernel that faults in unchecked mode (a wild pointer, a NULL buffer in a helper, a
stack overflow of private arrays) kills the process with SIGSEGV or SIGBUS, in a worker
thread, in JIT code that no Python traceback names. Before each CPU launch the launcher
points the handler at the launch (two stores: its plan's description, prepared once per
NDRange, and its packed arguments); a signal handler, JIT-compiled from the LLVM IR below
(async-signal-safe: it only calls write(2) and sigaction(2)), writes the kernel, its
NDRange, its arguments' bits in hex and the hint to rerun with SPIRVJIT_CHECK=1 to
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

log = logging.getLogger("spirvjit")

_SIGACTION_BYTES = 256  # glibc's struct sigaction is 152 bytes on x86-64 and AArch64
_SIGNALS = (signal.SIGSEGV, signal.SIGBUS)
_SA_SIGINFO = 4
_SA_ONSTACK = 0x08000000

# The handler: when a launch is running (@spirvjit_crash_info != 0), writes the launch's
# head text, each argument's bits as hex (a buffer: its address) and the tail text, from
# the LaunchInfo the launcher points it to; then restores the previous action.
_IR = """
@spirvjit_crash_info = global i64 0
@spirvjit_crash_slots = global i64 0
@spirvjit_crash_previous = global [2 x [{action} x i8]] zeroinitializer
@spirvjit_crash_hex = global [19 x i8] c" 0x0000000000000000"

declare i64 @write(i32, ptr, i64)
declare i32 @sigaction(i32, ptr, ptr)

define void @spirvjit_crash_handler(i32 %sig, ptr %siginfo, ptr %context) {{
entry:
  %infoi = load volatile i64, ptr @spirvjit_crash_info
  %has = icmp ne i64 %infoi, 0
  br i1 %has, label %report, label %chain
report:
  %info = inttoptr i64 %infoi to ptr
  %head = load ptr, ptr %info
  %hlp = getelementptr i64, ptr %info, i64 1
  %hl = load i64, ptr %hlp
  %w0 = call i64 @write(i32 2, ptr %head, i64 %hl)
  %nap = getelementptr i64, ptr %info, i64 4
  %na = load i64, ptr %nap
  %kp = getelementptr i64, ptr %info, i64 5
  %kinds = load ptr, ptr %kp
  %slotsi = load volatile i64, ptr @spirvjit_crash_slots
  %slots = inttoptr i64 %slotsi to ptr
  br label %loop
loop:
  %i = phi i64 [0, %report], [%next, %cont]
  %more = icmp ult i64 %i, %na
  br i1 %more, label %body, label %tail
body:
  %kq = getelementptr i8, ptr %kinds, i64 %i
  %k = load i8, ptr %kq
  %known = icmp ne i8 %k, 0
  br i1 %known, label %fmt, label %cont
fmt:
  %sp = getelementptr ptr, ptr %slots, i64 %i
  %storage = load ptr, ptr %sp
  %raw = load i64, ptr %storage, align 1
  %k64 = zext i8 %k to i64
  %bits = shl i64 %k64, 3
  %full = icmp uge i64 %bits, 64
  %one = shl i64 1, %bits
  %partial = sub i64 %one, 1
  %mask = select i1 %full, i64 -1, i64 %partial
  %value = and i64 %raw, %mask
  br label %digit
digit:
  %d = phi i64 [0, %fmt], [%dn, %digit]
  %d4 = shl i64 %d, 2
  %sh = sub i64 60, %d4
  %shifted = lshr i64 %value, %sh
  %nib = and i64 %shifted, 15
  %lt = icmp ult i64 %nib, 10
  %c1 = add i64 %nib, 48
  %c2 = add i64 %nib, 87
  %c = select i1 %lt, i64 %c1, i64 %c2
  %c8 = trunc i64 %c to i8
  %pos = add i64 %d, 3
  %dst = getelementptr i8, ptr @spirvjit_crash_hex, i64 %pos
  store i8 %c8, ptr %dst
  %dn = add i64 %d, 1
  %again = icmp ult i64 %dn, 16
  br i1 %again, label %digit, label %emit
emit:
  %w1 = call i64 @write(i32 2, ptr @spirvjit_crash_hex, i64 19)
  br label %cont
cont:
  %next = add i64 %i, 1
  br label %loop
tail:
  %tp = getelementptr i64, ptr %info, i64 2
  %tailtext = load ptr, ptr %tp
  %tlp = getelementptr i64, ptr %info, i64 3
  %tl = load i64, ptr %tlp
  %w2 = call i64 @write(i32 2, ptr %tailtext, i64 %tl)
  br label %chain
chain:
  %bus = icmp eq i32 %sig, {sigbus}
  %slot = select i1 %bus, i64 1, i64 0
  %previous = getelementptr [2 x [{action} x i8]], ptr @spirvjit_crash_previous, i64 0, i64 %slot
  %r = call i32 @sigaction(i32 %sig, ptr %previous, ptr null)
  ret void
}}
"""


class LaunchInfo(ctypes.Structure):
    """What the handler prints of one launch plan (the IR above reads it by word)."""

    _fields_ = [
        ("head", ctypes.c_void_p),
        ("head_len", ctypes.c_int64),
        ("tail", ctypes.c_void_p),
        ("tail_len", ctypes.c_int64),
        ("nargs", ctypes.c_int64),
        ("kinds", ctypes.c_void_p),  # per argument: bytes to print (8: a buffer), 0: none
    ]


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
        from . import codegen

        text = _IR.format(action=_SIGACTION_BYTES, sigbus=signal.SIGBUS)
        symbols = (
            "spirvjit_crash_handler",
            "spirvjit_crash_info",
            "spirvjit_crash_slots",
            "spirvjit_crash_previous",
        )
        self._tracker = codegen.load_runtime_module(text, "crash", symbols)
        self.handler = self._tracker["spirvjit_crash_handler"]
        self.info = ctypes.c_int64.from_address(self._tracker["spirvjit_crash_info"])
        self.slots = ctypes.c_int64.from_address(self._tracker["spirvjit_crash_slots"])
        self.previous = self._tracker["spirvjit_crash_previous"]

    def install(self) -> None:
        """Installs the handler for SIGSEGV and SIGBUS, keeping the previous actions."""
        libc = ctypes.CDLL(None, use_errno=True)
        action = _SigAction(handler=self.handler, flags=_SA_SIGINFO | _SA_ONSTACK)
        for slot, sig in enumerate(_SIGNALS):
            previous = ctypes.c_void_p(self.previous + slot * _SIGACTION_BYTES)
            if libc.sigaction(int(sig), ctypes.byref(action), previous) != 0:
                raise OSError(ctypes.get_errno(), f"sigaction({sig.name}) failed")

    def running(self, info: int, slots: int) -> None:
        """A launch starts: ``info``, the address of its plan's LaunchInfo, ``slots``
        of its packed argument pointers. Two stores: this runs before every launch."""
        self.slots.value = slots
        self.info.value = info

    def clear(self) -> None:
        self.info.value = 0


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


class PlanReport:
    """A launch plan's LaunchInfo and the texts it points to (kept alive here)."""

    def __init__(self, name: str, signature, global_size, local_size, offset, dims: int):
        declared = ", ".join(a.describe() for a in signature.args)
        self.head = (
            f"\nspirvjit: fatal signal while kernel '{name}'({declared}) was running, "
            f"global_size={tuple(global_size[:dims])}, local_size={tuple(local_size[:dims])}, "
            f"global_offset={tuple(offset[:dims])}\nspirvjit: arguments (buffers: address, "
            "scalars: bits, in hex; structs and vectors: not shown):"
        ).encode()
        self.tail = ("\n" + HINT).encode()
        self.kinds = (ctypes.c_uint8 * max(1, len(signature.args)))(
            *[_shown_bytes(a) for a in signature.args]
        )
        self.info = LaunchInfo(
            ctypes.cast(ctypes.c_char_p(self.head), ctypes.c_void_p),
            len(self.head),
            ctypes.cast(ctypes.c_char_p(self.tail), ctypes.c_void_p),
            len(self.tail),
            len(signature.args),
            ctypes.addressof(self.kinds),
        )
        self.address = ctypes.addressof(self.info)


def _shown_bytes(arg) -> int:
    if arg.kind in ("global", "constant"):
        return 8
    if arg.kind == "value" and arg.lanes == 1 and 0 < arg.size <= 8:
        return arg.size
    return 0


HINT = (
    "spirvjit: rerun with SPIRVJIT_CHECK=1 (or kernel(..., check=True)) to have the "
    "out-of-bounds access or NULL dereference reported as a LaunchError\n"
)
