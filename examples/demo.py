"""Compile the example OpenCL C kernels to SPIR-V, JIT them for this CPU, check and time them.

Each kernel in examples/kernels/ is compiled with ``spirvjit.compile_opencl``, run on
NumPy data, compared with a NumPy reference and timed. The first launch includes
clang (OpenCL C to SPIR-V), the JIT (SPIR-V to native code) and one run; the steady
state is the median of further runs. Exits 1 when any result is wrong or any kernel
fails to build or launch.

    python3 examples/demo.py [--repeats N] [--producer clang|translator]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import spirvjit
from spirvjit.errors import SpirvJitError

KERNELS = Path(__file__).resolve().parent / "kernels"


@dataclass(frozen=True)
class Case:
    """One example kernel: its inputs, launch shape, reference and work per launch.

    ``make_args`` builds the kernel's arguments from a random generator;
    ``reference`` computes the expected value of argument ``output`` from a copy of
    those arguments taken before the launch (kernels update arrays in place);
    ``work`` per launch in ``unit`` gives the throughput.
    """

    name: str
    global_size: tuple[int, ...]
    make_args: Callable[[np.random.Generator], tuple]
    output: int
    reference: Callable[[tuple], np.ndarray]
    rtol: float
    atol: float
    work: float
    unit: str
    size: str


def saxpy_case(n: int = 1 << 22) -> Case:
    def make(rng: np.random.Generator) -> tuple:
        x = rng.standard_normal(n, dtype=np.float32)
        y = rng.standard_normal(n, dtype=np.float32)
        return (2.5, x, y, n)

    def reference(args: tuple) -> np.ndarray:
        a, x, y, _ = args
        return np.float32(a) * x + y

    # Reads x and y, writes y: 3 floats per element.
    return Case(
        name="saxpy",
        size=f"{n}",
        global_size=(n,),
        make_args=make,
        output=2,
        reference=reference,
        rtol=1e-6,
        atol=1e-5,
        work=3 * 4 * n / 1e9,
        unit="GB/s",
    )


def stencil_case(nx: int = 1024, ny: int = 1024) -> Case:
    def make(rng: np.random.Generator) -> tuple:
        grid = rng.random((ny, nx), dtype=np.float32)
        return (grid, np.zeros_like(grid), nx, ny)

    def reference(args: tuple) -> np.ndarray:
        grid = args[0]
        out = grid.copy()
        horizontal = grid[1:-1, :-2] + grid[1:-1, 2:]
        vertical = grid[:-2, 1:-1] + grid[2:, 1:-1]
        out[1:-1, 1:-1] = np.float32(0.25) * (horizontal + vertical)
        return out

    # Each point is read once from memory (neighbours come from cache) and written once.
    return Case(
        name="stencil",
        size=f"{nx}x{ny}",
        global_size=(nx, ny),
        make_args=make,
        output=1,
        reference=reference,
        rtol=1e-6,
        atol=1e-6,
        work=2 * 4 * nx * ny / 1e9,
        unit="GB/s",
    )


def mandelbrot_case(width: int = 512, height: int = 512, max_iter: int = 256) -> Case:
    x0, y0, x1, y1 = -2.0, -1.25, 0.5, 1.25
    dx, dy = (x1 - x0) / width, (y1 - y0) / height

    def make(rng: np.random.Generator) -> tuple:
        return (np.zeros((height, width), np.int32), x0, y0, dx, dy, max_iter)

    def reference(args: tuple) -> np.ndarray:
        f32 = np.float32
        cr = f32(x0) + np.arange(width, dtype=f32) * f32(dx)
        ci = f32(y0) + np.arange(height, dtype=f32) * f32(dy)
        cr, ci = np.broadcast_to(cr, (height, width)), np.broadcast_to(ci[:, None], (height, width))
        zr, zi = np.zeros((height, width), f32), np.zeros((height, width), f32)
        n = np.zeros((height, width), np.int32)
        for _ in range(max_iter):
            # Same operation order as the kernel, so float32 rounding matches exactly.
            active = zr * zr + zi * zi <= f32(4)
            if not active.any():
                break
            t = zr * zr - zi * zi + cr
            zi = np.where(active, f32(2) * zr * zi + ci, zi)
            zr = np.where(active, t, zr)
            n += active
        return n

    # Exact: with contraction off both sides round every operation the same way.
    return Case(
        name="mandelbrot",
        size=f"{width}x{height}",
        global_size=(width, height),
        make_args=make,
        output=0,
        reference=reference,
        rtol=0.0,
        atol=0.0,
        work=width * height / 1e6,
        unit="Mpixel/s",
    )


def vec4_math_case(n: int = 1 << 20) -> Case:
    def make(rng: np.random.Generator) -> tuple:
        v = rng.uniform(-3, 3, (n, 4)).astype(np.float32)
        return (v, np.zeros_like(v))

    def reference(args: tuple) -> np.ndarray:
        v = args[0].astype(np.float64)
        r = np.sqrt(v * v + 1) * np.exp(-0.5 * v * v)
        return (r / (1 + np.sum(v * v, axis=1, keepdims=True))).astype(np.float32)

    # OpenCL allows sqrt and exp 3 ulp each; the float64 reference is exact by comparison.
    return Case(
        name="vec4_math",
        size=f"{n}xfloat4",
        global_size=(n,),
        make_args=make,
        output=1,
        reference=reference,
        rtol=1e-5,
        atol=1e-7,
        work=2 * 16 * n / 1e9,
        unit="GB/s",
    )


CASES: tuple[Callable[[], Case], ...] = (saxpy_case, stencil_case, mandelbrot_case, vec4_math_case)


@dataclass
class Result:
    name: str
    size: str
    first_s: float
    steady_s: float
    throughput: str
    ok: bool
    origin: str  # where the native code came from: "compile", "disk" or "memory" (cache)
    note: str = ""


def run_case(case: Case, producer: str, repeats: int, rng: np.random.Generator) -> Result:
    """Build, launch, check and time one case."""
    source = (KERNELS / f"{case.name}.cl").read_text()
    args = case.make_args(rng)
    expected = case.reference(tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args))

    start = time.perf_counter()
    program = spirvjit.compile_opencl(source, producer=producer)
    kernel = program.kernel(case.name)
    kernel(*args, global_size=case.global_size)
    first = time.perf_counter() - start
    origin = program.origins[case.name]

    got = args[case.output]
    ok = np.allclose(got, expected, rtol=case.rtol, atol=case.atol)
    note = "" if ok else _mismatch(got, expected, case)

    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        kernel(*args, global_size=case.global_size)
        times.append(time.perf_counter() - start)
    steady = statistics.median(times)
    throughput = f"{case.work / steady:.2f} {case.unit}"
    return Result(case.name, case.size, first, steady, throughput, ok, origin, note)


def _mismatch(got: np.ndarray, expected: np.ndarray, case: Case) -> str:
    bad = ~np.isclose(got, expected, rtol=case.rtol, atol=case.atol)
    index = np.unravel_index(np.argmax(bad), got.shape)
    return (
        f"{bad.sum()} of {bad.size} elements differ; "
        f"first at {tuple(int(i) for i in index)}: got {got[index]}, expected {expected[index]}"
    )


def print_table(results: list[Result]) -> None:
    header = (
        f"{'kernel':<11} {'size':<14} {'first launch':>13} {'code from':>10} {'steady':>10} "
        f"{'throughput':>18}  check"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r.name:<11} {r.size:<14} {r.first_s * 1e3:10.1f} ms {r.origin:>10} "
            f"{r.steady_s * 1e3:7.2f} ms "
            f"{r.throughput:>18}  {'ok' if r.ok else 'MISMATCH'}"
        )
    print(
        "first launch = OpenCL C -> SPIR-V + native code (JIT 'compile', or the kernel cache: "
        "'disk') + one run;\nsteady = median of later runs. SPIRVJIT_CACHE=0 always JITs."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10, help="timed runs per kernel")
    parser.add_argument("--producer", choices=("clang", "translator"), default="clang")
    opts = parser.parse_args(argv)
    if opts.repeats < 1:
        parser.error("--repeats must be at least 1")

    rng = np.random.default_rng(2024)
    results, failed = [], False
    for make_case in CASES:
        case = make_case()
        try:
            results.append(run_case(case, opts.producer, opts.repeats, rng))
        except SpirvJitError as e:
            print(f"{case.name}: {e}", file=sys.stderr)
            failed = True
    print_table(results)
    for r in results:
        if not r.ok:
            print(f"{r.name}: MISMATCH: {r.note}", file=sys.stderr)
    return 1 if failed or not all(r.ok for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
