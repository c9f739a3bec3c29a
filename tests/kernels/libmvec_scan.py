"""Scans glibc's libmvec vector variants for errors beyond OpenCL C's ULP bounds.

The CPU back end computes OpenCL math through libmvec (``_ZGV{b,d,e}N{lanes}v_<name>``: SSE,
AVX2, AVX-512; backends/cpu/mathcalls.py), which is less accurate than scalar libm. The variants
found outside OpenCL C 3.0's bounds (section 7.4) are listed in
``spirvjit.translate.mathlib.OUT_OF_BOUNDS`` and avoided; this tool finds them::

    PYTHONPATH=$PWD python3 -m tests.kernels.libmvec_scan [--count N] [--seed S]
        [--functions log exp ...] [--types float double] [--isas b d e]
        [--range LO HI] [--exhaustive]

It writes a C program for the variants this host's CPU can run, compiles it with gcc
(``-lmvec -lm``), runs it, and prints one row per variant: C name, ISA, type, worst error in
ulp, the input that gave it, the bound and ``OVER`` where the error exceeds the bound. The work
is done in C because Python would take hours for the billions of calls of an exhaustive scan
(every float), and because C calls the variants exactly as compiled code does.

Choices:

* Bounds come from ``ulp_refs.FUNCTIONS`` (the ULP suite's table of section 7.4), the list of
  functions from ``mathlib.LIBMVEC`` (the ones the back end maps to libmvec).
* References: a float result is compared with glibc's double function at the same (exact)
  float input: its error of about one double ulp is 2**-29 float ulp. A double result is
  compared with glibc's long double (x87, 64-bit mantissa) function: its few long double ulps
  are about 2**-11 double ulp each. mpmath would be exact but some 10**4 times slower.
* Ulp as OpenCL defines it: the spacing of the type's numbers in the binade of the exact result
  (the reference), with the subnormal spacing as the floor. An error is |result - reference| /
  ulp, so a correctly rounded result errs by at most 0.5.
* Results the reference makes special are not measured in ulp but counted as "special"
  mismatches, with a witness: a NaN reference (the result must be NaN too), an exactly zero or
  infinite reference (the result must be the same, sign included). A NaN or infinite result
  where the reference rounds to a finite number is an infinite error; an infinite result where
  the reference overflows the type, with its sign, is exact.
* Inputs of a random scan (``--count`` per variant, a fixed ``--seed``) are drawn, each from
  one of: random bit patterns (every exponent, NaNs and infinities included), uniform in the
  function's ``domain`` of ulp_refs (where the ULP suite and kernels draw theirs), uniform in
  [-1, 1], [-10, 10], [-100, 100], and x**2 * 1000 for x uniform in [0, 1] (dense near 0).
  ``--range LO HI`` draws every input uniform in [LO, HI] instead (dense sampling of a binade
  where a bad case was found). Binary functions draw x and y independently.
* ``--exhaustive`` (float unary functions only) runs every float of the function's domain
  (``EXHAUSTIVE_DOMAINS``: where the result is finite and not yet constant, which covers every
  binade the function treats differently), both signs, zeros and infinities included: up to
  2**32 inputs, 1-3 minutes per function for its three ISAs on one core.
* Each input's reference is computed once and shared by the ISAs (it costs most of the time).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

# tests/kernels modules import each other by plain name (conftest puts this folder on
# sys.path); do the same when run as ``python3 -m tests.kernels.libmvec_scan``.
sys.path.insert(0, str(Path(__file__).parent))

from ulp_refs import FUNCTIONS  # noqa: E402

from spirvjit.target import host_target  # noqa: E402
from spirvjit.translate.mathlib import _ISAS, LIBMVEC  # noqa: E402

BOUNDS = {fn.name: fn.bounds for fn in FUNCTIONS}  # name -> (float, double, half) bounds
DOMAINS = {fn.name: fn.domain for fn in FUNCTIONS}
ISA_NAMES = {"b": "SSE", "d": "AVX2", "e": "AVX-512"}
TYPES = ("float", "double")
INF = math.inf

# Float inputs of an exhaustive scan: where the float result is finite, non-zero and not yet a
# constant (beyond these, exp underflows to 0, erf is 1, ...), with margins of a few ulp's worth
# of input; every float between, both signs, and the endpoints. Infinite ends take every float.
EXHAUSTIVE_DOMAINS: dict[str, tuple[float, float]] = {
    "acos": (-1, 1),
    "acosh": (1, INF),
    "asin": (-1, 1),
    "asinh": (-INF, INF),
    "atan": (-INF, INF),
    "atanh": (-1, 1),
    "cbrt": (-INF, INF),
    "cos": (-INF, INF),
    "cosh": (-90, 90),  # cosh(89.5) overflows float
    "erf": (-5, 5),  # erff(4) rounds to 1
    "erfc": (-5, 11),  # erfcf(10.1) underflows to 0; erfcf(-4) is 2
    "exp": (-104, 89),  # expf(-104) is 0 (after the subnormals), expf(89) overflows
    "exp10": (-46, 39),
    "exp2": (-151, 129),
    "expm1": (-18, 89),  # expm1f(-18) rounds to -1
    "log": (0, INF),
    "log10": (0, INF),
    "log1p": (-1, INF),
    "log2": (0, INF),
    "sin": (-INF, INF),
    "sinh": (-90, 90),
    "tan": (-INF, INF),
    "tanh": (-10, 10),  # tanhf(9.1) rounds to 1
}


@dataclass(frozen=True)
class Row:
    """The worst error of one libmvec variant over one scan."""

    name: str  # OpenCL / libm name, "log"
    type: str  # "float" or "double"
    isa: str  # "b", "d" or "e"
    worst: float  # worst error in ulp (inf: NaN or infinity where a number was due)
    x: float  # the input of the worst error
    y: float | None  # the second input of a binary function
    result: float  # the variant's result there
    inputs: int  # how many inputs were scanned
    special: int  # how many special-value mismatches (see the module's docstring)
    special_x: float | None  # the first input of one, if any
    special_y: float | None
    special_result: float | None

    @property
    def c_name(self) -> str:
        return self.name + ("f" if self.type == "float" else "")

    @property
    def lanes(self) -> int:
        bits = {letter: bits for letter, _, bits in _ISAS}[self.isa]
        return bits // (32 if self.type == "float" else 64)

    @property
    def symbol(self) -> str:
        arity = LIBMVEC[self.name]
        return f"_ZGV{self.isa}N{self.lanes}{'v' * arity}_{self.c_name}"

    @property
    def bound(self) -> float:
        return BOUNDS[self.name][TYPES.index(self.type)]

    @property
    def over(self) -> bool:
        return self.worst > self.bound

    def __str__(self) -> str:
        args = _hex(self.x) if self.y is None else f"{_hex(self.x)}, {_hex(self.y)}"
        text = (
            f"{self.c_name:7} {self.isa} {ISA_NAMES[self.isa]:7} {self.type:6} "
            f"{self.worst:9.3f} ulp (bound {self.bound:g}){' OVER' if self.over else '     '}"
            f"  at {args} -> {_hex(self.result)}  [{self.inputs} inputs]"
        )
        if self.special:
            sargs = _hex(self.special_x)
            if self.special_y is not None:
                sargs += f", {_hex(self.special_y)}"
            text += f"  {self.special} special mismatches, e.g. {sargs} -> "
            text += _hex(self.special_result)
        return text


def _hex(value: float | None) -> str:
    return "-" if value is None else float(value).hex()


def host_isas() -> list[str]:
    """The libmvec ISA letters this host's CPU runs (LLVM's view of it, as the back end's)."""
    if not host_target().triple.startswith("x86_64"):
        return []
    features = set(host_target().features.split(","))
    return [letter for letter, feature, _ in _ISAS if feature in features]


def unavailable() -> str:
    """Why this host cannot scan ("" when it can): not x86-64, no gcc, no libmvec."""
    if not host_isas():
        return "libmvec is x86-64's; this host is " + host_target().triple
    if shutil.which("gcc") is None:
        return "gcc is not installed"
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp, "probe.c")
        src.write_text(
            "typedef double v2d __attribute__((vector_size(16)));\n"
            "v2d _ZGVbN2v_sin(v2d);\n"
            "int main(void) { v2d x = {0, 0}; return (int)_ZGVbN2v_sin(x)[0]; }\n"
        )
        proc = subprocess.run(
            ["gcc", str(src), "-o", str(Path(tmp, "probe")), "-lmvec", "-lm"],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            return "gcc cannot link libmvec: " + proc.stderr.strip()[-300:]
    return ""


# The C program. Per function, per type: a reference (double or long double libm) and one
# wrapper per ISA that calls the variant on an array. Each wrapper is compiled for its ISA by
# gcc's target attribute (the vectors are passed in xmm/ymm/zmm registers, as libmvec's ABI
# wants), the rest of the program for the baseline: it runs on any x86-64 host.
C_COMMON = r"""
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 65536 /* inputs per round: a multiple of every lane count */

typedef float v4f __attribute__((vector_size(16)));
typedef float v8f __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));
typedef double v2d __attribute__((vector_size(16)));
typedef double v4d __attribute__((vector_size(32)));
typedef double v8d __attribute__((vector_size(64)));

typedef void (*wrap_f)(const float *, const float *, float *, long);
typedef void (*wrap_d)(const double *, const double *, double *, long);
typedef double (*ref_f)(double, double);
typedef long double (*ref_d)(long double, long double);

struct fn {
    const char *name;
    int arity;
    ref_f rf;
    ref_d rd;
    wrap_f wf[3]; /* b, d, e */
    wrap_d wd[3];
};

/* xorshift64*: a fixed seed gives the same inputs on every run. */
static uint64_t state;
static uint64_t rnd(void) {
    state ^= state >> 12; state ^= state << 25; state ^= state >> 27;
    return state * 0x2545F4914F6CDD1Dull;
}
static double uniform(double lo, double hi) { return lo + (hi - lo) * ((rnd() >> 11) * 0x1p-53); }

/* An input from one of the modes of the module docstring (lo, hi: the function's domain). */
static double draw(int is_float, double lo, double hi) {
    switch (rnd() % 6) {
    case 0:
        if (is_float) { uint32_t b = (uint32_t)rnd(); float f; memcpy(&f, &b, 4); return f; }
        else { uint64_t b = rnd(); double d; memcpy(&d, &b, 8); return d; }
    case 1: return uniform(lo, hi);
    case 2: return uniform(-1, 1);
    case 3: return uniform(-10, 10);
    case 4: return uniform(-100, 100);
    default: { double u = uniform(0, 1); return u * u * 1000; }
    }
}

/* OpenCL's ulp of the exact result r: the spacing in r's binade, subnormal spacing at least.
   For floats, built from r's double exponent bits (frexp and ldexp would double the time of
   an exhaustive scan). */
static double ulp_float(double r) {
    uint64_t bits;
    memcpy(&bits, &r, 8);
    int e = (int)((bits >> 52) & 0x7ff) - 1023; /* the binade 2**e of a normal double */
    if (e < -126) e = -126; /* float subnormals (and zero): spacing 2**-149 */
    bits = (uint64_t)(e - 23 + 1023) << 52; /* 24 bits: spacing 2**(e-23) */
    memcpy(&r, &bits, 8);
    return r;
}
static long double ulp_double(long double r) {
    int e;
    if (fabsl(r) < 0x1p-1022L) return 0x1p-1074L;
    frexpl(r, &e);
    return ldexpl(1.0L, e - 53);
}

/* The error of `got` against the reference r in ulp; *special is set for the mismatches the
   docstring counts apart (and 0 returned). Double and float share it through long double. */
static long double error(long double got, long double r, long double rounded,
                         long double ulp, int *special) {
    *special = 0;
    if (isnan(r)) { *special = !isnan(got); return 0; }
    if (r == 0 || isinf(r)) { /* exact special results: equal, sign included */
        if (got == r && signbit(got) == signbit(r)) return 0;
        if (isinf(r) || got == 0) { *special = 1; return 0; }
        return fabsl(got) / ulp; /* a number where 0 is due: measured in subnormal ulps */
    }
    if (isinf(rounded) && got == rounded) return 0; /* overflow, as it should */
    if (isnan(got) || isinf(got)) return INFINITY;
    return fabsl(got - r) / ulp;
}

struct worst {
    long double err; double x, y, got;
    long specials; double sx, sy, sgot;
};

static void note(struct worst *w, long double err, int special, double x, double y, double got) {
    if (special) {
        if (w->specials++ == 0) { w->sx = x; w->sy = y; w->sgot = got; }
    } else if (err > w->err) {
        w->err = err; w->x = x; w->y = y; w->got = got;
    }
}

/* Next input of an exhaustive scan: float bit patterns over [lo, hi] ranges (inclusive). */
static int nranges; static uint32_t range_lo[4], range_hi[4];
static int cur_range; static uint64_t cur_bits; static int exhausted;
static float next_exhaustive(void) {
    uint32_t b;
    float f;
    if (exhausted) { b = range_hi[nranges - 1]; memcpy(&f, &b, 4); return f; } /* padding */
    b = (uint32_t)cur_bits;
    memcpy(&f, &b, 4);
    if (cur_bits == range_hi[cur_range]) {
        if (++cur_range == nranges) exhausted = 1; else cur_bits = range_lo[cur_range];
    } else cur_bits++;
    return f;
}

static float xf[CHUNK], yf[CHUNK], of[CHUNK];
static double rf[CHUNK];
static double xd[CHUNK], yd[CHUNK], od[CHUNK];
static long double rd[CHUNK];

/* argv: name type isas count seed lo hi mode [bit ranges]; mode: "draw", "range", "all". */
static int scan(const struct fn *f, int is_float, const char *isas, long count,
                double lo, double hi, const char *mode) {
    struct worst w[3];
    long done = 0;
    memset(w, 0, sizeof w);
    while (done < count && !exhausted) {
        long n = count - done < CHUNK ? count - done : CHUNK;
        long padded = (n + 15) / 16 * 16;
        for (long i = 0; i < padded; i++) {
            long j = i < n ? i : 0; /* pad with the first input: repeated, not counted */
            double x, y = 1;
            if (i >= n) { x = is_float ? xf[j] : xd[j]; y = is_float ? yf[j] : yd[j]; }
            else if (mode[0] == 'a') { x = next_exhaustive(); }
            else if (mode[0] == 'r') { x = uniform(lo, hi); y = uniform(lo, hi); }
            else { x = draw(is_float, lo, hi); y = draw(is_float, lo, hi); }
            if (is_float) {
                xf[i] = (float)x; yf[i] = (float)y;
                rf[i] = f->rf(xf[i], yf[i]);
            } else {
                xd[i] = x; yd[i] = y;
                rd[i] = f->rd(xd[i], yd[i]);
            }
        }
        for (int k = 0; k < 3; k++) {
            if (!strchr(isas, "bde"[k])) continue;
            int special;
            if (is_float) {
                f->wf[k](xf, yf, of, padded);
                for (long i = 0; i < n; i++) {
                    double r = rf[i], g = of[i];
                    long double e;
                    if (isfinite(r) && r != 0 && isfinite(g) && !isinf((float)r)) {
                        e = fabs(g - r) / ulp_float(r); /* the common case, in double */
                        special = 0;
                    } else e = error(g, r, (float)r, ulp_float(r), &special);
                    note(&w[k], e, special, xf[i], yf[i], of[i]);
                }
            } else {
                f->wd[k](xd, yd, od, padded);
                for (long i = 0; i < n; i++) {
                    long double e = error(od[i], rd[i], (double)rd[i], ulp_double(rd[i]), &special);
                    note(&w[k], e, special, xd[i], yd[i], od[i]);
                }
            }
        }
        done += n;
    }
    for (int k = 0; k < 3; k++) {
        if (!strchr(isas, "bde"[k])) continue;
        printf("ROW %s %s %c %.6Lg %a %a %a %ld %ld %a %a %a\n", f->name,
               is_float ? "float" : "double", "bde"[k], w[k].err, w[k].x, w[k].y, w[k].got,
               done, w[k].specials, w[k].sx, w[k].sy, w[k].sgot);
    }
    fflush(stdout);
    return 0;
}
"""

C_MAIN = r"""
int main(int argc, char **argv) {
    if (argc < 9) {
        fprintf(stderr, "usage: scan name type isas count seed lo hi mode [ranges]\n");
        return 2;
    }
    const char *name = argv[1];
    int is_float = strcmp(argv[2], "float") == 0;
    long count = atol(argv[4]);
    state = strtoull(argv[5], 0, 0) * 2 + 1;
    double lo = strtod(argv[6], 0), hi = strtod(argv[7], 0);
    for (int i = 9; i + 1 < argc && nranges < 4; i += 2) {
        range_lo[nranges] = (uint32_t)strtoul(argv[i], 0, 0);
        range_hi[nranges++] = (uint32_t)strtoul(argv[i + 1], 0, 0);
    }
    if (nranges) cur_bits = range_lo[0];
    for (unsigned i = 0; i < sizeof fns / sizeof fns[0]; i++)
        if (strcmp(fns[i].name, name) == 0)
            return scan(&fns[i], is_float, argv[3], count, lo, hi, argv[8]);
    fprintf(stderr, "unknown function %s\n", name);
    return 2;
}
"""

# Per ISA: letter, gcc target, float and double vector types and lanes.
C_ISAS = (
    ("b", "sse2", "v4f", 4, "v2d", 2),
    ("d", "avx2", "v8f", 8, "v4d", 4),
    ("e", "avx512f", "v16f", 16, "v8d", 8),
)


def c_source(names: list[str]) -> str:
    """The scanner's C program for libmvec functions ``names``."""
    parts = [C_COMMON]
    table = []
    for name in names:
        arity = LIBMVEC[name]
        args_c = "x, y" if arity == 2 else "x"
        parts.append(
            f"static double ref_f_{name}(double x, double y) "
            f"{{ (void)y; return {name}({args_c}); }}\n"
            f"static long double ref_d_{name}(long double x, long double y) "
            f"{{ (void)y; return {name}l({args_c}); }}"
        )
        for letter, target, vf, lf, vd, ld in C_ISAS:
            for ty, vt, lanes, suffix in (("float", vf, lf, "f"), ("double", vd, ld, "")):
                symbol = f"_ZGV{letter}N{lanes}{'v' * arity}_{name}{suffix}"
                params = ", ".join([vt] * arity)
                call_args = "a" if arity == 1 else "a, b"
                parts.append(
                    f"{vt} {symbol}({params});\n"
                    f'__attribute__((target("{target}"))) static void '
                    f"wrap_{letter}_{name}{suffix}(const {ty} *x, const {ty} *y, {ty} *o, long n) "
                    f"{{\n    for (long i = 0; i < n; i += {lanes}) {{\n"
                    f"        {vt} a, b, r;\n"
                    f"        memcpy(&a, x + i, sizeof a); memcpy(&b, y + i, sizeof b); (void)b;\n"
                    f"        r = {symbol}({call_args});\n"
                    f"        memcpy(o + i, &r, sizeof r);\n    }}\n}}"
                )
        wf = ", ".join(f"wrap_{letter}_{name}f" for letter, *_ in C_ISAS)
        wd = ", ".join(f"wrap_{letter}_{name}" for letter, *_ in C_ISAS)
        table.append(f'    {{"{name}", {arity}, ref_f_{name}, ref_d_{name}, {{{wf}}}, {{{wd}}}}},')
    parts.append("static const struct fn fns[] = {\n" + "\n".join(table) + "\n};")
    parts.append(C_MAIN)
    return "\n\n".join(parts)


def build(names: list[str], directory: Path) -> Path:
    """Compiles the scanner for ``names`` in ``directory``; returns the executable."""
    src, exe = directory / "libmvec_scan.c", directory / "libmvec_scan"
    src.write_text(c_source(names))
    # -O2 without -ffast-math: the references must be libm's own functions, not vectorized.
    subprocess.run(
        ["gcc", "-O2", "-std=gnu11", "-w", str(src), "-o", str(exe), "-lmvec", "-lm"],
        check=True,
    )
    return exe


def _float_bits(x: float) -> int:
    return struct.unpack("<I", struct.pack("<f", x))[0]


def exhaustive_ranges(lo: float, hi: float) -> list[tuple[int, int]]:
    """Bit-pattern ranges (inclusive) of the floats in [lo, hi], zeros and infinities included.

    Non-negative floats' patterns grow with their value from +0 (0x0) to +inf (0x7f800000),
    negative ones' with their magnitude from -0 (0x80000000) to -inf (0xff800000).
    """
    ranges = []
    if lo <= 0:  # -0 and the negative floats down to lo
        ranges.append((0x80000000 | _float_bits(max(-hi, 0.0)), 0x80000000 | _float_bits(-lo)))
    if hi >= 0:  # +0 (or lo) up to hi
        ranges.append((_float_bits(max(lo, 0.0)), _float_bits(hi)))
    return ranges


def scan(
    names: list[str] | None = None,
    types: tuple[str, ...] = TYPES,
    count: int = 1_000_000,
    seed: int = 1,
    isas: list[str] | None = None,
    value_range: tuple[float, float] | None = None,
    exhaustive: bool = False,
    echo: bool = False,
) -> list[Row]:
    """Scans libmvec's variants of ``names`` (all of mathlib.LIBMVEC by default) on this host's
    ISAs (or ``isas``); one Row per function, type and ISA. ``echo`` prints each as it comes."""
    names = list(names or LIBMVEC)
    isas = [i for i in (isas or host_isas()) if i in host_isas()]
    if exhaustive:
        types = ("float",)
        names = [n for n in names if LIBMVEC[n] == 1]
    rows = []
    with tempfile.TemporaryDirectory(prefix="libmvec-scan-") as tmp:
        exe = build(names, Path(tmp))
        for name in names:
            for type_name in types:
                if BOUNDS[name][TYPES.index(type_name)] is None:
                    continue
                lo, hi = value_range or DOMAINS[name]
                mode, extra, n = "draw", [], count
                if value_range:
                    mode = "range"
                if exhaustive:
                    mode = "all"
                    ranges = exhaustive_ranges(*EXHAUSTIVE_DOMAINS[name])
                    extra = [str(v) for r in ranges for v in r]
                    n = sum(b - a + 1 for a, b in ranges)
                cmd = [str(exe), name, type_name, "".join(isas), str(n), str(seed)]
                cmd += [repr(float(lo)), repr(float(hi)), mode, *extra]
                out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
                for line in out.splitlines():
                    row = _parse(line)
                    rows.append(row)
                    if echo:
                        print(row, flush=True)
    return rows


def _parse(line: str) -> Row:
    _, name, type_name, isa, worst, x, y, got, inputs, special, sx, sy, sgot = line.split()
    unary = LIBMVEC[name] == 1
    specials = int(special)
    return Row(
        name=name,
        type=type_name,
        isa=isa,
        worst=float(worst),
        x=float.fromhex(x),
        y=None if unary else float.fromhex(y),
        result=float.fromhex(got),
        inputs=int(inputs),
        special=specials,
        special_x=float.fromhex(sx) if specials else None,
        special_y=float.fromhex(sy) if specials and not unary else None,
        special_result=float.fromhex(sgot) if specials else None,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=1_000_000, help="inputs per variant")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--functions", nargs="+", choices=sorted(LIBMVEC), metavar="NAME")
    parser.add_argument("--types", nargs="+", choices=TYPES, default=list(TYPES))
    parser.add_argument("--isas", nargs="+", choices=["b", "d", "e"])
    parser.add_argument("--range", nargs=2, type=float, metavar=("LO", "HI"))
    parser.add_argument(
        "--exhaustive", action="store_true", help="every float of the domain (float, unary)"
    )
    args = parser.parse_args(argv)
    why = unavailable()
    if why:
        print("cannot scan:", why, file=sys.stderr)
        return 2
    print(f"# glibc {os.confstr('CS_GNU_LIBC_VERSION')}, ISAs {' '.join(host_isas())}")
    rows = scan(
        args.functions,
        tuple(args.types),
        args.count,
        args.seed,
        args.isas,
        tuple(args.range) if args.range else None,
        args.exhaustive,
        echo=True,
    )
    over = [row for row in rows if row.over]
    print(f"# {len(over)} of {len(rows)} variants over their bound:")
    for row in over:
        print(f"#   ({row.c_name!r}, {row.isa!r}): ({row.x.hex()}, {row.worst:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
