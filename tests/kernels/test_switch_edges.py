"""OpSwitch whose case literals share a target block: dense switches with fall-through,
sparse switches and unsigned switches (case values above INT_MAX) in one kernel.

A phi after such a switch must have one incoming entry per CFG edge; LLVM rejected the IR
("PHINode should have one entry for each predecessor") before. Checked against a Python
model of C's switch on both producers.
"""

from __future__ import annotations

import numpy as np
from harness import build

SOURCE = r"""
kernel void switches(global const int* in, global int* out) {
    size_t i = get_global_id(0);
    int x = in[i];
    int r = 0;
    switch (x) {                 /* dense, shared targets, fall-through */
    case 0: case 1: case 2: r = 10; break;
    case 3: r = 20;
    case 4: case 5: r += 5; break;
    case 6: case 7: case 8: case 9: r = x * 3; break;
    default: r = -1;
    }
    int s;
    switch ((int)((uint)x * 1000u)) {  /* sparse (unsigned multiply: no overflow UB) */
    case -5000: case 3000: case 7000: s = 1; break;
    case 1000000: case 2000: s = 2; break;
    default: s = 0;
    }
    uint u = (uint)x;
    int t;
    switch (u) {                 /* unsigned, values above INT_MAX */
    case 0xFFFFFFFFu: case 0x80000000u: t = 7; break;
    case 1u: case 2u: t = 8; break;
    default: t = 9;
    }
    long w = x;
    long v;
    switch (w) {                 /* 64-bit selector, shared default target */
    case 0x100000000L: case -1L: v = 3; break;
    case 5L: default: v = 4; break;
    }
    out[i] = r * 1000 + s * 100 + t * 10 + (int)v;
}
"""


def model(x: int) -> int:
    if x in (0, 1, 2):
        r = 10
    elif x == 3:
        r = 25
    elif x in (4, 5):
        r = 5
    elif 6 <= x <= 9:
        r = 3 * x
    else:
        r = -1
    xm = (x * 1000 + 2**31) % 2**32 - 2**31  # uint multiply wraps, then reads as int
    s = 1 if xm in (-5000, 3000, 7000) else 2 if xm in (1000000, 2000) else 0
    u = x % 2**32
    t = 7 if u in (0xFFFFFFFF, 0x80000000) else 8 if u in (1, 2) else 9
    v = 3 if x == -1 else 4
    return r * 1000 + s * 100 + t * 10 + v


def test_switch_cases_sharing_targets(producer):
    prog = build(SOURCE, producer=producer)
    x = np.array([*range(-6, 12), 1000, -(2**31), 2**31 - 1, 7, 3, 2, -5, 1000, 2000], np.int32)
    out = np.zeros_like(x)
    prog.kernel("switches")(x, out, global_size=x.size)
    np.testing.assert_array_equal(out, np.array([model(int(v)) for v in x], np.int32))
