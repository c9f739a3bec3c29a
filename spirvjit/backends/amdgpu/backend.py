"""The AMD GPU backend: HSA code objects (code object v5) linked by ld.lld, math from
libclc, launches through the HIP runtime (``hip.py``)."""

from __future__ import annotations

import os
from pathlib import Path

from ...target import Target
from ...toolchain import require_tool, run_on_bytes
from ..gpu import devicelib
from ..gpu.backend import OURS, GpuBackend, target_machine
from .abi import DEFAULT_GROUP_LIMIT, AmdgpuABI, flat_work_group_size
from .multiply import sign_extend_multiplies

_LIBCLC_DIRS = ("/usr/lib/clc", "/usr/lib/llvm-22/lib/clc", "/usr/share/clc")


class AmdgpuBackend(GpuBackend):
    kind = "amdgpu"
    vendor = "amd"
    abi_class = AmdgpuABI
    # HSA code object v5: what ROCm 6 loads and LLVM 22 writes by default for amdhsa.
    module_flag = '!{i32 1, !"amdhsa_code_object_version", i32 500}'
    library_hint = "install Debian's libclc-22 (or set SPIRVJIT_LIBCLC_DIR)"

    def device_library(self) -> devicelib.DeviceLibrary | None:
        """libclc built for amdgcn-amd-amdhsa (Debian's libclc-22, from the same LLVM as
        llvmlite); SPIRVJIT_LIBCLC_DIR overrides the search."""
        dirs = [os.environ.get("SPIRVJIT_LIBCLC_DIR", ""), *_LIBCLC_DIRS]
        candidates = tuple(Path(d) / "amdgcn-amd-amdhsa.bc" for d in dirs if d)
        return devicelib.first_library("libclc", candidates)

    def group_limit(self, signature) -> int | None:
        """Kernels without reqd_work_group_size are built for groups of up to 256."""
        return None if signature.required_local_size else DEFAULT_GROUP_LIMIT

    def kernel_ir(self, translation, target: Target, symbol: str, specialization=()) -> str:
        text = super().kernel_ir(translation, target, symbol, specialization)
        limit = dict(specialization).get("max_group_size")
        if limit is not None:  # a variant for launches with larger groups
            text = text.replace(
                flat_work_group_size(DEFAULT_GROUP_LIMIT), flat_work_group_size(int(limit))
            )
        return text

    def after_o3(self, text: str) -> tuple[str, int]:
        """64-bit multiplies of sign-extended ints get both operands as sign extensions,
        so they stay one v_mad_i64_i32 (``multiply.py``)."""
        return sign_extend_multiplies(text)

    def emit(self, module, target: Target, what: str) -> bytes:
        """LLVM's relocatable object with the HSA metadata note, linked by ld.lld into the
        shared object the HIP runtime loads."""
        obj = target_machine(target).emit_object(module)
        lld = require_tool("ld.lld", f"linking the AMD code object of {what}")
        return run_on_bytes([lld, "-shared", "--no-undefined"], obj, "in.o", "hsaco", what, OURS)

    def load(self, program, kernel: str, device):
        """A bundle's native code object where one matches the device and fits the
        kernel (``native.py``), else the JIT's code."""
        if program.offload_code:
            from ...offload_bundle import native_entry
            from .native import load_native

            entry = native_entry(program.offload_code, device.target.name)
            if entry is not None:
                loaded = load_native(self, program, kernel, device, entry)
                if loaded is not None:
                    return loaded
        return super().load(program, kernel, device)

    def driver_devices(self):
        from . import hip

        return hip.devices()

    def make_context(self, index: int):
        from .hip import HipContext

        return HipContext(index)


BACKEND = AmdgpuBackend()
