"""NVIDIA GPU target names: ``sm_80``, ``sm_90``, ``sm_90a``. Light: importing it loads
no driver and no code generator."""

from __future__ import annotations

import re

from ...target import Target, check_processor

TRIPLE = "nvptx64-nvidia-cuda"
_NAME = re.compile(r"^sm_[0-9]+[af]?$")


def parse(name: str) -> Target | None:
    """The NVIDIA target ``name``, None if it is not an NVIDIA name; ValueError if it is
    one that is malformed or names a processor LLVM does not know."""
    if not _NAME.match(name):
        if name.startswith("sm"):
            raise ValueError(f"{name!r} is not a valid NVIDIA target name; write sm_NN[a]")
        return None
    check_processor(TRIPLE, name, "", name)
    return Target("nvptx", TRIPLE, name, "")


def name_of(target: Target) -> str:
    return target.arch
