"""Source locations of a SPIR-V module's instructions, from its OpLine instructions.

The reader keeps OpLine out of the blocks; ``Module.instructions`` still holds them in
order, so the location of each instruction is the last OpLine before it in its block
(OpLine's scope ends at OpNoLine, a new OpLine or the end of the block).
"""

from __future__ import annotations

import contextlib
import os
import re

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


# NonSemantic.Shader.DebugInfo.100's DebugLine and DebugNoLine, its counterparts of
# OpLine and OpNoLine, and DebugSource (whose first operand is the file's OpString).
_DEBUG_LINE, _DEBUG_NO_LINE, _DEBUG_SOURCE = 103, 104, 35
_SHADER_DEBUG_INFO = "NonSemantic.Shader.DebugInfo.100"


def _constant(module: Module, value_id: int) -> int:
    inst = module.defs.get(value_id)
    return int(inst.operands[0]) if inst is not None and inst.opname == "OpConstant" else 0


def _debug_line(module: Module, inst, shader_sets: set[int]) -> tuple | None | bool:
    """An OpExtInst's location if it is a DebugLine ((file, line, column), or None for
    line 0 and DebugNoLine); False for any other instruction."""
    if inst.opname != "OpExtInst" or inst.operands[0] not in shader_sets:
        return False
    number, args = inst.operands[1], inst.operands[2:]
    if number == _DEBUG_NO_LINE:
        return None
    if number != _DEBUG_LINE or len(args) < 4:
        return False
    source = module.defs.get(args[0])
    if source is None or source.opname != "OpExtInst" or source.operands[1] != _DEBUG_SOURCE:
        return None
    line = _constant(module, args[1])
    return (source.operands[2], line, _constant(module, args[3])) if line else None


def line_table(module: Module) -> dict[int, tuple[int, int, int]]:
    """Instruction word offset -> (file OpString id, line, column), for the instructions
    an OpLine (or a NonSemantic.Shader.DebugInfo.100 DebugLine) with a nonzero line
    covers."""
    found = getattr(module, "_spirvjit_lines", None)
    if found is not None:
        return found
    table: dict[int, tuple[int, int, int]] = {}
    current = None
    shader_sets = {i for i, n in module.ext_inst_imports.items() if n == _SHADER_DEBUG_INFO}
    for inst in module.instructions:
        name = inst.opname
        debug_line = _debug_line(module, inst, shader_sets) if shader_sets else False
        if name == "OpLine":
            file, line, column = inst.operands[:3]
            current = (file, line, column) if line else None
        elif name == "OpNoLine":
            current = None
        elif debug_line is not False:
            current = debug_line
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


_OPSTRING = re.compile(r'^\s*(%\S+) = OpString "(.*)"\s*$')
_OPLINE = re.compile(r"^\s*OpLine (%\S+) (\d+) (\d+)")


def interleave_source(disassembly: str, sources: dict[str, list[str]]) -> str:
    """SPIR-V assembly with each OpLine preceded by the source line it names, as a
    ``; file:line: text`` comment. ``sources``: file name (as OpString names it, or its
    base name) -> the file's lines. A line shows once per run of OpLines naming it."""
    strings: dict[str, str] = {}
    shader = _ShaderLines()
    out: list[str] = []
    last = None
    for line in disassembly.splitlines():
        found = _OPSTRING.match(line)
        if found:
            strings[found.group(1)] = found.group(2)
        found = _OPLINE.match(line)
        located = (found.group(1), int(found.group(2))) if found else shader.read(line)
        if located:
            path = strings.get(located[0], located[0])
            number = located[1]
            lines = sources.get(path) or sources.get(os.path.basename(path))
            if number and (path, number) != last:
                last = (path, number)
                text = lines[number - 1].rstrip() if lines and number <= len(lines) else ""
                out.append(f"; {os.path.basename(path)}:{number}: {text.strip()}")
        out.append(line)
    return "\n".join(out) + "\n"


_SHADER_IMPORT = re.compile(r'^\s*(%\S+) = OpExtInstImport "NonSemantic\.Shader\.DebugInfo\.100"')
_CONSTANT = re.compile(r"^\s*(%\S+) = OpConstant \S+ (\d+)\s*$")
_SHADER_SOURCE = re.compile(r"^\s*(%\S+) = OpExtInst \S+ (%\S+) (?:35|DebugSource) (%\S+)")
_SHADER_LINE = re.compile(r"^\s*(?:%\S+ = )?OpExtInst \S+ (%\S+) (?:103|DebugLine) (%\S+) (%\S+)")


class _ShaderLines:
    """NonSemantic.Shader.DebugInfo.100 DebugLine in SPIR-V assembly (spirvjit's, which
    numbers the instructions, or spirv-dis's, which names them)."""

    def __init__(self) -> None:
        self.sets: set[str] = set()
        self.constants: dict[str, int] = {}
        self.files: dict[str, str] = {}  # DebugSource -> its file's OpString

    def read(self, line: str) -> tuple[str, int] | None:
        """(file OpString, line number) of a DebugLine; None for any other line."""
        if found := _SHADER_IMPORT.match(line):
            self.sets.add(found.group(1))
        elif found := _CONSTANT.match(line):
            self.constants[found.group(1)] = int(found.group(2))
        elif (found := _SHADER_SOURCE.match(line)) and found.group(2) in self.sets:
            self.files[found.group(1)] = found.group(3)
        elif (found := _SHADER_LINE.match(line)) and found.group(1) in self.sets:
            source = self.files.get(found.group(2))
            if source is not None:
                return source, self.constants.get(found.group(3), 0)
        return None


def has_lines(disassembly: str) -> bool:
    """Whether SPIR-V assembly has line information (OpLine, DebugLine)."""
    shader = _ShaderLines()
    return any(_OPLINE.match(text) or shader.read(text) for text in disassembly.splitlines())


def source_files(disassembly: str, extra: dict[str, str] | None = None) -> dict[str, list[str]]:
    """The lines of the files the module's OpStrings name: from ``extra`` (name -> text,
    e.g. a unified binary's embedded sources or files given on the command line), else
    read from disk where they still exist."""
    found: dict[str, list[str]] = {}
    for name, text in (extra or {}).items():
        found[os.path.basename(name)] = text.splitlines()
    for line in disassembly.splitlines():
        match = _OPSTRING.match(line)
        if match and os.path.basename(match.group(2)) not in found:
            with (
                contextlib.suppress(OSError, UnicodeDecodeError),
                open(match.group(2), encoding="utf-8") as f,
            ):
                found[match.group(2)] = f.read().splitlines()
    return found


# `.file 1 "dir" "name"` (DWARF 5 may add an md5) and `.file 1 "name"`; `.loc 1 12 7 ...`.
_ASM_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s+"([^"]*)")?')
_ASM_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)(?:\s+(\d+))?")


def interleave_assembly(assembly: str, sources: dict[str, list[str]]) -> str:
    """Target assembly with DWARF line directives (``.loc``) preceded by the source line
    each names, as ``; file:line: text`` comments, once per run of directives naming it.
    ``sources``: file name (or base name) -> the file's lines."""
    files: dict[str, str] = {}
    out: list[str] = []
    last = None
    for line in assembly.splitlines():
        found = _ASM_FILE.match(line)
        if found:
            directory, name = (
                (found.group(2), found.group(3)) if found.group(3) else ("", found.group(2))
            )
            files[found.group(1)] = os.path.join(directory, name) if directory else name
        found = _ASM_LOC.match(line)
        if found:
            path = files.get(found.group(1), "?")
            number = int(found.group(2))
            if number and (path, number) != last:
                last = (path, number)
                lines = sources.get(path) or sources.get(os.path.basename(path))
                text = lines[number - 1].strip() if lines and number <= len(lines) else ""
                out.append(f"; {os.path.basename(path)}:{number}: {text}")
        out.append(line)
    return "\n".join(out) + "\n"
