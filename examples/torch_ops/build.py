"""Builds ops.cl into torch_ops.ubin: the SPIR-V (portable: any CPU or GPU JITs it) and,
with --target, native variants (e.g. ``--target host`` to skip the JIT here).

    python3 examples/torch_ops/build.py [--target host,x86-64-v3] [-o torch_ops.ubin]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import spirvjit

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "ops.cl"
UBIN = HERE / "torch_ops.ubin"


def build(path: Path = UBIN, targets: tuple[str, ...] = ()) -> Path:
    """Writes the .ubin of ops.cl to ``path`` and returns it."""
    spirvjit.build(SOURCE, path, targets=targets, options=["-cl-std=CL3.0"])
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, default=UBIN)
    parser.add_argument("--target", default="", help="native variants, comma-separated")
    args = parser.parse_args()
    targets = tuple(t for t in args.target.split(",") if t)
    print(build(args.output, targets))


if __name__ == "__main__":
    main()
