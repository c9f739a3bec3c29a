"""The CPU thread pools (backends/cpu/launcher.py): the native one (workers.py) and the
portable Python one compute the same results for any number of workers, every group
runs exactly once, each worker has its own local memory (grown when a launch needs
more), launches from many Python threads at once stay right, and a pool can be closed.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import spirvjit
from spirvjit.backends.cpu import launcher, workers

REDUCE = """
kernel void reduce(global const float* x, global float* partial, local float* scratch)
{
    size_t lid = get_local_id(0), n = get_local_size(0);
    scratch[lid] = x[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t step = n / 2; step > 0; step /= 2) {
        if (lid < step)
            scratch[lid] += scratch[lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = scratch[0];
}
"""

COUNT = """
kernel void count(global int* seen)
{
    if (get_local_id(0) == 0)
        atomic_inc(&seen[get_group_id(0)]);
}
"""

POOLS = ["native", "python"]


def _make(kind: str, threads: int):
    if kind == "native":
        if not workers.supported():
            pytest.skip("no native pool on this platform")
        return launcher.NativePool(threads)
    return launcher.ThreadPool(threads)


@pytest.fixture
def use_pool(monkeypatch):
    """Makes ``launcher`` use a pool of the kind and size asked for; closes native ones."""
    made = []

    def use(kind: str, threads: int):
        pool = _make(kind, threads)
        made.append(pool)
        monkeypatch.setattr(launcher, "_pool", pool)
        return pool

    yield use
    for pool in made:
        if isinstance(pool, launcher.NativePool):
            pool.close()


def _reduce(kernel, x: np.ndarray, local: int) -> np.ndarray:
    partial = np.zeros(x.size // local, np.float32)
    kernel(x, partial, spirvjit.LocalMemory(4 * local), global_size=x.size, local_size=local)
    return partial


@pytest.mark.parametrize("kind", POOLS)
@pytest.mark.parametrize("threads", [2, 3, 5])
def test_pools_run_every_group_once_with_its_own_local_memory(use_pool, kind, threads):
    use_pool(kind, threads)
    program = spirvjit.compile_opencl(REDUCE + COUNT)  # fresh plans for this pool
    x = np.random.default_rng(threads).integers(-8, 8, 1 << 15).astype(np.float32)
    for local in (64, 256):  # the second launch needs bigger arenas
        got = _reduce(program.reduce, x, local)
        # Small integers: every order of the additions gives the exact sums.
        np.testing.assert_array_equal(got, x.reshape(-1, local).sum(axis=1))
    seen = np.zeros(1000, np.int32)
    for _ in range(3):
        program.count(seen, global_size=seen.size * 64, local_size=64)
    np.testing.assert_array_equal(seen, 3)


@pytest.mark.parametrize("kind", POOLS)
def test_launches_from_many_threads_at_once(use_pool, kind):
    # Python threads other than the main one take part in their own launches, with
    # their own arenas, while the pool's workers use theirs.
    use_pool(kind, 2)
    program = spirvjit.compile_opencl(REDUCE)
    x = np.arange(1 << 14, dtype=np.float32) % 7
    want = x.reshape(-1, 128).sum(axis=1)
    errors: list[str] = []
    start = threading.Barrier(6)

    def run() -> None:
        try:
            start.wait()
            for _ in range(20):
                got = _reduce(program.reduce, x, 128)
                if not np.array_equal(got, want):
                    errors.append(f"wrong sums: {got[:4]}")
        except BaseException as exc:
            errors.append(repr(exc))

    threads = [threading.Thread(target=run) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


def test_the_platform_gets_the_native_pool_else_the_python_one(monkeypatch):
    if workers.supported():
        pool = launcher.make_pool(2)
        try:
            assert isinstance(pool, launcher.NativePool)
        finally:
            pool.close()
    monkeypatch.setattr(workers, "supported", lambda: False)
    assert isinstance(launcher.make_pool(2), launcher.ThreadPool)


def test_a_native_pool_that_cannot_be_built_falls_back(monkeypatch, caplog):
    def broken():
        raise RuntimeError("no JIT today")

    monkeypatch.setattr(workers, "supported", lambda: True)
    monkeypatch.setattr(workers, "functions", broken)
    with caplog.at_level("WARNING", logger="spirvjit"):
        pool = launcher.make_pool(2)
    assert isinstance(pool, launcher.ThreadPool)
    assert "no JIT today" in caplog.text


def test_a_new_native_pool_misses_no_launch_and_closes(monkeypatch):
    # Before: a worker took the generation it found when it started as the one it had
    # seen, so a launch (or close) made before it ran its first instruction hung.
    program = spirvjit.compile_opencl(COUNT)
    program.count.compile()
    for _ in range(5):
        pool = _make("native", 3)
        monkeypatch.setattr(launcher, "_pool", pool)
        seen = np.zeros(512, np.int32)
        program.count(seen, global_size=seen.size * 64, local_size=64)
        threads = list(pool._threads)
        pool.close()
        assert not any(t.is_alive() for t in threads)
        np.testing.assert_array_equal(seen, 1)
    pool = _make("native", 2)
    pool.close()  # at once
    assert not any(t.is_alive() for t in pool._threads)


def test_workers_spin_only_where_a_core_is_left_for_the_launching_thread():
    # A launch from the main thread runs on every worker while the main thread waits:
    # with a worker per core, spinning workers would take the core it needs next.
    assert workers.worker_spin(2, 2) == 0
    assert workers.worker_spin(4, 2) == 0
    assert workers.worker_spin(2, 16) == workers.WORKER_SPIN > 0
    assert workers.wait_spin(2, 2) < workers.wait_spin(2, 16)
    pool = _make("native", 1)
    try:
        assert pool._state.worker_spin == workers.worker_spin(1, launcher._cores())
        assert pool._wait_spin == workers.wait_spin(1, launcher._cores())
    finally:
        pool.close()


EXIT_WHILE_SPINNING = """
import numpy as np, spirvjit
from spirvjit.backends.cpu import launcher
prog = spirvjit.compile_opencl("kernel void f(global int* a) { a[get_global_id(0)] += 1; }")
a = np.zeros(1 << 16, np.int32)
prog.f(a, global_size=a.size)
pool = launcher.thread_pool()
pool._state.worker_spin = 1 << 40  # the workers spin on through the interpreter's exit
prog.f(a, global_size=a.size)
assert (a == 2).all()
print("ok", type(pool).__name__)
"""


def test_the_process_exits_cleanly_while_its_workers_spin():
    import os
    import subprocess
    import sys

    if not workers.supported():
        pytest.skip("no native pool on this platform")
    env = {**os.environ, "SPIRVJIT_NUM_THREADS": "2"}
    proc = subprocess.run(
        [sys.executable, "-c", EXIT_WHILE_SPINNING],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["ok", "NativePool"]


FORKED = """
import os, sys
import numpy as np, spirvjit
from spirvjit.backends.cpu import launcher
if sys.argv[1] == "python":
    launcher._pool = launcher.ThreadPool(2)
prog = spirvjit.compile_opencl("kernel void f(global int* a) { a[get_global_id(0)] += 1; }")
a = np.zeros(1 << 16, np.int32)
prog.f(a, global_size=a.size)  # the pool's threads start in this process
pid = os.fork()
if pid == 0:
    prog.f(a, global_size=a.size)  # multi-threaded, in a child that has none of them
    os._exit(0 if (a == 2).all() else 3)
_, status = os.waitpid(pid, 0)
prog.f(a, global_size=a.size)
print("child", os.waitstatus_to_exitcode(status), "parent", int(a[0]))
"""


@pytest.mark.parametrize("pool", ["default", "python"])
def test_a_forked_child_launches_on_threads_of_its_own(pool):
    # Before: the child's first multi-threaded launch waited forever for the parent's
    # workers (a fork copies only the thread that forked).
    import os
    import subprocess
    import sys

    if not hasattr(os, "fork"):
        pytest.skip("no fork here")
    env = {**os.environ, "SPIRVJIT_NUM_THREADS": "2"}
    proc = subprocess.run(
        [sys.executable, "-c", FORKED, pool],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["child", "0", "parent", "2"]
