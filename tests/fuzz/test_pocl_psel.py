"""PoCL 3.1 loses the store of a private variable whose address a pointer select takes
(findings/pocl_bugs.cl ``pointer_select_in_work_group``; differential seed 31001 count 10
kernel 0): the reference gets the same update written without the pointer
(``generator.REFERENCE_WORKAROUNDS`` "pocl_psel"), spirvjit keeps the pointer."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

from .differential import run
from .generator import REFERENCE_WORKAROUNDS, generate
from .test_fuzz import _missing

FINDING = (31001, 10, 0)  # seed, count, kernel: "hash differs in segments [1]" before
M64 = (1 << 64) - 1


def _hmix(h: int, v: int) -> int:
    return (((h ^ v) * 0x100000001B3) + (h >> 29)) & M64


def test_the_reference_spelling_drops_the_pointer_only():
    seed, count, index = FINDING
    plain = generate(seed, count).kernels[index].source()
    ref = generate(seed, count, REFERENCE_WORKAROUNDS).kernels[index].source()
    assert "? &v3 : &x5;" in plain and "*pp7 = *pp7 ^ x5;" in plain
    assert "&v3" not in ref and "*pp7" not in ref
    assert "if (pp7) v3 = v3 ^ x5; else x5 = x5 ^ x5;" in ref
    # the same condition, evaluated once
    cond = re.search(r"short \*pp7 = (\(.*\)) \? &v3 : &x5;", plain)[1]
    assert f"const int pp7 = {cond};" in ref


@pytest.mark.parametrize("producer", ["clang", "translator"])
def test_spirvjit_gives_the_spec_result_of_the_pocl_reproducer(producer):
    """spirvjit on the reproducer: v and x as the spec says (oclgrind agrees), the same on
    every launch (PoCL's result changes from run to run)."""
    import spirvjit
    from spirvjit.toolchain import find_tool

    if producer == "translator" and not (find_tool("clang15") and find_tool("llvm-spirv")):
        pytest.skip("clang-15 / llvm-spirv-15 not installed")
    path = os.path.join(os.path.dirname(__file__), "findings", "pocl_bugs.cl")
    with open(path) as f:
        src = f.read()
    src = src[src.index("static ulong hmix") :]
    kernel = spirvjit.compile_opencl(src, ["-cl-std=CL3.0"], producer=producer).kernel(
        "pointer_select_in_work_group"
    )
    v = -4449 & M64
    expected = [
        _hmix(_hmix(_hmix(2754743990, v), 0), 0)  # p = &x: x ^= x
        if lid % 3 == 0
        else _hmix(_hmix(_hmix(2754743990, 0), v), v)  # p = &v: v ^= x (x == v)
        for lid in range(12)
    ]
    for _ in range(3):
        out = np.zeros(12, np.uint64)
        kernel(out, global_size=(3, 4), local_size=(3, 4))
        assert out.tolist() == expected


# Hung for its whole 300 s in clean-clone CI runs after test_fuzz's tiered tests, which run
# PoCL in the pytest process: the tester's workers were forked from it and inherited its
# PoCL context without PoCL's threads. The workers now come from a fork server (test_pool).
def test_the_finding_agrees_with_pocl():
    # Failed before: both producers differed from PoCL in 6 to 9 work-items (PoCL's).
    why = _missing()
    if why:
        pytest.skip(why)
    seed, count, index = FINDING
    stats = run(
        count,
        seed,
        jobs=1,
        batch_size=count,
        only=[index],
        classify_known=False,
        # One program: PoCL's build of it took over the default 30 s on a loaded 2-core CI
        # machine (reported as a hang).
        timeout=300.0,
        log=lambda _: None,
    )
    assert stats["programs"] == 1
    # Unexplained only: PoCL 3.1 changes its result between runs on some programs (a
    # clean-clone CI met one here once), which the tester puts down to PoCL where spirvjit's
    # results agree throughout (differential.POCL_CHANGED).
    assert not stats["unexplained"], [(f.producer, f.detail) for f in stats["findings"]]
