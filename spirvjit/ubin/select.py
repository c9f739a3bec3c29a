"""Which native variant of a unified binary a device runs, and why.

Order: a variant built for exactly this device, then the best compatible generic one
(the highest x86-64 psABI level whose features the host has; "generic" on other
architectures), then none: the kernels JIT from the SPIR-V. A variant only counts when
it was built from this module and these spec constants by this spirvjit compiler and
LLVM, because its symbol names and code depend on them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .. import config
from ..cache.key import compiler_digest, llvm_version
from ..target import X86_64_LEVELS, Target, enabled_features
from .format import Variant

FORCE_JIT_VAR = "SPIRVJIT_FORCE_JIT"  # read by config.force_jit
_GENERIC_RANK = -1  # below every x86-64 level
_EXACT_RANK = 1 << 10  # above every level


def spec_key(spec_constants: Mapping[int, object] | Sequence[tuple[int, object]]) -> str:
    """Spec constants as Program names its symbols after them (so 4 and 4.0 differ)."""
    items = spec_constants.items() if isinstance(spec_constants, Mapping) else spec_constants
    return repr(sorted(items))


@dataclass(frozen=True, slots=True)
class Choice:
    """The outcome of selection.

    ``variant`` is None when the kernels JIT from the SPIR-V; ``how`` is "exact",
    "compatible" or "jit"; ``reason`` says why in words; ``rejected`` lists every
    variant passed over, with why.
    """

    variant: Variant | None
    how: str
    reason: str
    rejected: tuple[tuple[str, str], ...] = ()


def _rank(variant: Target, host: Target) -> int | None:
    """How good a non-exact variant is on ``host`` (higher is better), None if unusable."""
    if variant.kind != host.kind or variant.triple != host.triple:
        return None
    host_features = enabled_features(host.features)
    if not enabled_features(variant.features) <= host_features:
        return None
    if variant.arch in X86_64_LEVELS and host.triple.startswith("x86_64"):
        if not X86_64_LEVELS[variant.arch] <= host_features:
            return None
        return list(X86_64_LEVELS).index(variant.arch)
    if variant.arch == "generic":
        return _GENERIC_RANK
    return None  # built for another named CPU: it may use what this one lacks


def stale_reason(variant: Variant, spirv_sha256: str, spec: str) -> str | None:
    """Why ``variant`` cannot serve this module and build of spirvjit, or None."""
    if variant.spirv_sha256 != spirv_sha256:
        return "built from a different SPIR-V module"
    if spec_key(variant.spec_constants) != spec:
        return f"built for spec constants {spec_key(variant.spec_constants)}, loading with {spec}"
    if variant.compiler_digest != compiler_digest():
        return "built by a different spirvjit compiler (compiler digest differs)"
    if variant.llvm_version != llvm_version():
        return f"built with LLVM {variant.llvm_version}, this is LLVM {llvm_version()}"
    return None


def choose(
    variants: Sequence[Variant],
    host: Target,
    spirv_sha256: str,
    spec_constants: Mapping[int, object],
) -> Choice:
    """Picks the variant to run on ``host`` for the module with digest ``spirv_sha256``.

    Honors SPIRVJIT_FORCE_JIT. Never raises: an unusable variant is only rejected.
    """
    if config.force_jit():
        names = tuple((v.name, f"{FORCE_JIT_VAR} is set") for v in variants)
        return Choice(None, "jit", f"{FORCE_JIT_VAR} is set", names)
    spec = spec_key(spec_constants)
    rejected: list[tuple[str, str]] = []
    usable: list[tuple[int, Variant]] = []
    for variant in variants:
        why = stale_reason(variant, spirv_sha256, spec) or variant.problem
        rank = _EXACT_RANK if variant.target == host else _rank(variant.target, host)
        if why is None and rank is None:
            why = f"not runnable on this {host.arch} host"
        if why is not None:
            rejected.append((variant.name, why))
        else:
            usable.append((rank, variant))
    if not usable:
        reason = "no usable native variant" if variants else "no native variant"
        return Choice(None, "jit", reason + ": JIT from the SPIR-V", tuple(rejected))
    rank, chosen = max(usable, key=lambda pair: pair[0])  # the first of equals: deterministic
    rejected += [(v.name, f"{chosen.name} is a better match") for _, v in usable if v is not chosen]
    if rank == _EXACT_RANK:
        return Choice(chosen, "exact", f"built for this CPU ({host.arch})", tuple(rejected))
    reason = f"{chosen.target.arch} code runs on this {host.arch} host (it has the features)"
    return Choice(chosen, "compatible", reason, tuple(rejected))
