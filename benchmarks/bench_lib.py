"""Timing, statistics and small helpers shared by the benchmark suite (benchmarks/suite.py)."""

from __future__ import annotations

import math
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Iterable

import numpy as np

ALIGN = 4096  # page-aligned arrays: no runtime has a reason to copy them


def aligned_empty(shape: int | tuple[int, ...], dtype: type | np.dtype) -> np.ndarray:
    """An uninitialised array whose data starts on an ALIGN-byte boundary."""
    dtype = np.dtype(dtype)
    count = math.prod(shape) if isinstance(shape, tuple) else shape
    raw = np.empty(count * dtype.itemsize + ALIGN, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGN
    return raw[start : start + count * dtype.itemsize].view(dtype).reshape(shape)


def aligned_copy(array: np.ndarray) -> np.ndarray:
    out = aligned_empty(array.shape, array.dtype)
    out[...] = array
    return out


def median_seconds(
    run: Callable[[], object], warmup: int, repeats: int, budget_s: float = float("inf")
) -> tuple[float, int]:
    """Median seconds of up to ``repeats`` timed runs after ``warmup`` untimed ones.

    Stops early (after at least 3 runs) once the timed runs took ``budget_s`` in all, so a
    slow contender does not stretch the suite. Returns the median and the number of runs.
    """
    for _ in range(warmup):
        run()
    times: list[float] = []
    while len(times) < repeats:
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
        if len(times) >= 3 and sum(times) > budget_s:
            break
    return statistics.median(times), len(times)


def median_us(run: Callable[[], object], count: int) -> float:
    """Median microseconds of ``count`` calls of ``run`` (each timed on its own)."""
    for _ in range(min(count // 10, 100)):
        run()
    times = []
    clock = time.perf_counter
    for _ in range(count):
        start = clock()
        run()
        times.append(clock() - start)
    return statistics.median(times) * 1e6


def geomean(values: Iterable[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _first_line(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=20)
        return (done.stdout or done.stderr).strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return "n/a"


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_vector_isa() -> str:
    """The widest x86 vector extensions the CPU reports (results differ with them)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        return "unknown"
    wanted = ("avx512f", "avx2", "fma", "avx", "sse4_2")
    return ", ".join(w for w in wanted if w in flags) or "none of AVX/SSE4.2"


def load_average() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "n/a"
    return f"{one:.1f} / {five:.1f} / {fifteen:.1f} (1 / 5 / 15 min)"


def machine_info(
    pocl_version: str | None, intel_version: str | None = None
) -> list[tuple[str, str]]:
    """(what, value) pairs describing the machine and the software measured."""
    import llvmlite

    import spirvjit
    from spirvjit import toolchain

    clang = toolchain.find_tool("clang")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return [
        ("CPU", cpu_model()),
        ("vector ISA", cpu_vector_isa()),
        ("cores available", str(cores)),
        ("load average at start", load_average()),
        ("OS", f"{platform.system()} {platform.release()}"),
        ("Python", platform.python_version()),
        ("NumPy", np.__version__),
        ("spirvjit", f"{spirvjit.__version__} (llvmlite {llvmlite.__version__})"),
        ("clang (OpenCL C -> SPIR-V)", _first_line([clang, "--version"]) if clang else "n/a"),
        ("PoCL", pocl_version or "n/a"),
        ("Intel CPU OpenCL", intel_version or "n/a"),
        ("gcc", _first_line(["gcc", "--version"])),
        ("SPIRVJIT_NUM_THREADS", os.environ.get("SPIRVJIT_NUM_THREADS", "(all cores)")),
        ("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "(all cores)")),
    ]


def fmt_ms(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    ms = seconds * 1e3
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 100 else f"{ms:.0f}"


def fmt_ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """A GitHub markdown table, columns padded so it also reads well on a terminal."""
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), sep, *(line(r) for r in rows)])
