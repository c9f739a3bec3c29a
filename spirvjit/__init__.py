"""spirvjit: compile compute kernels once to SPIR-V, JIT them for the device present.

Public API::

    prog = spirvjit.compile_opencl(source, options=["-cl-std=CL3.0"])
    prog = spirvjit.load_spirv(path_or_bytes, spec_constants={1: 4})
    prog.kernel("saxpy")(y, x, np.float32(2), global_size=n)
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from .backends.cpu.launcher import LocalMemory
from .device import Device, devices
from .errors import BinaryFormatError, CompileError, LaunchError, SpirvError, SpirvJitError
from .program import Kernel, Program
from .target import Target

__all__ = [
    "Device",
    "devices",
    "BinaryFormatError",
    "CompileError",
    "Kernel",
    "LaunchError",
    "LocalMemory",
    "Program",
    "SpirvError",
    "SpirvJitError",
    "build",
    "compile_opencl",
    "load",
    "load_spirv",
]

__version__ = "0.1.0"


def compile_opencl(
    source: str,
    options: Sequence[str] = (),
    *,
    producer: str = "clang",
    spec_constants: Mapping[int, object] | None = None,
    filename: str = "kernel.cl",
) -> Program:
    """Compiles OpenCL C to SPIR-V with clang (or clang-15 + llvm-spirv: producer="translator")."""
    from .frontend.opencl import opencl_to_spirv

    spirv = opencl_to_spirv(source, options, producer=producer, filename=filename)
    return Program(spirv, spec_constants, name=filename)


def load_spirv(
    path_or_bytes: str | os.PathLike | bytes, spec_constants: Mapping[int, object] | None = None
) -> Program:
    """Loads a SPIR-V module from a file path or bytes; spec constants are set by SpecId."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return Program(bytes(path_or_bytes), spec_constants)
    path = os.fspath(path_or_bytes)
    with open(path, "rb") as f:
        return Program(f.read(), spec_constants, name=os.path.basename(path))


def build(
    sources_or_spirv: str | bytes | os.PathLike | Sequence[str | bytes | os.PathLike],
    path: str | os.PathLike,
    *,
    targets: Sequence[str | Target] = (),
    options: Sequence[str] = (),
    embed_source: bool = False,
    producer: str = "clang",
    spec_constants: Mapping[int, int | float | bool] | None = None,
) -> None:
    """Writes a unified binary (.ubin): one SPIR-V module plus native code for ``targets``.

    Inputs: OpenCL C text (str), a SPIR-V module (bytes), files (pathlib.Path: .cl,
    .spv, .spvasm, .ll, .bc) or a list of these, linked into one module. Targets:
    "host", "generic", "x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4" or Target objects.
    """
    from .ubin.api import build as build_ubin

    build_ubin(
        sources_or_spirv,
        path,
        targets=targets,
        options=options,
        embed_source=embed_source,
        producer=producer,
        spec_constants=spec_constants,
    )


def load(
    path_or_bytes: str | os.PathLike | bytes,
    spec_constants: Mapping[int, object] | None = None,
    *,
    module: int | None = None,
) -> Program:
    """Loads a unified binary, with the native variant chosen for this machine, if any."""
    from .ubin.api import load as load_ubin

    return load_ubin(path_or_bytes, spec_constants, module=module)
