"""Registry of every kernel the end-to-end suite runs: name -> Case(source, options, runner).

The topical tests (test_arith.py, ...) check a case's results against NumPy references; the
differential test runs every case through both SPIR-V producers and compares bit for bit;
the spirv-val test validates every case's module. A runner takes a built Program, launches
its kernels on deterministic inputs and returns every input and output array by name.

Most cases are "elementwise": many one-line kernels in one source (one compile), each
``O[i] = expr(a, b, c)`` over per-type input domains; they are described by ``Op`` rows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

CL3 = ("-cl-std=CL3.0",)
CL2 = ("-cl-std=CL2.0",)

SCALARS = {
    "bool": np.int8,
    "char": np.int8,
    "uchar": np.uint8,
    "short": np.int16,
    "ushort": np.uint16,
    "int": np.int32,
    "uint": np.uint32,
    "long": np.int64,
    "ulong": np.uint64,
    "half": np.float16,
    "float": np.float32,
    "double": np.float64,
}
INT_TYPES = ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong")
FP64 = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
FP16 = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"
# Exact float references assume a*b+c stays two roundings: forbid contraction into fma.
NO_CONTRACT = "#pragma OPENCL FP_CONTRACT OFF\n"


def parse_type(t: str) -> tuple[type, int]:
    """'int4' -> (np.int32, 4); 'float' -> (np.float32, 1)."""
    m = re.fullmatch(r"([a-z]+?)(2|3|4|8|16)?", t)
    assert m, t
    return SCALARS[m.group(1)], int(m.group(2) or 1)


def storage_lanes(n: int) -> int:
    # A 3-component vector occupies the size and alignment of a 4-component one.
    return 4 if n == 3 else n


@dataclass(frozen=True)
class Case:
    source: str
    runner: Callable
    options: tuple[str, ...] = CL3
    translator: str | None = None  # why clang-15 + llvm-spirv-15 can't build/run it, if so


CASES: dict[str, Case] = {}


def case(name: str, source: str, options=CL3, translator: str | None = None):
    """Decorator registering ``runner(program) -> dict`` under ``name``."""

    def register(runner):
        assert name not in CASES, name
        CASES[name] = Case(source, runner, tuple(options), translator)
        return runner

    return register


# --- input domains ---------------------------------------------------------------------------


def _rng(tag: str) -> np.random.Generator:
    # Seeded per kernel so inputs don't change when unrelated cases are added.
    return np.random.default_rng(sum(tag.encode()) * 7919 + len(tag))


def _int_values(dt, count: int, domain: str, rng) -> np.ndarray:
    info = np.iinfo(dt)
    lo, hi = int(info.min), int(info.max)
    if domain == "shift":
        return rng.integers(0, min(hi, 255), count, endpoint=True).astype(dt)
    if domain == "small":
        return rng.integers(max(lo, -1000), min(hi, 1000), count, endpoint=True).astype(dt)
    if domain == "i24":  # mul24/mad24 are defined only for 24-bit operands
        lo24, hi24 = (-(2**23), 2**23 - 1) if lo < 0 else (0, 2**24 - 1)
        return rng.integers(lo24, hi24, count, endpoint=True).astype(dt)
    edges = [lo, hi, 0, 1, lo + 1, hi - 1, 2, hi // 2, (hi // 2) + 1]
    if lo < 0:
        edges += [-1, -2, lo // 2]
    vals = rng.integers(lo, hi, count, endpoint=True, dtype=dt)
    vals[: min(count, len(edges))] = np.array(edges[:count], dtype=object).astype(dt)
    rng.shuffle(vals)
    if domain == "nz":  # divisors: no 0, and no -1 (INT_MIN / -1 overflows)
        vals[(vals == 0) | ((vals == -1) if lo < 0 else False)] = 7
    return vals


def _float_values(dt, count: int, domain: str, rng) -> np.ndarray:
    if domain == "pos":
        vals = 10.0 ** rng.uniform(-3, 3, count)
    elif domain == "unit":
        vals = rng.uniform(-1, 1, count)
    elif domain == "small":  # e.g. exp: keep results finite and normal
        vals = rng.uniform(-20, 20, count)
    elif domain == "i32":  # float -> int conversions: in range, with halfway cases
        vals = rng.uniform(-2e9, 2e9, count)
        vals[:16] = [
            0.5,
            1.5,
            2.5,
            -0.5,
            -1.5,
            -2.5,
            3.49,
            -3.51,
            0.0,
            -0.0,
            7,
            -7,
            1e-3,
            -1e-3,
            2147483520.0,
            -2147483648.0,
        ][: min(16, count)]
        return vals.astype(dt)
    elif domain == "sat":  # saturating conversions: in and far out of range, NaN
        vals = rng.uniform(-1e12, 1e12, count)
        vals[:10] = [np.nan, np.inf, -np.inf, 3e9, -3e9, 255.5, -128.5, 0.5, 1e30, -1e30][
            : min(10, count)
        ]
    else:  # "any": signs, magnitudes, exact halves (rounding), zeros
        vals = rng.standard_normal(count) * 10.0 ** rng.uniform(-3, 4, count)
        vals[:10] = [0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -2.5, 3.5, 1e-3, 1e4][: min(10, count)]
    return vals.astype(dt)


def values(t: str, count: int, domain: str, tag: str) -> np.ndarray:
    """Deterministic input array for OpenCL type ``t`` (shape (count,) or (count, lanes))."""
    dt, n = parse_type(t)
    rng = _rng(tag)
    flat = count * n
    if np.issubdtype(dt, np.integer):
        arr = _int_values(dt, flat, domain, rng)
    else:
        arr = _float_values(dt, flat, domain, rng)
    if n == 1:
        return arr
    arr = arr.reshape(count, n)
    if n == 3:
        arr = np.concatenate([arr, np.zeros((count, 1), dt)], axis=1)
    return np.ascontiguousarray(arr)


# --- elementwise cases -------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """One kernel ``name``: ``o = expr`` (or ``body`` setting o/o2) on inputs a, b, c."""

    name: str
    out: str
    ins: tuple[str, ...]
    expr: str = ""
    domains: tuple[str, ...] = ()
    out2: str | None = None  # second output, e.g. frexp's exponent
    body: str = ""
    count: int = 64


def _op_source(op: Op) -> str:
    params = [f"global const {t}* A{i}" for i, t in enumerate(op.ins)]
    params.append(f"global {op.out}* O")
    if op.out2:
        params.append(f"global {op.out2}* O2")
    loads = "".join(f"    {t} {'abc'[i]} = A{i}[i];\n" for i, t in enumerate(op.ins))
    decl2 = f"    {op.out2} o2;\n" if op.out2 else ""
    store2 = "    O2[i] = o2;\n" if op.out2 else ""
    body = op.body or f"o = {op.expr};"
    return (
        f"kernel void {op.name}({', '.join(params)}) {{\n"
        f"    size_t i = get_global_id(0);\n{loads}    {op.out} o;\n{decl2}"
        f"    {body}\n    O[i] = o;\n{store2}}}\n"
    )


def _trim(arr: np.ndarray, t: str) -> np.ndarray:
    # Drop the padding lane of 3-component vectors: its contents are unspecified.
    return np.ascontiguousarray(arr[:, :3]) if parse_type(t)[1] == 3 else arr


def _run_ops(ops: list[Op]):
    def runner(prog) -> dict[str, np.ndarray]:
        results = {}
        for op in ops:
            ins = []
            for i, t in enumerate(op.ins):
                dom = op.domains[i] if i < len(op.domains) else "any"
                ins.append(values(t, op.count, dom, f"{op.name}/{i}"))
            outs = []
            for t in (op.out, op.out2):
                if t is None:
                    continue
                dt, n = parse_type(t)
                shape = (op.count,) if n == 1 else (op.count, storage_lanes(n))
                outs.append(np.zeros(shape, dt))
            prog.kernel(op.name)(*ins, *outs, global_size=(op.count,))
            for i, (t, arr) in enumerate(zip(op.ins, ins, strict=True)):
                results[f"{op.name}:{'abc'[i]}"] = _trim(arr, t)
            results[f"{op.name}:o"] = _trim(outs[0], op.out)
            if op.out2:
                results[f"{op.name}:o2"] = _trim(outs[1], op.out2)
        return results

    return runner


def elementwise(name: str, ops: list[Op], header: str = "", options=CL3, translator=None):
    source = header + "\n".join(_op_source(op) for op in ops)
    CASES[name] = Case(source, _run_ops(ops), tuple(options), translator)
    return ops


# === arithmetic (test_arith.py) ================================================================

_SIGNED_WRAP = {"int": "uint", "long": "ulong"}


def _wrap(t: str, op: str) -> str:
    # Signed int/long overflow is undefined in C: do the wrapping arithmetic unsigned.
    # char/short are promoted to int, so their overflow only happens in the narrowing store.
    if t in _SIGNED_WRAP:
        u = _SIGNED_WRAP[t]
        return f"as_{t}(as_{u}(a) {op} as_{u}(b))"
    return f"({t})(a {op} b)"


ARITH_INT = elementwise(
    "arith_int",
    [
        Op(f"{name}_{t}", t, (t, t), _wrap(t, op))
        for t in INT_TYPES
        for name, op in (("add", "+"), ("sub", "-"), ("mul", "*"))
    ]
    + [
        Op(f"{name}_{t}", t, (t, t), f"a {op} b", ("any", "nz"))
        for t in INT_TYPES
        for name, op in (("div", "/"), ("rem", "%"))
    ]
    + [
        Op(
            f"bitops_{t}",
            t,
            (t, t),
            f"({t})(((a & b) ^ (a | ~b)) + 1)" if t not in _SIGNED_WRAP else "(a & b) ^ (a | ~b)",
        )
        for t in INT_TYPES
    ]
    # Vector forms of the same operations (per-lane wrap-around, division).
    + [Op(f"add_{t}", t, (t, t), "a + b") for t in ("uchar16", "ushort8", "uint4", "ulong2")]
    + [Op(f"mul_{t}", t, (t, t), "a * b") for t in ("uchar3", "ushort3", "uint3", "ulong3")]
    + [Op(f"div_{t}", t, (t, t), "a / b", ("any", "nz")) for t in ("char16", "int4", "long3")]
    + [Op(f"rem_{t}", t, (t, t), "a % b", ("any", "nz")) for t in ("short8", "uint2", "ulong4")],
)

# OpenCL masks shift counts to the width of the (promoted scalar / vector element) type.
SHIFT_TYPES = (
    "int",
    "uint",
    "long",
    "ulong",
    "char4",
    "uchar8",
    "short2",
    "ushort16",
    "int3",
    "long2",
)
SHIFTS = elementwise(
    "shifts",
    [Op(f"shl_{t}", t, (t, t), "a << b", ("any", "shift")) for t in SHIFT_TYPES]
    + [Op(f"shr_{t}", t, (t, t), "a >> b", ("any", "shift")) for t in SHIFT_TYPES],
)

INT_BUILTIN_TYPES = ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong")
INT_BUILTINS = elementwise(
    "int_builtins",
    [
        Op(f"{f}_{t}", t, (t, t), f"{f}(a, b)")
        for f in ("mul_hi", "add_sat", "sub_sat", "hadd", "rhadd", "min", "max", "rotate")
        for t in INT_BUILTIN_TYPES
    ]
    + [
        Op(f"{f}_{t}", t, (t,), f"{f}(a)")
        for f in ("clz", "ctz", "popcount")
        for t in INT_BUILTIN_TYPES
    ]
    + [Op(f"abs_{t}", "u" + t.lstrip("u"), (t,), "abs(a)") for t in INT_BUILTIN_TYPES]
    + [
        Op(f"abs_diff_{t}", "u" + t.lstrip("u"), (t, t), "abs_diff(a, b)")
        for t in INT_BUILTIN_TYPES
    ]
    + [Op(f"clamp_{t}", t, (t, t, t), "clamp(a, min(b, c), max(b, c))") for t in INT_BUILTIN_TYPES]
    + [Op(f"mad_sat_{t}", t, (t, t, t), "mad_sat(a, b, c)") for t in ("short", "int", "uint")]
    + [Op(f"mad_hi_{t}", t, (t, t, t), "mad_hi(a, b, c)") for t in ("uchar", "int", "ulong")]
    + [Op(f"mul24_{t}", t, (t, t), "mul24(a, b)", ("i24", "i24")) for t in ("int", "uint")]
    + [
        Op(f"mad24_{t}", t, (t, t, t), "mad24(a, b, c)", ("i24", "i24", "any"))
        for t in ("int", "uint")
    ]
    + [
        Op("upsample_char", "short", ("char", "uchar"), "upsample(a, b)"),
        Op("upsample_uchar", "ushort", ("uchar", "uchar"), "upsample(a, b)"),
        Op("upsample_short", "int", ("short", "ushort"), "upsample(a, b)"),
        Op("upsample_ushort", "uint", ("ushort", "ushort"), "upsample(a, b)"),
        Op("upsample_int", "long", ("int", "uint"), "upsample(a, b)"),
        Op("upsample_uint", "ulong", ("uint", "uint"), "upsample(a, b)"),
        Op("upsample_int4", "long4", ("int4", "uint4"), "upsample(a, b)"),
    ]
    # A few vector forms of the built-ins.
    + [
        Op("add_sat_char16", "char16", ("char16", "char16"), "add_sat(a, b)"),
        Op("rotate_uint4", "uint4", ("uint4", "uint4"), "rotate(a, b)"),
        Op("popcount_ulong2", "ulong2", ("ulong2",), "popcount(a)"),
        Op("clz_short8", "short8", ("short8",), "clz(a)"),
        Op("max_int3", "int3", ("int3", "int3"), "max(a, b)"),
        Op("clamp_uint8", "uint8", ("uint8", "uint8", "uint8"), "clamp(a, min(b, c), max(b, c))"),
    ],
)

FLOAT_ARITH = elementwise(
    "arith_float",
    [
        Op(f"{name}_{t}", t, (t, t), f"a {op} b")
        for t in ("float", "double", "float4", "double2", "float3", "float16", "double8")
        for name, op in (("add", "+"), ("sub", "-"), ("mul", "*"), ("div", "/"))
    ]
    + [Op(f"neg_{t}", t, (t,), "-a") for t in ("float", "double")]
    # Without contraction a*b+c is two roundings; fma() is one.
    + [Op(f"muladd_{t}", t, (t, t, t), "a * b + c") for t in ("float", "double")],
    header=FP64 + NO_CONTRACT,
)

HALF_ARITH = elementwise(
    "arith_half",
    [
        Op(
            f"{name}_half",
            "float",
            ("float", "float"),
            f"(float)((half)a {op} (half)b)",
            ("unit", "unit"),
        )
        for name, op in (("add", "+"), ("sub", "-"), ("mul", "*"), ("div", "/"))
    ]
    + [
        Op(
            "add_half4",
            "float4",
            ("float4", "float4"),
            "convert_float4(convert_half4(a) + convert_half4(b))",
            ("unit", "unit"),
        )
    ],
    header=FP16,
)


# === vectors (test_vectors.py) ================================================================

VECTORS = elementwise(
    "vectors",
    [
        # construct from scalars and smaller vectors
        Op("construct_int4", "int4", ("int4", "int4"), "(int4)(a.x, b.y, (int2)(a.z, b.w))"),
        Op("construct_float8", "float8", ("float4", "float4"), "(float8)(b, a.x, (float3)(a.y))"),
        Op("construct_splat_short16", "short16", ("short",), "(short16)(a)"),
        Op("construct_uchar3", "uchar3", ("uchar", "uchar"), "(uchar3)(a, b, (uchar)(a ^ b))"),
        # swizzles read and write
        Op("swizzle_wzyx_int4", "int4", ("int4",), "a.wzyx"),
        Op("swizzle_s_float8", "float8", ("float8",), "a.s70615243"),
        Op("swizzle_hex_uchar16", "uchar16", ("uchar16",), "a.sFEDCBA9876543210"),
        Op("swizzle_repeat_long4", "long4", ("long2",), "a.xxyx"),
        Op("swizzle_write_int4", "int4", ("int4", "int4"), body="o = a; o.zx = b.yw; o.s1 = 5;"),
        Op("swizzle_int3", "int3", ("int3",), "a.zxy"),
        Op("lohi_int8", "int8", ("int8",), "(int8)(a.hi, a.lo)"),
        Op("evenodd_short16", "short16", ("short16",), "(short16)(a.odd, a.even)"),
        Op("lohi_float3", "float4", ("float3",), "(float4)(a.lo, a.even)"),
        Op(
            "lohi_write_ulong4",
            "ulong4",
            ("ulong4", "ulong2"),
            body="o = a; o.hi = b; o.even += 1;",
        ),
        # extract / insert with a run-time index (OpVectorExtractDynamic / InsertDynamic)
        Op("extract_dyn_float4", "float", ("float4", "uint"), "a[b & 3]", ("any", "shift")),
        Op(
            "insert_dyn_int8",
            "int8",
            ("int8", "uint"),
            body="o = a; o[b & 7] = -1;",
            domains=("any", "shift"),
        ),
        # shuffle: only the low log2(2m-1)+1 bits of each mask component count
        Op("shuffle_uint4", "uint4", ("uint4", "uint4"), "shuffle(a, b)", ("any", "shift")),
        Op("shuffle_float8_to4", "float4", ("float8", "uint4"), "shuffle(a, b)", ("any", "shift")),
        Op(
            "shuffle2_char16",
            "char16",
            ("char16", "char16", "uchar16"),
            "shuffle2(a, b, c)",
            ("any", "any", "shift"),
        ),
        Op(
            "shuffle2_int4_to8",
            "int8",
            ("int4", "int4", "uint8"),
            "shuffle2(a, b, c)",
            ("any", "any", "shift"),
        ),
        # vector comparisons give -1 (true) / 0 per lane in the same-width signed type
        Op("cmp_lt_int4", "int4", ("int4", "int4"), "a < b"),
        Op("cmp_ge_uchar16", "char16", ("uchar16", "uchar16"), "a >= b"),
        Op("cmp_eq_short3", "short3", ("short3", "short3"), "a == (short3)(b.x, a.y, b.z)"),
        Op("cmp_ne_float4", "int4", ("float4", "float4"), "a != (float4)(b.x, a.y, b.z, a.w)"),
        Op("cmp_gt_double2", "long2", ("double2", "double2"), "a > b"),
        Op("cmp_le_ulong8", "long8", ("ulong8", "ulong8"), "a <= b"),
        Op("logic_and_int4", "int4", ("int4", "int4"), "(a > 0) && (b > 0)"),
        Op("logic_not_int4", "int4", ("int4",), "!a"),
        Op("scalar_cmp", "int", ("int", "int"), "(a < b) + 2 * (a == b)"),
        # select: vector lanes choose by the mask's most significant bit; scalars by != 0
        Op("select_int4", "int4", ("int4", "int4", "int4"), "select(a, b, c)"),
        Op("select_float4", "float4", ("float4", "float4", "uint4"), "select(a, b, c)"),
        Op("select_cmp_double2", "double2", ("double2", "double2"), "select(a, b, a < b)"),
        Op("select_scalar", "int", ("int", "int", "int"), "select(a, b, c)"),
        Op("ternary_vec_int4", "int4", ("int4", "int4"), "a > b ? a : b"),
        # any/all test the most significant bit of each lane
        Op("any_int4", "int", ("int4",), "any(a)", ("small",)),
        Op("all_int4", "int", ("int4",), "all(a)", ("small",)),
        Op("any_char16", "int", ("char16",), "any(a)", ("shift",)),
        Op("all_long2", "int", ("long2",), "all(a)", ("small",)),
        Op("anyall_cmp_float8", "int", ("float8", "float8"), "any(a < b) + 2 * all(a < b)"),
    ],
    header=FP64,
)


# === conversions (test_conversions.py) ========================================================

ROUNDINGS = ("", "_rte", "_rtz", "_rtp", "_rtn")
CONV_INT = elementwise(
    "conv_int",
    [
        Op(f"convert_{d}{sat}_from_{s}", d, (s,), f"convert_{d}{sat}(a)")
        for s in INT_TYPES
        for d in INT_TYPES
        for sat in ("", "_sat")
    ]
    + [
        Op("convert_int4_sat_from_long4", "int4", ("long4",), "convert_int4_sat(a)"),
        Op("convert_uchar8_sat_from_short8", "uchar8", ("short8",), "convert_uchar8_sat(a)"),
        Op("convert_char3_from_uint3", "char3", ("uint3",), "convert_char3(a)"),
    ],
)

CONV_FLOAT_TO_INT = elementwise(
    "conv_float_to_int",
    # Without _sat, out-of-range results are undefined: only in-range inputs ("i32").
    [
        Op(f"convert_{d}{r}_from_{s}", d, (s,), f"convert_{d}{r}(a)", ("i32",))
        for s in ("float", "double")
        for d in ("int", "long")
        for r in ROUNDINGS
    ]
    + [
        Op(f"convert_{d}_sat{r}_from_{s}", d, (s,), f"convert_{d}_sat{r}(a)", ("sat",))
        for s in ("float", "double")
        for d in INT_TYPES
        for r in ROUNDINGS
    ]
    + [
        Op("convert_int4_rte_from_float4", "int4", ("float4",), "convert_int4_rte(a)", ("i32",)),
        Op(
            "convert_short8_sat_rtn_from_double8",
            "short8",
            ("double8",),
            "convert_short8_sat_rtn(a)",
            ("sat",),
        ),
        # implicit conversion and casts truncate toward zero
        Op(
            "implicit_int_from_float", "int", ("float",), body="int t = a; o = t;", domains=("i32",)
        ),
        Op("cast_long_from_double", "long", ("double",), "(long)a", ("i32",)),
    ],
    header=FP64,
)

CONV_INT_TO_FLOAT = elementwise(
    "conv_int_to_float",
    [
        Op(f"convert_float{r}_from_{s}", "float", (s,), f"convert_float{r}(a)")
        for s in ("int", "uint", "long", "ulong", "short")
        for r in ROUNDINGS
    ]
    + [
        Op(f"convert_double{r}_from_{s}", "double", (s,), f"convert_double{r}(a)")
        for s in ("long", "ulong", "int")
        for r in ROUNDINGS
    ]
    + [
        Op("convert_float4_rtz_from_uint4", "float4", ("uint4",), "convert_float4_rtz(a)"),
        Op("implicit_float_from_int", "float", ("int",), body="float t = a; o = t;"),
        Op("cast_double_from_ulong", "double", ("ulong",), "(double)a"),
    ],
    header=FP64,
)

CONV_FLOAT_FLOAT = elementwise(
    "conv_float_float",
    [
        Op(f"convert_float{r}_from_double", "float", ("double",), f"convert_float{r}(a)")
        for r in ROUNDINGS
    ]
    + [
        Op("convert_double_from_float", "double", ("float",), "convert_double(a)"),
        Op("convert_float2_rtp_from_double2", "float2", ("double2",), "convert_float2_rtp(a)"),
        Op("implicit_float_from_double", "float", ("double",), body="float t = a; o = t;"),
    ],
    header=FP64,
)

BITCASTS = elementwise(
    "bitcasts",
    [
        Op("as_float_from_int", "float", ("int",), "as_float(a)"),
        Op("as_int_from_float", "int", ("float",), "as_int(a)"),
        Op("as_uchar4_from_uint", "uchar4", ("uint",), "as_uchar4(a)"),
        Op("as_ulong_from_double", "ulong", ("double",), "as_ulong(a)"),
        Op("as_char16_from_long2", "char16", ("long2",), "as_char16(a)"),
        Op("as_double_from_uint2", "double", ("uint2",), "as_double(a)"),
        Op("as_short2_from_float", "short2", ("float",), "as_short2(a)"),
        Op("as_int4_from_float4", "int4", ("float4",), "as_int4(a)"),
        # implicit integer conversions: sign/zero extension and truncation
        Op("sext_char_to_long", "long", ("char",), body="long t = a; o = t;"),
        Op("zext_uchar_to_int", "int", ("uchar",), body="int t = a; o = t;"),
        Op("trunc_long_to_short", "short", ("long",), "(short)a"),
        Op("int_to_uint_implicit", "uint", ("int",), body="uint t = a; o = t;"),
    ],
    header=FP64,
)


# === control flow (test_control_flow.py) =======================================================

CONTROL_FLOW_SRC = r"""
__attribute__((noinline)) int collatz_steps(int n) {
    int steps = 0;
    while (n != 1) { n = (n & 1) ? 3 * n + 1 : n / 2; steps++; }
    return steps;
}
__attribute__((noinline)) void minmax(global const int* a, int n, int* lo, int* hi) {
    *lo = a[0]; *hi = a[0];
    for (int i = 1; i < n; i++) { if (a[i] < *lo) *lo = a[i]; else if (a[i] > *hi) *hi = a[i]; }
}
kernel void branches(global const int* a, global int* o) {
    size_t i = get_global_id(0);
    int x = a[i];
    if (x < -100) o[i] = 1; else if (x < 0) o[i] = 2; else if (x == 0) o[i] = 3; else o[i] = 4;
}
kernel void loops(global const int* a, global int* o) {
    size_t i = get_global_id(0);
    int n = a[i], s = 0, k = 0;
    for (int j = 0; j < n; j++) { if (j % 3 == 0) continue; if (j > 40) break; s += j; }
    while (k * k < n) k++;
    int d = 0;
    do { d++; n /= 2; } while (n > 0);
    o[3 * i] = s; o[3 * i + 1] = k; o[3 * i + 2] = d;
}
kernel void switches(global const int* a, global int* o) {
    size_t i = get_global_id(0);
    int r = 0;
    switch (a[i]) {
    case 0: r += 1;          /* fallthrough */
    case 1: r += 10; break;
    case 2: case 3: r = 100; break;
    case 7: r = 7;           /* fallthrough */
    default: r += 1000;
    }
    o[i] = r;
}
kernel void nested(global const int* a, global int* o) {
    size_t i = get_global_id(0);
    int n = a[i], s = 0;
    for (int x = 0; x < n; x++)
        for (int y = 0; y < n; y++) {
            if (y > x) break;
            if ((x + y) % 2) continue;
            s += x * y;
        }
    o[i] = s;
}
kernel void early_return(global const int* a, global int* o) {
    size_t i = get_global_id(0);
    o[i] = -1;
    if (a[i] < 0) return;
    o[i] = a[i] * 2;
}
kernel void helpers(global const int* a, int n, global int* o) {
    size_t i = get_global_id(0);
    int lo, hi;
    minmax(a, n, &lo, &hi);
    o[3 * i] = collatz_steps(i + 1); o[3 * i + 1] = lo; o[3 * i + 2] = hi;
}
"""


@case("control_flow", CONTROL_FLOW_SRC)
def _control_flow(prog):
    n = 40
    small = np.arange(-5, n - 5, dtype=np.int32)
    mixed = values("int", n, "small", "cf")
    mixed[:4] = [-200, -1, 0, 5]
    sw = np.arange(-2, n - 2, dtype=np.int32) % 10
    out = {"small": small, "mixed": mixed, "sw": sw}
    for k, inp, width in (
        ("branches", mixed, 1),
        ("loops", np.abs(small) * 3, 3),
        ("switches", sw, 1),
        ("nested", np.abs(small), 1),
        ("early_return", mixed, 1),
    ):
        o = np.zeros(n * width, np.int32)
        prog.kernel(k)(np.ascontiguousarray(inp), o, global_size=(n,))
        out[k] = o
    o = np.zeros(3 * n, np.int32)
    prog.kernel("helpers")(mixed, np.int32(n), o, global_size=(n,))
    out["helpers"] = o
    return out


# === memory (test_memory.py) =================================================================

MEMORY_SRC = r"""
typedef struct { char c; int i; double d; short2 s; float3 f; } Rec;  /* C layout, padded */
typedef struct { int a; float b; long c; } Small;

constant int primes[8] = {2, 3, 5, 7, 11, 13, 17, 19};
constant float4 table[2] = {(float4)(1, 2, 3, 4), (float4)(-1, -2, -3, -4)};
global int counter = 42;
global float gtab[4] = {0.5f, 1.5f, 2.5f, 3.5f};

kernel void private_array(global const int* a, global int* o) {
    size_t i = get_global_id(0);
    int p[16];
    for (int j = 0; j < 16; j++) p[j] = a[i] * j;
    o[i] = p[a[i] & 15] + p[(a[i] >> 4) & 15];
}
kernel void constant_tables(global const int* a, global float4* o) {
    size_t i = get_global_id(0);
    o[i] = table[a[i] & 1] * (float)primes[a[i] & 7];
}
kernel void program_globals(global int* o) {
    /* single work-item: read-modify-write of program-scope globals */
    o[0] = counter; counter += 5; o[1] = counter;
    gtab[2] *= 4.0f; o[2] = (int)(gtab[2] + gtab[3]);
}
kernel void struct_array(global Rec* r, global double* o) {
    size_t i = get_global_id(0);
    Rec x = r[i];
    o[i] = x.c + x.i + x.d + x.s.y + x.f.z;
    r[i].i = -r[i].i; r[i].f = x.f.zyx; r[i].c += 1;
}
kernel void struct_by_value(Small s, global long* o) {
    o[get_global_id(0)] = s.a + (long)s.b + s.c * (long)get_global_id(0);
}
kernel void struct_copy(global const Rec* src, global Rec* dst) {
    size_t i = get_global_id(0);
    Rec tmp = src[i];       /* whole-struct copies (OpCopyMemory / memcpy) */
    dst[get_global_size(0) - 1 - i] = tmp;
}
kernel void pointer_arith(global int* a, global int* o) {
    size_t i = get_global_id(0);
    global int* p = a + 4 * i;
    global int* end = p + 4;
    int s = 0;
    for (; p < end; p++) s += *p;
    o[i] = s + (int)(end - a);
}
"""


def _rec_dtype():
    # Matches the C layout: char@0, int@4, double@8, short2@16, float3@32 (16-aligned); 48 bytes.
    return np.dtype(
        {
            "names": ["c", "i", "d", "s", "f"],
            "formats": [np.int8, np.int32, np.float64, (np.int16, 2), (np.float32, 4)],
            "offsets": [0, 4, 8, 16, 32],
            "itemsize": 48,
        }
    )


SMALL_DTYPE = np.dtype(
    {
        "names": ["a", "b", "c"],
        "formats": [np.int32, np.float32, np.int64],
        "offsets": [0, 4, 8],
        "itemsize": 16,
    }
)


def _fields(out, prefix, recs):
    # Field by field: padding bytes and float3's fourth lane have unspecified contents.
    for name in recs.dtype.names:
        col = recs[name]
        out[f"{prefix}.{name}"] = np.ascontiguousarray(col[:, :3] if name == "f" else col)


@case("memory", MEMORY_SRC)
def _memory(prog):
    n = 16
    rng = _rng("memory")
    out = {}
    a = rng.integers(0, 1000, n).astype(np.int32)
    out["a"] = a
    o = np.zeros(n, np.int32)
    prog.kernel("private_array")(a, o, global_size=(n,))
    out["private_array"] = o
    o4 = np.zeros((n, 4), np.float32)
    prog.kernel("constant_tables")(a, o4, global_size=(n,))
    out["constant_tables"] = o4
    o = np.zeros(3, np.int32)
    prog.kernel("program_globals")(o, global_size=(1,))
    out["program_globals"] = o
    recs = np.zeros(n, _rec_dtype())
    recs["c"] = np.arange(n) - 3
    recs["i"] = rng.integers(-1000, 1000, n)
    recs["d"] = rng.standard_normal(n)
    recs["s"] = rng.integers(-100, 100, (n, 2))
    recs["f"] = rng.integers(-50, 50, (n, 4)).astype(np.float32)
    recs["f"][:, 3] = 0
    _fields(out, "recs_in", recs)
    od = np.zeros(n, np.float64)
    prog.kernel("struct_array")(recs, od, global_size=(n,))
    out["struct_array"] = od
    _fields(out, "recs_out", recs)
    small = np.zeros((), SMALL_DTYPE)[()]
    small["a"], small["b"], small["c"] = -7, 2.75, 1 << 40
    ol = np.zeros(n, np.int64)
    prog.kernel("struct_by_value")(small, ol, global_size=(n,))
    out["struct_by_value"] = ol
    ol2 = np.zeros(n, np.int64)
    prog.kernel("struct_by_value")(small.tobytes(), ol2, global_size=(n,))
    out["struct_by_value_bytes"] = ol2
    dst = np.zeros(n, _rec_dtype())
    prog.kernel("struct_copy")(recs, dst, global_size=(n,))
    _fields(out, "struct_copy", dst)
    big = rng.integers(-1000, 1000, 4 * n).astype(np.int32)
    out["pa_in"] = big.copy()
    o = np.zeros(n, np.int32)
    prog.kernel("pointer_arith")(big, o, global_size=(n,))
    out["pointer_arith"] = o
    return out


GENERIC_SRC = r"""
int sum3(const int* p) { return p[0] + p[1] + p[2]; }   /* generic address space */
kernel void generic_ptr(global const int* a, global int* o) {
    size_t i = get_global_id(0);
    int priv[3] = {(int)i, 2 * (int)i, 3};
    o[2 * i] = sum3(a + 3 * i);
    o[2 * i + 1] = sum3(priv);
}
kernel void addrspace_cast(global int* a, global int* o) {
    size_t i = get_global_id(0);
    int priv = 7;
    int* g = a + i;
    int* p = &priv;
    o[2 * i] = (to_global(g) != 0) + 2 * (to_private(g) == 0) + 4 * (to_private(p) != 0)
             + 8 * (to_global(p) == 0);
    *to_global(g) += 1;
    o[2 * i + 1] = *to_private(p);
}
"""


@case("generic_address_space", GENERIC_SRC)
def _generic(prog):
    n = 16
    out = {}
    g = _rng("generic").integers(-1000, 1000, 3 * n).astype(np.int32)
    out["gp_in"] = g
    o = np.zeros(2 * n, np.int32)
    prog.kernel("generic_ptr")(g, o, global_size=(n,))
    out["generic_ptr"] = o
    ac = np.arange(n, dtype=np.int32)
    o = np.zeros(2 * n, np.int32)
    prog.kernel("addrspace_cast")(ac, o, global_size=(n,))
    out["addrspace_cast"] = o
    out["addrspace_cast_a"] = ac
    return out


VLOAD_SRC = (
    FP64
    + r"""
kernel void vload_store(global const int* a, global int* o, global const float* f,
                        global float* fo) {
    size_t i = get_global_id(0);
    /* offsets are in units of the vector size n; the pointer only needs element alignment */
    vstore2(vload2(i, a + 1) + 1, i, o);
    vstore3(vload3(i, a + 2) * 2, i, o + 2 * 64);
    vstore4(vload4(i, a) - 3, i, o + 5 * 64);
    vstore8(vload8(i, a + 3).s76543210, i, o + 9 * 64);
    vstore16(vload16(i, a + 1) ^ 0x55, i, o + 17 * 64);
    vstore3(vload3(i, f + 1) * 0.5f, i, fo);
}
"""
)


@case("vload_vstore", VLOAD_SRC)
def _vload_vstore(prog):
    n = 64
    rng = _rng("vload")
    a = rng.integers(-(2**31), 2**31 - 1, 16 * n + 8, endpoint=True).astype(np.int32)
    f = rng.standard_normal(3 * n + 4).astype(np.float32)
    o = np.zeros(33 * n, np.int32)
    fo = np.zeros(3 * n, np.float32)
    prog.kernel("vload_store")(a, o, f, fo, global_size=(n,))
    return {"a": a, "o": o, "f": f, "fo": fo}


HALF_MEM_SRC = (
    FP64
    + r"""
kernel void vload_half_k(global const half* h, global float* o) {
    size_t i = get_global_id(0);
    o[i] = vload_half(i, h);
    vstore4(vload_half4(i, h), i, o + 64);
    vstore3(vload_half3(i, h + 1), i, o + 5 * 64);
    vstore4(vloada_half4(i, h), i, o + 8 * 64);  /* aligned variant */
}
kernel void vstore_half_k(global const float* f, global const double* d, global half* h) {
    size_t i = get_global_id(0);
    vstore_half(f[i], i, h);
    vstore_half_rte(f[i], i, h + 64);
    vstore_half_rtz(f[i], i, h + 2 * 64);
    vstore_half_rtp(f[i], i, h + 3 * 64);
    vstore_half_rtn(f[i], i, h + 4 * 64);
    vstore_half_rtz(d[i], i, h + 5 * 64);
    vstore_half4_rtp(vload4(i, f), i, h + 6 * 64);
    vstorea_half2_rtn(vload2(i, f), i, h + 10 * 64);
}
"""
)


@case("half_loads_stores", HALF_MEM_SRC)
def _half_mem(prog):
    n = 64
    rng = _rng("half")
    # Half inputs: finite halves of both signs incl. subnormals and zeros.
    h = rng.standard_normal(4 * n + 4) * 10.0 ** rng.uniform(-6, 4, 4 * n + 4)
    h = h.astype(np.float16)
    h[:4] = [0.0, -0.0, 6e-8, 65504]
    ho = np.zeros(12 * n, np.float32)
    prog.kernel("vload_half_k")(h, ho, global_size=(n,))
    # Store inputs: exercise rounding (not representable in half), overflow and subnormals.
    fs = (rng.standard_normal(4 * n) * 10.0 ** rng.uniform(-7, 5.5, 4 * n)).astype(np.float32)
    fs[:6] = [65519.0, 65520.0, -70000.0, 1e-8, -3e-8, 1.0 + 2.0**-11]
    ds = rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 4, n)
    hs = np.zeros(12 * n, np.float16)
    prog.kernel("vstore_half_k")(fs, ds, hs, global_size=(n,))
    return {"h": h, "ho": ho, "fs": fs, "ds": ds, "hs": hs}


# === NDRange and work-item built-ins (test_ndrange.py) =========================================

NDRANGE_SRC = r"""
#define F 24
kernel void ids(global ulong* o) {
    size_t x = get_global_id(0) - get_global_offset(0);
    size_t y = get_global_id(1) - get_global_offset(1);
    size_t z = get_global_id(2) - get_global_offset(2);
    global ulong* p = o + F * (x + get_global_size(0) * (y + get_global_size(1) * z));
    p[0] = get_work_dim();
    for (uint d = 0; d < 3; d++) {
        p[1 + d] = get_global_size(d);
        p[4 + d] = get_global_id(d);
        p[7 + d] = get_local_size(d);
        p[10 + d] = get_enqueued_local_size(d);
        p[13 + d] = get_local_id(d);
        p[16 + d] = get_num_groups(d);
        p[19 + d] = get_group_id(d);
    }
    p[22] = get_global_linear_id();
    p[23] = get_local_linear_id() + (get_global_offset(0) + 10 * get_global_offset(1)
                                     + 100 * get_global_offset(2)) * 1000000;
}
"""

# (global, local or None, offset or None): uniform and non-uniform last groups, 1-3 dims.
NDRANGE_SHAPES = [
    ((13,), (4,), None),
    ((16,), (16,), (5,)),
    ((7, 5), (3, 2), None),
    ((6, 4), (6, 4), (1, 2)),
    ((5, 3, 4), (2, 3, 3), (0, 1, 7)),
    ((1, 1, 1), (1, 1, 1), None),
    ((37,), None, None),
    ((9, 7), None, (3, 0)),
    ((4, 3, 5), None, None),
]


@case("ndrange", NDRANGE_SRC)
def _ndrange(prog):
    out = {}
    for k, (g, loc, off) in enumerate(NDRANGE_SHAPES):
        o = np.full(int(np.prod(g)) * 24, 0xDEAD, np.uint64)
        prog.kernel("ids")(o, global_size=g, local_size=loc, global_offset=off)
        if loc is None:
            # The local size is the runtime's choice: keep only what any choice determines.
            o = o.reshape(-1, 24)[:, [0, 1, 2, 3, 4, 5, 6]].copy()
        out[f"shape{k}"] = o
    return out


# === OpenCL.std math / common / geometric / relational (test_math.py, test_builtins.py) =========

MATH_UNARY = {  # name -> input domain
    "sqrt": "pos",
    "rsqrt": "pos",
    "sin": "small",
    "cos": "small",
    "tan": "unit",
    "exp": "small",
    "exp2": "small",
    "log": "pos",
    "log2": "pos",
    "fabs": "any",
    "floor": "any",
    "ceil": "any",
    "round": "any",
    "rint": "any",
    "trunc": "any",
    "cbrt": "any",
    "erf": "unit",
    "tgamma": "pos",
    "lgamma": "pos",
    "logb": "pos",
    "radians": "any",
    "degrees": "any",
    "sign": "any",
}
MATH_BINARY = {
    "pow": ("pos", "unit"),
    "fmin": ("any", "any"),
    "fmax": ("any", "any"),
    "fmod": ("any", "pos"),
    "remainder": ("any", "pos"),
    "copysign": ("any", "any"),
    "hypot": ("any", "any"),
    "atan2": ("any", "any"),
    "nextafter": ("any", "any"),
    "step": ("any", "any"),
}
MATH = elementwise(
    "math",
    [
        Op(f"{f}_{t}", t, (t,), f"{f}(a)", (d,))
        for f, d in MATH_UNARY.items()
        for t in ("float", "double")
    ]
    + [
        Op(f"{f}_{t}", t, (t, t), f"{f}(a, b)", d)
        for f, d in MATH_BINARY.items()
        for t in ("float", "double")
    ]
    + [Op(f"fma_{t}", t, (t, t, t), "fma(a, b, c)") for t in ("float", "double")]
    + [
        Op(f"pown_{t}", t, (t, "int"), "pown(a, b % 9)", ("unit", "small"))
        for t in ("float", "double")
    ]
    + [
        Op(f"ldexp_{t}", t, (t, "int"), "ldexp(a, b % 50)", ("any", "small"))
        for t in ("float", "double")
    ]
    + [Op(f"ilogb_{t}", "int", (t,), "ilogb(a)", ("pos",)) for t in ("float", "double")]
    + [
        Op(f"frexp_{t}", t, (t,), body="int e; o = frexp(a, &e); o2 = e;", out2="int")
        for t in ("float", "double")
    ]
    + [
        Op(f"modf_{t}", t, (t,), body=f"{t} ip; o = modf(a, &ip); o2 = ip;", out2=t)
        for t in ("float", "double")
    ]
    + [
        Op(f"fract_{t}", t, (t,), body=f"{t} fl; o = fract(a, &fl); o2 = fl;", out2=t)
        for t in ("float", "double")
    ]
    + [
        Op(
            f"remquo_{t}",
            t,
            (t, t),
            body="int q; o = remquo(a, b, &q); o2 = q;",
            out2="int",
            domains=("any", "pos"),
        )
        for t in ("float", "double")
    ]
    + [
        Op("sqrt_float4", "float4", ("float4",), "sqrt(a)", ("pos",)),
        Op("nan_float", "float", ("uint",), "nan(a & 0x3fffffu)", ("small",)),
    ],
    header=FP64,
)

BUILTINS = elementwise(
    "common_geometric_relational",
    [Op(f"clamp_{t}", t, (t, t), "clamp(a, -fabs(b), fabs(b))") for t in ("float", "double4")]
    + [Op(f"mix_{t}", t, (t, t, t), "mix(a, b, c)", ("any", "any", "unit")) for t in ("float",)]
    + [
        Op("smoothstep_float", "float", ("float",), "smoothstep(-1.0f, 2.0f, a)", ("unit",)),
        Op("min_max_float4", "float4", ("float4", "float4"), "min(a, b) * 2 + max(a, b)"),
        Op("dot_float4", "float", ("float4", "float4"), "dot(a, b)", ("unit", "unit")),
        Op("dot_double3", "double", ("double3", "double3"), "dot(a, b)", ("unit", "unit")),
        Op("cross_float3", "float3", ("float3", "float3"), "cross(a, b)", ("unit", "unit")),
        Op("length_float4", "float", ("float4",), "length(a)", ("unit",)),
        Op("distance_float2", "float", ("float2", "float2"), "distance(a, b)", ("unit", "unit")),
        Op("normalize_float3", "float3", ("float3",), "normalize(a)", ("unit",)),
        Op("fast_length_float4", "float", ("float4",), "fast_length(a)", ("unit",)),
        Op("fast_normalize_float2", "float2", ("float2",), "fast_normalize(a)", ("unit",)),
        Op(
            "isequal_float4",
            "int4",
            ("float4", "float4"),
            "isequal(a, (float4)(a.x, b.y, a.z, b.w))",
            ("sat", "sat"),
        ),
        Op("isnan_float4", "int4", ("float4",), "isnan(a)", ("sat",)),
        Op("isinf_double", "int", ("double",), "isinf(a)", ("sat",)),
        Op("isfinite_float", "int", ("float",), "isfinite(a)", ("sat",)),
        Op("signbit_float4", "int4", ("float4",), "signbit(a)"),
        Op("bitselect_uint4", "uint4", ("uint4", "uint4", "uint4"), "bitselect(a, b, c)"),
        Op("bitselect_float", "float", ("float", "float", "uint"), "bitselect(a, b, as_float(c))"),
    ],
    header=FP64 + NO_CONTRACT,
)
