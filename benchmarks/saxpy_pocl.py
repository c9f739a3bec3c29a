"""saxpy on 2**24 floats: spirvjit vs PoCL (through PyOpenCL) vs NumPy, in one run.

Every contender computes ``y = a * x + y`` in place on the same host arrays; each is
warmed up (so compilation is excluded) and then timed ``--repeats`` times; the table
shows the median, the effective bandwidth (3 x 4 bytes per element: read x, read y,
write y) and the ratio to NumPy. A contender that is not available (spirvjit's
runtime or PoCL missing) is reported and skipped, so the others still run.

PoCL is timed kernel-only (buffers created once with USE_HOST_PTR on the same
arrays, like spirvjit's in-place launch); ``queue.finish()`` ends each timed run.

    python3 benchmarks/saxpy_pocl.py [--log2n 24] [--repeats 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

SOURCE = (Path(__file__).resolve().parent.parent / "examples" / "kernels" / "saxpy.cl").read_text()
A = 2.0


def numpy_runner(x: np.ndarray, y: np.ndarray) -> Callable[[], None]:
    a = np.float32(A)
    scratch = np.empty_like(x)

    def run() -> None:
        # Two passes with a scratch array: NumPy's fastest in-place form of a*x+y.
        np.multiply(x, a, out=scratch)
        np.add(scratch, y, out=y)

    return run


def spirvjit_runner(x: np.ndarray, y: np.ndarray) -> Callable[[], None]:
    import spirvjit

    kernel = spirvjit.compile_opencl(SOURCE).kernel("saxpy")
    kernel.compile()  # the optimized code (no quick tier: the launches time steady state)
    n = x.size

    def run() -> None:
        kernel(A, x, y, n, global_size=(n,))

    return run


def pocl_runner(x: np.ndarray, y: np.ndarray) -> Callable[[], None]:
    import pyopencl as cl

    platforms = [p for p in cl.get_platforms() if p.name == "Portable Computing Language"]
    if not platforms:
        raise RuntimeError("PoCL platform not found (apt-get install pocl-opencl-icd)")
    ctx = cl.Context(platforms[0].get_devices())
    queue = cl.CommandQueue(ctx)
    flags = cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR
    x_buf = cl.Buffer(ctx, flags, hostbuf=x)
    y_buf = cl.Buffer(ctx, flags, hostbuf=y)
    kernel = cl.Program(ctx, SOURCE).build().saxpy
    n = x.size

    def run() -> None:
        kernel(queue, (n,), None, np.float32(A), x_buf, y_buf, np.uint32(n))
        queue.finish()

    return run


CONTENDERS: dict[str, Callable[[np.ndarray, np.ndarray], Callable[[], None]]] = {
    "spirvjit": spirvjit_runner,
    "pocl": pocl_runner,
    "numpy": numpy_runner,
}


def time_runs(run: Callable[[], None], warmup: int, repeats: int) -> float:
    """Median seconds of ``repeats`` runs after ``warmup`` untimed ones."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def check(name: str, make: Callable, n: int) -> str | None:
    """Run a contender once on small data; return an error message if it is wrong."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    expected = np.float32(A) * x + y
    make(x, y)()
    if not np.allclose(y, expected, rtol=1e-6, atol=1e-5):
        return f"{name} computed a wrong result"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2n", type=int, default=24, help="problem size is 2**log2n floats")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    opts = parser.parse_args(argv)
    if opts.repeats < 1:
        parser.error("--repeats must be at least 1")

    n = 1 << opts.log2n
    rng = np.random.default_rng(0)
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    nbytes = 3 * 4 * n

    medians: dict[str, float] = {}
    wrong = False
    for name, make in CONTENDERS.items():
        try:
            error = check(name, make, 4099)  # odd size: catches off-by-one guards
            if error:
                print(f"{name}: {error}", file=sys.stderr)
                wrong = True
                continue
            medians[name] = time_runs(make(x, y), opts.warmup, opts.repeats)
        except Exception as e:  # one unavailable contender must not hide the others
            print(f"{name}: skipped ({type(e).__name__}: {e})", file=sys.stderr)

    print(f"saxpy, n = 2**{opts.log2n} floats, median of {opts.repeats} runs")
    print(f"{'':<10} {'median':>10} {'GB/s':>8} {'vs numpy':>9}")
    base = medians.get("numpy")
    for name, seconds in medians.items():
        ratio = f"{base / seconds:8.2f}x" if base else "-"
        print(f"{name:<10} {seconds * 1e3:7.2f} ms {nbytes / seconds / 1e9:8.2f} {ratio:>9}")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
