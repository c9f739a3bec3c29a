"""Kernels written in Python (@spirvjit.kernel): each twin in py_kernels.py runs against its
OpenCL C original (examples/kernels, benchmarks/kernels, or the C source below) on the
same inputs, compared bit for bit where the two do the same operations; NumPy checks the
rest. The SPIR-V of every Python kernel passes spirv-val, and Python kernels compile and
run with clang and every other external tool out of reach.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import py_kernels as P  # noqa: E402  (tests/kernels is on sys.path, see conftest)
import pytest
from harness import build, spirv_val_path

import spirvjit
from spirvjit import CompileError, LocalMemory
from spirvjit.frontend.python.compiler import module_kernels

ROOT = Path(__file__).resolve().parents[2]
CL3 = ("-cl-std=CL3.0",)
NO_CONTRACT = "#pragma OPENCL FP_CONTRACT OFF\n"


def cl_kernel(path: str, name: str, prefix: str = ""):
    """Kernel ``name`` of an OpenCL C file of the project, built with clang-22."""
    return build(prefix + (ROOT / path).read_text(), CL3).kernel(name)


def same_bits(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes(), np.flatnonzero(
        got.view(np.uint8) != want.view(np.uint8)
    )[:8]


def rng(tag: int) -> np.random.Generator:
    return np.random.default_rng(1234 + tag)


# --- twins of the project's OpenCL C kernels -------------------------------------------------
def test_saxpy_matches_opencl():
    n = 1000
    x = rng(0).standard_normal(n).astype(np.float32)
    y0 = rng(1).standard_normal(n).astype(np.float32)
    y_py, y_cl = y0.copy(), y0.copy()
    P.saxpy(np.float32(2.5), x, y_py, np.uint32(n), global_size=1024)
    # Contraction off in the C twin: Python kernels never fuse a*b+c into an fma.
    cl_kernel("examples/kernels/saxpy.cl", "saxpy", NO_CONTRACT)(
        np.float32(2.5), x, y_cl, np.uint32(n), global_size=1024
    )
    same_bits(y_py, y_cl)
    same_bits(y_py, np.float32(2.5) * x + y0)


def test_reduction_local_memory_and_barriers_match_opencl():
    n, groups, local = 100_003, 8, 64
    x = rng(2).uniform(-1, 1, n).astype(np.float32)
    out_py = np.zeros(groups, np.float32)
    out_cl = np.zeros(groups, np.float32)
    args = dict(global_size=groups * local, local_size=local)
    P.reduction(x, out_py, LocalMemory(local * 4), np.uint32(n), **args)
    cl_kernel("benchmarks/kernels/reduction.cl", "reduction")(
        x, out_cl, LocalMemory(local * 4), np.uint32(n), **args
    )
    same_bits(out_py, out_cl)
    assert abs(out_py.sum(dtype=np.float64) - x.sum(dtype=np.float64)) < 1e-2


def test_histogram_atomics_match_opencl_and_numpy():
    words = rng(3).integers(0, 2**32, 20_000, dtype=np.uint32)
    hist_py = np.zeros(256, np.uint32)
    hist_cl = np.zeros(256, np.uint32)
    P.histogram(words, hist_py, np.uint32(words.size), global_size=256 * 16, local_size=256)
    cl_kernel("benchmarks/kernels/histogram.cl", "histogram")(
        words, hist_cl, np.uint32(words.size), global_size=256 * 16, local_size=256
    )
    np.testing.assert_array_equal(hist_py, hist_cl)
    np.testing.assert_array_equal(hist_py, np.bincount(words.view(np.uint8), minlength=256))


def test_tiled_sgemm_matches_opencl():
    n = 64
    a = rng(4).standard_normal((n, n)).astype(np.float32)
    b = rng(5).standard_normal((n, n)).astype(np.float32)
    c_py = np.zeros((n, n), np.float32)
    c_cl = np.zeros((n, n), np.float32)
    args = dict(global_size=(n, n), local_size=(16, 16))
    P.sgemm(a, b, c_py, np.int32(n), **args)
    # Contraction off in the C twin: Python kernels never fuse a*b+c into an fma.
    sgemm = cl_kernel("benchmarks/kernels/sgemm.cl", "sgemm", NO_CONTRACT)
    sgemm(a, b, c_cl, np.int32(n), **args)
    same_bits(c_py, c_cl)
    np.testing.assert_allclose(c_py, a @ b, rtol=1e-4, atol=1e-4)


def test_mandelbrot_matches_opencl():
    w, h = 96, 64
    args = (np.float32(-2.0), np.float32(-1.0), np.float32(3.0 / w), np.float32(2.0 / h))
    out_py = np.zeros((h, w), np.int32)
    out_cl = np.zeros((h, w), np.int32)
    P.mandelbrot(out_py, *args, np.int32(200), global_size=(w, h))
    cl_kernel("examples/kernels/mandelbrot.cl", "mandelbrot")(
        out_cl, *args, np.int32(200), global_size=(w, h)
    )
    np.testing.assert_array_equal(out_py, out_cl)
    assert out_py.max() == 200 and out_py.min() >= 1


MATH_CL = """
kernel void math_funcs(global const float *x, global float *out) {
    size_t i = get_global_id(0), n = get_global_size(0);
    float v = x[i];
    out[i] = sin(v);
    out[n + i] = cos(v);
    out[2 * n + i] = exp(v);
    out[3 * n + i] = log(fabs(v) + 1.0f);
    out[4 * n + i] = sqrt(fabs(v));
    out[5 * n + i] = tanh(v);
    out[6 * n + i] = atan2(v, 0.5f);
    out[7 * n + i] = pow(fabs(v), 1.5f);
    out[8 * n + i] = floor(v);
    out[9 * n + i] = fmin(v, 0.25f);
    out[10 * n + i] = rsqrt(fabs(v) + 1.0f);
    out[11 * n + i] = fma(v, v, 0.5f);
    out[12 * n + i] = clamp(v, -0.5f, 0.5f);
}
kernel void math_f64(global const double *x, global double *out) {
    size_t i = get_global_id(0), n = get_global_size(0);
    double v = x[i];
    out[i] = sin(v);
    out[n + i] = exp(v);
    out[2 * n + i] = sqrt(fabs(v));
}
"""


def test_math_functions_match_opencl():
    n = 512
    x = rng(6).uniform(-6, 6, n).astype(np.float32)
    x[:4] = (0.0, -0.0, 1e-30, 5.5)
    out_py = np.zeros(13 * n, np.float32)
    out_cl = np.zeros(13 * n, np.float32)
    P.math_funcs(x, out_py, global_size=n)
    build(NO_CONTRACT + MATH_CL, CL3).math_funcs(x, out_cl, global_size=n)
    same_bits(out_py, out_cl)
    np.testing.assert_allclose(out_py[:n], np.sin(x), atol=1e-6)
    xd = x.astype(np.float64)
    d_py = np.zeros(3 * n, np.float64)
    d_cl = np.zeros(3 * n, np.float64)
    P.math_f64(xd, d_py, global_size=n)
    build(NO_CONTRACT + MATH_CL, CL3).math_f64(xd, d_cl, global_size=n)
    same_bits(d_py, d_cl)


VECTORS_CL = """
kernel void vectors(global const float4 *a, global const float4 *b, global float4 *out,
                    global float *s) {
    size_t i = get_global_id(0);
    float4 u = a[i], v = b[i];
    float4 w = u * v + 1.0f;
    w.x = dot(u, v);
    out[i] = (float4)(w.wzy, length(u)) + select(v, u, u < v);
    float4 c = cross(u, v);
    out[get_global_size(0) + i] = (float4)(c.xy, c.z * 2.0f, u.s3);
    s[i] = w.y + v.hi.x;
}
"""


def test_vectors_swizzles_and_geometry_match_opencl():
    n = 256
    a = rng(7).standard_normal((n, 4)).astype(np.float32)
    b = rng(8).standard_normal((n, 4)).astype(np.float32)
    out_py, out_cl = np.zeros((2 * n, 4), np.float32), np.zeros((2 * n, 4), np.float32)
    s_py, s_cl = np.zeros(n, np.float32), np.zeros(n, np.float32)
    P.vectors(a, b, out_py, s_py, global_size=n)
    build(NO_CONTRACT + VECTORS_CL, CL3).vectors(a, b, out_cl, s_cl, global_size=n)
    same_bits(out_py, out_cl)
    same_bits(s_py, s_cl)
    np.testing.assert_allclose(s_py, a[:, 1] * b[:, 1] + 1 + b[:, 2], rtol=1e-5)


INTEGERS_CL = """
kernel void integers(global const int *a, global const int *b, global int *out,
                     global uint *uout) {
    size_t i = get_global_id(0), n = get_global_size(0);
    int x = a[i], y = b[i];
    out[i] = x / y;
    out[n + i] = x % y;
    out[2 * n + i] = x >> (y & 7);
    out[3 * n + i] = max(x, y);
    out[4 * n + i] = abs(x);
    out[5 * n + i] = clz(x);
    out[6 * n + i] = popcount(y);
    out[7 * n + i] = mul_hi(x, y);
    out[8 * n + i] = rotate(x, y);
    out[9 * n + i] = x != 0 ? (x < y ? x : y) : -1;
    uint ux = (uint)x;
    uout[i] = ux >> 3;
    uout[n + i] = ux / 7 + (uint)y;
}
"""


def test_integer_operations_match_opencl():
    n = 512
    a = rng(9).integers(-(2**31), 2**31, n, dtype=np.int32)
    b = rng(10).integers(-1000, 1000, n, dtype=np.int32)
    a[:3] = (0, -7, 7)
    b[:3] = (3, 2, -2)
    b[b == 0] = 1
    out_py, out_cl = np.zeros(10 * n, np.int32), np.zeros(10 * n, np.int32)
    u_py, u_cl = np.zeros(2 * n, np.uint32), np.zeros(2 * n, np.uint32)
    P.integers(a, b, out_py, u_py, global_size=n)
    build(INTEGERS_CL, CL3).integers(a, b, out_cl, u_cl, global_size=n)
    same_bits(out_py, out_cl)
    same_bits(u_py, u_cl)
    # // and % round toward zero, as in C (documented): -7 // 2 == -3, 7 % -2 == 1.
    assert out_py[1] == -3 and out_py[n + 2] == 1


# --- language features with NumPy references ------------------------------------------------
def collatz_reference(i: int, limit: int) -> int:
    x, steps = i + 1, 0
    while x != 1:
        x = x // 2 if x % 2 == 0 else 3 * x + 1
        steps += 1
    return min(steps, limit)


def test_helpers_loops_and_spec_constants():
    out = np.zeros(300, np.int32)
    P.collatz(out, global_size=out.size)  # limit's default, 1000
    assert out.tolist() == [collatz_reference(i, 1000) for i in range(out.size)]
    P.collatz(out, 20, global_size=out.size)
    assert out.tolist() == [collatz_reference(i, 20) for i in range(out.size)]
    # One SPIR-V module, specialised by SpecId: two Programs of the same bytes.
    p20, p1000 = P.collatz.program(limit=20), P.collatz.program()
    assert p20.spirv == p1000.spirv and p20.spec_constants == {0: 20}
    assert b"__spirv_SpecConstant" not in p20.spirv  # the back end made OpSpecConstant
    assert P.collatz.spec_ids == {"limit": 0}


def test_spec_constants_of_every_kind():
    out = np.zeros(4, np.float32)
    P.spec_types(out, global_size=4)
    np.testing.assert_array_equal(out, np.arange(4) * 1.5 + 12)
    P.spec_types(out, 2**40, 0.5, True, 4_000_000_000, global_size=4)
    np.testing.assert_array_equal(out, -(np.arange(4) * 0.5 + 2**40 + 4e9).astype(np.float32))
    assert P.spec_types.spec_ids == {"big": 0, "scale": 1, "negate": 2, "small": 3}
    with pytest.raises(CompileError, match="small=-1 is not a uint32"):
        P.spec_types.program(small=-1)


def test_constant_sizing_an_array_is_baked_per_value():
    x = np.arange(40, dtype=np.float32)
    for width in (3, 5):
        out = np.zeros(32, np.float32)
        P.window_sum(x, out, width=width, global_size=32)
        want = np.array([x[i : i + width].sum() for i in range(32)], np.float32)
        np.testing.assert_array_equal(out, want)
    assert P.window_sum.program(width=3).spirv != P.window_sum.program(width=5).spirv


def test_atomics_in_helpers():
    counts = np.zeros(8, np.int32)
    top = np.array([-1, 0], np.int32)
    flags = np.zeros(100, np.uint8)
    P.atomics(counts, top, flags, global_size=100)
    assert counts.tolist() == [13, 13, 13, 13, 12, 12, 12, 12]
    assert top[0] == 99 and top[1] == 1 and flags.sum() == 1


def test_language_features():
    x = np.arange(16, dtype=np.float32) - 4
    c = np.array([1, 2, 3, 4], np.float32)
    h = np.zeros(16, np.float16)
    out = np.zeros(16, np.float32)
    total = np.zeros(1, np.float32)
    P.features(x, c, h, spirvjit.lang.float4(1, 2, 3, 4), out, total, global_size=16)
    a = c[np.arange(16) % 4]
    want = x.reshape(2, 8).sum(1).repeat(8) + 12 + np.where(a > 0, 1, -1) + a * a + (x < 0)
    want += 8 + 1 + 1  # v.w * 2, any(v * 2 > 3), work_dim()
    np.testing.assert_array_equal(out, want.astype(np.float32))
    np.testing.assert_array_equal(h, (x * 2).astype(np.float16))
    assert total[0] == 24.0
    assert P.features.program().signatures["features"].required_local_size == (8, 1, 1)


def test_syntax_the_docs_promise():
    out = np.zeros(16, np.int32)
    vec = np.arange(64, dtype=np.float32).reshape(16, 4)
    P.syntax(out, vec, np.int32(-3), global_size=16, local_size=8)
    kinds = np.array([1] * 4 + [2] * 4 + [3] * 8)
    group_max = np.repeat([7, 15], 8)
    np.testing.assert_array_equal(out, (11 + 8 + 5 + 2) * 100 + kinds * 10 + group_max)
    want = np.arange(64, dtype=np.float32).reshape(16, 4)[:, [1, 0, 2, 3]]
    want[:, 3] = -4
    np.testing.assert_array_equal(vec, want)


@pytest.mark.parametrize("name", [k.name for k in module_kernels(vars(P))])
def test_pointer_arguments_keep_their_element_types(name):
    """The SPIR-V back end types pointer arguments from their uses: InstCombine's i8 GEPs
    and, at codegen O2, loop strength reduction's made `x` of reduction, histogram and
    window_sum a char* (a void* to the launcher, which then checked nothing)."""
    from spirvjit.frontend.python import types as T

    kern = getattr(P, name)
    params = [p for p in kern.params if not isinstance(p.type, T.ConstantParam)]
    args = kern.program().signatures[name].args
    assert [a.name for a in args] == [p.name for p in params]
    for p, arg in zip(params, args, strict=True):
        if not isinstance(p.type, T.Pointer) or p.type.elem in (T.INT8, T.UINT8):
            continue  # 8-bit element pointers read as void*, as clang's void* are i8*
        elem = p.type.elem
        scalar = elem.elem if isinstance(elem, T.Vector) else elem
        kind = "float" if scalar.is_float else "int"
        assert (arg.element_kind, arg.element_bits) == (kind, scalar.bits), p.name
        assert arg.lanes == getattr(elem, "lanes", 1), p.name


def make_scaler(factor: float):
    """A kernel built inside a function: it sees the closure's ``factor``."""
    from spirvjit.lang import Global, float32, global_id

    @spirvjit.kernel
    def scale(x: Global[float32]):
        i = global_id(0)
        x[i] = x[i] * factor

    return scale


def test_kernels_defined_in_functions_see_their_closure():
    for factor in (2.0, 0.5):
        x = np.arange(8, dtype=np.float32)
        make_scaler(factor)(x, global_size=8)
        np.testing.assert_array_equal(x, np.arange(8, dtype=np.float32) * np.float32(factor))


def test_kernel_without_a_source_file_is_a_clear_error():
    namespace: dict = {}
    exec(  # noqa: S102
        "import spirvjit\nfrom spirvjit.lang import Global, int32\n"
        "@spirvjit.kernel\ndef k(x: Global[int32]):\n    pass\n",
        namespace,
    )
    with pytest.raises(CompileError, match="cannot read the source of k"):
        namespace["k"].spirv()


STAR_MODULE = """
import spirvjit
from spirvjit.lang import *

HOST_ANY, HOST_MIN = any, min

@spirvjit.kernel
def k(x: Global[float32], out: Global[int32]):
    i = global_id(0)
    v = float4(x[i], 1.0, 2.0, 3.0)
    out[i] = (
        int32(any(v > float4(2.5)))
        + int32(all(v > float4(0.5))) * 10
        + int32(round(x[i])) * 100
        + int32(pow(x[i], 2.0)) * 1000
        + max(int32(x[i]), 0) * 10000
    )
"""


def test_star_import_keeps_python_builtins_and_kernels_map_them(tmp_path, monkeypatch):
    import builtins

    (tmp_path / "star_kernels.py").write_text(STAR_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    import star_kernels

    assert star_kernels.HOST_ANY is builtins.any and star_kernels.HOST_MIN is builtins.min
    x = np.array([0.25, 1.5, 2.0], np.float32)
    out = np.zeros(3, np.int32)
    star_kernels.k(x, out, global_size=3)
    assert out.tolist() == [1, 12211, 24211]


def test_many_modules_in_one_process_stay_valid():
    """LLVM 22.1's SPIR-V back end keeps module state in a static: in one process, later
    modules came out with ids defined twice (about 1 in 5 after the first dozen), which
    the reader rejects. Each module is now compiled in a fresh fork."""
    from spirvjit.frontend.python.compiler import compile_kernels
    from spirvjit.spirv.reader import read_module

    for _ in range(20):
        for kern in (P.math_f64, P.math_funcs, P.saxpy):
            read_module(compile_kernels([kern], None))


NO_FORK_SCRIPT = """
import os, sys
sys.path.insert(0, {kernels!r})
import py_kernels as P
from spirvjit.frontend.python.compiler import compile_kernels
from spirvjit.spirv.reader import read_module

def no_fork():
    raise OSError("no fork here")

os.fork = no_fork
for kern in (P.saxpy, P.histogram, P.sgemm):
    read_module(compile_kernels([kern], None))
print("compiled without fork")
"""


def test_without_fork_modules_are_compiled_here_and_checked():
    # In a process of its own: compiling in-process leaves the back end's static state
    # behind, and every later forked child of that process would inherit it.
    script = NO_FORK_SCRIPT.format(kernels=str(Path(__file__).parent))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "compiled without fork" in proc.stdout


def test_back_end_fatal_error_is_a_compile_error_not_an_abort():
    from spirvjit.frontend.python.backend import emit_spirv

    half_atomic = (
        'target triple = "spirv64-unknown-unknown"\n'
        "define spir_kernel void @k(ptr addrspace(1) %p) {\n"
        "  %o = atomicrmw fadd ptr addrspace(1) %p, half 1.0 monotonic\n"
        "  ret void\n}\n"
    )
    with pytest.raises(CompileError, match="SPV_EXT_shader_atomic_float16_add"):
        emit_spirv(half_atomic, "k")


@pytest.mark.skipif(spirv_val_path() is None, reason="spirv-val not installed")
@pytest.mark.parametrize("name", [k.name for k in module_kernels(vars(P))])
def test_spirv_passes_spirv_val(name, tmp_path):
    kern = getattr(P, name)
    path = tmp_path / f"{name}.spv"
    path.write_bytes(kern.spirv(**{p.name: 4 for p in kern.constants}))
    proc = subprocess.run([spirv_val_path(), str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- errors point at the Python source --------------------------------------------------------
BAD = {
    "int_true_division": ("y[i] = x[i] / 2", "'/' on integers is true division"),
    "unknown_name": ("y[i] = nope", "name 'nope' is not defined"),
    "narrowing": ("y[i] = x[i] * 1.5", "float32 does not convert implicitly to int32"),
    "unsupported": ("y[i] = [1][0]", "'List' expressions are not supported"),
    "bad_call": ("y[i] = print(1)", "cannot call"),
    "loop_over_list": ("for k in x:\n        pass", "kernels loop only over range"),
    "return_value": ("return 1", "kernels cannot return values"),
    "negative_index": ("y[-1] = x[0]", "negative index -1: no wrap-around"),
    "float_shift": ("y[i] = x[i] << 1.5", "a shift count must be an integer"),
    "invert_float": ("y[i] = x[i] + int32(~1.5)", "operator Invert is not defined on 1.5"),
    "fold_type": ("y[i] = x[i] + (1.5 << 2)", "cannot evaluate constant expression"),
    "void_result": ("y[i] = spirvjit.lang.barrier()", "this call returns nothing"),
    "private_atomic": (
        "p = spirvjit.lang.private_array(int32, 4)\n    spirvjit.lang.atomic_add(p, 0, 1)",
        "atomics work on Global and Local memory only",
    ),
    "constant_memory": ("x[i] = 1", "ConstantMem (__constant) memory is read-only"),
    "vector_lane": ("y[i] = x[i].x", "'.x' is not supported on this value"),
    "bad_range": ("for k in range(1.5):\n        pass", "range needs integers"),
    "shape": (
        "a = spirvjit.lang.local_array(int32, (i, 2))",
        "needs a shape of positive constant integers",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_compile_errors_name_file_line_and_column(case, tmp_path, monkeypatch):
    stmt, message = BAD[case]
    src = textwrap.dedent(
        """\
        import spirvjit
        from spirvjit.lang import ConstantMem, Global, int32, global_id

        @spirvjit.kernel
        def bad(x: {xtype}, y: Global[int32]):
            i = global_id(0)
            {stmt}
        """
    ).format(
        stmt=stmt, xtype="ConstantMem[int32]" if case == "constant_memory" else "Global[int32]"
    )
    path = tmp_path / f"bad_{case}.py"
    path.write_text(src)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__(path.stem)
    with pytest.raises(CompileError) as info:
        module.bad.spirv()
    err = info.value
    assert message in str(err)
    line = 8 if case == "private_atomic" else 7  # its second statement is the bad one
    assert str(err).startswith(f"{path}:{line}:")
    assert err.filename == str(path) and err.lineno == line and err.col >= 5


def test_type_annotation_required(tmp_path, monkeypatch):
    path = tmp_path / "bad_annotation.py"
    path.write_text("import spirvjit\n\n@spirvjit.kernel\ndef k(x):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__(path.stem)
    with pytest.raises(CompileError, match=r"bad_annotation.py:4:7: error: kernel parameter 'x'"):
        module.k.spirv()


# --- no clang, no external tool --------------------------------------------------------------
NO_TOOLS_SCRIPT = """
import numpy as np, shutil, spirvjit
from spirvjit.lang import Global, float32, global_id, sin
from spirvjit.toolchain import TOOL_NAMES, find_tool
assert all(find_tool(t) is None for t in TOOL_NAMES), [t for t in TOOL_NAMES if find_tool(t)]
assert shutil.which("clang-22") is None and shutil.which("clang") is None

@spirvjit.kernel
def k(x: Global[float32], y: Global[float32]):
    i = global_id(0)
    y[i] = sin(x[i]) * 2.0

x = np.linspace(0, 3, 64, dtype=np.float32)
y = np.zeros_like(x)
k(x, y, global_size=64)
assert np.allclose(y, np.sin(x) * 2, atol=1e-6)
# NVIDIA: PTX text (the CUDA driver compiles it; ptxas, absent, would make a cubin).
ptx, _ = k.program().for_target(spirvjit.parse_target("sm_90")).object_code("k")
assert ptx.startswith(b"//") and b".target sm_90" in ptx and b".entry" in ptx
print("ran without tools")
"""


def test_python_kernel_runs_with_every_external_tool_hidden(tmp_path):
    from spirvjit.toolchain import TOOL_NAMES, env_var

    script = tmp_path / "no_tools.py"
    script.write_text(NO_TOOLS_SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPIRVJIT_")}
    env["PATH"] = str(tmp_path / "empty")  # nothing on PATH at all
    env["PYTHONPATH"] = str(ROOT)
    env["SPIRVJIT_CACHE_DIR"] = str(tmp_path / "cache")
    for tool in TOOL_NAMES:  # also blocks the fallbacks in /usr/lib/llvm-22/bin
        env[env_var(tool)] = str(tmp_path / "missing" / tool)
    proc = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ran without tools" in proc.stdout


# --- spirvjit build on a Python module -----------------------------------------------------
def test_build_unified_binary_from_python_module(tmp_path):
    from spirvjit.ubin.build import Input, build_contents

    contents = build_contents([Input.from_path(ROOT / "tests/kernels/py_kernels.py")])
    names = {k.name for k in contents.kernels}
    assert {"saxpy", "sgemm", "histogram", "mandelbrot", "collatz"} <= names
    assert "window_sum" in names  # its Constant sizes an array: the default is baked in
    assert contents.build.producer == "python"
    assert contents.build.compiler_version.startswith("llvmlite ")
    prog = spirvjit.Program(contents.modules[0], {0: 7})  # collatz's limit is SpecId 0
    out = np.zeros(50, np.int32)
    prog.kernel("collatz")(out, global_size=50)
    assert out.tolist() == [collatz_reference(i, 7) for i in range(50)]
    # Through the file: written, read back (strictly), run with the default limit.
    path = tmp_path / "py.ubin"
    spirvjit.build(ROOT / "tests/kernels/py_kernels.py", path)
    loaded = spirvjit.load(path)
    loaded.kernel("collatz")(out, global_size=50)
    assert out.tolist() == [collatz_reference(i, 1000) for i in range(50)]
