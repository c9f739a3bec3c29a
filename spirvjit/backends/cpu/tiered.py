"""Tiered JIT on the host CPU (the default; SPIRVJIT_TIERED=0 turns it off): quick code first.

A kernel's full compile (whole-function vectorization, LLVM's O3/O2, -O3 code generation)
takes 100-500 ms of CPU on the suite's kernels with llvmlite's LLVM (benchmarks/results/
jit_times.md), most of it in LLVM passes that no pipeline tuning removes. The quick tier
compiles the scalar translation (no whole-function vectorization) with a few passes
(``codegen.quick_optimize``) and -O0 code generation: ~20-45 ms. Its code runs the first
launches while a background thread compiles the optimized tier, which then replaces it:

- the swap is one reference store (``TieredKernel._current``) under the kernel's lock,
  which also hands the optimized code the groups not yet claimed by every launch running
  on the quick code (``TieredKernel.launch``: switching inside a launch, and waiting for
  the optimized code where the quick code would not finish first);
- the optimized tier is compiled once, by the one background thread started when the
  kernel is loaded (``Kernel._loaded_on`` loads a kernel once per device, whichever
  threads launch it first); it compiles once the quick tier is in (``__init__`` says
  why), and no lock of the quick tier's or of the program's other kernels waits for it
  (the program locks per variant, not across compiles, and the long LLVM calls run
  without llvmlite's process-wide lock: ``codegen.unlocked``);
- the background compile runs with the settings (``SPIRVJIT_*``) of the launch that
  asked for it (``config.snapshot`` when the kernel is loaded, ``config.using`` on the
  background thread), not with what the environment says when it runs;
- at exit (``at_exit``), the background compiles whose code would go into the disk cache
  are given up to SPIRVJIT_EXIT_WAIT seconds (default 2) to finish, so that the next run
  of a short script loads optimized code from disk; the others, and those still
  compiling then, are given up at their next stage boundary (no wait at all after
  Ctrl-C, SPIRVJIT_EXIT_WAIT=0 or with the disk cache off);
- only the optimized tier goes into the cache (the quick tier's specialization,
  ``jit.QUICK_TIER``, is never looked up or stored), so a later process starts optimized;
- both tiers compute the same results (``worth_it``).

On by default for the CPU (SPIRVJIT_TIERED=0 turns it off). ``Kernel.wait_optimized()``
waits for the optimized tier; ``Kernel.compile()`` loads the optimized tier directly.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import sys
import threading
import time
from collections.abc import Callable

from ... import cache, config, jit
from ...jit import QUICK_TIER
from ...translate.mathlib import vector_declarations
from . import gcpause
from .abi import LaunchRecord
from .launcher import _cores, thread_pool
from .workers import keep_forever

log = logging.getLogger("spirvjit")


# LLVM's fast-math flags that let the O3 pipeline change a result computed from finite
# values: reassociate, contract a*b+c into an FMA (fmul and fadd with ``contract``: the DAG
# combiner fuses them at -O3, not -O0), use reciprocals or approximate functions, or
# drop the sign of a zero (which 1/x turns into an infinity of the other sign); the quick
# tier's code does none of that. (``nnan`` and ``ninf`` are not among them: an operation
# with them gives poison for a NaN or infinite argument or result, and is the plain
# operation otherwise, so an optimization may change only results the kernel promised
# never to compute. -cl-finite-math-only kernels, which have only those, are tiered.)
VALUE_CHANGING_FLAGS = frozenset({"fast", "nsz", "arcp", "contract", "afn", "reassoc"})


def worth_it(program, kernel: str) -> bool:
    """Whether ``kernel`` may run a quick tier: its results must be the optimized tier's
    bit for bit. Calls of libm functions with libmvec variants compute through one variant
    in both tiers, vector lanes and scalar code alike (mathcalls.py); a program still
    calling such a function's scalar libm code (which rounds differently) is not tiered,
    nor one with fast-math flags that change values (``VALUE_CHANGING_FLAGS``:
    -cl-fast-relaxed-math, -cl-unsafe-math-optimizations, -cl-no-signed-zeros; O3 and -O0
    code round differently). Such a kernel's results would be within its fast-math
    bounds on either tier, but they would depend on timing: which launches, and which
    work-groups of a launch, ran before the swap; a first run (empty cache) would give
    other bits than the next. The program's whole quick translation is looked at: cheap,
    and the kernel's callees are in it."""
    translation = program.translation_for((QUICK_TIER,))
    module = translation.module
    called = {fn.name for fn in module.functions}
    if vector_declarations(program.target.features, called):
        return False
    return not _has_fast_math(module)


def _has_fast_math(module) -> bool:
    """Whether an instruction of ``module`` has a ``VALUE_CHANGING_FLAGS`` flag."""
    for fn in module.functions:
        for block in fn.blocks:
            for instruction in block.instructions:
                flags = set(getattr(instruction, "flags", None) or ())
                flags.update(getattr(instruction, "fastmath", None) or ())
                if not VALUE_CHANGING_FLAGS.isdisjoint(flags):
                    return True
    return False


# A launch on the quick tier hands out its groups in chunks of about 1/64 of a thread's
# share (a plain launch: 1/8), so that when the optimized tier comes in mid-launch the
# quick code runs at most one such chunk per thread longer. A chunk costs one atomic add.
QUICK_CHUNKS_PER_THREAD = 64
# A launch on the quick tier runs in slices of groups (1, 2, 4, ... per thread, doubled
# until a slice takes this long) and decides after each from its speed whether to go on
# on the quick code or to wait for the optimized code (TieredKernel.launch).
SLICE_SECONDS = 0.005
# The optimized tier's compile takes about this many times the quick tier's: 4-8x on the
# benchmark suite's kernels (benchmarks/results/jit_times.md), median ~5.
OPTIMIZED_PER_QUICK = 6.0
# A launch waiting for the optimized code waits at most this many times as long as the
# quick code would take to finish it.
PATIENCE = 1.0

_CLAIM_REST_IR = """
define i64 @spirvjit_claim_rest(ptr %next, i64 %total) {
  %old = atomicrmw xchg ptr %next, i64 %total seq_cst
  ret i64 %old
}
"""


@functools.cache
def _claim_rest() -> Callable[[int, int], int]:
    """``claim_rest(address of a launch record's next_group, total groups)``: takes every
    group not yet claimed from the runners (their next claims find none left) and
    returns the first of them (>= total: none was left). Atomic, as the runners' claims
    are: no group is run twice or skipped. Compiled once per process."""
    from . import codegen

    tracker = codegen.load_runtime_module(_CLAIM_REST_IR, "tiers", ("spirvjit_claim_rest",))
    keep_forever(tracker)
    function = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)
    return function(tracker["spirvjit_claim_rest"])


# A fork waits for the optimized tiers being compiled: their threads may hold locks
# (llvmlite's, LLVM's, a program's per-variant ones) which the child (which has none of the
# threads) would find held forever; it joins the threads, since one that has swapped its
# tier in still drops LLVM objects (under llvmlite's lock) on its way out.
FORK_WAIT_SECONDS = 30.0
_THREAD_PREFIX = "spirvjit optimize "


def _before_fork() -> None:
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread.name.startswith(_THREAD_PREFIX) and thread is not current:
            thread.join(FORK_WAIT_SECONDS)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork)


# Exit. The background compiles' threads are not daemons (a daemon thread stopped inside
# LLVM while the interpreter and LLVM's static objects are torn down can crash the exit),
# so the interpreter joins them; before it does (``threading._register_atexit``: called
# before the non-daemon threads are joined) ``at_exit`` lets those whose code would go
# into the disk cache finish for up to SPIRVJIT_EXIT_WAIT seconds (a short script's next
# run then loads optimized code from disk instead of compiling the quick tier again), and
# tells every other one to stop at its next stage boundary (``jit.abandoned_when``).
EXITING = threading.Event()
_pending: set[TieredKernel] = set()
_pending_lock = threading.Lock()
_given_up = False  # (under _pending_lock) at_exit is done waiting: abandon any newcomer


def exiting() -> bool:
    """The process is exiting: no new background compile is started."""
    return EXITING.is_set()


def abandon_pending() -> None:
    """Gives up every optimized tier still compiling or queued, at its next stage
    boundary, and any scheduled from now on: their kernels keep running the quick code
    (``TieredKernel.error`` is a ``jit.Abandoned``)."""
    global _given_up
    EXITING.set()
    with _pending_lock:
        _given_up = True
        pending = list(_pending)
    for kernel in pending:
        kernel.abandon()


# The exit's wait for compiles notices a Ctrl-C within this many seconds.
SIGNAL_SLICE_SECONDS = 0.05


def _interrupted() -> bool:
    """The main program ended with an unhandled KeyboardInterrupt (Ctrl-C): the user
    wants the process gone, and its exit waits for nothing."""
    # (Python prints the traceback of an unhandled exception before the exit handlers
    # run, and keeps it as sys.last_value; 3.12 also as sys.last_exc.)
    last = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    return isinstance(last, KeyboardInterrupt)


def at_exit() -> None:
    """The process exits: waits, up to ``config.exit_wait()`` seconds in all, for the
    optimized compiles (running or queued) whose code goes into the disk cache, then gives
    up the rest (``abandon_pending``). No wait after Ctrl-C (an unhandled
    KeyboardInterrupt, or one during the wait: it ends the wait). A compile whose code
    would not be stored (disk cache off or unusable, in the settings it was scheduled
    with) is given up at once: finishing it serves no one."""
    try:
        EXITING.set()  # no new background compile from now on (CpuBackend._load_for_launch)
        budget = 0.0 if _interrupted() else config.exit_wait()
        deadline = time.monotonic() + budget
        while budget > 0:
            with _pending_lock:
                pending = [kernel for kernel in _pending if not kernel._abandoned]
            waiting = []
            for kernel in pending:
                if kernel.stores():
                    waiting.append(kernel)
                else:
                    kernel.abandon()
            left = deadline - time.monotonic()
            if not waiting or left <= 0:
                break
            # In slices: a Ctrl-C may be delivered to any thread, and only sets a flag
            # that the main thread reads between its waits (a whole wait would let the
            # signal wait with it).
            waiting[0].wait_optimized(min(left, SIGNAL_SLICE_SECONDS))
    except KeyboardInterrupt:  # Ctrl-C during the wait: the user wants out now
        pass
    finally:
        abandon_pending()


if hasattr(threading, "_register_atexit"):
    threading._register_atexit(at_exit)


def wait_pending(timeout: float | None = None) -> bool:
    """Waits until no optimized tier is compiling or queued; False if ``timeout`` seconds
    passed first. (The test suite waits after each test: a test's background compiles
    run with its settings anyway, but must not use the CPU or its cache directory in the
    next test.)"""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        with _pending_lock:
            pending = list(_pending)
        if not pending:
            return True
        for kernel in pending:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not kernel.wait_optimized(left):
                return False


@functools.cache
def _compile_slots() -> threading.Semaphore:
    """How many optimized tiers compile at once: all cores but one (left to the quick
    compiles and launches), at least one. A process that loads many kernels at once
    queues their optimized compiles instead of running hundreds side by side."""
    return threading.Semaphore(max(1, _cores() - 1))


class _Running:
    """A launch in flight on the quick tier: its record, and where the optimized tier
    takes over (None: it did not)."""

    __slots__ = ("record", "resume")

    def __init__(self, record: LaunchRecord) -> None:
        self.record = record
        self.resume: int | None = None


class TieredKernel:
    """A LoadedKernel that launches the quick tier until the optimized one is loaded.

    ``compile_seconds``, ``times`` and ``origin`` are the quick tier's (what the first
    launch waited for); ``optimized_seconds`` and ``optimized_times`` the optimized tier's,
    None until it is in; ``tier``: 0 or 1, the tier the next launch starts on.

    The switch inside a launch: a launch on the quick tier registers its launch record in
    ``_running`` (under ``_lock``) before it runs and removes it after. The swap, under
    the same lock, makes the optimized tier current and takes the unclaimed groups of
    every registered launch (``_claim_rest``): their runners finish the chunks they hold
    and find nothing more to claim; each such launch then runs the groups from where
    it was taken over on the optimized code, with the same arguments and a copy of its
    launch record. Both tiers are CpuKernels of the same signature (the quick tier's
    translation is the optimized one's without the vectorizer, tests/kernels/
    test_tiered.py compares the suite's), so they read the same argument array, launch
    record and local memory. A launch holds its tier (a local reference) until the
    pool has returned, that is until every worker is done with its code."""

    def __init__(
        self, quick: Callable[[], object], optimize: Callable[[], object], name: str
    ) -> None:
        """Runs ``quick`` (the quick tier's load) on this thread and ``optimize`` (the
        optimized tier's) on a background thread, which starts its compile once the quick
        tier is in.

        Why not both at once: nothing stops it any more (no lock is held across a compile,
        LLVM's long calls run outside llvmlite's lock), but the two compiles share the
        GIL, and each of the quick compile's many short llvmlite calls then waits for the
        GIL the background translation holds (CPython hands it over after the 5 ms switch
        interval): measured (jit_times one-kernel runs, interleaved, median of 3 on the
        loaded 2-core machine), starting both at once took the quick tier from 164 to
        235 ms wall (saxpy), 140 to 406 (nbody), 188 to 385 (sgemm), 178 to 208
        (reduction), and brought the optimized tier no sooner (source to swap: 762/851,
        3463/3714, 4124/4125, 1962/1842 ms).
        What runs beside the optimized compile is the quick code's launches and other
        kernels' compiles."""
        self._current = None  # the tier launches run: set by whichever tier comes first
        self._quick = None  # the quick tier while it may be swapped out, else None
        self._quick_in = threading.Event()  # the quick compile has ended (or failed)
        self._started = time.perf_counter()  # the background compile's start
        self._lock = threading.Lock()
        self._running: set[_Running] = set()
        self._abandoned = False
        self.tier = 0
        self.switched = 0  # launches that switched to the optimized tier midway
        self.waited = 0  # launches on the quick tier that stopped to wait for it
        self.error: BaseException | None = None  # why the optimized tier is missing
        self.optimized_seconds: float | None = None
        self.optimized_times = None
        self._optimized = threading.Event()
        # The settings the optimized tier compiles with: this launch's, whatever the
        # environment says when the background thread gets to it.
        self._settings = config.snapshot()
        self._stores: bool | None = None  # (stores(): asked once, at exit)
        # Not a daemon (see at_exit): the interpreter joins it at exit.
        self._thread = threading.Thread(
            target=self._optimize, args=(optimize,), name=_THREAD_PREFIX + name
        )
        with _pending_lock:
            _pending.add(self)
            if _given_up:  # the exit is past waiting for compiles: none starts now
                self._abandoned = True
        self._thread.start()
        try:
            code = quick()
        except BaseException:
            self.abandon()  # the load fails: no launch will run the optimized tier
            raise
        finally:
            self._quick_in.set()
        with self._lock:
            if self._current is None:  # (else the optimized tier was in first)
                self._current = code
                self._quick = code if self.error is None else None
        self.signature = code.signature
        self.origin = code.origin
        self.times = code.times
        self.compile_seconds = code.compile_seconds

    def abandon(self) -> None:
        """Gives up the optimized tier's compile at its next stage boundary."""
        self._abandoned = True

    def stores(self) -> bool:
        """Whether the optimized tier's code, once compiled, goes into the disk cache (in
        the settings it compiles with): what finishing it at exit is for."""
        if self._stores is None:
            try:
                with config.using(self._settings):
                    self._stores = cache.persistent()
            except Exception:  # (asked at exit: never raises into it)
                self._stores = False
        return self._stores

    def _optimize(self, optimize: Callable[[], object]) -> None:
        gcpause.mark_background()
        self._quick_in.wait()  # (see __init__)
        try:
            with (
                config.using(self._settings),
                _compile_slots(),
                jit.abandoned_when(lambda: self._abandoned),
            ):
                self._started = time.perf_counter()
                full = optimize()
            claim_rest = _claim_rest()
        except Exception as exc:  # the quick tier keeps running: slower, still right
            self.error = exc
            with self._lock:
                self._quick = None  # launches run it as a plain CpuKernel from now on
            if not isinstance(exc, jit.Abandoned):
                log.warning(
                    "spirvjit: optimizing %s failed, it keeps its quick code: %s", self, exc
                )
        else:
            self.optimized_seconds = full.compile_seconds
            self.optimized_times = full.times
            with self._lock:  # the swap: launches from now on run the optimized code
                self._current = full
                self._quick = None
                self.tier = 1
                for running in self._running:  # and those running now, from here on
                    record = running.record
                    field = ctypes.addressof(record) + LaunchRecord.next_group.offset
                    running.resume = claim_rest(field, record.total_groups)
        finally:
            with _pending_lock:
                _pending.discard(self)
            self._optimized.set()

    def wait_optimized(self, timeout: float | None = None) -> bool:
        """Waits until the optimized tier is in (or failed); False if ``timeout`` passed."""
        return self._optimized.wait(timeout)

    def launch(
        self, args, global_size, local_size, global_offset, dynamic_shared: int = 0, stream=None
    ) -> None:
        quick = self._quick
        if quick is None:  # optimized (one read: the whole launch runs on it)
            current = self._current
            return current.launch(args, global_size, local_size, global_offset, dynamic_shared)
        prepared = quick.pack_launch(args, global_size, local_size, global_offset, dynamic_shared)
        record = prepared.record
        total, chunk = record.total_groups, record.groups_per_chunk
        # A core is left to the optimized tier's compile: on all of them the launch slows
        # the compile down, and the switch comes that much later.
        threads = max(1, min(prepared.plan.threads, _cores() - 1))
        thread_pool()  # started (a first launch's one-time cost) before any slice is timed
        done, size, patient, decide = 0, threads, True, False
        while done < total:
            end = min(total, done + size)
            began = time.perf_counter()
            resume = self._run_quick(quick, prepared, done, end, threads)
            if resume is not None:  # the optimized tier is in: it runs the rest
                self._run_rest(prepared, resume, total, chunk)
                return None
            took = time.perf_counter() - began
            done, ran = end, end - done
            # Will the quick code, at the last slice's speed, be done before the
            # optimized code is in? Then it goes on (and switches if the optimized code
            # comes first). If not, this is a big launch: it waits for the optimized
            # code, which compiles faster without the launch competing for the cores (on
            # a machine whose cores are all busy, or under a CPU quota, the quick code's
            # work was worth a fraction of what it took from the compile), and runs the
            # rest on it. It waits at most PATIENCE times as long as the quick code would
            # take (then the quick code runs the rest): never more than twice the better
            # choice.
            quick_left = took / ran * (total - done)
            # Not from the first slice: it pays for first touches of the launch's memory.
            if decide and patient and done < total and quick_left > self._compile_left():
                with self._lock:
                    self.waited += 1
                if self._optimized.wait(PATIENCE * quick_left):
                    self._run_rest(prepared, done, total, chunk)
                    return None
                patient = False
            decide = True
            if took < SLICE_SECONDS:
                size = ran * 2
        return None

    def _compile_left(self) -> float:
        """Seconds until the optimized tier is expected in: OPTIMIZED_PER_QUICK times the
        quick tier's compile from the start of the background compile; once that has
        passed, as long again as it has taken so far (it is a slow one)."""
        now = time.perf_counter()
        expected = self._started + OPTIMIZED_PER_QUICK * self.compile_seconds - now
        return max(expected, now - self._started)

    def _run_quick(self, quick, prepared, first: int, end: int, threads: int) -> int | None:
        """Runs groups [first, end) of ``prepared`` on the quick tier; returns None when
        it ran them all, else the group from which the optimized tier, which came in
        before or during the run, takes over."""
        record = prepared.record
        record.next_group, record.total_groups = first, end
        record.groups_per_chunk = max(1, (end - first) // (threads * QUICK_CHUNKS_PER_THREAD))
        running = _Running(record)
        with self._lock:
            if self._current is not quick:
                return first
            self._running.add(running)
        try:
            quick.run_launch(prepared, threads=threads)
        finally:
            with self._lock:
                self._running.discard(running)
        return None if running.resume is None else min(running.resume, end)

    def _run_rest(self, prepared, first: int, total: int, chunk: int) -> None:
        """Runs groups [first, total) on the current tier with the launch's own chunks."""
        if first >= total:
            return
        rest = LaunchRecord.from_buffer_copy(prepared.record)
        rest.next_group, rest.total_groups, rest.groups_per_chunk = first, total, chunk
        with self._lock:
            current = self._current
            self.switched += self.tier
        current.run_launch(prepared, rest)

    def __repr__(self) -> str:
        return f"<spirvjit tiered kernel {self._thread.name.removeprefix(_THREAD_PREFIX)}>"
