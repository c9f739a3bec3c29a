"""Kernels written in Python: ``@spirvjit.kernel`` and ``@spirvjit.func``.

The Python AST is lowered to LLVM IR (llvmlite.ir) shaped like clang's OpenCL C output,
then compiled to SPIR-V by the SPIR-V back end inside llvmlite's LLVM: no external tool.
The SPIR-V runs through spirvjit's ordinary pipeline (Program, cache, unified binaries).
"""

from __future__ import annotations

from collections.abc import Sequence

from .compiler import HelperFunction, KernelFunction, python_to_spirv


def kernel(fn=None, *, local_size: Sequence[int] | None = None):
    """Marks a Python function as a kernel: ``@kernel`` or ``@kernel(local_size=(16, 16))``
    (the required work-group size, OpenCL's reqd_work_group_size)."""
    if fn is None:
        return lambda f: KernelFunction(f, local_size)
    return KernelFunction(fn, local_size)


def func(fn):
    """Marks a Python function as a helper that kernels can call."""
    return HelperFunction(fn)


__all__ = ["HelperFunction", "KernelFunction", "func", "kernel", "python_to_spirv"]
