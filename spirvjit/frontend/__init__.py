"""Front ends: source languages to SPIR-V, by driving external compilers."""

from spirvjit.frontend.opencl import PRODUCERS, opencl_to_spirv

__all__ = ["PRODUCERS", "opencl_to_spirv"]
