"""CPU time of suite kernels under spirvjit, for A/B comparisons on a busy machine.

    SPIRVJIT_NUM_THREADS=1 PYTHONPATH=$PWD python3 benchmarks/cpu_time.py mandelbrot,sgemm

Wall-clock times on a shared machine move with everyone else's load; the CPU time this
process spends in a launch (all its threads: resource.getrusage) moves much less. With
one thread it is the work the kernel's code does. Prints the least CPU time of
``--repeats`` launches per kernel (after one untimed launch), in milliseconds. The cases,
sizes and data are the suite's (benchmarks/cases.py); run it from the root of the tree
whose spirvjit is measured, with that tree first on PYTHONPATH, to compare two trees.
"""

from __future__ import annotations

import argparse
import resource
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cases  # noqa: E402
import contenders  # noqa: E402


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kernels", help="comma-separated suite kernels")
    parser.add_argument("--size", default="full", choices=("full", "quick", "first"))
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    runner = contenders.Spirvjit()
    for name in args.kernels.split(","):
        case = cases.CASES[name]
        params = case.sizes[args.size]
        data = case.make_data(params)
        prepared = runner.prepare(case, data, params)
        prepared.run()
        best = float("inf")
        for _ in range(args.repeats):
            start = cpu_seconds()
            prepared.run()
            best = min(best, cpu_seconds() - start)
        print(f"{name}: {best * 1e3:.1f} ms CPU")


if __name__ == "__main__":
    main()
