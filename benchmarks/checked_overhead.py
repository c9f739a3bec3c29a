"""Checked mode's cost: each benchmark kernel unchecked and with ``check=True``.

    PYTHONPATH=$PWD python3 benchmarks/checked_overhead.py [--size quick|full] [--repeat N]

Prints a Markdown table: the best launch time of each variant (after a warm-up launch;
the minimum, which a loaded machine disturbs least)
and their ratio; the checked results are compared with the case's reference, so a false
report or a wrong result fails the run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import CASES, Local  # noqa: E402

import spirvjit  # noqa: E402


def _best_seconds(run, repeat: int) -> float:
    run()  # warm-up: compiles and loads the variant
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def _args(case, d, p) -> list:
    return [
        spirvjit.LocalMemory(a.nbytes) if isinstance(a, Local) else a for a in case.ocl_args(d, p)
    ]


def measure(case, p, check: bool, repeat: int) -> tuple[float, str | None]:
    """(best ms of a launch, the problem found in its result or None)."""
    prog = spirvjit.compile_opencl(case.source, options=list(case.options))
    kernel = prog.kernel(case.name)
    global_size, local_size = case.ndrange(p)
    state = {"d": case.make_data(p)}
    state["args"] = _args(case, state["d"], p)

    def run():
        d = state["d"]
        for key in case.zeroed:
            d[key].fill(0)
        kernel(*state["args"], global_size=global_size, local_size=local_size, check=check)
        return case.host_finish(d, p)

    ms = _best_seconds(run, repeat) * 1e3
    # The result of one launch on fresh data (some kernels update in place).
    state["d"] = case.make_data(p)
    state["args"] = _args(case, state["d"], p)
    want = case.reference(state["d"], p)
    return ms, case.compare(case.result(state["d"], run()), want)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="quick", choices=("quick", "full"))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("cases", nargs="*", help="case names (default: all)")
    args = parser.parse_args(argv)
    print("| kernel | size | unchecked ms | checked ms | ratio |")
    print("|---|---|---:|---:|---:|")
    failed = False
    for name, case in CASES.items():
        if args.cases and name not in args.cases:
            continue
        p = case.sizes[args.size]
        ms = {}
        for check in (False, True):
            ms[check], problem = measure(case, p, check, args.repeat)
            if problem:
                print(f"{name} (check={check}): {problem}", file=sys.stderr)
                failed = True
        ratio = ms[True] / ms[False]
        print(f"| {name} | {case.describe(p)} | {ms[False]:.2f} | {ms[True]:.2f} | {ratio:.2f}x |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
