"""One-thread CPU time of suite kernels, for A/B comparisons on a loaded machine.

Wall time on a shared machine measures the neighbours as much as the code; the CPU time a
launch costs on one thread (getrusage, SPIRVJIT_NUM_THREADS=1 / OMP_NUM_THREADS=1, set
here) is far steadier. Each kernel runs at the suite's full size, is checked against the
reference once, then timed ``--repeats`` times; min and median CPU ms are printed, wall ms
beside them. To compare two builds, run this from each checkout in turn, alternating:

    for r in 1 2 3; do
      (cd /path/to/main && PYTHONPATH=$PWD python3 benchmarks/one_thread_cpu.py --only colmean)
      (cd /path/to/branch && PYTHONPATH=$PWD python3 benchmarks/one_thread_cpu.py --only colmean)
    done
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("SPIRVJIT_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import CASES  # noqa: E402
from contenders import CONTENDERS  # noqa: E402


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", required=True, help="comma-separated kernels of the suite")
    parser.add_argument("--contender", default="spirvjit", choices=sorted(CONTENDERS))
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--size", default="full", choices=("full", "quick", "first"))
    args = parser.parse_args()
    contender = CONTENDERS[args.contender]()
    for name in args.only.split(","):
        case = CASES[name]
        params = case.sizes[args.size]
        # From data of its own: a kernel that updates its input in place (saxpy's y) has
        # changed ``data`` by the time the result is checked.
        want = case.reference(case.make_data(params), params)
        data = case.make_data(params)
        prepared = contender.prepare(case, data, params)
        got = prepared.result(prepared.run())
        if got is None:
            got = tuple(data[k] for k in case.outputs)
        error = case.compare(got, want)
        if error:
            raise SystemExit(f"{name}: wrong result: {error}")
        cpu, wall = [], []
        for _ in range(args.repeats):
            c0, w0 = _cpu_seconds(), time.perf_counter()
            prepared.run()
            wall.append(time.perf_counter() - w0)
            cpu.append(_cpu_seconds() - c0)
        cpu.sort()
        wall.sort()
        print(
            f"{args.contender} {name}: cpu ms min {cpu[0] * 1e3:.1f} med"
            f" {cpu[len(cpu) // 2] * 1e3:.1f}, wall ms min {wall[0] * 1e3:.1f}"
            f" med {wall[len(wall) // 2] * 1e3:.1f}"
        )


if __name__ == "__main__":
    main()
