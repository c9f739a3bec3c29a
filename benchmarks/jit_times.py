"""Cold-JIT time per kernel over the project's kernel suite (tests/kernels) and examples.

For every kernel: SPIR-V → LLVM IR translation share, optimization, code generation and
loading, measured by spirvjit itself (``Kernel.compile_seconds``); clang's OpenCL C →
SPIR-V time is reported separately. Prints the median, quartiles and the slowest kernels.

    python3 benchmarks/jit_times.py

``--suite``: the benchmark suite's kernels (benchmarks/cases.py, the issue's "≤ 50 ms
cold JIT" goal), each compiled ``--runs`` times in a fresh process with the cache off,
after a tiny kernel has paid the process's one-time LLVM set-up,
in CPU time (``time.thread_time`` around ``Kernel.compile()``: the optimizer runs in
the compiling thread for a process's first modules, see codegen.IN_PROCESS_OPTIMIZATIONS),
median per kernel, with the CPU time of each stage. CPU time, not wall time: on a loaded
machine wall time measures the neighbours. The time starts at the SPIR-V: reading it and
making the ``Program`` count (a barrier kernel's program is translated there, since its
signature needs the translation), clang's OpenCL C -> SPIR-V does not.

    python3 benchmarks/jit_times.py --suite [--runs 5] [--kernels sgemm,reduction]

``--passes N``: also the N LLVM passes that took the most CPU time per kernel (LLVM's own
pass timers, from the last run). ``SPIRVJIT_OPT_LEVEL=1|2|3`` in the environment forces
the pipeline level (see spirvjit/config.py). With ``SPIRVJIT_TIERED=1`` the figure is
the quick tier's (what a first launch waits for) and a second row per kernel gives the
optimized tier's background compile (backends/cpu/tiered.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

# Cold JIT means compiling: no kernel comes from the persistent cache.
os.environ["SPIRVJIT_CACHE"] = "0"
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "kernels"))

from sources import CASES  # noqa: E402

import spirvjit  # noqa: E402


def sources() -> list[tuple[str, str, tuple[str, ...]]]:
    found = [(name, case.source, tuple(case.options)) for name, case in sorted(CASES.items())]
    for path in sorted((ROOT / "examples" / "kernels").glob("*.cl")):
        found.append((path.stem, path.read_text(), ()))
    return found


def one_suite_kernel(name: str, passes: int = 0) -> dict:
    """In this (fresh) process: kernel ``name`` of the benchmark suite compiled once;
    CPU milliseconds in all and per stage (and the ``passes`` slowest LLVM passes)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from cases import CASES as SUITE

    from spirvjit import jit
    from spirvjit.program import Program

    timings: list[str] = []
    if passes:
        _time_passes(timings)

    stages: dict[str, float] = {}
    background: dict[str, float] = {}  # SPIRVJIT_TIERED=1: the optimized tier's stages
    run = jit.StageTimes.run
    main = threading.main_thread()

    def timed(self, stage, fn, *args):  # StageTimes.run, timing this thread's CPU too
        start = time.thread_time()
        try:
            return run(self, stage, fn, *args)
        finally:
            into = stages if threading.current_thread() is main else background
            into[stage] = into.get(stage, 0.0) + (time.thread_time() - start) * 1e3

    # The process's one-time costs (LLVM's targets, the first pass pipeline, the JIT)
    # are paid once per process, not per kernel: a tiny kernel pays them first.
    warm = spirvjit.compile_opencl("kernel void warm_up(global int* p) { p[0] = 1; }")
    warm.kernel("warm_up").compile()
    case = SUITE[name]
    source_program = spirvjit.compile_opencl(case.source, case.options)
    jit.StageTimes.run = timed
    start, wall = time.thread_time(), time.perf_counter()
    # From the SPIR-V: the same Program compile_opencl makes, without the source cache.
    program = Program(source_program.spirv, name=name, options=source_program.options)
    # Reading the SPIR-V and the entry points (a translation there is its own stage).
    stages["program"] = (time.thread_time() - start) * 1e3 - stages.get("translate", 0.0)
    kernel = program.kernel(name)
    kernel.compile()
    cpu_ms = (time.thread_time() - start) * 1e3
    wall_ms = (time.perf_counter() - wall) * 1e3
    result = {"cpu_ms": cpu_ms, "wall_ms": wall_ms, "stages": stages}
    wait = getattr(kernel, "wait_optimized", None)  # (spirvjit before tiering: none)
    if wait is not None and wait() and background:  # tiered: the optimized tier came later
        result["optimized_cpu_ms"] = sum(background.values())
        result["optimized_wall_ms"] = (time.perf_counter() - wall) * 1e3
        result["optimized_stages"] = background
    if timings:
        result["passes"] = _slowest_passes(timings[-1], passes)
    return result


def _time_passes(reports: list[str]) -> None:
    """Makes the CPU backend's pipeline runs collect LLVM's pass timers into ``reports``."""
    import llvmlite.binding as llvm

    from spirvjit.backends.cpu import codegen

    def timed(module, target, speed_level, loop_vectorization):
        pto = llvm.create_pipeline_tuning_options(speed_level=speed_level)
        pto.loop_vectorization = loop_vectorization
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(codegen.target_machine(target), pto)
        pb.start_pass_timing()
        pb.getModulePassManager().run(module, pb)
        reports.append(pb.finish_pass_timing())

    codegen._run_pipeline = timed


def _slowest_passes(report: str, count: int) -> list[tuple[str, float]]:
    """The ``count`` passes with the most user time (ms) in LLVM's timing report, which
    lists a pass once per instance in each of its two timer groups: the first is kept."""
    found: dict[str, float] = {}
    for line in report.splitlines():
        fields = line.split()
        if len(fields) >= 9 and fields[-1].endswith("Pass") and fields[0][0].isdigit():
            found.setdefault(fields[-1], float(fields[0]) * 1e3)
    return sorted(found.items(), key=lambda item: -item[1])[:count]


def suite(runs: int, only: list[str], passes: int = 0) -> int:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from cases import CASES as SUITE

    names = [n for n in SUITE if not only or n in only]
    tiered = os.environ.get("SPIRVJIT_TIERED", "") not in ("", "0", "false", "no", "off")
    print(f"cold JIT of the benchmark suite's kernels, CPU ms, median of {runs} fresh processes")
    if tiered:
        print(
            "SPIRVJIT_TIERED=1: CPU ms is the quick tier's (the first launch's wait); the"
            " optimized tier's background compile follows (its thread's CPU; wall: until"
            " it was in)"
        )
    print("| kernel | CPU ms | wall ms | stages (CPU ms) |")
    print("|---|---|---|---|")
    worst = 0.0
    for name in names:
        results = []
        for _ in range(runs):
            out = subprocess.run(
                [sys.executable, __file__, "--one", name, "--passes", str(passes)],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "SPIRVJIT_CACHE": "0"},
            ).stdout
            results.append(json.loads(out.strip().splitlines()[-1]))
        cpu = statistics.median(r["cpu_ms"] for r in results)
        wall = statistics.median(r["wall_ms"] for r in results)
        stages = {
            k: statistics.median(r["stages"].get(k, 0.0) for r in results)
            for k in results[0]["stages"]
        }
        worst = max(worst, cpu)
        parts = ", ".join(f"{k} {v:.1f}" for k, v in stages.items())
        print(f"| {name} | {cpu:.1f} | {wall:.1f} | {parts} |", flush=True)
        tiered = [r for r in results if "optimized_cpu_ms" in r]
        if tiered:  # SPIRVJIT_TIERED=1: the quick tier above, the optimized one here
            cpu = statistics.median(r["optimized_cpu_ms"] for r in tiered)
            wall = statistics.median(r["optimized_wall_ms"] for r in tiered)
            parts = ", ".join(
                f"{k} {statistics.median(r['optimized_stages'].get(k, 0.0) for r in tiered):.1f}"
                for k in tiered[0]["optimized_stages"]
            )
            print(f"|   optimized (background) | {cpu:.1f} | {wall:.1f} | {parts} |", flush=True)
        if passes:
            slowest = ", ".join(f"{p} {ms:.1f}" for p, ms in results[-1]["passes"])
            print(f"|   LLVM passes (ms) | | | {slowest} |", flush=True)
    print(f"slowest: {worst:.1f} ms CPU")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", action="store_true", help="the benchmark suite's kernels")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--kernels", default="", help="with --suite: only these")
    parser.add_argument("--passes", type=int, default=0, help="with --suite: N slowest passes")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one_suite_kernel(args.one, args.passes)))
        return 0
    if args.suite:
        return suite(args.runs, [k for k in args.kernels.split(",") if k], args.passes)
    jit_ms: list[tuple[float, str]] = []
    clang_ms: list[float] = []
    for name, source, options in sources():
        start = time.perf_counter()
        prog = spirvjit.compile_opencl(source, options)
        clang_ms.append((time.perf_counter() - start) * 1e3)
        for kernel_name in prog.kernel_names:
            kernel = prog.kernel(kernel_name)
            kernel.compile()
            jit_ms.append((kernel.compile_seconds * 1e3, f"{name}:{kernel_name}"))
    times = sorted(t for t, _ in jit_ms)
    q1, median, q3 = statistics.quantiles(times, n=4)
    print(f"kernels: {len(times)} from {len(clang_ms)} programs")
    print(
        f"cold JIT per kernel (translate share + opt + codegen + load), ms: "
        f"median {median:.1f}, quartiles {q1:.1f} / {q3:.1f}, max {times[-1]:.1f}"
    )
    print(f"clang-22 OpenCL C -> SPIR-V per program, ms: median {statistics.median(clang_ms):.1f}")
    print("slowest:", ", ".join(f"{n} {t:.0f}" for t, n in sorted(jit_ms)[-5:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
