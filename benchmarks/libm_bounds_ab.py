"""What computing around libmvec's out-of-bounds variants (translate/mathlib.OUT_OF_BOUNDS)
costs, in one process.

"libmvec": the table emptied and float ``log`` not inlined, so every function computes
through its libmvec variant (as before the table); "via double": the table as shipped but
float ``log`` not inlined (float ``log`` through libmvec's double variant, as before
vecmath.py's definition); "shipped": as shipped (float ``log`` inline, backends/cpu/vecmath.py;
``exp10`` through the double variant on AVX-512). Double ``exp`` is not here: it is
vecmath.py's inline definition either way (test_vecmath.py measures it). Each kernel runs
2**20 work-items on one thread (SPIRVJIT_NUM_THREADS=1), in groups of 64 (the vectorized
loop) and of 1 (the scalar path); the builds alternate, process CPU time per launch, best of
two builds' medians of 9.

    PYTHONPATH=$PWD python3 benchmarks/libm_bounds_ab.py

A loaded 2-core AVX-512 Zen 5 VM (ms; libmvec / via double / shipped): log 0.37 / 0.89 /
0.60 vectorized, 8.5 / 16.1 / 8.5 on the scalar path; Black-Scholes-like 1.75 / 2.65 / 2.42
and 27.8 / 38.3 / 33.1; exp10 0.37 / 0.74 / 0.72 and 7.7 / 14.5 / 14.4.
"""

from __future__ import annotations

import os
import statistics
import time

os.environ["SPIRVJIT_NUM_THREADS"] = "1"
os.environ["SPIRVJIT_CACHE"] = "0"
os.environ["SPIRVJIT_TIERED"] = "0"  # time the optimized code from the first launch

import numpy as np  # noqa: E402

import spirvjit  # noqa: E402
from spirvjit.backends.cpu import vecmath  # noqa: E402
from spirvjit.translate import mathlib  # noqa: E402

FLOAT_IN = "kernel void k(global const float* a, global float* o) { size_t i = get_global_id(0);"
# Each body adds a distinct constant (%d) so that no build reuses another's.
KERNELS = {
    "log (float)": FLOAT_IN + " o[i] = log(a[i]) + %d; }",
    "exp10 (float)": FLOAT_IN + " o[i] = exp10(a[i]) + %d; }",
    "Black-Scholes-like (float)": FLOAT_IN
    + " float s = a[i] + 1.0f; float d1 = (log(s / 1.5f) + 0.3f) / 0.2f;"
    " o[i] = s * erf(d1) - exp(-0.05f) * erf(d1 - 0.2f) + %d; }",
}
ARMS = ("libmvec", "via double", "shipped")
ITEMS = 1 << 20
SHIPPED = dict(mathlib.OUT_OF_BOUNDS)
INLINED = set(vecmath.INLINED)


def _configure(arm: str) -> None:
    mathlib.OUT_OF_BOUNDS.clear()
    if arm != "libmvec":
        mathlib.OUT_OF_BOUNDS.update(SHIPPED)
    vecmath.INLINED.clear()
    vecmath.INLINED.update(INLINED if arm == "shipped" else INLINED - {"logf"})


def _time(name: str, arm: str, salt: int, local: int) -> float:
    _configure(arm)
    a = np.random.default_rng(1).uniform(0.1, 5, ITEMS).astype(np.float32)
    out = np.zeros_like(a)
    kernel = spirvjit.compile_opencl(KERNELS[name] % salt).kernel("k")
    kernel(a, out, global_size=ITEMS, local_size=local)  # compile and warm up
    times = []
    for _ in range(9):
        start = time.process_time()
        kernel(a, out, global_size=ITEMS, local_size=local)
        times.append(time.process_time() - start)
    return statistics.median(times)


def main() -> None:
    salt = 0
    head = " ".join(f"{arm + ' ms':>13s}" for arm in ARMS)
    print(f"{'kernel':28s} {'group':>5s} {head} {'shipped/libmvec':>15s}")
    try:
        for name in KERNELS:
            for local in (64, 1):
                best = {arm: [] for arm in ARMS}
                for arm in ARMS + ARMS:
                    salt += 1
                    best[arm].append(_time(name, arm, salt, local))
                ms = {arm: min(times) * 1e3 for arm, times in best.items()}
                cells = " ".join(f"{ms[arm]:13.2f}" for arm in ARMS)
                ratio = ms["shipped"] / ms["libmvec"]
                print(f"{name:28s} {local:5d} {cells} {ratio:15.2f}")
    finally:
        _configure("shipped")


if __name__ == "__main__":
    main()
