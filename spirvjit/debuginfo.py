"""Source locations of a SPIR-V module's instructions, from its OpLine instructions.

The reader keeps OpLine out of the blocks; ``Module.instructions`` still holds them in
order, so the location of each instruction is the last OpLine before it in its block
(OpLine's scope ends at OpNoLine, a new OpLine or the end of the block).
"""

from __future__ import annotations

import contextlib
import os

from .spirv.module import Module

_TERMINATORS = frozenset(
    {
        "OpBranch",
        "OpBranchConditional",
        "OpSwitch",
        "OpReturn",
        "OpReturnValue",
        "OpUnreachable",
        "OpKill",
        "OpFunctionEnd",
        "OpLabel",
    }
)


def line_table(module: Module) -> dict[int, tuple[int, int, int]]:
    """Instruction word offset -> (file OpString id, line, column), for the instructions
    an OpLine with a nonzero line covers."""
    found = getattr(module, "_spirvjit_lines", None)
    if found is not None:
        return found
    table: dict[int, tuple[int, int, int]] = {}
    current = None
    for inst in module.instructions:
        name = inst.opname
        if name == "OpLine":
            file, line, column = inst.operands[:3]
            current = (file, line, column) if line else None
        elif name == "OpNoLine":
            current = None
        else:
            if current is not None:
                table[inst.offset] = current
            if name in _TERMINATORS:
                current = None
    # A slotted Module cannot keep it: computed again next time.
    with contextlib.suppress(AttributeError, TypeError):
        object.__setattr__(module, "_spirvjit_lines", table)
    return table


def file_name(module: Module, file_id: int) -> str:
    """The OpString a location names; compile_opencl's temporary directory left out."""
    inst = module.defs.get(file_id)
    name = inst.operands[0] if inst is not None and inst.operands else "?"
    if os.path.basename(os.path.dirname(name)).startswith("spirvjit-"):
        name = os.path.basename(name)
    return name
