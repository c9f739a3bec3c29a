"""Structured control flow: if/else chains, for/while/do-while with break/continue, switch
with fallthrough, nested loops, early return and non-inlined helper functions.
(OpenCL C forbids recursion, so there is no recursion test.)"""

from __future__ import annotations

import numpy as np
from refs import assert_same_bits


def test_if_else_chain(run):
    r = run("control_flow")
    x = r["mixed"]
    expected = np.select([x < -100, x < 0, x == 0], [1, 2, 3], 4).astype(np.int32)
    assert_same_bits(r["branches"], expected)


def _loops_ref(n):
    s = sum(j for j in range(n) if j % 3 != 0 and j <= 40)
    k = 0
    while k * k < n:
        k += 1
    d, m = 0, n
    while True:
        d, m = d + 1, int(m / 2)
        if m <= 0:
            break
    return [s, k, d]


def test_for_while_do_while_break_continue(run):
    r = run("control_flow")
    expected = np.array([_loops_ref(int(n)) for n in np.abs(r["small"]) * 3], np.int32)
    assert_same_bits(r["loops"], expected.reshape(-1))


def _switch_ref(v):
    if v == 0:
        return 11
    if v == 1:
        return 10
    if v in (2, 3):
        return 100
    if v == 7:
        return 1007
    return 1000


def test_switch_with_fallthrough(run):
    r = run("control_flow")
    assert_same_bits(r["switches"], np.array([_switch_ref(v) for v in r["sw"]], np.int32))


def test_nested_loops(run):
    r = run("control_flow")
    expected = [
        sum(x * y for x in range(n) for y in range(x + 1) if (x + y) % 2 == 0)
        for n in np.abs(r["small"])
    ]
    assert_same_bits(r["nested"], np.array(expected, np.int32))


def test_early_return(run):
    r = run("control_flow")
    x = r["mixed"]
    assert_same_bits(r["early_return"], np.where(x < 0, -1, x * 2).astype(np.int32))


def _collatz(n):
    steps = 0
    while n != 1:
        n = 3 * n + 1 if n & 1 else n // 2
        steps += 1
    return steps


def test_noinline_helper_functions(run):
    r = run("control_flow")
    got = r["helpers"].reshape(-1, 3)
    n = len(got)
    assert_same_bits(got[:, 0], np.array([_collatz(i + 1) for i in range(n)], np.int32))
    assert (got[:, 1] == r["mixed"].min()).all() and (got[:, 2] == r["mixed"].max()).all()
