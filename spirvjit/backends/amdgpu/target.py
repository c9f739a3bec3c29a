"""AMD GPU target names: ``gfx942``, ``gfx90a:xnack+``, ``gfx9-4-generic`` (clang's
--offload-arch syntax). Light: importing it loads no driver and no code generator."""

from __future__ import annotations

import re

from ...target import Target, check_processor

TRIPLE = "amdgcn-amd-amdhsa"
# Target features an AMD target name may switch with a trailing + or - (clang's
# --offload-arch syntax: gfx90a:xnack+, gfx942:sramecc-:xnack+).
FEATURES = ("sramecc", "xnack", "cumode", "wavefrontsize64")
_NAME = re.compile(r"^(gfx[0-9a-z-]+)((?::[a-z0-9]+[+-])*)$")


def parse(name: str) -> Target | None:
    """The AMD target ``name``, None if it is not an AMD name; ValueError if it is one
    that is malformed or names a processor or feature LLVM does not know."""
    match = _NAME.match(name)
    if match is None:
        if name.startswith("gfx"):
            raise ValueError(f"{name!r} is not a valid AMD target name; write gfxNNN[:feature±]...")
        return None
    arch, flags = match.group(1), [f for f in match.group(2).split(":") if f]
    unknown = [f for f in flags if f[:-1] not in FEATURES]
    if unknown:
        raise ValueError(
            f"{name!r}: unknown AMD target feature {unknown[0][:-1]!r}; "
            f"features: {', '.join(FEATURES)} (e.g. gfx90a:xnack+)"
        )
    features = ",".join(f[-1] + f[:-1] for f in flags)
    check_processor(TRIPLE, arch, features, name)
    return Target("amdgpu", TRIPLE, arch, features)


def name_of(target: Target) -> str:
    """The name ``parse`` reads back: the processor, then each feature as ``:xnack+``."""
    if not target.features:
        return target.arch
    flags = [f"{f[1:]}{f[0]}" for f in target.features.split(",")]
    return ":".join([target.arch, *flags])
