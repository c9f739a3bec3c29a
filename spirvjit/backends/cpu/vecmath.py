"""Single-precision ``exp`` as inline LLVM IR for the CPU back end.

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
``log`` stays libmvec's: the same approach (Cephes ``logf``, a degree-8 polynomial, no
table) ran at half libmvec's speed.

Accuracy (OpenCL C 3.0 section 7.4: exp within 3 ulp): Cephes' ``expf`` polynomial after
a two-step Cody-Waite reduction by ln 2; at most 1.008 ulp from the correctly rounded
result over every float (tests/kernels/test_vecmath.py: a dense sweep in CI, every float
as a slow test). Special values as C99 Annex F: exp(NaN) = NaN, exp(+inf) = +inf,
exp(-inf) = +0, overflow to +inf, gradual underflow to subnormals and 0.
"""

from __future__ import annotations

import re
import struct

from llvmlite import ir

F32 = ir.FloatType()
I32 = ir.IntType(32)

# Functions replaced: the C names and libmvec's vector variants (x86-64 vector function
# ABI: ISA letter, lane count, one vector argument).
_VARIANT = re.compile(r"_ZGV[bcde]N(\d+)v_expf$")


def inline_math(module: ir.Module) -> int:
    """Points every call of ``expf`` and of its libmvec variants in ``module`` at the
    inline definition of its type; returns how many calls changed."""
    targets = {}
    for fn in list(module.functions):
        name = fn.name
        if fn.blocks:
            continue
        if name == "expf":
            targets[fn] = F32
        elif found := _VARIANT.match(name):
            targets[fn] = ir.VectorType(F32, int(found.group(1)))
    if not targets:
        return 0
    return retarget_calls(
        module,
        {
            fn: exp_definition(module, ty)
            for fn, ty in targets.items()
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
    """``spirvjit.math.exp.<ty>``: the inline ``exp`` of float or a vector of float
    ``ty``, defined in ``module`` once."""
    suffix = f"v{ty.count}f32" if isinstance(ty, ir.VectorType) else "f32"
    name = f"spirvjit.math.exp.{suffix}"
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    fn = ir.Function(module, ir.FunctionType(ty, [ty]), name)
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    fn.attributes.add("readnone")
    e = _Emitter(fn, ty)
    e.b.ret(_exp(e, fn.args[0]))
    return fn


class _Emitter:
    """Builds float (or vector-of-float) arithmetic: constants splat to the type."""

    def __init__(self, fn: ir.Function, ty: ir.Type) -> None:
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.ty = ty
        self.ity = ir.VectorType(I32, ty.count) if isinstance(ty, ir.VectorType) else I32
        self.module = fn.module

    def f(self, value: float) -> ir.Constant:
        value = struct.unpack("<f", struct.pack("<f", value))[0]  # a float32 constant
        if isinstance(self.ty, ir.VectorType):
            return ir.Constant(self.ty, [ir.Constant(F32, value)] * self.ty.count)
        return ir.Constant(F32, value)

    def i(self, value: int) -> ir.Constant:
        if isinstance(self.ity, ir.VectorType):
            return ir.Constant(self.ity, [ir.Constant(I32, value)] * self.ity.count)
        return ir.Constant(I32, value)

    def fmuladd(self, a, c, d):
        """a * c + d, fused where the target has FMA (llvm.fmuladd)."""
        suffix = f"v{self.ty.count}f32" if isinstance(self.ty, ir.VectorType) else "f32"
        name = f"llvm.fmuladd.{suffix}"
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
