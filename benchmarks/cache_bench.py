"""First launch with a cold vs a warm kernel cache, and the in-process launch overhead.

For each kernel of examples/kernels/*.cl (compiled to SPIR-V once, beforehand, so
clang is not timed): a fresh process runs ``spirvjit.load_spirv(spv_bytes)`` and
``kernel.compile()`` (what a first launch adds to a launch), once with an empty cache
directory (cold: the JIT runs) and once with the directory the cold run filled (warm:
a disk hit). Each figure is the median over ``--repeats`` processes. Then, in this
process, the overhead of launching an already compiled tiny kernel (median of many
launches) and where that time goes.

    python3 benchmarks/cache_bench.py [--repeats 5] [--launches 20000]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

# Runs in a fresh process: argv = spv path, kernel name. Prints milliseconds as JSON.
_FIRST_LAUNCH = """
import json, logging, sys, time
t0 = time.perf_counter()
import spirvjit
t1 = time.perf_counter()
logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
data = open(sys.argv[1], "rb").read()
t2 = time.perf_counter()
prog = spirvjit.load_spirv(data)
t3 = time.perf_counter()
prog.kernel(sys.argv[2]).compile()
t4 = time.perf_counter()
ms = lambda a, b: (b - a) * 1e3
print(json.dumps({"import": ms(t0, t1), "load_spirv": ms(t2, t3), "compile": ms(t3, t4),
                  "first": ms(t2, t4), "origin": prog.origins[sys.argv[2]]}))
"""
_STAGE = re.compile(r"(\w+) ([\d.]+) ms")


def first_launch(spv: Path, kernel: str, cache_dir: Path) -> dict:
    env = {
        **os.environ,
        "SPIRVJIT_CACHE_DIR": str(cache_dir),
        "SPIRVJIT_DEBUG": "1",
        "SPIRVJIT_NUM_THREADS": "1",
    }
    env.pop("SPIRVJIT_CACHE", None)
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_LAUNCH, str(spv), kernel],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result = json.loads(done.stdout)
    # The JIT's own log line: "<origin> <kernel> for <target>: T ms (stage t ms, ...)".
    for line in done.stderr.splitlines():
        if line.startswith(f"spirvjit: {result['origin']} {kernel} for "):
            for stage, ms in _STAGE.findall(line.split("(", 1)[1]):
                result[f"stage {stage}"] = float(ms)
    return result


def median(runs: list[dict], field: str) -> float:
    return statistics.median(r.get(field, 0.0) for r in runs)


def first_launches(repeats: int) -> list[tuple[str, list[dict], list[dict]]]:
    import spirvjit

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for source in sorted((ROOT / "examples" / "kernels").glob("*.cl")):
            prog = spirvjit.compile_opencl(source.read_text(), filename=source.name)
            spv = Path(tmp) / f"{source.stem}.spv"
            spv.write_bytes(prog.spirv)
            for kernel in prog.kernel_names:
                cold, warm = [], []
                for i in range(repeats * 3):
                    if len(cold) == repeats:
                        break
                    cache_dir = Path(tmp) / f"cache-{kernel}-{i}"
                    pair = (
                        first_launch(spv, kernel, cache_dir),
                        first_launch(spv, kernel, cache_dir),
                    )
                    # A miss when warm means spirvjit's code changed in between (the key
                    # covers it: someone is editing the tree); measure that pair again.
                    if (pair[0]["origin"], pair[1]["origin"]) == ("compile", "disk"):
                        cold.append(pair[0])
                        warm.append(pair[1])
                if len(cold) < repeats:
                    sys.exit(f"{kernel}: the warm run kept missing the cache")
                rows.append((kernel, cold, warm))
    return rows


def median_us(fn, count: int) -> float:
    samples = []
    for _ in range(count):
        start = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1e3


def launch_overhead(launches: int) -> list[tuple[str, float]]:
    """Median µs of a whole launch of a one-work-item kernel, and of its parts."""
    import spirvjit
    from spirvjit.backends.cpu import launcher

    source = "kernel void tiny(global int *a, int v) { a[get_global_id(0)] = v; }"
    kernel = spirvjit.compile_opencl(source).kernel("tiny")
    a = np.zeros(1, np.int32)
    kernel(a, 7, global_size=1)
    assert a[0] == 7
    loaded = kernel._default  # the CPU backend's CpuKernel
    plan = loaded._plan(1, None, None)
    slots, keep, _ = loaded._packer.pack((a, 7))
    record = launcher.LaunchRecord.from_buffer_copy(plan.record)
    runner = loaded._runner
    args, launch = ctypes.addressof(slots), ctypes.addressof(record)
    pool = launcher.thread_pool()
    arena = pool._arena.get(0)
    parts = [
        ("whole launch: kernel(a, 7, global_size=1)", lambda: kernel(a, 7, global_size=1)),
        ("  NDRange plan (first launch of a shape only)", lambda: loaded._plan(1, None, None)),
        ("  ArgumentPacker.pack", lambda: loaded._packer.pack((a, 7))),
        ("  launch record copy", lambda: launcher.LaunchRecord.from_buffer_copy(plan.record)),
        ("  ThreadPool.run (1 thread)", lambda: pool.run(runner, args, launch, 1, 0)),
        ("  the runner through ctypes alone", lambda: runner(args, launch, arena)),
    ]
    return [(what, median_us(fn, launches)) for what, fn in parts]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="processes per figure")
    parser.add_argument("--launches", type=int, default=20000, help="launches per overhead figure")
    options = parser.parse_args()
    rows = first_launches(options.repeats)
    print(f"First launch in a fresh process, ms (median of {options.repeats} processes):")
    print("load_spirv(bytes) + kernel.compile(); clang excluded; the cache stage includes")
    print("opening the cache directory; link = loading the object into the process.\n")
    header = (
        f"{'kernel':<12}{'cold':>8}{'warm':>8}{'speed-up':>10}  |  warm ="
        f"{'load_spirv':>11}{'cache':>7}{'link':>7}  | import spirvjit"
    )
    print(header)
    print("-" * len(header))
    for kernel, cold, warm in rows:
        c, w = median(cold, "first"), median(warm, "first")
        print(
            f"{kernel:<12}{c:8.1f}{w:8.1f}{c / w:9.1f}x  |       "
            f"{median(warm, 'load_spirv'):11.1f}{median(warm, 'stage cache'):7.1f}"
            f"{median(warm, 'stage load'):7.1f}  | {median(warm, 'import'):6.0f}"
        )
    print(f"\nIn-process launch overhead, µs (median of {options.launches} launches):\n")
    for what, us in launch_overhead(options.launches):
        print(f"{what:<46}{us:8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
