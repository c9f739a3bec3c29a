"""async_work_group_copy, async_work_group_strided_copy and wait_group_events on the host CPU.

Before: OpGroupAsyncCopy was refused ("OpGroupAsyncCopy is not supported by spirvjit's
translator"), and with a null event clang-22's module did not even load (its OpConstantNull
of the event is one word too long or more: frontend/constant_null_repair.py; and a
one-component vector type it writes was refused: test_one_component_vector_from_clang).
The copy is shared out among the group's work-items and wait_group_events is a work-group
barrier (translate/ops_group.py), so each kernel below reads elements another work-item
copied.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import build

import spirvjit
from spirvjit.frontend.constant_null_repair import repair_constant_nulls

SOURCE = r"""
/* A 1-D 3-point stencil on a tile with a halo, loaded by one async copy (the style of the
 * vendors' optimization guides). */
#define R 1
kernel void stencil(global const float *in, global float *out, local float *tile, int n)
{
    size_t g = get_group_id(0), l = get_local_id(0), ls = get_local_size(0);
    size_t start = g * ls;
    size_t count = min((size_t)n - start + 2 * R, ls + 2 * R); /* in is padded by R each side */
    event_t e = async_work_group_copy(tile, in + start, count, 0);
    wait_group_events(1, &e);
    if (start + l < n)
        out[start + l] = 0.25f * tile[l] + 0.5f * tile[l + 1] + 0.25f * tile[l + 2];
}

/* Gather every second float4 of the group's span, scale in local memory, scatter back with
 * stride 3; two events waited together. */
kernel void strided(global const float4 *in, global float4 *out, local float4 *tile,
                    local float4 *other, int n)
{
    size_t g = get_group_id(0), l = get_local_id(0);
    event_t ev[2];
    ev[0] = async_work_group_strided_copy(tile, in + g * 2 * n, n, 2, 0);
    ev[1] = async_work_group_copy(other, in + g * 2 * n + 1, 1, 0);
    wait_group_events(2, ev);
    tile[l] = tile[l] * 2.0f + other[0].x;
    barrier(CLK_LOCAL_MEM_FENCE);
    event_t e = async_work_group_strided_copy(out + g * 3 * n, tile, n, 3, 0);
    wait_group_events(1, &e);
}
"""


def _stencil(program, n: int, local: int) -> None:
    rng = np.random.default_rng(7)
    padded = rng.random(n + 2).astype(np.float32)
    out = np.zeros(n, np.float32)
    groups = -(-n // local)
    program.kernel("stencil")(
        padded, out, spirvjit.LocalMemory(4 * (local + 2)), np.int32(n),
        global_size=groups * local, local_size=local,
    )  # fmt: skip
    f = np.float32
    ref = f(0.25) * padded[:-2] + f(0.5) * padded[1:-1] + f(0.25) * padded[2:]
    np.testing.assert_allclose(out, ref, rtol=2e-7, atol=0)


def _strided(program, n: int, groups: int) -> None:
    data = np.arange(groups * 2 * n * 4, dtype=np.float32).reshape(-1, 4)
    out = np.zeros((groups * 3 * n, 4), np.float32)
    program.kernel("strided")(
        data, out, spirvjit.LocalMemory(16 * n), spirvjit.LocalMemory(16), np.int32(n),
        global_size=groups * n, local_size=n,
    )  # fmt: skip
    ref = np.zeros_like(out)
    for g in range(groups):
        ref[g * 3 * n : (g + 1) * 3 * n : 3] = (
            2 * data[g * 2 * n : (g + 1) * 2 * n : 2] + data[g * 2 * n + 1, 0]
        )
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize("check", [False, True], ids=["default", "checked"])
def test_async_copies(producer: str, check: bool, monkeypatch) -> None:
    monkeypatch.setenv("SPIRVJIT_CHECK", "1" if check else "0")
    program = build(SOURCE, producer=producer)
    for n, local in ((64, 16), (45, 8), (7, 7)):
        _stencil(program, n, local)
    _strided(program, 8, 3)
    _strided(program, 5, 2)


def test_async_copies_vectorized(monkeypatch) -> None:
    monkeypatch.setenv("SPIRVJIT_WFV", "all")
    program = spirvjit.compile_opencl(SOURCE, ["-cl-std=CL3.0"])
    _stencil(program, 45, 8)
    _strided(program, 8, 3)


def test_constant_null_repair_drops_the_repeated_type_only() -> None:
    header = [0x07230203, 0x00010400, 0, 30, 0]
    event_type = [(2 << 16) | 34, 12]  # OpTypeEvent %12
    bad_null = [(4 << 16) | 46, 12, 24, 12]  # OpConstantNull %12 %24 %12 (clang-22)
    worse_null = [(5 << 16) | 46, 12, 26, 12, 12]  # ... %12 %12 (seen in the same module)
    good_null = [(3 << 16) | 46, 12, 25]
    words = header + event_type + bad_null + good_null + worse_null
    spirv = np.array(words, "<u4").tobytes()
    repaired, count = repair_constant_nulls(spirv)
    assert count == 2
    expected = header + event_type + [(3 << 16) | 46, 12, 24] + good_null
    expected += [(3 << 16) | 46, 12, 26]
    assert repaired == np.array(expected, "<u4").tobytes()
    # A module without the spelling comes back as it was.
    fixed = np.array(header + event_type + good_null, "<u4").tobytes()
    assert repair_constant_nulls(fixed) == (fixed, 0)


ONE_LANE = r"""
kernel void one_lane(global float4 *a, global const float4 *b)
{
    size_t i = get_global_id(0);
    a[i] = a[i] * 2.0f + b[0].x;
}
"""


def test_one_component_vector_from_clang() -> None:
    """clang-22 -O2 loads `b[0].x` as <1 x float> and its back end writes the type as
    `OpTypeVector %float 1`, which the validator refused ("vector of 1 components")."""
    program = build(ONE_LANE, producer="clang")
    a = np.arange(32, dtype=np.float32).reshape(8, 4)
    b = np.array([[0.5, 9, 9, 9]], np.float32)
    expected = a * 2 + 0.5
    program.kernel("one_lane")(a, b, global_size=8)
    np.testing.assert_array_equal(a, expected)
