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
