"""ULP conformance of the OpenCL.std math functions (float, double, half).

Every function runs twice over the same inputs: with 64 work-items per group, where the
work-item loop is vectorized (libmvec or the translator's own branch-free code), and with one
work-item per group, where the scalar remainder path runs. The maximum error of both is
checked against the OpenCL C 3.0 section 7.4 bound and printed as a table at the end of the run
(``pytest -q`` included), through a terminal-summary plugin registered by a fixture.
"""

from __future__ import annotations

import math
import time

import mpmath
import numpy as np
import pytest
from ulp_refs import FUNCTIONS, MathFn, remquo_quotient_ok

TYPES = {"float": np.float32, "double": np.float64, "half": np.float16}
SAMPLES = {"float": 4096, "double": 1024, "half": 2048}
FORMAT = {np.float16: (11, -14), np.float32: (24, -126), np.float64: (53, -1022)}
REPORT: list[tuple[str, str, float | None, float, float, str]] = []


class UlpReport:
    """Prints the measured errors after the test summary."""

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not REPORT:
            return
        tr = terminalreporter
        tr.section("OpenCL.std ULP report (max error over vector / scalar paths)")
        tr.write_line(f"{'function':<12}{'type':<8}{'bound':>7}{'vector':>10}{'scalar':>10}  worst")
        for name, ty, bound, vec, sca, worst in sorted(REPORT):
            shown = "-" if bound is None else f"{bound:g}"
            tr.write_line(f"{name:<12}{ty:<8}{shown:>7}{vec:>10.3g}{sca:>10.3g}  {worst}")


@pytest.fixture(scope="session", autouse=True)
def ulp_report(request):
    plugin = UlpReport()
    request.config.pluginmanager.register(plugin, "spirvjit-ulp-report")
    start = time.perf_counter()
    yield
    REPORT.append(("(suite time)", f"{time.perf_counter() - start:.1f}s", None, 0.0, 0.0, ""))


def _kernel(fn: MathFn, type_name: str) -> str:
    return f"""
kernel void k_{fn.name}(global const {type_name} *A, global const {type_name} *B,
                        global const int *N, global {type_name} *O, global int *Q)
{{
    size_t i = get_global_id(0);
    {type_name} a = A[i], b = B[i], p;
    int n = N[i], q = 0;
    O[i] = {fn.call()};
    Q[i] = q;
}}
"""


def _program(build, type_name: str):
    pragma = "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n" if type_name == "half" else ""
    return build(pragma + "".join(_kernel(fn, type_name) for fn in FUNCTIONS))


def _specials(dtype) -> np.ndarray:
    info = np.finfo(dtype)
    tiny = info.smallest_subnormal
    base = [0.0, 1.0, 0.5, 2.0, 3.0, 1.5, 10.0, 0.25, 0.75, 100.0, 1e-3]
    base += [math.inf, tiny, info.smallest_normal - tiny, info.smallest_normal, info.max]
    values = np.array(base + [-v for v in base] + [math.nan], dtype=dtype)
    return values


def _floats(dtype, count: int, domain: tuple[float, float], rng) -> np.ndarray:
    """Special values, random bit patterns (every exponent, subnormals, NaN) and core inputs."""
    bits = np.dtype(dtype).itemsize * 8
    utype = np.dtype(f"u{bits // 8}")
    raw = rng.integers(0, 2**bits, size=count // 2, dtype=np.uint64).astype(utype).view(dtype)
    core = rng.uniform(domain[0], domain[1], size=count - count // 2 - 48).astype(dtype)
    specials = np.resize(_specials(dtype), 48)
    return np.concatenate([specials, raw, core]).astype(dtype)


def _ints(count: int, rng) -> np.ndarray:
    small = rng.integers(-12, 13, size=count - count // 4)
    wide = rng.integers(-(2**31), 2**31, size=count // 4)
    return np.concatenate([small, wide]).astype(np.int32)


def _inputs(fn: MathFn, dtype, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    count = SAMPLES[
        np.dtype(dtype)
        .name.replace("float16", "half")
        .replace("float32", "float")
        .replace("float64", "double")
    ]
    a = _floats(dtype, count, fn.domain, rng)
    b = _floats(dtype, count, fn.domain, rng)
    if fn.args == "ff":  # pair every special value with every other one too
        s = _specials(dtype)
        grid_a, grid_b = np.meshgrid(s, s)
        a = np.concatenate([grid_a.ravel(), a])[:count]
        b = np.concatenate([grid_b.ravel(), b])[:count]
    n = _ints(count, rng)
    rng.shuffle(n)
    return a, b, n


def _ulp_of(ref: np.ndarray, dtype) -> np.ndarray:
    """The OpenCL ulp of the exact value ``ref`` in ``dtype`` (spacing at its binade)."""
    precision, emin = FORMAT[dtype]
    _, e = np.frexp(np.abs(ref))
    return np.ldexp(1.0, np.maximum(e - 1, emin) - (precision - 1))


def _exact_match(got: np.ndarray, rounded: np.ndarray) -> np.ndarray:
    """Same value, same NaN-ness, and the same sign on zeros (C99 Annex F)."""
    same = (got == rounded) & (np.signbit(got) == np.signbit(rounded))
    return same | (np.isnan(got) & np.isnan(rounded))


def _errors_from_double(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """ULP errors of ``got`` against a float64 reference (float and half results)."""
    dtype = got.dtype.type
    with np.errstate(all="ignore"):
        rounded = ref.astype(dtype)
        err = np.abs(got.astype(np.float64) - ref) / _ulp_of(ref, dtype)
    special = ~np.isfinite(rounded) | (rounded == 0) | ~np.isfinite(got)
    err = np.where(special, np.where(_exact_match(got, rounded), 0.0, math.inf), err)
    return np.where(_exact_match(got, rounded), 0.0, err)


def _errors_from_mpmath(fn: MathFn, got: np.ndarray, args: list[np.ndarray]) -> np.ndarray:
    """ULP errors of double results against mpmath at 128 bits (special results exactly)."""
    with np.errstate(all="ignore"):
        ref = fn.ref(*args)
    err = _errors_from_double_exact(got, ref)
    todo = np.flatnonzero(np.isfinite(ref) & (ref != 0) & np.isfinite(got) & (err != 0))
    with mpmath.workprec(128):
        for i in todo:
            try:
                exact = fn.mp(
                    *(mpmath.mpf(float(x[i])) if x.dtype.kind == "f" else int(x[i]) for x in args)
                )
            except (ValueError, ZeroDivisionError):
                continue
            if isinstance(exact, mpmath.mpc):
                continue
            _, e = mpmath.frexp(exact)
            ulp = mpmath.ldexp(1, max(e - 1, -1022) - 52)
            err[i] = float(abs(mpmath.mpf(float(got[i])) - exact) / ulp)
    return err


def _errors_from_double_exact(got: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """0 where ``got`` matches the double reference bit for bit, else its ulp distance."""
    with np.errstate(all="ignore"):
        err = np.abs(got - ref) / _ulp_of(ref, np.float64)
    special = ~np.isfinite(ref) | (ref == 0) | ~np.isfinite(got)
    err = np.where(special, math.inf, err)
    return np.where(_exact_match(got, ref), 0.0, err)


def _errors(fn: MathFn, got: np.ndarray, args: list[np.ndarray]) -> np.ndarray:
    if fn.exact:
        with np.errstate(all="ignore"):
            ref = np.asarray(fn.ref(*args)).astype(got.dtype)
        return np.where(_exact_match(got, ref), 0.0, math.inf)
    if got.dtype == np.float64 and fn.mp is not None:
        return _errors_from_mpmath(fn, got, args)
    wide = [x.astype(np.float64) if x.dtype.kind == "f" else x for x in args]
    with np.errstate(all="ignore"):
        return _errors_from_double(got, fn.ref(*wide))


def _run(kernel, a, b, n, local: int) -> tuple[np.ndarray, np.ndarray]:
    out, q = np.zeros_like(a), np.zeros(a.shape, np.int32)
    kernel(a, b, n, out, q, global_size=(a.size,), local_size=(local,))
    return out, q


@pytest.mark.parametrize("type_name", list(TYPES))
def test_ulp(build, type_name):
    dtype = TYPES[type_name]
    program = _program(build, type_name)
    rng = np.random.default_rng(20240611)
    failures = []
    for fn in FUNCTIONS:
        a, b, n = _inputs(fn, dtype, rng)
        args = [a, b, n][: len(fn.args)] if fn.args != "fi" else [a, n]
        kernel = program.kernel(f"k_{fn.name}")
        paths = {}
        for path, local in (("vector", 64), ("scalar", 1)):
            got, q = _run(kernel, a, b, n, local)
            err = _errors(fn, got, args)
            if fn.name == "remquo":
                err = np.where(remquo_quotient_ok(a, b, q), err, math.inf)
            paths[path] = err
        worst_err = np.maximum(paths["vector"], paths["scalar"])
        i = int(np.argmax(worst_err))
        worst = f"{fn.name}({', '.join(repr(x[i].item()) for x in args)})" if worst_err[i] else ""
        bound = fn.bound(type_name)
        REPORT.append(
            (fn.name, type_name, bound, paths["vector"].max(), paths["scalar"].max(), worst)
        )
        if bound is not None and worst_err[i] > bound:
            failures.append(f"{fn.name}: {worst_err[i]:.3g} ulp > {bound} at {worst}")
    assert not failures, "\n".join(failures)
