"""Memory: private arrays, __constant tables, program-scope __global variables, structs
(arrays of structs, by value, whole-struct copies), pointer arithmetic, the generic address
space, to_global/to_private, vload/vstore (n = 2, 3, 4, 8, 16) and half loads/stores."""

from __future__ import annotations

import numpy as np
import pytest
from refs import assert_same_bits, round_array


def test_private_array_dynamic_index(run):
    r = run("memory")
    a = r["a"].astype(np.int64)
    expected = a * (a & 15) + a * ((a >> 4) & 15)
    assert_same_bits(r["private_array"], expected.astype(np.int32))


def test_constant_tables(run):
    r = run("memory")
    a = r["a"]
    table = np.array([[1, 2, 3, 4], [-1, -2, -3, -4]], np.float32)
    primes = np.array([2, 3, 5, 7, 11, 13, 17, 19], np.float32)
    assert_same_bits(r["constant_tables"], table[a & 1] * primes[a & 7][:, None])


def test_program_scope_global_variables(run):
    # Initialised from the program; one work-item reads, updates and rereads them.
    assert_same_bits(run("memory")["program_globals"], np.array([42, 47, 13], np.int32))


def test_array_of_structs(run):
    r = run("memory")
    c, i, d, s, f = (r[f"recs_in.{k}"] for k in "cidsf")
    expected = c + i + d + s[:, 1] + f[:, 2].astype(np.float64)
    # Evaluated left to right in C: char+int is int, + double, + short, + float -> double.
    expected = ((c.astype(np.int32) + i).astype(np.float64) + d + s[:, 1]) + f[:, 2]
    assert_same_bits(r["struct_array"], expected)
    assert_same_bits(r["recs_out.c"], (c + 1).astype(np.int8))
    assert_same_bits(r["recs_out.i"], -i)
    assert_same_bits(r["recs_out.d"], d)
    assert_same_bits(r["recs_out.s"], s)
    assert_same_bits(r["recs_out.f"], f[:, ::-1])


def test_struct_by_value(run):
    r = run("memory")
    gid = np.arange(len(r["struct_by_value"]), dtype=np.int64)
    expected = -7 + 2 + (1 << 40) * gid  # (long)2.75f truncates to 2
    assert_same_bits(r["struct_by_value"], expected)
    # The same struct passed as raw bytes.
    assert_same_bits(r["struct_by_value_bytes"], expected)


def test_struct_assignment_copies(run):
    r = run("memory")
    for k in "cidsf":
        assert_same_bits(r[f"struct_copy.{k}"], r[f"recs_out.{k}"][::-1], k)


def test_pointer_arithmetic(run):
    r = run("memory")
    n = len(r["pointer_arith"])
    expected = r["pa_in"].reshape(n, 4).sum(axis=1) + 4 * (np.arange(n) + 1)
    assert_same_bits(r["pointer_arith"], expected.astype(np.int32))


def test_generic_address_space(run):
    r = run("generic_address_space")
    got = r["generic_ptr"].reshape(-1, 2)
    i = np.arange(len(got))
    assert_same_bits(got[:, 0], r["gp_in"].reshape(-1, 3).sum(axis=1).astype(np.int32))
    assert_same_bits(got[:, 1], (3 * i + 3).astype(np.int32))


def test_to_global_to_private(run):
    r = run("generic_address_space")
    got = r["addrspace_cast"].reshape(-1, 2)
    # Bit 1: to_global(global ptr) != 0; bit 4: to_private(private ptr) != 0.
    assert_same_bits(got[:, 0] & 5, np.full(len(got), 5, np.int32))
    assert_same_bits(got[:, 1], np.full(len(got), 7, np.int32))
    # The store through to_global lands.
    assert_same_bits(r["addrspace_cast_a"], np.arange(1, len(got) + 1, dtype=np.int32))


def test_to_global_of_private_pointer_is_null(run):
    got = run("generic_address_space")["addrspace_cast"].reshape(-1, 2)
    # Bit 2: to_private(global ptr) == 0; bit 8: to_global(private ptr) == 0.
    assert_same_bits(got[:, 0] & 10, np.full(len(got), 10, np.int32))


def test_vload_vstore(run):
    r = run("vload_vstore")
    a, o, n = r["a"], r["o"], 64
    i = np.arange(n)[:, None]

    def vl(width, base):
        return a[base + width * i + np.arange(width)]

    assert_same_bits(o[: 2 * n], (vl(2, 1) + 1).reshape(-1))
    assert_same_bits(o[2 * n : 5 * n], (vl(3, 2) * 2).reshape(-1))
    assert_same_bits(o[5 * n : 9 * n], (vl(4, 0) - 3).reshape(-1))
    assert_same_bits(o[9 * n : 17 * n], vl(8, 3)[:, ::-1].reshape(-1))
    assert_same_bits(o[17 * n :], (vl(16, 1) ^ 0x55).reshape(-1))
    f = r["f"]
    assert_same_bits(r["fo"], (f[1 + 3 * i + np.arange(3)] * np.float32(0.5)).reshape(-1))


def test_vload_half_variants(run):
    r = run("half_loads_stores")
    h, ho, n = r["h"].astype(np.float32), r["ho"], 64  # half -> float is exact
    i = np.arange(n)[:, None]
    assert_same_bits(ho[:n], h[:n])
    assert_same_bits(ho[n : 5 * n], h[4 * i + np.arange(4)].reshape(-1))
    assert_same_bits(ho[5 * n : 8 * n], h[1 + 3 * i + np.arange(3)].reshape(-1))
    assert_same_bits(ho[8 * n :], h[4 * i + np.arange(4)].reshape(-1))


@pytest.mark.parametrize("slot,mode", [(0, "rte"), (1, "rte"), (2, "rtz"), (3, "rtp"), (4, "rtn")])
def test_vstore_half_rounding_modes(run, slot, mode):
    r = run("half_loads_stores")
    fs, hs, n = r["fs"], r["hs"], 64
    expected = round_array(fs[:n], np.float16, mode)
    expected = np.where(fs[:n] == 0, fs[:n].astype(np.float16), expected)
    assert_same_bits(hs[slot * n : (slot + 1) * n], expected, f"vstore_half slot {slot}")


def test_vstore_half_vector_and_double_variants(run):
    r = run("half_loads_stores")
    fs, ds, hs, n = r["fs"], r["ds"], r["hs"], 64
    assert_same_bits(hs[5 * n : 6 * n], round_array(ds, np.float16, "rtz"), "double rtz")
    assert_same_bits(hs[6 * n : 10 * n], round_array(fs, np.float16, "rtp"), "half4 rtp")
    assert_same_bits(hs[10 * n :], round_array(fs[: 2 * n], np.float16, "rtn"), "a_half2 rtn")
