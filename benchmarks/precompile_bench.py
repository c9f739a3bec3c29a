"""Install-time JIT: ``spirvjit precompile`` of a package of many kernels, the first
launches after it in a fresh process, and the source cache (compile_opencl of a source
already compiled, in process and from disk).

A package ``benchpkg`` with ``--kernels`` small kernels (one unified binary) is written
to a temporary directory put on PYTHONPATH; the kernel cache and source cache use a
fresh temporary directory. Figures:

* precompile: wall time of ``python -m spirvjit precompile benchpkg -j N`` (a new
  process: interpreter start, discovery and worker start-up included), kernels/s;
  then the second run (which finds everything cached);
* first launch after precompile: a fresh process loads the package's kernels and
  launches each once; per kernel the time of its first launch minus a second launch
  (what the first launch adds: cache read, verification, linking), median and mean,
  and the first kernel's separately (it also pays one-time set-up);
* source cache: ``compile_opencl`` of a seen source in this process (median of 200),
  and the source-to-SPIR-V step from disk in fresh processes (median of ``--repeats``).

    python3 benchmarks/precompile_bench.py [--kernels 200] [-j 2] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

_FIRST_LAUNCHES = """
import json, sys, time
import numpy as np
t0 = time.perf_counter()
import spirvjit
program = spirvjit.load_package_kernels("benchpkg", "ops")
t1 = time.perf_counter()
y = np.ones(64, dtype=np.float32)
x = np.ones(64, dtype=np.float32)
first, again, origins = [], [], []
for name in program.kernel_names:
    kernel = program.kernel(name)
    t = time.perf_counter()
    kernel(y, x, np.float32(1), global_size=64)
    first.append(time.perf_counter() - t)
    t = time.perf_counter()
    kernel(y, x, np.float32(1), global_size=64)
    again.append(time.perf_counter() - t)
    origins.append(program.origins[name])
print(json.dumps({"load": t1 - t0, "first": first, "again": again, "origins": origins}))
"""

_DISK_SOURCE = """
import json, sys, time
import spirvjit
from spirvjit.frontend import source_cache
source = open(sys.argv[1]).read()
t = time.perf_counter()
source_cache.opencl_to_spirv(source)
spirv_s = time.perf_counter() - t
source_cache.reset()
t = time.perf_counter()
spirvjit.compile_opencl(source)
program_s = time.perf_counter() - t
print(json.dumps({"spirv": spirv_s, "compile_opencl": program_s, "stats": source_cache.stats()}))
"""


def kernel_source(count: int) -> str:
    return "\n".join(
        f"kernel void k{i}(global float *y, global const float *x, float a) "
        f"{{ size_t j = get_global_id(0); y[j] = a * x[j] + y[j] * {i}.0f; }}"
        for i in range(count)
    )


def first_launches(env: dict, after: str) -> int:
    """Prints what each kernel's first launch adds in a fresh process."""
    proc = subprocess.run(
        [sys.executable, "-c", _FIRST_LAUNCHES], env=env, capture_output=True, text=True
    )
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        return 1
    launch = json.loads(proc.stdout)
    origins = sorted(set(launch["origins"]))
    added = [(f - a) * 1e3 for f, a in zip(launch["first"], launch["again"], strict=True)]
    print(
        f"first launch after {after} (fresh process, origins {origins}): "
        f"import + load_package_kernels {launch['load'] * 1e3:.1f} ms; "
        f"first kernel +{added[0]:.2f} ms; the other {len(added) - 1}: "
        f"median +{statistics.median(added[1:]):.2f} ms, "
        f"mean +{statistics.mean(added[1:]):.2f} ms per kernel"
    )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", type=int, default=200)
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()

    import spirvjit
    from spirvjit.frontend import source_cache

    with tempfile.TemporaryDirectory(prefix="spirvjit-bench-") as tmp:
        tmp = Path(tmp)
        os.environ["SPIRVJIT_CACHE_DIR"] = str(tmp / "cache")  # never the user's cache
        package = tmp / "site" / "benchpkg"
        (package / "kernels").mkdir(parents=True)
        (package / "__init__.py").write_text("")
        source = kernel_source(args.kernels)
        spirvjit.build(source, package / "kernels" / "ops.ubin")
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp / "site")]),
            "SPIRVJIT_CACHE_DIR": str(tmp / "cache"),
            "SPIRVJIT_PROGRESS": "0",
        }
        env.pop("SPIRVJIT_CACHE", None)
        cmd = [sys.executable, "-m", "spirvjit", "precompile", "benchpkg", "-j", str(args.jobs)]
        cmd += ["--device", "cpu"]
        results = {}
        for run in ("first", "second"):
            t = time.perf_counter()
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            results[run] = time.perf_counter() - t
            print(proc.stdout.strip())
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return 1
        print(
            f"precompile {args.kernels} kernels, -j {args.jobs}: {results['first']:.1f} s wall "
            f"({args.kernels / results['first']:.1f} kernels/s, process start included); "
            f"second run {results['second']:.2f} s"
        )

        if first_launches(env, "precompile") != 0:
            return 1
        # --aot: the native code goes into the .ubin; the cache is not asked.
        aot = [*cmd, "--aot"]
        proc = subprocess.run(aot, env=env, capture_output=True, text=True, check=False)
        print(proc.stdout.strip())
        if proc.returncode != 0 or first_launches(env, "precompile --aot") != 0:
            print(proc.stderr, file=sys.stderr)
            return 1

        # The source cache: this process (memory) and fresh processes (disk).
        small = kernel_source(3)
        spirvjit.compile_opencl(small)
        times, spirv_times = [], []
        for _ in range(200):
            t = time.perf_counter()
            spirvjit.compile_opencl(small)
            times.append(time.perf_counter() - t)
            t = time.perf_counter()
            source_cache.opencl_to_spirv(small)
            spirv_times.append(time.perf_counter() - t)
        print(
            "source cache in process (median of 200): source->SPIR-V "
            f"{statistics.median(spirv_times) * 1e3:.3f} ms, compile_opencl (with Program) "
            f"{statistics.median(times) * 1e3:.3f} ms"
        )
        path = tmp / "small.cl"
        path.write_text(small)
        disk = []
        for _ in range(args.repeats):
            proc = subprocess.run(
                [sys.executable, "-c", _DISK_SOURCE, str(path)],
                env=env,
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                print(proc.stderr, file=sys.stderr)
                return 1
            disk.append(json.loads(proc.stdout))
        assert all(d["stats"]["disk"] == 1 for d in disk), disk
        print(
            f"source cache from disk (fresh processes, median of {args.repeats}): source->SPIR-V "
            f"{statistics.median(d['spirv'] for d in disk) * 1e3:.2f} ms, compile_opencl "
            f"{statistics.median(d['compile_opencl'] for d in disk) * 1e3:.2f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
