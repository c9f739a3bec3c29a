"""Running a compiled kernel on the host CPU: launch records and worker threads.

Python runs once per launch: it checks and packs the arguments, writes the launch
record and wakes the worker threads. Each thread (the caller included) then
calls the kernel's native runner, which claims chunks of work-groups from an
atomic counter until none are left. ctypes releases the GIL for the call, so
the threads run in parallel.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import math
import os
import queue
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ... import config
from ...arguments import ArgumentPacker
from ...errors import LaunchError
from ...ndrange import choose_local_size, group_counts, normalize_sizes
from ...translate.signature import KernelSignature
from . import crash
from .abi import LaunchRecord

log = logging.getLogger("spirvjit")

RUNNER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)

MAX_WORK_GROUP_SIZE = 4096
LOCAL_MEMORY_BYTES = 256 * 1024
ARENA_ALIGN = 64
# Launches with fewer work-items than this run on the calling thread alone:
# waking workers costs more than they would save.
INLINE_WORK_ITEMS = 1 << 12
# The launcher's own local size keeps at least this many groups per pool thread (the
# groups are handed out in chunks; fewer leave threads idle at the end of a launch).
GROUPS_PER_THREAD = 4


class _Arena(threading.local):
    """The calling thread's local-memory arena, grown on demand and reused."""

    def __init__(self) -> None:
        self.buffer = np.empty(0, np.uint8)
        self.address = 0

    def get(self, nbytes: int) -> int:
        if self.buffer.size < nbytes + ARENA_ALIGN:
            self.buffer = np.zeros(nbytes + ARENA_ALIGN, np.uint8)
            raw = self.buffer.ctypes.data
            self.address = raw + (-raw % ARENA_ALIGN)
        return self.address


class ThreadPool:
    """Worker threads that call native runners, handed their tasks through Python queues
    (the portable pool: NativePool below is used where futex(2) is available).

    A launch from the main thread runs on the workers alone while the main thread waits,
    interruptibly: Ctrl-C sets the launch's abort flag, the runners finish the groups
    they are running and claim no more, and KeyboardInterrupt is raised (native code
    holds no GIL, so a main thread inside it would only see the signal at its end).
    Other threads take part in their own launches. Every thread has its own arena, so
    launches that run inline on their calling thread need no lock and several Python
    threads may launch at once.
    """

    # How often a waiting main thread wakes for signals; completion wakes it at once.
    SIGNAL_POLL_SECONDS = 0.05

    def __init__(self, threads: int):
        self.threads = max(1, threads)
        self._tasks: list[queue.SimpleQueue] = []
        self._done: queue.SimpleQueue = queue.SimpleQueue()
        self._arena = _Arena()
        self._lock = threading.Lock()
        for i in range(self.threads):
            tasks: queue.SimpleQueue = queue.SimpleQueue()
            self._tasks.append(tasks)
            threading.Thread(
                target=self._work, args=(tasks,), name=f"spirvjit-cpu-{i}", daemon=True
            ).start()

    def _work(self, tasks: queue.SimpleQueue) -> None:
        while True:
            task = tasks.get()
            if isinstance(task, queue.SimpleQueue):  # a fence (_quiesce): all before it ran
                task.put(None)
                continue
            runner, args, launch, arena_bytes = task
            try:
                runner(args, launch, self._arena.get(arena_bytes))
            finally:
                self._done.put(None)

    def run(
        self,
        runner,
        args: int,
        launch: int,
        threads: int,
        arena_bytes: int,
        abort: ctypes.c_int64 | None = None,
    ) -> None:
        """Runs ``runner`` on ``threads`` threads; ``abort``: the launch record's abort
        flag, set on Ctrl-C (launches that run inline on one thread are not interrupted:
        they have fewer than INLINE_WORK_ITEMS work-items)."""
        if threads <= 1:
            runner(args, launch, self._arena.get(arena_bytes))
            return
        task = (runner, args, launch, arena_bytes)
        # The workers are shared: one multi-threaded launch at a time.
        with self._lock:
            count = min(threads, self.threads)
            if abort is not None and threading.current_thread() is threading.main_thread():
                self._run_interruptibly(task, count, abort)
                return
            for i in range(count - 1):
                self._tasks[i].put(task)
            try:
                runner(args, launch, self._arena.get(arena_bytes))
            finally:
                for _ in range(count - 1):
                    self._done.get()

    def _run_interruptibly(self, task: tuple, count: int, abort: ctypes.c_int64) -> None:
        # KeyboardInterrupt can be raised at any point from the first task handed out on,
        # also between two statements (a call's return checks for signals): then set the
        # abort flag and wait until the workers have finished whatever they were given.
        # Before, a Ctrl-C that arrived while the tasks were being handed out (the main
        # thread preempted there by the workers it woke) escaped without either: the
        # launch ran on, and the process crashed at exit when Python freed its arrays.
        try:
            for i in range(count):
                self._tasks[i].put(task)
            pending = count
            while pending:
                try:
                    self._done.get(timeout=self.SIGNAL_POLL_SECONDS)
                    pending -= 1
                except queue.Empty:
                    continue
        except BaseException:
            abort.value = 1  # the runners stop claiming groups
            self._quiesce(count)
            raise

    def _quiesce(self, count: int) -> None:
        """Waits until workers 0..count-1 have finished every task given to them (a fence
        after them in each queue), then drops their completion notices: nothing of the
        launch runs afterwards. A second Ctrl-C does not cut the wait short (the first
        one's KeyboardInterrupt is raised)."""
        acks: queue.SimpleQueue = queue.SimpleQueue()
        for i in range(count):
            self._tasks[i].put(acks)
        waiting = count
        while waiting:
            with contextlib.suppress(KeyboardInterrupt):
                acks.get()
                waiting -= 1
        while True:
            try:
                self._done.get_nowait()
            except queue.Empty:
                break


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


class NativePool:
    """Worker threads that wait for launches in native code (workers.py): no Python and
    no GIL between a launch's start and its end (the Python pool's queues cost a GIL
    hand-over per thread at each end of every launch), and workers still spinning from
    the previous launch (where a core is left for the launching thread) start at once.
    benchmarks/results/thread_scaling.md compares both pools with OpenMP.

    The same contract as ThreadPool: one multi-threaded launch at a time; a launch from
    the main thread runs on the workers alone while the main thread waits interruptibly
    (Ctrl-C sets the abort flag, the launch's running groups finish, KeyboardInterrupt is
    raised); other threads take part in their own launches.
    """

    # How long one native wait sleeps before the main thread looks at signals again.
    SIGNAL_POLL_SECONDS = 0.05

    def __init__(self, threads: int):
        from . import workers

        self.threads = max(1, threads)
        self._native = workers.functions()
        self._state = workers.PoolState()
        self._state.worker_spin = workers.worker_spin(self.threads, _cores())
        self._state.timeout_ns = int(self.SIGNAL_POLL_SECONDS * 1e9)
        self._wait_spin = workers.wait_spin(self.threads, _cores())
        self._arena = _Arena()  # the launching thread's own (it may take part)
        self._arenas: list[np.ndarray] = []  # the workers', grown together
        self._arena_table = (ctypes.c_int64 * self.threads)()
        self._state.arenas = ctypes.addressof(self._arena_table)
        self._arena_bytes = -1
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(
                target=self._native.worker,
                args=(ctypes.byref(self._state), i),
                name=f"spirvjit-cpu-{i}",
                daemon=True,
            )
            for i in range(self.threads)
        ]
        for thread in self._threads:
            thread.start()

    def _worker_arenas(self, nbytes: int) -> None:
        """Every worker's local-memory arena holds ``nbytes`` (no launch is running)."""
        if nbytes <= self._arena_bytes:
            return
        self._arenas = []
        for i in range(self.threads):
            buffer = np.zeros(nbytes + ARENA_ALIGN, np.uint8)
            raw = buffer.ctypes.data
            self._arenas.append(buffer)
            self._arena_table[i] = raw + (-raw % ARENA_ALIGN)
        self._arena_bytes = nbytes

    def run(
        self,
        runner,
        args: int,
        launch: int,
        threads: int,
        arena_bytes: int,
        abort: ctypes.c_int64 | None = None,
    ) -> None:
        """Runs ``runner`` on ``threads`` threads (see ThreadPool.run)."""
        if threads <= 1:
            runner(args, launch, self._arena.get(arena_bytes))
            return
        with self._lock:
            count = min(threads, self.threads)
            main = threading.current_thread() is threading.main_thread()
            # The main thread waits, interruptibly; any other takes part in the launch.
            waits = main and abort is not None
            workers = count if waits else count - 1
            state = self._state
            self._worker_arenas(arena_bytes)
            state.runner = ctypes.cast(runner, ctypes.c_void_p).value
            state.args = args
            state.launch = launch
            state.workers = workers
            state.pending = workers
            if waits:
                self._run_interruptibly(abort)
                return
            self._start()
            try:
                runner(args, launch, self._arena.get(arena_bytes))
            finally:
                while self._native.wait(state, self._wait_spin):
                    pass

    def _start(self) -> None:
        self._native.start(self._state)

    def _run_interruptibly(self, abort: ctypes.c_int64) -> None:
        # A KeyboardInterrupt can come between any two statements: before the workers
        # were started (then nothing ran) or after (then stop them and wait for them).
        state = self._state
        before = state.gen
        try:
            self._start()
            while self._native.wait(state, self._wait_spin):
                pass  # returning from the call lets the main thread see signals
        except BaseException:
            if state.gen == before:  # interrupted before the start: nothing runs
                state.pending = 0
                raise
            abort.value = 1  # the runners stop claiming groups
            while True:  # a second Ctrl-C does not cut the wait short
                with contextlib.suppress(KeyboardInterrupt):
                    while self._native.wait(state, self._wait_spin):
                        pass
                    break
            raise

    def close(self) -> None:
        """Ends the worker threads (tests; the process's pool lives as long as it)."""
        with self._lock:
            self._state.shutdown = 1
            self._start()
        for thread in self._threads:
            thread.join()


@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """What a launch of one NDRange shape needs, checked once and reused."""

    record: bytes  # the launch record (frames offset still 0)
    threads: int
    group_items: int  # work-items per (full) group
    crash: object = None  # crash.PlanReport: the launch described for a crash report


@dataclass(slots=True)
class PreparedLaunch:
    """One launch of a CpuKernel, ready to run (``CpuKernel.pack_launch``)."""

    plan: LaunchPlan
    slots: object  # the argument array (ctypes)
    keep: object  # what the argument array points into, alive until the launch is done
    record: LaunchRecord


def launch_record(
    global_size, local_size, global_offset, dims: int, threads: int, frames_offset: int = 0
) -> tuple[LaunchRecord, int]:
    """The launch record the runner reads (see abi.py); returns it and the group count."""
    groups = group_counts(global_size, local_size)
    total = groups[0] * groups[1] * groups[2]
    record = LaunchRecord(
        global_size=(ctypes.c_int64 * 3)(*global_size),
        local_size=(ctypes.c_int64 * 3)(*local_size),
        global_offset=(ctypes.c_int64 * 3)(*global_offset),
        groups=(ctypes.c_int64 * 3)(*groups),
        work_dim=dims,
        total_groups=total,
        next_group=0,
        # Several chunks per thread balance uneven groups; one chunk is the whole range
        # when the launch runs inline.
        groups_per_chunk=max(1, total // (threads * 8)) if threads > 1 else total,
        frames_offset=frames_offset,
    )
    return record, total


def _abort_flag(record: LaunchRecord) -> ctypes.c_int64:
    return ctypes.c_int64.from_buffer(record, LaunchRecord.abort.offset)


_pool: ThreadPool | NativePool | None = None
_pool_lock = threading.Lock()


def _forget_pool_after_fork() -> None:
    # A forked child has only the thread that forked: the pool's workers stayed in the
    # parent, and a multi-threaded launch waited for them forever. The child starts its
    # own pool at its first such launch (a lock held by another thread of the parent at
    # the fork would stay held: the lock is new too).
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def make_pool(threads: int) -> ThreadPool | NativePool:
    """A pool of ``threads`` workers: native where the platform allows, else Python's."""
    from . import workers

    if workers.supported():
        try:
            return NativePool(threads)
        except Exception as exc:  # never let the faster pool stop a launch
            log.warning("spirvjit: native thread pool unavailable (%s); using Python's", exc)
    return ThreadPool(threads)


def thread_pool() -> ThreadPool | NativePool:
    """The process's CPU worker threads (SPIRVJIT_NUM_THREADS), started on first use."""
    global _pool
    pool = _pool  # started already: no lock (a launch's hot path)
    if pool is not None:
        return pool
    with _pool_lock:
        if _pool is None:
            _pool = make_pool(config.num_threads())
            if isinstance(_pool, NativePool):
                # Its workers read its state until the process ends (workers.keep_forever).
                from . import workers

                workers.keep_forever(_pool)
        return _pool


class CpuKernel:
    """A kernel's native runner loaded in this process (the backend's LoadedKernel)."""

    # The y rows the launcher's own local size gives a group (yjam.rows_hint; the
    # backend sets it where the kernel has a loop).
    rows = 1

    def __init__(self, code, signature: KernelSignature, origin: str, times):
        self._code = code  # keeps the JIT library alive
        self._runner = RUNNER(code.address)
        self.signature = signature
        self.origin = origin  # where the native code came from: "compile", "disk", ...
        self.times = times  # jit.StageTimes of loading it
        self.compile_seconds = times.total
        self._packer = ArgumentPacker(signature)
        self._plans: dict[tuple, LaunchPlan] = {}  # NDRange -> checked sizes and record

    def launch(
        self,
        args: Sequence,
        global_size,
        local_size,
        global_offset,
        dynamic_shared: int = 0,
        stream=None,
    ) -> None:
        """``dynamic_shared``: bytes of HIP dynamic shared memory (``extern __shared__``).
        ``stream``: accepted for portability; a host launch runs at once (stream.py)."""
        prepared = self.pack_launch(args, global_size, local_size, global_offset, dynamic_shared)
        self.run_launch(prepared)

    def pack_launch(
        self, args: Sequence, global_size, local_size, global_offset, dynamic_shared: int = 0
    ) -> PreparedLaunch:
        """A launch's checked sizes, packed arguments and launch record (``run_launch`` runs
        it): what any code of this kernel's signature runs, so a tiered kernel can run
        part of it on one tier and the rest on the other (tiered.py)."""
        key = (global_size, local_size, global_offset)
        try:
            plan = self._plans[key]
        except (KeyError, TypeError):  # TypeError: sizes given as lists, not hashable
            plan = self._plan(global_size, local_size, global_offset)
            if len(self._plans) < 64:
                with contextlib.suppress(TypeError):
                    self._plans[key] = plan
        slots, keep, local_bytes = self._packer.pack(args, (LOCAL_MEMORY_BYTES, "host CPU"))
        if dynamic_shared:
            from ...hip_launch import cpu_local_bytes

            local_bytes = cpu_local_bytes(
                self.signature, local_bytes, dynamic_shared, LOCAL_MEMORY_BYTES
            )
        record = LaunchRecord.from_buffer_copy(plan.record)
        # Kernels with barriers keep each work-item's frame after the group's local memory.
        record.frames_offset = (local_bytes + ARENA_ALIGN - 1) // ARENA_ALIGN * ARENA_ALIGN
        return PreparedLaunch(plan, slots, keep, record)

    def run_launch(
        self, prepared: PreparedLaunch, record: LaunchRecord | None = None, threads: int = 0
    ) -> None:
        """Runs this kernel's code on ``prepared``'s arguments, claiming the groups of
        ``record`` (default: ``prepared.record``) from its ``next_group`` on, on
        ``threads`` threads (0: the plan's)."""
        plan = prepared.plan
        record = prepared.record if record is None else record
        arena_bytes = record.frames_offset + self.signature.frame_bytes * plan.group_items
        report = crash.reporter()
        if report is not None:  # what a fatal signal in the kernel prints (crash.py)
            report.running(plan.crash.address, ctypes.addressof(prepared.slots))
        threads = threads or plan.threads
        try:
            thread_pool().run(
                self._runner,
                ctypes.addressof(prepared.slots),
                ctypes.addressof(record),
                threads,
                arena_bytes,
                # Only a launch on several threads can be interrupted (ThreadPool.run).
                _abort_flag(record) if threads > 1 else None,
            )
        finally:
            if report is not None:
                report.clear()

    def _own_local_size(self, gs, dims: int, threads: int) -> tuple[int, int, int]:
        """The launcher's local size for a launch that gives none: blocks of y rows
        (yjam.py) for kernels with loops and without barriers (whose work-item frames
        grow with the group), with fewer rows where the groups would be too few to keep
        every thread busy (at least GROUPS_PER_THREAD each)."""
        rows = self.rows if not self.signature.barrier_states else 1
        ls = choose_local_size(gs, dims, rows)
        while rows > 1 and math.prod(group_counts(gs, ls)) < GROUPS_PER_THREAD * threads:
            rows //= 2
            ls = choose_local_size(gs, dims, rows)
        return ls

    def _plan(self, global_size, local_size, global_offset) -> LaunchPlan:
        name = self.signature.name
        gs, ls, offset, dims = normalize_sizes(
            name, global_size, local_size, global_offset, MAX_WORK_GROUP_SIZE
        )
        required = self.signature.required_local_size
        pool_threads = _pool.threads if _pool is not None else config.num_threads()
        if ls is None:
            ls = required or self._own_local_size(gs, dims, pool_threads)
        elif required and ls != tuple(required):
            raise LaunchError(
                f"local_size {ls[:dims]} differs from the kernel's reqd_work_group_size {required}",
                name,
            )
        threads = 1 if gs[0] * gs[1] * gs[2] < INLINE_WORK_ITEMS else pool_threads
        record, total = launch_record(gs, ls, offset, dims, threads)
        report = crash.PlanReport(name, self.signature, gs, ls, offset, dims)
        return LaunchPlan(bytes(record), min(threads, total), ls[0] * ls[1] * ls[2], report)
