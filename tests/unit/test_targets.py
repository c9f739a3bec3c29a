"""Target names: CPU levels, AMD and NVIDIA GPUs, checked against the bundled LLVM."""

from __future__ import annotations

import pytest

from spirvjit.backends.amdgpu.target import TRIPLE as AMDGPU_TRIPLE
from spirvjit.backends.nvptx.target import TRIPLE as NVPTX_TRIPLE
from spirvjit.target import llvm_processors, parse_target, parse_targets


@pytest.mark.parametrize(
    "name, kind, triple, arch, features",
    [
        ("gfx942", "amdgpu", AMDGPU_TRIPLE, "gfx942", ""),
        ("gfx90a:xnack+", "amdgpu", AMDGPU_TRIPLE, "gfx90a", "+xnack"),
        ("gfx942:sramecc-:xnack+", "amdgpu", AMDGPU_TRIPLE, "gfx942", "-sramecc,+xnack"),
        ("gfx1100", "amdgpu", AMDGPU_TRIPLE, "gfx1100", ""),
        ("gfx1201", "amdgpu", AMDGPU_TRIPLE, "gfx1201", ""),
        ("gfx9-4-generic", "amdgpu", AMDGPU_TRIPLE, "gfx9-4-generic", ""),
        ("sm_80", "nvptx", NVPTX_TRIPLE, "sm_80", ""),
        ("sm_90a", "nvptx", NVPTX_TRIPLE, "sm_90a", ""),
        ("x86-64-v3", "cpu", None, "x86-64-v3", None),
    ],
)
def test_target_names(name, kind, triple, arch, features):
    target = parse_target(name)
    assert (target.kind, target.arch) == (kind, arch)
    if triple is not None:
        assert target.triple == triple and target.features == features
        assert parse_target(target.name) == target  # the name reads back


def test_gpu_targets_come_from_llvm():
    # The list is LLVM's own, so processors LLVM adds need no change here.
    assert {"gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"} <= set(
        llvm_processors(AMDGPU_TRIPLE)
    )
    assert {"sm_80", "sm_90", "sm_90a"} <= set(llvm_processors(NVPTX_TRIPLE))


@pytest.mark.parametrize(
    "name, message",
    [
        ("gfx9999", r"not a processor LLVM knows for amdgcn-amd-amdhsa; known: .*gfx942"),
        ("sm_99", r"not a processor LLVM knows for nvptx64-nvidia-cuda; known: .*sm_90"),
        ("gfx90a:foo+", r"unknown AMD target feature 'foo'"),
        ("sm90", r"not a valid NVIDIA target name"),
        ("pentium-ii", r"unknown CPU target"),
    ],
)
def test_bad_target_names_say_what_is_valid(name, message):
    with pytest.raises(ValueError, match=message):
        parse_target(name)


def test_target_lists():
    assert [t.name for t in parse_targets("gfx942, sm_90,x86-64")] == ["gfx942", "sm_90", "x86-64"]
    with pytest.raises(ValueError, match="no target named"):
        parse_targets(" , ")
