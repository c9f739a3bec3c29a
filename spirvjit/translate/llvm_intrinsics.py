"""Generic LLVM intrinsics that clang's SPIR-V back end leaves as imported functions.

For ``--offload-arch=amdgcnspirv`` (HIP), clang-22 keeps every LLVM intrinsic it does
not lower itself as a call to an import named after it, dots written as underscores
and the overload types appended: ``llvm.ctpop.i32`` is ``spirv.llvm_ctpop_i32``,
``llvm.memcpy.p4.p4.i64`` is ``spirv.llvm_memcpy_p4_p4_i64``. Each becomes the LLVM
intrinsic of the same name on every target, its overload suffix rebuilt from the
translated argument types (address spaces differ per target). Floating-point math
(``llvm.sin.f32``, ``llvm.pow.f64``, ...) goes through the OpenCL.std lowering instead,
which meets OpenCL's accuracy and binds the GPUs' device libraries, where the bare
intrinsic would not compile for NVIDIA. Markers (lifetimes, assumptions) are dropped.
"""

from __future__ import annotations

import re

from llvmlite import ir

from ..spirv.grammar import Op
from ..spirv.module import Instruction
from .function import FunctionTranslator, overload_suffix

PREFIX = "spirv.llvm_"
_TYPE_TOKEN = re.compile(r"^(?:i\d+|f\d+|bf16|p\d+|v\d+(?:i|f)\d+)$")

# LLVM math intrinsic -> the OpenCL.std instruction computing the same function.
_SAME_NAME = (
    "sin cos tan asin acos atan atan2 sinh cosh tanh exp exp2 exp10 log log2 log10 pow "
    "sqrt fabs floor ceil trunc round rint copysign ldexp fma"
)
_MATH = {
    **{name: name for name in _SAME_NAME.split()},
    "nearbyint": "rint",
    "roundeven": "rint",
    "minnum": "fmin",
    "maxnum": "fmax",
    "fmuladd": "fma",
    "powi": "pown",
}
# Intrinsics with no effect on the result: optimizer hints.
_MARKERS = frozenset(
    {
        "lifetime.start",
        "lifetime.end",
        "assume",
        "experimental.noalias.scope.decl",
        "invariant.start",
        "invariant.end",
        "var.annotation",
        "sideeffect",
        "donothing",
    }
)


def is_llvm_intrinsic(name: str) -> bool:
    return name.startswith(PREFIX)


def intrinsic_base(name: str) -> str:
    """``spirv.llvm_umul_with_overflow_i32`` -> ``umul.with.overflow``."""
    parts = name[len(PREFIX) :].split("_")
    while len(parts) > 1 and _TYPE_TOKEN.match(parts[-1]):
        parts.pop()
    return ".".join(parts)


def call_llvm_intrinsic(
    t: FunctionTranslator, inst: Instruction, name: str, args: list[int]
) -> ir.Value | None:
    base = intrinsic_base(name)
    void = t.types.spv(inst.result_type).kind == "void"
    ty = ir.VoidType() if void else t.llvm_type(inst.result_type)
    if base in _MARKERS:
        return None
    values = [t.value(a) for a in args]
    if base in _MATH:
        return _opencl_math(t, inst, _MATH[base], ty, values)
    if base == "frexp":
        from .opencl_std import frexp_parts

        mantissa, exponent = frexp_parts(t, values[0].type, values[0])
        result = t.b.insert_value(ir.Constant(ty, ir.Undefined), mantissa, 0)
        return t.b.insert_value(result, exponent, 1)
    if base in ("memcpy", "memmove"):
        dst, src, length = values[:3]
        suffix = f"p{dst.type.addrspace}.p{src.type.addrspace}.{overload_suffix(length.type)}"
        return t.intrinsic(f"llvm.{base}.{suffix}", ir.VoidType(), values)
    if base == "memset":
        dst, _, length = values[:3]
        suffix = f"p{dst.type.addrspace}.{overload_suffix(length.type)}"
        return t.intrinsic(f"llvm.memset.{suffix}", ir.VoidType(), values)
    if base in ("trap", "debugtrap", "ubsantrap"):
        return t.intrinsic(f"llvm.{base}", ir.VoidType(), values)
    # Integer and bit intrinsics (ctpop, ctlz, cttz, bitreverse, bswap, fshl, fshr,
    # umin/umax/smin/smax, abs, *.sat, *.with.overflow, ...) are overloaded on the type
    # of their first argument.
    if not values:
        return t.intrinsic(f"llvm.{base}", ty, values)
    return t.intrinsic(f"llvm.{base}.{overload_suffix(values[0].type)}", ty, values)


def _opencl_math(
    t: FunctionTranslator, inst: Instruction, name: str, ty: ir.Type, values: list[ir.Value]
) -> ir.Value:
    """The OpenCL.std lowering of ``name``, given the OpExtInst it expects (lowerings
    read the instruction number to tell related functions apart)."""
    from ..spirv.grammar import OpenCLStd
    from .opencl_std import LOWERINGS

    if name == "pown" and values[1].type.width != 32:
        values[1] = t.b.sext(values[1], ir.IntType(32))
    ext = Instruction(
        Op.OpExtInst,
        "OpExtInst",
        inst.result_type,
        inst.result_id,
        [0, OpenCLStd[name].value],
        ("IdResultType", "IdResult"),
        inst.offset,
    )
    return LOWERINGS[name](t, ty, values, ext)
