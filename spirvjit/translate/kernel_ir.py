"""One kernel of a translated program as an LLVM module of its own, for any backend."""

from __future__ import annotations

import re

import llvmlite.binding as llvm
from llvmlite import ir

from ..errors import CompileError

_REFERENCE = re.compile(r'@"?([-\w.$]+)"?')


def kernel_ir(
    module: ir.Module,
    keep: str,
    mutable_globals: list[ir.GlobalVariable],
    roots: tuple[str, ...] = (),
) -> str:
    """IR text of the function ``keep`` and what it reaches: its own module for the JIT.

    Only the globals ``keep`` references (transitively) are printed, so a kernel's
    compile time does not grow with the other kernels of its program. The program's
    mutable globals become declarations, resolved from the data object at load.
    ``roots``: more globals to print (and what they reach) whether ``keep`` uses them.
    """
    mutable = {gv.name for gv in mutable_globals}
    by_name = {gv.name: gv for gv in module.global_values}
    texts: dict[str, str] = {}
    pending = [keep, *roots]
    while pending:
        name = pending.pop()
        if name in texts or name not in by_name:
            continue
        value = by_name[name]
        if name in mutable:
            texts[name] = f'@"{name}" = external global {value.value_type}, align {value.align}'
            continue
        text = texts[name] = str(value)
        pending.extend(_REFERENCE.findall(text))
    header = [f'target triple = "{module.triple}"', f'target datalayout = "{module.data_layout}"']
    body = [texts[name] for name in sorted(texts)]
    # A debug translation's compile unit and DWARF version (translate/debuginfo.py).
    for name in _DEBUG_NAMED:
        if name in module.namedmetadata:
            refs = ", ".join(md.get_reference() for md in module.namedmetadata[name].operands)
            body.append(f"!{name} = !{{{refs}}}")
    return "\n".join(header + body + _metadata(module, body)) + "\n"


_DEBUG_NAMED = ("llvm.dbg.cu", "llvm.module.flags")


_METADATA_REFERENCE = re.compile(r"!(\d+)\b")


def _metadata(module: ir.Module, texts: list[str]) -> list[str]:
    """The unnamed metadata nodes (``!fpmath`` accuracies, ...) ``texts`` refer to,
    transitively."""
    by_name = {md.name: md for md in module.metadata}
    found: dict[str, str] = {}
    pending = [ref for text in texts for ref in _METADATA_REFERENCE.findall(text)]
    while pending:
        name = pending.pop()
        if name in found or name not in by_name:
            continue
        found[name] = str(by_name[name])
        pending.extend(_METADATA_REFERENCE.findall(found[name].split("=", 1)[1]))
    return [found[name] for name in sorted(found, key=int)]


def parse_ir(text: str, what: str) -> llvm.ModuleRef:
    """Parses and verifies IR text into a module of its own LLVM context.

    Not llvmlite's global context: types, constants and metadata uniqued in a context
    live as long as it does (memory that grew with every kernel compiled). A module's
    context is freed with the last module that refers to it.
    """
    try:
        module = llvm.parse_assembly(text, context=llvm.create_context())
        module.name = what  # errors from later stages name the kernel
        module.verify()
    except RuntimeError as exc:
        raise CompileError(
            f"LLVM rejected the IR translated for {what}; this is a spirvjit bug", str(exc)
        ) from None
    return module
