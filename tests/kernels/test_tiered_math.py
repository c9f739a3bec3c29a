"""Kernels calling libm functions with libmvec variants under the tiered JIT
(SPIRVJIT_TIERED=1, backends/cpu/tiered.py, backends/cpu/mathcalls.py).

An element's bits must not depend on which tier computed it, nor on where in its
work-group it lies: the optimized tier's vectorized lanes, its scalar remainder (a group
size that is no multiple of the vector width, a group smaller than the vectorized loop)
and the quick tier's scalar code all compute a libm function with the same libmvec
variant. Every function of ``mathlib.LIBMVEC``, float and double, through LLVM's loop
vectorizer (a loop-free kernel) and whole-function vectorization (a kernel with a loop),
on edge cases (signed zeros, infinities, NaN, subnormals, huge arguments, domain limits)
and random bit patterns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from harness import hold_optimized_compiles

import spirvjit
from spirvjit.backends.cpu import tiered
from spirvjit.toolchain import find_tool
from spirvjit.translate.mathlib import LIBMVEC

KERNELS = Path(__file__).resolve().parents[2] / "benchmarks" / "kernels"

# OpenCL C's name of each libm function with a libmvec variant is its C name.
UNARY = sorted(name for name, arity in LIBMVEC.items() if arity == 1)
BINARY = sorted(name for name, arity in LIBMVEC.items() if arity == 2)
# Work-items: 41 groups of 100 (12 vectors of 8 and a remainder of 4 on AVX2), or of 5
# (no vector at all).
ITEMS = 4100


FUNCTIONS = UNARY + BINARY
# Kernels of a few functions each: the work-group function inlines a kernel that small,
# and only then does LLVM's loop vectorizer vectorize its work-item loop.
GROUP = 6


def _source(ty: str, looped: bool) -> str:
    """Kernels k0, k1, ... each writing a few functions of x (and y) to their rows of out."""
    # With a loop (its count is 1 at run time) whole-function vectorization takes the
    # kernel; without one, LLVM's loop vectorizer vectorizes the work-item loop (not
    # where the calls are conditional: it does not predicate calls).
    loop = "for (int r = 0; r < reps; r++)" if looped else ""
    kernels = []
    for first in range(0, len(FUNCTIONS), GROUP):
        lines = [
            f"out[{row} * n + i] = {f}(a{', b' if f in BINARY else ''});"
            for row, f in enumerate(FUNCTIONS[first : first + GROUP], first)
        ]
        body = "\n        ".join(lines)
        kernels.append(f"""
kernel void k{first // GROUP}(global const {ty} *x, global const {ty} *y, global {ty} *out,
                     int reps)
{{
    size_t i = get_global_id(0), n = get_global_size(0);
    {ty} a = x[i], b = y[i];
    {loop} {{
        {body}
    }}
}}
""")
    return "".join(kernels)


def _inputs(dtype) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of edge values first, then random bit patterns (fixed seed)."""
    info = np.finfo(dtype)
    tiny = info.smallest_subnormal
    edges = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, tiny, -tiny, tiny * 1000, info.tiny, -info.tiny,
         1.0, -1.0, 0.5, 2.0, 1e-7, 10.0, 88.7, -103.0, 710.0, 1e5, -3e4, 1e22,
         info.max, -info.max, 0.9999999, 1.0000001, np.pi / 2, 3.0],
        dtype,
    )  # fmt: skip
    x, y = np.meshgrid(edges, edges)
    bits = np.dtype(dtype).itemsize * 8
    utype = np.uint32 if bits == 32 else np.uint64
    rng = np.random.default_rng(19)
    rest = ITEMS - x.size
    random = rng.integers(0, 2**bits, size=(2, rest), dtype=np.uint64).astype(utype)
    # Half the random values are of modest magnitude, where most results are not
    # saturated: exponents of random bit patterns are mostly huge or tiny.
    modest = rng.uniform(-20, 20, size=(2, rest)).astype(dtype)
    random = np.where(np.arange(rest) % 2, random.view(dtype), modest)
    return (
        np.concatenate([x.ravel(), random[0]]).astype(dtype),
        np.concatenate([y.ravel(), random[1]]).astype(dtype),
    )


@pytest.fixture
def held(monkeypatch):
    """Tiering on, and every optimized-tier compile held until the event is set. The
    disk cache off: a kernel found there (the suite's Black-Scholes, which other tests
    compile) loads optimized, with no quick tier."""
    monkeypatch.setenv("SPIRVJIT_TIERED", "1")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    release = hold_optimized_compiles(monkeypatch, 300)
    yield release
    release.set()


def _run(kernels, x, y, local_size: int) -> np.ndarray:
    out = np.full(len(FUNCTIONS) * ITEMS, 7.0, x.dtype)
    for kernel in kernels:
        kernel(x, y, out, np.int32(1), global_size=ITEMS, local_size=local_size)
    return out.reshape(len(FUNCTIONS), ITEMS)


def _differences(got: np.ndarray, expected: np.ndarray, x, y, what: str) -> list[str]:
    """What differs between two runs' results, bit for bit (nothing: [])."""
    utype = np.uint32 if got.dtype == np.float32 else np.uint64
    differ = got.view(utype) != expected.view(utype)
    if differ.any():
        rows = {}
        for row, item in zip(*np.nonzero(differ), strict=True):
            rows.setdefault(FUNCTIONS[row], (int(item), 0))
            first, count = rows[FUNCTIONS[row]]
            rows[FUNCTIONS[row]] = (first, count + 1)
        detail = ", ".join(
            f"{fn}: {count} (x={x[i]!r} y={y[i]!r}: {got[FUNCTIONS.index(fn), i]!r}"
            f" vs {expected[FUNCTIONS.index(fn), i]!r})"
            for fn, (i, count) in rows.items()
        )
        return [f"{what}: other bits in {int(differ.sum())} results: {detail}"]
    return []


@pytest.mark.parametrize("looped", [False, True], ids=["loop-vectorizer", "wfv"])
@pytest.mark.parametrize("ty", ["float", "double"])
def test_every_libmvec_function_gives_the_same_bits_in_both_tiers_and_every_lane(
    held, ty, looped
) -> None:
    dtype = np.float32 if ty == "float" else np.float64
    x, y = _inputs(dtype)
    program = spirvjit.compile_opencl(_source(ty, looped))
    kernels = [program.kernel(f"k{j}") for j in range(-(-len(FUNCTIONS) // GROUP))]
    quick = _run(kernels, x, y, 100)
    for kernel in kernels:
        assert isinstance(kernel._default, tiered.TieredKernel), "not tiered"
        assert kernel._default.tier == 0
    held.set()
    for kernel in kernels:
        assert kernel.wait_optimized(300) and kernel._default.tier == 1
        assert kernel._default.error is None
    optimized = _run(kernels, x, y, 100)
    # Groups of 5: every element on the optimized tier's scalar path.
    scalar = _run(kernels, x, y, 5)
    differences = _differences(quick, optimized, x, y, "quick tier vs optimized tier")
    differences += _differences(
        optimized, scalar, x, y, "optimized tier, vector lanes vs scalar path"
    )
    assert not differences, "\n".join(differences)


def test_blackscholes_is_tiered_with_the_same_bits(held) -> None:
    """The benchmark suite's Black-Scholes (log and exp inline, sqrt)."""
    # A kernel of its own beside it: the program's object code is then in no cache of
    # this process (other tests compile the suite's Black-Scholes, and a kernel found in
    # the in-memory cache loads optimized, with no quick tier).
    source = (KERNELS / "blackscholes.cl").read_text() + "kernel void own(global int *p) {}\n"
    kernel = spirvjit.compile_opencl(source).kernel("blackscholes")
    rng = np.random.default_rng(5)
    n = 4003
    price = rng.uniform(5, 30, n).astype(np.float32)
    strike = rng.uniform(1, 100, n).astype(np.float32)
    years = rng.uniform(0.25, 10, n).astype(np.float32)

    def run(local_size: int):
        call, put = np.zeros(n, np.float32), np.zeros(n, np.float32)
        kernel(call, put, price, strike, years, np.float32(0.02), np.float32(0.3),
               global_size=n, local_size=local_size)  # fmt: skip
        return call.view(np.uint32), put.view(np.uint32)

    quick = run(4003)
    assert isinstance(kernel._default, tiered.TieredKernel) and kernel._default.tier == 0
    held.set()
    assert kernel.wait_optimized(300) and kernel._default.tier == 1
    for local_size in (4003, 1):  # 500 vectors and a remainder of 3; no vector at all
        optimized = run(local_size)
        np.testing.assert_array_equal(quick[0], optimized[0])
        np.testing.assert_array_equal(quick[1], optimized[1])


def test_one_variant_computes_scalar_calls_and_other_variants_with_the_widest() -> None:
    """A scalar ``logf``, a 4-lane SSE variant and a 16-lane AVX-512 variant (calls no
    vectorizer makes today on AVX2) give the bits of the AVX2 variant's lanes, and their
    declarations go: the 16-lane call runs here without AVX-512."""
    import ctypes

    from llvmlite import ir

    from spirvjit.backends.cpu import codegen, mathcalls
    from spirvjit.target import host_target

    features = host_target().features
    if mathcalls.widest_isa(features) != ("d", 256):
        pytest.skip("an AVX2 host without AVX-512")
    f32, ptr = ir.FloatType(), ir.PointerType()
    module = ir.Module("one_variant_test")

    def kernel(name: str, callee: str, lanes: int) -> None:
        ty = f32 if lanes == 0 else ir.VectorType(f32, lanes)
        declared = module.globals.get(callee) or ir.Function(
            module, ir.FunctionType(ty, [ty]), callee
        )
        fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr, ptr]), name)
        b = ir.IRBuilder(fn.append_basic_block())
        value = b.call(declared, [b.load(fn.args[0], typ=ty, align=4)])
        b.store(value, fn.args[1], align=4)  # numpy arrays: 4-byte alignment only
        b.ret_void()

    kernel("scalar", "logf", 0)
    kernel("sse4", "_ZGVbN4v_logf", 4)
    kernel("avx512", "_ZGVeN16v_logf", 16)
    kernel("avx2", "_ZGVdN8v_logf", 8)  # the widest here: left as it is
    assert mathcalls.one_variant(module, features) == 3
    text = "\n".join(line for line in str(module).splitlines() if not line.startswith("target"))
    for gone in ("@logf", "_ZGVbN4v_logf", "_ZGVeN16v_logf"):
        assert gone not in text
    symbols = ("scalar", "sse4", "avx512", "avx2")
    library = codegen.load_runtime_module(text, "one_variant_test", symbols)
    run = {s: ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(library[s]) for s in symbols}
    x = _inputs(np.float32)[0][:4096]  # a multiple of every lane count

    def apply(symbol: str, lanes: int) -> np.ndarray:
        out = np.empty_like(x)
        for first in range(0, x.size, lanes):
            run[symbol](x[first:].ctypes.data, out[first:].ctypes.data)
        return out.view(np.uint32)

    widest = apply("avx2", 8)
    assert (apply("scalar", 1) == widest).all()
    assert (apply("sse4", 4) == widest).all()
    assert (apply("avx512", 16) == widest).all()


DEBUG_KERNEL = """
kernel void debug_math(global const float *x, global const double *d, global float *y,
                       global double *e)
{
    size_t i = get_global_id(0);
    y[i] = log(x[i]) + sin(x[i]) * pow(x[i], 1.5f);
    e[i] = atan2(d[i], 3.0) + cbrt(d[i]);
}
"""


@pytest.mark.skipif(
    not all(find_tool(tool) for tool in ("clang15", "llvm-spirv", "ld.lld")),
    reason="debug mode needs the translator producer and ld.lld (as tests/kernels/test_gdb.py)",
)
def test_debug_mode_kernels_compute_libm_functions_with_the_same_bits(monkeypatch) -> None:
    """Debug-mode code is compiled without AVX (debugload.without_vex) but calls the
    same AVX2 variant through its scalar wrappers, compiled for the target (a float or
    double passes alike in both calling conventions): the bits of an ordinary kernel."""
    x = _inputs(np.float32)[0][:1000]
    d = _inputs(np.float64)[0][:1000]
    results = []
    for setting in ("0", "1"):
        monkeypatch.setenv("SPIRVJIT_DEBUG_INFO", setting)
        program = spirvjit.compile_opencl(DEBUG_KERNEL, options=["-g"])
        y, e = np.zeros(1000, np.float32), np.zeros(1000, np.float64)
        program.debug_math(x, d, y, e, global_size=1000, local_size=100)
        results.append((y.view(np.uint32), e.view(np.uint64)))
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


VECTORIZED = """
kernel void log2_each(global const float *x, global float *y)
{ size_t i = get_global_id(0); y[i] = log2(x[i]); }
kernel void pow_const(global const float *x, global float *y)
{ size_t i = get_global_id(0); y[i] = pow(x[i], 1.7f); }
kernel void log2_float4(global const float4 *x, global float4 *y)
{ size_t i = get_global_id(0); y[i] = log2(x[i]); }
"""


def test_llvms_vectorizers_still_vectorize_the_wrapped_calls(monkeypatch, tmp_path) -> None:
    """The optimized code of loop-free kernels (LLVM's loop and SLP vectorizers) calls
    the AVX2 variant, or an adapter to it, not the scalar wrapper lane by lane: a
    constant argument (pow's 1.7f) does not make O3 drop the wrapper's argument
    (mathcalls.wrappers_exposed), a float4's four calls are joined (willreturn)."""
    from spirvjit.backends.cpu import mathcalls
    from spirvjit.target import host_target

    if mathcalls.widest_isa(host_target().features) != ("d", 256):
        pytest.skip("an AVX2 host without AVX-512")
    monkeypatch.setenv("SPIRVJIT_DUMP", str(tmp_path))
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    monkeypatch.delenv("SPIRVJIT_TIERED", raising=False)
    program = spirvjit.compile_opencl(VECTORIZED)
    x = np.linspace(1, 2, 4096, dtype=np.float32)
    for name, expected in (
        # log2, not log: float log is vecmath.py's inline definition.
        ("log2_each", "call <8 x float> @_ZGVdN8v_log2f"),
        ("pow_const", "call <8 x float> @_ZGVdN8vv_powf"),
        ("log2_float4", "call <4 x float> @spirvjit.libm.N4.log2f"),
    ):
        y = np.empty_like(x)
        program.kernel(name)(x, y, global_size=4096 // (4 if "4" in name else 1), local_size=64)
        np.testing.assert_allclose(
            y, np.log2(x) if "log" in name else x.astype(np.float64) ** 1.7, rtol=1e-6
        )
        (optimized,) = tmp_path.glob(f"{name}.*.opt.ll")
        text = optimized.read_text()
        runner = text[text.index("define void @spirvjit.") :].split("\n}\n")[0]
        assert expected in runner, name
