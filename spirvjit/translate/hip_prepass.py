"""Rewrites of a freshly read module that clang's AMD-flavoured SPIR-V needs, run once
in ``Program`` before anything else looks at the module.

1. ``__builtin_amdgcn_s_barrier`` calls become OpControlBarrier (``amdgcn_barriers.py``).
2. clang-22's SPIR-V back end defines ``llvm.fshl``/``llvm.fshr`` (funnel shifts, which
   opt makes of ``__builtin_amdgcn_alignbit`` and of rotate idioms) as functions named
   ``spirv.llvm_fshr_i32`` whose body shifts by ``32 - s``: for a shift amount of 0
   that is a shift by the full width, undefined in SPIR-V, and the result is wrong
   (``fshr(a, b, 0)`` must be ``b``). Those bodies are dropped, which makes the calls
   imports that ``llvm_intrinsics.py`` maps to the LLVM intrinsic itself.
4. OpenCL's ``wait_group_events`` (OpGroupWaitEvents with Workgroup scope) becomes a
   work-group barrier: ``async_work_group_copy`` shares its copy out among the group's
   work-items at once (``ops_group.group_async_copy``), and the wait is where every
   work-item's part must be in place.
3. In a HIP module, ``__constant__`` variables (CrossWorkgroup, decorated Constant) lose
   the decoration: kernels cannot write them, but the host does (hipMemcpyToSymbol,
   ``Program.global_variable``), so they are program data like ``__device__``
   variables instead of constants folded into each kernel.
"""

from __future__ import annotations

from ..spirv.grammar import Decoration, LinkageType, StorageClass
from ..spirv.module import Decoration as Deco
from ..spirv.module import Module
from .amdgcn_barriers import rewrite_amdgcn_barriers, rewrite_group_waits

_FUNNEL_SHIFTS = ("spirv.llvm_fshl_", "spirv.llvm_fshr_")


def prepare_module(module: Module) -> None:
    """Applies every rewrite above to ``module`` in place."""
    rewrite_amdgcn_barriers(module)
    rewrite_group_waits(module)
    _import_funnel_shifts(module)
    if is_hip_module(module):
        _host_writable_constants(module)


def is_hip_module(module: Module) -> bool:
    """Whether clang compiled ``module`` from HIP: every HIP translation unit defines
    ``__hip_cuid_<hash>``; AMD built-ins are imported as ``spirv.llvm_amdgcn_*``."""
    return any(
        name.startswith(("__hip_cuid_", "spirv.llvm_amdgcn_")) for name in module.names.values()
    )


def _host_writable_constants(module: Module) -> None:
    for inst in module.globals:
        if inst.opname == "OpVariable" and inst.operands[0] == StorageClass.CrossWorkgroup:
            decorations = module.decorations.get(inst.result_id)
            if decorations:
                module.decorations[inst.result_id] = [
                    d for d in decorations if d.decoration != Decoration.Constant
                ]


def _import_funnel_shifts(module: Module) -> None:
    for fn in module.functions:
        if not fn.blocks:
            continue
        for i, deco in enumerate(module.decorations.get(fn.id, ())):
            if deco.decoration != Decoration.LinkageAttributes:
                continue
            name = deco.operands[0]
            if name.startswith(_FUNNEL_SHIFTS) and deco.operands[-1] == LinkageType.Export:
                fn.blocks = []
                module.decorations[fn.id][i] = Deco(
                    deco.decoration, [name, LinkageType.Import], deco.offset
                )
