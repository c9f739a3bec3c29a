"""Differential tester: random OpenCL C kernels through spirvjit (both producers) and PoCL.

    python3 -m tests.fuzz.differential --count 1000 --seed 1 --jobs 2 --keep /tmp/mismatches

Programs are generated in batches (one ``.cl`` file of ``--batch`` kernels, so one compile
serves many programs). Each batch runs in a worker process, which holds one PoCL context
for its whole life; a batch that hangs is killed and its kernels are rerun one by one to
find the one that hangs. Every kernel is launched on the same input words by PoCL and by
spirvjit with ``producer="clang"`` (clang-22) and ``producer="translator"`` (clang-15 +
llvm-spirv-15); the output hashes and the global atomic slots must agree bit for bit.

A disagreement is then *classified*: see :mod:`tests.fuzz.classify`. Known spirvjit bugs
that are still present in this build (each checked by a probe) explain a mismatch when the
same program written without the construct agrees; everything else counts as unexplained
and makes the exit status 1. ``--keep DIR`` saves each unexplained (and known) mismatch as
a one-kernel ``.cl`` file with a header naming how to rerun it
(``python3 -m tests.fuzz.differential --repro FILE``).
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import re
import sys
import time
import traceback
from dataclasses import dataclass, field

import numpy as np

from .classify import KNOWN, Known, ProbeJob
from .generator import (
    GAT_SLOTS,
    IN_WORDS,
    OPTIONS,
    REFERENCE_WORKAROUNDS,
    SIZES,
    Batch,
    generate,
)

PRODUCERS = ("clang", "translator")
REFERENCE = "pocl"


# ------------------------------------------------------------------ inputs
def inputs(seed: int, index: int, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Input words and initial global atomic slots of kernel ``index`` of batch ``seed``."""
    rng = np.random.default_rng([seed, index, 0x5EED])
    words = rng.integers(0, 2**32, IN_WORDS, dtype=np.uint64).astype(np.uint32)
    special = np.array(
        [0, 1, 2, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0x7F800000, 0xFF800000, 0x7FC00000,
         0x00000001, 0x80000000, 0x3F800000, 0xBF800000, 0x00800000, 0x7F7FFFFF, 100, 255,
         0xFFFF, 0x8000, 0x80, 5, 7],
        dtype=np.uint32,
    )  # fmt: skip
    pick = rng.random(IN_WORDS) < 0.3
    words[pick] = rng.choice(special, int(pick.sum()))
    small = rng.random(IN_WORDS) < 0.2
    words[small] = rng.integers(0, 64, int(small.sum()), dtype=np.uint32)
    gat = rng.integers(0, 2**32, groups * GAT_SLOTS, dtype=np.uint64).astype(np.uint32)
    return words, gat


def extra_args(seed: int, index: int, kernel) -> list:
    """The kernel's arguments after ``out, in, gat``: the bytes of its struct argument."""
    if not kernel.struct_arg:
        return []
    rng = np.random.default_rng([seed, index, 0x57C7])
    data = rng.integers(0, 256, kernel.struct_size, dtype=np.uint64).astype(np.uint8)
    small = rng.random(kernel.struct_size) < 0.3  # some small and zero bytes
    data[small] = rng.integers(0, 3, int(small.sum()))
    return [data.tobytes()]


# -------------------------------------------------------------- one device
@dataclass
class Outcome:
    """What one implementation did with one kernel: output arrays or an error."""

    out: np.ndarray | None = None
    gat: np.ndarray | None = None
    error: str | None = None
    # A tiered kernel (the CPU's default): ``out``/``gat`` are its quick tier's first
    # launch, this its optimized tier's launch on the same inputs (or the error that kept
    # the optimized tier from loading). Both must equal the reference.
    optimized: Outcome | None = None
    # And a launch switched from the quick tier to the optimized one after half of its
    # work-groups, as a launch running when the optimized tier comes in is (None: one
    # group, or the optimized tier was in before the quick one could be held).
    mixed: Outcome | None = None


_POCL = None


def _pocl():
    global _POCL
    if _POCL is None:
        import pyopencl as cl

        platform = next(p for p in cl.get_platforms() if "Portable" in p.name)
        ctx = cl.Context(platform.get_devices())
        _POCL = (cl, ctx, cl.CommandQueue(ctx))
    return _POCL


def run_pocl(source: str, batch: Batch, indices: list[int], seed: int) -> dict[int, Outcome]:
    cl, ctx, queue = _pocl()
    try:
        prog = cl.Program(ctx, source).build(options=list(OPTIONS))
    except Exception as exc:  # noqa: BLE001 - any build failure is reported per kernel
        if len(indices) > 1:  # find the kernels PoCL rejects
            out = {}
            for i in indices:
                out |= run_pocl(batch.kernel_source(i), batch, [i], seed)
            return out
        errors = [line for line in str(exc).splitlines() if "error" in line]
        return {indices[0]: Outcome(error="pocl build: " + "\n".join(errors)[:3000])}
    results = {}
    mf = cl.mem_flags
    for i in indices:
        k = batch.kernels[i]
        groups = k.global_size // k.local_size
        words, gat = inputs(seed, i, groups)
        out = np.zeros(k.global_size * k.nseg, np.uint64)
        try:
            b_out = cl.Buffer(ctx, mf.WRITE_ONLY, out.nbytes)
            b_in = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=words)
            b_gat = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=gat)
            args = [b_out, b_in, b_gat, *extra_args(seed, i, k)]
            getattr(prog, k.name)(queue, k.global_shape, k.local_shape, *args)
            cl.enqueue_copy(queue, out, b_out)
            cl.enqueue_copy(queue, gat, b_gat)
            queue.finish()
            results[i] = Outcome(out, gat)
        except Exception as exc:  # noqa: BLE001
            results[i] = Outcome(error=f"pocl run: {exc}")
    return results


def run_spirvjit(
    source: str, batch: Batch, indices: list[int], seed: int, producer: str
) -> dict[int, Outcome]:
    import spirvjit

    try:
        prog = spirvjit.compile_opencl(source, list(OPTIONS), producer=producer)
    except Exception as exc:  # noqa: BLE001
        if len(indices) > 1:  # find which kernels the front end rejects
            sources = {i: batch.kernel_source(i) for i in indices}
            out = {}
            for i in indices:
                out |= run_spirvjit(sources[i], batch, [i], seed, producer)
            return out
        return {indices[0]: Outcome(error=f"compile: {type(exc).__name__}: {exc}"[:3000])}
    results = {}
    for i in indices:
        k = batch.kernels[i]
        groups = k.global_size // k.local_size
        words, gat = inputs(seed, i, groups)
        out = np.zeros(k.global_size * k.nseg, np.uint64)
        try:
            launch = {"global_size": k.global_shape, "local_size": k.local_shape}
            kernel = prog.kernel(k.name)
            extra = extra_args(seed, i, k)
            quick = _quick_tier(kernel)
            kernel(out, words, gat, *extra, **launch)
            results[i] = Outcome(out, gat)
            results[i].optimized = _optimized_tier(kernel, k, [words, *extra], seed, i, launch)
            if quick is not None and results[i].optimized.error is None:
                results[i].mixed = _mixed_tiers(quick, kernel, k, [words, *extra], seed, i)
        except Exception as exc:  # noqa: BLE001
            results[i] = Outcome(error=f"run: {type(exc).__name__}: {exc}"[:3000])
    return results


def _optimized_tier(kernel, k, args: list, seed: int, index: int, launch: dict) -> Outcome | None:
    """The optimized tier's outcome of a kernel whose first launch ran its quick tier
    (tiered, the CPU's default: backends/cpu/tiered.py); None for a kernel that was not tiered."""
    loaded = kernel._default  # the LoadedKernel of launches that name no device
    if getattr(loaded, "tier", None) is None:  # not a TieredKernel
        return None
    kernel.wait_optimized()
    if loaded.tier != 1:
        return Outcome(error=f"optimized tier: {type(loaded.error).__name__}: {loaded.error}")
    _, gat = inputs(seed, index, k.global_size // k.local_size)
    out = np.zeros(k.global_size * k.nseg, np.uint64)
    try:
        kernel(out, args[0], gat, *args[1:], **launch)
    except Exception as exc:  # noqa: BLE001
        return Outcome(error=f"optimized tier run: {type(exc).__name__}: {exc}"[:3000])
    return Outcome(out, gat)


def _quick_tier(kernel):
    """The quick tier's CpuKernel of a tiered kernel, loaded as a first launch loads it
    and held for ``_mixed_tiers`` (the TieredKernel drops it at the swap); None where the
    kernel is not tiered or its optimized tier was in first."""
    from spirvjit import config

    if config.check():  # checked launches load their own (untiered) code
        return None
    kernel.compile(quick=True)
    loaded = kernel._default
    if getattr(loaded, "tier", None) != 0:
        return None
    with loaded._lock:
        return loaded._quick


def _mixed_tiers(quick, kernel, k, args: list, seed: int, index: int) -> Outcome | None:
    """A launch whose first half of work-groups runs on the quick tier and the rest on the
    optimized one, with one packed argument array and launch record: what
    ``TieredKernel.launch`` does when the optimized tier comes in mid-launch (``_run_quick``
    then ``_run_rest``), which the tester's small launches never meet by timing."""
    from spirvjit.backends.cpu.abi import LaunchRecord

    groups = k.global_size // k.local_size
    if groups < 2:
        return None
    full = kernel._default._current
    words, gat = inputs(seed, index, groups)
    out = np.zeros(k.global_size * k.nseg, np.uint64)
    try:
        prepared = quick.pack_launch(
            [out, words, gat, *args[1:]], k.global_shape, k.local_shape, None
        )
        record = prepared.record
        total, chunk, half = record.total_groups, record.groups_per_chunk, groups // 2
        record.next_group, record.total_groups, record.groups_per_chunk = 0, half, 1
        quick.run_launch(prepared, threads=1)
        rest = LaunchRecord.from_buffer_copy(record)
        rest.next_group, rest.total_groups, rest.groups_per_chunk = half, total, chunk
        full.run_launch(prepared, rest)
    except Exception as exc:  # noqa: BLE001
        return Outcome(error=f"mixed tiers run: {type(exc).__name__}: {exc}"[:3000])
    return Outcome(out, gat)


@dataclass(frozen=True)
class Job:
    seed: int
    count: int
    indices: tuple[int, ...]
    workarounds: frozenset[str] = frozenset()
    producers: tuple[str, ...] = (REFERENCE, *PRODUCERS)
    size: str = "normal"

    def run(self) -> dict[str, dict[int, Outcome]]:
        return run_job(self)


def run_job(job: Job) -> dict[str, dict[int, Outcome]]:
    """Runs the job's kernels on every implementation it names."""
    indices = list(job.indices)

    def source_of(batch: Batch) -> str:
        if len(indices) == job.count:
            return batch.source()
        return batch.prelude() + "\n" + "\n".join(batch.kernels[i].source() for i in indices)

    results = {}
    for producer in job.producers:
        if producer == REFERENCE:
            batch = generate(job.seed, job.count, job.workarounds | REFERENCE_WORKAROUNDS, job.size)
            results[producer] = run_pocl(source_of(batch), batch, indices, job.seed)
        else:
            batch = generate(job.seed, job.count, job.workarounds, job.size)
            results[producer] = run_spirvjit(source_of(batch), batch, indices, job.seed, producer)
    return results


# ----------------------------------------------------------- worker pool
# The workers are not forked from the caller: a test that ran PoCL in the pytest process
# leaves a PoCL context there (and PoCL's device threads, which a fork does not copy), and
# a forked worker's first blocking PoCL call then waits for those threads forever
# (test_pocl_psel hung so for 300 s after test_fuzz's tiered tests; gdb: the worker's only
# thread in pthread_cond_wait under clEnqueueReadBuffer). A fork server is a fresh
# interpreter with one thread, started once per process; each worker is forked from it.
START_METHOD = "forkserver"
# Imported once, in the fork server, so that a worker starts without importing them: none
# starts a thread on import (PoCL's threads start with the first platform query, which
# only a job makes; numpy's OpenBLAS is held to one thread, _start_server). Not this
# module itself: run as ``python3 -m``, it is also the main module, which each worker runs
# again (as ``__mp_main__``) before it imports this one, and runpy warns when it finds the
# module already imported; its own code imports in milliseconds.
PRELOAD = (
    "numpy",
    f"{__package__}.classify",
    f"{__package__}.generator",
    "spirvjit",
    "spirvjit.backends.cpu.launcher",
    "pyopencl",
)


def _start_server(ctx) -> None:
    """Starts this process's fork server if it is not running, single-threaded."""
    if ctx.get_start_method() != "forkserver":
        return
    from multiprocessing import forkserver

    ctx.set_forkserver_preload(list(PRELOAD))
    # numpy's import starts OpenBLAS's thread pool unless told to use one thread. The
    # variable is the server's only: a worker takes the caller's environment (_worker).
    saved = os.environ.get("OPENBLAS_NUM_THREADS")
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        forkserver.ensure_running()
    finally:
        if saved is None:
            del os.environ["OPENBLAS_NUM_THREADS"]
        else:
            os.environ["OPENBLAS_NUM_THREADS"] = saved


def _worker(conn, env: dict, path: list, cwd: str, initializer) -> None:
    # What a forked worker would have had: the caller's environment (the fork server's is
    # that of when it started), sys.path and working directory. pyopencl's import (in the
    # server) sets PYOPENCL_HOME, which ocl-icd reads; a forked worker would set it too.
    own = {k: os.environ[k] for k in ("PYOPENCL_HOME",) if k in os.environ}
    os.environ.clear()
    os.environ.update({**own, **env})
    sys.path[:] = path
    os.chdir(cwd)
    os.environ.setdefault("POCL_CPU_MAX_CU_NUM", "1")  # the host is shared; one thread
    os.environ.setdefault("SPIRVJIT_NUM_THREADS", "1")
    import warnings

    warnings.filterwarnings("ignore", message="Non-empty compiler output")
    if initializer is not None:
        initializer()
    while True:
        job = conn.recv()
        if job is None:
            return
        try:
            conn.send(("ok", job.run()))
        except Exception:  # noqa: BLE001 - a crash of the harness itself
            conn.send(("crash", traceback.format_exc()))


class Pool:
    """Worker processes that run jobs with a time limit; a worker past it is killed.

    Jobs, their results and ``initializer`` (run by each worker before its first job; a
    test's patches) are pickled: each must be importable by name."""

    def __init__(self, jobs: int, timeout: float, initializer=None) -> None:
        self.size, self.timeout = jobs, timeout
        self.initializer = initializer
        self.ctx = mp.get_context(START_METHOD)
        self.workers: list = []

    def _spawn(self):
        _start_server(self.ctx)
        parent, child = self.ctx.Pipe()
        setup = (dict(os.environ), list(sys.path), os.getcwd(), self.initializer)
        proc = self.ctx.Process(target=_worker, args=(child, *setup), daemon=True)
        proc.start()
        child.close()
        return [proc, parent, None, 0.0]  # process, pipe, job, started

    def run(self, jobs: list[Job], done) -> None:
        """Runs ``jobs``; calls ``done(job, status, payload)`` as each finishes."""
        from multiprocessing.connection import wait

        pending = list(reversed(jobs))
        while len(self.workers) < self.size:
            self.workers.append(self._spawn())
        while pending or any(w[2] for w in self.workers):
            for w in self.workers:
                if w[2] is None and pending:
                    w[2], w[3] = pending.pop(), time.monotonic()
                    w[1].send(w[2])
            busy = [w for w in self.workers if w[2] is not None]
            ready = wait([w[1] for w in busy], timeout=1.0)
            now = time.monotonic()
            for w in busy:
                if w[1] in ready:
                    try:
                        status, payload = w[1].recv()
                    except (EOFError, OSError):  # OSError: a reset connection
                        status, payload = "crash", "worker died"
                    job, w[2] = w[2], None
                    if status == "crash" and payload == "worker died":
                        self._replace(w)
                        status = "died"
                    done(job, status, payload)
                elif now - w[3] > self.timeout * max(1, len(getattr(w[2], "indices", ()))):
                    job, w[2] = w[2], None
                    self._replace(w)
                    done(job, "timeout", None)

    def _replace(self, w) -> None:
        w[0].kill()  # only the worker this pool started
        w[0].join()
        w[:] = self._spawn()

    def close(self) -> None:
        for w in self.workers:
            with contextlib.suppress(OSError):
                w[1].send(None)
            w[0].join(timeout=5)
            if w[0].is_alive():
                w[0].kill()
        self.workers = []


# ------------------------------------------------------------- comparing
@dataclass
class Finding:
    """One kernel on which an implementation disagrees with PoCL or fails."""

    seed: int
    count: int
    index: int
    producer: str
    kind: str  # mismatch | error | timeout | reference-error
    detail: str
    segments: list[int] = field(default_factory=list)
    verdict: str = "unexplained"
    size: str = "normal"
    # A mismatch's spirvjit outcome (every tier), for the rerun: rerun_unexplained.
    outcome: Outcome | None = field(default=None, repr=False, compare=False)


def compare(ref: Outcome, got: Outcome, nseg: int) -> tuple[str, list[int]] | None:
    """None when ``got`` equals ``ref`` bit for bit (both tiers of a tiered kernel); else a
    description and the segments."""
    if got.error:
        return got.error, []
    first = _compare_arrays(ref, got, nseg)
    if got.optimized is None:
        return first
    diffs = [("quick tier", first), ("optimized tier", compare(ref, got.optimized, nseg))]
    if got.mixed is not None:
        diffs.append(("mixed tiers", compare(ref, got.mixed, nseg)))
    if all(d is None for _, d in diffs):
        return None
    parts = [f"{name}: {d[0]}" for name, d in diffs if d]
    segs = sorted({s for _, d in diffs if d for s in d[1]})
    return "; ".join(parts), segs


def _compare_arrays(ref: Outcome, got: Outcome, nseg: int) -> tuple[str, list[int]] | None:
    out_ref = ref.out.reshape(-1, nseg)
    out_got = got.out.reshape(-1, nseg)
    bad = sorted({int(j) for j in np.nonzero(out_ref != out_got)[1]})
    gat_bad = np.nonzero(ref.gat != got.gat)[0]
    if not bad and not len(gat_bad):
        return None
    parts = []
    if bad:
        items = np.nonzero((out_ref != out_got).any(axis=1))[0]
        parts.append(f"hash differs in segments {bad} for {len(items)} work-items")
    if len(gat_bad):
        slots = sorted({int(s) % GAT_SLOTS for s in gat_bad})
        parts.append(f"global atomic slots {slots} differ")
    return "; ".join(parts), bad


# ------------------------------------------------------------- explaining
def explain(findings: list[Finding], pool: Pool, log) -> None:
    """Sets each finding's verdict from the known bugs still present (see classify)."""
    results: dict = {}

    def collect(job, status, payload) -> None:
        results[job] = (status, payload)

    probe = ProbeJob()
    # Every probe compiles for every producer: on a loaded machine that takes longer than
    # a kernel's share, and a probe that times out marks every known bug present.
    saved, pool.timeout = pool.timeout, max(10 * pool.timeout, 300.0)
    pool.run([probe], collect)
    pool.timeout = saved
    status, active = results.pop(probe)
    if status != "ok":  # a probe hung or crashed: its bug is surely there
        active = {(k.key, p): True for k in KNOWN for p in k.producers}
    live = [f"{key}:{p}" for (key, p), on in active.items() if on]
    log(f"known bugs present in this build: {', '.join(sorted(live)) or 'none'}")
    trials: dict[int, list[tuple[Job, list[Known]]]] = {}
    for n, f in enumerate(findings):
        if f.producer == REFERENCE:
            continue
        features = generate(f.seed, f.count, size=f.size).kernels[f.index].features
        cands = [
            k
            for k in KNOWN
            if active.get((k.key, f.producer)) and (k.feature is None or k.feature in features)
        ]
        if f.kind in ("timeout", "died"):
            # No known bug hangs or kills the process, and a spelling that runs in time
            # says nothing about why the original did not (a loaded machine, a slow
            # compile): this stays for a person to look at.
            continue
        if f.kind == "error":
            for k in cands:
                if k.message and re.search(k.message, f.detail):
                    f.verdict = k.title
                    break
            continue
        cands = [k for k in cands if k.workaround]
        sets = [[k] for k in cands] + ([cands] if len(cands) > 1 else [])
        trials[n] = [
            ((f.seed, f.count, f.index, frozenset(k.workaround for k in ks), f.size), ks)
            for ks in sets
        ]
    # One job per kernel and spelling serves every producer that needs it (one PoCL build).
    wanted: dict[tuple, set[str]] = {}
    for n, tried in trials.items():
        for key, _ in tried:
            wanted.setdefault(key, set()).add(findings[n].producer)
    jobs = {
        key: Job(key[0], key[1], (key[2],), key[3], (REFERENCE, *sorted(p)), key[4])
        for key, p in wanted.items()
    }
    # A reference bug also needs spirvjit's result of the original spelling (a finding
    # keeps no outputs): one job per kernel, for the producers that disagreed.
    originals: dict[tuple, set[str]] = {}
    for n, tried in trials.items():
        if any(k.reference_bug for _, ks in tried for k in ks):
            f = findings[n]
            originals.setdefault((f.seed, f.count, f.index, f.size), set()).add(f.producer)
    original_jobs = {
        key: Job(key[0], key[1], (key[2],), frozenset(), tuple(sorted(p)), key[3])
        for key, p in originals.items()
    }
    # A trial compiles one kernel on PoCL and spirvjit: on a loaded machine that can take
    # longer than a batch's share, and a trial that times out explains nothing.
    saved, pool.timeout = pool.timeout, max(4 * pool.timeout, 120.0)
    pool.run([*jobs.values(), *original_jobs.values()], collect)
    pool.timeout = saved
    for n, tried in trials.items():
        f = findings[n]
        for key, ks in tried:
            status, payload = results.get(jobs[key], ("missing", None))
            if status != "ok":
                f.detail += f"\n(trial with {sorted(key[3])}: {status})"
                continue
            ref, got = payload[REFERENCE][f.index], payload[f.producer][f.index]
            nseg = generate(f.seed, f.count, size=f.size).kernels[f.index].nseg
            if ref.error or compare(ref, got, nseg) is not None:
                continue
            if any(k.reference_bug for k in ks):
                job = original_jobs[(f.seed, f.count, f.index, f.size)]
                status, payload = results.get(job, ("missing", None))
                if status != "ok":
                    f.detail += f"\n(original spelling again: {status})"
                    continue
                # The rewritten spelling moved PoCL's result only: spirvjit's stayed.
                if compare(got, payload[f.producer][f.index], nseg) is not None:
                    continue
            f.verdict = " + ".join(k.title for k in ks)
            break


POCL_CHANGED = "PoCL's result changed between runs, spirvjit's did not"


def rerun_unexplained(findings: list[Finding], pool: Pool) -> None:
    """Runs each unexplained mismatch's kernel once more on PoCL and the producer, and
    says in its detail whether the mismatch repeated. A mismatch that does not repeat
    stays unexplained (it may be a race in spirvjit as well as in PoCL), but it points
    the person who looks at it at nondeterminism rather than a miscompile; unless
    spirvjit gave one result throughout (every tier of the first run and of the rerun,
    bit for bit) and PoCL agreed with it the second time: then PoCL's first result was
    the one that changed (PoCL 3.1 miscompiles some programs into reads of uninitialized
    memory, findings/pocl_bugs.cl; one such in the CI sample, seed 20261206 kernel 5, was
    right in oclgrind and in ~1e6 spirvjit launches)."""
    wanted = [f for f in findings if f.verdict == "unexplained" and f.kind == "mismatch"]
    if not wanted:
        return
    jobs = {
        id(f): Job(f.seed, f.count, (f.index,), frozenset(), (REFERENCE, f.producer), f.size)
        for f in wanted
    }
    results: dict = {}
    pool.run(list(jobs.values()), lambda job, status, payload: results.update({job: payload}))
    for f in wanted:
        payload = results.get(jobs[id(f)])
        if not isinstance(payload, dict):
            f.detail += "\n(rerun: no result)"
            continue
        nseg = generate(f.seed, f.count, size=f.size).kernels[f.index].nseg
        ref, got = payload[REFERENCE][f.index], payload[f.producer][f.index]
        repeated = ref.error or compare(ref, got, nseg) is not None
        f.detail += (
            "\n(rerun: the mismatch repeated)"
            if repeated
            else ("\n(rerun: did NOT repeat; PoCL and spirvjit agreed the second time)")
        )
        first = f.outcome
        if (
            not repeated
            and first is not None
            and not first.error
            and compare(first, first, nseg) is None  # the first run's tiers agreed
            and compare(first, got, nseg) is None  # and the rerun's with them
        ):
            f.verdict = POCL_CHANGED


# ------------------------------------------------------------------ main
def header(f: Finding, batch: Batch) -> str:
    k = batch.kernels[f.index]
    return (
        f"// difftest seed={f.seed} count={f.count} index={f.index} kernel={k.name}\n"
        f"// producer={f.producer} kind={f.kind} verdict={f.verdict}\n"
        f"// global={k.global_shape} local={k.local_shape} nseg={k.nseg}"
        f" options={' '.join(OPTIONS)}\n"
        f"// {f.detail.splitlines()[0] if f.detail else ''}\n"
        f"// rerun: python3 -m tests.fuzz.differential --seed {f.seed} --count {f.count} "
        f"--only {f.index} --size {f.size}\n"
    )


def save(f: Finding, keep: str) -> str:
    batch = generate(f.seed, f.count, size=f.size)
    os.makedirs(keep, exist_ok=True)
    path = os.path.join(keep, f"s{f.seed}_k{f.index}_{f.producer}.cl")
    keep_segs = set(f.segments) if f.segments else None
    with open(path, "w") as fh:
        fh.write(header(f, batch))
        fh.write(batch.kernel_source(f.index, keep_segs if f.kind == "mismatch" else None))
        fh.write(f"\n/* full detail:\n{f.detail}\n*/\n")
    return path


def run(
    count: int,
    seed: int,
    jobs: int = 2,
    batch_size: int = 10,
    timeout: float = 30.0,
    only: list[int] | None = None,
    keep: str | None = None,
    classify_known: bool = True,
    size: str = "normal",
    log=print,
) -> dict:
    """Runs ``count`` programs from batch seeds ``seed, seed+1, ...``; returns the summary."""
    if only is not None:
        job_list = [Job(seed, batch_size, tuple(only), size=size)]
    else:
        job_list = []
        s, left = seed, count
        while left > 0:
            n = min(batch_size, left)
            job_list.append(Job(s, n, tuple(range(n)), size=size))
            s, left = s + 1, left - n
    findings: list[Finding] = []
    stats = {"programs": 0, "agree": 0, "reference_errors": 0, "crashes": 0}
    pool = Pool(jobs, timeout)
    retry: list[Job] = []
    t0 = time.monotonic()

    def done(job: Job, status: str, payload) -> None:
        hung = status in ("timeout", "died")  # no answer: a hang or a crashed process
        if hung and len(job.indices) > 1:
            log(f"seed {job.seed}: batch {status}; rerunning its kernels one by one")
            retry.extend(Job(job.seed, job.count, (i,), size=job.size) for i in job.indices)
            return
        if hung and job.producers == (REFERENCE, *PRODUCERS):
            stats["programs"] += 1
            # which implementation is it? rerun the kernel on each one alone
            for p in (REFERENCE, *PRODUCERS):
                retry.append(Job(job.seed, job.count, job.indices, producers=(p,), size=job.size))
            return
        if hung:
            (p,) = job.producers
            what = "hang" if status == "timeout" else "process died"
            detail = f"{what}: no result within {timeout:.0f} s"
            kind = "reference-error" if p == REFERENCE else status
            findings.append(
                Finding(job.seed, job.count, job.indices[0], p, kind, detail, size=job.size)
            )
            return
        if status == "crash":
            stats["crashes"] += 1
            log(f"seed {job.seed}: harness crash\n{payload}")
            return
        batch = generate(job.seed, job.count, size=job.size)
        if job.producers != (REFERENCE, *PRODUCERS):  # a hang being attributed
            for p, res in payload.items():
                for i, o in res.items():
                    if o.error:
                        findings.append(
                            Finding(job.seed, job.count, i, p, "error", o.error, size=job.size)
                        )
            return
        for i in job.indices:
            stats["programs"] += 1
            ref = payload[REFERENCE][i]
            if ref.error:
                stats["reference_errors"] += 1
                findings.append(
                    Finding(
                        job.seed,
                        job.count,
                        i,
                        REFERENCE,
                        "reference-error",
                        ref.error,
                        size=job.size,
                    )
                )
                continue
            ok = True
            for p in PRODUCERS:
                diff = compare(ref, payload[p][i], batch.kernels[i].nseg)
                if diff:
                    ok = False
                    kind = "error" if payload[p][i].error else "mismatch"
                    findings.append(
                        Finding(
                            job.seed,
                            job.count,
                            i,
                            p,
                            kind,
                            diff[0],
                            diff[1],
                            size=job.size,
                            outcome=payload[p][i],
                        )
                    )
            stats["agree"] += ok
        if stats["programs"] % 100 < len(job.indices):
            t = time.monotonic() - t0
            log(f"{stats['programs']} programs, {len(findings)} findings, {t:.0f} s")

    pool.run(job_list, done)
    while retry:
        again, retry[:] = list(retry), []
        pool.run(again, done)
    if classify_known and findings:
        explain(findings, pool, log)
    rerun_unexplained(findings, pool)
    pool.close()
    for f in findings:
        if keep:
            log(f"saved {save(f, keep)}")
    stats["seconds"] = round(time.monotonic() - t0, 1)
    stats["findings"] = findings
    stats["unexplained"] = [f for f in findings if f.verdict == "unexplained"]
    return stats


def summary(stats: dict, count: int, seed: int) -> str:
    lines = [
        f"programs: {stats['programs']} (requested {count}, seed {seed}), "
        f"all three agree: {stats['agree']}, time {stats['seconds']} s",
        f"findings: {len(stats['findings'])}, unexplained: {len(stats['unexplained'])}, "
        f"PoCL errors: {stats['reference_errors']}, harness crashes: {stats['crashes']}",
    ]
    by_verdict: dict[str, int] = {}
    for f in stats["findings"]:
        key = f"{f.verdict} [{f.producer} {f.kind}]"
        by_verdict[key] = by_verdict.get(key, 0) + 1
    for key, n in sorted(by_verdict.items()):
        lines.append(f"  {n:5d}  {key}")
    for f in stats["findings"]:
        if f.verdict == "unexplained":
            lines.append(
                f"  unexplained: seed {f.seed} count {f.count} kernel {f.index} {f.producer} "
                f"{f.kind}: {f.detail.splitlines()[0][:300] if f.detail else ''}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--count", type=int, default=100, help="programs (kernels) to run")
    ap.add_argument("--seed", type=int, default=1, help="seed of the first batch")
    ap.add_argument("--jobs", type=int, default=2, help="worker processes")
    ap.add_argument("--batch", type=int, default=10, help="kernels per .cl file")
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds per kernel of a batch")
    ap.add_argument("--keep", help="directory for the .cl files of findings")
    ap.add_argument("--only", type=int, nargs="*", help="run only these kernels of batch --seed")
    ap.add_argument("--show", action="store_true", help="print the batch's source and exit")
    ap.add_argument("--size", choices=sorted(SIZES), default="normal", help="program size")
    ap.add_argument("--no-known", action="store_true", help="classify nothing as known")
    a = ap.parse_args(argv)
    if a.show:
        print(generate(a.seed, a.batch, size=a.size).source())
        return 0
    stats = run(a.count, a.seed, a.jobs, a.batch, a.timeout, a.only, a.keep, not a.no_known, a.size)
    print(summary(stats, a.count, a.seed))
    return 1 if stats["unexplained"] else 0


if __name__ == "__main__":
    # The workers unpickle jobs by their module's name: run the importable module's main
    # (classes defined in ``__main__`` would not be found in a worker).
    from . import differential

    sys.exit(differential.main())
