"""Thin ctypes bindings to the GPU drivers (CUDA driver API, HIP runtime).

They launch kernels that are already compiled (cubin/PTX, AMD code objects) and
move buffers; nothing here compiles. Importing ``spirvjit.runtime.cuda`` or
``spirvjit.runtime.hip`` loads no library: each opens its driver on first use, so
machines without a GPU pay nothing.
"""

from .common import GpuDeviceInfo, GpuDriverError

__all__ = ["GpuDeviceInfo", "GpuDriverError"]
