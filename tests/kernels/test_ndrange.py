"""Work-item built-ins in 1, 2 and 3 dimensions, with explicit and runtime-chosen local sizes,
non-uniform last work-groups (OpenCL 2.0) and global offsets."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from refs import assert_same_bits
from sources import NDRANGE_SHAPES


def _reference(g, loc, off):
    """Row per work-item, ordered x fastest, in the kernel's 24-value layout."""
    dims = len(g)
    g3 = list(g) + [1] * (3 - dims)
    l3 = list(loc) + [1] * (3 - dims)
    o3 = list(off or (0,) * dims) + [0] * (3 - dims)
    rows = []
    for z, y, x in itertools.product(range(g3[2]), range(g3[1]), range(g3[0])):
        pos = (x, y, z)
        gid = [pos[d] + o3[d] for d in range(3)]
        grp = [pos[d] // l3[d] for d in range(3)]
        lid = [pos[d] % l3[d] for d in range(3)]
        ngrp = [-(-g3[d] // l3[d]) for d in range(3)]
        # Non-uniform: the last group in a dimension holds the remainder.
        lsz = [
            l3[d] if grp[d] < ngrp[d] - 1 or g3[d] % l3[d] == 0 else g3[d] % l3[d] for d in range(3)
        ]
        row = [dims, *g3, *gid, *lsz, *l3, *lid, *ngrp, *grp]
        row.append(x + g3[0] * (y + g3[1] * z))  # global linear id: offset excluded
        lin = lid[0] + lsz[0] * (lid[1] + lsz[1] * lid[2])
        row.append(lin + (o3[0] + 10 * o3[1] + 100 * o3[2]) * 1000000)
        rows.append(row)
    return np.array(rows, np.uint64).reshape(-1)


@pytest.mark.parametrize(
    "index",
    [i for i, s in enumerate(NDRANGE_SHAPES) if s[1] is not None],
    ids=lambda i: "g{}_l{}_o{}".format(*NDRANGE_SHAPES[i]),
)
def test_work_item_builtins_explicit_local_size(run, index):
    g, loc, off = NDRANGE_SHAPES[index]
    assert_same_bits(run("ndrange")[f"shape{index}"], _reference(g, loc, off))


@pytest.mark.parametrize(
    "index",
    [i for i, s in enumerate(NDRANGE_SHAPES) if s[1] is None],
    ids=lambda i: f"g{NDRANGE_SHAPES[i][0]}_o{NDRANGE_SHAPES[i][2]}",
)
def test_work_item_builtins_runtime_local_size(run, index):
    g, _, off = NDRANGE_SHAPES[index]
    got = run("ndrange")[f"shape{index}"].reshape(-1, 7)
    dims = len(g)
    g3 = list(g) + [1] * (3 - dims)
    o3 = list(off or (0,) * dims) + [0] * (3 - dims)
    assert (got[:, 0] == dims).all()
    assert (got[:, 1:4] == g3).all()
    # Every work-item ran exactly once: each row holds its own global id.
    expected_ids = np.array(
        [
            [x + o3[0], y + o3[1], z + o3[2]]
            for z, y, x in itertools.product(range(g3[2]), range(g3[1]), range(g3[0]))
        ]
    )
    assert_same_bits(got[:, 4:7], expected_ids.astype(np.uint64))
