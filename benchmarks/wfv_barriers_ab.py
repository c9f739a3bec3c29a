"""Barrier kernels with whole-function vectorization off and on, in CPU time.

For each of the suite's barrier kernels (sgemm, reduction, histogram, nbody from
benchmarks/kernels), a fresh process per setting (SPIRVJIT_WFV=0, then the default) runs
the kernel ``--repeats`` times after a warm-up and reports the median CPU time of a launch
(``time.process_time``: every thread of the process, so neighbours on a loaded machine
disturb it far less than wall time), interleaving the settings ``--rounds`` times.

    python3 benchmarks/wfv_barriers_ab.py [--rounds 2] [--repeats 5] [--only sgemm,reduction]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
KERNELS = ("sgemm", "reduction", "histogram", "nbody")


def _one(name: str, repeats: int) -> float:
    """Median CPU ms of one launch of ``name`` (in this process, as configured)."""
    import numpy as np

    import spirvjit
    from spirvjit.arguments import LocalMemory

    program = spirvjit.compile_opencl((HERE / "kernels" / f"{name}.cl").read_text())
    kernel = program.kernel(name)
    kernel.compile()  # the optimized code, now (no quick tier, no background compile)
    rng = np.random.default_rng(0)
    if name == "sgemm":
        n = 1024
        a, b = (rng.random((n, n), dtype=np.float32) for _ in range(2))
        c = np.zeros((n, n), np.float32)

        def run():
            kernel(a, b, c, np.int32(n), global_size=(n, n), local_size=(16, 16))
    elif name == "reduction":
        n = 1 << 24
        x = rng.random(n, dtype=np.float32)
        part = np.zeros(n // (256 * 16), np.float32)

        def run():
            kernel(x, part, LocalMemory(1024), np.uint32(n), global_size=n // 16, local_size=256)
    elif name == "histogram":
        n = 1 << 24
        data = np.minimum(rng.exponential(48.0, n), 255).astype(np.uint8)
        hist = np.zeros(256, np.uint32)

        def run():
            hist[:] = 0
            words = data.view(np.uint32)
            kernel(words, hist, np.uint32(n // 4), global_size=n // 64, local_size=256)
    else:
        n = 4096
        pos, vel = (rng.random((n, 4), dtype=np.float32) for _ in range(2))
        new_pos, new_vel = np.zeros_like(pos), np.zeros_like(vel)
        scalars = (np.int32(n), np.float32(0.01), np.float32(0.01))

        def run():
            args = (pos, vel, new_pos, new_vel, LocalMemory(256 * 16), *scalars)
            kernel(*args, global_size=n, local_size=256)

    run()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        run()
        times.append(time.process_time() - start)
    return sorted(times)[len(times) // 2] * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", default=",".join(KERNELS))
    parser.add_argument("--one", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.one:
        print(f"{_one(opts.one, opts.repeats):.2f}")
        return
    names = [k for k in opts.only.split(",") if k]
    print("| kernel | round | WFV=0 CPU ms | default CPU ms | speed-up |")
    print("|---|---|---|---|---|")
    for name in names:
        for round_ in range(1, opts.rounds + 1):
            ms = []
            for setting in ("0", ""):
                env = dict(os.environ, SPIRVJIT_WFV=setting, SPIRVJIT_CACHE="0")
                command = [sys.executable, __file__, "--one", name]
                command += ["--repeats", str(opts.repeats)]
                out = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
                ms.append(float(out.stdout.split()[-1]))
            print(f"| {name} | {round_} | {ms[0]:.1f} | {ms[1]:.1f} | {ms[0] / ms[1]:.2f}x |")


if __name__ == "__main__":
    main()
