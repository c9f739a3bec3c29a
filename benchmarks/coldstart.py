"""First launch of each kernel in a fresh process: cold (caches off) and warm (cache filled).

The parent (``first_launches``) starts this file as a child process per measurement::

    python3 benchmarks/coldstart.py RUNTIME CASE[,CASE...]

The child first launches a different, tiny kernel (so one-time runtime start-up such as
LLVM's initialisation or PoCL's device probing is not charged to the first case), then
for each case, on the case's ``first`` (tiny) problem size, times OpenCL C source ->
program (clang) and the first launch (JIT or PoCL's lazy work-group code generation,
plus the tiny run), checks the result and prints one JSON object per case.

Caches: spirvjit's persistent cache is turned off with SPIRVJIT_CACHE=0 (cold) or pointed
at a fresh directory with SPIRVJIT_CACHE_DIR (filled by one process, then measured warm
by a second); PoCL's likewise with POCL_KERNEL_CACHE=0 and POCL_CACHE_DIR.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from cases import CASES, KERNEL_DIRS, Case  # noqa: E402
from contenders import Pocl, Spirvjit  # noqa: E402

_TINY = (KERNEL_DIRS[0] / "tiny.cl").read_text()


def _child_spirvjit(cases: list[Case]) -> list[dict]:
    import numpy as np

    import spirvjit

    spirvjit.compile_opencl(_TINY).kernel("tiny")(np.zeros(1, np.int32), 1, global_size=(1,))
    contender, rows = Spirvjit(), []
    for case in cases:
        p = case.sizes["first"]
        want = case.reference(case.make_data(p), p)  # before the run: some work in place
        d = case.make_data(p)
        t0 = time.perf_counter()
        prog = spirvjit.compile_opencl(case.source, options=list(case.options))
        t1 = time.perf_counter()
        kernel = prog.kernel(case.name)
        kernel.compile()
        contender.kernels[case.name] = kernel
        prepared = contender.prepare(case, d, p)
        returned = prepared.run()
        t2 = time.perf_counter()
        rows.append(
            {
                "case": case.name,
                "build_ms": (t1 - t0) * 1e3,
                "jit_ms": kernel.compile_seconds * 1e3,
                "first_ms": (t2 - t1) * 1e3,
                "total_ms": (t2 - t0) * 1e3,
                "origin": prog.origins.get(case.name, "?"),
                "error": case.compare(prepared.result(returned), want),
            }
        )
    return rows


def _child_pocl(cases: list[Case]) -> list[dict]:
    import numpy as np

    contender = Pocl()
    tiny = contender.cl.Program(contender.ctx, _TINY).build().tiny
    buf = contender.cl.Buffer(contender.ctx, contender.cl.mem_flags.READ_WRITE, 4)
    tiny(contender.queue, (1,), None, buf, np.int32(1))
    contender.queue.finish()
    rows = []
    for case in cases:
        p = case.sizes["first"]
        want = case.reference(case.make_data(p), p)  # before the run: some work in place
        d = case.make_data(p)
        t0 = time.perf_counter()
        contender.kernel(case)  # clBuildProgram + clCreateKernel
        t1 = time.perf_counter()
        prepared = contender.prepare(case, d, p)
        returned = prepared.run()  # PoCL generates the work-group function here
        t2 = time.perf_counter()
        rows.append(
            {
                "case": case.name,
                "build_ms": (t1 - t0) * 1e3,
                "first_ms": (t2 - t1) * 1e3,
                "total_ms": (t2 - t0) * 1e3,
                "error": case.compare(prepared.result(returned), want),
            }
        )
    return rows


def _run_child(runtime: str, names: list[str], env: dict[str, str]) -> dict[str, dict]:
    done = subprocess.run(
        [sys.executable, __file__, runtime, ",".join(names)],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=600,
    )
    if done.returncode:
        raise RuntimeError(f"{runtime} first-launch child failed:\n{done.stderr[-3000:]}")
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {row["case"]: row for row in rows}


def _cache_env(runtime: str, mode: str, cache_dir: str) -> dict[str, str]:
    if runtime == "spirvjit":
        if mode == "cold":
            return {"SPIRVJIT_CACHE": "0"}
        return {"SPIRVJIT_CACHE": "1", "SPIRVJIT_CACHE_DIR": cache_dir}
    if mode == "cold":
        return {"POCL_KERNEL_CACHE": "0"}
    return {"POCL_KERNEL_CACHE": "1", "POCL_CACHE_DIR": cache_dir}


def _median_rows(runs: list[dict[str, dict]]) -> dict[str, dict]:
    """Per case, the median of every numeric field over the runs; errors and origins kept."""
    merged: dict[str, dict] = {}
    for name in runs[0]:
        rows = [run[name] for run in runs if name in run]
        out = {k: v for k, v in rows[0].items() if not isinstance(v, float)}
        out["error"] = next((r["error"] for r in rows if r.get("error")), None)
        out["origin"] = ",".join(sorted({r.get("origin", "") for r in rows}))
        for key in rows[0]:
            if isinstance(rows[0][key], float):
                out[key] = statistics.median(r[key] for r in rows)
        merged[name] = out
    return merged


CHILDREN_PER_REPEAT = 3  # cold, filling the cache, warm


def first_launches(
    runtime: str, names: list[str], repeats: int, progress=lambda what: None
) -> dict[str, dict]:
    """{"cold": {case: row}, "warm": {case: row}} for one runtime, medians over repeats.

    Warm rows of spirvjit that were not disk hits are dropped (reported as n/a).
    ``progress(what)`` is called after each child process (CHILDREN_PER_REPEAT a repeat)."""
    cold, warm = [], []
    for _ in range(repeats):
        cold.append(_run_child(runtime, names, _cache_env(runtime, "cold", "")))
        progress(f"{runtime} cold")
        with tempfile.TemporaryDirectory(prefix=f"suite-{runtime}-cache-") as cache_dir:
            env = _cache_env(runtime, "warm", cache_dir)
            _run_child(runtime, names, env)  # fills the cache
            progress(f"{runtime} filling the cache")
            run = _run_child(runtime, names, env)
            progress(f"{runtime} warm")
        if runtime == "spirvjit":
            run = {k: v for k, v in run.items() if v.get("origin") == "disk"}
        warm.append(run)
    warm = [w for w in warm if w]
    return {"cold": _median_rows(cold), "warm": _median_rows(warm) if warm else {}}


def main(argv: list[str]) -> int:
    runtime, names = argv[0], argv[1].split(",")
    child = {"spirvjit": _child_spirvjit, "pocl": _child_pocl}[runtime]
    for row in child([CASES[n] for n in names]):
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
