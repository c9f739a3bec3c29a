"""The names Python kernels use: types, address spaces, work-item functions, barriers,
arrays in local and private memory, atomics, math and vector helpers.

Everything here is meaningful only inside a ``@spirvjit.kernel`` or ``@spirvjit.func``
function, where the compiler recognises it; called on the host, the functions raise
``TypeError`` (the scalar types make NumPy scalars, which is handy for arguments).
See docs/python-kernels.md for the language reference.
"""

from __future__ import annotations

from .frontend.python import types as _t

# --- types ------------------------------------------------------------------------------
bool_ = _t.BOOL
int8, uint8, int16, uint16 = _t.INT8, _t.UINT8, _t.INT16, _t.UINT16
int32, uint32, int64, uint64 = _t.INT32, _t.UINT32, _t.INT64, _t.UINT64
float16, float32, float64 = _t.FLOAT16, _t.FLOAT32, _t.FLOAT64
half = float16

# Vectors by OpenCL name (float4, uchar16, ...), except where OpenCL's name is one of the
# scalar names above (int8 is 8 ints in OpenCL C, an 8-bit int here): those and every
# other vector are also spelled <scalar>x<lanes> (int32x8, float32x4).
for _name, _vec in _t.VECTORS.items():
    globals().setdefault(_name, _vec)
    globals()[f"{_vec.elem.name}x{_vec.lanes}"] = _vec

Global = _t.AddressSpace("Global", _t.GLOBAL)
Local = _t.AddressSpace("Local", _t.LOCAL)
ConstantMem = _t.AddressSpace("ConstantMem", _t.CONSTANT)
Constant = _t.ConstantMarker()

# barrier() flags, as OpenCL C's CLK_*_MEM_FENCE.
LOCAL_MEM_FENCE = 1
GLOBAL_MEM_FENCE = 2


class Intrinsic:
    """A function the kernel compiler lowers itself (``global_id``, ``sin``, ...)."""

    def __init__(self, name: str, doc: str = ""):
        self.name = name
        self.__doc__ = doc
        self.__name__ = name

    def __call__(self, *args, **kwargs):
        raise TypeError(f"spirvjit.lang.{self.name} can only be called inside a kernel")

    def __repr__(self) -> str:
        return f"<spirvjit.lang.{self.name}>"


def _intrinsics(names: str, doc: str = "") -> None:
    for name in names.split():
        globals()[name] = Intrinsic(name, doc)


_intrinsics(
    "global_id local_id group_id global_size local_size num_groups global_offset",
    "work-item function of one dimension (0, 1 or 2); returns int64",
)
_intrinsics("work_dim", "the number of dimensions of the launch; returns uint32")
_intrinsics("barrier", "work-group barrier; flags LOCAL_MEM_FENCE | GLOBAL_MEM_FENCE")
_intrinsics("local_array private_array", "array(dtype, shape) in local or private memory")
_intrinsics(
    "atomic_add atomic_sub atomic_xchg atomic_min atomic_max atomic_and atomic_or "
    "atomic_xor atomic_inc atomic_dec atomic_cmpxchg",
    "atomic_op(array, index, value) -> old value (relaxed, like OpenCL C's atomic_*)",
)
_intrinsics("select", "select(cond, a, b): a where cond is true, else b")
_intrinsics("bitcast", "bitcast(value, type): reinterpret the bits (OpenCL as_type)")
_intrinsics("any all", "any/all lanes of a bool vector")

# OpenCL.std math, geometric and integer functions, by their OpenCL C names.
MATH_UNARY = [
    "acos",
    "acosh",
    "acospi",
    "asin",
    "asinh",
    "asinpi",
    "atan",
    "atanh",
    "atanpi",
    "cbrt",
    "ceil",
    "cos",
    "cosh",
    "cospi",
    "erf",
    "erfc",
    "exp",
    "exp2",
    "exp10",
    "expm1",
    "fabs",
    "floor",
    "lgamma",
    "log",
    "log2",
    "log10",
    "log1p",
    "logb",
    "rint",
    "round",
    "rsqrt",
    "sin",
    "sinh",
    "sinpi",
    "sqrt",
    "tan",
    "tanh",
    "tanpi",
    "tgamma",
    "trunc",
    "native_sin",
    "native_cos",
    "native_tan",
    "native_exp",
    "native_exp2",
    "native_exp10",
    "native_log",
    "native_log2",
    "native_log10",
    "native_sqrt",
    "native_rsqrt",
    "native_recip",
    "degrees",
    "radians",
    "sign",
]
MATH_BINARY = [
    "atan2",
    "atan2pi",
    "copysign",
    "fdim",
    "fmax",
    "fmin",
    "fmod",
    "hypot",
    "maxmag",
    "minmag",
    "nextafter",
    "pow",
    "powr",
    "remainder",
    "native_divide",
    "native_powr",
    "step",
]
MATH_TERNARY = ["fma", "mad", "mix", "smoothstep"]
MATH_INT_ARG = ["ldexp", "pown", "rootn"]  # (float, int)
INT_UNARY = ["clz", "ctz", "popcount"]
INT_BINARY = ["mul_hi", "add_sat", "sub_sat", "hadd", "rhadd", "rotate", "abs_diff"]
GENERIC = ["min", "max", "clamp", "abs"]
GEOMETRIC = ["dot", "cross", "length", "distance", "normalize", "fast_length", "fast_normalize"]
PREDICATES = ["isnan", "isinf", "isfinite", "signbit"]

for _name in (
    MATH_UNARY + MATH_BINARY + MATH_TERNARY + MATH_INT_ARG + INT_UNARY + INT_BINARY + GENERIC
):
    globals()[_name] = Intrinsic(_name, f"OpenCL C's {_name}")
for _name in GEOMETRIC + PREDICATES:
    globals()[_name] = Intrinsic(_name, f"OpenCL C's {_name}")
del _name, _vec

# `from spirvjit.lang import *` must not shadow Python's builtins in the host code of the
# importing module; inside kernels, Python's any, all, min, max, abs, round and pow mean
# the same as these.
_BUILTIN_NAMES = {"any", "all", "min", "max", "abs", "round", "pow"}
__all__ = sorted(
    name
    for name, value in globals().items()
    if not name.startswith("_")
    and name not in _BUILTIN_NAMES
    and name not in ("annotations", "Intrinsic")
    and not isinstance(value, (list, tuple))
)
