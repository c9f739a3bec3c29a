"""Native worker threads for multi-threaded CPU launches (Linux: futex; see launcher.py).

A launch hands its work-groups to the pool's threads and waits for them. Done in Python
(queues, the GIL taken and given back by every thread at the start and at the end of
each launch) that fork and join cost ~70 us on a loaded 2-core machine, ten times
OpenMP's, and the woken threads started milliseconds apart. Here the workers never
return to Python: each Python worker thread calls ``spirvjit_pool_worker`` once and stays
in native code, where it waits for the next launch by watching a generation counter:
spinning for a short while after each launch (so back-to-back launches find it awake,
as OpenMP's threads spin), then asleep in futex(2). A launch writes the runner and its
arguments into the shared ``PoolState``, bumps the generation (``spirvjit_pool_start``)
and waits with ``spirvjit_pool_wait`` until the participating workers have counted
``pending`` down to 0; the last one wakes it. No GIL is involved from start to end.

The functions are JIT-compiled from the LLVM IR below once per process (like the crash
handler, crash.py). Other systems than Linux on x86-64 or AArch64 use the Python pool.
"""

from __future__ import annotations

import ctypes
import platform
import sys

# futex(2): the syscall number per machine and the private (one process) operations.
_FUTEX_SYSCALL = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}
_FUTEX_WAIT_PRIVATE = 128
_FUTEX_WAKE_PRIVATE = 129

# Spin iterations (each one PAUSE on x86, YIELD on AArch64: ~20-50 ns) before sleeping.
# A worker spins after a launch (~100-200 us, longer than the Python between two
# launches) only where the pool leaves a core free: a launch from the main thread runs
# on all the workers while the main thread waits, so with a worker per core the spinning
# workers took the cores the launching thread needed to get on with the next launch.
# Measured on 2 cores at load 13, launches of 1000 groups of 64 work-items, median:
# 69 us with no spin, 155 us with 1024 iterations, 398 us with 4096 (the Python pool:
# 118 us). The launching thread spins while it waits (a short launch is over before it
# would have fallen asleep), long where a core is left for it, else briefly: spinning
# 1024 iterations made launches of 1000 groups 56 us against 62 us without (median),
# but on a core a worker needed (2 workers, 2 cores) it cost 200 us of CPU per launch
# against 120 us with the Python pool.
# No sched_yield() in a spin: on a loaded machine one call can give the core away for
# a whole time slice (ms), while a thread asleep in futex(2) is woken at once.
WORKER_SPIN = 4096
WAIT_SPIN = 1024
WAIT_SPIN_SHARED = 128


def worker_spin(threads: int, cores: int) -> int:
    """How long a pool of ``threads`` workers spins after a launch on ``cores`` cores."""
    return WORKER_SPIN if threads < cores else 0


def wait_spin(threads: int, cores: int) -> int:
    """How long the launching thread spins before it sleeps until the workers are done."""
    return WAIT_SPIN if threads < cores else WAIT_SPIN_SHARED


def supported() -> bool:
    """Whether this machine gets the native pool (Linux with a known futex number)."""
    return sys.platform.startswith("linux") and platform.machine().lower() in _FUTEX_SYSCALL


class PoolState(ctypes.Structure):
    """What the launching thread and the workers share; the IR reads it by byte offset.
    The two futex words sit on cache lines of their own: the workers spin on ``gen``
    while the launching thread spins on ``pending``."""

    _fields_ = [
        ("gen", ctypes.c_uint32),  # 0: bumped once per launch (a new pool's is 0)
        ("sleepers", ctypes.c_uint32),  # 4: workers asleep on gen (start wakes them)
        ("_pad0", ctypes.c_uint8 * 56),
        ("pending", ctypes.c_uint32),  # 64: participating workers still running
        ("waiter", ctypes.c_uint32),  # 68: 1 while the launching thread sleeps on pending
        ("_pad1", ctypes.c_uint8 * 56),
        ("runner", ctypes.c_void_p),  # 128: void runner(args, launch, local memory)
        ("args", ctypes.c_void_p),  # 136
        ("launch", ctypes.c_void_p),  # 144
        ("workers", ctypes.c_int64),  # 152: workers 0 .. workers-1 take part
        ("shutdown", ctypes.c_int64),  # 160: the workers return (ThreadPool.close)
        ("worker_spin", ctypes.c_int64),  # 168
        ("arenas", ctypes.c_void_p),  # 176: i64[threads], each worker's local memory
        ("timeout_s", ctypes.c_int64),  # 184: a struct timespec: how long one wait sleeps
        ("timeout_ns", ctypes.c_int64),  # 192
    ]


_IR = """
declare i64 @syscall(i64, ...)
{pause_decl}

define void @spirvjit_pool_worker(ptr %s, i64 %index) {{
entry:
  %genp = getelementptr i8, ptr %s, i64 0
  %sleepp = getelementptr i8, ptr %s, i64 4
  %pendp = getelementptr i8, ptr %s, i64 64
  %waitp = getelementptr i8, ptr %s, i64 68
  %runnerp = getelementptr i8, ptr %s, i64 128
  %argsp = getelementptr i8, ptr %s, i64 136
  %launchp = getelementptr i8, ptr %s, i64 144
  %workersp = getelementptr i8, ptr %s, i64 152
  %stopp = getelementptr i8, ptr %s, i64 160
  %spinp = getelementptr i8, ptr %s, i64 168
  %arenasp = getelementptr i8, ptr %s, i64 176
  br label %idle
idle:
  ; 0, not the generation the thread finds when it starts: a launch (or close) made
  ; before a new thread ran its first instruction would be missed, and wait forever.
  %seen = phi i32 [ 0, %entry ], [ %g, %done ]
  %limit = load atomic i64, ptr %spinp monotonic, align 8
  br label %spin
spin:
  %i = phi i64 [ 0, %idle ], [ %i1, %pause ], [ %limit, %sleep ]
  %g = load atomic i32, ptr %genp acquire, align 4
  %new = icmp ne i32 %g, %seen
  br i1 %new, label %run, label %more
more:
  %i1 = add i64 %i, 1
  %spinning = icmp ult i64 %i1, %limit
  br i1 %spinning, label %pause, label %sleep
pause:
  {pause}
  br label %spin
sleep:
  %s0 = atomicrmw add ptr %sleepp, i32 1 seq_cst
  %w0 = call i64 (i64, ...) @syscall(i64 {futex}, ptr %genp, i64 {wait_op}, i32 %seen,
      ptr null, ptr null, i64 0)
  %s1 = atomicrmw sub ptr %sleepp, i32 1 seq_cst
  br label %spin
run:
  %stop = load i64, ptr %stopp, align 8
  %stopping = icmp ne i64 %stop, 0
  br i1 %stopping, label %exit, label %check
check:
  %workers = load i64, ptr %workersp, align 8
  %mine = icmp slt i64 %index, %workers
  br i1 %mine, label %work, label %done
work:
  %runner = load ptr, ptr %runnerp, align 8
  %args = load ptr, ptr %argsp, align 8
  %launch = load ptr, ptr %launchp, align 8
  %arenas = load ptr, ptr %arenasp, align 8
  %ap = getelementptr i64, ptr %arenas, i64 %index
  %arena = load ptr, ptr %ap, align 8
  call void %runner(ptr %args, ptr %launch, ptr %arena)
  %old = atomicrmw sub ptr %pendp, i32 1 seq_cst
  %last = icmp eq i32 %old, 1
  br i1 %last, label %wake, label %done
wake:
  %waiting = load atomic i32, ptr %waitp seq_cst, align 4
  %asleep = icmp ne i32 %waiting, 0
  br i1 %asleep, label %wakecall, label %done
wakecall:
  %w1 = call i64 (i64, ...) @syscall(i64 {futex}, ptr %pendp, i64 {wake_op}, i32 2147483647,
      ptr null, ptr null, i64 0)
  br label %done
done:
  br label %idle
exit:
  ret void
}}

define void @spirvjit_pool_start(ptr %s) {{
entry:
  %genp = getelementptr i8, ptr %s, i64 0
  %sleepp = getelementptr i8, ptr %s, i64 4
  %g = atomicrmw add ptr %genp, i32 1 seq_cst
  %n = load atomic i32, ptr %sleepp seq_cst, align 4
  %any = icmp ne i32 %n, 0
  br i1 %any, label %wake, label %out
wake:
  %w = call i64 (i64, ...) @syscall(i64 {futex}, ptr %genp, i64 {wake_op}, i32 2147483647,
      ptr null, ptr null, i64 0)
  br label %out
out:
  ret void
}}

; Spins up to %spins iterations, then sleeps on pending (at most the state's timeout);
; returns the workers still running (0: the launch is over).
define i32 @spirvjit_pool_wait(ptr %s, i64 %spins) {{
entry:
  %pendp = getelementptr i8, ptr %s, i64 64
  %waitp = getelementptr i8, ptr %s, i64 68
  %timeout = getelementptr i8, ptr %s, i64 184
  br label %spin
spin:
  %i = phi i64 [ 0, %entry ], [ %i1, %pause ]
  %p = load atomic i32, ptr %pendp acquire, align 4
  %over = icmp eq i32 %p, 0
  br i1 %over, label %finished, label %more
more:
  %i1 = add i64 %i, 1
  %spinning = icmp ult i64 %i1, %spins
  br i1 %spinning, label %pause, label %sleep
pause:
  {pause}
  br label %spin
sleep:
  %x = atomicrmw xchg ptr %waitp, i32 1 seq_cst
  %p2 = load atomic i32, ptr %pendp seq_cst, align 4
  %running = icmp ne i32 %p2, 0
  br i1 %running, label %nap, label %woke
nap:
  %w = call i64 (i64, ...) @syscall(i64 {futex}, ptr %pendp, i64 {wait_op}, i32 %p2,
      ptr %timeout, ptr null, i64 0)
  br label %woke
woke:
  store atomic i32 0, ptr %waitp seq_cst, align 4
  %p3 = load atomic i32, ptr %pendp acquire, align 4
  ret i32 %p3
finished:
  ret i32 0
}}
"""


def _pause(machine: str) -> tuple[str, str]:
    """The spin-loop hint instruction's declaration and call for ``machine``."""
    if machine in ("x86_64", "amd64"):
        return "declare void @llvm.x86.sse2.pause()", "call void @llvm.x86.sse2.pause()"
    return "declare void @llvm.aarch64.hint(i32)", "call void @llvm.aarch64.hint(i32 1)"


class NativeFunctions:
    """The JIT-compiled pool functions (one copy per process, never unloaded)."""

    def __init__(self) -> None:
        from . import codegen

        machine_name = platform.machine().lower()
        pause_decl, pause = _pause(machine_name)
        text = _IR.format(
            pause_decl=pause_decl,
            pause=pause,
            futex=_FUTEX_SYSCALL[machine_name],
            wait_op=_FUTEX_WAIT_PRIVATE,
            wake_op=_FUTEX_WAKE_PRIVATE,
        )
        names = ("spirvjit_pool_worker", "spirvjit_pool_start", "spirvjit_pool_wait")
        self._tracker = codegen.load_runtime_module(text, "pool", names)
        state = ctypes.POINTER(PoolState)
        self.worker = ctypes.CFUNCTYPE(None, state, ctypes.c_int64)(
            self._tracker["spirvjit_pool_worker"]
        )
        self.start = ctypes.CFUNCTYPE(None, state)(self._tracker["spirvjit_pool_start"])
        self.wait = ctypes.CFUNCTYPE(ctypes.c_uint32, state, ctypes.c_int64)(
            self._tracker["spirvjit_pool_wait"]
        )


_functions: NativeFunctions | None = None


def functions() -> NativeFunctions:
    """The pool functions, compiled on first use (the caller holds the pool lock)."""
    global _functions
    if _functions is None:
        _functions = keep_forever(NativeFunctions())
    return _functions


def keep_forever(obj):
    """``obj``, given a reference nothing drops: the workers run its code and read its
    memory while the interpreter tears down the modules at exit (a spinning worker
    would run unmapped JIT code); the process's end frees it."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))
    return obj
