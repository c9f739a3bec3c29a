"""One kernel that cannot be translated must not make the other kernels of its module
unusable: the error belongs to the kernel that reaches the construct (directly or through
a helper), at its first compile or launch, and names the construct."""

from __future__ import annotations

import numpy as np
import pytest
from harness import build

import spirvjit

SOURCE = r"""
int defined_elsewhere(int x);   /* imported, never linked: cannot be translated */

int helper(int x) { return defined_elsewhere(x) + 1; }

kernel void good(global int* a) { a[get_global_id(0)] += 1; }

kernel void bad_direct(global int* a) { a[get_global_id(0)] = defined_elsewhere(a[0]); }

kernel void bad_through_helper(global int* a) { a[get_global_id(0)] = helper(a[0]); }

kernel void bad_barrier(global int* a) {
    local int t[4];
    t[get_local_id(0)] = a[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    a[get_global_id(0)] = defined_elsewhere(t[0]);
}

kernel void good_barrier(global int* a) {
    local int t[4];
    t[get_local_id(0)] = a[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    a[get_global_id(0)] = t[3 - get_local_id(0)];
}
"""


def test_untranslatable_kernel_does_not_poison_its_module(producer):
    prog = build(SOURCE, producer=producer)
    a = np.arange(8, dtype=np.int32)
    for name in ("bad_direct", "bad_through_helper", "bad_barrier"):
        for _attempt in range(2):  # the same error each time, not a half-built kernel
            with pytest.raises(spirvjit.SpirvError, match=f"kernel {name} .*defined_elsewhere"):
                prog.kernel(name)(a, global_size=8, local_size=4)
    np.testing.assert_array_equal(a, np.arange(8))  # nothing ran
    prog.kernel("good")(a, global_size=8, local_size=4)
    np.testing.assert_array_equal(a, np.arange(1, 9))
    prog.kernel("good_barrier")(a, global_size=8, local_size=4)
    np.testing.assert_array_equal(a, np.array([4, 3, 2, 1, 8, 7, 6, 5]))
