"""Bindings of the device math library to the host C library and its vector variants.

Transcendental functions call glibc's libm (``sinf``, ``exp``, ...), whose scalar functions
are accurate to about 1 ulp. Each declaration carries the LLVM attribute
``vector-function-abi-variant`` naming glibc's libmvec variants (x86-64 vector function ABI:
``_ZGVbN4v_sinf`` SSE, ``_ZGVdN8v_sinf`` AVX2, ``_ZGVeN16v_sinf`` AVX-512), so LLVM's loop and
SLP vectorizers can turn a work-item loop of scalar calls into SIMD calls. A variant is usable
only where its declaration exists in the module: the back end adds the declarations the
target's ISA supports (:func:`vector_declarations`) at JIT time, which is the per-target
specialization. LLVM 22 dropped the ``-vector-library`` option from its library, so this is
what its InjectTLIMappings pass would do with ``-vector-library=LIBMVEC``.
"""

from __future__ import annotations

from llvmlite import ir

# Functions glibc 2.35+ exports from libmvec in every x86-64 ISA flavour, with their arity.
LIBMVEC: dict[str, int] = {
    **dict.fromkeys(
        [
            "acos",
            "acosh",
            "asin",
            "asinh",
            "atan",
            "atanh",
            "cbrt",
            "cos",
            "cosh",
            "erf",
            "erfc",
            "exp",
            "exp10",
            "exp2",
            "expm1",
            "log",
            "log10",
            "log1p",
            "log2",
            "sin",
            "sinh",
            "tan",
            "tanh",
        ],
        1,
    ),
    "atan2": 2,
    "hypot": 2,
    "pow": 2,
}
# ISA letter of the x86-64 vector function ABI, the LLVM feature it needs, register bits.
_ISAS = (("b", "+sse2", 128), ("d", "+avx2", 256), ("e", "+avx512f", 512))
_VARIANT_ATTRIBUTE = "vector-function-abi-variant"

# libmvec variants, (C name, ISA letter), whose error exceeds OpenCL C's bound for the function
# (OpenCL C 3.0 section 7.4), with an input that shows it and its error in ulp. Found on glibc
# 2.36 (Debian 12) by tests/kernels/libmvec_scan.py: 4 million inputs per variant (random bit
# patterns, uniform in [-10, 10], [-100, 100], [-1, 1] and [0, 1000]), then every float input
# of each float function (--exhaustive; the float witnesses are the worst inputs, and log10f's
# AVX-512 variant, at most 2.92 ulp in the random sample, was found so). The CPU back end calls
# none of them (backends/cpu/mathcalls.py): a float function computes through the double
# variant of the same ISA (a few double ulps are far below one float ulp), a double function
# through libm's scalar function (glibc's are within 1 ulp), where the back end has no inline
# definition of its own (float log and double exp have: backends/cpu/vecmath.py).
# test_libmvec_bounds.py fails when a glibc release fixes one (its input is then within
# bound): drop it from here then.
# cbrt's variants err by up to 2.85 ulp too (bound 2), but OpenCL's cbrt is computed in double
# and refined by a Newton step (opencl_std.cbrt), which needs no more than they give.
OUT_OF_BOUNDS: dict[tuple[str, str], tuple[float, float]] = {
    ("logf", "b"): (float.fromhex("0x1.c3fd74p-1"), 3.965),  # bound 3
    ("logf", "d"): (float.fromhex("0x1.c3dff4p-1"), 3.94),
    ("logf", "e"): (float.fromhex("0x1.c3dff4p-1"), 3.94),
    ("exp10f", "e"): (float.fromhex("-0x1.43980cp-6"), 3.76),  # bound 3
    ("log10f", "e"): (float.fromhex("0x1.7ff874p-1"), 3.49),  # bound 3
    ("log1pf", "b"): (float.fromhex("0x1.55a5f6p-2"), 2.105),  # bound 2
    ("exp", "b"): (float.fromhex("0x1.8f3c3424f95ccp+6"), 3.12),  # bound 3
    ("exp", "d"): (float.fromhex("0x1.8f3c3424f95ccp+6"), 3.12),
    ("exp", "e"): (float.fromhex("0x1.8f3c3424f95ccp+6"), 3.12),
}


def within_bounds(c_name: str, isa: str) -> bool:
    """Whether libmvec's variant of ``c_name`` for ISA letter ``isa`` may be called."""
    return (c_name, isa) not in OUT_OF_BOUNDS


class StringAttributes(ir.FunctionAttributes):
    """Function attributes that also accept LLVM string attributes (``"name"="value"``),
    which llvmlite's list of known attributes lacks."""

    def add(self, name: str) -> None:
        if name.startswith('"'):
            set.add(self, name)
        else:
            super().add(name)


def _lanes(bits: int, lane: ir.Type) -> int:
    return bits // (64 if isinstance(lane, ir.DoubleType) else 32)


def _c_name(name: str, lane: ir.Type) -> str:
    return name + ("f" if isinstance(lane, ir.FloatType) else "")


def _vector_name(isa: str, lanes: int, arity: int, c_name: str) -> str:
    return f"_ZGV{isa}N{lanes}{'v' * arity}_{c_name}"


def libm_function(module: ir.Module, name: str, lane: ir.Type, arity: int) -> ir.Function:
    """The C library's ``name`` of ``arity`` ``lane`` (float or double) arguments, declared once.

    Declared ``readnone nounwind``: OpenCL has no errno, so the calls are pure and the
    vectorizer may move and widen them. libmvec functions also name their vector variants.
    """
    c_name = _c_name(name, lane)
    existing = module.globals.get(c_name)
    if existing is not None:
        return existing
    fn = ir.Function(module, ir.FunctionType(lane, [lane] * arity), c_name)
    fn.attributes = StringAttributes(["nounwind", "readnone"])
    if name in LIBMVEC:
        variants = ",".join(
            f"_ZGV_LLVM_N{_lanes(bits, lane)}{'v' * arity}_{c_name}"
            f"({_vector_name(isa, _lanes(bits, lane), arity, c_name)})"
            for isa, _, bits in _ISAS
            if within_bounds(c_name, isa)
        )
        if variants:
            fn.attributes.add(f'"{_VARIANT_ATTRIBUTE}"="{variants}"')
    return fn


def vector_declarations(features: str, called: set[str]) -> str:
    """IR declaring the libmvec variants ``features`` supports for the libm functions ``called``.

    ``llvm.compiler.used`` keeps the declarations alive until the vectorizer has run. Returns ""
    when there is nothing to declare (no libmvec function called, or an ISA without one).
    """
    flags = set(features.split(","))
    decls: list[tuple[str, str]] = []
    for name, arity in LIBMVEC.items():
        for lane, suffix in ((ir.FloatType(), "f"), (ir.DoubleType(), "")):
            if name + suffix not in called:
                continue
            for isa, feature, bits in _ISAS:
                if feature in flags and within_bounds(name + suffix, isa):
                    vec = ir.VectorType(lane, _lanes(bits, lane))
                    symbol = _vector_name(isa, vec.count, arity, name + suffix)
                    decls.append(
                        (symbol, f"declare {vec} @{symbol}({', '.join([str(vec)] * arity)})")
                    )
    if not decls:
        return ""
    used = ", ".join(f"ptr @{symbol}" for symbol, _ in decls)
    lines = [text for _, text in decls]
    lines.append(
        f"@llvm.compiler.used = appending global [{len(decls)} x ptr] [{used}], "
        'section "llvm.metadata"'
    )
    return "\n".join(lines) + "\n"
