"""Every registered kernel built by clang-22 and by clang-15 + llvm-spirv-15 must give
bit-identical results (NaNs compared as NaNs)."""

from __future__ import annotations

import pytest
from harness import run_case
from refs import assert_same_bits
from sources import CASES


@pytest.mark.parametrize("name", sorted(CASES))
def test_producers_agree(name):
    clang = run_case(name, "clang")
    translator = run_case(name, "translator")  # skips with the reason when it can't build
    assert clang.keys() == translator.keys()
    for key in clang:
        assert_same_bits(translator[key], clang[key], f"{name}:{key}")
