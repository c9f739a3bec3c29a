"""Python twins of the project's OpenCL C kernels (examples/kernels, benchmarks/kernels),
written with @spirvjit.kernel. test_python_kernels.py runs each against its OpenCL C
original; `spirvjit build tests/kernels/py_kernels.py` builds them all into one module.
"""

import math

import spirvjit
from spirvjit import Constant
from spirvjit.lang import (
    LOCAL_MEM_FENCE,
    ConstantMem,
    Global,
    Local,
    any,
    atomic_add,
    atomic_cmpxchg,
    atomic_inc,
    atomic_max,
    barrier,
    bitcast,
    clamp,
    clz,
    cross,
    dot,
    float4,
    float16,
    float32,
    float64,
    fma,
    global_id,
    global_size,
    group_id,
    int4,
    int32,
    int64,
    isnan,
    length,
    local_array,
    local_id,
    local_size,
    mul_hi,
    popcount,
    private_array,
    rotate,
    rsqrt,
    select,
    uint8,
    uint32,
    work_dim,
)

TILE = 16


# examples/kernels/saxpy.cl
@spirvjit.kernel
def saxpy(a: float32, x: Global[float32], y: Global[float32], n: uint32):
    i = global_id(0)
    if i < n:
        y[i] = a * x[i] + y[i]


# benchmarks/kernels/reduction.cl: strided per-item sums, then a tree in local memory.
@spirvjit.kernel
def reduction(x: Global[float32], partial: Global[float32], scratch: Local[float32], n: uint32):
    lid = local_id(0)
    total = float32(0)
    for i in range(global_id(0), n, global_size(0)):
        total += x[i]
    scratch[lid] = total
    barrier(LOCAL_MEM_FENCE)
    stride = local_size(0) // 2
    while stride > 0:
        if lid < stride:
            scratch[lid] += scratch[lid + stride]
        barrier(LOCAL_MEM_FENCE)
        stride //= 2
    if lid == 0:
        partial[group_id(0)] = scratch[0]


# benchmarks/kernels/histogram.cl: local atomics, then global atomics.
@spirvjit.kernel
def histogram(data: Global[uint32], hist: Global[uint32], n_words: uint32):
    bins = local_array(uint32, 256)
    lid = local_id(0)
    bins[lid] = 0
    barrier(LOCAL_MEM_FENCE)
    for i in range(global_id(0), n_words, global_size(0)):
        w = data[i]
        atomic_inc(bins, w & 0xFF)
        atomic_inc(bins, (w >> 8) & 0xFF)
        atomic_inc(bins, (w >> 16) & 0xFF)
        atomic_inc(bins, w >> 24)
    barrier(LOCAL_MEM_FENCE)
    if bins[lid]:
        atomic_add(hist, lid, bins[lid])


# benchmarks/kernels/sgemm.cl: TILE x TILE tiles of A and B staged in local memory.
@spirvjit.kernel
def sgemm(a: Global[float32], b: Global[float32], c: Global[float32], n: int32):
    ta = local_array(float32, (TILE, TILE))
    tb = local_array(float32, (TILE, TILE))
    lx, ly = int32(local_id(0)), int32(local_id(1))
    col, row = int32(global_id(0)), int32(global_id(1))
    acc = float32(0)
    for t in range(0, n, TILE):
        ta[ly, lx] = a[row * n + t + lx]
        tb[ly, lx] = b[(t + ly) * n + col]
        barrier(LOCAL_MEM_FENCE)
        for k in range(TILE):
            acc += ta[ly, k] * tb[k, lx]
        barrier(LOCAL_MEM_FENCE)
    c[row * n + col] = acc


# examples/kernels/mandelbrot.cl
@spirvjit.kernel
def mandelbrot(
    out: Global[int32], x0: float32, y0: float32, dx: float32, dy: float32, max_iter: int32
):
    px, py = int32(global_id(0)), int32(global_id(1))
    cr = x0 + float32(px) * dx
    ci = y0 + float32(py) * dy
    zr = float32(0)
    zi = float32(0)
    n = 0
    while n < max_iter and zr * zr + zi * zi <= 4.0:
        t = zr * zr - zi * zi + cr
        zi = 2.0 * zr * zi + ci
        zr = t
        n += 1
    out[py * global_size(0) + px] = n


# The same functions of OpenCL.std as MATH_CL in the tests (Python's math names too).
@spirvjit.kernel
def math_funcs(x: Global[float32], out: Global[float32]):
    i = global_id(0)
    n = global_size(0)
    v = x[i]
    out[i] = math.sin(v)
    out[n + i] = math.cos(v)
    out[2 * n + i] = math.exp(v)
    out[3 * n + i] = math.log(abs(v) + 1.0)
    out[4 * n + i] = math.sqrt(abs(v))
    out[5 * n + i] = math.tanh(v)
    out[6 * n + i] = math.atan2(v, 0.5)
    out[7 * n + i] = math.pow(abs(v), 1.5)
    out[8 * n + i] = math.floor(v)
    out[9 * n + i] = min(v, 0.25)
    out[10 * n + i] = rsqrt(abs(v) + 1.0)
    out[11 * n + i] = fma(v, v, 0.5)
    out[12 * n + i] = clamp(v, -0.5, 0.5)


@spirvjit.kernel
def math_f64(x: Global[float64], out: Global[float64]):
    i = global_id(0)
    n = global_size(0)
    v = x[i]
    out[i] = math.sin(v)
    out[n + i] = math.exp(v)
    out[2 * n + i] = math.sqrt(abs(v))


@spirvjit.kernel
def vectors(a: Global[float4], b: Global[float4], out: Global[float4], s: Global[float32]):
    i = global_id(0)
    u = a[i]
    v = b[i]
    w = u * v + 1.0
    w.x = dot(u, v)
    out[i] = float4(w.wzy, length(u)) + select(u < v, u, v)
    c = cross(u, v)
    out[global_size(0) + i] = float4(c.xy, c.z * 2.0, u.s3)
    s[i] = w.y + v.hi.x


@spirvjit.kernel
def integers(a: Global[int32], b: Global[int32], out: Global[int32], uout: Global[uint32]):
    i = global_id(0)
    n = global_size(0)
    x = a[i]
    y = b[i]
    out[i] = x // y
    out[n + i] = x % y
    out[2 * n + i] = x >> (y & 7)
    out[3 * n + i] = max(x, y)
    out[4 * n + i] = abs(x)
    out[5 * n + i] = clz(x)
    out[6 * n + i] = popcount(y)
    out[7 * n + i] = mul_hi(x, y)
    out[8 * n + i] = rotate(x, y)
    out[9 * n + i] = select(x < y, x, y) if x != 0 else -1
    ux = uint32(x)
    uout[i] = ux >> 3
    uout[n + i] = ux // 7 + uint32(int4(x, y, x, y).w)


# Helpers, while/break/continue, and a Constant parameter (a SPIR-V spec constant).
@spirvjit.func
def collatz_steps(x: uint32):
    steps = 0
    while True:
        if x == 1:
            break
        steps += 1
        if x % 2 == 0:
            x //= 2
            continue
        x = 3 * x + 1
    return steps


@spirvjit.kernel
def collatz(out: Global[int32], limit: Constant[int] = 1000):
    i = global_id(0)
    out[i] = min(collatz_steps(uint32(i + 1)), limit)


# A Constant that sizes arrays: compiled once per value, with the value baked in.
@spirvjit.kernel
def window_sum(x: Global[float32], out: Global[float32], width: Constant[int] = 4):
    i = global_id(0)
    buf = private_array(float32, width)
    for k in range(width):
        buf[k] = x[i + k]
    total = float32(0)
    for k in range(width):
        total += buf[k]
    out[i] = total


@spirvjit.func
def bump(counts: Global[int32], k: int64):
    return atomic_add(counts, k, 1)


@spirvjit.kernel
def atomics(counts: Global[int32], top: Global[int32], flags: Global[uint8]):
    i = global_id(0)
    old = bump(counts, i % 8)
    atomic_max(top, 0, int32(i))
    if atomic_cmpxchg(top, 1, 0, 1) == 0:
        flags[i] = uint8(1)
    if old < 0:
        flags[i] = uint8(2)


# A bit of everything else: __constant and half pointers, a by-value vector, a local
# array handed to a helper, tuple swaps, 2-D private arrays, a downward range, and/or,
# conditional expressions, bitcast, any(), float atomics, reqd_work_group_size.
@spirvjit.func
def square(v):
    return v * v


@spirvjit.func
def array_sum(t, n: int32) -> float32:
    s = float32(0)
    for k in range(n):
        s += t[k]
    return s


@spirvjit.kernel(local_size=(8,))
def features(
    x: Global[float32],
    c: ConstantMem[float32],
    h: Global[float16],
    v: float4,
    out: Global[float32],
    total: Global[float32],
):
    i = global_id(0)
    t = local_array(float32, 8)
    t[local_id(0)] = x[i]
    barrier()
    group_sum = array_sum(t, 8)
    a, b = x[i], c[i % 4]
    a, b = b, a
    p = private_array(int32, (2, 3))
    for r in range(1, -1, -1):
        for q in range(3):
            p[r, q] = r * 10 + q
    val = float32(p[1, 2]) + (1.0 if a > 0.0 and not isnan(b) else -1.0)
    sign = bitcast(x[i], uint32) >> 31
    h[i] = float16(x[i] * 2.0)
    vv = v * 2.0
    big = any(vv > float4(3.0))
    out[i] = group_sum + val + square(a) + float32(sign) + vv.w + float32(big) + float32(work_dim())
    atomic_add(total, 0, 1.5)


# Syntax the docs promise: chained subscripts, lane assignment, comparison chains,
# a run-time range step, elif, folded literal arithmetic (C rounding), a barrier in a
# helper with its own local array.
@spirvjit.func
def group_max(v: int32) -> int32:
    scratch = local_array(int32, 64)
    scratch[local_id(0)] = v
    barrier(LOCAL_MEM_FENCE)
    best = scratch[0]
    for k in range(1, local_size(0)):
        best = max(best, scratch[k])
    barrier(LOCAL_MEM_FENCE)
    return best


@spirvjit.kernel
def syntax(out: Global[int32], vec: Global[float4], step: int32):
    i = int32(global_id(0))
    grid = private_array(int32, (3, 4))
    for r in range(3):
        for c in range(4):
            grid[r][c] = r * 4 + c
    total = 0
    for k in range(11, -1, step):  # step is -3 at run time: 11, 8, 5, 2
        total += grid[k // 4, k % 4]
    if 0 <= i < 4:
        kind = 1
    elif i < 8:
        kind = 2
    else:
        kind = 3
    v = vec[i]
    v.xy = v.yx
    v.w = float32(-7 // 2 + -7 % 2)  # -3 + -1
    vec[i] = v
    out[i] = total * 100 + kind * 10 + group_max(i)


# Spec constants of every kind: int64, float, bool, uint32.
@spirvjit.kernel
def spec_types(
    out: Global[float32],
    big: Constant[int64] = 5,
    scale: Constant[float] = 1.5,
    negate: Constant[bool] = False,
    small: Constant[uint32] = 7,
):
    i = global_id(0)
    v = float32(i) * scale + float32(big) + float32(small)
    if negate:
        v = -v
    out[i] = v
