"""Compile time and code size of every kernel of the test suite, per GPU target.

    python3 benchmarks/gpu_targets.py [--targets gfx942,sm_90]

Compiles each kernel from SPIR-V (translation included, clang excluded, no cache) for
each target and reports the median and total time per kernel and the product sizes:
AMD HSA code objects (linked by ld.lld), NVIDIA cubins (ptxas) or PTX without ptxas.
The first kernel of each target also pays for cutting down the device math library.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ["SPIRVJIT_CACHE"] = "0"
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "kernels"))

from sources import CASES  # noqa: E402

from spirvjit.frontend.opencl import opencl_to_spirv  # noqa: E402
from spirvjit.program import Program  # noqa: E402
from spirvjit.target import parse_target  # noqa: E402

TARGETS = "gfx90a,gfx942,gfx950,gfx1100,gfx1201,sm_80,sm_90"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--targets", default=TARGETS)
    args = parser.parse_args()
    modules = [opencl_to_spirv(c.source, list(c.options)) for c in CASES.values()]
    print("| target | kernels | median ms/kernel | total s | median size | total size |")
    print("|---|---|---|---|---|---|")
    for name in args.targets.split(","):
        target = parse_target(name)
        times, sizes = [], []
        for spirv in modules:
            program = Program(spirv, target=target)
            for kernel in program.kernel_names:
                start = time.perf_counter()
                sizes.append(len(program.object_code(kernel)[0]))
                times.append(time.perf_counter() - start)
        print(
            f"| {name} | {len(times)} | {statistics.median(times) * 1e3:.1f} | "
            f"{sum(times):.1f} | {statistics.median(sizes) / 1024:.1f} KiB | "
            f"{sum(sizes) / 2**20:.1f} MiB |"
        )


if __name__ == "__main__":
    main()
