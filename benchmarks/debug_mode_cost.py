"""Launch time of a kernel in debug mode (SPIRVJIT_DEBUG_INFO=1: unoptimized, DWARF,
loaded as a shared object) against the same -g module outside it (docs/debugging.md).

    SPIRVJIT_NUM_THREADS=1 SPIRVJIT_CACHE=0 PYTHONPATH=$PWD python3 benchmarks/debug_mode_cost.py

Each mode runs in a child process (debug mode is chosen at a kernel's first launch).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

KERNEL = """\
__kernel void accumulate(__global const float *in, __global float *out, int n)
{
    int gid = get_global_id(0);
    float4 v = (float4)(gid, 1.0f, 2.0f, 3.0f);
    float sum = 0.0f;
    for (int k = 0; k < n; k++) {
        sum += in[gid * n + k];
    }
    out[gid] = sum + v.x;
    out[gid] += 0.5f;
}
"""


def measure(options: list[str], repeat: int = 20) -> tuple[float, float]:
    """(first launch, best launch) in seconds."""
    import numpy as np

    import spirvjit

    prog = spirvjit.compile_opencl(KERNEL, options=options)
    n, items = 64, 4096
    data = np.arange(items * n, dtype=np.float32)
    out = np.zeros(items, np.float32)
    times = []
    for _ in range(repeat + 1):
        start = time.perf_counter()
        prog.accumulate(data, out, np.int32(n), global_size=items, local_size=64)
        times.append(time.perf_counter() - start)
        # The best launch is the optimized code's (the tiered JIT's first launches may
        # run its quick tier; debug mode is not tiered).
        prog.accumulate.wait_optimized()
    expected = data.reshape(items, n).sum(axis=1) + np.arange(items) + 0.5
    np.testing.assert_allclose(out, expected, rtol=1e-5)
    return times[0], min(times[1:])


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        first, best = measure(sys.argv[2:])
        print(f"{first * 1e3:.0f} {best * 1e3:.2f}")
        return 0
    print("| module | debug mode | first launch ms | best launch ms |")
    print("|---|---|---:|---:|")
    for label, options, debug in (
        ("clang-22, no -g", [], "0"),
        ("-g (translator, -O0)", ["-g"], "0"),
        ("-g (translator, -O0)", ["-g"], "1"),
    ):
        env = {**os.environ, "SPIRVJIT_DEBUG_INFO": debug}
        cmd = [sys.executable, __file__, "--child", *options]
        first, best = subprocess.run(
            cmd, env=env, capture_output=True, text=True, check=True
        ).stdout.split()
        print(f"| {label} | {'yes' if debug == '1' else 'no'} | {first} | {best} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
