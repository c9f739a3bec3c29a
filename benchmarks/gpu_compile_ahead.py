"""What ``Kernel.compile(device)`` costs on a GPU without a GPU: seconds and code objects.

A fake sm_90 driver (tests/kernels/fake_gpu.py) takes the code objects; the JIT and ptxas
are real. Each run compiles the first kernel of a benchmark kernel file from a fresh
program (a dummy kernel makes each SPIR-V module, so each cache key, new); run it with
the disk cache off. Median of --runs.

    SPIRVJIT_CACHE=0 python3 benchmarks/gpu_compile_ahead.py nbody sgemm [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "kernels"))

from fake_gpu import FakeContext  # noqa: E402

import spirvjit  # noqa: E402
from spirvjit.backends import backend  # noqa: E402
from spirvjit.device import Device  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", nargs="+", help="benchmarks/kernels/NAME.cl")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    context = FakeContext()
    backend("nvptx").context = lambda device: context
    for stem in args.kernels:
        source = (ROOT / "benchmarks" / "kernels" / f"{stem}.cl").read_text()
        seconds, loaded = [], len(context.modules)
        for i in range(args.runs):
            dummy = f"\nkernel void zz_fresh_{i}(global int* p) {{ p[0] = {i}; }}\n"
            program = spirvjit.compile_opencl(source + dummy)
            device = Device(f"fake H200 {stem} {i}", "nvidia", spirvjit.parse_target("sm_90"),
                            132, 1024, 232448)  # fmt: skip
            kernel = program.kernel(program.kernel_names[0])
            started = time.perf_counter()
            kernel.compile(device)
            seconds.append(time.perf_counter() - started)
        per_compile = (len(context.modules) - loaded) // args.runs
        print(
            f"{stem} ({kernel.name}): compile() median {statistics.median(seconds):.3f} s, "
            f"{per_compile} code objects loaded"
        )


if __name__ == "__main__":
    main()
