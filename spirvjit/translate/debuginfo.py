"""SPIR-V debug information (OpLine, OpenCL.DebugInfo.100, NonSemantic.Shader.DebugInfo.100)
as LLVM debug metadata, for source-level debugging of CPU kernels with gdb.

Only debug translations use it (the CPU backend's ``spirvjit:debug`` option, see
``backends/cpu/debugload.py``); ordinary translations ignore debug instructions.

What becomes what:

- one ``DICompileUnit`` for the module, a ``DIFile`` per source file;
- a ``DISubprogram`` for every function that has a ``DebugFunction`` or an ``OpLine``;
- every LLVM instruction a SPIR-V instruction becomes gets that instruction's line
  (OpLine / DebugLine), instructions with none get line 0 of their function;
- ``DebugDeclare`` becomes ``llvm.dbg.declare`` of the variable's storage (an alloca, or
  its slot in a barrier kernel's frame), ``DebugValue`` becomes ``llvm.dbg.value``,
  with the variable's type where it is one this module maps (basic types, pointers,
  qualifiers, typedefs, vectors, arrays, structs and unions);
- every function with a subprogram gets two local variables, ``spirvjit_gid`` and
  ``spirvjit_lid`` (``size_t[3]``): the work-item's global and local id, so that gdb can
  ``print spirvjit_gid`` or ``break kernel.cl:7 if spirvjit_gid[0] == 5``.

Lexical blocks (DebugLexicalBlock, DebugScope) become DILexicalBlocks, so a variable is
visible where the source declares it. Not mapped: inlined-at chains (code inlined by the
producer, or into a barrier kernel's step function, carries the callee's lines in the
caller's frame, and the callee's variables become the caller's), DebugExpression
operations (dropped: the OpenCL.DebugInfo.100 ``Constu 0, Swap, Xderef`` address-space
idiom is the only one producers emit), enums and function types (variables of those
types are left out).
"""

from __future__ import annotations

import functools
import os
from dataclasses import replace
from typing import TYPE_CHECKING

from llvmlite import ir
from llvmlite.binding import llvm_version_info

from ..debuginfo import line_table
from ..spirv.module import Instruction

if TYPE_CHECKING:
    from .function import FunctionTranslator
    from .module import ModuleTranslator

DEBUG_SETS = ("OpenCL.DebugInfo.100", "NonSemantic.Shader.DebugInfo.100")

# The instruction numbers both sets share.
_INFO_NONE = 0
_COMPILATION_UNIT = 1
_TYPE_BASIC = 2
_TYPE_POINTER = 3
_TYPE_QUALIFIER = 4
_TYPE_ARRAY = 5
_TYPE_VECTOR = 6
_TYPEDEF = 7
_TYPE_COMPOSITE = 10
_TYPE_MEMBER = 11
_FUNCTION = 20
_LEXICAL_BLOCK = 21
_SCOPE = 23
_NO_SCOPE = 24
_LOCAL_VARIABLE = 26
_DECLARE = 28
_VALUE = 29
_SOURCE = 35
_FUNCTION_DEFINITION = 101  # NonSemantic.Shader.DebugInfo.100 only

_ENCODINGS = {
    0: "DW_ATE_signed",
    1: "DW_ATE_address",
    2: "DW_ATE_boolean",
    3: "DW_ATE_float",
    4: "DW_ATE_signed",
    5: "DW_ATE_signed_char",
    6: "DW_ATE_unsigned",
    7: "DW_ATE_unsigned_char",
}
_QUALIFIERS = {0: "DW_TAG_const_type", 1: "DW_TAG_volatile_type", 2: "DW_TAG_restrict_type"}
_COMPOSITE_TAGS = {0: "DW_TAG_class_type", 1: "DW_TAG_structure_type", 2: "DW_TAG_union_type"}

I32 = ir.IntType(32)
I64 = ir.IntType(64)


def has_debug_info(module) -> bool:
    """Whether the module has line information a debugger can use."""
    return bool(line_table(module))


def remap_debug_operands(module, inst: Instruction, mapping: dict[int, int]) -> Instruction:
    """``inst`` with the variable or value of an OpenCL.DebugInfo.100 DebugDeclare or
    DebugValue renamed by ``mapping`` (a function body copied with fresh ids, as barrier
    kernels inline their callees): that set's operands are plain words, not ids, so
    the generic renaming does not reach them."""
    if (
        inst.opname != "OpExtInst"
        or module.ext_inst_imports.get(inst.operands[0]) != "OpenCL.DebugInfo.100"
        or inst.operands[1] not in (_DECLARE, _VALUE)
        or len(inst.operands) < 4
    ):
        return inst
    operands = list(inst.operands)
    operands[3] = mapping.get(operands[3], operands[3])
    return replace(inst, operands=operands)


class DebugInfo:
    """The debug metadata of one module translation."""

    def __init__(self, mt: ModuleTranslator):
        self.mt = mt
        self.ll = mt.llmodule
        module = mt.module
        self.sets = {i: n for i, n in module.ext_inst_imports.items() if n in DEBUG_SETS}
        # Debug instructions by result id: (number, arguments, NonSemantic).
        self.ext: dict[int, tuple[int, list[int], bool]] = {}
        self.function_of_scope: dict[int, int] = {}  # DebugFunction id -> OpFunction id
        for inst in module.instructions:
            if inst.opname != "OpExtInst" or inst.operands[0] not in self.sets:
                continue
            number, args = inst.operands[1], list(inst.operands[2:])
            nonsemantic = self.sets[inst.operands[0]].startswith("NonSemantic.")
            if inst.result_id is not None:
                self.ext[inst.result_id] = (number, args, nonsemantic)
            if number == _FUNCTION and not nonsemantic and len(args) > 9:
                self.function_of_scope[inst.result_id] = args[9]
            elif number == _FUNCTION_DEFINITION and len(args) > 1:
                self.function_of_scope[args[0]] = args[1]
        self.lines = line_table(module)
        self._files: dict[int, ir.DIValue] = {}
        self._types: dict[int, tuple[ir.DIValue, int] | None] = {}
        self.subprograms: dict[int, ir.DIValue] = {}  # OpFunction id -> DISubprogram
        self._sp_files: dict[int, ir.DIValue] = {}  # OpFunction id -> its DIFile
        self._blocks: dict[tuple[int, int], ir.DIValue] = {}  # (function, scope) -> block
        self._sp_lines: dict[int, int] = {}  # OpFunction id -> its line
        self._declare_fn: ir.Function | None = None
        self._value_fn: ir.Function | None = None
        self.cu = self._compile_unit()
        self.ll.add_named_metadata("llvm.dbg.cu", self.cu)
        self.ll.add_named_metadata(
            "llvm.module.flags", self.ll.add_metadata([I32(2), "Debug Info Version", I32(3)])
        )
        self.ll.add_named_metadata(
            "llvm.module.flags", self.ll.add_metadata([I32(7), "Dwarf Version", I32(5)])
        )

    # -- reading operands ------------------------------------------------------------

    def _literal(self, value: int, nonsemantic: bool) -> int:
        """A literal operand: a word in OpenCL.DebugInfo.100, a constant's id in NonSemantic."""
        return self._constant(value) if nonsemantic else value

    def _constant(self, value_id: int) -> int:
        inst = self.mt.module.defs.get(value_id)
        if inst is None or inst.opname != "OpConstant" or not inst.operands:
            return 0
        return int(inst.operands[0])

    def _string(self, string_id: int) -> str:
        inst = self.mt.module.defs.get(string_id)
        if inst is None or inst.opname != "OpString" or not inst.operands:
            return ""
        return str(inst.operands[0])

    # -- files, unit, subprograms ----------------------------------------------------

    def file(self, string_id: int) -> ir.DIValue:
        """The DIFile of the file an OpString names. compile_opencl's temporary directory
        is left out: the name is the one the caller gave (``kernel.cl``)."""
        found = self._files.get(string_id)
        if found is None:
            path = self._string(string_id) or "<unknown>"
            directory, name = os.path.split(path)
            if os.path.basename(directory).startswith("spirvjit-"):
                directory = ""
            found = self._files[string_id] = self.ll.add_debug_info(
                "DIFile", {"filename": name, "directory": directory}
            )
        return found

    def _source_file(self, source_id: int) -> ir.DIValue | None:
        """The DIFile of a DebugSource."""
        found = self.ext.get(source_id)
        if found is None or found[0] != _SOURCE:
            return None
        return self.file(found[1][0])

    def _compile_unit(self) -> ir.DIValue:
        file = None
        for number, args, _ in self.ext.values():
            if number == _COMPILATION_UNIT and len(args) > 2:
                file = self._source_file(args[2])
                break
        if file is None:
            first = next(iter(self.lines.values()), None)
            file = self.file(first[0]) if first else self.file(0)
        return self.ll.add_debug_info(
            "DICompileUnit",
            {
                "language": ir.DIToken("DW_LANG_OpenCL"),
                "file": file,
                # gdb skips a function's prologue by its line table only for code of
                # LLVM's ("clang " producers); for others it looks for a frame-pointer
                # push, which this code lacks, and stops before the parameters are
                # stored (showing stale values).
                "producer": f"clang (spirvjit, LLVM {'.'.join(map(str, llvm_version_info))})",
                "isOptimized": False,
                "runtimeVersion": 0,
                "emissionKind": ir.DIToken("FullDebug"),
            },
            is_distinct=True,
        )

    def subprogram(self, fn, llfn: ir.Function) -> ir.DIValue | None:
        """The DISubprogram of SPIR-V function ``fn`` (translated as ``llfn``), attached to
        ``llfn``; None for a function without debug information."""
        scope = next((s for s, f in self.function_of_scope.items() if f == fn.id), None)
        entry = next((e.name for e in self.mt.module.entry_points if e.function_id == fn.id), None)
        name, file, line = self.mt.module.names.get(fn.id) or entry or llfn.name, None, 0
        if scope is not None:
            _, args, nonsemantic = self.ext[scope]
            name = self._string(args[0]) or name
            file = self._source_file(args[2])
            line = self._literal(args[3], nonsemantic)
        first = next(
            (
                self.lines[inst.offset]
                for block in fn.blocks
                for inst in block.instructions
                if inst.offset in self.lines
            ),
            None,
        )
        if scope is None and first is None:
            return None
        if file is None:
            file = self.file(first[0])
        if not line and first is not None:
            line = first[1]
        # Not add_debug_info, which would make two same-named functions share the node.
        sp = ir.DIValue(
            self.ll,
            True,
            "DISubprogram",
            {
                "name": name,
                "scope": file,
                "file": file,
                "line": line,
                "type": self.ll.add_debug_info("DISubroutineType", {"types": []}),
                "scopeLine": line,
                "unit": self.cu,
                "spFlags": ir.DIToken("DISPFlagDefinition"),
            }.items(),
            name=str(len(self.ll.metadata)),
        )
        llfn.set_metadata("dbg", sp)
        self.subprograms[fn.id] = sp
        self._sp_files[fn.id] = file
        self._sp_lines[fn.id] = line
        return sp

    def location(
        self, inst: Instruction | None, scope: ir.DIValue, t: FunctionTranslator
    ) -> ir.DIValue | None:
        """The DILocation of ``inst`` (None: the function's entry code) in ``scope``.

        Code before the function's first located instruction (the work-item ids, the
        producer's spills of parameters) is the prologue: it gets no location, as a C
        compiler's prologue, so that LLVM marks the end of the prologue at the first
        line and gdb, stepping into the function or breaking on it, stops there (with
        the parameters in place). Later code without a line gets line 0."""
        found = self.lines.get(inst.offset) if inst is not None else None
        if found:
            t.debug_prologue = False
            line, column = found[1], found[2]
        elif inst is None or getattr(t, "debug_prologue", True):
            return None
        else:
            line, column = 0, 0
        return self.ll.add_debug_info(
            "DILocation", {"line": line, "column": column, "scope": scope}
        )

    def finish(self, t: FunctionTranslator) -> None:
        """Gives the calls of the prologue (``llvm.dbg.declare``, helper functions) the
        function's line: LLVM wants a location on every such call."""
        located = self.ll.add_debug_info(
            "DILocation",
            {"line": self._sp_lines.get(t.fn.id, 0), "column": 0, "scope": t.subprogram},
        )
        for block in t.llfn.blocks:
            for instr in block.instructions:
                if isinstance(instr, ir.CallInstr) and "dbg" not in instr.metadata:
                    instr.set_metadata("dbg", located)

    # -- types -----------------------------------------------------------------------

    def type(self, type_id: int) -> tuple[ir.DIValue, int] | None:
        """The DIType of a debug type instruction and its size in bits, or None."""
        if type_id in self._types:
            return self._types[type_id]
        self._types[type_id] = None  # a type that refers to itself maps to None
        found = self.ext.get(type_id)
        result = self._make_type(*found) if found else None
        self._types[type_id] = result
        return result

    def _make_type(self, number: int, args: list[int], ns: bool) -> tuple[ir.DIValue, int] | None:
        add = self.ll.add_debug_info
        if number == _TYPE_BASIC:
            bits = self._constant(args[1])
            encoding = _ENCODINGS.get(self._literal(args[2], ns), "DW_ATE_signed")
            node = add(
                "DIBasicType",
                {"name": self._string(args[0]), "size": bits, "encoding": ir.DIToken(encoding)},
            )
            return node, bits
        if number == _TYPE_POINTER:
            base = self.type(args[0])
            operands = {"tag": ir.DIToken("DW_TAG_pointer_type"), "size": 64}
            if base is not None:
                operands["baseType"] = base[0]
            return add("DIDerivedType", operands), 64
        if number == _TYPE_QUALIFIER:
            base = self.type(args[0])
            tag = _QUALIFIERS.get(self._literal(args[1], ns))
            if base is None or tag is None:
                return base
            return add("DIDerivedType", {"tag": ir.DIToken(tag), "baseType": base[0]}), base[1]
        if number == _TYPEDEF:
            base = self.type(args[1])
            if base is None:
                return None
            operands = {
                "tag": ir.DIToken("DW_TAG_typedef"),
                "name": self._string(args[0]),
                "baseType": base[0],
            }
            return add("DIDerivedType", operands), base[1]
        if number in (_TYPE_VECTOR, _TYPE_ARRAY):
            base = self.type(args[0])
            if base is None:
                return None
            if number == _TYPE_VECTOR:
                counts = [self._literal(args[1], ns)]
            else:
                counts = [self._constant(c) for c in args[1:]]
            total = 1
            for count in counts:
                total *= count
            operands = {
                "tag": ir.DIToken("DW_TAG_array_type"),
                "baseType": base[0],
                "size": base[1] * total,
                "elements": [add("DISubrange", {"count": c}) for c in counts],
            }
            if number == _TYPE_VECTOR:
                operands["flags"] = ir.DIToken("DIFlagVector")
            return add("DICompositeType", operands), base[1] * total
        if number == _TYPE_COMPOSITE:
            return self._composite(args, ns)
        return None

    def _composite(self, args: list[int], ns: bool) -> tuple[ir.DIValue, int] | None:
        # Name, Tag, Source, Line, Column, Parent, Linkage Name, Size, Flags, Members...
        tag = _COMPOSITE_TAGS.get(self._literal(args[1], ns))
        if tag is None:
            return None
        bits = self._constant(args[7])
        file = self._source_file(args[2])
        members = []
        for member_id in args[9:]:
            member = self.ext.get(member_id)
            if member is None or member[0] != _TYPE_MEMBER:
                continue
            m_args = member[1]
            # OpenCL.DebugInfo.100 has a Parent operand after Column, NonSemantic none.
            rest = m_args[5:] if ns else m_args[6:]
            member_type = self.type(m_args[1])
            if member_type is None or len(rest) < 2:
                return None
            members.append(
                self.ll.add_debug_info(
                    "DIDerivedType",
                    {
                        "tag": ir.DIToken("DW_TAG_member"),
                        "name": self._string(m_args[0]),
                        "baseType": member_type[0],
                        "size": member_type[1],
                        "offset": self._constant(rest[0]),
                    },
                )
            )
        operands = {
            "tag": ir.DIToken(tag),
            "name": self._string(args[0]),
            "size": bits,
            "elements": members,
            "line": self._literal(args[3], ns),
        }
        if file is not None:
            operands["file"] = file
        return self.ll.add_debug_info("DICompositeType", operands), bits

    # -- variables -------------------------------------------------------------------

    def _function_of(self, scope_id: int, depth: int = 0) -> int | None:
        """The OpFunction a debug scope (function or lexical block) belongs to."""
        if scope_id in self.function_of_scope:
            return self.function_of_scope[scope_id]
        found = self.ext.get(scope_id)
        if found is None or found[0] != _LEXICAL_BLOCK or depth > 64:
            return None
        # DebugLexicalBlock: Source, Line, Column, Parent, [Name]
        return self._function_of(found[1][3], depth + 1)

    def _scope(self, scope_id: int, t: FunctionTranslator, depth: int = 0) -> ir.DIValue:
        """The LLVM scope of a debug scope in the function ``t`` translates: its
        subprogram, or a DILexicalBlock in it. A scope of another function (code inlined
        here) is the subprogram."""
        sp = self.subprograms[t.fn.id]
        found = self.ext.get(scope_id)
        if (
            found is None
            or found[0] != _LEXICAL_BLOCK
            or depth > 64
            or self._function_of(scope_id) != t.fn.id
        ):
            return sp
        key = (t.fn.id, scope_id)
        node = self._blocks.get(key)
        if node is None:
            _, args, ns = found  # Source, Line, Column, Parent, [Name]
            node = self._blocks[key] = self.ll.add_debug_info(
                "DILexicalBlock",
                {
                    "scope": self._scope(args[3], t, depth + 1),
                    "file": self._source_file(args[0]) or self._sp_files[t.fn.id],
                    "line": self._literal(args[1], ns),
                    "column": self._literal(args[2], ns),
                },
                is_distinct=True,
            )
        return node

    def _variable(self, var_id: int, t: FunctionTranslator) -> ir.DIValue | None:
        found = self.ext.get(var_id)
        if found is None or found[0] != _LOCAL_VARIABLE:
            return None
        _, args, ns = found
        sp = self.subprograms.get(t.fn.id)
        var_type = self.type(args[1])
        if sp is None or var_type is None:
            return None
        # A variable of another function whose code was inlined here (by the producer,
        # or into a barrier kernel's step function) becomes a variable of this one: LLVM
        # wants a variable's scope in its function's own subprogram. Not as a parameter,
        # which would clash with this function's own.
        own = self._function_of(args[5]) == t.fn.id
        operands = {
            "name": self._string(args[0]),
            "scope": self._scope(args[5], t) if own else sp,
            "file": self._source_file(args[2]) or self._sp_files[t.fn.id],
            "line": self._literal(args[3], ns),
            "type": var_type[0],
        }
        arg_number = args[7] if len(args) > 7 and own else None
        if arg_number is not None:
            operands["arg"] = self._literal(arg_number, ns)
        return self.ll.add_debug_info("DILocalVariable", operands)

    def instruction(self, t: FunctionTranslator, inst: Instruction) -> None:
        """A debug instruction in a function body: DebugDeclare and DebugValue become
        ``llvm.dbg.*`` calls; the others (scopes, lines) are read elsewhere or dropped."""
        number, args = inst.operands[1], inst.operands[2:]
        if number == _SCOPE and args:
            t.debug_scope = self._scope(args[0], t)
            return
        if number == _NO_SCOPE:
            t.debug_scope = None
            return
        if number not in (_DECLARE, _VALUE) or len(args) < 2:
            return
        variable = self._variable(args[0], t)
        if variable is None:
            return
        value = t.values.get(args[1])
        if value is None and number == _VALUE:
            inst_def = self.mt.module.defs.get(args[1])
            if inst_def is not None and inst_def.opname.startswith("OpConstant"):
                value = self.mt.constants.value(args[1])
        if not isinstance(value, ir.Value) or isinstance(value.type, ir.MetaDataType):
            return
        expression = self.ll.add_debug_info("DIExpression", {})
        builder = t.b
        if number == _DECLARE:
            if not isinstance(value.type, ir.PointerType):
                return
            if not isinstance(value, ir.AllocaInstr):
                # A slot of a barrier kernel's frame: its address (computed in the entry
                # block) goes in a stack slot that the variable is declared through, so
                # that the variable stays visible after every barrier.
                builder = t.alloca_builder
                holder = t.alloca(value.type)
                builder.store(value, holder)
                value, expression = holder, self._deref
            fn = self._declare_fn = self._declare_fn or self._intrinsic("llvm.dbg.declare")
        else:
            fn = self._value_fn = self._value_fn or self._intrinsic("llvm.dbg.value")
        builder.call(fn, [value, variable, expression])

    @functools.cached_property
    def _deref(self) -> ir.DIValue:
        return _DerefExpression(self.ll, False, "DIExpression", (), name=str(len(self.ll.metadata)))

    def _intrinsic(self, name: str) -> ir.Function:
        md = ir.MetaDataType()
        return self.mt.declare(name, ir.FunctionType(ir.VoidType(), [md, md, md]))

    def workitem_variables(self, t: FunctionTranslator, sp: ir.DIValue) -> None:
        """``spirvjit_gid`` and ``spirvjit_lid`` in the function's frame: the work-item's
        ids, computed at the function's entry (they do not change while it runs)."""
        b = t.alloca_builder
        size_t = self.ll.add_debug_info(
            "DIBasicType",
            {"name": "size_t", "size": 64, "encoding": ir.DIToken("DW_ATE_unsigned")},
        )
        array = self.ll.add_debug_info(
            "DICompositeType",
            {
                "tag": ir.DIToken("DW_TAG_array_type"),
                "baseType": size_t,
                "size": 192,
                "elements": [self.ll.add_debug_info("DISubrange", {"count": 3})],
            },
        )
        file = self._sp_files[t.fn.id]
        for name, query in (("spirvjit_gid", "global_id"), ("spirvjit_lid", "local_id")):
            slot = t.alloca(ir.ArrayType(I64, 3), name=name)
            for dim in range(3):
                value = self.mt.abi.workitem(b, t.hidden, query, dim)
                b.store(value, b.gep(slot, [I32(0), I32(dim)], source_etype=ir.ArrayType(I64, 3)))
            operands = {"name": name, "scope": sp, "file": file, "line": 0, "type": array}
            variable = self.ll.add_debug_info("DILocalVariable", operands)
            fn = self._declare_fn = self._declare_fn or self._intrinsic("llvm.dbg.declare")
            b.call(fn, [slot, variable, self.ll.add_debug_info("DIExpression", {})])


class _DerefExpression(ir.DIValue):
    """``!DIExpression(DW_OP_deref)``, which llvmlite's keyword-operand printing cannot
    spell: the variable is where the declared slot points."""

    def descr(self, buf: list[str]) -> None:
        buf += ("!DIExpression(DW_OP_deref)",)
