"""Arithmetic, bitwise, comparison, logical and composite instructions."""

from __future__ import annotations

from llvmlite import ir

from ..spirv.grammar import Decoration
from ..spirv.module import Instruction
from .function import FunctionTranslator, handles, overload_suffix

I1 = ir.IntType(1)
I32 = ir.IntType(32)

_INT_BINOPS = {
    "OpIAdd": "add",
    "OpISub": "sub",
    "OpIMul": "mul",
    "OpBitwiseAnd": "and_",
    "OpBitwiseOr": "or_",
    "OpBitwiseXor": "xor",
    "OpLogicalAnd": "and_",
    "OpLogicalOr": "or_",
}
_FLOAT_BINOPS = {
    "OpFAdd": "fadd",
    "OpFSub": "fsub",
    "OpFMul": "fmul",
    "OpFDiv": "fdiv",
    "OpFRem": "frem",
}


def operands(t: FunctionTranslator, inst: Instruction) -> list[ir.Value]:
    return [t.value(i) for i in inst.operands]


@handles(*_INT_BINOPS)
def int_binop(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    a, b = operands(t, inst)
    flags = []
    if t.decorated(inst.result_id, Decoration.NoSignedWrap):
        flags.append("nsw")
    if t.decorated(inst.result_id, Decoration.NoUnsignedWrap):
        flags.append("nuw")
    method = getattr(t.b, _INT_BINOPS[inst.opname])
    if flags and inst.opname in ("OpIAdd", "OpISub", "OpIMul"):
        return method(a, b, flags=flags)
    return method(a, b)


@handles(*_FLOAT_BINOPS)
def float_binop(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    a, b = operands(t, inst)
    result = getattr(t.b, _FLOAT_BINOPS[inst.opname])(a, b, flags=t.fast_math(inst))
    if inst.opname == "OpFDiv":
        fp32_accuracy(t, result, t.mt.abi.fp32_divide_ulp)
    return result


def fp32_accuracy(t: FunctionTranslator, inst: ir.Instruction, ulp: float | None) -> None:
    """Attaches ``!fpmath !{float ulp}`` to a float (not double) operation: the target
    may then use its faster sequence within OpenCL C's accuracy (clang does the same)."""
    ty = inst.type.element if isinstance(inst.type, ir.VectorType) else inst.type
    if ulp is not None and isinstance(ty, ir.FloatType):
        inst.set_metadata("fpmath", t.mt.llmodule.add_metadata([ir.Constant(ty, ulp)]))


@handles("OpFMod")
def fmod_sign_of_divisor(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    a, b = operands(t, inst)
    r = t.b.frem(a, b)
    zero = t.constant(r.type, 0.0)
    differ = t.b.and_(
        t.b.fcmp_ordered("!=", r, zero),
        t.b.icmp_signed("!=", sign_bit(t, r), sign_bit(t, b)),
    )
    return t.b.select(differ, t.b.fadd(r, b), r)


def sign_bit(t: FunctionTranslator, x: ir.Value) -> ir.Value:
    """True where ``x`` (float or vector) has its sign bit set."""
    as_int = t.b.bitcast(x, int_type_like(x.type))
    return t.b.icmp_signed("<", as_int, t.constant(as_int.type, 0))


def int_type_like(ty: ir.Type) -> ir.Type:
    """The integer (vector) type with the bit width of float (vector) ``ty``."""
    if isinstance(ty, ir.VectorType):
        return ir.VectorType(int_type_like(ty.element), ty.count)
    width = {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(ty)]
    return ir.IntType(width)


def safe_divisor(t: FunctionTranslator, a: ir.Value, b: ir.Value, signed: bool) -> ir.Value:
    """``b`` with the lanes that would trap on x86 (÷0, MIN ÷ -1) replaced by 1.

    SPIR-V leaves those results undefined; a hardware trap would kill the
    user's process, so the result is merely unspecified instead.
    """
    zero = t.constant(b.type, 0)
    bad = t.b.icmp_unsigned("==", b, zero)
    if signed:
        width = (b.type.element if isinstance(b.type, ir.VectorType) else b.type).width
        is_min = t.b.icmp_unsigned("==", a, t.constant(a.type, 1 << (width - 1)))
        is_neg1 = t.b.icmp_signed("==", b, t.constant(b.type, -1))
        bad = t.b.or_(bad, t.b.and_(is_min, is_neg1))
    return t.b.select(bad, t.constant(b.type, 1), b)


@handles("OpUDiv", "OpSDiv", "OpUMod", "OpSRem", "OpSMod")
def int_division(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    a, b = operands(t, inst)
    signed = inst.opname in ("OpSDiv", "OpSRem", "OpSMod")
    b = safe_divisor(t, a, b, signed)
    if inst.opname == "OpUDiv":
        return t.b.udiv(a, b)
    if inst.opname == "OpSDiv":
        return t.b.sdiv(a, b)
    if inst.opname == "OpUMod":
        return t.b.urem(a, b)
    r = t.b.srem(a, b)
    if inst.opname == "OpSRem":
        return r
    # OpSMod takes the sign of the divisor.
    zero = t.constant(r.type, 0)
    differ = t.b.and_(t.b.icmp_signed("!=", r, zero), t.b.icmp_signed("<", t.b.xor(r, b), zero))
    return t.b.select(differ, t.b.add(r, b), r)


@handles("OpShiftLeftLogical", "OpShiftRightLogical", "OpShiftRightArithmetic")
def shift(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    base, amount = operands(t, inst)
    amount = resize_int(t, amount, base.type, signed=False)
    width = (base.type.element if isinstance(base.type, ir.VectorType) else base.type).width
    # OpenCL C defines shifts modulo the width; LLVM makes larger shifts poison.
    amount = t.b.and_(amount, t.constant(amount.type, width - 1))
    op = {"OpShiftLeftLogical": t.b.shl, "OpShiftRightLogical": t.b.lshr}.get(inst.opname, t.b.ashr)
    return op(base, amount)


def resize_int(t: FunctionTranslator, value: ir.Value, ty: ir.Type, signed: bool) -> ir.Value:
    """Integer ``value`` truncated or extended to ``ty`` (same lane count)."""
    src = value.type.element if isinstance(value.type, ir.VectorType) else value.type
    dst = ty.element if isinstance(ty, ir.VectorType) else ty
    if src.width == dst.width:
        return value
    if src.width > dst.width:
        return t.b.trunc(value, ty)
    return t.b.sext(value, ty) if signed else t.b.zext(value, ty)


@handles("OpSNegate")
def snegate(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    (a,) = operands(t, inst)
    return t.b.sub(t.constant(a.type, 0), a)


@handles("OpFNegate")
def fnegate(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    (a,) = operands(t, inst)
    return t.b.fneg(a)


@handles("OpNot", "OpLogicalNot")
def bitwise_not(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    (a,) = operands(t, inst)
    return t.b.not_(a)


@handles("OpIAddCarry", "OpISubBorrow", "OpUMulExtended", "OpSMulExtended")
def extended_arith(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    a, b = operands(t, inst)
    ty = a.type
    lane = ty.element if isinstance(ty, ir.VectorType) else ty
    wide_lane = ir.IntType(lane.width * 2)
    wide = ir.VectorType(wide_lane, ty.count) if isinstance(ty, ir.VectorType) else wide_lane
    signed = inst.opname == "OpSMulExtended"
    wa = t.b.sext(a, wide) if signed else t.b.zext(a, wide)
    wb = t.b.sext(b, wide) if signed else t.b.zext(b, wide)
    if inst.opname == "OpIAddCarry":
        full = t.b.add(wa, wb)
    elif inst.opname == "OpISubBorrow":
        full = t.b.sub(wa, wb)
    else:
        full = t.b.mul(wa, wb)
    low = t.b.trunc(full, ty)
    high = t.b.trunc(t.b.lshr(full, t.constant(wide, lane.width)), ty)
    if inst.opname == "OpISubBorrow":
        high = t.b.zext(t.b.icmp_unsigned("<", a, b), ty)
    elif inst.opname == "OpIAddCarry":
        high = t.b.and_(high, t.constant(ty, 1))
    result = ir.Constant(t.llvm_type(inst.result_type), ir.Undefined)
    result = t.b.insert_value(result, low, 0)
    return t.b.insert_value(result, high, 1)


@handles("OpBitCount")
def bit_count(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    (a,) = operands(t, inst)
    count = t.intrinsic(f"llvm.ctpop.{overload_suffix(a.type)}", a.type, [a])
    return resize_int(t, count, t.llvm_type(inst.result_type), signed=False)


@handles("OpBitReverse")
def bit_reverse(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    (a,) = operands(t, inst)
    return t.intrinsic(f"llvm.bitreverse.{overload_suffix(a.type)}", a.type, [a])


def _bitfield_mask(
    t: FunctionTranslator, ty: ir.Type, offset: ir.Value, count: ir.Value
) -> ir.Value:
    """Ones in ``count`` bits starting at ``offset`` (count may equal the width)."""
    ones = t.constant(ty, -1)
    width = (ty.element if isinstance(ty, ir.VectorType) else ty).width
    full = t.b.icmp_unsigned(">=", count, t.constant(ty, width))
    low = t.b.not_(t.b.shl(ones, count))
    low = t.b.select(full, ones, low)
    return t.b.shl(low, offset)


@handles("OpBitFieldInsert")
def bitfield_insert(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    base, insert, offset, count = operands(t, inst)
    offset = t.splat(
        resize_int(
            t,
            offset,
            base.type.element if isinstance(base.type, ir.VectorType) else base.type,
            False,
        ),
        base.type,
    )
    count = t.splat(
        resize_int(
            t,
            count,
            offset.type.element if isinstance(offset.type, ir.VectorType) else offset.type,
            False,
        ),
        base.type,
    )
    mask = _bitfield_mask(t, base.type, offset, count)
    shifted = t.b.and_(t.b.shl(insert, offset), mask)
    return t.b.or_(t.b.and_(base, t.b.not_(mask)), shifted)


@handles("OpBitFieldSExtract", "OpBitFieldUExtract")
def bitfield_extract(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    base, offset, count = operands(t, inst)
    lane = base.type.element if isinstance(base.type, ir.VectorType) else base.type
    offset = t.splat(resize_int(t, offset, lane, False), base.type)
    count = t.splat(resize_int(t, count, lane, False), base.type)
    width = t.constant(base.type, lane.width)
    # Move the field to the top, then shift it down with the right fill.
    up = t.b.sub(t.b.sub(width, count), offset)
    down = t.b.sub(width, count)
    top = t.b.shl(base, up)
    field = t.b.ashr(top, down) if inst.opname == "OpBitFieldSExtract" else t.b.lshr(top, down)
    empty = t.b.icmp_unsigned("==", count, t.constant(base.type, 0))
    return t.b.select(empty, t.constant(base.type, 0), field)


# -- comparisons -------------------------------------------------------------------

_ICMP = {
    "OpIEqual": ("==", False),
    "OpINotEqual": ("!=", False),
    "OpLogicalEqual": ("==", False),
    "OpLogicalNotEqual": ("!=", False),
    "OpUGreaterThan": (">", False),
    "OpUGreaterThanEqual": (">=", False),
    "OpULessThan": ("<", False),
    "OpULessThanEqual": ("<=", False),
    "OpSGreaterThan": (">", True),
    "OpSGreaterThanEqual": (">=", True),
    "OpSLessThan": ("<", True),
    "OpSLessThanEqual": ("<=", True),
}
_FCMP = {
    "OpFOrdEqual": ("==", True),
    "OpFOrdNotEqual": ("!=", True),
    "OpFOrdLessThan": ("<", True),
    "OpFOrdGreaterThan": (">", True),
    "OpFOrdLessThanEqual": ("<=", True),
    "OpFOrdGreaterThanEqual": (">=", True),
    "OpFUnordEqual": ("==", False),
    "OpFUnordNotEqual": ("!=", False),
    "OpFUnordLessThan": ("<", False),
    "OpFUnordGreaterThan": (">", False),
    "OpFUnordLessThanEqual": ("<=", False),
    "OpFUnordGreaterThanEqual": (">=", False),
    "OpLessOrGreater": ("!=", True),
}


@handles(*_ICMP)
def icmp(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    a, b = operands(t, inst)
    op, signed = _ICMP[inst.opname]
    if isinstance(a.type, ir.PointerType):
        a, b = t.b.ptrtoint(a, ir.IntType(64)), t.b.ptrtoint(b, ir.IntType(64))
    return (t.b.icmp_signed if signed else t.b.icmp_unsigned)(op, a, b)


@handles(*_FCMP)
def fcmp(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    a, b = operands(t, inst)
    op, ordered = _FCMP[inst.opname]
    return (t.b.fcmp_ordered if ordered else t.b.fcmp_unordered)(op, a, b)


@handles("OpOrdered", "OpUnordered")
def ordered(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    a, b = operands(t, inst)
    if inst.opname == "OpOrdered":
        return t.b.fcmp_ordered("ord", a, b)
    return t.b.fcmp_unordered("uno", a, b)


def fabs(t: FunctionTranslator, x: ir.Value) -> ir.Value:
    return t.intrinsic(f"llvm.fabs.{overload_suffix(x.type)}", x.type, [x])


@handles("OpIsNan", "OpIsInf", "OpIsFinite", "OpIsNormal", "OpSignBitSet")
def float_class(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    (x,) = operands(t, inst)
    if inst.opname == "OpIsNan":
        return t.b.fcmp_unordered("uno", x, x)
    if inst.opname == "OpSignBitSet":
        return sign_bit(t, x)
    a = fabs(t, x)
    inf = t.constant(x.type, float("inf"))
    if inst.opname == "OpIsInf":
        return t.b.fcmp_ordered("==", a, inf)
    if inst.opname == "OpIsFinite":
        return t.b.fcmp_ordered("<", a, inf)
    lane = x.type.element if isinstance(x.type, ir.VectorType) else x.type
    smallest = {ir.HalfType: 2.0**-14, ir.FloatType: 2.0**-126, ir.DoubleType: 2.0**-1022}[
        type(lane)
    ]
    return t.b.and_(
        t.b.fcmp_ordered(">=", a, t.constant(x.type, smallest)), t.b.fcmp_ordered("<", a, inf)
    )


@handles("OpAny", "OpAll")
def any_all(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    (v,) = operands(t, inst)
    if v.type.element != I1:
        # clang-22 applies OpAny/OpAll to integer vectors; OpenCL's any/all test the sign bit.
        v = t.b.icmp_signed("<", v, t.constant(v.type, 0))
    reduce = "or" if inst.opname == "OpAny" else "and"
    return t.intrinsic(f"llvm.vector.reduce.{reduce}.{overload_suffix(v.type)}", I1, [v])


@handles("OpSelect")
def select(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    cond, a, b = operands(t, inst)
    return t.b.select(cond, a, b)


@handles("OpDot")
def dot(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    a, b = operands(t, inst)
    flags = t.fast_math(inst)
    if getattr(t.mt.abi, "contract_builtins", False):
        # OpenCL C compiles with FP_CONTRACT on, and dot's bound (n-1 roundings of
        # products and sums) holds with fused multiply-adds: the GPUs' FMA is free.
        # Per lane, as libclc's dot: a1*b1, then fmuladd(ai, bi, sum). A vector fmul
        # whose lanes are then added stays one on AMD's packed fp32 (two v_pk_mul_f32,
        # three adds and four live products instead of one multiply and three FMAs).
        lanes = [
            [t.b.extract_element(v, ir.Constant(I32, i)) for i in range(a.type.count)]
            for v in (a, b)
        ]
        fmuladd = f"llvm.fmuladd.{overload_suffix(lanes[0][0].type)}"
        total = t.b.fmul(lanes[0][1], lanes[1][1], flags=flags)
        for i in (0, *range(2, a.type.count)):
            total = t.intrinsic(fmuladd, total.type, [lanes[0][i], lanes[1][i], total])
        return total
    products = t.b.fmul(a, b, flags=flags)
    total = t.b.extract_element(products, ir.Constant(I32, 0))
    for i in range(1, a.type.count):
        item = t.b.extract_element(products, ir.Constant(I32, i))
        total = t.b.fadd(total, item, flags=flags)
    return total


@handles("OpVectorTimesScalar")
def vector_times_scalar(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    v, s = operands(t, inst)
    return t.b.fmul(v, t.splat(s, v.type), flags=t.fast_math(inst))


# -- composites --------------------------------------------------------------------


@handles("OpCompositeConstruct")
def composite_construct(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    ty = t.llvm_type(inst.result_type)
    parts = operands(t, inst)
    result = ir.Constant(ty, ir.Undefined)
    if isinstance(ty, ir.VectorType):
        lane = 0
        for part in parts:
            pieces = (
                [t.b.extract_element(part, ir.Constant(I32, i)) for i in range(part.type.count)]
                if isinstance(part.type, ir.VectorType)
                else [part]
            )
            for piece in pieces:
                result = t.b.insert_element(result, piece, ir.Constant(I32, lane))
                lane += 1
        return result
    for i, part in enumerate(parts):
        result = t.b.insert_value(result, part, i)
    return result


def extract_path(t: FunctionTranslator, value: ir.Value, path: list[int]) -> ir.Value:
    for index in path:
        if isinstance(value.type, ir.VectorType):
            value = t.b.extract_element(value, ir.Constant(I32, index))
        else:
            value = t.b.extract_value(value, index)
    return value


def insert_path(
    t: FunctionTranslator, composite: ir.Value, obj: ir.Value, path: list[int]
) -> ir.Value:
    index, rest = path[0], path[1:]
    if isinstance(composite.type, ir.VectorType):
        if rest:
            raise TypeError("a vector lane has no members")
        return t.b.insert_element(composite, obj, ir.Constant(I32, index))
    if rest:
        obj = insert_path(t, t.b.extract_value(composite, index), obj, rest)
    return t.b.insert_value(composite, obj, index)


@handles("OpCompositeExtract")
def composite_extract(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    return extract_path(t, t.value(inst.operands[0]), list(inst.operands[1:]))


@handles("OpCompositeInsert")
def composite_insert(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    obj, composite = t.value(inst.operands[0]), t.value(inst.operands[1])
    return insert_path(t, composite, obj, list(inst.operands[2:]))


@handles("OpVectorExtractDynamic")
def vector_extract_dynamic(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    v, index = operands(t, inst)
    return t.b.extract_element(v, index)


@handles("OpVectorInsertDynamic")
def vector_insert_dynamic(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    v, component, index = operands(t, inst)
    return t.b.insert_element(v, component, index)


@handles("OpVectorShuffle")
def vector_shuffle(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    a, b = t.value(inst.operands[0]), t.value(inst.operands[1])
    if a.type != b.type:
        # LLVM wants equal input types; widen the shorter vector with undef lanes.
        n = max(a.type.count, b.type.count)
        a, b = widen_vector(t, a, n), widen_vector(t, b, n)
        offset_b = n
    else:
        offset_b = a.type.count
    first_count = t.value(inst.operands[0]).type.count
    mask = []
    for lane in inst.operands[2:]:
        if lane == 0xFFFFFFFF:
            mask.append(ir.Constant(I32, 0))  # an undefined lane may take any value
        elif lane < first_count:
            mask.append(ir.Constant(I32, lane))
        else:
            mask.append(ir.Constant(I32, lane - first_count + offset_b))
    return t.b.shuffle_vector(a, b, ir.Constant(ir.VectorType(I32, len(mask)), mask))


def widen_vector(t: FunctionTranslator, v: ir.Value, n: int) -> ir.Value:
    if v.type.count == n:
        return v
    mask = [ir.Constant(I32, min(i, v.type.count - 1)) for i in range(n)]
    return t.b.shuffle_vector(
        v, ir.Constant(v.type, ir.Undefined), ir.Constant(ir.VectorType(I32, n), mask)
    )


@handles("OpCopyObject", "OpCopyLogical")
def copy_object(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    return t.value(inst.operands[0])


@handles("OpUndef")
def undef(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    return ir.Constant(t.llvm_type(inst.result_type), ir.Undefined)
