"""HIP code as users port it: more samples (tests/kernels/hip_corpus) in the style of the
public HIP and hipified CUDA samples (ROCm examples, HIP-Examples, the CUDA samples run
through hipify), each compiled once with spirvjit.compile_hip, its kernels run on the
host CPU against NumPy (bit-exact for integers, within the HIP/OpenCL error bounds for
floats) and compiled for one AMD and one NVIDIA target.

test_hip_corpus.py covers the first corpus; this file covers what it leaves out:
Blelloch scans, single-pass reductions with __threadfence, 64-bit integers and atomics,
the remaining integer intrinsics, ... (PORTED lists every kernel with its features).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import spirvjit
from spirvjit import Program, parse_target
from spirvjit.errors import CompileError, LaunchError, SpirvError
from spirvjit.toolchain import find_tool

CORPUS_DIR = Path(__file__).parent / "hip_corpus"
# The host CPU's wavefront size (translate/wavefront.py).
CPU_WARP = 64
RNG_SEED = 2027

pytestmark = pytest.mark.skipif(
    find_tool("clang") is None or find_tool("opt") is None or find_tool("llc") is None,
    reason="clang-22, opt-22 and llc-22 are needed to compile HIP",
)

# (sample file, kernel as the source names it, features).
PORTED = [
    ("blelloch", "prescan", "Blelloch scan, padded extern __shared__, nullptr argument"),
    ("blelloch", "add_block_offsets", "second pass of the scan, __shared__ scalar"),
    ("blelloch", "reduce_single_pass<256>", "__threadfence, atomicInc ticket, last block"),
    ("blelloch", "reduce_single_pass<128>", "__launch_bounds__, __device__ fn with barriers"),
    ("int64", "int64_ops", "64-bit mul/div/shift, __mul64hi/__umul64hi, __clzll/__ffsll/__brevll"),
    ("int64", "random_stats", "splitmix64, 64-bit atomicAdd/Max/Min"),
    ("int64", "cas_product", "64-bit atomicCAS loop"),
    ("int64", "int32_helpers", "__mulhi/__mul24/__usad/__hadd/__rhadd/__funnelshift_l/..."),
    ("classes", "julia_counts", "class with ctor/methods/operators in a namespace, int2"),
    ("classes", "transform<float, Affine>", "function object by value, grid-stride loop"),
    ("classes", "transform<int, Clamp>", "second instantiation, int functor"),
    ("classes", "transform<double, Square<double> >", "nested template argument"),
    ("classes", "float_fields", "__device__ lambda, union punning, bit-fields"),
    ("classes", "sort8_select", "private array indexed at run time, switch"),
    ("classes", "dots<float, 4>", "class template, static method, constexpr member"),
    ("classes", "dots<long long, 3>", "int64 instantiation of the class template"),
    ("cas_atomics", "cas_float_atomics", "atomicCAS loops: float max/min/mul, double add"),
    ("cas_atomics", "filter_positive", "warp-aggregated atomics: __activemask/__ffsll/__shfl"),
    ("half", "haxpy", "__half2 __hfma2, __halves2half2, __half by value"),
    ("half", "hdot", "__half2float, __shfl_xor reduction, __lane_id"),
    ("half", "half_misc", "__float2half, __hgt/__hlt/__heq, __hmax/__hmin"),
    ("half", "hwave_max", "__shfl_xor on __half, __shfl_down on __half2"),
    ("half", "half_math", "__float22half2_rn, h2floor, hrint, hrcp, __half_as_ushort, __hisnan"),
    ("fastmath", "trig_fast", "sincosf, __sincosf, __sinf/__cosf/__tanf, __logf"),
    ("fastmath", "exp_log_fast", "__powf, exp10f/__exp10f, __log2f/__log10f, rsqrtf, __frcp_rn"),
    ("fastmath", "rounded_ops", "__fadd_rn/.../__fmaf_rn/__fsqrt_rn, __fmul_rn not fused"),
    ("fastmath", "conversions", "__float2int_rn/rz/ru/rd, __float2uint_rn, lrintf, llroundf"),
    ("fastmath", "decompose", "frexpf, ldexpf, modff, fmodf, remainderf, remquof"),
    ("fastmath", "double_bits", "sincos, __double2hiint/loint, __hiloint2double, hypot"),
    ("convolution", "convolutionRows", "__constant__ taps and struct, 2-D shared tile + apron"),
    ("convolution", "convolutionColumns", "padded 2-D shared tile, #pragma unroll, early return"),
    ("transpose_tiles", "copySharedMem<float>", "32x8 blocks moving 32x32 tiles"),
    ("transpose_tiles", "transposeNoBankConflicts<float>", "padded [32][33] tile, partial tiles"),
    ("transpose_tiles", "transposeNoBankConflicts<double>", "double instantiation"),
    ("transpose_tiles", "transposeDiagonal", "diagonal block reordering, gridDim"),
    ("shared_template", "reduce6<float, 256u, true>", "SharedMemory<T>, bool template argument"),
    ("shared_template", "reduce6<double, 128u, false>", "SharedMemory<double> specialization"),
    ("shared_template", "reduce6<int, 512u, false>", "blocks of 512, __shfl_down final stage"),
    ("shared_template", "carve_shared", "int/float/uchar arrays carved from extern __shared__"),
    (
        "shared_template",
        "reduce_warp32",
        "hipified CUDA: WARP_SIZE 32, __shfl_down_sync(0xffffffff)",
    ),
    ("radix_printf", "radix_sort_block<256>", "radix split sort: __device__ fns with barriers"),
    ("radix_printf", "segment_ops", "__shfl_xor(v, m, 8), __shfl(v, 3, 16) sub-wavefronts"),
    ("radix_printf", "collatz_steps", "__syncthreads_or as a loop condition, uint64 math"),
    ("radix_printf", "reduce_sync_ops", "__reduce_add/min/max/xor/or_sync, partial masks"),
    ("radix_printf", "report", "device printf: %u %d %.3f %e %s %lld %5.1f%% %llx"),
    ("porting", "ported_helpers", "__ldg, std::min/max/numeric_limits, recursion, INFINITY"),
    ("porting", "heap_lists", "device-side malloc/free, a linked list of structs"),
    ("gemm_tiled", "sgemm_tiled", "4x4 register tiles, float4 via reinterpret_cast, __align__"),
    ("histogram_warps", "histogram256Kernel", "per-warp shared sub-histograms, words as 4 bytes"),
    ("histogram_warps", "mergeHistogram256Kernel", "partial histograms merged by a tree sum"),
]
# Kernels that do not compile for GPUs, and why (the error must name it).
GPU_REFUSED = {
    "report": "calls printf, which spirvjit runs only on the host",
    "heap_lists": r"calls malloc/free \(HIP's device heap\), which spirvjit runs only on the host",
}
GPU_TARGETS = ("gfx942", "sm_90")

_programs: dict[str, Program] = {}


def ported(name: str) -> Program:
    """The sample ``name`` compiled once per test session."""
    if name not in _programs:
        _programs[name] = spirvjit.compile_hip(CORPUS_DIR / f"{name}.hip")
    return _programs[name]


def test_every_ported_kernel_is_checked():
    assert {kernel for _, kernel, _ in PORTED} == set(CHECKS)
    # The GPU sample in CI has a kernel of every sample file.
    assert {s for s, k, _ in PORTED if k in _GPU_SAMPLE} == {s for s, _, _ in PORTED}
    assert set(CHECKS) >= _GPU_SAMPLE


# --- blelloch ------------------------------------------------------------------------------


def _prescan_shared(block: int) -> int:
    m = 2 * block
    return (m + m // 32) * 4


def check_prescan(prog: Program, rng):
    n, block = 3000, 128
    x = rng.integers(-50, 50, n).astype(np.int32)
    blocks = -(-n // (2 * block))
    out, sums = np.zeros(n, np.int32), np.zeros(blocks, np.int32)
    prog.prescan(
        x, out, sums, np.int32(n), grid=blocks, block=block, shared_mem=_prescan_shared(block)
    )
    for b in range(blocks):
        segment = x[b * 2 * block : (b + 1) * 2 * block]
        exclusive = np.concatenate([[0], np.cumsum(segment)[:-1]])
        np.testing.assert_array_equal(out[b * 2 * block : (b + 1) * 2 * block], exclusive)
        assert sums[b] == segment.sum()
    # The sums' own scan: one block, block_sums == nullptr (a null pointer argument).
    scanned = np.zeros(blocks, np.int32)
    prog.prescan(
        sums, scanned, None, np.int32(blocks), grid=1, block=8, shared_mem=_prescan_shared(8)
    )
    np.testing.assert_array_equal(scanned, np.concatenate([[0], np.cumsum(sums)[:-1]]))


def check_add_block_offsets(prog: Program, rng):
    # The whole three-kernel scan of the sample's main().
    n, block = 5000, 64
    x = rng.integers(0, 1000, n).astype(np.int32)
    blocks = -(-n // (2 * block))
    out, sums, scanned = (
        np.zeros(n, np.int32),
        np.zeros(blocks, np.int32),
        np.zeros(blocks, np.int32),
    )
    prog.prescan(
        x, out, sums, np.int32(n), grid=blocks, block=block, shared_mem=_prescan_shared(block)
    )
    prog.prescan(
        sums, scanned, None, np.int32(blocks), grid=1, block=32, shared_mem=_prescan_shared(32)
    )
    prog.add_block_offsets(out, scanned, np.int32(n), grid=blocks, block=block)
    np.testing.assert_array_equal(out, np.concatenate([[0], np.cumsum(x)[:-1]]).astype(np.int32))


def _check_single_pass(prog: Program, rng, block: int):
    kernel = prog.kernel(f"reduce_single_pass<{block}>")
    for n, grid in ((100_000, 16), (1000, 40), (5, 3)):
        # Integer-valued floats: every order of summation is exact.
        x = rng.integers(-100, 100, n).astype(np.float32)
        partial, result = np.zeros(grid, np.float32), np.zeros(1, np.float32)
        kernel(x, partial, result, np.uint32(n), grid=grid, block=block)
        assert result[0] == x.sum(dtype=np.float64)
        # The last block reset the __device__ ticket counter for the next launch.
        assert prog.global_variable("retirement_count", np.uint32)[()] == 0


def check_reduce_single_pass_256(prog, rng):
    _check_single_pass(prog, rng, 256)


def check_reduce_single_pass_128(prog, rng):
    _check_single_pass(prog, rng, 128)


# --- int64 ----------------------------------------------------------------------------------

M64 = (1 << 64) - 1


def _s64(v: int) -> int:
    v &= M64
    return v - (1 << 64) if v >> 63 else v


def _int64_edges(rng, n):
    a = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64, endpoint=True)
    b = rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64, endpoint=True)
    small = rng.integers(-1000, 1000, n // 4)
    b[: n // 4] = np.where(small == 0, 7, small)  # small divisors: large quotients
    edges = [(-(2**63), -1), (-(2**63), 1), (2**63 - 1, -1), (0, 5), (-7, 2), (7, -2), (1, 0)]
    for k, (x, y) in enumerate(edges):
        a[n // 2 + k], b[n // 2 + k] = x, y
    return a, b


def check_int64_ops(prog: Program, rng):
    n = 1000
    a, b = _int64_edges(rng, n)
    out = np.zeros((n, 12), np.int64)
    prog.int64_ops(a, b, out, np.int32(n), grid=4, block=256)
    for i in range(n):
        x, y = int(a[i]), int(b[i])
        ux, uy, s = x & M64, y & M64, y & 63
        if y == 0 or (x == -(2**63) and y == -1):
            # x / 0 is undefined, and so is INT64_MIN / -1 (C's overflow): unchecked.
            quotient = remainder = None
        else:
            quotient = abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)
            remainder = x - quotient * y
        ffs = (ux & -ux).bit_length()
        expected = [
            _s64(ux * uy),
            quotient,
            remainder,
            x >> s,
            _s64(ux >> s),
            _s64(ux << s),
            (x * y) >> 64,
            _s64((ux * uy) >> 64),
            64 - ux.bit_length(),
            ffs | (bin(ux).count("1") << 8),
            _s64(int(f"{ux:064b}"[::-1], 2)),
            min(x, y) ^ max(x, y),
        ]
        got = out[i].tolist()
        if quotient is None:
            got[1] = got[2] = None
            if y == 0:
                expected[1] = expected[2] = None
        assert got == expected, (i, x, y)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def check_random_stats(prog: Program, rng):
    seed, per_thread, grid, block = 0xDEADBEEF12345, 7, 5, 128
    total, biggest = np.zeros(1, np.uint64), np.zeros(1, np.uint64)
    smallest = np.full(1, 2**63 - 1, np.int64)
    buckets = np.zeros(16, np.uint64)
    prog.random_stats(
        np.uint64(seed),
        np.int32(per_thread),
        total,
        biggest,
        smallest,
        buckets,
        grid=grid,
        block=block,
    )
    r = _splitmix64(np.uint64(seed) + np.arange(grid * block * per_thread, dtype=np.uint64))
    assert int(total[0]) == int((r >> np.uint64(20)).astype(object).sum()) & M64
    assert biggest[0] == r.max()
    assert smallest[0] == r.view(np.int64).min()
    np.testing.assert_array_equal(
        buckets, np.bincount((r >> np.uint64(60)).astype(np.int64), minlength=16)
    )


def check_cas_product(prog: Program, rng):
    n = 700
    factors = rng.integers(0, 2**64, n, dtype=np.uint64) | np.uint64(1)
    product = np.ones(1, np.uint64)
    prog.cas_product(factors, product, np.int32(n), grid=3, block=256)
    expected = 1
    for f in factors.tolist():
        expected = expected * f & M64
    assert int(product[0]) == expected


def check_int32_helpers(prog: Program, rng):
    n = 1000
    a = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    a[:4], b[:4] = [-(2**31), 2**31 - 1, -1, 0x00800000], [-(2**31), 2**31 - 1, 1, 0x00FFFFFF]
    out = np.zeros((n, 10), np.int32)
    prog.int32_helpers(a, b, out, np.int32(n), grid=4, block=256)
    m32 = (1 << 32) - 1

    def s32(v):
        v &= m32
        return v - (1 << 32) if v >> 31 else v

    def s24(v):
        v &= 0xFFFFFF
        return v - (1 << 24) if v >> 23 else v

    for i in range(n):
        x, y = int(a[i]), int(b[i])
        ux, uy = x & m32, y & m32
        off = i % 24
        expected = [
            (x * y) >> 32,
            s32(s24(x) * s24(y)),
            s32((ux & 0xFFFFFF) * (uy & 0xFFFFFF)),
            s32(abs(ux - uy) + 3),
            (x + y) >> 1,
            (x + y + 1) >> 1,
            s32((ux + uy) >> 1),
            s32((ux + uy + 1) >> 1),
            s32((((uy << 32) | ux) << (i & 31)) >> 32),
            s32(((x >> off) & 0xFF) - (0x100 if (x >> off) & 0x80 else 0)),
        ]
        assert out[i].tolist() == expected, (i, x, y)


# --- classes --------------------------------------------------------------------------------


def check_julia_counts(prog: Program, rng):
    n, max_iter = 2000, 50
    points = rng.integers(-128, 128, (n, 2)).astype(np.int32)
    counts = np.zeros(n, np.int32)
    prog.julia_counts(points, counts, np.int32(n), np.int32(max_iter), grid=8, block=256)
    z = points[:, 0] / 64 + 1j * points[:, 1] / 64
    expected = np.zeros(n, np.int32)
    for i in range(n):
        # In doubles: the first iterations, where the count is decided for most points,
        # are exact in float too; the rest may differ by rounding, within one iteration.
        w, k = z[i], 0
        while k < max_iter and abs(w) ** 2 <= 4:
            w, k = w * w + (-0.5 + 0.25j), k + 1
        expected[i] = k
    diverged = expected < max_iter
    assert (np.abs(counts - expected) <= 1).all()
    assert (counts[expected <= 3] == expected[expected <= 3]).all()
    assert diverged.sum() > n // 4 and (~diverged).sum() > 0


def check_transform_affine(prog: Program, rng):
    n = 3000
    x = rng.random(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    op = np.array((2.5, -1.0), np.dtype([("scale", np.float32), ("shift", np.float32)]))
    prog.kernel("transform<float, Affine>")(x, out, np.int32(n), op, grid=3, block=128)
    # scale * x + shift may be one fma (HIP contracts): within an ulp of the two roundings.
    np.testing.assert_allclose(out, np.float32(2.5) * x - np.float32(1), rtol=2e-7, atol=1e-7)


def check_transform_clamp(prog: Program, rng):
    n = 3000
    x = rng.integers(-100, 100, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    op = np.array((-10, 25), np.dtype([("lo", np.int32), ("hi", np.int32)]))
    prog.kernel("transform<int, Clamp>")(x, out, np.int32(n), op, grid=3, block=128)
    np.testing.assert_array_equal(out, np.clip(x, -10, 25))


def check_transform_square(prog: Program, rng):
    n = 1000
    x = rng.standard_normal(n)
    out = np.zeros(n)
    # An empty struct by value: one byte, as clang passes it.
    prog.kernel("transform<double,Square<double>>")(x, out, np.int32(n), b"\0", grid=2, block=64)
    np.testing.assert_array_equal(out, x * x)


def check_float_fields(prog: Program, rng):
    n = 1000
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)).astype(np.float32)
    x[:4] = [0.0, -0.0, np.inf, np.float32(1e-40)]
    out = np.zeros((n, 3), np.uint32)
    prog.float_fields(x, out, np.int32(n), grid=4, block=256)
    bits = x.view(np.uint32)
    np.testing.assert_array_equal(out[:, 0], bits >> 31)
    np.testing.assert_array_equal(out[:, 1], (bits >> 23) & 0xFF)
    np.testing.assert_array_equal(out[:, 2], (bits & 0x7FFFFF) ^ (bits >> 23))


def check_sort8_select(prog: Program, rng):
    n = 500
    x = rng.integers(-1000, 1000, (n, 8)).astype(np.int32)
    sorted_, picked = np.zeros_like(x), np.zeros(n, np.int32)
    prog.sort8_select(x, sorted_, picked, np.int32(n), grid=2, block=256)
    s = np.sort(x, axis=1)
    np.testing.assert_array_equal(sorted_, s)
    t = np.arange(n)
    median = (s[:, 3] + s[:, 4]).astype(np.int64)
    median = np.where(median < 0, -(-median // 2), median // 2)  # C division truncates
    choices = [s[:, 0], s[:, 7], median, s[:, 7] - s[:, 0], s[t, t % 8]]
    np.testing.assert_array_equal(picked, np.choose(t % 5, choices))


def check_dots_float(prog: Program, rng):
    n = 300
    a, b = (rng.integers(-8, 8, (n, 4)).astype(np.float32) for _ in range(2))
    out = np.zeros(n, np.float32)
    prog.kernel("dots<float, 4>")(a, b, out, np.int32(n), grid=2, block=256)
    np.testing.assert_array_equal(out, (a * b).sum(1))


def check_dots_int64(prog: Program, rng):
    n = 300
    a, b = (rng.integers(-(2**40), 2**40, (n, 3)) for _ in range(2))
    out = np.zeros(n, np.int64)
    prog.kernel("dots<long long, 3>")(a, b, out, np.int32(n), grid=2, block=256)
    expected = [
        sum(int(p) * int(q) for p, q in zip(ra, rb, strict=True))
        for ra, rb in zip(a, b, strict=True)
    ]
    assert out.tolist() == [_s64(v) for v in expected]


# --- cas_atomics ----------------------------------------------------------------------------


def check_cas_float_atomics(prog: Program, rng):
    n = 3000
    x = (rng.standard_normal(n) * 100).astype(np.float32)
    factors = (1 + rng.random(64) / 16).astype(np.float32)
    out = np.array([-np.inf, np.inf, 1.0], np.float32)
    total = np.zeros(1)
    prog.cas_float_atomics(x, factors, out, total, np.int32(n), grid=12, block=256)
    assert out[0] == x.max() and out[1] == x.min()
    # The product's order varies between runs: each order rounds 64 times (2^-24 each).
    np.testing.assert_allclose(out[2], np.prod(factors, dtype=np.float64), rtol=64 * 2**-24)
    np.testing.assert_allclose(total[0], x.sum(dtype=np.float64), rtol=1e-12)
    # All negative: the minimum goes through the unsigned branch.
    neg = -np.abs(x) - 1
    out = np.array([-np.inf, 0.0, 1.0], np.float32)
    prog.cas_float_atomics(neg, factors, out, total, np.int32(n), grid=12, block=256)
    assert out[0] == neg.max() and out[1] == neg.min()


def check_filter_positive(prog: Program, rng):
    for block in (32, 64, 256):
        n = 5000
        x = rng.integers(-100, 100, n).astype(np.int32)
        out, count = np.zeros(n, np.int32), np.zeros(1, np.int32)
        prog.filter_positive(x, out, count, np.int32(n), grid=-(-n // block), block=block)
        kept = x[x > 0]
        assert count[0] == len(kept)
        # Slots are taken in a racy order: the same values, each once.
        np.testing.assert_array_equal(np.sort(out[: len(kept)]), np.sort(kept))


# --- half -----------------------------------------------------------------------------------


def check_haxpy(prog: Program, rng):
    n2 = 1000
    x = (rng.random(2 * n2) * 4 - 2).astype(np.float16)
    y = (rng.random(2 * n2) * 4 - 2).astype(np.float16)
    expected = (np.float32(1.5) * x.astype(np.float32) + y).astype(np.float16)  # one rounding
    prog.haxpy(np.int32(n2), np.float16(1.5), x, y, grid=2, block=128)
    np.testing.assert_array_equal(y, expected)


def check_hdot(prog: Program, rng):
    n = 1000
    a = (rng.random(n) * 2 - 1).astype(np.float16)
    b = (rng.random(n) * 2 - 1).astype(np.float16)
    waves = -(-n // CPU_WARP)
    partial = np.zeros(waves + 1, np.float32)
    prog.hdot(a, b, partial, np.int32(n), grid=4, block=256)
    prod = np.zeros(waves * CPU_WARP)
    prod[:n] = a.astype(np.float64) * b  # each product of halves is exact in float
    np.testing.assert_allclose(partial[:waves], prod.reshape(-1, CPU_WARP).sum(1), atol=1e-5)


def check_half_misc(prog: Program, rng):
    n = 1000
    x = (rng.standard_normal(n) * 100).astype(np.float32)
    y = x.astype(np.float16).astype(np.float32)  # equal halves on the first rows
    y[n // 4 :] = (rng.standard_normal(n - n // 4) * 100).astype(np.float32)
    out, sign = np.zeros((n, 4), np.float16), np.zeros(n, np.int32)
    prog.half_misc(x, y, out, sign, np.int32(n), grid=4, block=256)
    a, b = x.astype(np.float16), y.astype(np.float16)
    np.testing.assert_array_equal(out[:, 0], (a.astype(np.float32) * 2).astype(np.float16))
    np.testing.assert_array_equal(out[:, 1], np.maximum(a, np.float16(0)))
    np.testing.assert_array_equal(out[:, 2], np.maximum(a, b))
    np.testing.assert_array_equal(out[:, 3], np.minimum(a, b))
    np.testing.assert_array_equal(sign, np.sign(a.astype(np.float32) - b))
    assert (sign[: n // 4] == 0).all()


def check_hwave_max(prog: Program, rng):
    # Failed before: the shuffles had no __half/__half2 overloads (clang: "call to
    # '__shfl_xor' is ambiguous"); HIP's amd_hip_fp16.h has them.
    n = 256
    x = (rng.standard_normal(n) * 100).astype(np.float16)
    pairs = (rng.random((n, 2)) * 8).astype(np.float16)
    maxima, sums = np.zeros(n, np.float16), np.zeros((n, 2), np.float16)
    prog.hwave_max(x, pairs, maxima, sums, grid=2, block=128)
    np.testing.assert_array_equal(maxima, np.repeat(x.reshape(-1, CPU_WARP).max(1), CPU_WARP))
    following = pairs.reshape(-1, CPU_WARP, 2)
    # Lane 63 of each wavefront reads its own value (past the wavefront's end).
    following = np.concatenate([following[:, 1:], following[:, -1:]], axis=1).reshape(n, 2)
    np.testing.assert_array_equal(sums, pairs + following)


def check_half_math(prog: Program, rng):
    # Failed before: hip_fp16.h had none of these (clang: undeclared identifiers).
    n = 1000
    f = (rng.standard_normal((n, 2)) * 10.0 ** rng.integers(-2, 5, (n, 1))).astype(np.float32)
    f[:6, 0] = [np.nan, np.inf, -np.inf, 70000.0, 2.5, -2.5]  # 70000: +inf in half
    f[:6, 1] = [1.0, np.nan, 3.0, -4.0, np.nan, 0.5]
    out = np.zeros((n, 8), np.float16)
    bits, flags, maxima = np.zeros(n, np.uint16), np.zeros(n, np.int32), np.zeros(n, np.float16)
    prog.half_math(f, out, bits, flags, maxima, np.int32(n), grid=4, block=256)
    with np.errstate(all="ignore"):
        h = f.astype(np.float16)  # 70000 overflows to inf, as __float22half2_rn does
        x = h[:, 0]
        np.testing.assert_array_equal(out[:, 0], x)
        np.testing.assert_array_equal(out[:, 1], h[:, 1])
        np.testing.assert_array_equal(out[:, 2], np.floor(x) + np.ceil(x))
        np.testing.assert_array_equal(out[:, 3], np.trunc(x))
        np.testing.assert_array_equal(out[:, 4], np.rint(x))
        np.testing.assert_array_equal(out[:, 5], np.float16(1) / x)
        exp2 = np.exp2(np.minimum(x.astype(np.float64), 10))
        exp2[0] = np.exp2(10)  # __hmin(NaN, 10) is 10
        assert_ulp(out[:, 6], exp2, 1, "hexp2")  # in float, rounded once to half
        log2 = np.log2((np.abs(h[:, 1]) + np.float16(1)).astype(np.float64))  # a half sum
        assert_ulp(out[:, 7], log2, 1, "hlog2")
        np.testing.assert_array_equal(bits, x.view(np.uint16))
        np.testing.assert_array_equal(flags, np.isnan(x) + 2 * np.isinf(x))
        # max(|x|, |y|) where a NaN operand gives the other one (HIP's __hmax).
        a = np.abs(h.astype(np.float64))
        np.testing.assert_array_equal(maxima, np.fmax(a[:, 0], a[:, 1]).astype(np.float16))


# --- fastmath ---------------------------------------------------------------------------------


def assert_ulp(got: np.ndarray, exact: np.ndarray, ulps: float, what: str = ""):
    """|got - exact| within ``ulps`` units in the last place of the float32 result."""
    exact = np.asarray(exact, np.float64)
    ulp = np.spacing(np.abs(exact.astype(got.dtype))).astype(np.float64)
    with np.errstate(invalid="ignore"):
        err = np.abs(got.astype(np.float64) - exact) / ulp
    err[np.isnan(got) & np.isnan(exact)] = 0  # NaN where NaN is due
    err[np.isnan(err)] = np.inf  # NaN where a number is due, or the reverse
    worst = int(np.argmax(err))
    assert err[worst] <= ulps, (
        f"{what}: {err[worst]:.2f} ulp at {worst}: {got[worst]!r} vs {exact[worst]!r}"
    )


def check_trig_fast(prog: Program, rng):
    n = 2000
    x = ((rng.random(n) * 2 - 1) * np.pi).astype(np.float32)
    out = np.zeros((n, 8), np.float32)
    prog.trig_fast(x, out, np.int32(n), grid=8, block=256)
    v = x.astype(np.float64)
    # OpenCL/HIP: sinf and cosf 4 ulp (HIP's own are 2). The intrinsics: an absolute
    # error of 2^-21.41 on [-pi, pi] (__sinf, __cosf), __logf 3 ulp off [0.5, 2].
    assert_ulp(out[:, 0], np.sin(v), 4, "sincosf sin")
    assert_ulp(out[:, 1], np.cos(v), 4, "sincosf cos")
    for col, ref in ((2, np.sin(v)), (3, np.cos(v)), (4, np.sin(v)), (5, np.cos(v))):
        np.testing.assert_allclose(out[:, col], ref, rtol=0, atol=2**-21.41)
    np.testing.assert_allclose(out[:, 6], np.tan(v * 0.25), rtol=2**-20, atol=2**-21)
    assert_ulp(out[:, 7], np.log(v + 5), 3, "__logf")


def check_exp_log_fast(prog: Program, rng):
    n = 2000
    x = (rng.random(n) * 4 + 0.1).astype(np.float32)
    out = np.zeros((n, 8), np.float32)
    prog.exp_log_fast(x, out, np.int32(n), grid=8, block=256)
    v = x.astype(np.float64)
    shifted = (x - np.float32(2)).astype(np.float64)  # v - 2.0f rounds below 1
    np.testing.assert_allclose(out[:, 0], v ** np.float64(np.float32(1.7)), rtol=2**-19)
    assert_ulp(out[:, 1], 10**shifted, 3, "exp10f")
    np.testing.assert_allclose(out[:, 2], 10**shifted, rtol=2**-19)
    np.testing.assert_allclose(out[:, 3], np.log2(v), rtol=2**-21, atol=2**-22)
    np.testing.assert_allclose(out[:, 4], np.log10(v), rtol=2**-21, atol=2**-22)
    assert_ulp(out[:, 5], 1 / np.sqrt(v), 2, "rsqrtf")
    # Round to nearest (CUDA: 0 ulp); before, OpenCL's rsqrt (1.4 ulp seen).
    assert_ulp(out[:, 6], 1 / np.sqrt(v), 0.5 + 1e-6, "__frsqrt_rn")
    np.testing.assert_array_equal(out[:, 7], np.float32(1) / x)  # correctly rounded


def check_rounded_ops(prog: Program, rng):
    n = 2000
    a = (rng.standard_normal(n) * 10).astype(np.float32)
    b = (rng.standard_normal(n) * 10).astype(np.float32)
    a[:200] = 1 + rng.random(200).astype(np.float32)  # products near 1: fused != unfused
    b[:200] = 1 / a[:200] + (rng.random(200) * 1e-6).astype(np.float32)
    out = np.zeros((n, 7), np.float32)
    prog.rounded_ops(a, b, out, np.int32(n), grid=8, block=256)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_array_equal(out[:, 0], a + b)
    np.testing.assert_array_equal(out[:, 1], a - b)
    np.testing.assert_array_equal(out[:, 2], a * b)
    np.testing.assert_array_equal(out[:, 3], a / b)
    fused = (a64 * b64 - 1).astype(np.float32)  # exact product in double: one rounding
    np.testing.assert_array_equal(out[:, 4], fused)
    np.testing.assert_array_equal(out[:, 5], np.sqrt(np.abs(a)))
    unfused = a * b - np.float32(1)
    assert (fused != unfused).sum() > 10
    np.testing.assert_array_equal(out[:, 6], unfused)


def check_conversions(prog: Program, rng):
    n = 2000
    x = (rng.standard_normal(n) * 1000).astype(np.float32)
    x[:12] = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.49999976, -7.0, 1e9, -1e9, 0.0, -0.0]
    out = np.zeros((n, 12), np.int64)
    prog.conversions(x, out, np.int32(n), grid=8, block=256)
    v = x.astype(np.float64)
    round_half_away = np.sign(v) * np.floor(np.abs(v) + 0.5)
    expected = np.column_stack(
        [
            np.rint(v),
            np.trunc(v),
            np.ceil(v),
            np.floor(v),
            np.rint(np.abs(v)),
            np.rint(v),
            round_half_away,
            np.rint(v),
            np.rint(v),
            np.trunc(v),
            round_half_away,
            np.rint(v * 0.5),
        ]
    ).astype(np.int64)
    np.testing.assert_array_equal(out, expected)


def check_decompose(prog: Program, rng):
    n = 2000
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-5, 6, n)).astype(np.float32)
    y = (rng.random(n) * 10 + 0.5).astype(np.float32) * rng.choice([-1, 1], n).astype(np.float32)
    out = np.zeros((n, 8), np.float32)
    prog.decompose(x, y, out, np.int32(n), grid=8, block=256)
    mantissa, exponent = np.frexp(x)
    np.testing.assert_array_equal(out[:, 0], mantissa)
    np.testing.assert_array_equal(out[:, 1], exponent)
    np.testing.assert_array_equal(out[:, 2], np.ldexp(x, np.arange(n) % 20 - 10))
    frac, whole = np.modf(x)
    np.testing.assert_array_equal(out[:, 3], frac)
    np.testing.assert_array_equal(out[:, 4], whole)
    np.testing.assert_array_equal(out[:, 5], np.fmod(x, y))  # exact in C and NumPy
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    quotient = np.rint(x64 / y64)  # x / y is far from a tie for these inputs
    exact_rem = x64 - quotient * y64
    np.testing.assert_array_equal(out[:, 6], exact_rem.astype(np.float32))
    q = quotient.astype(np.int64)
    # remquo's quotient: the sign of x / y, the magnitude's low 7 bits (OpenCL); the
    # kernel keeps the two's complement low 3 bits, times the sign.
    np.testing.assert_array_equal(out[:, 7], (q & 7) * np.where(q < 0, -1, 1))


def check_double_bits(prog: Program, rng):
    n = 1000
    x = rng.standard_normal(n) * 100
    out = np.zeros((n, 4))
    prog.double_bits(x, out, np.int32(n), grid=4, block=256)
    np.testing.assert_allclose(out[:, 0], np.sin(x), rtol=0, atol=4 * 2**-52)
    np.testing.assert_allclose(out[:, 1], np.cos(x), rtol=0, atol=4 * 2**-52)
    assert (out[:, 2] == 0).all()
    np.testing.assert_allclose(out[:, 3], np.hypot(x, 3.0), rtol=4 * 2**-52)


# --- convolution ----------------------------------------------------------------------------

KERNEL_RADIUS = 4


def _set_filter(prog: Program, taps: np.ndarray, width: int, height: int):
    prog.global_variable("c_Kernel")[:] = taps
    geometry = prog.global_variable("c_geometry")
    geometry[...] = np.frombuffer(
        np.array([width, height, width], np.int32).tobytes(), geometry.dtype
    )


def _convolve(image: np.ndarray, taps: np.ndarray, axis: int) -> np.ndarray:
    # out[x] = sum_j taps[R - j] * in[x + j], zero outside, in float64.
    padded = np.pad(
        image.astype(np.float64),
        [(KERNEL_RADIUS, KERNEL_RADIUS) if a == axis else (0, 0) for a in (0, 1)],
    )
    n = image.shape[axis]
    return sum(
        taps[KERNEL_RADIUS - j]
        * np.take(padded, range(KERNEL_RADIUS + j, KERNEL_RADIUS + j + n), axis=axis)
        for j in range(-KERNEL_RADIUS, KERNEL_RADIUS + 1)
    )


def check_convolutionRows(prog: Program, rng):
    width, height = 128, 20  # the last block of rows is partly outside
    taps = rng.random(2 * KERNEL_RADIUS + 1).astype(np.float32)
    _set_filter(prog, taps, width, height)
    src = rng.random((height, width), dtype=np.float32)
    dst = np.zeros_like(src)
    prog.convolutionRows(dst, src, grid=(width // 64, -(-height // 4)), block=(16, 4))
    np.testing.assert_allclose(dst, _convolve(src, taps.astype(np.float64), 1), rtol=1e-5)


def check_convolutionColumns(prog: Program, rng):
    width, height = 40, 64  # the last block of columns is partly outside
    taps = rng.random(2 * KERNEL_RADIUS + 1).astype(np.float32)
    _set_filter(prog, taps, width, height)
    src = rng.random((height, width), dtype=np.float32)
    dst = np.zeros_like(src)
    prog.convolutionColumns(dst, src, grid=(-(-width // 16), height // 32), block=(16, 8))
    np.testing.assert_allclose(dst, _convolve(src, taps.astype(np.float64), 0), rtol=1e-5)


# --- transpose_tiles --------------------------------------------------------------------------


def _tiles(width, height):
    return (-(-width // 32), -(-height // 32))


def check_copy_shared(prog: Program, rng):
    height, width = 70, 100
    a = rng.random((height, width), dtype=np.float32)
    out = np.zeros_like(a)
    prog.kernel("copySharedMem<float>")(
        out, a, np.int32(width), np.int32(height), grid=_tiles(width, height), block=(32, 8)
    )
    np.testing.assert_array_equal(out, a)


def check_transpose_float(prog: Program, rng):
    height, width = 70, 100
    a = rng.random((height, width), dtype=np.float32)
    out = np.zeros((width, height), np.float32)
    kernel = prog.kernel("transposeNoBankConflicts<float>")
    kernel(out, a, np.int32(width), np.int32(height), grid=_tiles(width, height), block=(32, 8))
    np.testing.assert_array_equal(out, a.T)


def check_transpose_double(prog: Program, rng):
    height, width = 64, 33
    a = rng.standard_normal((height, width))
    out = np.zeros((width, height))
    kernel = prog.kernel("transposeNoBankConflicts<double>")
    kernel(out, a, np.int32(width), np.int32(height), grid=_tiles(width, height), block=(32, 8))
    np.testing.assert_array_equal(out, a.T)


def check_transposeDiagonal(prog: Program, rng):
    for height, width in ((96, 96), (64, 128)):
        a = rng.random((height, width), dtype=np.float32)
        out = np.zeros((width, height), np.float32)
        grid = (width // 32, height // 32)
        prog.transposeDiagonal(out, a, np.int32(width), np.int32(height), grid=grid, block=(32, 8))
        np.testing.assert_array_equal(out, a.T)


# --- shared_template --------------------------------------------------------------------------


def _check_reduce6(prog, rng, name, dtype, block, n, grid):
    x = rng.integers(-1000, 1000, n).astype(dtype)
    out = np.zeros(grid, dtype)
    itemsize = np.dtype(dtype).itemsize
    prog.kernel(name)(x, out, np.uint32(n), grid=grid, block=block, shared_mem=block * itemsize)
    # Block b sums the pairs of block-sized chunks it strides over.
    expected = np.zeros(grid, np.float64)
    for b in range(grid):
        start = b * block * 2
        while start < n:
            expected[b] += x[start : start + 2 * block].astype(np.float64).sum()
            start += block * 2 * grid
    np.testing.assert_array_equal(out, expected.astype(dtype))


def check_reduce6_float(prog, rng):
    _check_reduce6(prog, rng, "reduce6<float, 256, true>", np.float32, 256, 1 << 14, 8)


def check_reduce6_double(prog, rng):
    _check_reduce6(prog, rng, "reduce6<double, 128, false>", np.float64, 128, 1000, 3)


def check_reduce6_int(prog, rng):
    _check_reduce6(prog, rng, "reduce6<int, 512, false>", np.int32, 512, 12345, 5)


def check_carve_shared(prog: Program, rng):
    n, block = 1000, 128
    keys = rng.integers(-(10**6), 10**6, n).astype(np.int32)
    values = rng.random(n, dtype=np.float32)
    keys_out, values_out = np.zeros(n, np.int32), np.zeros(n, np.float32)
    flags = np.full(n, 7, np.uint8)
    grid = -(-n // block)
    prog.carve_shared(
        keys,
        values,
        keys_out,
        values_out,
        flags,
        np.int32(n),
        grid=grid,
        block=block,
        shared_mem=block * 9,
    )
    pk = np.full(grid * block, -1, np.int32)
    pk[:n] = keys
    pv = np.zeros(grid * block, np.float32)
    pv[:n] = values
    pf = np.zeros(grid * block, np.uint8)
    pf[:n] = np.fmod(keys, 3) == 0  # C's % truncates
    reverse = lambda a: a.reshape(grid, block)[:, ::-1].ravel()[:n]  # noqa: E731
    np.testing.assert_array_equal(keys_out, reverse(pk))
    np.testing.assert_array_equal(values_out, reverse(pv) * 2)
    np.testing.assert_array_equal(flags, reverse(pf))


# --- radix_printf ----------------------------------------------------------------------------


def check_radix_sort(prog: Program, rng):
    keys = rng.integers(0, 2**32, 4 * 256, dtype=np.uint64).astype(np.uint32)
    data = keys.copy()
    prog.kernel("radix_sort_block<256>")(data, np.int32(32), grid=4, block=256)
    np.testing.assert_array_equal(data, np.sort(keys.reshape(4, 256), axis=1).ravel())
    # 8 bits only: a stable sort by the low byte.
    data = keys.copy()
    prog.kernel("radix_sort_block<256>")(data, np.int32(8), grid=4, block=256)
    blocks = keys.reshape(4, 256)
    order = np.argsort(blocks & 0xFF, axis=1, kind="stable")
    np.testing.assert_array_equal(data, np.take_along_axis(blocks, order, axis=1).ravel())


def check_segment_ops(prog: Program, rng):
    for block in (64, 128):
        x = rng.integers(-1000, 1000, 3 * block).astype(np.int32)
        sums8, bcast16 = np.zeros_like(x), np.zeros_like(x)
        prog.segment_ops(x, sums8, bcast16, grid=3, block=block)
        np.testing.assert_array_equal(sums8, np.repeat(x.reshape(-1, 8).sum(1), 8))
        np.testing.assert_array_equal(bcast16, np.repeat(x.reshape(-1, 16)[:, 3], 16))


def _collatz(v: int) -> int:
    steps = 0
    while v != 1:
        v = 3 * v + 1 if v & 1 else v // 2
        steps += 1
    return steps


def check_collatz_steps(prog: Program, rng):
    start = rng.integers(1, 100_000, 512).astype(np.uint32)
    start[:3] = [1, 27, 77031]  # 0, 111 and 350 steps
    steps = np.zeros(512, np.int32)
    prog.collatz_steps(start, steps, grid=4, block=128)
    assert steps.tolist() == [_collatz(int(v)) for v in start]


def check_reduce_sync_ops(prog: Program, rng):
    # Failed before: the header had no __reduce_*_sync (HIP 6.2+).
    for block in (64, 128):
        x = rng.integers(-1000, 1000, 3 * block).astype(np.int32)
        out = np.zeros((3 * block, 6), np.int32)
        prog.reduce_sync_ops(x, out, grid=3, block=block)
        for w, seg in enumerate(x.reshape(-1, CPU_WARP)):
            o = out[w * CPU_WARP : (w + 1) * CPU_WARP]
            assert (o[:, 0] == seg.sum()).all() and (o[:, 1] == seg.min()).all()
            assert (o[:, 2] == seg.max()).all()
            assert (o[:, 3] == np.bitwise_xor.reduce(seg)).all()
            assert (o[0::2, 4] == seg[0::2].sum()).all() and (o[1::2, 4] == 0).all()
            assert (o[:, 5] == np.bitwise_or.reduce(seg & 0xF0)).all()


def check_report(prog: Program, rng, capfd):
    values = rng.integers(-3, 5, 5).astype(np.float32) / 4
    values[:2] = [1.0, -2.5]
    prog.report(values, np.int32(len(values)), grid=2, block=4)
    lines = sorted(capfd.readouterr().out.splitlines())
    expected = [
        f"block {i // 4} thread {i % 4}: values[{i}] = {v:.3f} ({v:e}) is negative, skipping"
        for i, v in enumerate(values.tolist())
        if v < 0
    ]
    assert lines == sorted([*expected, "checked 5 values, 20 bytes, 100.0%, abcdef"])


# --- porting --------------------------------------------------------------------------------


def _search_depth(sorted_: list[int], lo: int, hi: int, key: int) -> int:
    if lo >= hi:
        return 0
    mid = lo + (hi - lo) // 2
    if sorted_[mid] == key:
        return 1
    if key < sorted_[mid]:
        return 1 + _search_depth(sorted_, lo, mid, key)
    return 1 + _search_depth(sorted_, mid + 1, hi, key)


def check_ported_helpers(prog: Program, rng):
    n = 600
    x = rng.integers(-100, 100, n).astype(np.int32)
    x[:2] = [0, 7]
    sorted_ = np.unique(rng.integers(-100, 100, 90)).astype(np.int32)
    out = np.zeros((n, 6), np.int32)
    prog.ported_helpers(x, sorted_, np.int32(len(sorted_)), out, np.int32(n), grid=3, block=256)
    primes = [2, 3, 5, 7, 11, 13, 17, 19]
    table = sorted_.tolist()
    for i, v in enumerate(x.tolist()):
        k = (i // 16) % (i % 16 + 1)
        expected = [
            v + primes[i % 8],
            min(max(v, -50), 50),
            2**31 - 1 if v == 0 else int(-32768 / v),  # C division truncates
            math.comb(i % 16, k),
            _search_depth(table, 0, len(table), v),
            (v != 0) + 2,
        ]
        assert out[i].tolist() == expected, i


def check_heap_lists(prog: Program, rng):
    # Failed before: the header declared no device malloc/free (clang: undeclared
    # identifier 'malloc'); HIP has a device heap.
    blocks, per_block = 6, 50
    x = rng.integers(-20, 20, blocks * per_block).astype(np.int32)
    sums, counts = np.zeros(blocks, np.uint32), np.zeros(blocks, np.int32)
    prog.heap_lists(x, sums, counts, np.int32(per_block), grid=blocks, block=32)
    for b, chunk in enumerate(x.reshape(blocks, per_block)):
        total = 0
        for v in chunk[chunk > 0].tolist():
            total = (total * 3 + v) % 2**32
        assert counts[b] == (chunk > 0).sum()
        assert sums[b] == total


# --- gemm_tiled -------------------------------------------------------------------------------


def check_sgemm_tiled(prog: Program, rng):
    m, n, k = 128, 192, 48
    # Small integers: every product and partial sum is exact, in any order or with fma.
    a = rng.integers(-4, 5, (m, k)).astype(np.float32)
    b = rng.integers(-4, 5, (k, n)).astype(np.float32)
    c = rng.integers(-4, 5, (m, n)).astype(np.float32)
    expected = 2 * (a @ b) + 0.5 * c
    args = (np.int32(m), np.int32(n), np.int32(k), np.float32(2), a, b, np.float32(0.5), c)
    prog.sgemm_tiled(*args, grid=(n // 64, m // 64), block=(16, 16))
    np.testing.assert_array_equal(c, expected)


def check_reduce_warp32(prog: Program, rng):
    for block in (64, 256, 1024):
        n = 10_000
        x = rng.integers(-100, 100, n).astype(np.float32)  # exact in any order
        out = np.zeros(1, np.float32)
        prog.reduce_warp32(x, out, np.int32(n), grid=5, block=block)
        assert out[0] == x.sum(dtype=np.float64), block


# --- histogram_warps ------------------------------------------------------------------------


def _histogram256(prog: Program, data: np.ndarray, partials: int):
    words = data.view(np.uint32)
    partial = np.full((partials, 256), 7, np.uint32)
    prog.histogram256Kernel(partial, words, np.uint32(len(words)), grid=partials, block=192)
    return partial


def check_histogram256Kernel(prog: Program, rng):
    data = rng.integers(0, 256, 4 * 10_000, dtype=np.uint8)
    data[: 4 * 1000] = 42  # a hot bin: many collisions on one shared counter
    partial = _histogram256(prog, data, 12)
    words = data.view(np.uint32)
    positions = np.arange(len(words))
    for b in range(12):
        # Block b's threads stride over words b*192 + t, step 12*192.
        mine = words[(positions // 192) % 12 == b].view(np.uint8)
        np.testing.assert_array_equal(partial[b], np.bincount(mine, minlength=256))


def check_mergeHistogram256Kernel(prog: Program, rng):
    data = rng.integers(0, 256, 4 * 50_000, dtype=np.uint8)
    partials = 300  # more partials than merge threads: each thread sums two
    partial = _histogram256(prog, data, partials)
    histogram = np.zeros(256, np.uint32)
    prog.mergeHistogram256Kernel(histogram, partial, np.uint32(partials), grid=256, block=256)
    np.testing.assert_array_equal(histogram, np.bincount(data, minlength=256))


CHECKS = {
    "prescan": check_prescan,
    "add_block_offsets": check_add_block_offsets,
    "reduce_single_pass<256>": check_reduce_single_pass_256,
    "reduce_single_pass<128>": check_reduce_single_pass_128,
    "int64_ops": check_int64_ops,
    "random_stats": check_random_stats,
    "cas_product": check_cas_product,
    "int32_helpers": check_int32_helpers,
    "julia_counts": check_julia_counts,
    "transform<float, Affine>": check_transform_affine,
    "transform<int, Clamp>": check_transform_clamp,
    "transform<double, Square<double> >": check_transform_square,
    "float_fields": check_float_fields,
    "sort8_select": check_sort8_select,
    "dots<float, 4>": check_dots_float,
    "dots<long long, 3>": check_dots_int64,
    "cas_float_atomics": check_cas_float_atomics,
    "filter_positive": check_filter_positive,
    "haxpy": check_haxpy,
    "hdot": check_hdot,
    "half_misc": check_half_misc,
    "hwave_max": check_hwave_max,
    "half_math": check_half_math,
    "trig_fast": check_trig_fast,
    "exp_log_fast": check_exp_log_fast,
    "rounded_ops": check_rounded_ops,
    "conversions": check_conversions,
    "decompose": check_decompose,
    "double_bits": check_double_bits,
    "convolutionRows": check_convolutionRows,
    "convolutionColumns": check_convolutionColumns,
    "copySharedMem<float>": check_copy_shared,
    "transposeNoBankConflicts<float>": check_transpose_float,
    "transposeNoBankConflicts<double>": check_transpose_double,
    "transposeDiagonal": check_transposeDiagonal,
    "reduce6<float, 256u, true>": check_reduce6_float,
    "reduce6<double, 128u, false>": check_reduce6_double,
    "reduce6<int, 512u, false>": check_reduce6_int,
    "carve_shared": check_carve_shared,
    "reduce_warp32": check_reduce_warp32,
    "radix_sort_block<256>": check_radix_sort,
    "segment_ops": check_segment_ops,
    "collatz_steps": check_collatz_steps,
    "reduce_sync_ops": check_reduce_sync_ops,
    "report": check_report,
    "ported_helpers": check_ported_helpers,
    "heap_lists": check_heap_lists,
    "sgemm_tiled": check_sgemm_tiled,
    "histogram256Kernel": check_histogram256Kernel,
    "mergeHistogram256Kernel": check_mergeHistogram256Kernel,
}


@pytest.mark.parametrize(("sample", "kernel"), [(s, k) for s, k, _ in PORTED], ids=lambda v: v)
def test_ported_sample_runs_on_the_host_cpu(sample: str, kernel: str, capfd):
    extra = (capfd,) if kernel == "report" else ()  # printf's output
    CHECKS[kernel](ported(sample), np.random.default_rng(RNG_SEED), *extra)


def _gpu_compile(sample: str, kernel: str, target: str) -> None:
    program = ported(sample).for_target(parse_target(target))
    if kernel in GPU_REFUSED:
        with pytest.raises(CompileError, match=GPU_REFUSED[kernel]):
            program.object_code(kernel)
        return
    obj, _origin = program.object_code(kernel)
    assert obj


# One kernel of each sample in CI; every kernel x target under -m slow (about a minute).
_GPU_SAMPLE = {
    "prescan",
    "int64_ops",
    "transform<float, Affine>",
    "filter_positive",
    "hdot",
    "rounded_ops",
    "convolutionRows",
    "transposeNoBankConflicts<double>",
    "reduce6<double, 128u, false>",
    "radix_sort_block<256>",
    "reduce_sync_ops",
    "report",
    "ported_helpers",
    "heap_lists",
    "sgemm_tiled",
    "mergeHistogram256Kernel",
}


# CI: the sampled kernels, each for one target, alternating AMD and NVIDIA.
_GPU_CI = [
    (s, k, GPU_TARGETS[i % len(GPU_TARGETS)])
    for i, (s, k) in enumerate((s, k) for s, k, _ in PORTED if k in _GPU_SAMPLE)
]
_GPU_REST = [
    (s, k, target) for s, k, _ in PORTED for target in GPU_TARGETS if (s, k, target) not in _GPU_CI
]


@pytest.mark.parametrize(("sample", "kernel", "target"), _GPU_CI, ids=lambda v: v)
def test_ported_sample_compiles_for_gpus(sample: str, kernel: str, target: str):
    _gpu_compile(sample, kernel, target)


@pytest.mark.slow
@pytest.mark.parametrize(("sample", "kernel", "target"), _GPU_REST, ids=lambda v: v)
def test_every_ported_kernel_compiles_for_gpus(sample: str, kernel: str, target: str):
    _gpu_compile(sample, kernel, target)


# --- 128-bit integers -------------------------------------------------------------------------

WIDE = r"""
#include <hip/hip_runtime.h>
__global__ void wide(const unsigned long long* a, const unsigned long long* b,
                     unsigned long long* out) {
  int i = threadIdx.x;
  unsigned __int128 x = ((unsigned __int128)a[i] << 64) | b[i];
  out[3 * i] = (unsigned long long)(x / (b[i] | 1));
  out[3 * i + 1] = (unsigned long long)(x % (a[i] | 1));
  out[3 * i + 2] = __umul64hi(a[i], b[i]);
}
__global__ void wide_argument(unsigned __int128 v, unsigned long long* out) {
  out[0] = (unsigned long long)(v >> 64);
}
"""


def test_128_bit_integers_run_and_compile_for_gpus():
    # Failed before: clang-22 makes an OpTypeInt 128 (with SPV_ALTERA_arbitrary_precision_
    # integers) of `__int128` and of the i128 multiply LLVM 22's -O2 forms for
    # __umul64hi (even written with 32-bit partial products); spirvjit's reader refused
    # the module: "integer type of width 128".
    prog = spirvjit.compile_hip(WIDE)
    rng = np.random.default_rng(RNG_SEED)
    a, b = (rng.integers(0, 2**64, 64, dtype=np.uint64) for _ in range(2))
    out = np.zeros((64, 3), np.uint64)
    prog.wide(a, b, out, grid=1, block=64)
    for i, (x, y) in enumerate(zip(a.tolist(), b.tolist(), strict=True)):
        wide = (x << 64) | y
        assert out[i].tolist() == [wide // (y | 1) & M64, wide % (x | 1), x * y >> 64]
    for target in GPU_TARGETS:
        assert prog.for_target(parse_target(target)).object_code("wide")[0]
    # Not as a kernel argument (was: KeyError 128 from the argument packer).
    with pytest.raises(LaunchError, match=r"128-bit integer \(__int128\): pass it as two"):
        prog.wide_argument(np.uint64(1), out, grid=1, block=1)


ATOMIC_OPERANDS = r"""
#include <hip/hip_runtime.h>
__global__ void operands(unsigned* counts, float* total, unsigned long long* bits, int* low) {
  atomicAdd(&counts[threadIdx.x % 4], 1);
  atomicAdd(total, 1);
  atomicMin(low, threadIdx.x + 100u);
  if (threadIdx.x == 0) atomicCAS(bits, 0ull, __double_as_longlong(2.5));
}
"""


def test_atomic_operands_convert_to_the_pointee_type():
    # Failed before: the atomics were templates deducing T from every operand, so
    # atomicAdd(unsigned*, 1) and CUDA's double-atomicAdd recipe (atomicCAS on an
    # unsigned long long* with a long long from __double_as_longlong) did not compile:
    # "deduced conflicting types for parameter 'T'". HIP has one overload per type.
    prog = spirvjit.compile_hip(ATOMIC_OPERANDS)
    counts, total = np.zeros(4, np.uint32), np.zeros(1, np.float32)
    bits, low = np.zeros(1, np.uint64), np.full(1, 1000, np.int32)
    prog.operands(counts, total, bits, low, grid=2, block=64)
    assert counts.tolist() == [32] * 4 and total[0] == 128 and low[0] == 100
    assert bits.view(np.float64)[0] == 2.5


DIVIDE_SQRT = r"""
#include <hip/hip_runtime.h>
__global__ void divide_sqrt(const float* a, const float* b, float* out) {
  int i = threadIdx.x;
  out[2 * i] = a[i] / b[i];
  out[2 * i + 1] = sqrtf(a[i]);
}
"""


def test_hip_float_division_and_sqrt_are_correctly_rounded_on_amd():
    # Failed before: HIP modules were JIT-compiled with OpenCL C's 2.5/3 ulp for float
    # division and sqrt, so gfx942 divided with a bare v_rcp_f32 and took v_sqrt_f32
    # without its correction steps. HIP (clang's -fhip-fp32-correctly-rounded-divide-
    # sqrt, on by default) rounds both correctly: v_div_scale/fmas/fixup, and the
    # v_cmp_class-guarded sqrt clang builds for gfx942 itself.
    prog = spirvjit.compile_hip(DIVIDE_SQRT)
    assert "-cl-fp32-correctly-rounded-divide-sqrt" in prog.options
    amd = prog.for_target(parse_target("gfx942")).assembly("divide_sqrt")
    for instruction in ("v_div_scale_f32", "v_div_fmas_f32", "v_div_fixup_f32", "v_cmp_class_f32"):
        assert instruction in amd
    nvidia = prog.for_target(parse_target("sm_90")).assembly("divide_sqrt")
    assert "div.rn.f32" in nvidia and "sqrt.rn.f32" in nvidia


VIRTUAL = r"""
#include <hip/hip_runtime.h>
struct Shape {
  __device__ virtual float area() const = 0;
};
struct Square : Shape {
  float s;
  __device__ Square(float s) : s(s) {}
  __device__ float area() const override { return s * s; }
};
struct Disc : Shape {
  float r;
  __device__ Disc(float r) : r(r) {}
  __device__ float area() const override { return 3.0f * r * r; }
};
__global__ void areas(const float* size, float* area) {
  int i = threadIdx.x;
  Square square(size[i]);
  Disc disc(size[i]);
  const Shape* shape = (i & 1) ? (const Shape*)&square : (const Shape*)&disc;
  area[i] = shape->area();
}
__global__ void plain(float* x) { x[threadIdx.x] *= 2.0f; }
"""


@pytest.mark.parametrize("target", ["host", "gfx942"])
def test_virtual_function_calls_are_refused_by_name(target: str):
    # Before: "%85 is not a constant the JIT can evaluate" (the vtable's
    # OpConstantFunctionPointerINTEL), which names nothing a HIP user wrote.
    prog = spirvjit.compile_hip(VIRTUAL)
    if target != "host":
        prog = prog.for_target(parse_target(target))
    with pytest.raises(SpirvError, match=r"function Square::area .*C\+\+ virtual functions"):
        prog.object_code("areas")
    assert prog.object_code("plain")[0]  # the module's other kernels compile


@pytest.mark.parametrize(
    "kernel", ["prescan", "carve_shared", "transform<double, Square<double> >"]
)
def test_ported_samples_pass_checked_mode(kernel: str, monkeypatch, capfd):
    # Checked mode must not report correct code: padding slots of the Blelloch scan that
    # are never read, typed views carved from one extern __shared__ buffer, an empty
    # struct passed by value.
    monkeypatch.setenv("SPIRVJIT_CHECK", "1")
    sample = next(s for s, k, _ in PORTED if k == kernel)
    CHECKS[kernel](ported(sample), np.random.default_rng(RNG_SEED))


def test_reduce_sync_takes_64_bit_masks_only():
    # As HIP's header: a CUDA 32-bit mask names only lanes 0-31 of a 64-lane wavefront.
    source = (
        "#include <hip/hip_runtime.h>\n"
        "__global__ void k(int* x) { x[0] = __reduce_add_sync(0xffffffff, x[0]); }"
    )
    with pytest.raises(CompileError, match="The mask must be a 64-bit unsigned integer"):
        spirvjit.compile_hip(source)


HOST_CODE = r"""
#include <hip/hip_runtime.h>
#include <cstdio>
#include <vector>
__global__ void twice(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
int main() {
  const int n = 1 << 20;
  hipDeviceProp_t prop;
  hipGetDeviceProperties(&prop, 0);
  std::printf("%s: %d CUs, %zu bytes of LDS\n", prop.name, prop.multiProcessorCount,
              prop.sharedMemPerBlock);
  std::vector<float> host(n, 1.0f);
  float* d;
  hipMalloc(&d, n * sizeof(float));
  hipStream_t stream;
  hipStreamCreate(&stream);
  int blocks = 0, grid = 0, block = 0;
  hipOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, twice, 256, 0);
  hipOccupancyMaxPotentialBlockSize(&grid, &block, twice);
  hipFuncSetAttribute(twice, hipFuncAttributeMaxDynamicSharedMemorySize, 65536);
  hipFuncSetAttribute((const void*)twice, hipFuncAttributeMaxDynamicSharedMemorySize, 65536);
  hipDeviceSetCacheConfig(hipFuncCachePreferShared);
  hipMemcpyAsync(d, host.data(), n * sizeof(float), hipMemcpyHostToDevice, stream);
  twice<<<(n + block - 1) / block, block, 0, stream>>>(d, n);
  hipStreamSynchronize(stream);
  return hipGetLastError() == hipSuccess ? 0 : 1;
}
"""


def test_host_code_with_occupancy_and_function_attributes_parses():
    # Failed before: the host API lacked hipOccupancyMaxActiveBlocksPerMultiprocessor,
    # hipOccupancyMaxPotentialBlockSize, hipFuncSetAttribute and hipFuncAttribute*, and
    # clang checks a sample's host code even in a device-only compile.
    prog = spirvjit.compile_hip(HOST_CODE)
    x = np.ones(100, np.float32)
    prog.twice(x, np.int32(100), grid=1, block=128)
    assert (x == 2).all()
