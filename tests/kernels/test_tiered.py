"""Tiered JIT on the CPU (the default; SPIRVJIT_TIERED=0 turns it off; backends/cpu/tiered.py).

The first launches run the quick tier while a background thread compiles the optimized
one, which then replaces it. Each tier is compiled exactly once however many threads
launch at once, launches racing the swap all get right results, both tiers give the same
bits, and the cache only ever holds the optimized tier.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from harness import TIERED_ARITH, hold_optimized_compiles

import spirvjit
from spirvjit import cache, jit
from spirvjit.backends.cpu import codegen, tiered

KERNELS = Path(__file__).resolve().parents[2] / "benchmarks" / "kernels"


@pytest.fixture
def tiered_on(monkeypatch):
    monkeypatch.setenv("SPIRVJIT_TIERED", "1")
    compiles: list[tuple] = []
    original = jit.compile_kernel

    def counting(translation, target, symbol, dump_as, times, specialization=(), *rest):
        compiles.append(tuple(specialization))
        return original(translation, target, symbol, dump_as, times, specialization, *rest)

    monkeypatch.setattr(jit, "compile_kernel", counting)
    return compiles


def _arith(name: str):
    program = spirvjit.compile_opencl(TIERED_ARITH % name)
    return program, program.kernel(f"arith_{name}")


def _run_arith(kernel, n: int = 1000):
    x = np.linspace(-3, 3, n, dtype=np.float32)
    y, h = np.zeros(n, np.float32), np.zeros(n, np.uint32)
    kernel(x, y, h, np.uint32(n), global_size=1024, local_size=64)
    return y, h


def test_quick_tier_runs_first_then_the_optimized_tier_with_the_same_bits(
    tiered_on, monkeypatch
) -> None:
    release = hold_optimized_compiles(monkeypatch)
    quick_runs, levels = [], []
    quick_optimize, optimize = codegen.quick_optimize, codegen.optimize
    monkeypatch.setattr(
        codegen, "quick_optimize", lambda m, t: (quick_runs.append(m.name), quick_optimize(m, t))[1]
    )
    monkeypatch.setattr(
        codegen, "optimize", lambda m, t, level=3: (levels.append(level), optimize(m, t, level))[1]
    )
    program, kernel = _arith("first")
    quick = _run_arith(kernel)
    # The quick tier ran the few passes only, not the O3 pipeline.
    assert len(quick_runs) == 1 and quick_runs[0].endswith(jit.QUICK_MODULE_SUFFIX)
    assert levels == []
    loaded = kernel._default
    assert isinstance(loaded, tiered.TieredKernel) and loaded.tier == 0
    assert kernel.optimized_seconds is None
    release.set()
    assert kernel.wait_optimized(120)
    assert loaded.tier == 1 and loaded.error is None and kernel.optimized_seconds > 0
    assert levels == [3] and len(quick_runs) == 1
    optimized = _run_arith(kernel)
    # Bit for bit, and right.
    np.testing.assert_array_equal(quick[0], optimized[0])
    np.testing.assert_array_equal(quick[1], optimized[1])
    i = np.arange(1000, dtype=np.uint64)
    s = (i * 2654435761) % 2**32
    np.testing.assert_array_equal(optimized[1], ((s ^ (s >> 13)) * 0x5BD1E995) % 2**32)
    assert tiered_on == [(jit.QUICK_TIER,), ()]


def test_only_the_optimized_tier_is_cached(tiered_on, monkeypatch) -> None:
    stored = []
    store = cache.store
    monkeypatch.setattr(cache, "store", lambda key, obj: (stored.append(key), store(key, obj)))
    program, kernel = _arith("cached")
    _run_arith(kernel)  # a first launch: the quick tier, the optimized one beside it
    assert kernel.wait_optimized(120)
    assert stored == [program.kernel_key("arith_cached")]
    # A new process would find it: here, a new Program of the same SPIR-V loads it from
    # the cache, optimized, without a quick tier.
    again = spirvjit.Program(program.spirv).kernel("arith_cached")
    again.compile()
    assert not isinstance(again._default, tiered.TieredKernel)
    assert again._default.origin in ("memory", "disk")
    assert tiered_on == [(jit.QUICK_TIER,), ()]


def test_racing_threads_compile_each_tier_once_and_launches_racing_the_swap_are_right(
    tiered_on, monkeypatch
) -> None:
    """8 threads launch a barrier kernel (local memory, frames) at once and keep
    launching while the optimized tier comes in: one compile per tier, every sum right."""
    release = hold_optimized_compiles(monkeypatch)
    source = (KERNELS / "reduction.cl").read_text().replace("reduction", "reduction_tiered")
    program = spirvjit.compile_opencl(source)
    kernel = program.kernel("reduction_tiered")
    n, groups, local = 4096 + 17, 32, 64
    x = np.arange(n, dtype=np.float32) % 7  # small integers: every order sums exactly
    want = float(x.sum())
    start = threading.Barrier(8)
    failures: list[str] = []
    tiers: set[int] = set()

    def run(t: int) -> None:
        start.wait()
        after = 0  # launches since this thread saw the optimized tier
        for i in range(5000):  # until the swap and 3 launches more
            if t == 0 and i == 3:
                release.set()  # the swap happens while the others launch
            loaded = kernel._default  # None before the first launch
            tier = 0 if loaded is None else loaded.tier  # (it may change during the launch)
            partial = np.zeros(groups, np.float32)
            kernel(
                x, partial, spirvjit.LocalMemory(local * 4), np.uint32(n),
                global_size=groups * local, local_size=local,
            )  # fmt: skip
            tiers.add(tier)
            if float(partial.sum()) != want:
                failures.append(f"thread {t} launch {i} (tier {tier}): {partial.sum()}")
            after += tier
            if after >= 3:
                break

    threads = [threading.Thread(target=run, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not failures
    assert kernel.wait_optimized(120) and kernel._default.tier == 1
    assert tiers == {0, 1}
    assert sorted(tiered_on) == [(), (jit.QUICK_TIER,)]
    # The quick tier's translation (no vectorizer) has the optimized one's signature:
    # the same frames and barrier states.
    quick = program.translation_for((jit.QUICK_TIER,)).kernels["reduction_tiered"]
    assert quick == program.translation().kernels["reduction_tiered"]


def test_kernels_calling_scalar_libm_vector_functions_are_not_tiered(
    tiered_on, monkeypatch
) -> None:
    """A program whose calls of a libm function with libmvec variants were not routed
    through the one variant both tiers call (mathcalls.one_variant) would round
    differently on the two tiers: it is not tiered. (tests/kernels/test_tiered_math.py
    tiers every such function with the same bits.)"""
    from spirvjit.backends.cpu import mathcalls

    monkeypatch.setattr(mathcalls, "one_variant", lambda module, features: 0)
    program = spirvjit.compile_opencl(
        "kernel void log_tiered(global float *y) {"
        " size_t i = get_global_id(0); y[i] = log2(y[i]); }"
    )  # (log2: float log has no libmvec variant in OpenCL's bounds, so it is never widened)
    kernel = program.kernel("log_tiered")
    y = np.linspace(0.5, 2, 64, dtype=np.float32)
    kernel(y, global_size=64)
    assert not isinstance(kernel._default, tiered.TieredKernel)
    assert tiered_on == [()]


def test_inline_exp_kernels_are_tiered_with_the_same_bits(tiered_on, monkeypatch) -> None:
    """exp is inline code (vecmath.py), the same bits scalar and vector: no libm call
    keeps such a kernel from a quick tier."""
    release = hold_optimized_compiles(monkeypatch)
    program = spirvjit.compile_opencl(
        "kernel void exp_tiered(global float *y) { size_t i = get_global_id(0); y[i] = exp(y[i]); }"
    )
    kernel = program.kernel("exp_tiered")
    x = np.linspace(-80, 80, 4099, dtype=np.float32)
    quick = x.copy()
    kernel(quick, global_size=x.size)
    assert isinstance(kernel._default, tiered.TieredKernel) and kernel._default.tier == 0
    release.set()
    assert kernel.wait_optimized(120)
    optimized = x.copy()
    kernel(optimized, global_size=x.size)
    assert kernel._default.tier == 1
    np.testing.assert_array_equal(quick.view(np.uint32), optimized.view(np.uint32))


def test_on_by_default_and_off_with_the_variable_at_0(tiered_on, monkeypatch) -> None:
    monkeypatch.delenv("SPIRVJIT_TIERED")
    program, kernel = _arith("by_default")
    _run_arith(kernel)
    assert isinstance(kernel._default, tiered.TieredKernel)
    assert kernel.wait_optimized(120)
    tiered_on.clear()
    monkeypatch.setenv("SPIRVJIT_TIERED", "0")
    program, kernel = _arith("untiered")
    y, h = _run_arith(kernel)
    assert not isinstance(kernel._default, tiered.TieredKernel)
    assert kernel.wait_optimized(0) and kernel.optimized_seconds == kernel.compile_seconds
    assert tiered_on == [()]


def test_a_failed_optimized_compile_leaves_the_quick_tier_running(tiered_on, monkeypatch) -> None:
    """The quick code keeps serving (slower, still right); the failure is kept."""
    from spirvjit.backends.cpu import CpuBackend

    load = CpuBackend._load

    def failing(self, program, kernel, specialization=()):
        if jit.QUICK_TIER not in specialization:
            raise RuntimeError("injected optimizer failure")
        return load(self, program, kernel, specialization)

    monkeypatch.setattr(CpuBackend, "_load", failing)
    program, kernel = _arith("failing")
    first = _run_arith(kernel)
    assert kernel.wait_optimized(120)
    loaded = kernel._default
    assert loaded.tier == 0 and "injected" in str(loaded.error)
    assert kernel.optimized_seconds is None
    again = _run_arith(kernel)
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])


# Mid-launch switching (TieredKernel.launch): the groups of a launch not yet claimed
# when the optimized tier comes in run on the optimized code.
GATE = """
kernel void gate_%s(global volatile int *gate, global int *started, global float *y,
                    global const float *x)
{
    size_t i = get_global_id(0);
    if (get_local_id(0) == 0 && (%s)) {
        atomic_inc(started);
        while (atomic_add(gate, 0) == 0) {}  /* until the test opens the gate */
    }
    y[i] += x[i] * 2.0f + 1.0f;
}
"""


@pytest.mark.parametrize(
    "items, which_wait",
    [
        (2048, "get_group_id(0) == 0"),  # < INLINE_WORK_ITEMS: on the launching thread
        (16384, "1"),  # on the thread pool: each thread's first chunk waits
    ],
    ids=["inline", "pool"],
)
def test_a_launch_switches_to_the_optimized_tier_midway(tiered_on, monkeypatch, items, which_wait):
    """The quick tier's runners wait in their first groups until the optimized tier is
    in; the launch then finishes on the optimized code: every work-item ran once."""
    release = hold_optimized_compiles(monkeypatch)
    name = f"{items}"
    kernel = spirvjit.compile_opencl(GATE % (name, which_wait)).kernel(f"gate_{name}")
    gate, started = np.zeros(1, np.int32), np.zeros(1, np.int32)
    x = np.arange(items, dtype=np.float32)
    y = np.full(items, 0.25, np.float32)
    runs: list[tuple] = []  # (tier's CpuKernel, first group, total groups) of each run
    from spirvjit.backends.cpu import launcher

    run_launch = launcher.CpuKernel.run_launch

    def recording(self, prepared, record=None, threads=0):
        chosen = prepared.record if record is None else record
        runs.append((self, chosen.next_group, chosen.total_groups))
        return run_launch(self, prepared, record, threads)

    monkeypatch.setattr(launcher.CpuKernel, "run_launch", recording)

    def opener() -> None:
        while started[0] == 0:  # the quick tier's launch is running (and waiting)
            threading.Event().wait(0.001)
        release.set()
        assert kernel.wait_optimized(120)
        gate[0] = 1

    thread = threading.Thread(target=opener)
    thread.start()
    kernel(gate, started, y, x, global_size=items, local_size=64)
    thread.join(120)
    loaded = kernel._default
    assert loaded.tier == 1 and loaded.switched == 1
    # The quick code ran the launch from group 0 (in slices), the optimized code the
    # rest: from a group after the waiting ones.
    groups = items // 64
    full = loaded._current
    *quick_runs, (last, first, total) = runs
    assert last is full and all(kernel is not full for kernel, _, _ in quick_runs)
    assert quick_runs[0][1] == 0 and 0 < first < total == groups
    np.testing.assert_array_equal(y, np.float32(0.25) + (x * np.float32(2) + np.float32(1)))
    # The next launch runs on the optimized tier from the start.
    kernel(gate, started, y, x, global_size=items, local_size=64)
    assert loaded.switched == 1 and runs[-1] == (full, 0, groups)


ACCUMULATE = """
kernel void accumulate_%s(global const float *x, global float *y, global uint *hits, uint n)
{
    size_t i = get_global_id(0);
    if (i >= n) return;
    float v = x[i];
    for (int k = 0; k < 24; ++k)
        v = v * 0.5f + 1.0f;
    y[i] += v;
    hits[i] += 1;
}
"""


def test_threads_launching_a_fresh_tiered_kernel_across_the_swap_match_numpy(
    tiered_on, monkeypatch
) -> None:
    """12 threads launch one freshly loaded kernel (inline and pooled sizes, groups that
    would show a group run twice or skipped: y += v, hits += 1) over and over while the
    optimized tier comes in; every result equals NumPy's, bit for bit."""
    release = hold_optimized_compiles(monkeypatch)
    kernel = spirvjit.compile_opencl(ACCUMULATE % "stress").kernel("accumulate_stress")
    start = threading.Barrier(12)
    failures: list[str] = []
    launches = [0] * 12

    def run(t: int) -> None:
        n = (3000, 40000, 9000)[t % 3] + t  # inline, pooled, pooled; ragged last group
        rng = np.random.default_rng(t)
        x = rng.uniform(-4, 4, n).astype(np.float32)
        v = x.copy()
        for _ in range(24):
            v = v * np.float32(0.5) + np.float32(1)
        y, hits = np.zeros(n, np.float32), np.zeros(n, np.uint32)
        want = np.zeros(n, np.float32)
        start.wait()
        after = 0
        for i in range(2000):
            if t == 0 and i == 2:
                release.set()
            loaded = kernel._default
            tier = 0 if loaded is None else loaded.tier
            kernel(x, y, hits, np.uint32(n), global_size=(n + 63) // 64 * 64, local_size=64)
            want += v
            launches[t] += 1
            if not (np.array_equal(y, want) and (hits == i + 1).all()):
                failures.append(f"thread {t} launch {i} (tier {tier})")
                return
            after += tier
            if after >= 2:
                return

    threads = [threading.Thread(target=run, args=(t,)) for t in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not failures
    assert kernel.wait_optimized(120) and kernel._default.tier == 1
    assert min(launches) >= 3
    assert sorted(tiered_on) == [(), (jit.QUICK_TIER,)]


FAST_MATH = """
kernel void fast_%s(global const float *x, global float *y)
{
    size_t i = get_global_id(0);
    float s = 0.0f;
    for (int k = 0; k < 64; ++k)
        s += x[(i + k) %% 4096] * 0.1f;
    y[i] = s + x[i] / 3.0f;
}
"""


def test_fast_math_kernels_are_not_tiered(tiered_on, monkeypatch) -> None:
    """With fast-math flags LLVM's O3 reassociates the sum (vectorized) and the quick
    tier's -O0 code does not: a quick tier gave other bits (971 of 4096 values differed
    before fast-math programs were left untiered; within the fast-math bounds, but which
    bits a launch gets would depend on timing). The first launch gives the bits of an
    untiered compile."""
    release = hold_optimized_compiles(monkeypatch)
    x = np.random.default_rng(1).uniform(-10, 10, 4096).astype(np.float32)
    kernel = spirvjit.compile_opencl(FAST_MATH % "a", ["-cl-fast-relaxed-math"]).kernel("fast_a")
    first = np.zeros(4096, np.float32)
    kernel(x, first, global_size=4096)
    assert not isinstance(kernel._default, tiered.TieredKernel)
    release.set()
    monkeypatch.setenv("SPIRVJIT_TIERED", "0")
    source = FAST_MATH % "b"
    untiered = spirvjit.compile_opencl(source, ["-cl-fast-relaxed-math"]).kernel("fast_b")
    optimized = np.zeros(4096, np.float32)
    untiered(x, optimized, global_size=4096)
    np.testing.assert_array_equal(first.view(np.uint32), optimized.view(np.uint32))


FINITE_MATH = """
kernel void finite_%s(global const float *x, global float *y)
{
    size_t i = get_global_id(0);
    float s = 0.0f, a = x[i];
    for (int k = 0; k < 64; ++k)
        s += x[(i + k) %% 4096] * 0.1f;
    float m = fmin(a, s) + fmax(a * 0.5f, -1.0f) + (a < s ? a : s);
    float q = (a * 3.0f + 1.0f) / (a * a + 1.0f);
    y[i] = s + m + q + (isnan(a) ? 100.0f : 0.0f) + (isinf(q) ? 200.0f : 0.0f) + sqrt(fabs(a));
}
"""


def test_finite_math_only_kernels_are_tiered_with_the_same_bits(tiered_on, monkeypatch) -> None:
    """-cl-finite-math-only gives nnan and ninf flags only: an operation with them is the
    plain operation for finite values (poison otherwise), so O3 may change only results
    the kernel promised never to compute. Such a kernel is tiered (before: not, as every
    fast-math flag kept a kernel untiered), and for finite values both tiers give the
    bits of an untiered compile."""
    release = hold_optimized_compiles(monkeypatch)
    x = np.random.default_rng(5).uniform(-10, 10, 4096).astype(np.float32)
    kernel = spirvjit.compile_opencl(FINITE_MATH % "a", ["-cl-finite-math-only"]).kernel("finite_a")
    quick = np.zeros(4096, np.float32)
    kernel(x, quick, global_size=4096)
    loaded = kernel._default
    assert isinstance(loaded, tiered.TieredKernel) and loaded.tier == 0
    release.set()
    assert kernel.wait_optimized(120) and loaded.tier == 1
    optimized = np.zeros(4096, np.float32)
    kernel(x, optimized, global_size=4096)
    np.testing.assert_array_equal(quick.view(np.uint32), optimized.view(np.uint32))
    monkeypatch.setenv("SPIRVJIT_TIERED", "0")
    untiered = spirvjit.compile_opencl(FINITE_MATH % "b", ["-cl-finite-math-only"]).kernel(
        "finite_b"
    )
    reference = np.zeros(4096, np.float32)
    untiered(x, reference, global_size=4096)
    np.testing.assert_array_equal(quick.view(np.uint32), reference.view(np.uint32))
    assert np.isfinite(reference).all()


def test_the_suites_kernels_have_the_same_signature_in_both_tiers() -> None:
    """A launch switching tiers midway hands the quick tier's argument array, launch
    record and local memory (frames of barrier kernels) to the optimized code: the two
    translations must lay them out alike. The benchmark suite's kernels, barrier ones
    included."""
    import sys

    sys.path.insert(0, str(KERNELS.parent))
    from cases import CASES

    for name, case in CASES.items():
        program = spirvjit.compile_opencl(case.source, list(case.options))
        quick = program.translation_for((jit.QUICK_TIER,)).kernels[name]
        assert quick == program.translation().kernels[name], name


def _accumulate_reference(x: np.ndarray) -> np.ndarray:
    v = x.copy()
    for _ in range(24):
        v = v * np.float32(0.5) + np.float32(1)
    return v


def test_a_launch_the_quick_code_would_take_longer_waits_for_the_optimized_code(
    tiered_on, monkeypatch
) -> None:
    """When a quick-tier launch predicts it would outlast the optimized compile (here:
    the compile is said to be due now), it stops after its first slice, waits for the
    optimized code and runs the rest on it."""
    from spirvjit.backends.cpu import launcher

    release = hold_optimized_compiles(monkeypatch)
    monkeypatch.setattr(tiered.TieredKernel, "_compile_left", lambda self: 0.0)
    kernel = spirvjit.compile_opencl(ACCUMULATE % "waits").kernel("accumulate_waits")
    n = 64 * 500
    x = np.random.default_rng(3).uniform(-4, 4, n).astype(np.float32)
    y, hits = np.zeros(n, np.float32), np.zeros(n, np.uint32)
    runs: list[tuple] = []
    run_launch = launcher.CpuKernel.run_launch

    def recording(self, prepared, record=None, threads=0):
        chosen = prepared.record if record is None else record
        runs.append((self, chosen.next_group, chosen.total_groups))
        return run_launch(self, prepared, record, threads)

    monkeypatch.setattr(launcher.CpuKernel, "run_launch", recording)
    # Optimized while the launch waits (a wait lasts at most PATIENCE times the quick
    # code's predicted time: here, until the optimized code is in).
    monkeypatch.setattr(tiered, "PATIENCE", 1e6)
    launching = threading.Thread(
        target=kernel, args=(x, y, hits, np.uint32(n)), kwargs={"global_size": n, "local_size": 64}
    )
    launching.start()
    while kernel._default is None or kernel._default.waited == 0:
        threading.Event().wait(0.001)
    release.set()
    launching.join(120)
    loaded = kernel._default
    assert loaded.waited == 1 and loaded.switched == 1 and loaded.tier == 1
    *quick_runs, (full, first, total) = runs  # the quick code's slices, then the rest
    assert full is loaded._current and all(kernel is not full for kernel, _, _ in quick_runs)
    assert quick_runs[0][1] == 0 and 0 < first < total == n // 64
    np.testing.assert_array_equal(y, _accumulate_reference(x))
    assert (hits == 1).all()


def test_a_launch_waits_for_the_optimized_code_no_longer_than_the_quick_code_takes(
    tiered_on, monkeypatch
) -> None:
    """The optimized compile never comes (held until the end): the launch waits about as
    long as the quick code would take, then runs the rest on the quick code."""
    release = hold_optimized_compiles(monkeypatch)
    monkeypatch.setattr(tiered.TieredKernel, "_compile_left", lambda self: 0.0)
    kernel = spirvjit.compile_opencl(ACCUMULATE % "gives_up").kernel("accumulate_gives_up")
    n = 64 * 100
    x = np.random.default_rng(4).uniform(-4, 4, n).astype(np.float32)
    y, hits = np.zeros(n, np.float32), np.zeros(n, np.uint32)
    kernel(x, y, hits, np.uint32(n), global_size=n)
    loaded = kernel._default
    assert loaded.waited == 1 and loaded.switched == 0 and loaded.tier == 0
    np.testing.assert_array_equal(y, _accumulate_reference(x))
    assert (hits == 1).all()
    release.set()
    assert kernel.wait_optimized(120)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_fork_waits_for_the_background_compile(tiered_on, monkeypatch) -> None:
    """The optimized compile holds locks (the program's per-variant ones, llvmlite's); a
    child forked during it would find them held forever (no thread to release them) and
    hang loading the kernel's variant. Forking waits for the compile instead."""
    import os

    source = TIERED_ARITH % "forked" + TIERED_ARITH.replace("arith_%s", "arith_forked_too")
    program = spirvjit.compile_opencl(source)
    kernel = program.kernel("arith_forked")
    parent = _run_arith(kernel)
    loaded = kernel._default
    assert isinstance(loaded, tiered.TieredKernel)
    pid = os.fork()
    if pid == 0:  # the child: both kernels launch, and give the parent's results
        code = 1
        try:
            for name in ("arith_forked", "arith_forked_too"):
                y, h = _run_arith(program.kernel(name))
                if not (np.array_equal(y, parent[0]) and np.array_equal(h, parent[1])):
                    break
            else:
                code = 0
        finally:
            os._exit(code)
    # Forking waited: the optimized tier was in before the child was made.
    assert loaded.wait_optimized(0)
    deadline = __import__("time").monotonic() + 120
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if __import__("time").monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung")
        __import__("time").sleep(0.05)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def test_another_kernel_loads_while_an_optimized_tier_compiles(tiered_on, monkeypatch) -> None:
    """No lock is held across a compile: while one kernel's optimized tier is in its O3
    stage, the program's other kernel compiles its quick tier and launches (before, the
    optimized compile held the program's lock to its end, and every other kernel of the
    program waited for it)."""
    inside, release = threading.Event(), threading.Event()
    optimize = codegen.optimize

    def held(module, target, level=3):
        if threading.current_thread().name.startswith("spirvjit optimize "):
            inside.set()
            assert release.wait(120)
        return optimize(module, target, level)

    monkeypatch.setattr(codegen, "optimize", held)
    program = spirvjit.compile_opencl(TIERED_ARITH % "busy" + TIERED_ARITH % "free")
    busy, free = program.kernel("arith_busy"), program.kernel("arith_free")
    first = _run_arith(busy)
    assert inside.wait(120)  # arith_busy's optimized compile is in its O3 stage
    results: list[tuple] = []
    other = threading.Thread(target=lambda: results.append(_run_arith(free)))
    other.start()
    other.join(30)
    loaded_meanwhile = not other.is_alive()
    release.set()
    other.join(120)
    assert loaded_meanwhile
    np.testing.assert_array_equal(results[0][0], first[0])
    np.testing.assert_array_equal(results[0][1], first[1])
    for name in ("arith_busy", "arith_free"):
        assert program.kernel(name).wait_optimized(120)
    assert sorted(tiered_on) == [(), ()] + [(jit.QUICK_TIER,)] * 2


def test_the_optimized_compile_starts_once_the_quick_tier_is_in(tiered_on, monkeypatch) -> None:
    """Not beside it: both would share the GIL, and the quick compile (what the first
    launch waits for) took twice as long (tiered.TieredKernel.__init__)."""
    events: list[str] = []
    counting = jit.compile_kernel  # the fixture's

    def ordered(translation, target, symbol, dump_as, times, specialization=(), *rest):
        tier = "quick" if jit.QUICK_TIER in specialization else "optimized"
        events.append(f"{tier} begins")
        try:
            return counting(translation, target, symbol, dump_as, times, specialization, *rest)
        finally:
            events.append(f"{tier} ends")

    monkeypatch.setattr(jit, "compile_kernel", ordered)
    program, kernel = _arith("ordered")
    _run_arith(kernel)
    assert kernel.wait_optimized(120) and kernel._default.tier == 1
    assert events == ["quick begins", "quick ends", "optimized begins", "optimized ends"]


def test_threads_racing_first_launches_of_several_kernels_compile_each_tier_once(
    tiered_on,
) -> None:
    """8 threads launch the 4 kernels of one program for the first time at once, each in
    another order, and keep launching while the optimized tiers come in: no deadlock
    between the per-kernel and per-variant locks, one compile per kernel and tier, every
    result the same bits (and the integer hash right)."""
    names = [f"arith_race{k}" for k in range(4)]
    program = spirvjit.compile_opencl("".join(TIERED_ARITH % f"race{k}" for k in range(4)))
    start = threading.Barrier(8)
    results: dict[tuple[int, str, int], tuple] = {}
    errors: list[BaseException] = []

    def run(t: int) -> None:
        try:
            start.wait()
            order = names[t % 4 :] + names[: t % 4]
            for round_ in range(3):
                for name in order:
                    results[t, name, round_] = _run_arith(program.kernel(name))
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert not any(thread.is_alive() for thread in threads) and not errors
    i = np.arange(1000, dtype=np.uint64)
    s = (i * 2654435761) % 2**32
    want_h = ((s ^ (s >> 13)) * 0x5BD1E995) % 2**32
    reference = results[0, names[0], 0][0]
    for (t, name, round_), (y, h) in results.items():
        np.testing.assert_array_equal(h, want_h, err_msg=f"{t} {name} {round_}")
        np.testing.assert_array_equal(y, reference, err_msg=f"{t} {name} {round_}")
    for name in names:
        kernel = program.kernel(name)
        assert kernel.wait_optimized(120) and kernel._default.tier == 1
    assert sorted(tiered_on) == [()] * 4 + [(jit.QUICK_TIER,)] * 4


def test_compile_loads_the_optimized_tier_without_a_quick_one(tiered_on) -> None:
    """An explicit compile asks for the best code: no quick tier."""
    program, kernel = _arith("explicit")
    kernel.compile()
    assert not isinstance(kernel._default, tiered.TieredKernel)
    assert kernel.optimized_seconds == kernel.compile_seconds
    assert tiered_on == [()]
    y, h = _run_arith(kernel)  # launches run it, no quick tier is made later
    assert tiered_on == [()]


def test_compile_after_a_tiered_launch_waits_for_the_optimized_tier(tiered_on, monkeypatch) -> None:
    release = hold_optimized_compiles(monkeypatch)
    program, kernel = _arith("compile_waits")
    _run_arith(kernel)
    loaded = kernel._default
    assert isinstance(loaded, tiered.TieredKernel) and loaded.tier == 0
    threading.Timer(0.2, release.set).start()
    kernel.compile()
    assert loaded.tier == 1 and kernel._default is loaded


def test_the_pass_pipeline_runs_without_llvmlites_lock() -> None:
    """llvmlite serializes every LLVM call through one lock: the O3 pipeline of a
    background compile would hold it for 100-500 ms and the quick compile beside it would
    wait. ``codegen.run_passes`` runs without it: here it finishes while this thread
    holds the lock."""
    import llvmlite.binding as llvm
    from llvmlite.binding import ffi

    from spirvjit.target import host_target
    from spirvjit.translate.kernel_ir import parse_ir

    target = host_target()
    module = parse_ir(
        "define i32 @f(i32 %x) {\n  %y = mul i32 %x, 3\n  ret i32 %y\n}\n", "lock test"
    )
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pb = llvm.create_pass_builder(codegen.target_machine(target), pto)
    manager = pb.getModulePassManager()
    done = threading.Event()
    thread = threading.Thread(target=lambda: (codegen.run_passes(manager, module, pb), done.set()))
    with ffi.lib._lock:
        thread.start()
        finished = done.wait(60)
    thread.join(60)
    assert finished


EXIT_SCRIPT = r"""
import atexit, json, threading
import numpy as np
import spirvjit
from spirvjit import jit
from spirvjit.backends.cpu import tiered

completed = []  # the optimized tier's stages that ran to their end
run = jit.StageTimes.run

def recording(self, name, fn, *args):
    if not threading.current_thread().name.startswith("spirvjit optimize "):
        return run(self, name, fn, *args)
    if name == "translate":  # held until the exit has begun: the compile is surely pending
        inner = fn
        fn = lambda *a: (tiered.EXITING.wait(60), inner(*a))[1]
    result = run(self, name, fn, *args)
    completed.append(name)
    return result

jit.StageTimes.run = recording
kernel = spirvjit.compile_opencl(SOURCE).kernel("arith_exit")
n = 1000
x = np.linspace(-3, 3, n, dtype=np.float32)
y, h = np.zeros(n, np.float32), np.zeros(n, np.uint32)
kernel(x, y, h, np.uint32(n), global_size=1024, local_size=64)
loaded = kernel._default

@atexit.register  # runs after the interpreter has joined the threads
def report():
    print(json.dumps({
        "tiered": isinstance(loaded, tiered.TieredKernel), "tier": loaded.tier,
        "error": type(loaded.error).__name__, "completed": completed,
        "h": int(h.astype(np.uint64).sum()),
    }))
"""


def test_a_process_exits_without_finishing_a_pending_optimized_compile(tmp_path) -> None:
    """A script that launches once and ends, the disk cache off: the optimized compile,
    whose code nothing would store, is given up at its next stage boundary (here: after
    its translation, held until the exit began) instead of run to its end; the exit is
    clean and the launch was right. (With the disk cache on, the exit waits for it up to
    SPIRVJIT_EXIT_WAIT seconds: tests/kernels/test_tiered_exit.py.)"""
    import json
    import os
    import subprocess
    import sys

    script = tmp_path / "launch_once.py"
    script.write_text(f"SOURCE = {TIERED_ARITH % 'exit'!r}\n" + EXIT_SCRIPT)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "SPIRVJIT_TIERED": "1", "SPIRVJIT_CACHE": "0"}
    out = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["tiered"] and report["tier"] == 0 and report["error"] == "Abandoned"
    assert "translate" in report["completed"]
    assert not {"opt", "obj", "load"} & set(report["completed"])
    i = np.arange(1000, dtype=np.uint64)
    s = (i * 2654435761) % 2**32
    assert report["h"] == int((((s ^ (s >> 13)) * 0x5BD1E995) % 2**32).sum())
