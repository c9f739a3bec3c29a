"""HIP to AMD-flavoured SPIR-V, as ROCm's generic ``amdgcnspirv`` target builds it.

``clang-22 -x hip --offload-arch=amdgcnspirv -nogpuinc -nogpulib --cuda-device-only
-use-spirv-backend -O2 -c kernel.hip`` writes a clang offload bundle; its
``hip-spirv64-amd-amdhsa--amdgcnspirv`` entry (taken out with
clang-offload-bundler-22) is a SPIR-V module whose AMDGCN built-ins are imported
functions (see ``translate/amdgcn.py``).

``#include <hip/hip_runtime.h>`` finds spirvjit's own HIP header
(``frontend/include/hip``): the device-side HIP API written with clang built-ins and
OpenCL.std math, plus declarations of the host API so that a whole sample (``main``,
``hipMalloc``, ``kernel<<<grid, block>>>``) parses. No ROCm install is needed;
``-nogpuinc`` keeps clang from looking for one. Only device code is compiled.

clang's driver builds amdgcnspirv code without optimizing it (``-disable-llvm-passes``:
ROCm optimizes when it JIT-compiles the SPIR-V), so every ``__syncthreads()`` stays a
call to a helper. By default spirvjit runs the same steps itself with LLVM's -O2 in
between: clang to LLVM bitcode, ``opt-22 -O2``, ``llc-22`` with the SPIR-V back end for
the same ``spirv64-amd-amdhsa`` triple. ``optimize=False`` gives the driver's output as
hipcc would make it (offload bundle, unoptimized).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from spirvjit.frontend.alignment_repair import repair_alignments
from spirvjit.frontend.opencl import run_compiler
from spirvjit.toolchain import require_tool

BUNDLE_ENTRY = "hip-spirv64-amd-amdhsa--amdgcnspirv"
INCLUDE_DIR = str(Path(__file__).parent / "include")
_HIP_FLAGS = ("-x", "hip", "--offload-arch=amdgcnspirv", "-nogpuinc", "-nogpulib")
_DEVICE_FLAGS = ("--cuda-device-only", "-use-spirv-backend", "-O2", "-c")
_LLC_FLAGS = ("-O2", "-mtriple=spirv64-amd-amdhsa", "-filetype=obj")


def hip_to_spirv(
    source: str,
    options: Sequence[str] = (),
    *,
    filename: str = "kernel.hip",
    include_dirs: Sequence[str] = (),
    spirvjit_headers: bool = True,
    optimize: bool = True,
) -> bytes:
    """Compile HIP ``source`` for the generic AMD SPIR-V target and return the SPIR-V.

    ``include_dirs`` are searched for ``#include "..."`` and ``<...>`` before spirvjit's
    HIP headers (which ``spirvjit_headers=False`` leaves out, for sources that bring
    their own). ``optimize``: see the module's notes. Raises CompileError with clang's
    diagnostics when compilation fails.
    """
    if os.path.basename(filename) != filename or filename in ("", ".", ".."):
        raise ValueError(f"filename must be a bare file name, got {filename!r}")
    clang = require_tool("clang", "compiling HIP to SPIR-V")
    includes = [f"-I{d}" for d in include_dirs]
    if spirvjit_headers:
        includes.append(f"-I{INCLUDE_DIR}")
    with tempfile.TemporaryDirectory(prefix="spirvjit-") as tmp:
        src = os.path.join(tmp, filename)
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        spv = os.path.join(tmp, "out.spv")
        if optimize:
            opt = require_tool("opt", "optimizing HIP device code")
            llc = require_tool("llc", "writing SPIR-V for HIP device code")
            bc, opt_bc = os.path.join(tmp, "out.bc"), os.path.join(tmp, "out.opt.bc")
            cmd = [clang, *_HIP_FLAGS, "--cuda-device-only", "-emit-llvm", "-c", "-O2"]
            run_compiler([*cmd, *includes, *options, src, "-o", bc], "compile", filename, tmp)
            run_compiler([opt, "-O2", bc, "-o", opt_bc], "optimize", filename, tmp)
            run_compiler([llc, *_LLC_FLAGS, opt_bc, "-o", spv], "translate", filename, tmp)
            with open(spv, "rb") as f:
                return repair_alignments(f.read())[0]
        bundle = os.path.join(tmp, "out.bundle")
        bundler = require_tool("clang-offload-bundler", "extracting SPIR-V from an offload bundle")
        run_compiler(
            [clang, *_HIP_FLAGS, *_DEVICE_FLAGS, *includes, *options, src, "-o", bundle],
            "compile",
            filename,
            tmp,
        )
        unbundle = [bundler, "--unbundle", "--type=o", f"--input={bundle}"]
        unbundle += [f"--targets={BUNDLE_ENTRY}", f"--output={spv}"]
        run_compiler(unbundle, "unbundle", filename, tmp)
        with open(spv, "rb") as f:
            return repair_alignments(f.read())[0]


def read_source(source_or_path: str | os.PathLike) -> tuple[str, str, list[str]]:
    """(source text, file name, include dirs) of a path or of source text.

    A ``PathLike``, or a one-line string naming an existing file, is read from disk;
    its directory is searched for the headers it includes, as when it compiles in place.
    """
    is_path = isinstance(source_or_path, os.PathLike) or (
        "\n" not in source_or_path and os.path.isfile(source_or_path)
    )
    if not is_path:
        return str(source_or_path), "kernel.hip", []
    path = Path(source_or_path)
    name = path.name if path.suffix else path.name + ".hip"
    return path.read_text(encoding="utf-8"), name, [str(path.resolve().parent)]
