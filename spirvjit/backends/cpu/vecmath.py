"""``exp`` of float and of double, ``log`` of float, as inline LLVM IR for the CPU back end.

The translator lowers ``exp`` (and ``native_exp``, ``half_exp``) on float to calls of
the C library's ``expf``, whose declaration names glibc's libmvec variants
(translate/mathlib.py), and whole-function vectorization calls those variants
(``_ZGVdN8v_expf``). A call is opaque to the optimizer and every vector register is
caller-saved in the vector function ABI, so a kernel with several calls spills its live
values around each one (Black-Scholes: five ``exp`` per option). :func:`inline_math`
replaces those calls, scalar and vector, by calls of the branch-free definition below
(``alwaysinline``): after inlining, the loop vectorizer widens it like any arithmetic,
and the scalar remainder and the vector body compute bit for bit the same results.

Measured on an AMD EPYC (Zen 3, AVX2), one thread, CPU time: four ``exp`` per element
8.6 ms against libmvec's 9.2 ms; the suite's Black-Scholes 31 ms against 34 ms (median).
(``log`` was left to libmvec then: Cephes' ``logf``, a degree-8 polynomial, no table, ran at
half libmvec's speed.)

Accuracy (OpenCL C 3.0 section 7.4: exp within 3 ulp): Cephes' ``expf`` polynomial after
a two-step Cody-Waite reduction by ln 2; at most 1.008 ulp from the correctly rounded
result over every float (tests/kernels/test_vecmath.py: a dense sweep in CI, every float
as a slow test). Special values as C99 Annex F: exp(NaN) = NaN, exp(+inf) = +inf,
exp(-inf) = +0, overflow to +inf, gradual underflow to subnormals and 0.

Double ``exp`` (:func:`_exp_f64`): libmvec's variants err by up to 3.12 ulp
(translate/mathlib.OUT_OF_BOUNDS), so no vectorizer may call them and the calls stayed
glibc's scalar ``exp`` (mathcalls does not wrap it): 4x slower in vectorized loops. The
inline definition (Cody-Waite reduction with fdlibm's ln 2 split, a degree-12 polynomial
by Estrin's scheme, scaling in two steps) is within 0.61 ulp where the result is normal
and 0.76 ulp where it is subnormal (mpmath, 74 million inputs; the CI test samples every
binade). It has no ``fmuladd``: every operation rounds once on every target, so SSE
(x86-64-v2), AVX2 with FMA and AVX-512 compute the same bits, as do the scalar and vector
paths. Cost (1M elements, one thread, AVX-512 host): vectorized 0.88 ms, libmvec's
0.88 ms, glibc's scalar ``exp`` 3.5 ms; one work-item per group 7.9 ms against scalar
``exp``'s 7.7 ms.

Float ``log`` (:func:`_log`; and ``native_log``, ``half_log``): libmvec's variants err by
up to 3.95 ulp on every ISA (bound 3), and computing through libmvec's double variant cost
2.5x their time in vectorized loops. The inline definition reduces x = 2^k m exactly on the
bits, evaluates a degree-8 polynomial in float (16 lanes to an AVX-512 register) and the
rest, k ln2 + f - f^2 / 2 + f^3 / 3, in double, with one rounding at the end: within 0.536
ulp over every float (tests/kernels/test_vecmath.py), correctly rounded at libmvec's
witnesses. No ``fmuladd``: SSE, AVX2 and AVX-512 targets and the scalar and vector paths
give the same bits. Special values as C99 Annex F: log(+-0) = -inf, log(x < 0) = NaN,
log(+inf) = +inf, log(NaN) = NaN; subnormal inputs are scaled by 2^23 first. Cost:
benchmarks/libm_bounds_ab.py (module docstring of that file and docs/devicelib.md).
"""

from __future__ import annotations

import math
import re
import struct

from llvmlite import ir

F32 = ir.FloatType()
F64 = ir.DoubleType()
I32 = ir.IntType(32)
I64 = ir.IntType(64)

# Functions replaced: the C names and libmvec's vector variants (x86-64 vector function
# ABI: ISA letter, lane count, one vector argument), with their lane type.
_LANE = {"expf": F32, "exp": F64, "logf": F32}
_VARIANT = re.compile(r"_ZGV[bcde]N(\d+)v_(expf?|logf)$")
# The C names replaced (benchmarks/libm_bounds_ab.py times logf without its definition).
INLINED = set(_LANE)


def inline_math(module: ir.Module) -> int:
    """Points every call of ``expf``, ``exp`` and ``logf`` and of their libmvec variants in
    ``module`` at the inline definition of its type; returns how many calls changed."""
    targets = {}
    for fn in list(module.functions):
        name = fn.name
        if fn.blocks:
            continue
        if name in _LANE and name in INLINED:
            targets[fn] = name, _LANE[name]
        elif (found := _VARIANT.match(name)) and found.group(2) in INLINED:
            lane = _LANE[found.group(2)]
            targets[fn] = found.group(2), ir.VectorType(lane, int(found.group(1)))
    if not targets:
        return 0
    return retarget_calls(
        module,
        {
            fn: (log_definition if c_name == "logf" else exp_definition)(module, ty)
            for fn, (c_name, ty) in targets.items()
            if fn.function_type == ir.FunctionType(ty, [ty])
        },
        targets,
    )


def retarget_calls(module: ir.Module, replacements: dict, declarations) -> int:
    """Points every call in ``module`` of a function in ``replacements`` at its
    replacement, then removes the ``declarations`` nothing uses any more (the back end
    would otherwise declare their libmvec variants for LLVM's vectorizers,
    codegen.optimize_here); returns how many calls changed."""
    changed, used = 0, set()
    for fn in list(module.functions):
        for block in fn.blocks:
            for inst in block.instructions:
                if isinstance(inst, ir.CallInstr) and inst.callee in replacements:
                    inst.replace_callee(replacements[inst.callee])
                    changed += 1
                    continue
                used.update(op for op in inst.operands if isinstance(op, ir.Function))
    for fn in declarations:
        if fn not in used:
            module.globals.pop(fn.name, None)
    return changed


def exp_definition(module: ir.Module, ty: ir.Type) -> ir.Function:
    """``spirvjit.math.exp.<ty>``: the inline ``exp`` of float, double or a vector of
    either ``ty``, defined in ``module`` once."""
    return _definition(module, "exp", ty, lambda e, x: (_exp_f64 if e.lane == F64 else _exp)(e, x))


def log_definition(module: ir.Module, ty: ir.Type) -> ir.Function:
    """``spirvjit.math.log.<ty>``: the inline ``log`` of float or of a vector of float
    ``ty``, defined in ``module`` once."""
    return _definition(module, "log", ty, _log)


def _definition(module: ir.Module, stem: str, ty: ir.Type, body) -> ir.Function:
    name = f"spirvjit.math.{stem}.{_suffix(ty)}"
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    fn = ir.Function(module, ir.FunctionType(ty, [ty]), name)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    fn.attributes.add("readnone")
    e = _Emitter(fn, ty)
    e.b.ret(body(e, fn.args[0]))
    return fn


def _suffix(ty: ir.Type) -> str:
    lane = ty.element if isinstance(ty, ir.VectorType) else ty
    bits = "f64" if lane == F64 else "f32"
    return f"v{ty.count}{bits}" if isinstance(ty, ir.VectorType) else bits


class _Emitter:
    """Builds float or double (or vector) arithmetic: constants splat to the type, integers
    are as wide as the lanes."""

    def __init__(self, fn: ir.Function, ty: ir.Type, builder: ir.IRBuilder | None = None) -> None:
        self.b = builder or ir.IRBuilder(fn.append_basic_block("entry"))
        self.ty = ty
        vector = isinstance(ty, ir.VectorType)
        self.lane = ty.element if vector else ty
        self.ilane = I64 if self.lane == F64 else I32
        self.ity = ir.VectorType(self.ilane, ty.count) if vector else self.ilane
        self.module = fn.module

    def widened(self) -> _Emitter:
        """An emitter of double lanes, as many as this one's, on the same builder."""
        vector = isinstance(self.ty, ir.VectorType)
        ty = ir.VectorType(F64, self.ty.count) if vector else F64
        return _Emitter(self.b.function, ty, self.b)

    def f(self, value: float) -> ir.Constant:
        if self.lane == F32:
            value = struct.unpack("<f", struct.pack("<f", value))[0]  # a float32 constant
        if isinstance(self.ty, ir.VectorType):
            return ir.Constant(self.ty, [ir.Constant(self.lane, value)] * self.ty.count)
        return ir.Constant(self.lane, value)

    def i(self, value: int) -> ir.Constant:
        if isinstance(self.ity, ir.VectorType):
            return ir.Constant(self.ity, [ir.Constant(self.ilane, value)] * self.ity.count)
        return ir.Constant(self.ilane, value)

    def fmuladd(self, a, c, d):
        """a * c + d, fused where the target has FMA (llvm.fmuladd)."""
        name = f"llvm.fmuladd.{_suffix(self.ty)}"
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(self.ty, [self.ty] * 3), name)
        return self.b.call(fn, [a, c, d])

    def poly(self, x, coefficients: list[float]):
        """Horner's rule: coefficients from the highest power down."""
        acc = self.f(coefficients[0])
        for c in coefficients[1:]:
            acc = self.fmuladd(acc, x, self.f(c))
        return acc

    def estrin(self, x, x2, coefficients: list[float]):
        """The polynomial of ``coefficients`` (from the highest power down) at ``x``, ``x2``
        being x * x, by Estrin's scheme: pairs c_2i + c_2i+1 x, then pairs of those with
        x^2, x^4, ...; each step a multiplication and an addition, each rounded. A few
        steps deep instead of one per coefficient: a lone lane's latency is lower."""
        b = self.b
        terms = [self.f(c) for c in reversed(coefficients)]
        power = x
        while len(terms) > 1:
            pairs = [
                b.fadd(terms[i], b.fmul(terms[i + 1], power)) for i in range(0, len(terms) - 1, 2)
            ]
            terms = pairs + terms[len(terms) - len(terms) % 2 :]
            if len(terms) > 1:
                power = x2 if power is x else b.fmul(power, power)
        return terms[0]

    def select(self, cond, on, off):
        return self.b.select(cond, on, off)


# Cody-Waite ln 2: the high part has 9 significant bits, so n * LN2_HI is exact for the
# |n| <= 150 of float's range; the low part carries the rest.
LN2_HI = 0.693359375
LN2_LO = -2.12194440e-4
LOG2E = 1.44269504088896341
# Adding and subtracting 1.5 * 2^23 rounds a float of magnitude below 2^22 to the nearest
# integer (ties to even), with no rounding instruction (SSE2 has none).
_ROUND = 12582912.0
_ROUND_BITS = 0x4B400000  # its representation
# Cephes expf: exp(r) = 1 + r + r^2 * P(r) on |r| <= ln2 / 2.
_EXP_P = [
    1.9875691500e-4,
    1.3981999507e-3,
    8.3334519073e-3,
    4.1665795894e-2,
    1.6666665459e-1,
    5.0000001201e-1,
]


def _exp(e: _Emitter, x):
    b = e.b
    # Clamped so that n below stays within [-150, 128]: beyond, the result is +inf or 0
    # anyway (exp(89) overflows, exp(-104) is below half the least subnormal). A NaN
    # passes both compares and the polynomial: the result is NaN without a test.
    xc = e.select(b.fcmp_ordered(">", x, e.f(89.0)), e.f(89.0), x)
    xc = e.select(b.fcmp_ordered("<", xc, e.f(-104.0)), e.f(-104.0), xc)
    # t = x * log2(e) + 1.5 * 2^23, rounded once: its low mantissa bits are n, the
    # nearest integer to x * log2(e) (ties to even), as a two's complement number.
    t = e.fmuladd(xc, e.f(LOG2E), e.f(_ROUND))
    n = b.fsub(t, e.f(_ROUND))
    r = e.fmuladd(n, e.f(-LN2_HI), xc)
    r = e.fmuladd(n, e.f(-LN2_LO), r)
    z = b.fmul(r, r)
    y = e.fmuladd(e.poly(r, _EXP_P), z, r)
    y = b.fadd(y, e.f(1.0))
    # y * 2^n as (y * 2^(n + k)) * 2^-k, k = 64 for negative x and -64 otherwise: both
    # factors are normal floats for every n in [-150, 128], the first product is exact
    # and the second rounds once, into the subnormals or to +inf where the result lies.
    negative = b.fcmp_ordered("<", xc, e.f(0.0))
    k = e.select(negative, e.i(64), e.i(-64))
    biased = b.add(b.bitcast(t, e.ity), b.add(k, e.i(127 - _ROUND_BITS)))
    scale = b.bitcast(b.shl(biased, e.i(23)), e.ty)
    return b.fmul(b.fmul(y, scale), e.select(negative, e.f(2.0**-64), e.f(2.0**64)))


# Double precision. Every operation is a single IEEE multiplication, addition or
# subtraction (no fmuladd): a target with FMA and one without (x86-64-v2) compute the same
# bits, as do the scalar and vector paths. fdlibm's ln 2: the high part has 32 significant
# bits, so n * LN2_HI_64 is exact for every |n| <= 1077 of double's range, and x - n *
# LN2_HI_64 is exact too; the low part carries the rest.
LN2_HI_64 = float.fromhex("0x1.62e42fee00000p-1")
LN2_LO_64 = float.fromhex("0x1.a39ef35793c76p-33")
LOG2E_64 = float.fromhex("0x1.71547652b82fep0")
# 1.5 * 2^52: adding and subtracting it rounds a double of magnitude below 2^51 to the
# nearest integer (ties to even); the low bits of the sum's representation are that integer.
_ROUND_64 = 6755399441055744.0
_ROUND_64_BITS = 0x4338000000000000
# exp(r) = 1 + r + r^2 * Q(r) on |r| <= ln2 / 2 (and a little beyond): a Chebyshev fit of
# (exp(r) - 1 - r) / r^2 of degree 10 (mpmath chebyfit, 200 bits), coefficients rounded to
# double; the approximation error is below 2^-61 of exp(r). (Degree 9 gave 2^-55.8, a
# quarter of an ulp.) Q(0) = 1/2 exactly.
_EXP_Q_64 = [
    float.fromhex(h)
    for h in (
        "0x1.1f72fc83bcbc7p-29",
        "0x1.af4ddda1c08cdp-26",
        "0x1.27e4db67ac2b0p-22",
        "0x1.71de0237484cdp-19",
        "0x1.a01a01a6d7831p-16",
        "0x1.a01a01abe6323p-13",
        "0x1.6c16c16c162d6p-10",
        "0x1.11111111100dfp-7",
        "0x1.5555555555556p-5",
        "0x1.5555555555557p-3",
        "0x1.0000000000000p-1",
    )
]
# Beyond these the result is +inf (exp(709.79) overflows) or +0 (exp(-745.14) is below
# half the least subnormal, 2^-1075); clamped, n stays within [-1077, 1025].
_EXP_MAX_64 = 710.0
_EXP_MIN_64 = -746.0


def _exp_f64(e: _Emitter, x):
    """exp of double lanes: Cody-Waite reduction x = n ln2 + r, |r| <= ln2 / 2, with r's
    rounding error c kept (r + c is x - n ln2 to about 2^-100); exp(r + c) = 1 + r + c +
    c r + r^2 Q(r), summed as (1 + r) + (the rounding error of 1 + r + c + c r + r^2 Q(r))
    so that the one large rounding is the last addition; then scaled by 2^n in two steps.
    Measured (mpmath; tests/kernels/test_vecmath.py): at most 0.607 ulp from exp(x) where
    the result is normal, 0.752 ulp where it is subnormal (one more rounding, into the
    subnormals' spacing), over 74 million random inputs."""
    b = e.b
    # A NaN passes both compares and every operation: the result is NaN without a test.
    xc = e.select(b.fcmp_ordered(">", x, e.f(_EXP_MAX_64)), e.f(_EXP_MAX_64), x)
    xc = e.select(b.fcmp_ordered("<", xc, e.f(_EXP_MIN_64)), e.f(_EXP_MIN_64), xc)
    # t = round(x * log2(e)) + 1.5 * 2^52: n = t - 1.5 * 2^52 is an integer near x log2(e)
    # (x log2(e) is rounded first, so |r| may exceed ln2 / 2 by a few ulps: harmless).
    t = b.fadd(b.fmul(xc, e.f(LOG2E_64)), e.f(_ROUND_64))
    n = b.fsub(t, e.f(_ROUND_64))
    r_hi = b.fsub(xc, b.fmul(n, e.f(LN2_HI_64)))  # exact
    r_lo = b.fmul(n, e.f(LN2_LO_64))
    r = b.fsub(r_hi, r_lo)
    c = b.fsub(b.fsub(r_hi, r), r_lo)  # r_hi - r_lo = r + c (Fast2Sum)
    # p = r^2 / 2 + r^3 Q1(r), Q(r) = 1/2 + r Q1(r): the larger term rounded once (r^2).
    r2 = b.fmul(r, r)
    assert _EXP_Q_64[-1] == 0.5
    q1 = e.estrin(r, r2, _EXP_Q_64[:-1])
    p = b.fadd(b.fmul(r2, e.f(0.5)), b.fmul(b.fmul(r2, r), q1))
    s = b.fadd(e.f(1.0), r)
    s_err = b.fadd(b.fsub(e.f(1.0), s), r)  # 1 + r = s + s_err exactly (Fast2Sum)
    tail = b.fadd(p, b.fadd(b.fadd(s_err, c), b.fmul(c, r)))
    y = b.fadd(s, tail)  # in [0.70, 1.42]
    # y * 2^n as (y * 2^(n + k)) * 2^-k, k = 64 for negative x and -64 otherwise: both
    # factors are normal doubles for every n in [-1077, 1025], the first product is exact
    # and the second rounds once, into the subnormals or to +inf where the result lies.
    negative = b.fcmp_ordered("<", xc, e.f(0.0))
    k = e.select(negative, e.i(64), e.i(-64))
    biased = b.add(b.bitcast(t, e.ity), b.add(k, e.i(1023 - _ROUND_64_BITS)))
    scale = b.bitcast(b.shl(biased, e.i(52)), e.ty)
    return b.fmul(b.fmul(y, scale), e.select(negative, e.f(2.0**-64), e.f(2.0**64)))


# Float log. x = 2^k m with m in [sqrt(1/2), sqrt(2)) (a float), f = m - 1 (exact, by
# Sterbenz's lemma), log(x) = k ln2 + f - f^2 / 2 + f^3 / 3 + f^4 S(f). S: a Chebyshev fit
# of (log1p(f) - f + f^2 / 2 - f^3 / 3) / f^4 of degree 8 on [sqrt(1/2) - 1, sqrt(2) - 1]
# (mpmath chebyfit, 200 bits), coefficients rounded to float, from the highest power down;
# the approximation error is below 2^-29 of log1p(f). (Degree 7: 2^-26.9, and 0.604 ulp
# on the dense sweep of test_vecmath.py where degree 8 gives 0.536.)
_LOG_S = [
    float.fromhex(h)
    for h in (
        "-0x1.05a176p-4",
        "0x1.ac6484p-4",
        "-0x1.af48b8p-4",
        "0x1.c44b88p-4",
        "-0x1.fe9d6cp-4",
        "0x1.2497ccp-3",
        "-0x1.5558ccp-3",
        "0x1.999996p-3",
        "-0x1.fffffep-3",
    )
]
LN2_64 = float.fromhex("0x1.62e42fefa39efp-1")
_SQRT_HALF_BITS = 0x3F3504F3  # sqrt(1/2) rounded to float
_HIGH_BITS = -(1 << 23)  # 0xff800000: the sign and exponent fields


def _log(e: _Emitter, x):
    """log of float lanes. The reduction is exact integer arithmetic on the float's bits.
    S(f) is evaluated in float (16 lanes to an AVX-512 register, where double takes two),
    the rest in double: (k ln2 + f) + (-f^2 / 2 + f^3 / 3) + f^4 S(f), where f^4 S(f) is
    at most 2% of log1p(f), so that S's float roundings move the result by less than
    2^-28 of it. No division, no table, no fmuladd (every target computes the same bits);
    one rounding to float at the end. Measured over every float (tests/kernels/
    test_vecmath.py): at most 0.536 ulp from log(x)."""
    b = e.b
    # Subnormals scaled by 2^23 into the normal range (so are 0 and negative inputs, whose
    # results are replaced below): the integer arithmetic reads their exponent.
    bits = b.bitcast(x, e.ity)
    tiny = b.icmp_signed("<", bits, e.i(0x00800000))
    bits = b.bitcast(e.select(tiny, b.fmul(x, e.f(2.0**23)), x), e.ity)
    # x = 2^k m, m in [sqrt(1/2), sqrt(2)): k counts the binades from sqrt(1/2)'s.
    offset = b.sub(bits, e.i(_SQRT_HALF_BITS))
    k = b.add(b.ashr(offset, e.i(23)), e.select(tiny, e.i(-23), e.i(0)))
    m = b.bitcast(b.sub(bits, b.and_(offset, e.i(_HIGH_BITS))), e.ty)
    f = b.fsub(m, e.f(1.0))  # exact
    s = e.estrin(f, b.fmul(f, f), _LOG_S)
    d = e.widened()
    fd = b.fpext(f, d.ty)
    f2 = b.fmul(fd, fd)  # exact: f has 24 significant bits
    # Summed so that the terms without S are added while S is evaluated (latency: a
    # kernel's calls of other functions leave little to overlap with).
    head = b.fadd(b.fmul(b.sitofp(k, d.ty), d.f(LN2_64)), fd)
    low = b.fadd(b.fmul(f2, d.f(-0.5)), b.fmul(b.fmul(f2, fd), d.f(1.0 / 3.0)))
    y = b.fadd(b.fadd(head, low), b.fmul(b.fmul(f2, f2), b.fpext(s, d.ty)))
    y = b.fptrunc(y, e.ty)
    # C99 Annex F: log(+inf) = +inf, log(+-0) = -inf, log(x < 0) = NaN, log(NaN) = NaN.
    special = e.select(b.fcmp_ordered("==", x, e.f(0.0)), e.f(-math.inf), e.f(math.nan))
    y = e.select(b.fcmp_ordered(">", x, e.f(0.0)), y, special)
    return e.select(b.fcmp_ordered("==", x, e.f(math.inf)), e.f(math.inf), y)
