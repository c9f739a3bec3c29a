"""Thread stress: compiles, loads and first launches from many threads at once.

Each scenario runs in a child process: before the fix, threads racing a kernel's first
launch crashed the process with SIGSEGV (each loaded its own copy of the JIT library
and dropped the previous one while another thread was running it), and a crash must
fail the test, not end the test run.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

RACE = textwrap.dedent(
    """
    import sys, threading
    import numpy as np
    import spirvjit
    from spirvjit.backends import backend

    cpu = backend("cpu")
    loads = []
    original = cpu.load
    def counting_load(program, kernel, device):
        loads.append(kernel)
        return original(program, kernel, device)
    cpu.load = counting_load

    SOURCE = '''
    kernel void scale(global const float* x, global float* y, float a, int seed) {
        size_t i = get_global_id(0);
        float v = x[i];
        for (int k = 0; k < 64; ++k) v = v * 0.5f + a;  // long enough to overlap
        y[i] = v + seed;
    }
    '''
    spirv = spirvjit.compile_opencl(SOURCE).spirv
    THREADS, ROUNDS, N = 8, int(sys.argv[1]), 1 << 15
    x = np.arange(N, dtype=np.float32)
    for round in range(ROUNDS):
        program = spirvjit.load_spirv(spirv)  # a fresh Program: every kernel loads anew
        kernel = program.scale
        start = threading.Barrier(THREADS)
        errors = []
        def run(seed):
            try:
                y = np.zeros(N, np.float32)
                start.wait()
                for _ in range(3):
                    kernel(x, y, np.float32(1.0), seed, global_size=N)
                expected = x.copy()
                for _ in range(64):
                    expected = expected * np.float32(0.5) + np.float32(1.0)
                assert np.array_equal(y, expected + np.float32(seed)), seed
            except BaseException as exc:
                errors.append(repr(exc))
        threads = [threading.Thread(target=run, args=(s,)) for s in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors
    assert len(loads) == ROUNDS, f"{len(loads)} loads for {ROUNDS} kernels"
    print("ok", len(loads))
    """
)

MANY_PROGRAMS = textwrap.dedent(
    """
    import threading
    import numpy as np
    import spirvjit

    errors = []
    def run(t):
        try:
            for k in range(4):
                src = f"kernel void add(global int* a) {{ a[get_global_id(0)] += {t * 10 + k}; }}"
                prog = spirvjit.compile_opencl(src)
                a = np.zeros(4096, np.int32)
                prog.add(a, global_size=4096)
                assert (a == t * 10 + k).all()
        except BaseException as exc:
            errors.append(repr(exc))
    threads = [threading.Thread(target=run, args=(t,)) for t in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    print("ok")
    """
)


# Threads optimizing and generating code at once, each with its own LLVM target machine
# (codegen.target_machine: LLVM's is not safe to share between compilations running at
# once). Guarded 2-D kernels: a row function, vector loops, the rest range.
MACHINES = textwrap.dedent(
    """
    import threading
    import numpy as np
    import spirvjit
    from spirvjit.backends.cpu import codegen
    from spirvjit.target import host_target

    SOURCE = '''kernel void put(global int* a, int nx, int ny) {
        int x = get_global_id(0), y = get_global_id(1);
        if (x < nx && y < ny) a[y * nx + x] = x * SCALE + y;
    }'''
    THREADS, KERNELS = 4, 3
    machines, errors = {}, []
    start = threading.Barrier(THREADS)
    def run(t):
        try:
            start.wait()
            for k in range(KERNELS):
                c = t * 10 + k
                program = spirvjit.compile_opencl(SOURCE.replace("SCALE", str(c)))
                a = np.full((5, 77), -1, np.int32)
                program.put(a, np.int32(77), np.int32(5), global_size=(80, 8), local_size=(16, 4))
                y, x = np.mgrid[0:5, 0:77]
                assert (a == x * c + y).all(), (t, k)
            machines[t] = codegen.target_machine(host_target())
            assert codegen.target_machine(host_target()) is machines[t]
        except BaseException as exc:
            errors.append(repr(exc))
    threads = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    ids = {id(m) for m in machines.values()} | {id(codegen.target_machine(host_target()))}
    assert len(ids) == THREADS + 1, "a target machine shared between threads"
    print("ok")
    """
)


def _run(script: str, *args: str, env_cache_off: bool = True) -> str:
    import os

    env = dict(os.environ)
    if env_cache_off:
        env["SPIRVJIT_CACHE"] = "0"
    proc = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env,
        timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, (
        f"exit status {proc.returncode} (negative: killed by that signal)\n{proc.stderr[-3000:]}"
    )
    return proc.stdout


def test_threads_racing_a_first_launch_load_the_kernel_once():
    assert _run(RACE, "6").split() == ["ok", "6"]


def test_threads_compiling_different_programs_at_once():
    assert _run(MANY_PROGRAMS).strip() == "ok"


def test_threads_compiling_at_once_each_have_their_own_target_machine():
    assert _run(MACHINES).strip() == "ok"
