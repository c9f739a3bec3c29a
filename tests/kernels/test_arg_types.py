"""Kernel arguments as the source declared them, with both producers.

clang-22's SPIR-V back end guesses each pointer's element type from its uses (opaque
pointers): a ``float*`` read only in pairs, or copied by a loop that became memcpy, came
out as ``void*`` and took a float64 array without a word. The front end now records the
declared types (``kernel_arg_type`` strings), names and ``const`` in the module, so the
checks the translator producer always had hold for both.
"""

from __future__ import annotations

import numpy as np
import pytest

import spirvjit

SRC = r"""
typedef float real;
typedef struct { int a; float b; } Pair;

// clang-22 used to type `a` as void*: its loads are vectorized into <2 x float>.
kernel void pairs(global float* o, global const float* a) {
    size_t i = get_global_id(0);
    o[i] = a[2 * i] + a[2 * i + 1];
}

// ... and both pointers of a copy loop that became llvm.memcpy.
kernel void copy(global real* restrict dst, global const real* restrict src, int n) {
    for (int i = 0; i < n; i++) dst[i] = src[i];
}

kernel void mixed(global const double* d, global const int4* v, global const void* raw,
                  global const uchar* bytes, global const size_t* sizes,
                  global const Pair* pairs, constant float* table, local float* scratch,
                  global const half* h, global long* out) {
    size_t i = get_global_id(0);
    scratch[0] = table[0];
    out[i] = (long)d[i] + v[i].w + ((global const char*)raw)[i] + bytes[i] + (long)sizes[i]
             + pairs[i].a + (long)scratch[0] + (long)vload_half(i, h);
}
"""

MIXED_ARGS = [
    ("d", "global", "float", 64, 1, True),
    ("v", "global", "int", 32, 4, True),
    ("raw", "global", None, 8, 1, True),
    ("bytes", "global", None, 8, 1, True),
    ("sizes", "global", "int", 64, 1, True),
    ("pairs", "global", None, None, 1, True),
    ("table", "constant", "float", 32, 1, True),
    ("scratch", "local", "float", 32, 1, False),
    ("h", "global", "float", 16, 1, True),
    ("out", "global", "int", 64, 1, False),
]


@pytest.fixture
def program(build, producer):
    return build(SRC, producer=producer)


def test_signature_has_declared_names_types_and_const(program):
    args = program.kernel("mixed").signature.args
    assert len(args) == len(MIXED_ARGS)
    for arg, (name, kind, element, bits, lanes, read_only) in zip(args, MIXED_ARGS, strict=True):
        assert (arg.name, arg.kind, arg.element_kind) == (name, kind, element), arg
        if bits is not None:
            assert arg.element_bits == bits, arg
        assert arg.lanes == lanes, arg
        if kind == "global":
            assert arg.read_only == read_only, arg


@pytest.mark.parametrize("kernel", ["pairs", "copy"])
def test_float64_array_for_float_pointer_is_refused(program, kernel):
    k = program.kernel(kernel)
    assert [a.describe() for a in k.signature.args][:2] == ["__global float32*"] * 2
    good = np.zeros(16, np.float32)
    wrong = np.arange(16, dtype=np.float64)
    extra = [np.int32(8)] if kernel == "copy" else []
    with pytest.raises(spirvjit.LaunchError, match=r"argument 1 \((a|src)\).*float64"):
        k(good, wrong, *extra, global_size=(8,) if kernel == "pairs" else (1,))
    with pytest.raises(spirvjit.LaunchError, match=r"argument 0 \((o|dst)\).*float64"):
        k(wrong, good, *extra, global_size=(8,) if kernel == "pairs" else (1,))


def test_right_results_with_read_only_input(program):
    a = np.arange(16, dtype=np.float32)
    a.flags.writeable = False  # a const buffer takes a read-only array
    o = np.zeros(8, np.float32)
    program.kernel("pairs")(o, a, global_size=(8,))
    np.testing.assert_array_equal(o, a[0::2] + a[1::2])
    dst = np.zeros(8, np.float32)
    program.kernel("copy")(dst, a, np.int32(8), global_size=(1,))
    np.testing.assert_array_equal(dst, a[:8])


def test_read_only_array_refused_where_the_kernel_writes(program):
    a = np.arange(16, dtype=np.float32)
    o = np.zeros(8, np.float32)
    o.flags.writeable = False
    with pytest.raises(spirvjit.LaunchError, match=r"argument 0 \(o\).*read-only"):
        program.kernel("pairs")(o, a, global_size=(8,))


def test_mixed_arguments_run(program):
    n = 4
    pair = np.dtype({"names": ["a", "b"], "formats": [np.int32, np.float32], "itemsize": 8})
    pairs = np.zeros(n, pair)
    pairs["a"] = [1, 2, 3, 4]
    args = [
        np.array([10.5, 20.5, 30.5, 40.5]),  # float64 for double*
        np.arange(4 * n, dtype=np.int32).reshape(n, 4),
        np.array([1, 2, 3, 4], np.float32),  # void*: any array, read as bytes
        np.array([5, 6, 7, 8], np.uint8),
        np.array([100, 200, 300, 400], np.uint64),
        pairs,
        np.array([1000.0], np.float32),
        spirvjit.LocalMemory(4),
        np.array([0.5, 1.5, 2.5, 3.5], np.float16),
        np.zeros(n, np.int64),
    ]
    for a in args:
        if isinstance(a, np.ndarray):
            a.flags.writeable = a is args[-1]
    program.kernel("mixed")(*args, global_size=(n,))
    raw = args[2].view(np.int8)[:n].astype(np.int64)
    expected = (
        args[0].astype(np.int64)
        + args[1][:, 3]
        + raw
        + args[3]
        + args[4].astype(np.int64)
        + pairs["a"]
        + 1000
        + args[8].astype(np.int64)
    )
    np.testing.assert_array_equal(args[-1], expected)
    with pytest.raises(spirvjit.LaunchError, match=r"argument 0 \(d\).*float32"):
        program.kernel("mixed")(args[0].astype(np.float32), *args[1:], global_size=(n,))


def test_keyword_arguments_by_source_name(program):
    """Keywords bind by the names the source gave (clang-22 used to leave them unnamed)."""
    a = np.arange(16, dtype=np.float32)
    o = np.zeros(8, np.float32)
    program.kernel("pairs")(a=a, o=o, global_size=(8,))
    np.testing.assert_array_equal(o, a[0::2] + a[1::2])
    dst = np.zeros(8, np.float32)
    program.kernel("copy")(dst, n=8, src=a, global_size=(1,))
    np.testing.assert_array_equal(dst, a[:8])
