"""LLJIT generations (backends/cpu/codegen.py): JIT libraries go into one LLJIT until it
holds LIBRARIES_PER_GENERATION, then into a fresh one; a retired LLJIT is destroyed
with the last library loaded into it. These tests shrink the generations to a few
libraries so that programs straddle them: a program's kernels must link against its
data library in the data's generation, and code that is still referenced (a kernel
being launched from another thread, a kernel whose Program is gone) must never be
freed with its generation.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import spirvjit
from spirvjit.backends import backend
from spirvjit.backends.cpu import codegen

COUNTER = """
global int counter = 40;
kernel void bump(int by) { counter += by; }
kernel void read(global int* out) { out[0] = counter + %d; }
"""


def churn(count: int) -> None:
    """Loads and drops ``count`` other programs: each one is a new JIT library."""
    for i in range(count):
        program = spirvjit.compile_opencl(f"kernel void k(global int* a) {{ a[0] = {i}; }}")
        a = np.zeros(1, np.int32)
        program.k(a, global_size=1)
        assert a[0] == i
    gc.collect()


@pytest.fixture
def small_generations(monkeypatch):
    monkeypatch.setattr(codegen, "LIBRARIES_PER_GENERATION", 2)
    monkeypatch.setattr(codegen, "_generations", {})


def test_a_programs_later_kernel_links_into_its_data_generation(small_generations) -> None:
    """``read`` is loaded after the data's generation has retired: it must still find the
    program's data library (linked by name, in that generation) and see ``bump``'s write."""
    program = spirvjit.compile_opencl(COUNTER % 0)
    program.bump(2, global_size=1)  # data library + bump: the generation is full
    generation = codegen._generations[program.target]
    churn(3)
    assert codegen._generations[program.target] is not generation
    out = np.zeros(1, np.int32)
    program.read(out, global_size=1)
    assert out[0] == 42


def test_loaded_code_outlives_its_program_and_generation(small_generations) -> None:
    """A loaded kernel keeps its JIT library and the program's data library, whatever is
    dropped around it and however many generations retire meanwhile."""
    cpu = backend("cpu")
    device = cpu.default_device(spirvjit.target.host_target())
    program = spirvjit.compile_opencl(COUNTER % 1000)
    bump = cpu.load(program, "bump", device)
    read = cpu.load(program, "read", device)
    del program
    churn(5)
    out = np.zeros(1, np.int32)
    bump.launch((5,), (1,), None, None)
    read.launch((out,), (1,), None, None)
    assert out[0] == 1045


THREADS = textwrap.dedent(
    """
    import gc, threading
    import numpy as np
    import spirvjit
    from spirvjit.backends.cpu import codegen

    codegen.LIBRARIES_PER_GENERATION = 3
    # One long-lived kernel, launched over and over while generations come and go.
    keep = spirvjit.compile_opencl(
        "kernel void twice(global int* a) { a[get_global_id(0)] *= 2; }"
    ).twice
    stop = threading.Event()
    errors = []

    def launcher():
        try:
            while not stop.is_set():
                a = np.arange(4096, dtype=np.int32)
                keep(a, global_size=a.size)
                assert (a == np.arange(4096) * 2).all()
        except BaseException as exc:
            errors.append(repr(exc))

    def compiler(t):
        try:
            for k in range(4):
                value = t * 100 + k
                program = spirvjit.compile_opencl(
                    f"global int g = {value};"
                    "kernel void set(global int* a) { a[get_global_id(0)] = g++; }"
                    f"kernel void get(global int* a) {{ a[0] = g + {t}; }}"
                )
                a = np.zeros(64, np.int32)
                program.set(a, global_size=1)
                out = np.zeros(1, np.int32)
                program.get(out, global_size=1)
                assert a[0] == value and out[0] == value + 1 + t, (a[0], out[0])
                del program
                gc.collect()
        except BaseException as exc:
            errors.append(repr(exc))

    runners = [threading.Thread(target=launcher) for _ in range(2)]
    workers = [threading.Thread(target=compiler, args=(t,)) for t in range(4)]
    for thread in runners + workers:
        thread.start()
    for thread in workers:
        thread.join()
    stop.set()
    for thread in runners:
        thread.join()
    assert not errors, errors
    print("ok")
    """
)


def test_threads_compile_and_drop_programs_across_generations() -> None:
    """Four threads compile, launch and drop programs with data (three libraries per
    generation: every program straddles one) while two launch a kept kernel. In a
    child process: freed code would crash it, and a crash must fail the test."""
    import os

    env = {**os.environ, "SPIRVJIT_CACHE": "0"}
    done = subprocess.run(
        [sys.executable, "-c", THREADS], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, f"exit status {done.returncode}\n{done.stderr[-3000:]}"
    assert done.stdout.strip() == "ok"
