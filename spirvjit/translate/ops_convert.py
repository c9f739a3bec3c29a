"""Conversions, with the FPRoundingMode and SaturatedConversion decorations honoured.

LLVM converts float→int by truncation and int→float / float narrowing by
round-to-nearest-even. The other OpenCL rounding modes are derived from that
result: it is compared exactly with the input and stepped one ULP where it
went the wrong way. That keeps every mode exact without touching the FP
environment.
"""

from __future__ import annotations

from llvmlite import ir

from ..spirv.grammar import Decoration, FPRoundingMode, StorageClass
from ..spirv.module import Instruction
from .function import FunctionTranslator, handles, overload_suffix
from .ops_arith import int_type_like, resize_int

I1 = ir.IntType(1)
I64 = ir.IntType(64)

_MANTISSA_BITS = {ir.HalfType: 11, ir.FloatType: 24, ir.DoubleType: 53}


def lane(ty: ir.Type) -> ir.Type:
    return ty.element if isinstance(ty, ir.VectorType) else ty


def like(ty: ir.Type, element: ir.Type) -> ir.Type:
    """A type with ``ty``'s lane count and ``element`` lanes."""
    return ir.VectorType(element, ty.count) if isinstance(ty, ir.VectorType) else element


def rounding_mode(t: FunctionTranslator, inst: Instruction) -> int | None:
    decos = t.decorated(inst.result_id, Decoration.FPRoundingMode)
    return decos[0].operands[0] if decos else None


def saturated(t: FunctionTranslator, inst: Instruction) -> bool:
    return bool(t.decorated(inst.result_id, Decoration.SaturatedConversion))


def round_to_integral(t: FunctionTranslator, x: ir.Value, mode: int | None) -> ir.Value:
    name = {
        FPRoundingMode.RTE: "rint",
        FPRoundingMode.RTP: "ceil",
        FPRoundingMode.RTN: "floor",
    }.get(mode)
    if name is None:
        return x
    return t.intrinsic(f"llvm.{name}.{overload_suffix(x.type)}", x.type, [x])


def float_to_int(
    t: FunctionTranslator, x: ir.Value, ty: ir.Type, signed: bool, mode, sat: bool
) -> ir.Value:
    x = round_to_integral(t, x, mode)
    if sat:
        name = "fptosi" if signed else "fptoui"
        return t.intrinsic(
            f"llvm.{name}.sat.{overload_suffix(ty)}.{overload_suffix(x.type)}", ty, [x]
        )
    return t.b.fptosi(x, ty) if signed else t.b.fptoui(x, ty)


def step_ulp(t: FunctionTranslator, r: ir.Value, up: ir.Value) -> ir.Value:
    """``r`` moved one ULP towards +inf where ``up``, else towards -inf (r ≠ 0)."""
    ity = int_type_like(r.type)
    bits = t.b.bitcast(r, ity)
    negative = t.b.icmp_signed("<", bits, t.constant(ity, 0))
    # Magnitude grows when moving away from zero: up on positives, down on negatives.
    grow = t.b.xor(up, negative)
    one = t.constant(ity, 1)
    return t.b.bitcast(t.b.select(grow, t.b.add(bits, one), t.b.sub(bits, one)), r.type)


def adjust_rounding(
    t: FunctionTranslator,
    r: ir.Value,
    too_big: ir.Value,
    too_small: ir.Value,
    x_negative: ir.Value,
    mode,
) -> ir.Value:
    """Turns round-to-nearest ``r`` into ``mode`` given how it compares with the exact value."""
    if mode == FPRoundingMode.RTP:
        return t.b.select(too_small, step_ulp(t, r, t.constant(like(r.type, I1), 1)), r)
    if mode == FPRoundingMode.RTN:
        return t.b.select(too_big, step_ulp(t, r, t.constant(like(r.type, I1), 0)), r)
    if mode == FPRoundingMode.RTZ:
        down = t.b.and_(too_big, t.b.not_(x_negative))
        up = t.b.and_(too_small, x_negative)
        stepped = step_ulp(t, r, up)
        return t.b.select(t.b.or_(down, up), stepped, r)
    return r


def int_to_float(t: FunctionTranslator, x: ir.Value, ty: ir.Type, signed: bool, mode) -> ir.Value:
    r = t.b.sitofp(x, ty) if signed else t.b.uitofp(x, ty)
    width = lane(x.type).width - (1 if signed else 0)
    if mode in (None, FPRoundingMode.RTE) or width <= _MANTISSA_BITS[type(lane(ty))]:
        return r
    # 2^width is the first value past the integer range; compare in the integer domain.
    limit = t.constant(ty, float(2**width))
    over = t.b.fcmp_unordered(">=", r, limit)
    under = t.b.fcmp_ordered("<", r, t.b.fneg(limit)) if signed else t.constant(like(ty, I1), 0)
    in_range_r = t.b.select(t.b.or_(over, under), t.constant(ty, 0.0), r)
    back = t.b.fptosi(in_range_r, x.type) if signed else t.b.fptoui(in_range_r, x.type)
    cmp = t.b.icmp_signed if signed else t.b.icmp_unsigned
    too_big = t.b.or_(over, t.b.and_(t.b.not_(under), cmp(">", back, x)))
    too_small = t.b.or_(under, t.b.and_(t.b.not_(over), cmp("<", back, x)))
    negative = (
        t.b.icmp_signed("<", x, t.constant(x.type, 0)) if signed else t.constant(like(ty, I1), 0)
    )
    return adjust_rounding(t, r, too_big, too_small, negative, mode)


def float_to_float(t: FunctionTranslator, x: ir.Value, ty: ir.Type, mode) -> ir.Value:
    src_bits = _MANTISSA_BITS[type(lane(x.type))]
    dst_bits = _MANTISSA_BITS[type(lane(ty))]
    if dst_bits > src_bits:
        return t.b.fpext(x, ty)
    if dst_bits == src_bits:
        return x
    r = t.b.fptrunc(x, ty)
    if mode in (None, FPRoundingMode.RTE):
        return r
    back = t.b.fpext(r, x.type)
    too_big = t.b.fcmp_ordered(">", back, x)
    too_small = t.b.fcmp_ordered("<", back, x)
    negative = t.b.fcmp_ordered("<", x, t.constant(x.type, 0.0))
    return adjust_rounding(t, r, too_big, too_small, negative, mode)


def int_saturate(
    t: FunctionTranslator, x: ir.Value, ty: ir.Type, src_signed: bool, dst_signed: bool
) -> ir.Value:
    """Integer conversion that clamps to the destination's range."""
    sw, dw = lane(x.type).width, lane(ty).width
    if src_signed and not dst_signed:
        x = t.b.select(t.b.icmp_signed("<", x, t.constant(x.type, 0)), t.constant(x.type, 0), x)
        if dw < sw:
            hi = t.constant(x.type, (1 << dw) - 1)
            x = t.b.select(t.b.icmp_unsigned(">", x, hi), hi, x)
        return resize_int(t, x, ty, signed=False)
    if dst_signed:
        hi_value = (1 << (dw - 1)) - 1
        if src_signed:
            if dw >= sw:
                return resize_int(t, x, ty, signed=True)
            hi = t.constant(x.type, hi_value)
            lo = t.constant(x.type, -(1 << (dw - 1)))
            x = t.b.select(t.b.icmp_signed(">", x, hi), hi, x)
            x = t.b.select(t.b.icmp_signed("<", x, lo), lo, x)
            return resize_int(t, x, ty, signed=True)
        if sw >= dw:
            hi = t.constant(x.type, hi_value)
            x = t.b.select(t.b.icmp_unsigned(">", x, hi), hi, x)
        return resize_int(t, x, ty, signed=False)
    if dw < sw:
        hi = t.constant(x.type, (1 << dw) - 1)
        x = t.b.select(t.b.icmp_unsigned(">", x, hi), hi, x)
    return resize_int(t, x, ty, signed=False)


@handles("OpConvertFToU", "OpConvertFToS")
def convert_f_to_i(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    x = t.value(inst.operands[0])
    ty = t.llvm_type(inst.result_type)
    return float_to_int(
        t, x, ty, inst.opname == "OpConvertFToS", rounding_mode(t, inst), saturated(t, inst)
    )


@handles("OpConvertSToF", "OpConvertUToF")
def convert_i_to_f(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    x = t.value(inst.operands[0])
    ty = t.llvm_type(inst.result_type)
    if lane(x.type) == I1:
        x = t.b.zext(x, like(x.type, ir.IntType(8)))
    return int_to_float(t, x, ty, inst.opname == "OpConvertSToF", rounding_mode(t, inst))


@handles("OpFConvert")
def convert_f_to_f(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    return float_to_float(
        t, t.value(inst.operands[0]), t.llvm_type(inst.result_type), rounding_mode(t, inst)
    )


@handles("OpQuantizeToF16")
def quantize_to_f16(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    x = t.value(inst.operands[0])
    return t.b.fpext(t.b.fptrunc(x, like(x.type, ir.HalfType())), x.type)


@handles("OpUConvert", "OpSConvert")
def convert_int(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    x = t.value(inst.operands[0])
    ty = t.llvm_type(inst.result_type)
    signed = inst.opname == "OpSConvert"
    if saturated(t, inst):
        return int_saturate(t, x, ty, signed, signed)
    return resize_int(t, x, ty, signed)


@handles("OpSatConvertSToU", "OpSatConvertUToS")
def sat_convert(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    x = t.value(inst.operands[0])
    ty = t.llvm_type(inst.result_type)
    from_signed = inst.opname == "OpSatConvertSToU"
    return int_saturate(t, x, ty, from_signed, not from_signed)


@handles("OpBitcast")
def bitcast(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    x = t.value(inst.operands[0])
    ty = t.llvm_type(inst.result_type)
    src_ptr = isinstance(x.type, ir.PointerType)
    dst_ptr = isinstance(ty, ir.PointerType)
    if src_ptr and dst_ptr:
        return x if x.type == ty else t.b.addrspacecast(x, ty)
    if src_ptr:
        return t.b.bitcast(t.b.ptrtoint(x, I64), ty)
    if dst_ptr:
        return t.b.inttoptr(t.b.bitcast(x, I64), ty)
    return t.b.bitcast(x, ty)


@handles("OpConvertPtrToU")
def ptr_to_u(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    return t.b.ptrtoint(t.value(inst.operands[0]), t.llvm_type(inst.result_type))


@handles("OpConvertUToPtr")
def u_to_ptr(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    return t.b.inttoptr(t.value(inst.operands[0]), t.llvm_type(inst.result_type))


@handles("OpPtrCastToGeneric", "OpGenericCastToPtr")
def address_space_cast(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    x = t.value(inst.operands[0])
    ty = t.llvm_type(inst.result_type)
    return x if x.type == ty else t.b.addrspacecast(x, ty)


@handles("OpGenericCastToPtrExplicit")
def generic_cast_explicit(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    """to_global/to_local/to_private: NULL when the pointer is not in that space."""
    x, storage = t.value(inst.operands[0]), inst.operands[1]
    return generic_to_space(t, x, storage, t.llvm_type(inst.result_type))


def generic_to_space(t: FunctionTranslator, x: ir.Value, storage: int, ty: ir.Type) -> ir.Value:
    """Generic pointer ``x`` as a pointer into ``storage`` (a StorageClass), or NULL when it
    points into another address space (OpenCL C 3.0 6.15.14 to_global & co.).

    Targets whose ABI cannot tell the spaces apart (``generic_pointer_space`` missing)
    cast unchecked."""
    cast = x if x.type == ty else t.b.addrspacecast(x, ty)
    classify = getattr(t.mt.abi, "generic_pointer_space", None)
    if classify is None:
        return cast
    is_local, is_private = classify(t.b, t.hidden, x)
    if storage == StorageClass.Workgroup:
        inside = is_local
    elif storage == StorageClass.Function:
        inside = is_private
    else:  # CrossWorkgroup
        inside = t.b.not_(t.b.or_(is_local, is_private))
    return t.b.select(inside, cast, ir.Constant(ty, None))
