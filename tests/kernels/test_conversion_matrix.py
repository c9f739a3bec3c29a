"""Every ``convert_<type><n>[_sat][_rounding]`` between OpenCL's integer and float types.

One kernel per source type computes many conversions of the same inputs: each one loads
``vload<n>(i, a + block)``, converts and ``vstore<n>``s into its own slice of a byte
buffer, so a conversion of width n over N work-items is the elementwise conversion of
N*n consecutive inputs. References are exact (Python ints, Fractions rounded with the
requested mode): int→int wraps or saturates, float→int rounds with the mode (toward zero
by default) and saturates (NaN to 0) with ``_sat``, int→float and double→float round
with the mode (to nearest even by default).

CI runs a Latin-square sample: every (source, destination, _sat, rounding) combination
once, at a vector width that changes with it, so each source/destination pair meets
every width. ``-m slow`` runs the whole product (every width of every combination).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest
from harness import build
from refs import as_py, assert_same_bits, from_py, round_array, round_int, saturate

INTS = ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong")
FLOATS = ("float", "double")
WIDTHS = (1, 2, 3, 4, 8, 16)
ROUNDINGS = ("", "_rte", "_rtz", "_rtp", "_rtn")
DTYPES = {
    "char": np.int8,
    "uchar": np.uint8,
    "short": np.int16,
    "ushort": np.uint16,
    "int": np.int32,
    "uint": np.uint32,
    "long": np.int64,
    "ulong": np.uint64,
    "float": np.float32,
    "double": np.float64,
}
N = 48  # work-items; a conversion of width n reads N*n inputs
HEADER = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"


@dataclass(frozen=True)
class Conv:
    src: str
    dst: str
    width: int
    sat: bool
    rounding: str
    block: int  # which input block it reads (float sources: one in-range block per type)

    @property
    def call(self) -> str:
        w = "" if self.width == 1 else str(self.width)
        return f"convert_{self.dst}{w}{'_sat' if self.sat else ''}{self.rounding}"

    @property
    def mode(self) -> str:
        if self.rounding:
            return self.rounding[1:]
        return "rtz" if self.dst in INTS else "rte"


def conversions(src: str, full: bool) -> list[Conv]:
    """The conversions from ``src`` one kernel computes."""
    out = []
    dsts = INTS + FLOATS
    for di, dst in enumerate(dsts):
        for sat in (False, True):
            if sat and dst in FLOATS:
                continue  # _sat is only for integer destinations
            for ri, rounding in enumerate(ROUNDINGS):
                # Float to int without _sat reads values in the destination's range
                # (block 1 + its index): outside it the result is undefined.
                in_range = src in FLOATS and dst in INTS and not sat
                block = 1 + INTS.index(dst) if in_range else 0
                if full:
                    widths = WIDTHS
                else:
                    si = (INTS + FLOATS).index(src)
                    widths = (WIDTHS[(si + di + 2 * ri + 3 * sat) % len(WIDTHS)],)
                out += [Conv(src, dst, w, sat, rounding, block) for w in widths]
    return out


def kernel_source(src: str, convs: list[Conv]) -> tuple[str, list[int]]:
    """One kernel converting from ``src``; returns its source and each result's byte offset."""
    lines, offsets, offset = [], [], 0
    for c in convs:
        offsets.append(offset)
        w = c.width
        load = f"a[{c.block * N * 16} + i]" if w == 1 else f"vload{w}(i, a + {c.block * N * 16})"
        target = f"(global {c.dst}*)(out + {offset})"
        if w == 1:
            lines.append(f"    ({target})[i] = {c.call}({load});")
        else:
            lines.append(f"    vstore{w}({c.call}({load}), i, {target});")
        size = N * w * np.dtype(DTYPES[c.dst]).itemsize
        offset += -(-size // 16) * 16
    body = "\n".join(lines)
    text = (
        f"kernel void from_{src}(global const {src}* a, global uchar* out) {{\n"
        f"    size_t i = get_global_id(0);\n{body}\n}}\n"
    )
    return text, [*offsets, offset]


def _int_inputs(src: str, rng: np.random.Generator) -> np.ndarray:
    """N*16 values of ``src``: every type's limits and their neighbours first, then random."""
    dt = DTYPES[src]
    info = np.iinfo(dt)
    lo, hi = int(info.min), int(info.max)
    edges = {0, 1, 2, lo, hi, lo + 1, hi - 1}
    for t in INTS:
        ti = np.iinfo(DTYPES[t])
        for v in (int(ti.min), int(ti.max)):
            edges |= {v - 1, v, v + 1}
    edges |= {-1, -2}
    edges = sorted(v for v in edges if lo <= v <= hi)
    vals = rng.integers(lo, hi, N * 16, endpoint=True, dtype=dt)
    # Limits land in the first N (scalars see them) and again spread over the vectors.
    first = rng.permutation(len(edges))[: min(len(edges), N)]
    vals[: len(first)] = np.array([edges[k] for k in first], dtype=object).astype(dt)
    spread = rng.choice(np.arange(N, N * 16), len(edges), replace=False)
    vals[spread] = np.array(edges, dtype=object).astype(dt)
    return vals


def _float_inputs(src: str, dst: str | None, rng: np.random.Generator) -> np.ndarray:
    """N*16 values of float type ``src``: in ``dst``'s range (also after any rounding)
    with halfway cases, or (dst None) anything, NaN and infinities included."""
    dt = DTYPES[src]
    if dst is None:
        vals = rng.standard_normal(N * 16) * 10.0 ** rng.uniform(-3, 25, N * 16)
        special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 255.5]
        special += [-128.5, 3e9, -3e9, 1e19, -1e19, 2.0**63, 2.0**64, 2.0**31, 65535.5]
        special += [4294967295.5, 127.49, -129.0, 1e-40]
    else:
        info = np.iinfo(DTYPES[dst])
        lo, hi = int(info.min), int(info.max)
        vals = rng.uniform(float(lo), float(hi), N * 16)
        small = rng.uniform(-3.0, 3.0, N * 4).round(1)  # halves and near-halves
        vals[: small.size] = small
        special = [0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49, 0.51, float(hi) - 0.5]
        special += [float(lo) + 0.5, float(hi) // 2 + 0.5, 1e-3, -1e-3]
    vals = vals.astype(dt)
    vals[: len(special)] = np.array(special, dtype=np.float64).astype(dt)
    vals = rng.permutation(vals)
    if dst is not None:
        # Keep only values whose every rounding stays in range (else the result is undefined).
        info = np.iinfo(DTYPES[dst])
        ok = [
            np.isfinite(v)
            and all(
                int(info.min) <= round_int(Fraction(float(v)), m) <= int(info.max)
                for m in ("rte", "rtz", "rtp", "rtn")
            )
            for v in vals
        ]
        vals = np.where(ok, vals, dt(0.5))
    return vals


def inputs(src: str) -> np.ndarray:
    """The kernel's input: block 0 (anything), then for float sources one in-range block
    per integer destination type."""
    rng = np.random.default_rng(sum(src.encode()) * 7919)
    if src in INTS:
        return _int_inputs(src, rng)
    return np.concatenate([_float_inputs(src, dst, rng) for dst in (None, *INTS)])


def reference(c: Conv, a: np.ndarray) -> np.ndarray:
    dt = DTYPES[c.dst]
    if c.src in INTS and c.dst in INTS:
        values = as_py(a)  # Python ints (a list of big ints would become float64)
        return saturate(values, dt) if c.sat else from_py(values, dt)
    if c.dst in INTS:  # float -> int
        info = np.iinfo(dt)
        out = []
        for v in a:
            if np.isnan(v):
                out.append(0)
            elif np.isinf(v):
                out.append(int(info.max) if v > 0 else int(info.min))
            else:
                out.append(round_int(Fraction(float(v)), c.mode))
        out = np.array(out, dtype=object)
        return saturate(out, dt) if c.sat else from_py(out, dt)
    if c.src in INTS:  # int -> float
        return round_array(as_py(a), dt, c.mode)
    # float -> float: exact values, rounded; zeros, infinities and NaN keep their meaning.
    exact = np.isnan(a) | np.isinf(a) | (a == 0)
    rounded = round_array(np.where(exact, 0, a), dt, c.mode)
    return np.where(exact, a.astype(dt), rounded)


@functools.cache
def _program(producer: str, full: bool):
    kernels = [kernel_source(s, conversions(s, full))[0] for s in INTS + FLOATS]
    return build(HEADER + "\n".join(kernels), producer=producer)


def check(producer: str, src: str, full: bool) -> int:
    convs = conversions(src, full)
    _, offsets = kernel_source(src, convs)
    a = inputs(src)
    out = np.zeros(offsets[-1], np.uint8)
    _program(producer, full).kernel(f"from_{src}")(a, out, global_size=N)
    failures = []
    for c, start in zip(convs, offsets, strict=False):
        dt = np.dtype(DTYPES[c.dst])
        got = out[start : start + N * c.width * dt.itemsize].view(dt)
        block = a[c.block * N * 16 : c.block * N * 16 + N * c.width]
        try:
            assert_same_bits(got, reference(c, block), f"{c.call}({src}{c.width})")
        except AssertionError as e:
            failures.append(str(e))
    assert not failures, f"{len(failures)} of {len(convs)} conversions wrong:\n" + "\n".join(
        failures[:12]
    )
    return len(convs)


@pytest.mark.parametrize("src", INTS + FLOATS)
def test_conversions_from(producer, src):
    assert check(producer, src, full=False) >= 50


@pytest.mark.slow
@pytest.mark.parametrize("src", INTS + FLOATS)
def test_every_conversion_and_width_from(producer, src):
    assert check(producer, src, full=True) >= 300


def test_sample_covers_every_combination():
    """The CI sample has every (source, destination, _sat, rounding) and, per pair, every
    width; the full product has every width of each."""
    sample = [c for s in INTS + FLOATS for c in conversions(s, full=False)]
    combos = {(c.src, c.dst, c.sat, c.rounding) for c in sample}
    assert len(combos) == len(sample) == 10 * (8 * 10 + 2 * 5)
    for s in INTS:
        for d in INTS:
            assert {c.width for c in sample if (c.src, c.dst) == (s, d)} == set(WIDTHS)
    full = [c for s in INTS + FLOATS for c in conversions(s, full=True)]
    assert len(full) == len(sample) * len(WIDTHS)
