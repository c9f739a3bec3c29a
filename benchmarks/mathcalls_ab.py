"""What one libmvec variant for every libm call (backends/cpu/mathcalls.py) costs where a
call stays scalar, A/B in one process.

"libm": the scalar calls call the C library's function (as before mathcalls.py; the
translation made with ``mathcalls.one_variant`` replaced by a no-op); "one variant": the
scalar wrapper (the argument in every lane of the widest variant, lane 0 of the result).
Each kernel runs ``--items`` work-items on one thread (SPIRVJIT_NUM_THREADS=1), in
groups of 1 (every work-item on the scalar path) and of 64 (the vectorized loop); the two
builds alternate, process CPU time (getrusage) per launch, median of ``--repeats``.

    PYTHONPATH=$PWD python3 benchmarks/mathcalls_ab.py [--repeats 15] [--items 262144]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics

os.environ["SPIRVJIT_NUM_THREADS"] = "1"
os.environ["SPIRVJIT_CACHE"] = "0"
os.environ.pop("SPIRVJIT_TIERED", None)

import numpy as np  # noqa: E402

import spirvjit  # noqa: E402
from spirvjit.backends.cpu import mathcalls  # noqa: E402

KERNELS = {
    # (float log is inline code now, vecmath.py: log2 stands for a libmvec float function)
    "log2f": ("float", "y[i] = log2(x[i]);"),
    "sinf": ("float", "y[i] = sin(x[i]);"),
    "powf": ("float", "y[i] = pow(x[i], 1.7f);"),
    "log (double)": ("double", "y[i] = log(x[i]);"),
    "sin (double)": ("double", "y[i] = sin(x[i]);"),
    "log2f of float4": ("float4", "y[i] = log2(x[i]);"),
}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _build(ty: str, body: str, tag: str, one_variant: bool):
    source = (
        f"kernel void k_{tag}(global const {ty} *x, global {ty} *y)"
        f"{{ size_t i = get_global_id(0); {body} }}"
    )
    original = mathcalls.one_variant
    if not one_variant:
        mathcalls.one_variant = lambda module, features: 0
    try:
        kernel = spirvjit.compile_opencl(source).kernel(f"k_{tag}")
        kernel.compile()
    finally:
        mathcalls.one_variant = original
    return kernel


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--items", type=int, default=1 << 18)
    args = parser.parse_args()
    n = args.items
    print("| kernel | group size | libm CPU ms | one variant CPU ms | ratio |")
    print("|---|---|---|---|---|")
    for index, (name, (ty, body)) in enumerate(KERNELS.items()):
        lanes = 4 if ty == "float4" else 1
        dtype = np.float64 if ty == "double" else np.float32
        x = np.random.default_rng(index).uniform(0.1, 100.0, n * lanes).astype(dtype)
        y = np.empty_like(x)
        builds = {flag: _build(ty, body, f"{index}_{int(flag)}", flag) for flag in (False, True)}
        for group in (1, 64):
            times: dict[bool, list[float]] = {False: [], True: []}
            for _ in range(args.repeats):
                for flag, kernel in builds.items():
                    c0 = _cpu()
                    kernel(x, y, global_size=n, local_size=group)
                    times[flag].append((_cpu() - c0) * 1e3)
            before, after = (statistics.median(times[flag]) for flag in (False, True))
            print(f"| {name} | {group} | {before:.1f} | {after:.1f} | {after / before:.2f} |")


if __name__ == "__main__":
    main()
