"""The clang producer (clang-22) and the translator producer (clang-15 + llvm-spirv-15) on
the kernels of the benchmark suite and the examples (benchmarks/cases.py, at their small
"first" sizes): outputs must be identical bit for bit.

test_differential.py does the same for every kernel registered in sources.py; these are
the project's larger, public-sample style kernels (local memory, barriers, atomics, float
reductions, transcendental math), compiled with the options the benchmarks use.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from harness import build

import spirvjit

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
NAMES = (
    "saxpy",
    "saxpy_guarded",
    "stencil",
    "stencil3d",
    "sgemm",
    "gemm_naive",
    "matvec",
    "colmean",
    "mandelbrot",
    "nbody",
    "blackscholes",
    "reduction",
    "histogram",
)


@pytest.fixture(scope="module")
def cases():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        from cases import CASES, Local
    finally:
        sys.path.remove(str(BENCHMARKS))
    return CASES, Local


def _run(case, local_type, producer: str):
    p = case.sizes["first"]
    d = case.make_data(p)
    for key in case.zeroed:
        d[key].fill(0)
    args = [
        spirvjit.LocalMemory(a.nbytes) if isinstance(a, local_type) else a
        for a in case.ocl_args(d, p)
    ]
    prog = build(case.source, tuple(case.options) or ("-cl-std=CL3.0",), producer)
    global_size, local_size = case.ndrange(p)
    prog.kernel(case.name)(*args, global_size=global_size, local_size=local_size)
    return {key: d[key].copy() for key in case.outputs}


def test_every_benchmark_case_is_covered(cases):
    assert set(NAMES) == set(cases[0])


@pytest.mark.parametrize("name", NAMES)
def test_producers_agree_on_benchmark_kernel(cases, name):
    registry, local_type = cases
    case = registry[name]
    clang = _run(case, local_type, "clang")
    translator = _run(case, local_type, "translator")  # skips if clang-15/llvm-spirv-15 absent
    assert clang.keys() == translator.keys()
    for key in clang:
        a, b = clang[key], translator[key]
        assert a.dtype == b.dtype and a.shape == b.shape
        same = a.view(np.uint8) == b.view(np.uint8)
        if not same.all():
            bits = a.view(f"u{a.itemsize}").ravel() != b.view(f"u{b.itemsize}").ravel()
            i = int(np.flatnonzero(bits)[0])
            pytest.fail(
                f"{name}:{key}: {int(bits.sum())} of {bits.size} values differ; first at {i}: "
                f"clang {a.ravel()[i]!r}, translator {b.ravel()[i]!r}"
            )
