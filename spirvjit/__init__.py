"""spirvjit: compile compute kernels once to SPIR-V, JIT them for the device present.

Public API::

    prog = spirvjit.compile_opencl(source, options=["-cl-std=CL3.0"])
    prog = spirvjit.compile_hip("saxpy.hip")  # HIP, device code only
    prog.kernel("saxpy_kernel")(a, x, y, n, grid=(n // 256,), block=(256,))
    prog = spirvjit.load_spirv(path_or_bytes, spec_constants={1: 4})
    prog.kernel("saxpy")(y, x, np.float32(2), global_size=n)
    gpu = spirvjit.devices()[-1]  # an NVIDIA or AMD GPU, where one is present
    prog.kernel("saxpy")(y, x, np.float32(2), global_size=n, device=gpu)
    x = spirvjit.asarray(x_host, device=gpu)  # stays on the GPU across launches
    y = spirvjit.zeros(n, device=gpu)
    prog.kernel("saxpy")(y, x, np.float32(2), global_size=n, device=gpu)
    y.to_numpy()
    stream = spirvjit.Stream(gpu)  # queued launches: device memory only
    prog.kernel("saxpy")(y, x, np.float32(2), global_size=n, stream=stream)
    stream.synchronize()

PyTorch: ``spirvjit.torch`` (imported on its own) launches on tensors in place and
registers kernels as ``torch.library`` custom operators; see docs/torch.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from . import config as _config
from .arguments import LocalMemory
from .array import Array, asarray, empty, zeros
from .device import Device, devices
from .errors import BinaryFormatError, CompileError, LaunchError, SpirvError, SpirvJitError
from .program import JIT_OPTIONS, Kernel, Program
from .stream import Event, Stream
from .target import Target, parse_target

# SPIRVJIT_DEBUG=1: the stderr handler is in place before the first line is logged (the
# compiler's debug-level decisions come before the per-kernel summary that used to add it).
_config.debug()

__all__ = [
    "Array",
    "asarray",
    "empty",
    "zeros",
    "Device",
    "Event",
    "Stream",
    "devices",
    "BinaryFormatError",
    "CompileError",
    "Kernel",
    "LaunchError",
    "LocalMemory",
    "Program",
    "SpirvError",
    "SpirvJitError",
    "Target",
    "parse_target",
    "build",
    "compile_hip",
    "compile_opencl",
    "load",
    "load_package_kernels",
    "load_spirv",
    "Constant",
    "func",
    "kernel",
    "lang",
]

__version__ = "0.1.0"


def compile_opencl(
    source: str,
    options: Sequence[str] = (),
    *,
    producer: str | None = None,
    spec_constants: Mapping[int, object] | None = None,
    filename: str = "kernel.cl",
) -> Program:
    """Compiles OpenCL C to SPIR-V with clang (or clang-15 + llvm-spirv: producer="translator").

    Without a ``producer``, ``-g`` in ``options`` chooses the translator (the only one that
    emits line and variable information, see docs/debugging.md), else clang. The SPIR-V
    of a source already compiled (same options and headers) comes from the source cache:
    see spirvjit/frontend/source_cache.py.
    """
    from .frontend.opencl import default_producer
    from .frontend.source_cache import opencl_to_spirv

    if producer is None:
        producer = default_producer(options)

    spirv = opencl_to_spirv(source, options, producer=producer, filename=filename)
    jit_options = [o for o in options if o in JIT_OPTIONS]  # the JIT's too (clBuildProgram)
    return Program(spirv, spec_constants, name=filename, options=jit_options)


def compile_hip(
    source_or_path: str | os.PathLike,
    options: Sequence[str] = (),
    *,
    spec_constants: Mapping[int, object] | None = None,
) -> Program:
    """Compiles a HIP program's device code (``clang --offload-arch=amdgcnspirv``).

    ``source_or_path``: source text, or the path of a ``.hip`` file (its directory is
    searched for the headers it includes). ``#include <hip/hip_runtime.h>`` finds
    spirvjit's own HIP header, so no ROCm install is needed. Kernels are found by their
    source names: ``prog.kernel("saxpy_kernel")``, ``prog.kernel("reduce<float, 256>")``.
    """
    from .frontend.hip import read_source
    from .frontend.source_cache import hip_to_spirv  # clang once per source

    source, filename, include_dirs = read_source(source_or_path)
    spirv = hip_to_spirv(source, options, filename=filename, include_dirs=include_dirs)
    return Program(spirv, spec_constants, name=filename)


def load_spirv(
    path_or_bytes: str | os.PathLike | bytes,
    spec_constants: Mapping[int, object] | None = None,
    options: Sequence[str] = (),
) -> Program:
    """Loads a SPIR-V module from a file path or bytes; spec constants are set by SpecId.
    ``options``: JIT build options (``-cl-fp32-correctly-rounded-divide-sqrt``)."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return Program(bytes(path_or_bytes), spec_constants, options=options)
    path = os.fspath(path_or_bytes)
    with open(path, "rb") as f:
        return Program(f.read(), spec_constants, name=os.path.basename(path), options=options)


def __getattr__(name: str):
    # build and load live in spirvjit.ubin.api; importing it on first use keeps the
    # unified-binary modules out of `import spirvjit`.
    if name in ("build", "load"):
        from .ubin import api

        return getattr(api, name)
    if name in ("load_package_kernels", "warmup"):  # kernels shipped in packages
        from . import packaging

        return getattr(packaging, name)
    # Python kernels (kernel, func, Constant, lang): loaded on first use likewise.
    if name in ("kernel", "func"):
        from .frontend import python

        return getattr(python, name)
    if name in ("lang", "Constant"):
        import importlib  # not `from . import lang`: that asks this __getattr__ again

        lang = importlib.import_module(".lang", __name__)
        return lang if name == "lang" else lang.Constant
    raise AttributeError(f"module 'spirvjit' has no attribute {name!r}")
