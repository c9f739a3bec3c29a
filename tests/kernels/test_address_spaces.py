"""to_global / to_local / to_private (OpenCL C 3.0 §6.15.14): a pointer into another
address space gives NULL, for pointers to buffers, __local arrays (static and argument),
private scalars and arrays, in kernels with and without barriers (whose private variables
live in per-work-item frames) and through a helper that is not inlined."""

from __future__ import annotations

import numpy as np
import pytest
from harness import build

import spirvjit

SOURCE = r"""
/* One bit per (query, pointer) pair: bit 3*k + q where k is the pointer and q the query
   (0 global, 1 local, 2 private); set when the query returns non-NULL. */
__attribute__((noinline)) int classify(generic int* p) {
    return (to_global(p) != 0) | (to_local(p) != 0) << 1 | (to_private(p) != 0) << 2;
}

int inline_classify(generic int* p) {
    return (to_global(p) != 0) | (to_local(p) != 0) << 1 | (to_private(p) != 0) << 2;
}

kernel void spaces(global int* a, global int* out, local int* larg) {
    local int lstat[4];
    int priv = (int)get_global_id(0);
    int parr[3] = {1, 2, 3};
    size_t i = get_global_id(0);
    int bits = 0;
    generic int* ptrs[5] = {a + i, lstat + 1, larg + 2, &priv, parr + 2};
    for (int k = 0; k < 5; ++k) bits |= classify(ptrs[k]) << (3 * k);
    for (int k = 0; k < 5; ++k) bits |= inline_classify(ptrs[k]) << (15 + 3 * k);
    out[i] = bits;
    /* The non-NULL result is the same pointer. */
    *to_private(&priv) += 1;
    *to_local(larg + get_local_id(0)) = priv;
    *to_global(a + i) += *to_private(parr + 1);
    lstat[get_local_id(0) % 4] = 0;
    out[get_global_size(0) + i] = larg[get_local_id(0)];
}

kernel void spaces_barrier(global int* a, global int* out, local int* larg) {
    local int lstat[64];
    int priv = (int)get_global_id(0);
    int parr[3] = {4, 5, 6};
    size_t i = get_global_id(0), l = get_local_id(0);
    lstat[l] = priv;
    larg[l] = -priv;
    barrier(CLK_LOCAL_MEM_FENCE);
    int bits = 0;
    generic int* ptrs[5] = {a + i, lstat + (l + 1) % 64, larg, &priv, parr};
    for (int k = 0; k < 5; ++k) bits |= classify(ptrs[k]) << (3 * k);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = 0; k < 5; ++k) bits |= inline_classify(ptrs[k]) << (15 + 3 * k);
    out[i] = bits;
    out[get_global_size(0) + i] = *to_local(lstat + (l + 1) % get_local_size(0))
                                  + *to_private(parr + 2);
}
"""

# Pointer k lives in space q: a buffer (global), two __local ones, two private ones.
EXPECTED_SPACES = [0, 1, 1, 2, 2]
EXPECTED = sum(1 << (3 * k + q) for k, q in enumerate(EXPECTED_SPACES))
EXPECTED |= EXPECTED << 15


@pytest.fixture
def prog(producer):
    return build(SOURCE, options=("-cl-std=CL3.0",), producer=producer)


@pytest.mark.parametrize("n", [8, 4096 + 64])  # one inline group; many groups on all threads
def test_to_space_gives_null_for_other_spaces(prog, n):
    a = np.arange(n, dtype=np.int32)
    out = np.zeros(2 * n, np.int32)
    prog.kernel("spaces")(a, out, spirvjit.LocalMemory(64 * 4), global_size=n, local_size=8)
    bits = out[:n]
    wrong = np.flatnonzero(bits != EXPECTED)
    assert wrong.size == 0, [f"{b:030b}" for b in bits[wrong[:3]]] + [f"{EXPECTED:030b}"]
    np.testing.assert_array_equal(a, np.arange(n) + 2)
    np.testing.assert_array_equal(out[n:], np.arange(n) + 1)


def test_to_space_in_barrier_kernel(prog):
    n, local = 256, 64
    a = np.zeros(n, np.int32)
    out = np.zeros(2 * n, np.int32)
    prog.kernel("spaces_barrier")(
        a, out, spirvjit.LocalMemory(local * 4), global_size=n, local_size=local
    )
    np.testing.assert_array_equal(out[:n], np.full(n, EXPECTED, np.int32))
    i = np.arange(n)
    neighbour = (i // local) * local + (i % local + 1) % local
    np.testing.assert_array_equal(out[n:], neighbour + 6)
