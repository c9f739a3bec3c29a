"""How long a script that launches one suite kernel once (tiny size) takes to exit.

Each measurement is a fresh process (SPIRVJIT_CACHE=0) that launches the kernel once and
ends; an ``atexit`` handler, which runs after the interpreter has joined its threads,
reports the milliseconds from the launch's return until then and whether the kernel's
optimized tier came in (tier 1) or its pending compile was given up (``Abandoned``).
Checkouts are given as arguments (``--roots A,B``) and alternate, so that A/B runs on a
loaded machine see the same load. Tiering must be on in the checkouts' terms: the
environment gets SPIRVJIT_TIERED=1.

    python3 benchmarks/tiered_exit.py --roots /path/to/main,$PWD --kernels nbody,sgemm --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import atexit, json, sys, time
root, name = sys.argv[1], sys.argv[2]
sys.path.insert(0, root + "/benchmarks")
import spirvjit
from cases import CASES, Local
case = CASES[name]
p = case.sizes["first"]
d = case.make_data(p)
global_size, local_size = case.ndrange(p)
kernel = spirvjit.compile_opencl(case.source, options=list(case.options)).kernel(case.name)
args = [spirvjit.LocalMemory(a.nbytes) if isinstance(a, Local) else a for a in case.ocl_args(d, p)]
kernel(*args, global_size=global_size, local_size=local_size)
returned = time.perf_counter()
loaded = kernel._default

@atexit.register
def report():
    print(json.dumps({
        "exit_ms": (time.perf_counter() - returned) * 1e3,
        "tier": getattr(loaded, "tier", None),
        "error": type(getattr(loaded, "error", None)).__name__,
    }))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--roots", required=True, help="comma-separated checkouts")
    parser.add_argument("--kernels", default="nbody,sgemm")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    roots = args.roots.split(",")
    print("| kernel | checkout | launch return to exit, ms (median) | runs: tier / why not |")
    print("|---|---|---|---|")
    for name in args.kernels.split(","):
        rows: dict[str, list[dict]] = {root: [] for root in roots}
        for _ in range(args.runs):
            for root in roots:
                env = {**os.environ, "PYTHONPATH": root, "SPIRVJIT_CACHE": "0"}
                env["SPIRVJIT_TIERED"] = "1"
                out = subprocess.run(
                    [sys.executable, "-c", CHILD, root, name],
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=600,
                    cwd=root,  # (``-c`` puts the working directory first on sys.path)
                )
                if out.returncode:
                    raise RuntimeError(f"{name} {root}:\n{out.stderr[-3000:]}")
                rows[root].append(json.loads(out.stdout.strip().splitlines()[-1]))
        for root, runs in rows.items():
            ms = statistics.median(r["exit_ms"] for r in runs)
            tiers = ", ".join(f"{r['tier']} / {r['error']}" for r in runs)
            print(f"| {name} | {root} | {ms:.0f} | {tiers} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
