"""The CPU back end's inline single-precision ``exp`` (backends/cpu/vecmath.py).

Checked against NumPy's float64 ``exp`` (whose error, below 1 ulp of a double, is far
below a float's ulp): a dense sweep over float bit patterns plus every float around the
overflow, subnormal and zero-result boundaries, through the three paths a kernel takes
(the loop-vectorized work-item loop, the scalar remainder, whole-function vectorization
of a kernel with a loop) and through ``float8`` arguments. The bound is OpenCL C 3.0's
3 ulp; the measured maximum is 1.008 ulp over every float (exp(26.728634)), 0.98 ulp on
the CI sweep. Every float: ``-m slow``.
"""

from __future__ import annotations

import numpy as np
import pytest
from llvmlite import ir

from spirvjit.backends.cpu import vecmath

SOURCE = """
kernel void exp_each(global const float *x, global float *y)
{
    size_t i = get_global_id(0);
    y[i] = exp(x[i]);
}

// A loop: whole-function vectorization takes this kernel (8 lanes per call on AVX2).
kernel void exp_loop(global const float *x, global float *y, int reps)
{
    size_t i = get_global_id(0);
    float v = 0.0f;
    for (int r = 0; r < reps; r++)
        v = exp(x[i]);
    y[i] = v;
}

kernel void exp_vec8(global const float8 *x, global float8 *y)
{
    size_t i = get_global_id(0);
    y[i] = exp(x[i]);
}
"""


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


def _exp(program, x: np.ndarray, local: int | None = None) -> np.ndarray:
    y = np.empty_like(x)
    program.kernel("exp_each")(x, y, global_size=x.size, local_size=local)
    return y


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
    vector = _exp(program, x)
    scalar = _exp(program, x, local=1)
    looped = np.empty_like(x)
    program.kernel("exp_loop")(x, looped, np.int32(1), global_size=x.size)
    eight = np.empty_like(x)
    program.kernel("exp_vec8")(x, eight, global_size=x.size // 8)
    for other in (scalar, looped, eight):
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
