"""OpenCL C -> SPIR-V time of the front end alone (no source cache, no JIT), clang producer.

    PYTHONPATH=$PWD python3 benchmarks/frontend_compile.py [--producer translator]

Prints the median and minimum of 5 compiles of three sources: a one-line saxpy and two
of the kernel tests' programs (conv_int: 131 kernels of int conversions; arith_int).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "kernels"))

from sources import CASES  # noqa: E402

from spirvjit.frontend.opencl import opencl_to_spirv  # noqa: E402

SAXPY = (
    "kernel void saxpy(float a, global const float* x, global float* y) "
    "{ size_t i = get_global_id(0); y[i] = a * x[i] + y[i]; }"
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--producer", default="clang", choices=("clang", "translator"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    opencl_to_spirv(SAXPY, producer=args.producer)  # warm: page cache, the clang probe
    programs = [("saxpy", SAXPY, ())]
    programs += [
        (name, CASES[name].source, CASES[name].options) for name in ("conv_int", "arith_int")
    ]
    for name, source, options in programs:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            opencl_to_spirv(source, list(options), producer=args.producer)
            times.append(time.perf_counter() - start)
        print(
            f"{name}: median {statistics.median(times) * 1e3:.0f} ms, min {min(times) * 1e3:.0f} ms"
        )


if __name__ == "__main__":
    main()
