"""convert_<type>[_sat][_rounding] between integer and float types, as_<type>, implicit casts.

References are exact: integers through Python ints, floats through Fractions rounded with
the requested mode (refs.round_float), so saturation and every rounding mode are checked.
"""

from __future__ import annotations

import re
from fractions import Fraction

import numpy as np
import pytest
from refs import as_py, assert_same_bits, from_py, round_array, round_int, saturate
from sources import (
    BITCASTS,
    CONV_FLOAT_FLOAT,
    CONV_FLOAT_TO_INT,
    CONV_INT,
    CONV_INT_TO_FLOAT,
    parse_type,
)


def _mode(name: str, default: str) -> str:
    m = re.search(r"_(rte|rtz|rtp|rtn)_from", name)
    return m.group(1) if m else default


def test_integer_conversions_wrap(run, producer):
    r = run("conv_int")
    checked = 0
    for op in CONV_INT:
        if "_sat" in op.name:
            continue
        out = r[f"{op.name}:o"]
        assert_same_bits(out, from_py(as_py(r[f"{op.name}:a"]), out.dtype), op.name)
        checked += 1
    assert checked > 40


def test_integer_conversions_saturate(run, producer):
    r = run("conv_int")
    checked = 0
    for op in CONV_INT:
        if "_sat" in op.name:
            out = r[f"{op.name}:o"]
            assert_same_bits(out, saturate(as_py(r[f"{op.name}:a"]), out.dtype), op.name)
            checked += 1
    assert checked > 60


def _float_to_int(values, dtype, mode, sat):
    out = []
    info = np.iinfo(dtype)
    for v in np.ravel(values):
        if np.isnan(v):
            out.append(0)  # _sat: NaN converts to 0
        elif np.isinf(v):
            out.append(int(info.max) if v > 0 else int(info.min))
        else:
            out.append(round_int(Fraction(float(v)), mode))
    out = np.array(out, dtype=object).reshape(np.shape(values))
    return saturate(out, dtype) if sat else out.astype(dtype)


@pytest.mark.parametrize("sat", [False, True], ids=["nosat", "sat"])
def test_float_to_int_rounding_modes(run, sat):
    r = run("conv_float_to_int")
    ops = [op for op in CONV_FLOAT_TO_INT if ("_sat" in op.name) == sat]
    assert ops
    for op in ops:
        out = r[f"{op.name}:o"]
        # float -> int defaults to round toward zero (also for casts and implicit conversion).
        expected = _float_to_int(r[f"{op.name}:a"], out.dtype, _mode(op.name, "rtz"), sat)
        assert_same_bits(out, expected, op.name)


def test_int_to_float_rounding_modes(run):
    r = run("conv_int_to_float")
    for op in CONV_INT_TO_FLOAT:
        out = r[f"{op.name}:o"]
        # int -> float defaults to round to nearest even.
        expected = round_array(as_py(r[f"{op.name}:a"]), out.dtype, _mode(op.name, "rte"))
        assert_same_bits(out, expected, op.name)


def test_double_to_float_rounding_modes(run):
    r = run("conv_float_float")
    for op in CONV_FLOAT_FLOAT:
        out = r[f"{op.name}:o"]
        a = r[f"{op.name}:a"]
        if out.dtype == np.float64:
            assert_same_bits(out, a.astype(np.float64), op.name)  # widening is exact
            continue
        expected = round_array(a, np.float32, _mode(op.name, "rte"))
        # Keep the sign of zero: Fraction(-0.0) loses it.
        expected = np.where(a == 0, a.astype(np.float32), expected)
        assert_same_bits(out, expected, op.name)


def test_as_type_bitcasts(run):
    r = run("bitcasts")
    for op in BITCASTS[:8]:
        a, o = r[f"{op.name}:a"], r[f"{op.name}:o"]
        assert_same_bits(o.reshape(-1).view(np.uint8), a.reshape(-1).view(np.uint8), op.name)
    assert len({parse_type(op.out)[0] for op in BITCASTS[:8]}) > 4


def test_implicit_integer_conversions(run):
    r = run("bitcasts")
    for op in BITCASTS[8:]:
        o = r[f"{op.name}:o"]
        assert_same_bits(o, from_py(as_py(r[f"{op.name}:a"]), o.dtype), op.name)
