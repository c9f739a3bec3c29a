"""Python kernels against their OpenCL C twins: cold compile time and run time.

    PYTHONPATH=. python3 benchmarks/python_kernels.py compile   # one fresh process per kernel
    PYTHONPATH=. python3 benchmarks/python_kernels.py speed     # Mandelbrot and sgemm

``compile`` reports, for each Python twin in tests/kernels/py_kernels.py, the time from
the decorated function to SPIR-V (parse + lowering + LLVM's SPIR-V back end) and on to
native code (spirvjit's JIT), in a fresh process with the kernel cache off. ``speed``
runs the Python twins and the OpenCL C originals (built by clang-22) on the same inputs
and reports the best of several launches (contraction off in both, so the work is the
same).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "kernels"))

COLD = """
import resource, sys, time
def cpu():
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
t0 = time.perf_counter()
sys.path.insert(0, {kernels!r})
import py_kernels
kern = getattr(py_kernels, {name!r})
t1, c1 = time.perf_counter(), cpu()
spirv = kern.spirv()
t2, c2 = time.perf_counter(), cpu()
kern.program().kernel({name!r}).compile()
t3 = time.perf_counter()
times = (t2 - t1, c2 - c1, t3 - t2, t1 - t0)
print(" ".join(f"{{t * 1e3:.1f}}" for t in times))
"""
CLANG = """
import sys, time
import spirvjit
from spirvjit.frontend.opencl import opencl_to_spirv
source = open({path!r}).read()
t0 = time.perf_counter()
opencl_to_spirv(source)
print(f"{{(time.perf_counter() - t0) * 1e3:.1f}}")
"""
TWINS = {
    "saxpy": "examples/kernels/saxpy.cl",
    "reduction": "benchmarks/kernels/reduction.cl",
    "histogram": "benchmarks/kernels/histogram.cl",
    "sgemm": "benchmarks/kernels/sgemm.cl",
    "mandelbrot": "examples/kernels/mandelbrot.cl",
}


def cold_compile(names: list[str]) -> None:
    env = dict(os.environ, SPIRVJIT_CACHE="0", PYTHONPATH=str(ROOT))
    print(
        "kernel       Python->SPIR-V ms (CPU ms)   clang-22 OpenCL C->SPIR-V ms"
        "   spirvjit JIT to native ms"
    )
    for name in names:
        code = COLD.format(kernels=str(ROOT / "tests" / "kernels"), name=name)
        runs, clang = [], []
        for _ in range(3):
            out = subprocess.run(
                [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
            ).stdout.split()
            runs.append(tuple(map(float, out)))
            if name in TWINS:
                src = CLANG.format(path=str(ROOT / TWINS[name]))
                proc = subprocess.run(
                    [sys.executable, "-c", src], env=env, capture_output=True, text=True, check=True
                )
                clang.append(float(proc.stdout))
        best = min(runs)
        cl = f"{min(clang):10.1f}" if clang else "         -"
        print(f"{name:12s} {best[0]:10.1f} ({best[1]:5.1f})        {cl}{best[2]:28.1f}")


def best_of_pair(fa, fb, repeat: int = 9) -> tuple[float, float]:
    """Best times of two launches, run alternately so that a busy machine's load
    drifts over both alike."""
    fa(), fb()  # compile and warm up
    ta, tb = [], []
    for _ in range(repeat):
        for fn, times in ((fa, ta), (fb, tb)):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
    return min(ta), min(tb)


def speed() -> None:
    import py_kernels as P
    from harness import build

    contract_off = "#pragma OPENCL FP_CONTRACT OFF\n"
    w, h, iters = 1024, 768, 256
    args = (np.float32(-2.0), np.float32(-1.0), np.float32(3.0 / w), np.float32(2.0 / h))
    out_py, out_cl = np.zeros((h, w), np.int32), np.zeros((h, w), np.int32)
    mandel_cl = build((ROOT / "examples/kernels/mandelbrot.cl").read_text()).mandelbrot
    t_py, t_cl = best_of_pair(
        lambda: P.mandelbrot(out_py, *args, np.int32(iters), global_size=(w, h)),
        lambda: mandel_cl(out_cl, *args, np.int32(iters), global_size=(w, h)),
    )
    assert np.array_equal(out_py, out_cl)
    print(
        f"mandelbrot {w}x{h}, {iters} it: Python {t_py * 1e3:.2f} ms, "
        f"OpenCL C {t_cl * 1e3:.2f} ms, ratio {t_py / t_cl:.3f}"
    )
    n = 512
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    c_py, c_cl = np.zeros((n, n), np.float32), np.zeros((n, n), np.float32)
    sgemm_cl = build(contract_off + (ROOT / "benchmarks/kernels/sgemm.cl").read_text()).sgemm
    geo = dict(global_size=(n, n), local_size=(16, 16))
    t_py, t_cl = best_of_pair(
        lambda: P.sgemm(a, b, c_py, np.int32(n), **geo),
        lambda: sgemm_cl(a, b, c_cl, np.int32(n), **geo),
    )
    assert np.array_equal(c_py, c_cl)
    print(
        f"sgemm {n}x{n}: Python {t_py * 1e3:.2f} ms, OpenCL C {t_cl * 1e3:.2f} ms, "
        f"ratio {t_py / t_cl:.3f}"
    )


if __name__ == "__main__":
    what = sys.argv[1] if len(sys.argv) > 1 else "compile"
    if what == "compile":
        cold_compile(sys.argv[2:] or ["saxpy", "reduction", "histogram", "sgemm", "mandelbrot"])
    else:
        speed()
