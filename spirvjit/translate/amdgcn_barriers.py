"""``__builtin_amdgcn_s_barrier`` as a SPIR-V work-group barrier.

HIP's ``__syncthreads()`` is a release fence, ``__builtin_amdgcn_s_barrier()`` and an
acquire fence; clang's amdgcnspirv output keeps the middle one as a call to the
imported ``spirv.llvm_amdgcn_s_barrier``. This pass, run on the module before anything
else looks at it, replaces each such call with ``OpControlBarrier Workgroup Workgroup
AcquireRelease|WorkgroupMemory``. Every target then sees an ordinary barrier: the CPU's
barrier preparation (``barriers.py``) splits the kernel at it, NVIDIA gets ``bar.sync``,
AMD gets fence + ``s_barrier`` + fence again. The fences clang emitted around it stay.
(``__builtin_amdgcn_wave_barrier``, HIP's ``__syncwarp``, is a wavefront operation:
``wavefront.py``.)
"""

from __future__ import annotations

from ..spirv.grammar import Decoration, LinkageType, Op
from ..spirv.module import Instruction, Module

BARRIER_IMPORTS = ("spirv.llvm_amdgcn_s_barrier",)
_WORKGROUP = 2  # Scope.Workgroup
_ACQ_REL_WORKGROUP_MEMORY = 0x8 | 0x100  # MemorySemantics.AcquireRelease | WorkgroupMemory
_ACQ_REL_ALL_MEMORY = _ACQ_REL_WORKGROUP_MEMORY | 0x200  # ... | CrossWorkgroupMemory


def _imported_barriers(module: Module) -> set[int]:
    found = set()
    for fn in module.functions:
        if fn.blocks:
            continue
        for deco in module.decorations_of(fn.id, Decoration.LinkageAttributes):
            if deco.operands[-1] == LinkageType.Import and deco.operands[0] in BARRIER_IMPORTS:
                found.add(fn.id)
    return found


class _Constants:
    """Finds or adds 32-bit unsigned integer constants."""

    def __init__(self, module: Module):
        self.module = module
        self.uint = next(
            (
                g.result_id
                for g in module.globals
                if g.opname == "OpTypeInt" and g.operands[:2] == [32, 0]
            ),
            None,
        )
        self.found: dict[int, int] = {}

    def _fresh(self) -> int:
        new = max(self.module.bound, max(self.module.defs, default=0) + 1)
        self.module.bound = new + 1
        return new

    def _add(self, inst: Instruction) -> None:
        # Types and constants precede every use: put them after the last type.
        last_type = max(
            (i for i, g in enumerate(self.module.globals) if g.opname.startswith("OpType")),
            default=-1,
        )
        self.module.globals.insert(last_type + 1, inst)
        self.module.defs[inst.result_id] = inst

    def uint_constant(self, value: int) -> int:
        if value in self.found:
            return self.found[value]
        if self.uint is None:
            self.uint = self._fresh()
            kinds = ("LiteralInteger", "LiteralInteger")
            self._add(Instruction(Op.OpTypeInt, "OpTypeInt", None, self.uint, [32, 0], kinds, -1))
        for g in self.module.globals:
            if g.opname == "OpConstant" and g.result_type == self.uint and g.operands == [value]:
                self.found[value] = g.result_id
                return g.result_id
        new = self._fresh()
        kinds = ("LiteralContextDependentNumber",)
        const = Instruction(Op.OpConstant, "OpConstant", self.uint, new, [value], kinds, -1)
        self._add(const)
        self.found[value] = new
        return new


def rewrite_amdgcn_barriers(module: Module) -> int:
    """Replaces calls to the imported AMD barriers with OpControlBarrier; returns how many."""
    targets = _imported_barriers(module)
    if not targets:
        return 0
    constants = _Constants(module)
    count = 0
    for fn in module.functions:
        for block in fn.blocks:
            for i, inst in enumerate(block.instructions):
                if inst.opname != "OpFunctionCall" or inst.operands[0] not in targets:
                    continue
                # The call's offset stays: barrier preparation keys barriers by offset.
                block.instructions[i] = _workgroup_barrier(
                    constants, _ACQ_REL_WORKGROUP_MEMORY, inst.offset
                )
                count += 1
    return count


def _workgroup_barrier(constants: _Constants, semantics: int, offset) -> Instruction:
    """OpControlBarrier Workgroup Workgroup ``semantics``, at ``offset``."""
    scope = constants.uint_constant(_WORKGROUP)
    return Instruction(
        Op.OpControlBarrier,
        "OpControlBarrier",
        None,
        None,
        [scope, scope, constants.uint_constant(semantics)],
        ("IdScope", "IdScope", "IdMemorySemantics"),
        offset,
    )


def rewrite_group_waits(module: Module) -> int:
    """Replaces each work-group OpGroupWaitEvents (OpenCL's wait_group_events) with
    OpControlBarrier Workgroup Workgroup AcquireRelease|WorkgroupMemory|
    CrossWorkgroupMemory (see ops_group.group_async_copy); returns how many."""
    constants = _Constants(module)
    count = 0
    for fn in module.functions:
        for block in fn.blocks:
            for i, inst in enumerate(block.instructions):
                if inst.opname != "OpGroupWaitEvents":
                    continue
                scope_inst = module.defs.get(inst.operands[0])
                if scope_inst is None or scope_inst.operands != [_WORKGROUP]:
                    continue  # a sub-group's: ops_group handles it
                block.instructions[i] = _workgroup_barrier(
                    constants, _ACQ_REL_ALL_MEMORY, inst.offset
                )
                count += 1
    return count
