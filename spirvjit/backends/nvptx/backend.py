"""The NVIDIA GPU backend: PTX from LLVM's NVPTX back end, cubins from ptxas (the PTX
itself where the CUDA toolkit is not installed: the driver compiles it at load), math
from libdevice, launches through the CUDA driver API (``cuda.py``)."""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from ...errors import CompileError
from ...target import Target
from ...toolchain import find_tool, require_tool, run_on_bytes
from ...translate.kernel_ir import parse_ir
from ..gpu import devicelib
from ..gpu.backend import OURS, GpuBackend, target_machine
from .abi import NvptxABI
from .block_order import taken_blocks_after_branches
from .narrow_ids import narrow_truncated_sums
from .pointer_loops import unroll_like_index_form

log = logging.getLogger("spirvjit")

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

    def optimize(self, module, target: Target, symbol: str):
        """O3, with each innermost pointer-walking loop unrolled as often as LLVM unrolls
        its index form, clang's native IR (``pointer_loops.py``: a trial O3 of the kernel
        with those loops in index form tells how often)."""

        def trial(text: str) -> str:
            return str(super(NvptxBackend, self).optimize(parse_ir(text, symbol), target, symbol))

        try:
            text, counted = unroll_like_index_form(str(module), trial)
        except CompileError as exc:
            # The trial's IR rejected (a bug of the rewrite), or what the real O3 is about
            # to report too (a missing libdevice): either way, O3 decides alone.
            log.warning("spirvjit: no unroll trial for %s (%s)", symbol, exc)
            counted = 0
        if counted:
            module = parse_ir(text, module.name)
        return super().optimize(module, target, symbol)

    def after_o3(self, text: str) -> tuple[str, int]:
        """Ids a kernel uses as ints computed in 32 bits (``narrow_ids.py``); an ``if``'s
        taken block after its branch, as clang orders them (``block_order.py``)."""
        text, narrowed = narrow_truncated_sums(text)
        text, moved = taken_blocks_after_branches(text)
        return text, narrowed + moved

    def assembly(self, module, target: Target) -> str:
        return without_ptxas_unrolling(target_machine(target).emit_assembly(module))

    def emit(self, module, target: Target, what: str) -> bytes:
        """A cubin from ptxas, or the PTX itself where ptxas is not installed."""
        ptx = self.assembly(module, target)
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


def without_ptxas_unrolling(ptx: str) -> str:
    """``ptx`` with a module-scope ``.pragma "nounroll"``: ptxas unrolls no loop again.

    LLVM's loop unroller (with NVPTX's cost model) has already unrolled what it found
    worth it. ptxas unrolls a loop a second time only where it ends in a conditional
    branch back to its header, which is the layout of spirvjit's loops but not of
    clang's native OpenCL build (an exit branch then ``bra.uni`` back): n-body's inner
    loop took 240 SASS instructions and 32 registers instead of native's 96 and 22.
    The pragma gives both builds the same loops, whatever the block layout. One kernel
    per module, so the module scope is the kernel's.
    """
    header = re.search(r"^\.address_size \d+\n", ptx, re.M)
    if header is None:  # not what the NVPTX back end writes: leave it to ptxas
        return ptx
    return f'{ptx[: header.end()]}.pragma "nounroll";\n{ptx[header.end() :]}'


BACKEND = NvptxBackend()
