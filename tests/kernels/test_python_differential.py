"""Differential test of the Python kernel language against OpenCL C: random expressions
(fixed seed) over int32, uint32, int64 and float32 are written once as a Python kernel and
once as OpenCL C, run on the same inputs, and compared bit for bit. The two languages are
meant to agree on fixed-width arithmetic (C's wrap-around, rounding toward zero, masked
shift counts, usual arithmetic conversions; C with -fwrapv, as signed overflow wraps in
Python kernels), so any difference is a lowering bug.
"""

from __future__ import annotations

import importlib
import random

import numpy as np
import pytest
from harness import build

TYPES = {
    # name: (Python annotation, OpenCL C type, NumPy dtype, shift mask)
    "int32": ("int32", "int", np.int32, 31),
    "uint32": ("uint32", "uint", np.uint32, 31),
    "int64": ("int64", "long", np.int64, 63),
    "float32": ("float32", "float", np.float32, None),
    # a: int32, b: uint32, c: int64 mixed in one expression (C's usual conversions)
    "mixed": ("int64", "long", np.int64, 31),
    "float16": ("float16", "half", np.float16, None),
    # float4 values, swizzles, constructors, select, broadcast scalars
    "float4": ("float4", "float4", np.float32, None),
}
SWIZZLES = ("", ".wzyx", ".xxyy", ".s3210", ".yzwx")
EXPRESSIONS = 40
N = 256
# Signed overflow wraps in Python kernels; in C it is undefined, and clang uses that
# ((a + 64) < 61 becomes a < -3): -fwrapv gives C the same wrap-around.
OPTIONS = ("-cl-std=CL3.0", "-fwrapv")


def _expr(rng: random.Random, depth: int, tname: str) -> tuple[str, str]:
    """(Python, C) spellings of one random expression over a, b, c. Integer literals are
    written with their type: a bare literal takes the other operand's type in Python
    kernels but stays an int in C, which differs for ``73 >> n`` (documented)."""
    ann, ctype, _, mask = TYPES[tname]
    is_float = tname in ("float16", "float32", "float4")
    if depth == 0 or rng.random() < 0.25:
        leaf = rng.choice(["a", "b", "c", "lit"])
        if leaf != "lit":
            if tname == "float4":
                leaf += rng.choice(SWIZZLES)
            return leaf, leaf
        if tname == "float4":
            v = rng.choice(["0.5", "3.0", "-1.25"])
            if rng.random() < 0.5:  # a scalar meeting a vector is broadcast
                return f"float32({v})", v + "f"
            return f"float4({v})", f"((float4)({v}f))"
        if is_float:  # typed too: Python folds literal arithmetic in double precision
            v = rng.choice(["0.5", "3.0", "-1.25", "1e-3"])
            if tname == "float16":
                return f"float16({v})", f"((half){v}f)"
            return f"float32({v})", v + "f"
        v = str(rng.randint(0, 100))
        if tname == "mixed":
            return f"int32({v})", f"((int){v})"
        return f"{ann}({v})", f"(({ctype}){v})"
    x_py, x_c = _expr(rng, depth - 1, tname)
    y_py, y_c = _expr(rng, depth - 1, tname)
    ops = ["+", "-", "*", "select"] + (["/", "fmin", "sqrt"] if is_float else [])
    ops += [] if is_float else ["&", "|", "^", "<<", ">>", "//", "%"]
    op = rng.choice(ops)
    if op in "+-*&|^":
        return f"({x_py} {op} {y_py})", f"({x_c} {op} {y_c})"
    if op in ("<<", ">>"):
        return f"({x_py} {op} ({y_py} & {mask}))", f"({x_c} {op} ({y_c} & {mask}))"
    if op in ("//", "%"):  # a divisor in 1..16: no division by zero, no INT_MIN / -1
        cop = "/" if op == "//" else "%"
        return f"({x_py} {op} (({y_py} & 15) + 1))", f"({x_c} {cop} (({y_c} & 15) + 1))"
    if op == "/":
        return f"({x_py} / {y_py})", f"({x_c} / {y_c})"
    if op == "fmin":
        return f"fmin({x_py}, {y_py})", f"fmin({x_c}, {y_c})"
    if op == "sqrt":
        return f"sqrt(fabs({x_py}))", f"sqrt(fabs({x_c}))"
    if tname == "float4":
        if rng.random() < 0.5:
            # float4(x) first: x may be a scalar, which has no lanes to select
            py = f"float4(float4({x_py}).xy, float4({y_py}).zw)"
            return py, f"((float4)(((float4)({x_c})).xy, ((float4)({y_c})).zw))"
        return f"select({x_py} < {y_py}, {x_py}, {y_py})", f"select({y_c}, {x_c}, {x_c} < {y_c})"
    return f"({x_py} if {x_py} < {y_py} else {y_py})", f"({x_c} < {y_c} ? {x_c} : {y_c})"


def _sources(tname: str, seed: int) -> tuple[str, str]:
    ann, ctype, _, _ = TYPES[tname]
    rng = random.Random(seed)
    py_lines, c_lines = [], []
    for k in range(EXPRESSIONS):
        e_py, e_c = _expr(rng, 3, tname)
        py_lines.append(f"    out[{k} * n + i] = {ann}({e_py})")
        c_lines.append(f"    out[{k} * n + i] = ({ctype})({e_c});")
    loads_py = "    a = x[i]\n    b = x[n + i]\n    c = x[2 * n + i]\n"
    loads_c = f"    {ctype} a = x[i], b = x[n + i], c = x[2 * n + i];\n"
    if tname == "mixed":
        loads_py = "    a = int32(x[i])\n    b = uint32(x[n + i])\n    c = x[2 * n + i]\n"
        loads_c = "    int a = (int)x[i]; uint b = (uint)x[n + i]; long c = x[2 * n + i];\n"
    py = (
        "import spirvjit\n"
        "from spirvjit.lang import Global, global_id, global_size, fmin, sqrt, fabs, "
        "int32, uint32, int64, float16, float32, float4, select\n\n"
        "@spirvjit.kernel\n"
        f"def diff(x: Global[{ann}], out: Global[{ann}]):\n"
        "    i = global_id(0)\n    n = global_size(0)\n" + loads_py + "\n".join(py_lines) + "\n"
    )
    c = (
        "#pragma OPENCL FP_CONTRACT OFF\n#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"
        f"kernel void diff(global const {ctype} *x, global {ctype} *out) {{\n"
        "    size_t i = get_global_id(0), n = get_global_size(0);\n"
        + loads_c
        + "\n".join(c_lines)
        + "\n}\n"
    )
    return py, c


def _inputs(tname: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    dtype = TYPES[tname][2]
    if tname == "mixed":  # each variable's own range
        x = np.concatenate(
            [
                rng.integers(-(2**31), 2**31, N),
                rng.integers(0, 2**32, N),
                rng.integers(-(2**63), 2**63 - 1, N),
            ]
        ).astype(dtype)
        x[:3] = (0, -1, 2**31 - 1)
        return x
    if tname == "float4":
        return (rng.standard_normal((3 * N, 4)) * 4).astype(dtype)
    if tname in ("float16", "float32"):
        x = rng.standard_normal(3 * N).astype(dtype) * 4
        x[:6] = (0.0, -0.0, np.inf, -1.0, 1e-30, 3.0)
        return x
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, 3 * N, dtype=dtype, endpoint=True)
    x[:6] = (0, 1, info.max, info.min, 7, 100)
    return x


@pytest.mark.parametrize("tname", sorted(TYPES))
def test_random_expressions_match_opencl_c(tname, tmp_path, monkeypatch):
    py_src, c_src = _sources(tname, seed=sorted(TYPES).index(tname) + 1)
    module_name = f"diff_{tname}"
    (tmp_path / f"{module_name}.py").write_text(py_src)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module(module_name)
    x = _inputs(tname)
    out_py = np.zeros((EXPRESSIONS * N, *x.shape[1:]), x.dtype)
    out_c = np.zeros_like(out_py)
    module.diff(x, out_py, global_size=N)
    build(c_src, OPTIONS).diff(x, out_c, global_size=N)
    bad = np.flatnonzero(out_py.view(np.uint8) != out_c.view(np.uint8))
    if bad.size:
        k = bad[0] // (out_py[0].nbytes) // N
        line = py_src.splitlines()[10 + k]
        raise AssertionError(f"expression {k} differs: {line.strip()}\n{c_src.splitlines()[5 + k]}")
