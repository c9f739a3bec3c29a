"""The CPU back end's inline ``exp`` of float and double (backends/cpu/vecmath.py).

Checked against NumPy's float64 ``exp`` (whose error, below 1 ulp of a double, is far
below a float's ulp): a dense sweep over float bit patterns plus every float around the
overflow, subnormal and zero-result boundaries, through the three paths a kernel takes
(the loop-vectorized work-item loop, the scalar remainder, whole-function vectorization
of a kernel with a loop) and through ``float8`` arguments. The bound is OpenCL C 3.0's
3 ulp; the measured maximum is 1.008 ulp over every float (exp(26.728634)), 0.98 ulp on
the CI sweep. Every float: ``-m slow``.

Double: ~860,000 inputs (every binade of the result and of |x|, the thresholds, random bit
patterns) compared with glibc's scalar ``exp`` (within 0.511 ulp), mpmath measuring the
error where the bits differ: within 1 ulp, 0.65 where the result is normal (0.607 and 0.752
measured on 74 million inputs; 67 million with ``-m slow``); the special values of C99
Annex F; libmvec's 3.12-ulp input; the paths and the x86-64-v2 / v3 / host targets bit for
bit alike.

Float log: a dense sweep over bit patterns (within 0.536 ulp) plus the reduction's
boundaries, every subnormal's neighbourhood and 1's, against NumPy's float64 ``log``; the
special values of C99 Annex F; libmvec's witnesses (correctly rounded); the paths, targets,
``native_log`` and ``half_log`` bit for bit alike. Every float: ``-m slow`` (0.5363 ulp).
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from llvmlite import ir

import spirvjit
from spirvjit.backends.cpu import vecmath
from spirvjit.target import host_target, parse_cpu_target

ON_X86 = host_target().triple.startswith("x86_64")


def _source(fn: str, scalar: str, zero: str) -> str:
    """Kernels calling ``fn`` on ``scalar``: once per work-item (``<fn>_each``), in a loop
    (``<fn>_loop``: whole-function vectorization takes it) and on 8-lane vectors
    (``<fn>_vec8``)."""
    return f"""
kernel void {fn}_each(global const {scalar} *x, global {scalar} *y)
{{
    size_t i = get_global_id(0);
    y[i] = {fn}(x[i]);
}}

kernel void {fn}_loop(global const {scalar} *x, global {scalar} *y, int reps)
{{
    size_t i = get_global_id(0);
    {scalar} v = {zero};
    for (int r = 0; r < reps; r++)
        v = {fn}(x[i]);
    y[i] = v;
}}

kernel void {fn}_vec8(global const {scalar}8 *x, global {scalar}8 *y)
{{
    size_t i = get_global_id(0);
    y[i] = {fn}(x[i]);
}}
"""


SOURCE = _source("exp", "float", "0.0f")


def ulp_errors(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|got - ref| in units of the last place of float at ``ref`` (subnormal spacing
    below 2^-126); a reference beyond float's range counts as 2^128, as does +inf."""
    ref = np.minimum(ref, 2.0**128)
    magnitude = np.where(ref > 0, ref, 1.0)
    ulp = np.exp2(np.clip(np.floor(np.log2(magnitude)), -126, 127) - 23)
    value = np.where(np.isposinf(got), 2.0**128, got.astype(np.float64))
    errors = np.abs(value - ref) / ulp
    nan = np.isnan(ref)
    errors[nan] = np.where(np.isnan(got[nan]), 0.0, np.inf)
    errors[~nan & np.isnan(got)] = np.inf
    return errors


def _boundaries() -> np.ndarray:
    """Every float within 4096 of the overflow threshold, of the start of subnormal
    results, of the last non-zero result, and around 0; the subnormals' first bits."""
    around = [88.72283935546875, -87.33654475, -103.972084045410, 0.0, 1e-30]
    bits = []
    for value in around:
        center = np.array([value], np.float32).view(np.int32)[0]
        bits.append(np.arange(center - 4096, center + 4096, dtype=np.int64))
    signed = np.concatenate(bits)
    patterns = np.where(signed < 0, (1 << 31) | (-signed & 0x7FFFFFFF), signed)
    floats = patterns.astype(np.uint32).view(np.float32)
    return np.concatenate([floats, -floats, np.arange(1, 4096, dtype=np.uint32).view(np.float32)])


def _specials() -> np.ndarray:
    info = np.finfo(np.float32)
    values = [0.0, 1.0, np.inf, np.nan, info.max, info.tiny, info.smallest_subnormal, 89.0]
    values += [104.0, 88.0, 0.5, 1e-8]
    return np.array(values + [-v for v in values], np.float32)


def _sweep(step: int) -> np.ndarray:
    bits = np.arange(0, 1 << 32, step, dtype=np.uint64).astype(np.uint32)
    return np.concatenate([bits.view(np.float32), _boundaries(), _specials()])


@pytest.fixture
def program(build):
    return build(SOURCE)  # cached by the harness


def _each(program, fn: str, x: np.ndarray, local: int | None = None) -> np.ndarray:
    """``<fn>_each`` of ``x``, in work-groups of ``local``."""
    y = np.empty_like(x)
    program.kernel(f"{fn}_each")(x, y, global_size=x.size, local_size=local)
    return y


def _exp(program, x: np.ndarray, local: int | None = None) -> np.ndarray:
    return _each(program, "exp", x, local)


def _paths(program, fn: str, x: np.ndarray) -> list[np.ndarray]:
    """``fn`` of ``x`` (a multiple of 64 long) by the vectorized work-item loop, then by its
    scalar remainder (one work-item per group), by whole-function vectorization (the kernel
    with a loop) and through 8-lane vector arguments."""
    vector, scalar = _each(program, fn, x), _each(program, fn, x, local=1)
    looped, eight = np.empty_like(x), np.empty_like(x)
    program.kernel(f"{fn}_loop")(x, looped, np.int32(1), global_size=x.size)
    program.kernel(f"{fn}_vec8")(x, eight, global_size=x.size // 8)
    return [vector, scalar, looped, eight]


def _on_each_target(source: str, fn: str, x: np.ndarray) -> dict[tuple[str, int], np.ndarray]:
    """``fn`` of ``x`` built for x86-64-v2 (SSE4, no FMA), x86-64-v3 (AVX2, FMA) and this
    host, in groups of 64 and of 1."""
    spirv = spirvjit.compile_opencl(source).spirv
    results = {}
    for name in ("x86-64-v2", "x86-64-v3", "host"):
        program = spirvjit.Program(spirv, target=parse_cpu_target(name))
        for local in (64, 1):
            results[name, local] = _each(program, fn, x, local)
    return results


def _check(x: np.ndarray, got: np.ndarray, bound: float = 3.0) -> float:
    with np.errstate(all="ignore"):
        errors = ulp_errors(got, np.exp(x.astype(np.float64)))
    worst = int(np.argmax(errors))
    assert errors[worst] <= bound, (
        f"exp({x[worst]!r}) = {got[worst]!r}: {errors[worst]:.3g} ulp (bound {bound})"
    )
    return float(errors[worst])


def test_exp_dense_sweep_within_one_ulp(program):
    x = _sweep(4099)  # ~1M inputs: every exponent, both signs, the boundaries
    worst = _check(x, _exp(program, x), bound=1.0)
    assert worst > 0.5  # a real approximation was measured (not libm's 0.5-ulp expf)


def test_exp_special_values_exact(program):
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 89.0, 88.8, -104.0, -200.0], np.float32)
    y = _exp(program, x)
    assert np.isnan(y[0])
    assert y[1] == np.inf and y[2] == 0.0 and not np.signbit(y[2])
    assert y[3] == 1.0 and y[4] == 1.0
    assert y[5] == np.inf and y[6] == np.inf
    assert y[7] == 0.0 and y[8] == 0.0
    # Gradual underflow: exp(-100) is a subnormal, and within the bound.
    sub = _exp(program, np.array([-100.0, -90.0, -87.5], np.float32))
    assert (sub > 0).all() and (sub < np.finfo(np.float32).tiny).all()
    _check(np.array([-100.0, -90.0, -87.5], np.float32), sub, bound=1.0)


def test_exp_paths_agree_bitwise(program):
    """The vectorized work-item loop, its scalar remainder (one work-item per group),
    whole-function vectorization and float8 arguments compute the same bits."""
    x = _sweep(1 << 20)[:8192]
    x = x[: x.size // 64 * 64]
    vector, *others = _paths(program, "exp", x)
    for other in others:
        assert np.array_equal(vector.view(np.uint32), other.view(np.uint32))
    _check(x, vector, bound=1.0)


def test_inline_math_rewrites_scalar_and_libmvec_calls():
    module = ir.Module()
    f32, v8 = ir.FloatType(), ir.VectorType(ir.FloatType(), 8)
    expf = ir.Function(module, ir.FunctionType(f32, [f32]), "expf")
    wide = ir.Function(module, ir.FunctionType(v8, [v8]), "_ZGVdN8v_expf")
    sinf = ir.Function(module, ir.FunctionType(f32, [f32]), "sinf")
    fn = ir.Function(module, ir.FunctionType(f32, [f32, v8]), "k")
    b = ir.IRBuilder(fn.append_basic_block())
    b.call(wide, [fn.args[1]])
    b.ret(b.call(sinf, [b.call(expf, [fn.args[0]])]))
    assert vecmath.inline_math(module) == 2
    text = str(module)
    assert "@expf" not in text and "_ZGVdN8v_expf" not in text  # calls and declarations
    assert 'call float @"spirvjit.math.exp.f32"' in text
    assert 'call <8 x float> @"spirvjit.math.exp.v8f32"' in text
    assert 'call float @"sinf"' in text  # other functions untouched


@pytest.mark.slow
def test_exp_every_float(program):
    """All 2^32 inputs, in chunks (22 minutes on 2 shared, loaded cores)."""
    worst = 0.0
    chunk = 1 << 26
    for start in range(0, 1 << 32, chunk):
        x = np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
        worst = max(worst, _check(x, _exp(program, x), bound=1.5))
    assert worst > 0.5


# Double precision ------------------------------------------------------------------------

SOURCE_F64 = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" + _source("exp", "double", "0.0")
# exp(x) overflows above OVERFLOW_64 and rounds to +0 at and below UNDERFLOW_64 (-1075 ln 2,
# rounded: exp of it is just below 2^-1075, half the least subnormal); results are
# subnormal below SUBNORMAL_64 (-1022 ln 2).
OVERFLOW_64 = float.fromhex("0x1.62e42fefa39efp+9")
UNDERFLOW_64 = float.fromhex("-0x1.74910d52d3052p+9")
SUBNORMAL_64 = float.fromhex("-0x1.6232bdd7abcd2p+9")
# libmvec's exp errs by 3.12 ulp there (translate/mathlib.OUT_OF_BOUNDS).
LIBMVEC_WITNESS = float.fromhex("0x1.8f3c3424f95ccp+6")


def _glibc_exp(x: np.ndarray) -> np.ndarray:
    """The C library's scalar ``exp`` (Python's math.exp), +inf where it overflows."""

    def one(v: float) -> float:
        try:
            return math.exp(v)
        except OverflowError:
            return math.inf

    return np.array([one(v) for v in x.tolist()], np.float64)


def ulp_error_64(got: float, x: float) -> float:
    """|got - exp(x)| in units of the last place of double at exp(x) (subnormal spacing
    below 2^-1022; +inf counts as 2^1024), exp(x) at 160 bits (mpmath)."""
    if math.isnan(x):
        return 0.0 if math.isnan(got) else math.inf
    if math.isnan(got):
        return math.inf
    with mpmath.workprec(160):
        exact = mpmath.exp(mpmath.mpf(x))
        binade = min(max(int(mpmath.floor(mpmath.log(exact, 2))), -1022), 1023)
        value = mpmath.mpf(2) ** 1024 if math.isinf(got) else mpmath.mpf(got)
        return float(abs(value - exact) / mpmath.mpf(2) ** (binade - 52))


def _around(value: float, count: int) -> np.ndarray:
    """The ``count`` doubles either side of ``value`` (nonzero), or of both signs up from
    0 when it is 0."""
    if value == 0:
        up = np.arange(0, 2 * count, dtype=np.int64).view(np.float64)
        return np.concatenate([up, -up])
    center = np.array([abs(value)]).view(np.int64)[0]
    around = np.arange(center - count, center + count, dtype=np.int64).view(np.float64)
    return np.copysign(around, value)


def _sample_64() -> np.ndarray:
    """~860,000 inputs: uniform over the finite results' range; 64 in every binade of the
    result from the least subnormal to the overflow threshold (x in [e ln2, (e+1) ln2)); 32
    of each sign in every binade of |x| from 2^-1074 to 2^10; random bit patterns (every
    exponent, NaNs, infinities); 1000 doubles either side of the overflow, subnormal and
    zero-result thresholds and of 0, 1 and -1; the libmvec witness."""
    rng = np.random.default_rng(20261202)
    parts = [rng.uniform(UNDERFLOW_64, OVERFLOW_64, 600_000)]
    e = np.repeat(np.arange(-1075, 1024), 64)
    parts.append((e + rng.uniform(0.0, 1.0, e.size)) * math.log(2))
    e = np.repeat(np.arange(-1074, 10), 64)
    magnitudes = np.ldexp(rng.uniform(1.0, 2.0, e.size), e)
    parts.append(np.where(np.arange(e.size) % 2 == 0, magnitudes, -magnitudes))
    parts.append(rng.integers(-(1 << 63), (1 << 63) - 1, 20_000, dtype=np.int64).view(np.float64))
    for value in (OVERFLOW_64, SUBNORMAL_64, UNDERFLOW_64, 0.0, 1.0, -1.0):
        parts.append(_around(value, 1000))
    parts.append(np.array([LIBMVEC_WITNESS, 0.0, -0.0, np.inf, -np.inf, np.nan]))
    return np.concatenate(parts)


def _check_64(x: np.ndarray, got: np.ndarray, bound: float) -> tuple[float, float]:
    """The largest error of ``got`` = exp(``x``) in ulp, asserted within ``bound``; where
    the bits equal glibc's (within 0.511 ulp, glibc's e_exp.c) its error is not recomputed,
    elsewhere mpmath measures it. Returns it and its input."""
    glibc = _glibc_exp(x)
    differ = np.nonzero(got.view(np.int64) != glibc.view(np.int64))[0]
    nan = np.isnan(x)
    assert np.isnan(got[nan]).all() and np.isnan(glibc[nan]).all()
    differ = differ[~nan[differ]]
    worst, at = 0.0, 0.0
    for i in differ.tolist():
        error = ulp_error_64(float(got[i]), float(x[i]))
        assert error <= bound, f"exp({float(x[i]).hex()}) = {float(got[i]).hex()}: {error:.3g} ulp"
        if error > worst:
            worst, at = error, float(x[i])
    return worst, at


@pytest.fixture
def program64(build):
    return build(SOURCE_F64)


def test_exp_f64_dense_sample_within_one_ulp(program64):
    x = _sample_64()
    x = x[: x.size // 64 * 64]
    got = _exp(program64, x)
    worst, at = _check_64(x, got, bound=1.0)
    # A real approximation was measured (glibc's exp is within 0.511 ulp), and the normal
    # results are within 0.65 ulp: subnormal ones take a second rounding.
    assert worst > 0.5
    normal = (x >= SUBNORMAL_64) & (x <= OVERFLOW_64)
    assert _check_64(x[normal], got[normal], bound=0.65)[0] > 0.5


def test_exp_f64_special_values(program64):
    tiny = np.finfo(np.float64).tiny
    x = np.array(
        [np.nan, np.inf, -np.inf, 0.0, -0.0, OVERFLOW_64, np.nextafter(OVERFLOW_64, np.inf)]
        + [710.0, 1e300, np.finfo(np.float64).max, -np.finfo(np.float64).max]
        + [UNDERFLOW_64, np.nextafter(UNDERFLOW_64, 0.0), -746.0, -1e300, 5e-324, -5e-324]
    )
    y = _exp(program64, x)
    assert np.isnan(y[0])
    assert y[1] == np.inf and y[2] == 0.0 and not np.signbit(y[2])
    assert y[3] == 1.0 and y[4] == 1.0
    assert np.isfinite(y[5]) and y[5] > 1.79e308
    assert (y[6:10] == np.inf).all() and y[10] == 0.0
    assert y[11] == 0.0 and not np.signbit(y[11])
    assert y[12] == 5e-324  # the least subnormal
    assert (y[13:15] == 0.0).all() and y[15] == 1.0 and y[16] == 1.0
    # Gradual underflow: subnormal results, within a ulp (of the subnormals' spacing).
    x = np.array([-708.5, -720.0, -740.0, -745.0, SUBNORMAL_64 - 1e-12])
    y = _exp(program64, x)
    assert (y > 0).all() and (y < tiny).all()
    for v, r in zip(x.tolist(), y.tolist(), strict=True):
        assert ulp_error_64(r, v) <= 1.0, (v, r)


def test_exp_f64_within_bounds_where_libmvec_errs(program64):
    x = np.full(64, LIBMVEC_WITNESS)
    for local in (64, 1):
        y = _exp(program64, x, local)
        assert len(set(y.tolist())) == 1
        assert ulp_error_64(float(y[0]), LIBMVEC_WITNESS) <= 0.6


def test_exp_f64_paths_agree_bitwise(program64):
    """The vectorized work-item loop, its scalar remainder (one work-item per group),
    whole-function vectorization's kernel with a loop and double8 arguments compute the
    same bits."""
    x = np.ascontiguousarray(_sample_64()[::37])
    x = x[: x.size // 64 * 64]
    vector, *others = _paths(program64, "exp", x)
    odd = _exp(program64, x[:-3], local=61)  # a remainder in every group
    for other in others:
        assert np.array_equal(vector.view(np.int64), other.view(np.int64))
    assert np.array_equal(vector[:-3].view(np.int64), odd.view(np.int64))


@pytest.mark.skipif(not ON_X86, reason="x86-64 levels")
def test_exp_f64_targets_agree_bitwise():
    """SSE4 (no FMA), AVX2 with FMA and this host (AVX-512 here) compute the same bits: the
    definition has no fmuladd for LLVM to fuse."""
    x = np.ascontiguousarray(_sample_64()[::11])
    x = x[: x.size // 64 * 64]
    results = _on_each_target(SOURCE_F64, "exp", x)
    first = results["host", 64]
    for key, other in results.items():
        assert np.array_equal(first.view(np.int64), other.view(np.int64)), key


def test_inline_math_rewrites_double_exp_calls():
    module = ir.Module()
    f64, v8 = ir.DoubleType(), ir.VectorType(ir.DoubleType(), 8)
    exp = ir.Function(module, ir.FunctionType(f64, [f64]), "exp")
    wide = ir.Function(module, ir.FunctionType(v8, [v8]), "_ZGVeN8v_exp")
    fn = ir.Function(module, ir.FunctionType(f64, [f64, v8]), "k")
    b = ir.IRBuilder(fn.append_basic_block())
    b.call(wide, [fn.args[1]])
    b.ret(b.call(exp, [fn.args[0]]))
    assert vecmath.inline_math(module) == 2
    text = str(module)
    assert "@exp(" not in text and '@"exp"' not in text and "_ZGVeN8v_exp" not in text
    assert 'call double @"spirvjit.math.exp.f64"' in text
    assert 'call <8 x double> @"spirvjit.math.exp.v8f64"' in text
    assert "fmuladd" not in text  # no fusing: the same bits with and without FMA


@pytest.mark.slow
def test_exp_f64_wide_sample(program64):
    """67 million inputs: uniform over the finite results' range and within ln2 / 2 of 0
    (where r = x), random in every binade of |x| (about a minute on 2 shared cores)."""
    rng = np.random.default_rng(1202)
    worst = {"normal": 0.0, "subnormal": 0.0}
    for chunk in range(64):
        if chunk % 4 == 3:
            x = rng.uniform(-0.35, 0.35, 1 << 20)
        elif chunk % 4 == 2:
            e = rng.integers(-1074, 10, 1 << 20)
            x = np.ldexp(rng.uniform(-2.0, 2.0, e.size), e)
        else:
            x = rng.uniform(UNDERFLOW_64, OVERFLOW_64, 1 << 20)
        got = _exp(program64, x)
        normal = (x >= SUBNORMAL_64) & (x <= OVERFLOW_64)
        worst["normal"] = max(worst["normal"], _check_64(x[normal], got[normal], 0.65)[0])
        worst["subnormal"] = max(worst["subnormal"], _check_64(x[~normal], got[~normal], 1.0)[0])
    assert worst["normal"] > 0.5 and worst["subnormal"] > 0.5


# Float log -------------------------------------------------------------------------------

SOURCE_LOG = (
    _source("log", "float", "0.0f")
    + """
kernel void log_native_half(global const float *x, global float *y, global float *z)
{
    size_t i = get_global_id(0);
    y[i] = native_log(x[i]);
    z[i] = half_log(x[i]);
}
"""
)
# libmvec's float log errs by 3.95 and 3.94 ulp there (translate/mathlib.OUT_OF_BOUNDS).
LOG_WITNESSES = [float.fromhex("0x1.c3d746p-1"), float.fromhex("0x1.c3dff4p-1")]


def log_ulp_errors(x: np.ndarray, got: np.ndarray) -> np.ndarray:
    """|got - log(x)| in units of the last place of float at log(x), log(x) from NumPy's
    float64 ``log`` (within a double ulp); 0 where both are the same infinity or NaN."""
    with np.errstate(all="ignore"):
        ref = np.log(x.astype(np.float64))
    magnitude = np.abs(ref)
    finite = np.isfinite(ref) & (magnitude > 0)
    ulp = np.exp2(np.clip(np.floor(np.log2(np.where(finite, magnitude, 1.0))), -126, 127) - 23)
    with np.errstate(all="ignore"):
        errors = np.abs(got.astype(np.float64) - ref) / ulp
    exact = ~finite  # NaN, +-inf and log(1) = 0: the bits themselves
    same = (np.isnan(ref) & np.isnan(got)) | (ref == got)
    errors[exact] = np.where(same[exact], 0.0, np.inf)
    return errors


def _check_log(x: np.ndarray, got: np.ndarray, bound: float) -> float:
    errors = log_ulp_errors(x, got)
    worst = int(np.argmax(errors))
    assert errors[worst] <= bound, (
        f"log({float(x[worst]).hex()}) = {float(got[worst]).hex()}: "
        f"{errors[worst]:.4g} ulp (bound {bound})"
    )
    return float(errors[worst])


def _log_inputs(step: int) -> np.ndarray:
    """Every ``step``-th float bit pattern (both signs, every exponent, NaNs, infinities),
    every float within 4096 of 1 (tiny results) and of the reduction's boundaries sqrt(1/2)
    and sqrt(2) (and their multiples by 2^-130, 2^-20 and 2^100), the first 4096
    subnormals, the witnesses."""
    bits = [np.arange(0, 1 << 32, step, dtype=np.uint64).astype(np.uint32)]
    for value in (1.0, math.sqrt(0.5), math.sqrt(2.0), 2**-130 * math.sqrt(2), 2**-20, 2**100):
        center = int(np.array([value], np.float32).view(np.uint32)[0])
        bits.append(np.arange(center - 4096, center + 4096, dtype=np.uint32))
    bits.append(np.arange(0, 4096, dtype=np.uint32))
    x = np.concatenate([b.view(np.float32) for b in bits])
    return np.concatenate([x, np.array(LOG_WITNESSES + [1.0, 2.0, 0.5], np.float32)])


@pytest.fixture
def program_log(build):
    return build(SOURCE_LOG)


def _log(program, x: np.ndarray, local: int | None = None) -> np.ndarray:
    return _each(program, "log", x, local)


def test_log_dense_sweep_within_0_55_ulp(program_log):
    x = _log_inputs(4099)  # ~1.1M inputs
    worst = _check_log(x, _log(program_log, x), bound=0.55)
    assert worst > 0.5  # a real approximation was measured


def test_log_special_values_exact(program_log):
    info = np.finfo(np.float32)
    x = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, -1.0, -info.smallest_subnormal]
        + [-info.max, 1.0, info.max, info.smallest_subnormal, info.tiny, 2.0],
        np.float32,
    )
    for local in (None, 1):
        y = _log(program_log, x, local)
        assert y[0] == -np.inf and y[1] == -np.inf
        assert y[2] == np.inf
        assert np.isnan(y[3:9]).all()
        assert y[9] == 0.0 and not np.signbit(y[9])  # log(1) = +0
        # log(FLT_MAX), log of the least subnormal (-103.28), of FLT_MIN (-87.34), log 2:
        # correctly rounded.
        expected = np.log(x[10:].astype(np.float64)).astype(np.float32)
        assert np.array_equal(y[10:], expected), (y[10:], expected)


def test_log_subnormal_inputs(program_log):
    """Every subnormal's log, within the bound: the reduction scales them by 2^23 first."""
    x = np.arange(1, 1 << 23, 7, dtype=np.uint32).view(np.float32)
    _check_log(x, _log(program_log, x), bound=0.55)


def test_log_within_bounds_where_libmvec_errs(program_log):
    x = np.repeat(np.array(LOG_WITNESSES, np.float32), 32)
    for local in (64, 1):
        y = _log(program_log, x, local)
        assert len(set(y[:32].tolist())) == 1 and len(set(y[32:].tolist())) == 1
        assert _check_log(x, y, bound=0.5) <= 0.5  # both correctly rounded


def test_log_paths_agree_bitwise(program_log):
    """The vectorized work-item loop, its scalar remainder (one work-item per group, and
    61-item groups), whole-function vectorization's kernel with a loop, float8 arguments,
    native_log and half_log compute the same bits."""
    x = np.ascontiguousarray(_log_inputs(1 << 14)[::5])
    x = x[: x.size // 64 * 64]
    vector, *others = _paths(program_log, "log", x)
    odd = _log(program_log, x[:-3], local=61)
    native, half = np.empty_like(x), np.empty_like(x)
    program_log.kernel("log_native_half")(x, native, half, global_size=x.size)
    for other in (*others, native, half):
        assert np.array_equal(vector.view(np.uint32), other.view(np.uint32))
    assert np.array_equal(vector[:-3].view(np.uint32), odd.view(np.uint32))
    _check_log(x, vector, bound=0.55)


@pytest.mark.skipif(not ON_X86, reason="x86-64 levels")
def test_log_targets_agree_bitwise():
    """SSE4 (no FMA), AVX2 with FMA and this host compute the same bits: the definition has
    no fmuladd for LLVM to fuse."""
    x = np.ascontiguousarray(_log_inputs(1 << 13)[::3])
    x = x[: x.size // 64 * 64]
    results = _on_each_target(SOURCE_LOG, "log", x)
    first = results["host", 64]
    for key, other in results.items():
        assert np.array_equal(first.view(np.uint32), other.view(np.uint32)), key


def test_inline_math_rewrites_float_log_calls():
    module = ir.Module()
    f32, v16, v4 = (
        ir.FloatType(),
        ir.VectorType(ir.FloatType(), 16),
        ir.VectorType(ir.FloatType(), 4),
    )
    logf = ir.Function(module, ir.FunctionType(f32, [f32]), "logf")
    wide = ir.Function(module, ir.FunctionType(v16, [v16]), "_ZGVeN16v_logf")
    narrow = ir.Function(module, ir.FunctionType(v4, [v4]), "_ZGVbN4v_logf")
    log2f = ir.Function(module, ir.FunctionType(f32, [f32]), "log2f")
    fn = ir.Function(module, ir.FunctionType(f32, [f32, v16, v4]), "k")
    b = ir.IRBuilder(fn.append_basic_block())
    b.call(wide, [fn.args[1]])
    b.call(narrow, [fn.args[2]])
    b.ret(b.call(log2f, [b.call(logf, [fn.args[0]])]))
    assert vecmath.inline_math(module) == 3
    text = str(module)
    assert "@logf" not in text and '@"logf"' not in text and "v_logf" not in text
    assert 'call float @"spirvjit.math.log.f32"' in text
    assert 'call <16 x float> @"spirvjit.math.log.v16f32"' in text
    assert 'call <4 x float> @"spirvjit.math.log.v4f32"' in text
    assert 'call float @"log2f"' in text  # other functions untouched
    assert "fmuladd" not in text  # no fusing: the same bits with and without FMA


@pytest.mark.slow
def test_log_every_float(program_log):
    """All 2^32 inputs, in chunks (9 minutes on 2 shared, loaded cores): at most 0.5363
    ulp (at 0x1.69e2a4p+0), 95,057 results not correctly rounded."""
    worst = 0.0
    chunk = 1 << 26
    for start in range(0, 1 << 32, chunk):
        x = np.arange(start, start + chunk, dtype=np.uint64).astype(np.uint32).view(np.float32)
        worst = max(worst, _check_log(x, _log(program_log, x), bound=0.55))
    assert worst > 0.5
