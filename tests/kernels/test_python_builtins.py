"""Every OpenCL.std function spirvjit.lang lists, called from a Python kernel and from
OpenCL C on the same inputs: the results must agree bit for bit (both become the same
OpExtInst, or the same LLVM instruction), and every name must compile at all.
"""

from __future__ import annotations

import importlib

import numpy as np
from harness import build

from spirvjit import lang

N = 64
# (name, Python call, C call, argument type): a, b, c are the inputs.
CALLS = [(f, f"{f}(a)", f"{f}(a)", "float") for f in lang.MATH_UNARY]
CALLS += [(f, f"{f}(a, b)", f"{f}(a, b)", "float") for f in lang.MATH_BINARY]
CALLS += [(f, f"{f}(a, b, c)", f"{f}(a, b, c)", "float") for f in lang.MATH_TERNARY]
CALLS += [(f, f"{f}(a, k)", f"{f}(a, k)", "float") for f in lang.MATH_INT_ARG]
CALLS += [(f, f"{f}(j)", f"{f}(j)", "int") for f in lang.INT_UNARY]
CALLS += [(f, f"{f}(j, m)", f"{f}(j, m)", "int") for f in lang.INT_BINARY]
CALLS += [
    ("min", "min(a, b)", "fmin(a, b)", "float"),
    ("max_int", "max(j, m)", "max(j, m)", "int"),
    ("clamp", "clamp(a, b, c)", "clamp(a, b, c)", "float"),
    ("clamp_int", "clamp(j, -5, 5)", "clamp(j, -5, 5)", "int"),
    ("abs_int", "abs(j)", "(int)abs(j)", "int"),
    ("dot", "dot(float4(a, b, c, a), float4(c, b, a, b))",
     "dot((float4)(a, b, c, a), (float4)(c, b, a, b))", "float"),
    ("length", "length(float4(a, b, c, a))", "length((float4)(a, b, c, a))", "float"),
    ("distance", "distance(float4(a, b, c, a), float4(c))",
     "distance((float4)(a, b, c, a), (float4)(c))", "float"),
    ("normalize", "normalize(float4(a, b, c, a)).y", "normalize((float4)(a, b, c, a)).y", "float"),
    ("cross", "cross(float4(a, b, c, a), float4(c, b, a, b)).z",
     "cross((float4)(a, b, c, a), (float4)(c, b, a, b)).z", "float"),
    ("fast_length", "fast_length(float4(a, b, c, a))", "fast_length((float4)(a, b, c, a))",
     "float"),
    ("fast_normalize", "fast_normalize(float4(a, b, c, a)).x",
     "fast_normalize((float4)(a, b, c, a)).x", "float"),
    ("isnan", "int32(isnan(a))", "(int)isnan(a)", "int"),
    ("isinf", "int32(isinf(a))", "(int)isinf(a)", "int"),
    ("isfinite", "int32(isfinite(a))", "(int)isfinite(a)", "int"),
    ("signbit", "int32(signbit(a))", "(int)signbit(a)", "int"),
    ("vector_sin", "sin(float4(a, b, c, a)).w", "sin((float4)(a, b, c, a)).w", "float"),
]  # fmt: skip


def _sources() -> tuple[str, str]:
    py = [
        "import spirvjit",
        "from spirvjit.lang import *",
        "",
        "@spirvjit.kernel",
        "def calls(x: Global[float32], y: Global[int32], f: Global[float32], i: Global[int32]):",
        "    g = global_id(0)",
        "    n = global_size(0)",
        "    a, b, c = x[g], x[n + g], x[2 * n + g]",
        "    j, m, k = y[g], y[n + g], y[2 * n + g] % 8",
    ]
    cl = [
        "#pragma OPENCL FP_CONTRACT OFF",
        "kernel void calls(global const float *x, global const int *y, global float *f,",
        "                  global int *i) {",
        "    size_t g = get_global_id(0), n = get_global_size(0);",
        "    float a = x[g], b = x[n + g], c = x[2 * n + g];",
        "    int j = y[g], m = y[n + g], k = y[2 * n + g] % 8;",
    ]
    for slot, (_, py_call, c_call, kind) in enumerate(CALLS):
        out = "f" if kind == "float" else "i"
        py.append(f"    {out}[{slot} * n + g] = {py_call}")
        cl.append(f"    {out}[{slot} * n + g] = {c_call};")
    cl.append("}")
    return "\n".join(py) + "\n", "\n".join(cl) + "\n"


def test_every_listed_builtin_matches_opencl_c(tmp_path, monkeypatch):
    py_src, c_src = _sources()
    (tmp_path / "builtin_calls.py").write_text(py_src)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("builtin_calls")
    rng = np.random.default_rng(3)
    x = rng.uniform(-3, 3, 3 * N).astype(np.float32)
    x[:4] = (0.0, -0.0, 0.5, np.inf)
    x[N : N + 2] = (0.25, 2.0)
    y = rng.integers(-1000, 1000, 3 * N).astype(np.int32)
    outs = {}
    for who, kern in (("py", module.calls), ("c", build(c_src, ("-cl-std=CL3.0",)).calls)):
        f = np.zeros(len(CALLS) * N, np.float32)
        i = np.zeros(len(CALLS) * N, np.int32)
        kern(x, y, f, i, global_size=N)
        outs[who] = (f, i)
    for slot, (name, *_rest, kind) in enumerate(CALLS):
        k = 0 if kind == "float" else 1
        got = outs["py"][k][slot * N : (slot + 1) * N]
        want = outs["c"][k][slot * N : (slot + 1) * N]
        assert got.tobytes() == want.tobytes(), name
