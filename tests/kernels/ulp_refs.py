"""References, inputs and ULP error measurement for the OpenCL.std math functions.

Bounds are the full-profile "Relative Error as ULPs" tables of the OpenCL C 3.0 spec, section
7.4 (single, double, and the cl_khr_fp16 half table), which the SPIR-V OpenCL environment spec
(numerical compliance) applies per OpenCL.std instruction. ``None`` means the spec sets no bound
(lgamma, native_*): the error is reported, not checked.

References: float and half results are compared with glibc's double function (or an exact
double composition): its error of at most about one double ulp is 2**-29 of a float ulp.
Double results are compared with mpmath at 128 bits. Results that are zero, infinite or NaN
(where C99 Annex F fixes the value, signed zeros included) must match the double reference
exactly in both cases.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import mpmath
import numpy as np

INF = math.inf
Ref = Callable[..., np.ndarray]


@dataclass(frozen=True)
class MathFn:
    """One function under test: how to call it, its references and its ULP bounds."""

    name: str
    args: str  # one letter per argument: "f" floating point, "i" int
    ref: Ref  # float64 reference over NumPy arrays; exact for special values
    mp: Callable[..., object] | None  # mpmath reference for double, or None: use ``ref``
    bounds: tuple[float | None, float | None, float | None]  # float, double, half
    domain: tuple[float, float] = (-10.0, 10.0)  # where random "core" inputs are drawn
    expr: str = ""  # OpenCL C expression of a, b, n; default ``name(a[, b])``

    @property
    def exact(self) -> bool:
        """Correctly rounded functions: the reference is evaluated in the tested type itself."""
        return self.bounds == (0, 0, 0)

    def call(self) -> str:
        if self.expr:
            return self.expr
        names = {"f": iter("ab"), "i": iter("n")}
        return f"{self.name}({', '.join(next(names[k]) for k in self.args)})"

    def bound(self, type_name: str) -> float | None:
        return self.bounds[("float", "double", "half").index(type_name)]


def _vec(fn: Callable[..., float]) -> Ref:
    """A scalar float64 function (from ``math``) applied elementwise; domain errors give NaN."""

    def scalar(*xs: float) -> float:
        try:
            return fn(*xs)
        except ValueError:
            return math.nan
        except OverflowError:
            return math.inf

    return np.vectorize(scalar, otypes=[np.float64])


def _sinpi(x: np.ndarray) -> np.ndarray:
    """sin(pi x) in double with exact argument reduction (x - 2 round(x / 2) is exact)."""
    r = x - 2 * np.round(x / 2)  # in [-1, 1]
    r = np.where(np.abs(r) > 0.5, np.copysign(1.0, r) - r, r)  # sin(pi(1 - r)) = sin(pi r)
    out = np.sin(np.pi * r)
    return np.where(np.isinf(x), np.nan, np.where(r == 0, np.copysign(0.0, x) * (r == r), out))


def _cospi(x: np.ndarray) -> np.ndarray:
    r = np.abs(x - 2 * np.round(x / 2))  # in [0, 1]; cos(pi r) = -cos(pi (1 - r))
    out = np.where(r > 0.5, -np.sin(np.pi * (r - 0.5)), np.sin(np.pi * (0.5 - r)))
    return np.where(np.isinf(x), np.nan, np.where(r == 0.5, 0.0, out))


def _tanpi(x: np.ndarray) -> np.ndarray:
    r = x - np.round(x)  # in [-0.5, 0.5]; tanpi has period 1
    flip = np.abs(r) > 0.25
    near = np.tan(np.pi * r)
    far = 1 / np.tan(np.pi * (np.copysign(0.5, r) - r))
    out = np.where(flip, far, near)
    # Annex F-like signs: tanpi(n) = +0 for even n, -0 for odd n (times the sign of x).
    odd = np.fmod(np.abs(x), 2.0) == 1.0
    zero = np.copysign(0.0, x) * np.where(odd, -1.0, 1.0)
    out = np.where(r == 0, zero, out)
    half = np.abs(r) == 0.5
    return np.where(np.isinf(x), np.nan, np.where(half, np.copysign(np.inf, r), out))


def _pown(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    return np.where(n == 0, 1.0, np.power(x, n.astype(np.float64)))


def _rootn(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    out = np.vectorize(_rootn_scalar, otypes=[np.float64])(x, n)
    return out


def _rootn_scalar(x: float, n: int) -> float:
    if n == 0 or math.isnan(x) or (x < 0 and n % 2 == 0):
        return math.nan
    if x == 0:
        return (
            (math.copysign(0.0, x) if n % 2 else 0.0)
            if n > 0
            else (math.copysign(INF, x) if n % 2 else INF)
        )
    if math.isinf(x):
        return math.copysign(INF if n > 0 else 0.0, x) if n % 2 else (INF if n > 0 else 0.0)
    return float(math.copysign(_mp_rootn(abs(x), n), x))


def _mp_rootn(x: object, n: int) -> object:
    with mpmath.workprec(128):
        return mpmath.mpf(abs(x)) ** (mpmath.mpf(1) / int(n)) * (-1 if x < 0 else 1)


def _powr(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """powr: pow for x >= 0 only, with the special cases of OpenCL C 3.0 section 7.4."""
    out = np.power(np.abs(x), y)
    nan = (x < 0) | ((x == 0) & (y == 0)) | (np.isinf(x) & (y == 0))
    nan |= (x == 1) & np.isinf(y)
    return np.where(nan | np.isnan(x) | np.isnan(y), np.nan, out)


def remquo_quotient_ok(x: np.ndarray, y: np.ndarray, got: np.ndarray) -> np.ndarray:
    """remquo's integer: the sign of x/y and at least its 3 low bits (OpenCL C 3.0, 7.4)."""
    ok = np.ones(x.shape, bool)
    for i, (a, b, q) in enumerate(zip(x.tolist(), y.tolist(), got.tolist(), strict=True)):
        if not (math.isfinite(a) and math.isfinite(b)) or b == 0:
            continue
        exact = round(Fraction(a) / Fraction(b))
        if abs(exact) % 8 != abs(q) % 8 or exact * q < 0:
            ok[i] = False
    return ok


def fract_reference(x: np.ndarray) -> np.ndarray:
    """fract: min(x - floor(x), largest value below 1); fract(+-0) and fract(+-inf) are a zero of
    x's sign (OpenCL C 7.5.1: x - floor(x) alone gives +0 for -0)."""
    below_one = np.nextafter(x.dtype.type(1), x.dtype.type(0))
    out = np.minimum(x - np.floor(x), below_one)
    return np.where(np.isinf(x) | (x == 0), np.copysign(x.dtype.type(0), x), out)


def _logb(x: np.ndarray) -> np.ndarray:
    """The unbiased exponent as a float: exact through frexp, subnormals included."""
    _, e = np.frexp(x)
    out = (e - 1).astype(x.dtype)
    out = np.where(np.isinf(x), np.abs(x), np.where(x == 0, -np.inf, out))
    return np.where(np.isnan(x), x, out)


def _fdim(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """x - y if x > y, else +0; NaN if either is NaN."""
    out = np.where(x > y, x - y, x.dtype.type(0))
    return np.where(np.isnan(x) | np.isnan(y), np.nan, out)


def _nextafter(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """C99 nextafter: y itself when x == y (NumPy's half version returns x)."""
    return np.where(x == y, y, np.nextafter(x, y))


def _mp_lgamma(x: object) -> object:
    return mpmath.log(abs(mpmath.gamma(x)))


def _np_tgamma(x: float) -> float:
    if abs(x) < 1 / 1.7976931348623157e308:  # 1/x overflows
        return math.copysign(INF, x)
    if x == -INF or (x < 0 and x == math.floor(x)):
        return math.nan
    return math.gamma(x) if not x >= 172 else INF


def _np_lgamma(x: float) -> float:
    if math.isinf(x):
        return INF
    if x <= 0 and x == math.floor(x):
        return INF
    return math.lgamma(x)


def _asinpi(x):
    return np.arcsin(x) / np.pi


def _acospi(x):
    return np.arccos(x) / np.pi


def _atanpi(x):
    return np.arctan(x) / np.pi


def _atan2pi(y, x):
    return np.arctan2(y, x) / np.pi


def _mp_div_pi(fn: Callable[..., object]) -> Callable[..., object]:
    return lambda *xs: fn(*xs) / mpmath.pi


U4, U5, U6, U16 = (4, 4, 2), (5, 5, 2), (6, 6, 2), (16, 16, 4)
EXACT = (0, 0, 0)
HALF_FN = (8192, 8192, 8192)  # half_*: 8192 ulp (section 7.4), float only in the spec
mp = mpmath

FUNCTIONS: tuple[MathFn, ...] = (
    MathFn("acos", "f", np.arccos, mp.acos, U4, (-1, 1)),
    MathFn("acosh", "f", np.arccosh, mp.acosh, U4, (1, 100)),
    MathFn("acospi", "f", _acospi, _mp_div_pi(mp.acos), U5, (-1, 1)),
    MathFn("asin", "f", np.arcsin, mp.asin, U4, (-1, 1)),
    MathFn("asinh", "f", np.arcsinh, mp.asinh, U4),
    MathFn("asinpi", "f", _asinpi, _mp_div_pi(mp.asin), U5, (-1, 1)),
    MathFn("atan", "f", np.arctan, mp.atan, U5),
    MathFn("atanh", "f", np.arctanh, mp.atanh, U5, (-1, 1)),
    MathFn("atanpi", "f", _atanpi, _mp_div_pi(mp.atan), U5),
    MathFn("atan2", "ff", np.arctan2, mp.atan2, U6),
    MathFn("atan2pi", "ff", _atan2pi, _mp_div_pi(mp.atan2), U6),
    MathFn("cbrt", "f", np.cbrt, mp.cbrt, (2, 2, 2), (-100, 100)),
    MathFn("cos", "f", np.cos, mp.cos, U4, (-100, 100)),
    MathFn("cosh", "f", np.cosh, mp.cosh, U4, (-90, 90)),
    MathFn("cospi", "f", _cospi, mp.cospi, U4),
    MathFn("erf", "f", _vec(math.erf), mp.erf, U16, (-6, 6)),
    MathFn("erfc", "f", _vec(math.erfc), mp.erfc, U16, (-6, 30)),
    MathFn("exp", "f", np.exp, mp.exp, (3, 3, 2), (-110, 90)),
    MathFn("exp2", "f", np.exp2, lambda x: mp.power(2, x), (3, 3, 2), (-150, 130)),
    MathFn(
        "exp10", "f", lambda x: np.power(10.0, x), lambda x: mp.power(10, x), (3, 3, 2), (-46, 40)
    ),
    MathFn("expm1", "f", np.expm1, mp.expm1, (3, 3, 2), (-20, 90)),
    MathFn("hypot", "ff", np.hypot, mp.hypot, (4, 4, 2)),
    MathFn("log", "f", np.log, mp.log, (3, 3, 2), (0, 100)),
    MathFn("log2", "f", np.log2, lambda x: mp.log(x, 2), (3, 3, 2), (0, 100)),
    MathFn("log10", "f", np.log10, mp.log10, (3, 3, 2), (0, 100)),
    MathFn("log1p", "f", np.log1p, mp.log1p, (2, 2, 2), (-1, 10)),
    MathFn("pow", "ff", np.power, mp.power, U16, (0, 20)),
    MathFn("pown", "fi", _pown, lambda x, n: mp.power(x, int(n)), U16),
    MathFn("powr", "ff", _powr, mp.power, U16, (0, 20)),
    MathFn("rootn", "fi", _rootn, _mp_rootn, U16, (-100, 100)),
    MathFn("rsqrt", "f", lambda x: 1 / np.sqrt(x), lambda x: 1 / mp.sqrt(x), (2, 2, 1), (0, 100)),
    MathFn("sin", "f", np.sin, mp.sin, U4, (-100, 100)),
    MathFn("sinh", "f", np.sinh, mp.sinh, U4, (-90, 90)),
    MathFn("sinpi", "f", _sinpi, mp.sinpi, U4),
    MathFn("sqrt", "f", np.sqrt, mp.sqrt, (3, 0, 0), (0, 100)),  # double, half: correctly rounded
    MathFn("tan", "f", np.tan, mp.tan, (5, 5, 2), (-100, 100)),
    MathFn("tanh", "f", np.tanh, mp.tanh, (5, 5, 2)),
    MathFn("tanpi", "f", _tanpi, lambda x: mp.sinpi(x) / mp.cospi(x), U6),
    MathFn("tgamma", "f", _vec(_np_tgamma), mp.gamma, U16, (-30, 40)),
    MathFn("lgamma", "f", _vec(_np_lgamma), _mp_lgamma, (None, None, None), (-30, 40)),
    MathFn("sincos_cos", "f", np.cos, mp.cos, U4, (-100, 100), "(sincos(a, &p), p)"),
    MathFn("sincos_sin", "f", np.sin, mp.sin, U4, (-100, 100), "sincos(a, &p)"),
    MathFn("fmod", "ff", np.fmod, None, EXACT),
    MathFn("remainder", "ff", _vec(math.remainder), None, EXACT),
    MathFn("remquo", "ff", _vec(math.remainder), None, EXACT, (-10, 10), "remquo(a, b, &q)"),
    MathFn("fract", "f", fract_reference, None, EXACT, (-10, 10), "fract(a, &p)"),
    MathFn("modf", "f", lambda x: np.modf(x)[0], None, EXACT, (-10, 10), "modf(a, &p)"),
    MathFn("frexp", "f", lambda x: np.frexp(x)[0], None, EXACT, (-10, 10), "frexp(a, &q)"),
    MathFn("ldexp", "fi", lambda x, n: np.ldexp(x, n), None, EXACT),
    MathFn("logb", "f", _logb, None, EXACT),
    MathFn("nextafter", "ff", _nextafter, None, EXACT),
    MathFn("fdim", "ff", _fdim, None, EXACT),
)
