"""OpenCL C printf on the host CPU, through the C library's printf.

Vector conversions (``%v4f``, ``%v2hlx``) have no C equivalent: when the format
string is a constant the JIT can read, each is rewritten into one conversion per
lane and the vector argument is passed lane by lane. Output is flushed after each
call so it interleaves correctly with everything else the process prints.
"""

from __future__ import annotations

import re

from llvmlite import ir

from ..spirv.module import Instruction
from .function import FunctionTranslator
from .opencl_std import lowers

I8 = ir.IntType(8)
I32 = ir.IntType(32)
DOUBLE = ir.DoubleType()
_VECTOR_SPEC = re.compile(r"%([-+ #0]*\d*(?:\.\d+)?)v(\d+)(hh|hl|h|l)?([diouxXfFeEgGaAc])")
_ANY_SPEC = re.compile(r"%%|%[-+ #0]*\d*(?:\.\d+)?(?:v\d+)?(?:hh|hl|h|ll|l)?[diouxXfFeEgGaAcsp]")


def constant_string(t: FunctionTranslator, value_id: int) -> bytes | None:
    """The bytes of a constant string a pointer id refers to, or None when not constant."""
    inst = t.module.defs.get(value_id)
    while inst is not None and inst.opname in ("OpBitcast", "OpPtrCastToGeneric", "OpCopyObject"):
        inst = t.module.defs.get(inst.operands[0])
    if inst is not None and inst.opname in ("OpInBoundsPtrAccessChain", "OpPtrAccessChain"):
        ops = inst.operands
        if any(t.mt.constants.int_value(i) for i in ops[1:] if _is_constant(t, i)) or not all(
            _is_constant(t, i) for i in ops[1:]
        ):
            return None
        inst = t.module.defs.get(ops[0])
    if inst is None or inst.opname != "OpVariable" or len(inst.operands) < 2:
        return None
    chars = t.mt.constants.python(inst.operands[1])
    if not isinstance(chars, list) or not all(isinstance(c, int) for c in chars):
        return None
    return bytes(chars).split(b"\0", 1)[0]


def _is_constant(t: FunctionTranslator, value_id: int) -> bool:
    inst = t.module.defs.get(value_id)
    return inst is not None and inst.opname in ("OpConstant", "OpConstantNull")


def _c_format(spec_flags: str, lanes: int, length: str | None, conversion: str) -> str:
    # C has no 'hl' (OpenCL's "32-bit" for vectors); a float lane is passed as double.
    c_length = {"hh": "hh", "h": "h", "l": "l"}.get(length or "", "")
    return ",".join(f"%{spec_flags}{c_length}{conversion}" for _ in range(lanes))


def _promote(t: FunctionTranslator, value: ir.Value) -> ir.Value:
    """C's default argument promotions for one scalar."""
    if isinstance(value.type, (ir.FloatType, ir.HalfType)):
        return t.b.fpext(value, DOUBLE)
    if isinstance(value.type, ir.IntType) and value.type.width < 32:
        return t.b.sext(value, I32)
    return value


@lowers("printf")
def printf(t: FunctionTranslator, ty: ir.Type, args: list[ir.Value], inst: Instruction) -> ir.Value:
    if not t.mt.abi.host_libc:
        raise t.error(
            "printf is not supported on GPU targets yet; remove it or run on the host CPU"
        )
    # The arguments are variadic: take them from the instruction itself.
    fmt_ptr = t.value(inst.operands[2])
    values = [t.value(i) for i in inst.operands[3:]]
    text = constant_string(t, inst.operands[2])
    call_args: list[ir.Value] = []
    if text is not None and b"%v" in text:
        decoded = text.decode("latin-1")
        pieces, position, arg_index = [], 0, 0
        for match in _ANY_SPEC.finditer(decoded):
            pieces.append(decoded[position : match.start()])
            position = match.end()
            vector = _VECTOR_SPEC.fullmatch(match.group(0))
            if match.group(0) == "%%":
                pieces.append("%%")
                continue
            value = values[arg_index] if arg_index < len(values) else None
            arg_index += 1
            if vector and value is not None and isinstance(value.type, ir.VectorType):
                flags, lanes, length, conversion = vector.groups()
                pieces.append(_c_format(flags, int(lanes), length, conversion))
                for lane in range(min(int(lanes), value.type.count)):
                    element = t.b.extract_element(value, ir.Constant(I32, lane))
                    call_args.append(_promote(t, element))
            else:
                pieces.append(match.group(0))
                if value is not None:
                    call_args.append(_promote(t, value))
        pieces.append(decoded[position:])
        data = ("".join(pieces)).encode("latin-1") + b"\0"
        fmt_ptr = _string_constant(t, data)
    else:
        call_args = [_promote(t, v) for v in values]
    printf_fn = t.mt.declare("printf", ir.FunctionType(I32, [ir.PointerType()], var_arg=True))
    written = t.b.call(printf_fn, [fmt_ptr, *call_args])
    fflush = t.mt.declare("fflush", ir.FunctionType(I32, [ir.PointerType()]))
    t.b.call(fflush, [ir.Constant(ir.PointerType(), None)])
    # OpenCL's printf returns 0 on success and -1 on failure, not a character count.
    failed = t.b.icmp_signed("<", written, ir.Constant(I32, 0))
    result = t.b.select(failed, ir.Constant(I32, -1), ir.Constant(I32, 0))
    return t.b.trunc(result, ty) if ty.width < 32 else result


def _string_constant(t: FunctionTranslator, data: bytes) -> ir.Value:
    ty = ir.ArrayType(I8, len(data))
    name = f"printf.fmt.{len(t.mt.llmodule.globals)}"
    gv = ir.GlobalVariable(t.mt.llmodule, ty, name)
    gv.type = ir.PointerType()  # opaque pointers, as everywhere
    gv.global_constant = True
    gv.linkage = "internal"
    gv.initializer = ir.Constant(ty, bytearray(data))
    return gv
