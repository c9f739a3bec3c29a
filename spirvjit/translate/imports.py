"""OpenCL built-in functions that producers leave as calls to imported functions.

clang-22's SPIR-V backend lowers most built-ins to instructions but keeps some
as calls with Itanium-mangled names (``_Z14convert_doublel``,
``_Z18convert_double_rtzm``, ``__to_global``); older producers do the same for
work-item queries. This module gives each a meaning, so a module that only
imports OpenCL built-ins still runs.
"""

from __future__ import annotations

import re

from llvmlite import ir

from ..spirv.grammar import FPRoundingMode, Scope, StorageClass
from ..spirv.module import Instruction
from .amdgcn import call_amdgcn, is_amdgcn_builtin
from .builtins import builtin_of_function
from .function import FunctionTranslator
from .hip_heap import call_hip_heap, is_hip_heap
from .hip_printf import call_hip_printf, is_hip_printf
from .llvm_intrinsics import call_llvm_intrinsic, is_llvm_intrinsic
from .ops_arith import resize_int
from .ops_atomic import compare_exchange, read_modify_write
from .ops_convert import (
    float_to_float,
    float_to_int,
    generic_to_space,
    int_saturate,
    int_to_float,
    lane,
)

# Itanium codes of OpenCL scalar types: (kind, bits, signed).
_SCALAR_CODES = {
    "c": ("int", 8, True),
    "a": ("int", 8, True),
    "h": ("int", 8, False),
    "s": ("int", 16, True),
    "t": ("int", 16, False),
    "i": ("int", 32, True),
    "j": ("int", 32, False),
    "l": ("int", 64, True),
    "m": ("int", 64, False),
    "f": ("float", 32, True),
    "d": ("float", 64, True),
    "Dh": ("float", 16, True),
    "b": ("bool", 1, False),
}
_MANGLED = re.compile(r"_Z(\d+)")
_TO_SPACE = {
    "__to_global": StorageClass.CrossWorkgroup,
    "__to_local": StorageClass.Workgroup,
    "__to_private": StorageClass.Function,
}
_CONVERT = re.compile(
    r"convert_(u?)(char|short|int|long|float|double|half)(\d*)(_sat)?(?:_(rte|rtz|rtp|rtn))?$"
)
_MODES = {
    "rte": FPRoundingMode.RTE,
    "rtz": FPRoundingMode.RTZ,
    "rtp": FPRoundingMode.RTP,
    "rtn": FPRoundingMode.RTN,
}


def demangle(name: str) -> tuple[str, str] | None:
    """(function name, parameter codes) of an Itanium-mangled name, or None."""
    match = _MANGLED.match(name)
    if not match:
        return None
    length = int(match.group(1))
    start = match.end()
    return name[start : start + length], name[start + length :]


def first_parameter_signed(codes: str) -> bool | None:
    """Whether the first parameter is a signed integer (None when it is not an integer)."""
    vector = re.match(r"Dv\d+_", codes)
    if vector:
        codes = codes[vector.end() :]
    code = "Dh" if codes.startswith("Dh") else codes[:1]
    info = _SCALAR_CODES.get(code)
    if info is None or info[0] != "int":
        return None
    return info[2]


def call_imported(t: FunctionTranslator, inst: Instruction, name: str, args: list[int]) -> ir.Value:
    """Lowers a call to the imported function ``name``; raises SpirvError for unknown ones."""
    if is_amdgcn_builtin(name):
        return call_amdgcn(t, inst, name, args)
    if is_llvm_intrinsic(name):
        return call_llvm_intrinsic(t, inst, name, args)
    if is_hip_printf(name):
        return call_hip_printf(t, inst, name, args)
    if is_hip_heap(name):
        return call_hip_heap(t, inst, name, args)
    builtin = builtin_of_function(name)
    ty = t.llvm_type(inst.result_type)
    if builtin is not None:
        if args:
            return t.workitem.fit(t.workitem.component(builtin, _dim(t, args[0])), ty)
        return t.workitem.value(builtin, ty)
    if demangle(name) and demangle(name)[0] == "sub_group_barrier":
        # clang-22 leaves sub_group_barrier(flags[, scope]) imported. Each work-item is
        # its own sub-group, and program order on its thread already orders its memory.
        return None
    if demangle(name) and demangle(name)[0] in _FENCES:
        # clang-22 leaves OpenCL 1.x's mem_fence / read_mem_fence / write_mem_fence(flags)
        # imported, at every -cl-std. They order the work-item's own loads and stores; the
        # flags only narrow the address spaces, so one work-group-scope fence of the kind
        # asked for covers every flag.
        t.b.fence(_FENCES[demangle(name)[0]], t.mt.abi.sync_scope(Scope.Workgroup))
        return None
    if name in _TO_SPACE:
        return generic_to_space(t, t.value(args[0]), _TO_SPACE[name], ty)
    demangled = demangle(name)
    if demangled:
        plain, codes = demangled
        match = _CONVERT.match(plain)
        if match and len(args) == 1:
            return _convert(t, match, codes, t.value(args[0]), ty)
        if plain in _LEGACY_ATOMICS:
            return _legacy_atomic(t, plain, codes, [t.value(a) for a in args])
    raise t.error(
        f"calls '{name}', which the module imports but does not define; "
        "link the module that defines it into this one"
    )


# OpenCL 1.x memory fences: name -> LLVM fence ordering.
_FENCES = {"mem_fence": "acq_rel", "read_mem_fence": "acquire", "write_mem_fence": "release"}

# Atomic built-ins clang-22 leaves as calls: name -> atomicrmw operation. OpenCL 1.x
# spellings, and OpenCL 2.0 fetch operations (their order and scope arguments may be
# run-time values; sequential consistency satisfies every order).
_LEGACY_ATOMICS = {
    f"{prefix}_{op}": op
    for prefix in ("atomic", "atom")
    for op in ("add", "sub", "xchg", "inc", "dec", "min", "max", "and", "or", "xor", "cmpxchg")
} | {
    f"atomic_fetch_{op}{suffix}": op
    for op in ("add", "sub", "min", "max", "and", "or", "xor")
    for suffix in ("", "_explicit")
}


def _legacy_atomic(t: FunctionTranslator, plain: str, codes: str, args: list[ir.Value]) -> ir.Value:
    """atomic_inc(p), atom_min(p, v), atomic_cmpxchg(p, cmp, v), ... with OpenCL 1.x's
    relaxed-but-atomic semantics, and atomic_fetch_* (sequentially consistent)."""
    op = _LEGACY_ATOMICS[plain]
    ptr = args[0]
    pointee = re.sub(r"^P(?:U\d+AS\d+)?[VK]*(?:U7_Atomic)?", "", codes)
    signed = first_parameter_signed(pointee)
    # Address space 3 is __local in clang's OpenCL mangling.
    on_local = codes.startswith("PU3AS3")
    local = on_local and getattr(t.mt.abi, "sequential_workgroups", False)
    order = failure = "seq_cst"
    if not plain.startswith("atomic_fetch_") and getattr(t.mt.abi, "relaxed_legacy_atomics", False):
        # OpenCL 1.x atomics are relaxed by definition (libclc: monotonic): on a GPU a
        # seq_cst one waits for every earlier memory access (s_waitcnt after each
        # ds_add). Their scope is their memory's: the work-group for __local, the device
        # otherwise. The CPU keeps seq_cst: x86 locks the instruction either way.
        scope = t.mt.abi.sync_scope(Scope.Workgroup if on_local else Scope.Device)
        order = f'syncscope("{scope}") monotonic' if scope else "monotonic"
        failure = "monotonic"  # cmpxchg: one syncscope, before both orderings
    if op == "cmpxchg":
        return compare_exchange(t, ptr, args[1], args[2], (order, failure), local)
    if op in ("inc", "dec"):
        one = ir.Constant(t.llvm_type(t.current.result_type), 1)
        return read_modify_write(t, "add" if op == "inc" else "sub", ptr, one, order, local)
    if not isinstance(args[1].type, ir.IntType):
        # atomic_xchg on float (OpenCL 1.1), and cl_ext_float_atomics'
        # atomic_fetch_{add,sub,min,max} on float and double.
        op = {"xchg": "xchg", "add": "fadd", "sub": "fsub", "min": "fmin", "max": "fmax"}.get(op)
        if op is None:
            raise t.error(f"'{plain}' has no floating-point form")
    elif op in ("min", "max"):
        op = op if signed else "u" + op
    return read_modify_write(t, op, ptr, args[1], order, local)


def _cast(t: FunctionTranslator, value: ir.Value, ty: ir.Type) -> ir.Value:
    return value if value.type == ty else t.b.addrspacecast(value, ty)


def _dim(t: FunctionTranslator, value_id: int) -> ir.Value | int:
    inst = t.module.defs.get(value_id)
    if inst is not None and inst.opname in ("OpConstant", "OpConstantNull"):
        return t.mt.constants.int_value(value_id)
    return t.value(value_id)


def _convert(
    t: FunctionTranslator, match: re.Match, codes: str, x: ir.Value, ty: ir.Type
) -> ir.Value:
    dst_unsigned, dst_name, _, sat, mode_name = match.groups()
    mode = _MODES.get(mode_name) if mode_name else None
    dst_float = dst_name in ("float", "double", "half")
    src_signed = first_parameter_signed(codes)
    src_float = not isinstance(lane(x.type), ir.IntType)
    if src_float and dst_float:
        return float_to_float(t, x, ty, mode)
    if src_float:
        return float_to_int(t, x, ty, not dst_unsigned, mode or FPRoundingMode.RTZ, bool(sat))
    signed = bool(src_signed)
    if dst_float:
        return int_to_float(t, x, ty, signed, mode)
    if sat:
        return int_saturate(t, x, ty, signed, not dst_unsigned)
    return resize_int(t, x, ty, signed)
