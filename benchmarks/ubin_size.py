"""Unified binary size and first launch: SPIR-V only vs SPIR-V plus native variants.

Sizes: the project's kernel suite (examples/kernels/*.cl and the OpenCL sources of
tests/kernels/sources.py CASES), each source one unified binary, with 0 to 5 native
variants added in the order x86-64, x86-64-v2, x86-64-v3, x86-64-v4, host. "raw" is
SPIR-V plus object files uncompressed; "ubin" the file as written (zstd sections,
metadata included). Totals over the suite, as a table and (with matplotlib) a plot in
benchmarks/results/ubin_size.png.

First launch: a fresh process loads a unified binary and launches one kernel once,
with the host native variant vs through the JIT (SPIRVJIT_FORCE_JIT=1, disk cache off);
clang is not involved. Median over --runs processes.

    python3 benchmarks/ubin_size.py [--quick] [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "kernels"))

import spirvjit  # noqa: E402
from spirvjit.target import parse_cpu_target  # noqa: E402
from spirvjit.ubin.build import build_record, kernel_table, native_variant  # noqa: E402
from spirvjit.ubin.format import Contents  # noqa: E402
from spirvjit.ubin.writer import write_bytes  # noqa: E402

TARGETS = ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "host")
RESULTS = ROOT / "benchmarks" / "results"

# Runs in a fresh process: load the binary and time the first launch of saxpy.
FIRST_LAUNCH = """
import json, sys, time
import numpy as np
from spirvjit.ubin.api import open_program
t0 = time.perf_counter()
program, choice = open_program(sys.argv[1])
t1 = time.perf_counter()
x = np.ones(4096, np.float32); y = np.ones(4096, np.float32)
program.kernel("saxpy")(np.float32(2), x, y, np.uint32(4096), global_size=4096)
t2 = time.perf_counter()
origin = program.origins["saxpy"]
print(json.dumps({"load": t1 - t0, "launch": t2 - t1, "origin": origin, "why": choice.reason}))
"""


def suite(quick: bool) -> list[tuple[str, str, tuple[str, ...]]]:
    found = [(p.stem, p.read_text(), ()) for p in sorted((ROOT / "examples/kernels").glob("*.cl"))]
    if not quick:
        from sources import CASES

        found += [(name, c.source, tuple(c.options)) for name, c in sorted(CASES.items())]
    return found


def program_sizes(name: str, source: str, options: tuple[str, ...]) -> dict:
    """One program's raw and ubin bytes with 0..5 variants (run in a child process)."""
    from spirvjit.ubin.build import Input

    spirv = spirvjit.compile_opencl(source, options).spirv
    program = spirvjit.Program(spirv)
    variants = [native_variant(spirv, parse_cpu_target(t), {}) for t in TARGETS]
    record = build_record([Input(f"{name}.cl", source.encode(), "cl")], options, "clang")
    table = kernel_table(program)
    raw, ubin = [], []
    for n in range(len(TARGETS) + 1):
        objects = sum(len(o) for v in variants[:n] for o in v.objects.values())
        raw.append(len(spirv) + objects)
        ubin.append(len(write_bytes(Contents((spirv,), table, record, tuple(variants[:n])))))
    return {"raw": raw, "ubin": ubin, "kernels": len(program.kernel_names)}


def sizes(quick: bool) -> tuple[list[int], list[int], int, int]:
    """Suite totals per number of variants: raw bytes, ubin bytes; programs and kernels.

    Each program is measured in a child process: LLVM aborts the process on a few
    kernels for some targets (an LLVM assertion, not an exception), which then only
    skips that program.
    """
    raw = [0] * (len(TARGETS) + 1)
    ubin = [0] * (len(TARGETS) + 1)
    programs = kernels = 0
    for name, _, _ in suite(quick):
        cmd = [sys.executable, __file__, "--one", name] + (["--quick"] if quick else [])
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["?"])[-1][:160]
            print(f"skipped {name} (exit {proc.returncode}): {last}", file=sys.stderr)
            continue
        result = json.loads(proc.stdout)
        programs += 1
        kernels += result["kernels"]
        raw = [a + b for a, b in zip(raw, result["raw"], strict=True)]
        ubin = [a + b for a, b in zip(ubin, result["ubin"], strict=True)]
    return raw, ubin, programs, kernels


def first_launch(runs: int) -> dict[str, list[dict]]:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "saxpy.ubin")
        spirvjit.build(ROOT / "examples/kernels/saxpy.cl", path, targets=["host"])
        results: dict[str, list[dict]] = {"native": [], "jit": []}
        for mode in ("native", "jit"):
            env = {**os.environ, "SPIRVJIT_CACHE": "0"}
            if mode == "jit":
                env["SPIRVJIT_FORCE_JIT"] = "1"
            for _ in range(runs):
                out = subprocess.run(
                    [sys.executable, "-c", FIRST_LAUNCH, path],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                results[mode].append(json.loads(out))
        return results


def plot(raw: list[int], ubin: list[int]) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)")
        return
    xs = range(len(raw))
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(xs, [r / 1024 for r in raw], "o-", label="raw (SPIR-V + objects)")
    ax.plot(xs, [u / 1024 for u in ubin], "s-", label=".ubin (zstd)")
    ax.axhline(ubin[0] / 1024, ls="--", c="gray", label="SPIR-V only .ubin")
    ax.set_xticks(list(xs), ["0", *[f"+{t}" for t in TARGETS]], rotation=30)
    ax.set_xlabel("native variants")
    ax.set_ylabel("KiB, whole kernel suite")
    ax.legend()
    fig.tight_layout()
    RESULTS.mkdir(parents=True, exist_ok=True)
    fig.savefig(RESULTS / "ubin_size.png", dpi=120)
    print(f"plot: {RESULTS / 'ubin_size.png'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="examples/kernels only")
    parser.add_argument("--runs", type=int, default=7, help="processes per first-launch figure")
    parser.add_argument("--one", metavar="NAME", help=argparse.SUPPRESS)  # the child's job
    args = parser.parse_args()
    if args.one:
        name, source, options = next(c for c in suite(args.quick) if c[0] == args.one)
        print(json.dumps(program_sizes(name, source, options)))
        return 0
    raw, ubin, programs, kernels = sizes(args.quick)
    print(f"kernel suite: {programs} programs, {kernels} kernels")
    print(f"{'variants':<22}{'raw KiB':>10}{'ubin KiB':>10}{'ubin / SPIR-V-only':>20}")
    for n in range(len(raw)):
        label = "SPIR-V only" if n == 0 else f"+{n} ({TARGETS[n - 1]})"
        print(
            f"{label:<22}{raw[n] / 1024:>10.1f}{ubin[n] / 1024:>10.1f}{ubin[n] / ubin[0]:>19.2f}x"
        )
    plot(raw, ubin)
    results = first_launch(args.runs)
    for mode, runs in results.items():
        load = statistics.median(r["load"] for r in runs) * 1e3
        launch = statistics.median(r["launch"] for r in runs) * 1e3
        origin = runs[0]["origin"]
        if mode == "native" and origin != "native":
            print(f"the native variant was not used: {runs[0]['why']}")
        print(
            f"first launch of saxpy, {mode:<6}: load {load:6.1f} ms + first launch "
            f"{launch:6.1f} ms ({origin}), median of {len(runs)} processes"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
