"""The NVIDIA GPU backend: PTX from LLVM's NVPTX back end, cubins from ptxas (the PTX
itself where the CUDA toolkit is not installed: the driver compiles it at load), math
from libdevice, launches through the CUDA driver API (``cuda.py``)."""

from __future__ import annotations

import os
from pathlib import Path

from ...target import Target
from ...toolchain import find_tool, require_tool, run_on_bytes
from ..gpu import devicelib
from ..gpu.backend import OURS, GpuBackend, target_machine
from .abi import NvptxABI

_LIBDEVICE_DIRS = ("/usr/local/cuda/nvvm/libdevice", "/usr/lib/nvidia-cuda-toolkit/libdevice")


class NvptxBackend(GpuBackend):
    kind = "nvptx"
    vendor = "nvidia"
    abi_class = NvptxABI
    # libdevice asks NVVMReflect whether to flush denormals; OpenCL keeps them.
    module_flag = '!{i32 4, !"nvvm-reflect-ftz", i32 0}'
    library_hint = "install the CUDA toolkit's libdevice (or set SPIRVJIT_LIBDEVICE)"

    def device_library(self) -> devicelib.DeviceLibrary | None:
        """libdevice from the CUDA toolkit; SPIRVJIT_LIBDEVICE (a file) overrides the search."""
        cuda = [os.environ.get(v, "") for v in ("CUDA_HOME", "CUDA_PATH")]
        candidates = [Path(os.environ.get("SPIRVJIT_LIBDEVICE", "") or "/nonexistent")]
        dirs = [*(f"{c}/nvvm/libdevice" for c in cuda if c), *_LIBDEVICE_DIRS]
        candidates += [Path(d) / "libdevice.10.bc" for d in dirs]
        return devicelib.first_library("libdevice", tuple(candidates))

    def emit(self, module, target: Target, what: str) -> bytes:
        """A cubin from ptxas, or the PTX itself where ptxas is not installed."""
        ptx = target_machine(target).emit_assembly(module)
        if find_tool("ptxas") is None:
            return ptx.encode()
        ptxas = require_tool("ptxas", f"assembling the PTX of {what} for {target.arch}")
        cmd = [ptxas, f"-arch={target.arch}", "-O3"]
        return run_on_bytes(cmd, ptx.encode(), "in.ptx", "cubin", what, OURS)

    def driver_devices(self):
        from . import cuda

        return cuda.devices()

    def make_context(self, index: int):
        from .cuda import CudaContext

        return CudaContext(index)


BACKEND = NvptxBackend()
