"""Rewrites of a freshly read module that clang's AMD-flavoured SPIR-V needs, run once
in ``Program`` before anything else looks at the module.

1. ``__builtin_amdgcn_s_barrier`` calls become OpControlBarrier (``amdgcn_barriers.py``).
2. clang-22's SPIR-V back end defines ``llvm.fshl``/``llvm.fshr`` (funnel shifts, which
   opt makes of ``__builtin_amdgcn_alignbit`` and of rotate idioms) as functions named
   ``spirv.llvm_fshr_i32`` whose body shifts by ``32 - s``: for a shift amount of 0
   that is a shift by the full width, undefined in SPIR-V, and the result is wrong
   (``fshr(a, b, 0)`` must be ``b``). Those bodies are dropped, which makes the calls
   imports that ``llvm_intrinsics.py`` maps to the LLVM intrinsic itself.
"""

from __future__ import annotations

from ..spirv.grammar import Decoration, LinkageType
from ..spirv.module import Decoration as Deco
from ..spirv.module import Module
from .amdgcn_barriers import rewrite_amdgcn_barriers

_FUNNEL_SHIFTS = ("spirv.llvm_fshl_", "spirv.llvm_fshr_")


def prepare_module(module: Module) -> None:
    """Applies every rewrite above to ``module`` in place."""
    rewrite_amdgcn_barriers(module)
    _import_funnel_shifts(module)


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
