"""Running a clang offload bundle's native ``gfx*`` code object on the AMD GPU it matches.

``spirvjit.load()`` keeps a bundle's native entries (``Program.offload_code``) when the
native-code policy allows them (docs/threat-model.md). On an AMD GPU that an entry
matches (``offload_bundle.native_entry``), a kernel runs that code object as clang built
it, instead of the JIT's code from the amdgcnspirv entry:

* the kernel is found by its symbol, the SPIR-V entry point's name (both are clang's
  mangled name), in the code object's metadata note (``code_object.py``);
* its arguments are those of the SPIR-V signature when the note agrees with it (same
  count; a buffer where the signature has one; by-value arguments of the same size);
  otherwise the kernel JITs from the SPIR-V, with one warning. The launch passes the
  kernel's own arguments only: the HIP runtime fills the hidden ones (block counts,
  group sizes, ...) from the note;
* HIP kernels have no global offset, and clang builds them for whole work-groups
  (``.uniform_work_group_size``) of at most ``.max_flat_workgroup_size`` work-items:
  other launches are refused with the reason rather than run wrong.
"""

from __future__ import annotations

import logging

from ...errors import BinaryFormatError, LaunchError
from ...offload_bundle import BundleEntry
from ..gpu.launch import GpuKernel
from .code_object import KernelInfo, kernels

log = logging.getLogger("spirvjit")
_warned: set[tuple[str, str]] = set()


def disagreement(signature, info: KernelInfo | None) -> str | None:
    """Why the code object's kernel does not take the SPIR-V kernel's arguments, or None."""
    if info is None:
        return "the code object has no kernel of that name"
    explicit = info.explicit_args
    if len(explicit) != len(signature.args):
        return f"it takes {len(explicit)} arguments, the SPIR-V kernel {len(signature.args)}"
    for spec, arg in zip(signature.args, explicit, strict=True):
        if spec.kind in ("global", "constant"):
            ok = arg.value_kind == "global_buffer" and arg.size == 8
        elif spec.kind == "local":
            ok = False  # HIP kernels have no __local parameters
        else:
            ok = arg.value_kind == "by_value" and arg.size == spec.size
        if not ok:
            return (
                f"argument {spec.name or spec.index} is {arg.value_kind} of {arg.size} bytes "
                f"there, {spec.describe()} in the SPIR-V"
            )
    return None


class NativeHipKernel(GpuKernel):
    """A kernel of a bundle's native code object: packs the kernel's own arguments as
    GpuKernel does, without spirvjit's hidden ones, and refuses launches the code object
    was not built for."""

    def __init__(self, *args, info: KernelInfo, entry_id: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.info = info
        self.entry_id = entry_id  # which bundle entry runs: "hipv4-amdgcn-amd-amdhsa--gfx942"

    def hidden_params(self, global_size, local_size, offset, dims: int) -> list[bytes]:
        name = self.signature.name
        if any(offset):
            raise LaunchError(
                f"global_offset {tuple(offset[:dims])}: HIP kernels have no global offset "
                f"(native code of {self.entry_id})",
                name,
            )
        items = local_size[0] * local_size[1] * local_size[2]
        if items > self.info.max_flat_workgroup_size:
            raise LaunchError(
                f"groups of {items} work-items; its native code ({self.entry_id}) was built "
                f"for at most {self.info.max_flat_workgroup_size}",
                name,
            )
        partial = any(g % n for g, n in zip(global_size, local_size, strict=True))
        if partial and self.info.uniform_work_group_size:
            raise LaunchError(
                f"global size {tuple(global_size[:dims])} is not a multiple of the group size "
                f"{tuple(local_size[:dims])}; its native code ({self.entry_id}) was built for "
                "whole groups (HIP's grid and block sizes always are)",
                name,
            )
        return []


def load_native(backend, program, kernel: str, device, entry: BundleEntry):
    """Kernel ``kernel`` of ``program`` from the bundle entry ``entry``, loaded on
    ``device``; None (after one warning) when the code object does not fit the SPIR-V."""
    from ...jit import StageTimes

    ours = program.for_target(device.target)
    signature = ours.signatures.get(kernel)
    if signature is None:
        raise LaunchError("no kernel of that name", kernel)
    try:
        info = kernels(entry.data, entry.id).get(kernel)
        why = disagreement(signature, info)
    except BinaryFormatError as exc:
        info, why = None, str(exc)
    if why is not None:
        if (entry.id, kernel) not in _warned:
            _warned.add((entry.id, kernel))
            log.warning(
                "spirvjit: %s: not running kernel %s from its native entry %s (%s); "
                "JIT-compiling it from the amdgcnspirv entry",
                program.name,
                kernel,
                entry.id,
                why,
            )
        return None
    times = StageTimes()
    context = backend.context(device)
    return NativeHipKernel(
        device,
        context,
        entry.data,
        signature,
        "native",
        times,
        variables=backend.variables(ours, device),
        info=info,
        entry_id=entry.id,
    )
