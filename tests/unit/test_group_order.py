"""The CPU runner's walk over work-groups (backends/cpu/abi.py, _group_of_index).

The runner claims linear group indices and maps each to (gx, gy, gz); since issue 19 the
walk goes in x bands of GROUP_BAND groups, top to bottom, so groups that share input
columns (tiled gemm) run close together. These tests JIT the mapping itself and check that
it is a bijection onto the grid (every group runs exactly once, whatever the shape), that
it is row-major when there is one row of groups, and that 2-D grids are walked in bands;
plus one end-to-end launch that reads every group id back.
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from llvmlite import binding as llvm
from llvmlite import ir

import spirvjit
from spirvjit.backends.cpu import abi

I64 = ir.IntType(64)


@pytest.fixture(scope="module")
def group_of_index():
    """A native (index, groups_x, groups_y, out[3]) -> None built from _group_of_index."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = ir.Module("group_order")
    ptr = ir.PointerType(I64)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [I64, I64, I64, I64, ptr]), "walk")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    index, groups_x, groups_y, band, out = fn.args
    for slot, value in enumerate(abi._group_of_index(b, index, groups_x, groups_y, band)):
        b.store(value, b.gep(out, [ir.Constant(I64, slot)]))
    b.ret_void()
    target = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(module)), target)
    engine.finalize_object()
    i64 = ctypes.c_int64
    native = ctypes.CFUNCTYPE(None, i64, i64, i64, i64, ctypes.POINTER(i64))(
        engine.get_function_address("walk")
    )

    def walk(groups: tuple[int, int, int], band: int = abi.GROUP_BAND) -> list[tuple]:
        out = (ctypes.c_int64 * 3)()
        order = []
        for i in range(groups[0] * groups[1] * groups[2]):
            native(i, groups[0], groups[1], band, out)
            order.append(tuple(out))
        return order

    walk.engine = engine  # keeps the code alive as long as the fixture
    return walk


@pytest.mark.parametrize("band", [1, 3, abi.GROUP_BAND, 64])
@pytest.mark.parametrize(
    "groups",
    [(1, 1, 1), (64, 64, 1), (8, 3, 1), (17, 5, 1), (3, 7, 2), (9, 1, 4), (24, 2, 3), (100, 1, 1)],
)
def test_every_group_exactly_once(group_of_index, groups, band):
    order = group_of_index(groups, band)
    gx, gy, gz = groups
    expected = {(x, y, z) for z in range(gz) for y in range(gy) for x in range(gx)}
    assert len(order) == len(expected)
    assert set(order) == expected


def test_one_row_of_groups_is_row_major(group_of_index):
    assert group_of_index((37, 1, 2)) == [(x, 0, z) for z in range(2) for x in range(37)]


def test_band_as_wide_as_the_grid_is_row_major(group_of_index):
    # What the runner passes for one-row work-groups (streaming kernels keep long rows).
    rows = [(x, y, z) for z in range(2) for y in range(5) for x in range(19)]
    assert group_of_index((19, 5, 2), band=19) == rows


def test_two_d_grid_walks_in_bands(group_of_index):
    band = abi.GROUP_BAND
    groups = (2 * band + 3, 4, 1)  # two full bands and a narrower last one
    order = group_of_index(groups)
    first_band = [(x, y, 0) for y in range(4) for x in range(band)]
    assert order[: 4 * band] == first_band
    second_band = [(band + x, y, 0) for y in range(4) for x in range(band)]
    assert order[4 * band : 8 * band] == second_band
    assert order[8 * band :] == [(2 * band + x, y, 0) for y in range(4) for x in range(3)]


@pytest.mark.parametrize("local_size", [(4, 2), (4, 1)])  # banded walk, row-major walk
def test_launch_reads_back_every_group_id(local_size):
    # A grid whose x group count is not a multiple of the band, with a barrier kernel
    # (stepped work-group function) writing its group ids: each element exactly its own.
    program = spirvjit.compile_opencl(
        """
        kernel void ids(global int *out) {
            local int seen;
            if (get_local_id(0) == 0 && get_local_id(1) == 0)
                seen = get_group_id(0) * 1000 + get_group_id(1);
            barrier(CLK_LOCAL_MEM_FENCE);
            out[get_global_id(1) * get_global_size(0) + get_global_id(0)] = seen;
        }
        """
    )
    lx, ly = local_size
    width, height = lx * (2 * abi.GROUP_BAND + 3), ly * 5
    out = np.full((height, width), -1, np.int32)
    program.kernel("ids")(out, global_size=(width, height), local_size=local_size)
    ys, xs = np.mgrid[0:height, 0:width]
    np.testing.assert_array_equal(out, (xs // lx) * 1000 + ys // ly)
