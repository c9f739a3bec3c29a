"""Checked mode's cost: each benchmark kernel unchecked and with ``check=True``.

    PYTHONPATH=$PWD python3 benchmarks/checked_overhead.py [--size quick|full] [--repeat N]

Prints a Markdown table: the best launch time of each variant (after a warm-up launch;
the minimum, which a loaded machine disturbs least; the two variants' launches
alternate, so that load disturbs both alike) and their ratio; the checked results are
compared with the case's reference, so a false report or a wrong result fails the run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cases import CASES, Local  # noqa: E402

import spirvjit  # noqa: E402


def _args(case, d, p) -> list:
    return [
        spirvjit.LocalMemory(a.nbytes) if isinstance(a, Local) else a for a in case.ocl_args(d, p)
    ]


class _Variant:
    """One kernel launched unchecked or checked, on its own data."""

    def __init__(self, case, p, check: bool):
        self.case, self.p, self.check = case, p, check
        prog = spirvjit.compile_opencl(case.source, options=list(case.options))
        self.kernel = prog.kernel(case.name)
        if not check:  # the optimized code (no quick tier); checked mode is never tiered
            self.kernel.compile()
        self.global_size, self.local_size = case.ndrange(p)
        self.fresh()
        self.times: list[float] = []

    def fresh(self) -> None:
        self.d = self.case.make_data(self.p)
        self.args = _args(self.case, self.d, self.p)

    def run(self):
        for key in self.case.zeroed:
            self.d[key].fill(0)
        self.kernel(
            *self.args,
            global_size=self.global_size,
            local_size=self.local_size,
            check=self.check,
        )
        return self.case.host_finish(self.d, self.p)

    def timed(self) -> None:
        start = time.perf_counter()
        self.run()
        self.times.append(time.perf_counter() - start)

    def problem(self) -> str | None:
        """What is wrong with the result of one launch on fresh data (some kernels
        update in place), or None."""
        self.fresh()
        want = self.case.reference(self.d, self.p)
        return self.case.compare(self.case.result(self.d, self.run()), want)


def measure(case, p, repeat: int) -> tuple[float, float, list[str]]:
    """(best unchecked ms, best checked ms, problems found in the results). The two
    variants' launches alternate, so that a loaded machine disturbs both alike."""
    variants = [_Variant(case, p, check) for check in (False, True)]
    for variant in variants:
        variant.run()  # warm-up: compiles and loads the variant
    for _ in range(repeat):
        for variant in variants:
            variant.timed()
    problems = []
    for variant in variants:
        problem = variant.problem()
        if problem:
            problems.append(f"{case.name} (check={variant.check}): {problem}")
    plain, checked = (min(v.times) * 1e3 for v in variants)
    return plain, checked, problems


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
        plain, checked, problems = measure(case, p, args.repeat)
        for problem in problems:
            print(problem, file=sys.stderr)
            failed = True
        ratio = checked / plain
        print(f"| {name} | {case.describe(p)} | {plain:.2f} | {checked:.2f} | {ratio:.2f}x |")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
