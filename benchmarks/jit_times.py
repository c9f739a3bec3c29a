"""Cold-JIT time per kernel over the project's kernel suite (tests/kernels) and examples.

For every kernel: SPIR-V → LLVM IR translation share, optimization, code generation and
loading, measured by spirvjit itself (``Kernel.compile_seconds``); clang's OpenCL C →
SPIR-V time is reported separately. Prints the median, quartiles and the slowest kernels.

    python3 benchmarks/jit_times.py
"""

from __future__ import annotations

import os
import statistics
import sys
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


def main() -> int:
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
