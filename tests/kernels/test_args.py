"""Argument handling and launch validation: LaunchError names the offending argument;
CompileError carries clang's file:line:col diagnostics."""

from __future__ import annotations

import numpy as np
import pytest

import spirvjit

ARGS_SRC = r"""
typedef struct { int a; float b; long c; } Small;
kernel void scale(global float* x, float s, char c, uint u, Small st, float4 v, int3 w) {
    size_t i = get_global_id(0);
    x[i] = x[i] * s + c + u + st.a + st.b + st.c + v.w + w.z;
}
"""
SMALL = np.dtype(
    {
        "names": ["a", "b", "c"],
        "formats": [np.int32, np.float32, np.int64],
        "offsets": [0, 4, 8],
        "itemsize": 16,
    }
)


@pytest.fixture
def scale(build, producer):
    return build(ARGS_SRC, producer=producer).kernel("scale")


def _good_args():
    st = np.zeros((), SMALL)[()]
    st["a"], st["b"], st["c"] = 1, 0.5, 2
    v = np.array([0, 0, 0, 0.25], np.float32)
    w = np.array([0, 0, 3, 0], np.int32)  # a 3-component vector takes 4 elements
    return [np.ones(8, np.float32), np.float32(2), np.int8(-3), 4, st, v, w]


def test_scalar_struct_and_vector_by_value_args(scale):
    args = _good_args()
    scale(*args, global_size=(8,))
    np.testing.assert_array_equal(
        args[0], np.full(8, 2 - 3 + 4 + 1 + 0.5 + 2 + 0.25 + 3, np.float32)
    )


def _raises(kernel, args, match, **sizes):
    sizes.setdefault("global_size", (8,))
    with pytest.raises(spirvjit.LaunchError, match=match):
        kernel(*args, **sizes)


def test_wrong_argument_count(scale):
    _raises(scale, _good_args()[:-1], r"(?i)argument|expect")


def test_wrong_array_dtype_names_argument(scale):
    args = _good_args()
    args[0] = np.ones(8, np.float64)
    with pytest.raises(spirvjit.LaunchError) as info:
        scale(*args, global_size=(8,))
    assert info.value.argument in (0, "x")


def test_scalar_out_of_range_names_argument(scale):
    args = _good_args()
    args[2] = 300  # does not fit a char
    with pytest.raises(spirvjit.LaunchError) as info:
        scale(*args, global_size=(8,))
    assert info.value.argument in (2, "c")


def test_non_contiguous_array_rejected(scale):
    args = _good_args()
    args[0] = np.ones(16, np.float32)[::2]
    with pytest.raises(spirvjit.LaunchError) as info:
        scale(*args, global_size=(8,))
    assert info.value.argument in (0, "x")


def test_wrong_vector_length_names_argument(scale):
    args = _good_args()
    args[5] = np.zeros(3, np.float32)
    with pytest.raises(spirvjit.LaunchError) as info:
        scale(*args, global_size=(8,))
    assert info.value.argument in (5, "v")


@pytest.mark.parametrize(
    "sizes",
    [
        {"global_size": (0,)},
        {"global_size": (8,), "local_size": (0,)},
        {"global_size": (8,), "local_size": (1 << 30,)},  # beyond any device maximum
        {"global_size": (8, 8, 8, 8)},  # at most 3 dimensions
        {"global_size": (8,), "local_size": (4, 4)},  # dimension counts differ
        {"global_size": (8,), "global_offset": (1, 1)},
    ],
)
def test_bad_ndrange_rejected(scale, sizes):
    _raises(scale, _good_args(), "", **sizes)


def test_local_size_not_dividing_global_is_allowed(scale):
    args = _good_args()
    scale(*args, global_size=(8,), local_size=(3,))
    assert (args[0] == args[0][0]).all() and args[0][0] != 1


def test_compile_error_has_file_line_col(producer):
    source = "kernel void k(global int* o) {\n    o[0] = undeclared_thing;\n}\n"
    with pytest.raises(spirvjit.CompileError) as info:
        spirvjit.compile_opencl(source, options=["-cl-std=CL2.0"], producer=producer)
    assert ":2:12" in str(info.value) and "undeclared_thing" in str(info.value)
