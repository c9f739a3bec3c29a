"""libmvec variants outside OpenCL C's ULP bounds (translate/mathlib.OUT_OF_BOUNDS).

glibc 2.36's vector math is less accurate than its scalar libm: ``_ZGV?N?v_logf`` errs by up
to 3.97 ulp on every ISA (OpenCL allows 3), AVX-512's ``exp10f`` by 3.76 and ``log10f`` by 3.49,
``exp`` by 3.12. The ULP suite's random inputs missed them (an AVX-512 host met exp10f's; an
exhaustive scan found log10f's); the CPU back end now computes those float functions in double
and those double ones with libm's scalar function.

Here: the kernels stay within bounds at each variant's witness input, on each ISA this host can
run (x86-64-v2: SSE variants, v3: AVX2, the host: AVX-512 where it has it), on the vectorized
and the scalar path; and each listed variant still errs there, so that a glibc that fixes one
is noticed (then drop it from the table: the float function is faster through its own).
``libmvec_scan.py`` finds such variants; ``test_the_scan_finds_no_other`` (slow) runs it and
fails on a variant over its bound that the table lacks.
"""

from __future__ import annotations

import ctypes

import mpmath
import numpy as np
import pytest
from libmvec_scan import BOUNDS, host_isas
from ulp_refs import FUNCTIONS

import spirvjit
from spirvjit.target import host_target, parse_cpu_target
from spirvjit.translate.mathlib import _ISAS, LIBMVEC, OUT_OF_BOUNDS

ON_X86 = host_target().triple.startswith("x86_64")
# The widest libmvec ISA of each CPU target this host can run: the one the back end uses.
LEVELS = {"b": "x86-64-v2", "d": "x86-64-v3", "e": "host"}


def _stem(c_name: str) -> tuple[str, str]:
    """("logf" -> "log", "float"), ("exp" -> "exp", "double")."""
    if c_name.endswith("f") and c_name[:-1] in BOUNDS:
        return c_name[:-1], "float"
    return c_name, "double"


def _ulp_error(got: float, x: float, stem: str, type_name: str) -> float:
    """|got - f(x)| in ulps of f(x)'s binade in ``type_name`` (mpmath at 200 bits)."""
    mp_ref = {fn.name: fn.mp for fn in FUNCTIONS}[stem]
    with mpmath.workprec(200):
        exact = mp_ref(mpmath.mpf(x))
        precision, emin = (24, -126) if type_name == "float" else (53, -1022)
        binade = max(int(mpmath.floor(mpmath.log(abs(exact), 2))), emin)
        return float(abs(mpmath.mpf(got) - exact) / mpmath.mpf(2) ** (binade - precision + 1))


CASES = [
    pytest.param(c_name, isa, id=f"{c_name}-{isa}")
    for c_name, isa in sorted(OUT_OF_BOUNDS)
    if _stem(c_name)[0] in BOUNDS
]
needs_isa = pytest.mark.skipif(not ON_X86, reason="libmvec is x86-64's")


DTYPES = {"float": np.float32, "double": np.float64}


def _bound(stem: str, type_name: str) -> float | None:
    return BOUNDS[stem][("float", "double").index(type_name)]


def _case(c_name: str, isa: str) -> tuple[str, str, float, float, float]:
    """(stem, type name, witness, its recorded error, OpenCL's bound) of a listed variant;
    skips the test where this host lacks the variant's ISA."""
    if isa not in host_isas():
        pytest.skip(f"this host has no {isa!r} ISA ({LEVELS[isa]})")
    stem, type_name = _stem(c_name)
    witness, recorded = OUT_OF_BOUNDS[(c_name, isa)]
    return stem, type_name, witness, recorded, _bound(stem, type_name)


def test_every_listed_variant_is_a_libmvec_function_with_a_bound() -> None:
    assert len(CASES) == len(OUT_OF_BOUNDS)
    for c_name, _isa in OUT_OF_BOUNDS:
        assert _bound(*_stem(c_name)) is not None


@needs_isa
@pytest.mark.parametrize(("c_name", "isa"), CASES)
def test_kernels_stay_within_bounds_where_the_variant_errs(c_name: str, isa: str) -> None:
    stem, type_name, witness, _, bound = _case(c_name, isa)
    src = f"""kernel void f(global const {type_name}* a, global {type_name}* o) {{
        size_t i = get_global_id(0); o[i] = {stem}(a[i]); }}"""
    spirv = spirvjit.compile_opencl(src).spirv
    program = spirvjit.Program(spirv, target=parse_cpu_target(LEVELS[isa]))
    a = np.full(64, witness, DTYPES[type_name])
    for local in (64, 1):  # the vectorized path, and one work-item per group
        out = np.zeros_like(a)
        program.kernel("f")(a, out, global_size=a.size, local_size=local)
        errors = {_ulp_error(float(v), float(witness), stem, type_name) for v in out}
        assert max(errors) <= bound, (c_name, isa, local, sorted(errors))


def _call_variant(symbol: str, type_name: str, lanes: int, x: float) -> float:
    """Lane 0 of libmvec's ``symbol`` called with ``x`` in every lane."""
    from spirvjit.backends.cpu.codegen import load_runtime_module

    vt = f"<{lanes} x {type_name}>"
    text = f"""declare {vt} @{symbol}({vt})
define void @call_variant(ptr %in, ptr %out) {{
  %v = load {vt}, ptr %in, align 1
  %r = call {vt} @{symbol}({vt} %v)
  store {vt} %r, ptr %out, align 1
  ret void
}}
"""
    tracker = load_runtime_module(text, f"libmvec_{symbol}", ("call_variant",))
    a, out = np.full(lanes, x, DTYPES[type_name]), np.zeros(lanes, DTYPES[type_name])
    call = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(tracker["call_variant"])
    call(a.ctypes.data, out.ctypes.data)
    return float(out[0])


@needs_isa
@pytest.mark.parametrize(("c_name", "isa"), CASES)
def test_the_variant_still_errs_there(c_name: str, isa: str) -> None:
    stem, type_name, witness, recorded, bound = _case(c_name, isa)
    bits = {letter: bits for letter, _, bits in _ISAS}[isa]
    lanes = bits // (32 if type_name == "float" else 64)
    got = _call_variant(f"_ZGV{isa}N{lanes}v_{c_name}", type_name, lanes, witness)
    error = _ulp_error(got, witness, stem, type_name)
    assert error > bound, (
        f"libmvec's {c_name} ({isa}) is within OpenCL's {bound} ulp at {witness.hex()} now "
        f"({error:.2f} ulp; {recorded} recorded): glibc may have fixed it; rescan "
        "(libmvec_scan.py) and drop it from mathlib.OUT_OF_BOUNDS"
    )
    assert error == pytest.approx(recorded, abs=0.01)


@pytest.mark.slow
def test_the_scan_finds_no_other() -> None:
    """libmvec_scan over every variant this host runs (2 million inputs each, a fixed seed):
    each one it finds beyond its bound is listed (cbrt aside: opencl_std refines it), so a
    glibc whose variants got worse fails here rather than in a user's kernel."""
    from libmvec_scan import scan, unavailable

    why = unavailable()
    if why:
        pytest.skip(why)
    rows = scan(count=2_000_000, seed=1)
    assert {(row.name, row.type, row.isa) for row in rows} == {
        (name, type_name, isa)
        for name in LIBMVEC
        for type_name in ("float", "double")
        for isa in host_isas()
    }
    unlisted = [
        str(row)
        for row in rows
        if row.over and row.name != "cbrt" and (row.c_name, row.isa) not in OUT_OF_BOUNDS
    ]
    assert not unlisted, "add to mathlib.OUT_OF_BOUNDS:\n" + "\n".join(unlisted)
