"""Thread scaling of CPU launches: spirvjit with 1 .. all cores against gcc -O3 -fopenmp.

For each thread count T, a child process runs with SPIRVJIT_NUM_THREADS=T and
OMP_NUM_THREADS=T (both read once, at start) and times, interleaved run by run:

- a few suite kernels (benchmarks/cases.py) in spirvjit and in native C (OpenMP);
- small launches: saxpy over 1 .. 1000 work-groups of 64 work-items, the time of one
  whole launch in microseconds (arguments set each time), spirvjit with its native
  thread pool and with the portable Python one (launcher.ThreadPool), and native C.
  Below 4096 work-items spirvjit runs a launch on the calling thread alone.

Results go to stdout and benchmarks/results/thread_scaling.md.

    python3 benchmarks/thread_scaling.py [--quick] [--threads 1,2] [--only saxpy,sgemm]
        [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_lib import fmt_ms, machine_info, markdown_table  # noqa: E402

KERNELS = ("saxpy", "saxpy_guarded", "stencil", "sgemm", "mandelbrot", "reduction")
SMALL_GROUPS = (1, 16, 64, 256, 1000)  # work-groups of 64 in the small launches
SMALL_LOCAL = 64


def _interleaved(runs: dict[str, object], repeats: int, warmup: int) -> dict[str, list[float]]:
    """Seconds of ``repeats`` runs of each callable, taking turns (one shared minute)."""
    for run in runs.values():
        for _ in range(warmup):
            run()
    times: dict[str, list[float]] = {k: [] for k in runs}
    clock = time.perf_counter
    for _ in range(repeats):
        for name, run in runs.items():
            start = clock()
            run()
            times[name].append(clock() - start)
    return times


def _cpu_seconds() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _blocks(
    runs: dict[str, object], repeats: int, rounds: int = 3
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Seconds of ``repeats`` runs of each callable, in blocks of runs of one callable,
    the blocks taking turns ``rounds`` times, and the process's CPU seconds per run (the
    median over the blocks; all threads, spinning included). Blocks, not run by run: after
    a launch OpenMP's threads spin for a while (and so may spirvjit's, with a core to
    spare) and would take the cores from the next contender's launch."""
    times: dict[str, list[float]] = {k: [] for k in runs}
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    clock = time.perf_counter
    per_block = max(1, repeats // rounds)
    for _ in range(rounds):
        for name, run in runs.items():
            for _ in range(5):
                run()
            used = _cpu_seconds()
            for _ in range(per_block):
                start = clock()
                run()
                times[name].append(clock() - start)
            cpu[name].append((_cpu_seconds() - used) / per_block)
    return times, {k: statistics.median(v) for k, v in cpu.items()}


def _small_runs(n: int, kernels: dict, pools: dict, fn) -> tuple[dict, object]:
    """saxpy over ``n`` elements: a launch per contender, and a check of the result."""
    import ctypes

    import numpy as np

    from spirvjit.backends.cpu import launcher

    x = np.ones(n, np.float32)
    ys = {label: np.zeros(n, np.float32) for label in [*pools, "native"]}

    def launch(label: str):
        kernel, y, pool = kernels[label], ys[label], pools[label]
        a, count = np.float32(2.0), np.uint32(n)

        def run() -> None:
            launcher._pool = pool
            kernel(a, x, y, count, global_size=n, local_size=SMALL_LOCAL)

        return run

    runs = {label: launch(label) for label in pools}
    args = [ctypes.c_int64(n), ctypes.c_float(2.0)]
    args += [ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(ys["native"].ctypes.data)]
    runs["native"] = lambda: fn(*args)

    def check(launches: int) -> None:  # every launch added 2 * x
        for label, y in ys.items():
            if not np.all(y == np.float32(2.0 * launches)):
                raise AssertionError(f"small launch of {n} items / {label}: wrong result")

    return runs, check


def child(names: list[str], mode: str, repeats: int, small_repeats: int) -> dict:
    """Everything measured at this process's thread count (the environment's)."""
    from cases import CASES
    from contenders import Native, Spirvjit

    import spirvjit
    from spirvjit import config
    from spirvjit.backends.cpu import launcher

    spirvjit_c, native_c = Spirvjit(), Native()
    out: dict = {"threads": config.num_threads(), "kernels": {}, "small": {}}
    keep = []
    for name in names:
        case = CASES[name]
        p = case.sizes[mode]
        runs = {}
        for contender in (spirvjit_c, native_c):
            data = case.make_data(p)
            keep.append(data)  # native C gets raw addresses: the arrays must stay alive
            runs[contender.name] = contender.prepare(case, data, p).run
        times = _interleaved(runs, repeats, warmup=1)
        out["kernels"][name] = {k: statistics.median(v) for k, v in times.items()}
        out["kernels"][name].update({f"{k} min": min(v) for k, v in times.items()})
        print(f"  T={out['threads']} {name}: done", file=sys.stderr, flush=True)

    # Small launches: one kernel object per pool (a kernel keeps its launch plans).
    case = CASES["saxpy"]
    pools = {"spirvjit": launcher.thread_pool(), "spirvjit (Python pool)": None}
    if isinstance(pools["spirvjit"], launcher.ThreadPool):
        del pools["spirvjit (Python pool)"]  # the Python pool is the only one here
    else:
        pools["spirvjit (Python pool)"] = launcher.ThreadPool(config.num_threads())
    kernels = {label: spirvjit.compile_opencl(case.source).kernel("saxpy") for label in pools}
    for kernel in kernels.values():
        kernel.compile()  # the optimized code (no quick tier: steady-state launches)
    fn = native_c.library(case).saxpy
    for groups in SMALL_GROUPS:
        runs, check = _small_runs(groups * SMALL_LOCAL, kernels, pools, fn)
        times, cpu = _blocks(runs, small_repeats)
        launcher._pool = pools["spirvjit"]
        out["small"][str(groups)] = {k: statistics.median(v) for k, v in times.items()}
        out["small"][str(groups)].update({f"{k} min": min(v) for k, v in times.items()})
        out["small"][str(groups)].update({f"{k} cpu": v for k, v in cpu.items()})
        check(3 * (small_repeats // 3 + 5))
    return out


def run_children(opts) -> list[dict]:
    results = []
    for threads in opts.threads:
        env = {**os.environ, "SPIRVJIT_NUM_THREADS": str(threads)}
        env["OMP_NUM_THREADS"] = str(threads)
        command = [sys.executable, __file__, "--child", "--only", ",".join(opts.names)]
        command += ["--repeats", str(opts.repeats), "--small-repeats", str(opts.small_repeats)]
        command += ["--quick"] if opts.quick else []
        print(f"threads = {threads} ...", flush=True)
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
        sys.stderr.write(done.stderr)
        if done.returncode:
            raise SystemExit(f"child with {threads} threads failed ({done.returncode})")
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return results


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f}"


def render(results: list[dict], opts, machine: list[tuple[str, str]]) -> str:
    base = results[0]
    rows = []
    for name in opts.names:
        for r in results:
            k = r["kernels"][name]
            s, c = k["spirvjit"], k["native"]
            b = base["kernels"][name]
            rows.append(
                [
                    name,
                    str(r["threads"]),
                    fmt_ms(s),
                    fmt_ms(k["spirvjit min"]),
                    fmt_ms(c),
                    fmt_ms(k["native min"]),
                    f"{b['spirvjit'] / s:.2f}x",
                    f"{b['native'] / c:.2f}x",
                    f"{c / s:.2f}x",
                ]
            )
    header = [
        "kernel",
        "threads",
        "spirvjit ms (median)",
        "spirvjit ms (min)",
        "native C ms (median)",
        "native C ms (min)",
        f"spirvjit speed-up vs {base['threads']} thread",
        f"native speed-up vs {base['threads']} thread",
        "spirvjit vs native (median)",
    ]
    first = base["small"][str(SMALL_GROUPS[0])]
    labels = [k for k in first if not k.endswith((" min", " cpu"))]
    small_rows = []
    for groups in SMALL_GROUPS:
        for r in results:
            cell = r["small"][str(groups)]
            small_rows.append(
                [
                    f"{groups} x {SMALL_LOCAL}",
                    str(r["threads"]),
                    *(f"{_us(cell[k])} ({_us(cell[k + ' min'])})" for k in labels),
                    *(_us(cell[k + " cpu"]) for k in labels),
                ]
            )
    lines = [
        f"# Thread scaling ({'quick' if opts.quick else 'full'} sizes)",
        "",
        f"Generated by `python3 benchmarks/thread_scaling.py{' --quick' if opts.quick else ''}`"
        f" on {time.strftime('%Y-%m-%d %H:%M')}. One child process per thread count"
        " (SPIRVJIT_NUM_THREADS = OMP_NUM_THREADS = T); in it the contenders take turns run"
        f" by run, {opts.repeats} runs each (small launches: {opts.small_repeats}).",
        "",
        "On a shared machine the absolute times move with the load from minute to minute:"
        " read the ratios within one row (measured interleaved) rather than across rows,"
        " and the minimum as the time with the least interference.",
        "",
        "## Machine",
        "",
        markdown_table(["", ""], [list(m) for m in machine]),
        "",
        "## Kernels (ms)",
        "",
        markdown_table(header, rows),
        "",
        "## Small launches: µs per launch, median (min), and CPU µs per launch",
        "",
        "saxpy over N work-groups of 64 work-items, `local_size=64`, arguments set each"
        " launch. spirvjit runs launches of fewer than 4096 work-items on the calling thread"
        " (INLINE_WORK_ITEMS); larger ones on the pool's threads. Native C: the OpenMP loop"
        " over the same elements, called through ctypes. CPU µs: the process's CPU time (all"
        " threads, spinning included) per launch, the median over the blocks: less"
        " disturbed by the machine's load than the wall-clock times.",
        "",
        markdown_table(
            ["launch", "threads", *labels, *(f"{k}: CPU µs" for k in labels)], small_rows
        ),
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the suite's quick sizes")
    parser.add_argument("--threads", help="comma-separated thread counts (1 .. all cores)")
    parser.add_argument("--only", help=f"comma-separated kernels ({','.join(KERNELS)})")
    parser.add_argument("--repeats", type=int, default=7, help="runs per kernel figure (7)")
    parser.add_argument("--small-repeats", type=int, default=300, help="small launches (300)")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "thread_scaling.md")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    opts.names = opts.only.split(",") if opts.only else list(KERNELS)
    if opts.child:
        mode = "quick" if opts.quick else "full"
        print(json.dumps(child(opts.names, mode, opts.repeats, opts.small_repeats)))
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if opts.threads:
        opts.threads = [int(t) for t in opts.threads.split(",")]
    else:
        opts.threads = sorted({1, *(t for t in (2, 4, 8, 16, 32, 64) if t < cores), cores})
    machine = [m for m in machine_info(None) if m[0] not in ("PoCL", "Intel CPU OpenCL")]
    machine = [m for m in machine if not m[0].endswith("NUM_THREADS")]
    results = run_children(opts)
    text = render(results, opts, machine)
    print(text)
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(text)
    print(f"wrote {opts.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
