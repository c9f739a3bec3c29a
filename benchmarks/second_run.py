"""A short script run twice: its first launch in the second run, and its exits.

A "short script" launches one suite kernel once (tiny size) and ends. Each checkout
(``--roots A,B``, alternating so that A/B runs on a loaded machine see the same load) runs
it twice in fresh processes with a disk cache of its own, empty before the first run
(``SPIRVJIT_CACHE_DIR`` in a temporary directory; tiering on: SPIRVJIT_TIERED=1). For each
run it reports the first launch's wall time and the launching thread's CPU time (the
launch includes the JIT, or the cache lookup and load), where the code came from
(``Program.origins``: compile or disk), and the time from the launch's return to the end
of the interpreter's thread joins (an ``atexit`` handler: what the exit waited for).
Other settings (SPIRVJIT_EXIT_WAIT, ...) pass through from the environment.

``--cache-off`` runs the script once with SPIRVJIT_CACHE=0 instead: the exit then waits for
no compile, and the table says whether the optimized tier came in before it or its compile
was given up (``Abandoned``).

    python3 benchmarks/second_run.py --roots /path/to/main,$PWD --kernels saxpy,nbody --runs 3
    python3 benchmarks/second_run.py --roots /path/to/main,$PWD --kernels nbody,sgemm --cache-off
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

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
program = spirvjit.compile_opencl(case.source, options=list(case.options))
kernel = program.kernel(case.name)
args = [spirvjit.LocalMemory(a.nbytes) if isinstance(a, Local) else a for a in case.ocl_args(d, p)]
wall, cpu = time.perf_counter(), time.thread_time()
kernel(*args, global_size=global_size, local_size=local_size)
returned, cpu_end = time.perf_counter(), time.thread_time()
loaded = kernel._default
origin = program.origins[case.name]

@atexit.register
def report():
    print(json.dumps({
        "first_ms": (returned - wall) * 1e3,
        "first_cpu_ms": (cpu_end - cpu) * 1e3,
        "origin": origin,
        "exit_ms": (time.perf_counter() - returned) * 1e3,
        "tier": getattr(loaded, "tier", None),
        "error": type(getattr(loaded, "error", None)).__name__,
    }))
"""


def _run(root: str, name: str, cache_dir: str | None) -> dict:
    """One fresh process; ``cache_dir`` None runs it with the disk cache off."""
    env = {**os.environ, "PYTHONPATH": root, "SPIRVJIT_TIERED": "1"}
    if cache_dir is None:
        env["SPIRVJIT_CACHE"] = "0"
    else:
        env["SPIRVJIT_CACHE_DIR"] = cache_dir
        env.pop("SPIRVJIT_CACHE", None)
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
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--roots", required=True, help="comma-separated checkouts")
    parser.add_argument("--kernels", default="saxpy,nbody")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cache-off", action="store_true", help="one run, SPIRVJIT_CACHE=0")
    args = parser.parse_args()
    roots = args.roots.split(",")
    if args.cache_off:
        return _exit_without_cache(roots, args.kernels.split(","), args.runs)
    print(
        "| kernel | checkout | run 1: first launch ms (CPU ms), origin, exit ms "
        "| run 2: first launch ms (CPU ms), origin, exit ms | origins run 1 / run 2 |"
    )
    print("|---|---|---|---|---|")
    for name in args.kernels.split(","):
        rows: dict[str, list[tuple[dict, dict]]] = {root: [] for root in roots}
        for _ in range(args.runs):
            for root in roots:
                with tempfile.TemporaryDirectory(prefix="spirvjit-second-run-") as cache_dir:
                    first = _run(root, name, cache_dir)
                    second = _run(root, name, cache_dir)
                rows[root].append((first, second))
        for root, runs in rows.items():
            cells = []
            for which in (0, 1):
                picked = [r[which] for r in runs]
                wall = statistics.median(r["first_ms"] for r in picked)
                cpu = statistics.median(r["first_cpu_ms"] for r in picked)
                exit_ms = statistics.median(r["exit_ms"] for r in picked)
                cells.append(f"{wall:.0f} ({cpu:.0f}), {exit_ms:.0f}")
            origins = ", ".join(f"{a['origin']}/{b['origin']}" for a, b in runs)
            print(f"| {name} | {root} | {cells[0]} | {cells[1]} | {origins} |", flush=True)
    return 0


def _exit_without_cache(roots: list[str], kernels: list[str], runs: int) -> int:
    print("| kernel | checkout | launch return to exit, ms (median) | runs: tier / why not |")
    print("|---|---|---|---|")
    for name in kernels:
        rows: dict[str, list[dict]] = {root: [] for root in roots}
        for _ in range(runs):
            for root in roots:
                rows[root].append(_run(root, name, None))
        for root, results in rows.items():
            ms = statistics.median(r["exit_ms"] for r in results)
            tiers = ", ".join(f"{r['tier']} / {r['error']}" for r in results)
            print(f"| {name} | {root} | {ms:.0f} | {tiers} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
