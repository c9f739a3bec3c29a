"""Unified binary size with GPU code for the common launch next to the generic code.

For every benchmark kernel file (those of benchmarks/gpu_codegen.py: benchmarks/kernels
and examples/kernels, less tiny.cl) and every GPU target of that comparison, the
``.ubin`` as ``spirvjit build --target T`` writes it with ``--launch-variants none``
(the generic code only, format version 1) and with the default ``common`` (also the
code for launches with whole groups, no global offset and ids below 2**31, version 2).
Bytes are the file as written (zstd sections, metadata included); "growth" is what the
common launch's code adds. A table in benchmarks/results/ubin_launch_variants.md.

    python3 benchmarks/ubin_launch_variants.py [--targets gfx942,sm_90]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import spirvjit  # noqa: E402
from spirvjit.ubin.build import Input, build_record, kernel_table, native_variants  # noqa: E402
from spirvjit.ubin.format import Contents  # noqa: E402
from spirvjit.ubin.writer import write_bytes  # noqa: E402

TARGETS = ["gfx90a", "gfx942", "gfx1100", "gfx1201", "sm_80", "sm_90"]
KERNEL_FILES = [
    *sorted((HERE / "kernels").glob("*.cl")),
    *sorted((HERE.parent / "examples" / "kernels").glob("*.cl")),
]
SKIP_FILES = {"tiny.cl"}  # as benchmarks/gpu_codegen.py
RESULTS = HERE / "results" / "ubin_launch_variants.md"


def sizes(path: Path, targets: list[str]) -> dict[str, tuple[int, int, int]]:
    """Per target: (SPIR-V-only file, file with generic code, file with both) in bytes."""
    source = path.read_text()
    spirv = spirvjit.compile_opencl(source).spirv
    program = spirvjit.Program(spirv)
    record = build_record([Input(path.name, source.encode(), "cl")], (), "clang")
    table = kernel_table(program)

    def file_bytes(variants) -> int:
        return len(write_bytes(Contents((spirv,), table, record, tuple(variants))))

    found = {}
    bare = file_bytes(())
    for name in targets:
        generic, common = native_variants(spirv, spirvjit.parse_target(name), {})
        found[name] = (bare, file_bytes([generic]), file_bytes([generic, common]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default=",".join(TARGETS))
    args = parser.parse_args()
    targets = args.targets.split(",")
    started = time.perf_counter()
    rows = {}
    for path in KERNEL_FILES:
        if path.name in SKIP_FILES:
            continue
        rows[path.stem] = sizes(path, targets)
        print(f"{path.stem}: {rows[path.stem]}", file=sys.stderr)
    lines = [
        "# Unified binary size: generic GPU code vs generic + common-launch code",
        "",
        "`python3 benchmarks/ubin_launch_variants.py` (one .ubin per kernel file and target;",
        "bytes of the file as written; growth = what the common launch's code adds to the",
        f"file with the generic code). {time.perf_counter() - started:.0f} s.",
        "",
        "| kernel file | target | SPIR-V only | generic | generic + common | growth |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    per_target = {t: [0, 0, 0] for t in targets}
    for stem, by_target in rows.items():
        for target, (bare, generic, both) in by_target.items():
            growth = (both - generic) / generic
            lines.append(f"| {stem} | {target} | {bare} | {generic} | {both} | +{growth:.0%} |")
            for i, value in enumerate((bare, generic, both)):
                per_target[target][i] += value
    lines += [
        "",
        "Totals over the kernel files:",
        "",
        "| target | SPIR-V only | generic | generic + common | growth |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    total = [0, 0, 0]
    for target, (bare, generic, both) in per_target.items():
        lines.append(
            f"| {target} | {bare} | {generic} | {both} | +{(both - generic) / generic:.0%} |"
        )
        total = [a + b for a, b in zip(total, (bare, generic, both), strict=True)]
    bare, generic, both = total
    lines.append(f"| all | {bare} | {generic} | {both} | +{(both - generic) / generic:.0%} |")
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
