"""Whole-function vectorization of vector values, private arrays and lane-by-lane calls
(backends/cpu/wfv_values.py): each kernel of tests/kernels/test_wfv_values.py at a
benchmark size, timed with the vectorizer off (SPIRVJIT_WFV=0) and on (default mode;
``--all``: SPIRVJIT_WFV=all, which also takes the loop-free kernels), the two runs
interleaved, median of ``--repeats``.

    PYTHONPATH=$PWD python3 benchmarks/wfv_values.py [--repeats 5] [--all] [--only a,b]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import spirvjit  # noqa: E402
from tests.kernels.test_wfv_values import SOURCE  # noqa: E402


def _cases(rng: np.random.Generator) -> dict:
    """name -> (argument maker, launch keywords)."""
    n_body = 4096
    pos = rng.standard_normal((n_body, 4)).astype(np.float32)
    vel = np.zeros_like(pos)
    big = 1 << 20
    x = rng.standard_normal(4 * big + 8).astype(np.float32)
    idx = rng.integers(0, big, big).astype(np.int32)
    a4 = rng.integers(-100, 100, (big, 4)).astype(np.int32)
    b4 = rng.integers(-100, 100, (big, 4)).astype(np.int32)
    sort_in = rng.integers(-1000, 1000, 8 * (big // 4)).astype(np.int32)
    per = 64
    hist_in = rng.integers(0, 256, (big // 4) * per).astype(np.uint8)
    f4 = rng.uniform(-2, 3, (big, 4)).astype(np.float32)
    pc_in = rng.standard_normal(8 * (big // 4)).astype(np.float32)
    pc_perm = rng.permutation(big // 4).astype(np.int32)
    return {
        "nbody_step": (
            lambda: [
                pos,
                vel,
                np.empty_like(pos),
                np.empty_like(vel),
                np.int32(n_body),
                np.float32(0.01),
                np.float32(0.05),
            ],  # fmt: skip
            {"global_size": n_body},
        ),
        "vloads": (
            lambda: [
                x,
                idx,
                np.empty(4 * big, np.float32),
                np.empty(5 * big, np.float32),
                np.float32(1.5),
            ],  # fmt: skip
            {"global_size": big},
        ),
        "int4_ops": (
            lambda: [a4, b4, np.empty_like(a4), np.empty(big, np.int32)],
            {"global_size": big},
        ),
        "float4_loop": (lambda: [f4, np.empty_like(f4), np.int32(12)], {"global_size": big}),
        "sort8": (lambda: [sort_in, np.empty_like(sort_in)], {"global_size": big // 4}),
        "histogram_private": (
            lambda: [hist_in, np.empty(big // 4, np.int32), np.int32(per)],
            {"global_size": big // 4},
        ),
        "private_copies": (
            lambda: [pc_in, np.empty_like(pc_in), np.empty_like(pc_in), pc_perm],
            {"global_size": big // 4},
        ),
        "helpers": (
            lambda: [np.empty(big, np.int32), f4.copy(), np.int32(77)],
            {"global_size": big},
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--all", action="store_true", help="SPIRVJIT_WFV=all for 'on'")
    parser.add_argument("--only", help="comma-separated kernels")
    opts = parser.parse_args()
    on = "all" if opts.all else ""
    cases = _cases(np.random.default_rng(0))
    names = opts.only.split(",") if opts.only else list(cases)
    programs, notes = {}, {}
    for setting in ("0", on):
        os.environ["SPIRVJIT_WFV"] = setting
        program = spirvjit.compile_opencl(SOURCE, ["-cl-std=CL2.0"])
        for name in names:
            # Compiled now, under this setting: the optimized code (no quick tier, whose
            # background compile would read the setting later).
            program.kernel(name).compile()
        notes[setting] = {k: f.wfv_note for k, f in program.translation().kernel_functions.items()}
        programs[setting] = program
    print(f"| kernel | WFV=0 ms | WFV={on or 'default'} ms | speed-up | outcome |")
    print("|---|---|---|---|---|")
    for name in names:
        make, launch = cases[name]
        times: dict[str, list[float]] = {"0": [], on: []}
        for _ in range(opts.repeats + 1):  # the first round warms up (JIT, page faults)
            for setting in ("0", on):
                os.environ["SPIRVJIT_WFV"] = setting
                args = make()
                kernel = programs[setting].kernel(name)
                start = time.perf_counter()
                kernel(*args, **launch)
                times[setting].append(time.perf_counter() - start)
        off_ms = statistics.median(times["0"][1:]) * 1e3
        on_ms = statistics.median(times[on][1:]) * 1e3
        print(
            f"| {name} | {off_ms:.2f} | {on_ms:.2f} | {off_ms / on_ms:.2f}x | {notes[on][name]} |"
        )


if __name__ == "__main__":
    main()
