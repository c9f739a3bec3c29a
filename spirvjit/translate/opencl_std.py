"""The OpenCL.std extended instruction set.

Math meets the full-profile ULP bounds of the OpenCL C 3.0 spec, section 7.4 ("Relative
Error as ULPs"; docs/devicelib.md has the table with measured errors). Functions the CPU
computes exactly (sqrt, floor, fma, ...) map to LLVM intrinsics; transcendental functions call
the C library through ``mathlib``, whose declarations name libmvec's SIMD variants so that
work-item loops vectorize; functions libm lacks or gets wrong for OpenCL (sinpi, rootn, powr,
...) are built here from those pieces with exact argument reduction and branch-free selects.
Half math computes in float (or double) and rounds once, which meets the half bounds.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

from llvmlite import ir

from ..spirv.grammar import OPENCL_STD_INSTRUCTIONS, FPRoundingMode, OpenCLStd
from ..spirv.module import Instruction
from . import checks, mathlib
from .function import FunctionTranslator, handles, overload_suffix
from .ops_arith import fabs, fp32_accuracy, int_type_like, resize_int
from .ops_convert import float_to_float, lane, like

I1 = ir.IntType(1)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
HALF = ir.HalfType()
FLOAT = ir.FloatType()
DOUBLE = ir.DoubleType()

Lowering = Callable[[FunctionTranslator, ir.Type, list[ir.Value], Instruction], "ir.Value | None"]
LOWERINGS: dict[str, Lowering] = {}


def lowers(*names: str) -> Callable[[Lowering], Lowering]:
    def register(fn: Lowering) -> Lowering:
        for name in names:
            LOWERINGS[name] = fn
        return fn

    return register


@handles("OpExtInst")
def ext_inst(t: FunctionTranslator, inst: Instruction) -> ir.Value | None:
    set_id, number = inst.operands[0], inst.operands[1]
    set_name = t.module.ext_inst_imports.get(set_id, "")
    if set_name.startswith("NonSemantic.") or set_name == "OpenCL.DebugInfo.100":
        return None  # debug info and other non-semantic sets change nothing
    if set_name != "OpenCL.std":
        raise t.error(f"extended instruction set '{set_name}' is not supported")
    try:
        name = OpenCLStd(number).name
    except ValueError:
        raise t.error(f"OpenCL.std has no instruction {number}") from None
    lowering = LOWERINGS.get(name)
    if lowering is None:
        raise t.error(f"OpenCL.std {name} is not supported yet")
    ty = t.llvm_type(inst.result_type)
    kinds = [kind for kind, _ in OPENCL_STD_INSTRUCTIONS[number][1]]
    # Literal operands (vloadn's n, vstore_half_r's rounding mode) stay plain ints.
    args = [
        t.value(a) if kind == "IdRef" else a
        for a, kind in zip(inst.operands[2:], kinds, strict=False)
    ]
    return lowering(t, ty, args, inst)


# -- helpers --------------------------------------------------------------------------


def intrinsic(t: FunctionTranslator, name: str, ty: ir.Type, args: list[ir.Value]) -> ir.Value:
    return t.intrinsic(f"llvm.{name}.{overload_suffix(ty)}", ty, args)


def per_lane(
    t: FunctionTranslator, ty: ir.Type, args: list[ir.Value], scalar: Callable[..., ir.Value]
) -> ir.Value:
    """Applies ``scalar`` to each lane of the vector arguments (scalars are shared)."""
    if not isinstance(ty, ir.VectorType):
        return scalar(*args)
    result = ir.Constant(ty, ir.Undefined)
    for i in range(ty.count):
        index = ir.Constant(I32, i)
        lanes = [
            t.b.extract_element(a, index) if isinstance(a.type, ir.VectorType) else a for a in args
        ]
        result = t.b.insert_element(result, scalar(*lanes), index)
    return result


def libm(t: FunctionTranslator, name: str, ty: ir.Type, args: list[ir.Value]) -> ir.Value:
    """Calls the C library's ``name`` (float or double flavour) per lane; half goes via float.

    Vector lanes become separate scalar calls; the vectorizers rejoin them into libmvec calls.
    """

    def scalar(*lanes: ir.Value) -> ir.Value:
        work = lane(ty)
        promoted = isinstance(work, ir.HalfType)
        if promoted:
            work = FLOAT
            lanes = tuple(
                t.b.fpext(x, FLOAT) if isinstance(x.type, ir.HalfType) else x for x in lanes
            )
        fn = mathlib.libm_function(t.mt.llmodule, name, work, len(lanes))
        out = t.b.call(fn, list(lanes))
        return t.b.fptrunc(out, HALF) if promoted else out

    return per_lane(t, ty, args, scalar)


def widened(
    t: FunctionTranslator,
    ty: ir.Type,
    args: list[ir.Value],
    work: ir.Type,
    compute: Callable[[ir.Type, list[ir.Value]], ir.Value],
) -> ir.Value:
    """``compute`` in the wider lane type ``work``, rounded once back to ``ty``.

    Floating-point arguments of ``ty``'s lane type are extended (exactly); others pass as they
    are. Used where computing wider is the simplest way to meet the bound (half math,
    float pown/rootn). A ``work`` no wider than ``ty`` computes in ``ty``.
    """
    if _width(lane(ty)) >= _width(work):
        return compute(ty, args)
    if _width(lane(ty)) == 16 and _width(work) == 64:
        # LLVM 22's x86 back end asserts on vectors of half <-> double: go through float.
        return widened(t, ty, args, FLOAT, lambda fty, a: widened(t, fty, a, work, compute))
    wty = like(ty, work)
    wide = [t.b.fpext(a, wty) if a.type == ty else a for a in args]
    return t.b.fptrunc(compute(wty, wide), ty)


def _width(ty: ir.Type) -> int:
    return {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(ty)]


def select_all(t: FunctionTranslator, cases: list[tuple[ir.Value, ir.Value]], otherwise):
    """The value of the first true condition of ``cases``, else ``otherwise`` (branch-free)."""
    result = otherwise
    for cond, value in reversed(cases):
        result = t.b.select(cond, value, result)
    return result


def fconst(t: FunctionTranslator, ty: ir.Type, value: float) -> ir.Value:
    return t.constant(ty, value)


def splat_all(t: FunctionTranslator, ty: ir.Type, args: list[ir.Value]) -> list[ir.Value]:
    return [t.splat(a, ty) for a in args]


# -- math with LLVM intrinsics (exact operations) and libm ---------------------------------

_INTRINSIC_MATH = {
    "sqrt": "sqrt",
    "fabs": "fabs",
    "floor": "floor",
    "ceil": "ceil",
    "trunc": "trunc",
    "rint": "rint",
    "round": "round",
    "fma": "fma",
    "fmin": "minnum",
    "fmax": "maxnum",
    "fmin_common": "minnum",
    "fmax_common": "maxnum",
    "copysign": "copysign",
    "native_sqrt": "sqrt",
    "half_sqrt": "sqrt",
}


@lowers(*_INTRINSIC_MATH)
def intrinsic_math(t, ty, args, inst):
    name = OpenCLStd(inst.operands[1]).name
    if name in ("sqrt", "native_sqrt", "half_sqrt"):  # 3 ulp or more: a faster sqrt may do
        result = intrinsic(t, "sqrt", ty, splat_all(t, ty, args))
        fp32_accuracy(t, result, t.mt.abi.fp32_sqrt_ulp)
        return result
    return intrinsic(t, _INTRINSIC_MATH[name], ty, splat_all(t, ty, args))


# glibc's libm and libmvec meet OpenCL's bounds for these (measured: tests/kernels/test_ulp.py),
# but for the libmvec variants the CPU back end does not call (mathlib.OUT_OF_BOUNDS).
# native_* and half_* use the same functions: within every bound, at full speed when vectorized.
_LIBM = (*mathlib.LIBMVEC, "lgamma", "tgamma", "logb", "remainder")
_LIBM_ALIASES = {
    f"{prefix}_{fn}": fn
    for prefix in ("native", "half")
    for fn in ("sin", "cos", "tan", "exp", "exp2", "exp10", "log", "log2", "log10")
}


@lowers(*_LIBM, *_LIBM_ALIASES)
def libm_math(t, ty, args, inst):
    name = OpenCLStd(inst.operands[1]).name
    return libm(t, _LIBM_ALIASES.get(name, name), ty, splat_all(t, ty, args))


@lowers("pow")
def pow_(t, ty, args, inst):
    """libm's pow, with C99 Annex F's pow(x, +-0) = 1 and pow(+1, y) = 1 (NaN included)
    enforced: vector math libraries' fast paths have returned NaN there. (Registered after
    the plain libm functions, so this lowering wins.)"""
    x, y = splat_all(t, ty, args)
    c = functools.partial(fconst, t, ty)
    one = t.b.or_(t.b.fcmp_ordered("==", y, c(0.0)), t.b.fcmp_ordered("==", x, c(1.0)))
    return t.b.select(one, c(1.0), libm(t, "pow", ty, [x, y]))


@lowers("cbrt")
def cbrt(t, ty, args, inst):
    """Float and half compute in double (libmvec's cbrtf errs by 2.75 ulp; the bound is 2)."""
    return widened(t, ty, args, DOUBLE, lambda wty, a: _cbrt_double(t, wty, a[0]))


def _cbrt_double(t: FunctionTranslator, ty: ir.Type, x: ir.Value) -> ir.Value:
    """glibc's cbrt (up to 2.5 ulp measured; bound 2) refined by one Newton step.

    The residual y**3 - x is computed exactly with FMAs, so the step leaves about 0.5 ulp.
    Inputs beyond 2**+-900 are scaled by 2**-+900 first (exact, and its cube root 2**-+300 is
    too), so y**3 neither overflows nor loses bits to subnormals.
    """
    b = t.b
    c = functools.partial(fconst, t, ty)
    ax = fabs(t, x)
    tiny, huge = b.fcmp_ordered("<", ax, c(2.0**-900)), b.fcmp_ordered(">", ax, c(2.0**900))
    xs = b.fmul(x, select_all(t, [(tiny, c(2.0**900)), (huge, c(2.0**-900))], c(1.0)))
    y = libm(t, "cbrt", ty, [xs])
    y2 = b.fmul(y, y)
    e2 = intrinsic(t, "fma", ty, [y, y, b.fneg(y2)])
    y3 = b.fmul(y2, y)
    e3 = b.fadd(intrinsic(t, "fma", ty, [y2, y, b.fneg(y3)]), b.fmul(e2, y))
    residual = b.fadd(b.fsub(y3, xs), e3)
    refined = b.fsub(y, b.fdiv(residual, b.fmul(c(3.0), y2)))
    ordinary = b.and_(b.fcmp_ordered("!=", y, c(0.0)), b.fcmp_ordered("<", fabs(t, y), c(math.inf)))
    y = b.select(ordinary, refined, y)
    return b.fmul(y, select_all(t, [(tiny, c(2.0**-300)), (huge, c(2.0**300))], c(1.0)))


@lowers("nextafter")
def nextafter(t, ty, args, inst):
    """Bit arithmetic on the representation: exact in every type, and vectorizable."""
    x, y = args
    b = t.b
    ity = int_type_like(ty)
    ix = b.bitcast(x, ity)
    sign_mask = t.constant(ity, 1 << (lane(ity).width - 1))
    away_from_zero = b.icmp_unsigned(
        "==", b.fcmp_ordered("<", x, y), b.fcmp_ordered(">", x, fconst(t, ty, 0.0))
    )
    step = b.select(away_from_zero, t.constant(ity, 1), t.constant(ity, -1))
    stepped = b.bitcast(b.add(ix, step), ty)
    # From zero, the smallest subnormal with y's sign.
    smallest = b.bitcast(b.or_(b.and_(b.bitcast(y, ity), sign_mask), t.constant(ity, 1)), ty)
    return select_all(
        t,
        [
            (b.fcmp_unordered("uno", x, y), b.fadd(x, y)),
            (b.fcmp_ordered("==", x, y), y),
            (b.fcmp_ordered("==", x, fconst(t, ty, 0.0)), smallest),
        ],
        stepped,
    )


@lowers("rsqrt", "native_rsqrt", "half_rsqrt")
def rsqrt(t, ty, args, inst):
    # Two roundings in float/double (<= 1.5 ulp, bound 2); half computes in float (bound 1).
    # Where the target may be less exact (GPUs), the 2 ulp bound lets it use its
    # reciprocal square root instruction (AMD's v_rsq_f32: 1 ulp).
    inexact = t.mt.abi.fp32_divide_ulp is not None
    # A target's own float rsqrt within the 2 ulp (NVIDIA's rsqrt.approx.f32: 2 ulp,
    # what libdevice's __nv_rsqrtf and so clang's build use); sqrt + div is 2 slow paths.
    own = getattr(t.mt.abi, "fp32_rsqrt_intrinsic", None) if inexact else None

    def scalar(wty, a):
        if own and lane(wty) == FLOAT:
            return per_lane(t, wty, a, lambda x: t.intrinsic(own, FLOAT, [x]))
        root = intrinsic(t, "sqrt", wty, a)
        quotient = t.b.fdiv(fconst(t, wty, 1.0), root, flags=["contract"] if inexact else [])
        if inexact:
            fp32_accuracy(t, root, 2.0)
            fp32_accuracy(t, quotient, 2.0)
        return quotient

    return widened(t, ty, args, FLOAT, scalar)


@lowers("native_recip", "half_recip")
def recip(t, ty, args, inst):
    return t.b.fdiv(fconst(t, ty, 1.0), args[0])


@lowers("native_divide", "half_divide")
def divide(t, ty, args, inst):
    return t.b.fdiv(args[0], args[1])


@lowers("mad")
def mad(t, ty, args, inst):
    return t.b.fadd(t.b.fmul(args[0], args[1]), args[2])


@lowers("powr", "native_powr", "half_powr")
def powr(t, ty, args, inst):
    """pow(|x|, y) with powr's own special cases (OpenCL C 3.0 section 7.5.1): NaN for x < 0,
    powr(+-0, +-0), powr(+inf, +-0), powr(1, +-inf) and any NaN argument."""
    x, y = splat_all(t, ty, args)
    b = t.b
    c = functools.partial(fconst, t, ty)
    is_zero = functools.partial(b.fcmp_ordered, "==", rhs=c(0.0))
    invalid = [
        b.fcmp_ordered("<", x, c(0.0)),
        b.and_(is_zero(x), is_zero(y)),
        b.and_(b.fcmp_ordered("==", x, c(math.inf)), is_zero(y)),
        b.and_(b.fcmp_ordered("==", x, c(1.0)), b.fcmp_ordered("==", fabs(t, y), c(math.inf))),
        b.fcmp_unordered("uno", x, y),
    ]
    nan = functools.reduce(b.or_, invalid)
    return b.select(nan, c(math.nan), libm(t, "pow", ty, [fabs(t, x), y]))


@lowers("pown")
def pown(t, ty, args, inst):
    """pow(x, n) with n exact: float and half compute in double (n may exceed 2**24)."""
    x, n = args

    def compute(wty, a):
        return libm(t, "pow", wty, [a[0], t.b.sitofp(n, wty)])

    return widened(t, ty, [x], DOUBLE, compute)


@lowers("rootn")
def rootn(t, ty, args, inst):
    """x**(1/n), in double; NaN for n = 0 and for x < 0 with n even (OpenCL C 3.0, 7.5.1).

    pow(x, 1/n) errs by up to |ln x| / |n| ulp because 1/n is rounded (248 ulp for x near
    DBL_MAX and n = 3). So x = m * 2**e is split as z * 2**(k n) with z = m * 2**j, j in
    [0, |n|): then |ln z| <= |n| ln 2 and rootn = pow(z, 1/n) * 2**k within about 1.7 ulp.
    For |n| > 512 the error of the plain pow is already below 1.5 ulp.
    """
    x, n = args
    return widened(t, ty, [x], DOUBLE, lambda wty, a: _rootn(t, wty, a[0], n))


def _rootn(t: FunctionTranslator, ty: ir.Type, x: ir.Value, n: ir.Value) -> ir.Value:
    b = t.b
    c = functools.partial(fconst, t, ty)
    ity = like(ty, I32)
    ax = fabs(t, x)
    nf = b.sitofp(n, ty)
    n_zero = b.icmp_signed("==", n, t.constant(n.type, 0))
    na = b.select(n_zero, c(1.0), fabs(t, nf))
    m, e = frexp_parts(t, ty, ax)
    e = b.sitofp(e, ty)
    split = b.fcmp_ordered("<=", na, c(512.0))
    k = b.select(split, intrinsic(t, "floor", ty, [b.fdiv(e, na)]), c(0.0))
    j = b.fsub(e, b.fmul(k, na))
    z = b.select(split, _ldexp(t, ty, m, b.fptosi(j, ity)), ax)
    k = b.select(b.icmp_signed("<", n, t.constant(n.type, 0)), b.fneg(k), k)
    root = _ldexp(t, ty, libm(t, "pow", ty, [z, b.fdiv(c(1.0), nf)]), b.fptosi(k, ity))
    odd = b.icmp_unsigned("!=", b.and_(n, t.constant(n.type, 1)), t.constant(n.type, 0))
    negative = b.fcmp_ordered("<", x, c(0.0))
    nan = b.or_(n_zero, b.and_(negative, b.not_(odd)))
    signed = b.select(odd, intrinsic(t, "copysign", ty, [root, x]), root)
    return b.select(nan, c(math.nan), signed)


def _ldexp(t: FunctionTranslator, ty: ir.Type, x: ir.Value, n: ir.Value) -> ir.Value:
    return t.intrinsic(f"llvm.ldexp.{overload_suffix(ty)}.{overload_suffix(n.type)}", ty, [x, n])


@lowers("ldexp")
def ldexp(t, ty, args, inst):
    x, n = args
    n = t.splat(n, like(ty, n.type)) if isinstance(ty, ir.VectorType) else n
    if not isinstance(lane(ty), ir.HalfType):
        return _ldexp(t, ty, x, n)
    # Half: in float, exact for exponents clamped to +-80 (half spans 2**-24 .. 2**16).
    limit = t.constant(n.type, 80)
    n = intrinsic(t, "smin", n.type, [intrinsic(t, "smax", n.type, [n, t.b.neg(limit)]), limit])
    return widened(t, ty, [x], FLOAT, lambda wty, a: _ldexp(t, wty, a[0], n))


@lowers("fmod")
def fmod(t, ty, args, inst):
    return t.b.frem(args[0], args[1])


_FLOAT_LAYOUT = {16: (10, 15), 32: (23, 127), 64: (52, 1023)}  # bits: (mantissa, bias)


def frexp_parts(t: FunctionTranslator, ty: ir.Type, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """frexp by bit manipulation: (mantissa in [0.5, 1), exponent as i32 lanes).

    Exact and branch-free, so it vectorizes. (LLVM 22's ``llvm.frexp`` on vectors of
    double aborts the process on x86-64 targets without AVX: "Invalid type for
    widened vector".) ±0, ±inf and NaN give themselves and exponent 0.
    """
    b = t.b
    ity = int_type_like(ty)
    width = lane(ity).width
    mantissa, bias = _FLOAT_LAYOUT[width]
    field = t.constant(ity, (1 << (width - 1 - mantissa)) - 1)
    shift = t.constant(ity, mantissa)
    biased = b.and_(b.lshr(b.bitcast(x, ity), shift), field)
    subnormal = b.and_(
        b.icmp_unsigned("==", biased, t.constant(ity, 0)),
        b.fcmp_unordered("!=", x, fconst(t, ty, 0.0)),
    )
    # Subnormals are scaled into the normal range first; the scaling is exact.
    scaled = b.select(subnormal, b.fmul(x, fconst(t, ty, 2.0 ** (mantissa + 1))), x)
    bits = b.bitcast(scaled, ity)
    biased = b.and_(b.lshr(bits, shift), field)
    exponent = b.sub(biased, t.constant(ity, bias - 1))
    exponent = b.sub(
        exponent, b.select(subnormal, t.constant(ity, mantissa + 1), t.constant(ity, 0))
    )
    fraction = b.or_(
        b.and_(bits, b.not_(b.shl(field, shift))), t.constant(ity, (bias - 1) << mantissa)
    )
    special = b.or_(
        b.fcmp_unordered("==", x, fconst(t, ty, 0.0)),
        b.fcmp_unordered("==", fabs(t, x), fconst(t, ty, math.inf)),
    )
    m = b.select(special, x, b.bitcast(fraction, ty))
    e = b.select(special, t.constant(ity, 0), exponent)
    return m, resize_int(t, e, like(ty, I32), signed=True)


@lowers("frexp")
def frexp(t, ty, args, inst):
    x, exp_ptr = args
    m, e = frexp_parts(t, ty, x)
    t.b.store(e, exp_ptr)
    return m


# OpenCL C's FP_ILOGB0 and FP_ILOGBNAN (glibc's ilogb returns INT_MIN for NaN).
FP_ILOGB0, FP_ILOGBNAN = -(2**31), 2**31 - 1


@lowers("ilogb")
def ilogb(t, ty, args, inst):
    """From the representation: exact, branch-free and vectorizable. ilogb(+-0) is
    FP_ILOGB0, ilogb(NaN) FP_ILOGBNAN, ilogb(+-inf) INT_MAX; half goes via float (exact)."""
    (x,) = args
    ty = x.type  # the result type is int
    if lane(ty) == HALF:
        ty = like(ty, FLOAT)
        x = t.b.fpext(x, ty)
    b = t.b
    ity = int_type_like(ty)
    width = lane(ity).width
    mantissa_bits = 52 if width == 64 else 23
    exponent_bits = width - 1 - mantissa_bits
    bias = (1 << (exponent_bits - 1)) - 1
    bits = b.and_(b.bitcast(x, ity), t.constant(ity, (1 << (width - 1)) - 1))  # |x|
    exponent = b.lshr(bits, t.constant(ity, mantissa_bits))
    normal = b.sub(exponent, t.constant(ity, bias))
    # A subnormal m * 2**(1 - bias - mantissa_bits): one less per leading zero of m.
    zeros = t.intrinsic(f"llvm.ctlz.{overload_suffix(ity)}", ity, [bits, ir.Constant(I1, 0)])
    subnormal = b.sub(t.constant(ity, 1 - bias + exponent_bits), zeros)
    is_subnormal = b.icmp_unsigned("==", exponent, t.constant(ity, 0))
    result = b.select(is_subnormal, subnormal, normal)
    result = resize_int(t, result, like(ty, I32), signed=True)
    i32 = like(ty, I32)
    result = b.select(
        b.icmp_unsigned("==", bits, t.constant(ity, 0)), t.constant(i32, FP_ILOGB0), result
    )
    max_exponent = t.constant(ity, (1 << exponent_bits) - 1)
    special = b.icmp_unsigned("==", exponent, max_exponent)  # inf and NaN: INT_MAX both
    return b.select(special, t.constant(i32, FP_ILOGBNAN), result)


@lowers("fract")
def fract(t, ty, args, inst):
    x, iptr = args
    fl = intrinsic(t, "floor", ty, [x])
    largest_below_one = {
        ir.HalfType: 0.99951171875,
        ir.FloatType: 1 - 2.0**-24,
        ir.DoubleType: 1 - 2.0**-53,
    }
    frac = intrinsic(
        t, "minnum", ty, [t.b.fsub(x, fl), fconst(t, ty, largest_below_one[type(lane(ty))])]
    )
    # fract(+-0) is +-0 and fract(+-inf) +-0 (OpenCL C 3.0 7.5.1); x - floor(x) gives +0
    # for -0 and NaN for an infinity.
    zero_or_inf = t.b.or_(
        t.b.fcmp_ordered("==", fabs(t, x), fconst(t, ty, math.inf)),
        t.b.fcmp_ordered("==", x, fconst(t, ty, 0.0)),
    )
    frac = t.b.select(zero_or_inf, intrinsic(t, "copysign", ty, [fconst(t, ty, 0.0), x]), frac)
    frac = t.b.select(t.b.fcmp_unordered("uno", x, x), x, frac)
    t.b.store(fl, iptr)
    return frac


@lowers("modf")
def modf(t, ty, args, inst):
    x, iptr = args
    whole = intrinsic(t, "trunc", ty, [x])
    t.b.store(whole, iptr)
    is_inf = t.b.fcmp_ordered("==", fabs(t, x), fconst(t, ty, math.inf))
    frac = t.b.select(is_inf, fconst(t, ty, 0.0), t.b.fsub(x, whole))
    return intrinsic(t, "copysign", ty, [frac, x])


@lowers("sincos")
def sincos(t, ty, args, inst):
    x, cos_ptr = args
    t.b.store(libm(t, "cos", ty, [x]), cos_ptr)
    return libm(t, "sin", ty, [x])


def _with_int_out(
    t: FunctionTranslator, ty: ir.Type, args: list[ir.Value], out: ir.Value, cname: str
) -> ir.Value:
    """Calls a libm function that returns an int through a pointer, lane by lane."""
    slot = t.alloca(I32)
    out_lanes = []

    def scalar(*lanes):
        promoted = isinstance(lanes[0].type, ir.HalfType)
        work = [t.b.fpext(v, FLOAT) for v in lanes] if promoted else list(lanes)
        name = cname
        if isinstance(work[0].type, ir.FloatType):  # glibc: remquof, but lgammaf_r
            name = cname.replace("_r", "f_r") if cname.endswith("_r") else cname + "f"
        result = t.intrinsic(name, work[0].type, [*work, slot])
        out_lanes.append(t.b.load(slot, typ=I32))
        return t.b.fptrunc(result, HALF) if promoted else result

    result = per_lane(t, ty, args, scalar)
    if isinstance(ty, ir.VectorType):
        packed = ir.Constant(like(ty, I32), ir.Undefined)
        for i, value in enumerate(out_lanes):
            packed = t.b.insert_element(packed, value, ir.Constant(I32, i))
        t.b.store(packed, out)
    else:
        t.b.store(out_lanes[0], out)
    return result


@lowers("remquo")
def remquo(t, ty, args, inst):
    """remainder(x, y), and in *quo the low seven bits of the integral quotient with the
    sign of x/y (OpenCL C 3.0 6.15.2; C's remquo promises three). 0 is stored where the
    result is NaN (x infinite, y zero, a NaN).

    fmod(x, 128 y) is exact and keeps the quotient's low seven bits; its remainder by y is
    x's, and (r0 - rem) / |y| is that small quotient, whole within rounding. 128 y is exact
    (a power of two) or overflows, and then |x / y| < 128 already and fmod returns x."""
    x, y, quo = args
    b = t.b
    work = like(ty, FLOAT) if lane(ty) == HALF else ty  # half values are exact in float
    if work != ty:
        x, y = b.fpext(x, work), b.fpext(y, work)
    c = functools.partial(fconst, t, work)
    wide = b.fmul(y, c(128.0))
    r0 = b.frem(x, wide)
    rem = libm(t, "remainder", work, [r0, y])
    # Where 128 y overflows, r0 = x and r0 - rem can overflow too (x = FLT_MAX, y = 2e38:
    # x - rem = 4e38, and the quotient came out 0, not 2). There |y| > max / 128, so x, y
    # and rem (0 or a multiple of a large ulp) are far above the subnormals: halving them
    # all is exact, and keeps the difference finite.
    half = b.select(b.fcmp_ordered("==", fabs(t, wide), c(math.inf)), c(0.5), c(1.0))
    diff = b.fsub(b.fmul(r0, half), b.fmul(rem, half))
    k = intrinsic(t, "round", work, [b.fdiv(fabs(t, diff), fabs(t, b.fmul(y, half)))])
    i32 = like(work, I32)
    k = b.and_(b.fptosi(k, i32), t.constant(i32, 127))
    negative = b.xor(b.fcmp_ordered("<", x, c(0.0)), b.fcmp_ordered("<", y, c(0.0)))
    k = b.select(negative, b.neg(k), k)
    nan = b.fcmp_unordered("uno", rem, rem)
    b.store(b.select(nan, t.constant(i32, 0), k), quo)
    return rem if work == ty else b.fptrunc(rem, ty)


@lowers("lgamma_r")
def lgamma_r(t, ty, args, inst):
    """glibc's lgamma_r; the sign stored is 0 where x is zero or a negative integer (the
    poles, OpenCL C 3.0 7.5.1), where glibc stores +-1."""
    (x,) = args[:1]
    result = _with_int_out(t, ty, args[:1], args[1], "lgamma_r")
    xi = t.b.fpext(x, like(ty, FLOAT)) if lane(ty) == HALF else x
    pole = t.b.and_(
        t.b.fcmp_ordered("<=", xi, t.constant(xi.type, 0.0)),
        t.b.fcmp_ordered("==", intrinsic(t, "floor", xi.type, [xi]), xi),
    )
    i32 = like(ty, I32)
    sign = t.b.load(args[1], typ=i32)
    t.b.store(t.b.select(pole, t.constant(i32, 0), sign), args[1])
    return result


@lowers("nan")
def nan(t, ty, args, inst):
    (code,) = args
    ity = int_type_like(ty)
    width = lane(ity).width
    mantissa = {16: 10, 32: 23, 64: 52}[width]
    code = resize_int(t, code, ity, signed=False)
    quiet = t.constant(ity, ((1 << (width - 1 - mantissa)) - 1) << mantissa | 1 << (mantissa - 1))
    payload = t.b.and_(code, t.constant(ity, (1 << mantissa) - 1))
    return t.b.bitcast(t.b.or_(quiet, payload), ty)


def _pi_times(t: FunctionTranslator, ty: ir.Type, x: ir.Value) -> ir.Value:
    return t.b.fmul(fconst(t, ty, math.pi), x)


def _reduce_period_2(t: FunctionTranslator, ty: ir.Type, x: ir.Value) -> ir.Value:
    """x - 2 rint(x / 2): exact (Sterbenz), in [-1, 1]; NaN for infinite x."""
    half = t.b.fmul(x, fconst(t, ty, 0.5))
    return t.b.fsub(x, t.b.fmul(fconst(t, ty, 2.0), intrinsic(t, "rint", ty, [half])))


@lowers("sinpi")
def sinpi(t, ty, args, inst):
    """sin(pi x) with exact reduction to a in [0, 1/2], where pi * a loses no accuracy.

    Signs follow OpenCL C 3.0 section 7.5.1: sinpi(+-0) = +-0, sinpi(n) = +0 for n > 0 and
    -0 for n < 0.
    """
    return widened(t, ty, args, FLOAT, lambda wty, a: _sinpi(t, wty, a[0]))


def _sinpi(t: FunctionTranslator, ty: ir.Type, x: ir.Value) -> ir.Value:
    b = t.b
    r = _reduce_period_2(t, ty, x)
    a = fabs(t, r)
    a = b.select(b.fcmp_ordered(">", a, fconst(t, ty, 0.5)), b.fsub(fconst(t, ty, 1.0), a), a)
    magnitude = libm(t, "sin", ty, [_pi_times(t, ty, a)])
    sign = b.select(b.fcmp_ordered("==", a, fconst(t, ty, 0.0)), x, r)  # integers: x's sign
    return intrinsic(t, "copysign", ty, [magnitude, sign])


@lowers("cospi")
def cospi(t, ty, args, inst):
    """cos(pi x) = sin(pi (1/2 - r)) for r = |x| reduced exactly to [0, 1]; cospi(n + 1/2) = +0."""

    def compute(wty, a):
        r = fabs(t, _reduce_period_2(t, wty, a[0]))
        return libm(t, "sin", wty, [_pi_times(t, wty, t.b.fsub(fconst(t, wty, 0.5), r))])

    return widened(t, ty, args, FLOAT, compute)


@lowers("tanpi")
def tanpi(t, ty, args, inst):
    """tan(pi r), r = x - rint(x) in [-1/2, 1/2]; for |r| > 1/4 as 1 / tan(pi (1/2 - |r|)),
    whose argument is exact, so results near the poles keep their accuracy.

    Signs follow OpenCL C 3.0 section 7.5.1: tanpi(n) is a zero with the sign of x, flipped
    for odd n; tanpi(n + 1/2) is +inf for even n and -inf for odd n.
    """
    return widened(t, ty, args, FLOAT, lambda wty, a: _tanpi(t, wty, a[0]))


def _tanpi(t: FunctionTranslator, ty: ir.Type, x: ir.Value) -> ir.Value:
    b = t.b
    c = functools.partial(fconst, t, ty)
    r = b.fsub(x, intrinsic(t, "rint", ty, [x]))
    ar = fabs(t, r)
    near = libm(t, "tan", ty, [_pi_times(t, ty, r)])
    cot = libm(t, "tan", ty, [_pi_times(t, ty, b.fsub(c(0.5), ar))])
    far = b.fdiv(intrinsic(t, "copysign", ty, [c(1.0), r]), cot)
    odd = b.fcmp_ordered("!=", _reduce_period_2(t, ty, x), c(0.0))
    zero = intrinsic(t, "copysign", ty, [c(0.0), b.select(odd, b.fneg(x), x)])
    return select_all(
        t,
        [(b.fcmp_ordered("==", r, c(0.0)), zero), (b.fcmp_ordered(">", ar, c(0.25)), far)],
        near,
    )


@lowers("asinpi", "acospi", "atanpi")
def inverse_pi(t, ty, args, inst):
    name = OpenCLStd(inst.operands[1]).name[:4]
    return t.b.fdiv(libm(t, name, ty, args), fconst(t, ty, math.pi))


@lowers("atan2pi")
def atan2pi(t, ty, args, inst):
    return t.b.fdiv(libm(t, "atan2", ty, args), fconst(t, ty, math.pi))


@lowers("fdim")
def fdim(t, ty, args, inst):
    x, y = args
    result = t.b.select(t.b.fcmp_ordered(">", x, y), t.b.fsub(x, y), fconst(t, ty, 0.0))
    either_nan = t.b.fcmp_unordered("uno", x, y)
    return t.b.select(either_nan, t.b.fadd(x, y), result)


@lowers("maxmag", "minmag")
def maxmag_minmag(t, ty, args, inst):
    x, y = args
    ax, ay = fabs(t, x), fabs(t, y)
    bigger = OpenCLStd(inst.operands[1]).name == "maxmag"
    op = ">" if bigger else "<"
    tie = intrinsic(t, "maxnum" if bigger else "minnum", ty, [x, y])
    return t.b.select(
        t.b.fcmp_ordered(op, ax, ay), x, t.b.select(t.b.fcmp_ordered(op, ay, ax), y, tie)
    )


# -- common functions --------------------------------------------------------------------


@lowers("fclamp")
def fclamp(t, ty, args, inst):
    x, lo, hi = splat_all(t, ty, args)
    return intrinsic(t, "minnum", ty, [intrinsic(t, "maxnum", ty, [x, lo]), hi])


@lowers("degrees", "radians")
def degrees_radians(t, ty, args, inst):
    factor = 180.0 / math.pi if OpenCLStd(inst.operands[1]).name == "degrees" else math.pi / 180.0
    return t.b.fmul(args[0], fconst(t, ty, factor))


@lowers("mix")
def mix(t, ty, args, inst):
    x, y, a = splat_all(t, ty, args)
    return t.b.fadd(x, t.b.fmul(t.b.fsub(y, x), a))


@lowers("step")
def step(t, ty, args, inst):
    edge, x = splat_all(t, ty, args)
    return t.b.select(t.b.fcmp_ordered("<", x, edge), fconst(t, ty, 0.0), fconst(t, ty, 1.0))


@lowers("smoothstep")
def smoothstep(t, ty, args, inst):
    e0, e1, x = splat_all(t, ty, args)
    s = t.b.fdiv(t.b.fsub(x, e0), t.b.fsub(e1, e0))
    s = intrinsic(
        t, "minnum", ty, [intrinsic(t, "maxnum", ty, [s, fconst(t, ty, 0.0)]), fconst(t, ty, 1.0)]
    )
    return t.b.fmul(t.b.fmul(s, s), t.b.fsub(fconst(t, ty, 3.0), t.b.fmul(fconst(t, ty, 2.0), s)))


@lowers("sign")
def sign(t, ty, args, inst):
    (x,) = args
    result = t.b.select(t.b.fcmp_ordered(">", x, fconst(t, ty, 0.0)), fconst(t, ty, 1.0), x)
    result = t.b.select(t.b.fcmp_ordered("<", x, fconst(t, ty, 0.0)), fconst(t, ty, -1.0), result)
    return t.b.select(t.b.fcmp_unordered("uno", x, x), fconst(t, ty, 0.0), result)


# -- geometric functions -----------------------------------------------------------------


def _dot(t: FunctionTranslator, a: ir.Value, b: ir.Value) -> ir.Value:
    if not isinstance(a.type, ir.VectorType):
        return t.b.fmul(a, b)
    products = t.b.fmul(a, b)
    total = t.b.extract_element(products, ir.Constant(I32, 0))
    for i in range(1, a.type.count):
        total = t.b.fadd(total, t.b.extract_element(products, ir.Constant(I32, i)))
    return total


# Sums of squares overflow or underflow long before the length does: like libclc, when
# the plain sum is below the smallest normal or infinite, the vector is scaled by a power
# of two (exact) chosen so that four squares neither underflow nor overflow, and the
# result is scaled back. Half computes in float, whose range covers half's squares.
# (exponent to scale up by, exponent to scale down by) per lane width.
_GEOMETRIC_SCALES = {32: (86, 65), 64: (563, 513)}


def _geometric_in(t: FunctionTranslator, ty: ir.Type, values: list[ir.Value]):
    """The arguments in the type the geometric functions compute in (float for half)."""
    if lane(ty) != HALF:
        return ty, values
    wide = like(ty, FLOAT)
    return wide, [t.b.fpext(v, like(v.type, FLOAT)) for v in values]


def _scaled_squares(t: FunctionTranslator, x: ir.Value) -> tuple[ir.Value, ir.Value, ir.Value]:
    """(x scaled by a power of two, its sum of squares, the factor that undoes the scaling
    on a length) with the sum of squares free of overflow and underflow."""
    scalar = lane(x.type)
    up, down = _GEOMETRIC_SCALES[64 if scalar == DOUBLE else 32]
    tiny = 2.0**-1022 if scalar == DOUBLE else 2.0**-126
    l2 = _dot(t, x, x)
    small = t.b.fcmp_ordered("<", l2, ir.Constant(scalar, tiny))
    huge = t.b.fcmp_ordered("==", l2, ir.Constant(scalar, math.inf))

    def pick(if_small: float, if_huge: float) -> ir.Value:
        value = t.b.select(huge, ir.Constant(scalar, if_huge), ir.Constant(scalar, 1.0))
        return t.b.select(small, ir.Constant(scalar, if_small), value)

    xs = t.b.fmul(x, t.splat(pick(2.0**up, 2.0**-down), x.type))
    return xs, _dot(t, xs, xs), pick(2.0**-up, 2.0**down)


def _length(t: FunctionTranslator, x: ir.Value) -> ir.Value:
    _, l2, back = _scaled_squares(t, x)
    result = t.b.fmul(intrinsic(t, "sqrt", l2.type, [l2]), back)
    # An infinite lane makes the length infinite even next to a NaN (as hypot does).
    scalar = lane(x.type)
    largest = fabs(t, x)
    if isinstance(x.type, ir.VectorType):
        name = f"llvm.vector.reduce.fmax.{overload_suffix(x.type)}"
        largest = t.intrinsic(name, scalar, [largest])
    infinite = t.b.fcmp_ordered("==", largest, ir.Constant(scalar, math.inf))
    return t.b.select(infinite, ir.Constant(scalar, math.inf), result)


# fast_length/fast_distance/fast_normalize may be computed as the plain formulas with
# half_sqrt (OpenCL C 3.0 6.15.6); the scaled forms are as fast on the CPU and never
# overflow, so the fast variants share them.
@lowers("length", "fast_length")
def length(t, ty, args, inst):
    wide, (x,) = _geometric_in(t, ty, args)
    result = _length(t, x)
    return result if wide == ty else t.b.fptrunc(result, ty)


@lowers("distance", "fast_distance")
def distance(t, ty, args, inst):
    # If p0 - p1 overflows, the distance is at least that lane: infinite as well.
    wide, (a, b) = _geometric_in(t, ty, args)
    result = _length(t, t.b.fsub(a, b))
    return result if wide == ty else t.b.fptrunc(result, ty)


@lowers("normalize", "fast_normalize")
def normalize(t, ty, args, inst):
    """p / length(p); p when every lane is zero; NaN in every lane when one is NaN; with
    infinite lanes, as if they were ±1 and the others ±0 (OpenCL C 3.0 6.15.6)."""
    wide, (x,) = _geometric_in(t, ty, args)
    scalar = lane(wide)
    xs, l2, _ = _scaled_squares(t, x)
    infinite = t.b.fcmp_ordered("==", l2, ir.Constant(scalar, math.inf))
    is_inf = t.b.fcmp_ordered("==", fabs(t, xs), t.splat(ir.Constant(scalar, math.inf), wide))
    zero_or_one = t.b.select(is_inf, fconst(t, wide, 1.0), fconst(t, wide, 0.0))
    unit = intrinsic(t, "copysign", wide, [zero_or_one, xs])
    xs = t.b.select(infinite, unit, xs)  # a scalar condition selects whole vectors
    l2 = t.b.select(infinite, _dot(t, xs, xs), l2)
    scaled = t.b.fdiv(xs, t.splat(intrinsic(t, "sqrt", scalar, [l2]), wide))
    is_zero = t.b.fcmp_ordered("==", l2, ir.Constant(scalar, 0.0))
    result = t.b.select(is_zero, x, scaled)
    return result if wide == ty else t.b.fptrunc(result, ty)


@lowers("cross")
def cross(t, ty, args, inst):
    a, b = args

    def at(v, i):
        return t.b.extract_element(v, ir.Constant(I32, i))

    parts = [
        t.b.fsub(t.b.fmul(at(a, 1), at(b, 2)), t.b.fmul(at(a, 2), at(b, 1))),
        t.b.fsub(t.b.fmul(at(a, 2), at(b, 0)), t.b.fmul(at(a, 0), at(b, 2))),
        t.b.fsub(t.b.fmul(at(a, 0), at(b, 1)), t.b.fmul(at(a, 1), at(b, 0))),
    ]
    result = ir.Constant(ty, [ir.Constant(ty.element, 0.0)] * ty.count)
    for i, part in enumerate(parts):
        result = t.b.insert_element(result, part, ir.Constant(I32, i))
    return result


# -- integer functions -------------------------------------------------------------------


def _signed_name(name: str) -> bool:
    return name.startswith("s_")


@lowers("s_abs", "u_abs")
def int_abs(t, ty, args, inst):
    (x,) = args
    if OpenCLStd(inst.operands[1]).name == "u_abs":
        return x
    negative = t.b.icmp_signed("<", x, t.constant(x.type, 0))
    return t.b.select(negative, t.b.sub(t.constant(x.type, 0), x), x)


@lowers("s_abs_diff", "u_abs_diff")
def abs_diff(t, ty, args, inst):
    x, y = args
    cmp = t.b.icmp_signed if _signed_name(OpenCLStd(inst.operands[1]).name) else t.b.icmp_unsigned
    return t.b.select(cmp(">", x, y), t.b.sub(x, y), t.b.sub(y, x))


@lowers("s_add_sat", "u_add_sat", "s_sub_sat", "u_sub_sat")
def add_sub_sat(t, ty, args, inst):
    name = OpenCLStd(inst.operands[1]).name
    op = ("s" if name[0] == "s" else "u") + ("add" if "add" in name else "sub")
    return intrinsic(t, f"{op}.sat", ty, args)


@lowers("s_hadd", "u_hadd", "s_rhadd", "u_rhadd")
def hadd(t, ty, args, inst):
    x, y = args
    name = OpenCLStd(inst.operands[1]).name
    one = t.constant(ty, 1)
    shift = t.b.ashr if name[0] == "s" else t.b.lshr
    base = t.b.add(shift(x, one), shift(y, one))
    carry = t.b.or_(x, y) if "rhadd" in name else t.b.and_(x, y)
    return t.b.add(base, t.b.and_(carry, one))


@lowers("s_clamp", "u_clamp")
def int_clamp(t, ty, args, inst):
    x, lo, hi = splat_all(t, ty, args)
    s = "s" if OpenCLStd(inst.operands[1]).name[0] == "s" else "u"
    return intrinsic(t, f"{s}min", ty, [intrinsic(t, f"{s}max", ty, [x, lo]), hi])


@lowers("s_max", "u_max", "s_min", "u_min")
def int_min_max(t, ty, args, inst):
    name = OpenCLStd(inst.operands[1]).name
    return intrinsic(t, name[0] + name[2:], ty, splat_all(t, ty, args))


@lowers("clz", "ctz")
def count_zeros(t, ty, args, inst):
    name = "ctlz" if OpenCLStd(inst.operands[1]).name == "clz" else "cttz"
    return intrinsic(t, name, ty, [args[0], ir.Constant(I1, 0)])


@lowers("popcount")
def popcount(t, ty, args, inst):
    return intrinsic(t, "ctpop", ty, args)


@lowers("rotate")
def rotate(t, ty, args, inst):
    x, n = args
    return intrinsic(t, "fshl", ty, [x, x, n])


def _widened(t: FunctionTranslator, ty: ir.Type) -> ir.Type:
    return like(ty, ir.IntType(lane(ty).width * 2))


def mul_hi_value(
    t: FunctionTranslator, ty: ir.Type, x: ir.Value, y: ir.Value, signed: bool
) -> ir.Value:
    wide = _widened(t, ty)
    ext = t.b.sext if signed else t.b.zext
    product = t.b.mul(ext(x, wide), ext(y, wide))
    return t.b.trunc(t.b.lshr(product, t.constant(wide, lane(ty).width)), ty)


@lowers("s_mul_hi", "u_mul_hi")
def mul_hi(t, ty, args, inst):
    return mul_hi_value(t, ty, args[0], args[1], OpenCLStd(inst.operands[1]).name[0] == "s")


@lowers("s_mad_hi", "u_mad_hi")
def mad_hi(t, ty, args, inst):
    return t.b.add(
        mul_hi_value(t, ty, args[0], args[1], OpenCLStd(inst.operands[1]).name[0] == "s"), args[2]
    )


@lowers("s_mad_sat", "u_mad_sat")
def mad_sat(t, ty, args, inst):
    x, y, z = args
    signed = OpenCLStd(inst.operands[1]).name[0] == "s"
    width = lane(ty).width
    # Twice the width plus one bit holds x*y + z exactly.
    wide = like(ty, ir.IntType(width * 2 + 2))
    ext = t.b.sext if signed else t.b.zext
    total = t.b.add(t.b.mul(ext(x, wide), ext(y, wide)), ext(z, wide))
    if signed:
        lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
        total = t.b.select(
            t.b.icmp_signed(">", total, t.constant(wide, hi)), t.constant(wide, hi), total
        )
        total = t.b.select(
            t.b.icmp_signed("<", total, t.constant(wide, lo)), t.constant(wide, lo), total
        )
    else:
        hi = (1 << width) - 1
        total = t.b.select(
            t.b.icmp_unsigned(">", total, t.constant(wide, hi)), t.constant(wide, hi), total
        )
    return t.b.trunc(total, ty)


@lowers("s_mad24", "u_mad24")
def mad24(t, ty, args, inst):
    return t.b.add(t.b.mul(args[0], args[1]), args[2])


@lowers("s_mul24", "u_mul24")
def mul24(t, ty, args, inst):
    return t.b.mul(args[0], args[1])


@lowers("s_upsample", "u_upsample")
def upsample(t, ty, args, inst):
    hi, lo = args
    ext = t.b.sext if OpenCLStd(inst.operands[1]).name[0] == "s" else t.b.zext
    width = lane(hi.type).width
    return t.b.or_(t.b.shl(ext(hi, ty), t.constant(ty, width)), t.b.zext(lo, ty))


@lowers("bitselect")
def bitselect(t, ty, args, inst):
    a, b, c = args
    is_float = not isinstance(lane(ty), ir.IntType)
    if is_float:
        ity = int_type_like(ty)
        a, b, c = (t.b.bitcast(v, ity) for v in (a, b, c))
    result = t.b.or_(t.b.and_(a, t.b.not_(c)), t.b.and_(b, c))
    return t.b.bitcast(result, ty) if is_float else result


@lowers("select")
def cl_select(t, ty, args, inst):
    a, b, c = args
    if isinstance(c.type, ir.VectorType):
        cond = t.b.icmp_signed("<", c, t.constant(c.type, 0))  # vectors test the sign bit
    else:
        cond = t.b.icmp_unsigned("!=", c, t.constant(c.type, 0))
    return t.b.select(cond, b, a)


# -- vector loads and stores -------------------------------------------------------------


def _element_align(t: FunctionTranslator, ty: ir.Type) -> int:
    return ty.get_abi_alignment(t.mt.target_data)


def _offset_pointer(
    t: FunctionTranslator, ptr: ir.Value, element: ir.Type, offset: ir.Value, stride: int
) -> ir.Value:
    offset = t.b.zext(offset, I64) if offset.type.width < 64 else offset
    index = t.b.mul(offset, ir.Constant(I64, stride))
    return t.b.gep(ptr, [index], source_etype=element)


# The pointer operand's position in the OpExtInst's operands (set, number, then the
# built-in's arguments): vload*(offset, p) and vstore*(data, offset, p).
_LOAD_POINTER, _STORE_POINTER = 3, 4


def _checked(
    t: FunctionTranslator,
    inst: Instruction,
    address: ir.Value,
    element: ir.Type,
    count: int,
    store: bool,
    access: Callable[[], ir.Value | None],  # a store's returns None
) -> ir.Value | None:
    """``access()``, bounds-checked in checked mode like OpLoad/OpStore: ``count``
    elements at ``address`` (the pointer operand + offset * stride) must lie inside the
    pointer operand's array. The size is the elements' (12 bytes for a float3, not its
    16-byte allocation: vload3/vstore3 touch 3 floats)."""
    size = count * element.get_abi_size(t.mt.target_data)
    pointer_id = inst.operands[_STORE_POINTER if store else _LOAD_POINTER]
    return checks.guarded(t, pointer_id, address, size, store, access, at_id=False)


@lowers("vloadn")
def vloadn(t, ty, args, inst):
    offset, ptr, _n = args
    address = _offset_pointer(t, ptr, ty.element, offset, ty.count)
    align = _element_align(t, ty.element)

    def load() -> ir.Value:
        return t.b.load(address, typ=ty, align=align)

    return _checked(t, inst, address, ty.element, ty.count, False, load)


@lowers("vstoren")
def vstoren(t, ty, args, inst):
    data, offset, ptr = args
    element, n = data.type.element, data.type.count
    address = _offset_pointer(t, ptr, element, offset, n)
    align = _element_align(t, element)

    def store() -> None:
        t.b.store(data, address, align=align)

    _checked(t, inst, address, element, n, True, store)


@lowers("vload_half")
def vload_half(t, ty, args, inst):
    offset, ptr = args[:2]
    address = _offset_pointer(t, ptr, HALF, offset, 1)
    half = _checked(t, inst, address, HALF, 1, False, lambda: t.b.load(address, typ=HALF, align=2))
    return t.b.fpext(half, ty)


@lowers("vload_halfn", "vloada_halfn")
def vload_halfn(t, ty, args, inst):
    offset, ptr = args[:2]
    aligned = OpenCLStd(inst.operands[1]).name == "vloada_halfn"
    n = ty.count
    stride = 4 if aligned and n == 3 else n
    vec_ty = ir.VectorType(HALF, n)
    align = 2 * stride if aligned else 2
    address = _offset_pointer(t, ptr, HALF, offset, stride)
    halves = _checked(
        t, inst, address, HALF, n, False, lambda: t.b.load(address, typ=vec_ty, align=align)
    )
    return t.b.fpext(halves, ty)


_HALF_STORES = {
    "vstore_half": (False, False, False),
    "vstore_half_r": (False, True, False),
    "vstore_halfn": (True, False, False),
    "vstore_halfn_r": (True, True, False),
    "vstorea_halfn": (True, False, True),
    "vstorea_halfn_r": (True, True, True),
}


@lowers(*_HALF_STORES)
def vstore_half(t, ty, args, inst):
    vector, with_mode, aligned = _HALF_STORES[OpenCLStd(inst.operands[1]).name]
    data, offset, ptr = args[:3]
    mode = FPRoundingMode.RTE
    if with_mode:
        mode = inst.operands[5]
    halves = float_to_float(t, data, like(data.type, HALF), mode)
    n = data.type.count if vector and isinstance(data.type, ir.VectorType) else 1
    stride = 4 if aligned and n == 3 else n
    address = _offset_pointer(t, ptr, HALF, offset, stride)
    align = 2 * stride if aligned else 2

    def store() -> None:
        t.b.store(halves, address, align=align)

    _checked(t, inst, address, HALF, n, True, store)


# -- shuffles, printf, prefetch ----------------------------------------------------------


def _dynamic_shuffle(
    t: FunctionTranslator, ty: ir.Type, source: ir.Value, mask: ir.Value, count: int
) -> ir.Value:
    # OpenCL uses only the low bits of each mask lane that can index the inputs.
    limit = t.constant(mask.type, count - 1)
    indices = t.b.and_(mask, limit)
    result = ir.Constant(ty, ir.Undefined)
    for i in range(ty.count):
        index = t.b.extract_element(indices, ir.Constant(I32, i))
        result = t.b.insert_element(result, t.b.extract_element(source, index), ir.Constant(I32, i))
    return result


@lowers("shuffle")
def shuffle(t, ty, args, inst):
    x, mask = args
    return _dynamic_shuffle(t, ty, x, mask, x.type.count)


@lowers("shuffle2")
def shuffle2(t, ty, args, inst):
    x, y, mask = args
    n = x.type.count
    both = t.b.shuffle_vector(x, y, ir.Constant(ir.VectorType(I32, 2 * n), list(range(2 * n))))
    return _dynamic_shuffle(t, ty, both, mask, 2 * n)


@lowers("prefetch")
def prefetch(t, ty, args, inst):
    return None


@lowers("printf")
def printf(t, ty, args, inst):
    raise t.error("printf is not supported on the host CPU yet")
