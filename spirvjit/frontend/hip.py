"""HIP to AMD-flavoured SPIR-V, as ROCm's generic ``amdgcnspirv`` target builds it.

``clang-22 -x hip --offload-arch=amdgcnspirv -nogpuinc -nogpulib --cuda-device-only
-use-spirv-backend -O2 -c kernel.hip`` writes a clang offload bundle; its
``hip-spirv64-amd-amdhsa--amdgcnspirv`` entry (taken out with
clang-offload-bundler-22) is a SPIR-V module whose AMDGCN built-ins are imported
functions (see ``translate/amdgcn.py``). No HIP headers are used (``-nogpuinc``):
sources spell HIP's names with clang built-ins or bring their own definitions.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence

from spirvjit.frontend.opencl import run_compiler
from spirvjit.toolchain import require_tool

BUNDLE_ENTRY = "hip-spirv64-amd-amdhsa--amdgcnspirv"
_HIP_FLAGS = ("-x", "hip", "--offload-arch=amdgcnspirv", "-nogpuinc", "-nogpulib")
_DEVICE_FLAGS = ("--cuda-device-only", "-use-spirv-backend", "-O2", "-c")


def hip_to_spirv(
    source: str, options: Sequence[str] = (), *, filename: str = "kernel.hip"
) -> bytes:
    """Compile HIP ``source`` for the generic AMD SPIR-V target and return the SPIR-V.

    Raises CompileError with clang's diagnostics when compilation fails.
    """
    if os.path.basename(filename) != filename or filename in ("", ".", ".."):
        raise ValueError(f"filename must be a bare file name, got {filename!r}")
    clang = require_tool("clang", "compiling HIP to SPIR-V")
    bundler = require_tool("clang-offload-bundler", "extracting SPIR-V from a HIP offload bundle")
    with tempfile.TemporaryDirectory(prefix="spirvjit-") as tmp:
        src = os.path.join(tmp, filename)
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        bundle, spv = os.path.join(tmp, "out.bundle"), os.path.join(tmp, "out.spv")
        run_compiler(
            [clang, *_HIP_FLAGS, *_DEVICE_FLAGS, *options, src, "-o", bundle],
            "compile",
            filename,
            tmp,
        )
        unbundle = [bundler, "--unbundle", "--type=o", f"--input={bundle}"]
        unbundle += [f"--targets={BUNDLE_ENTRY}", f"--output={spv}"]
        run_compiler(unbundle, "unbundle", filename, tmp)
        with open(spv, "rb") as f:
            return f.read()
