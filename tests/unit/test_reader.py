"""Tests of spirvjit.spirv.reader: decoding real and hand-made modules, and rejecting
malformed ones with SpirvError at the right word offset."""

from __future__ import annotations

import shutil
import struct
import subprocess
import time
from array import array
from pathlib import Path

import pytest

from spirvjit.errors import SpirvError
from spirvjit.spirv import grammar
from spirvjit.spirv.grammar import OPCODES
from spirvjit.spirv.reader import read_module

DATA = Path(__file__).resolve().parents[1] / "data"
CLANG22_FIXTURE = DATA / "reader_kernels.clang22.spv"
LLVM_SPIRV15_FIXTURE = DATA / "reader_kernels.llvm-spirv15.spv"
FIXTURES = sorted(DATA.glob("reader_kernels.*.spv"))

# A module exercising spec constants, decoration groups, member decorations and names,
# OpDecorateId/OpDecorateString, OpExecutionModeId, a forward pointer, a 64-bit switch
# selector, OpPhi/branch forward references and OpExtInst. spirv-val accepts it.
ASSEMBLY = """\
               OpCapability Addresses
               OpCapability Kernel
               OpCapability Int64
               OpCapability Float64
               OpCapability Linkage
        %std = OpExtInstImport "OpenCL.std"
               OpMemoryModel Physical64 OpenCL
               OpEntryPoint Kernel %main "main" %gid
               OpExecutionModeId %main LocalSizeId %c8 %c1 %c1
               OpSource OpenCL_C 200000
               OpName %main "main"
               OpName %dup "x"
               OpName %dup2 "x"
               OpName %odd "a-b c"
               OpMemberName %S 0 "first"
               OpMemberName %S 1 "second"
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %sc SpecId 3
               OpDecorate %sf SpecId 4
               OpMemberDecorate %S 1 Volatile
               OpDecorateString %p0 UserSemantic "hello"
               OpDecorate %grp Restrict
               OpDecorate %grp Alignment 16
        %grp = OpDecorationGroup
               OpGroupDecorate %grp %p0 %p1
               OpGroupMemberDecorate %grp %S 0 %S 1
               OpDecorateId %odd AlignmentId %c8
               OpTypeForwardPointer %fp CrossWorkgroup
       %uint = OpTypeInt 32 0
      %ulong = OpTypeInt 64 0
      %float = OpTypeFloat 32
     %double = OpTypeFloat 64
       %bool = OpTypeBool
       %void = OpTypeVoid
          %S = OpTypeStruct %uint %fp
         %fp = OpTypePointer CrossWorkgroup %S
     %v3long = OpTypeVector %ulong 3
      %ptrin = OpTypePointer Input %v3long
      %ptrcw = OpTypePointer CrossWorkgroup %uint
         %c1 = OpConstant %uint 1
         %c8 = OpConstant %uint 8
        %big = OpConstant %ulong 5000000000
         %pi = OpConstant %float 3.25
         %dd = OpConstant %double -2.5e-300
         %sc = OpSpecConstant %uint 7
         %sf = OpSpecConstantTrue %bool
        %sop = OpSpecConstantOp %uint IAdd %sc %c8
        %odd = OpSpecConstantComposite %v3long %big %big %big
        %und = OpUndef %uint
        %gid = OpVariable %ptrin Input
       %fnty = OpTypeFunction %void %ptrcw %ptrcw
       %main = OpFunction %void None %fnty
         %p0 = OpFunctionParameter %ptrcw
         %p1 = OpFunctionParameter %ptrcw
      %entry = OpLabel
         %id = OpLoad %v3long %gid Aligned 32
         %i0 = OpCompositeExtract %ulong %id 0
               OpBranch %loop
       %loop = OpLabel
        %dup = OpPhi %uint %c1 %entry %dup2 %cont
               OpLoopMerge %exit %cont None
               OpBranch %body
       %body = OpLabel
               OpSwitch %i0 %cont 1 %cont 5000000000 %exit
       %cont = OpLabel
       %dup2 = OpIAdd %uint %dup %sop
         %mx = OpExtInst %uint %std u_max %dup2 %c8
       %cond = OpULessThan %bool %mx %c8
               OpBranchConditional %cond %loop %exit
       %exit = OpLabel
               OpStore %p1 %dup Volatile|Aligned 4
               OpReturn
               OpFunctionEnd
"""


def need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} is not installed")
    return path


def assemble(text: str, tmp_path: Path, target_env: str = "spv1.4") -> bytes:
    """Assemble SPIR-V text with spirv-as (skipping the test where it is missing)."""
    spirv_as = need("spirv-as")
    source, binary = tmp_path / "m.spvasm", tmp_path / "m.spv"
    source.write_text(text)
    subprocess.run(
        [spirv_as, "--target-env", target_env, str(source), "-o", str(binary)], check=True
    )
    return binary.read_bytes()


def byteswapped(data: bytes) -> bytes:
    words = array("I", data)
    words.byteswap()
    return words.tobytes()


# -- hand-built binaries -------------------------------------------------------------


def string_words(text: str) -> list[int]:
    raw = text.encode() + b"\0"
    raw += b"\0" * (-len(raw) % 4)
    return list(struct.unpack(f"<{len(raw) // 4}I", raw))


def inst(opname: str, *operands: int | str, word_count: int | None = None) -> list[int]:
    """One instruction's words; str operands become nul-terminated strings."""
    words: list[int] = []
    for operand in operands:
        words += string_words(operand) if isinstance(operand, str) else [operand]
    count = len(words) + 1 if word_count is None else word_count
    return [count << 16 | OPCODES[opname], *words]


def build(*insts: list[int], bound: int = 100, version: int = 0x00010000) -> bytes:
    words = [grammar.MAGIC_NUMBER, version, 0, bound, 0]
    for words_of_one in insts:
        words += words_of_one
    return struct.pack(f"<{len(words)}I", *words)


def offset_of(index: int, *insts: list[int]) -> int:
    """Word offset of instruction ``index`` in ``build(*insts)``."""
    return 5 + sum(len(words) for words in insts[:index])


KERNEL = grammar.Capability.Kernel
ADDRESSES = grammar.Capability.Addresses
MEMORY_MODEL = inst("OpMemoryModel", grammar.AddressingModel.Physical64, grammar.MemoryModel.OpenCL)
PREAMBLE = [inst("OpCapability", ADDRESSES), inst("OpCapability", KERNEL), MEMORY_MODEL]
VOID, FN_TYPE, FN, LABEL = 1, 2, 3, 4
TYPES = [inst("OpTypeVoid", VOID), inst("OpTypeFunction", FN_TYPE, VOID)]
FUNCTION = [
    inst("OpFunction", VOID, FN, 0, FN_TYPE),
    inst("OpLabel", LABEL),
    inst("OpReturn"),
    inst("OpFunctionEnd"),
]
VALID = [*PREAMBLE, *TYPES, *FUNCTION]


def test_minimal_hand_built_module() -> None:
    module = read_module(build(*VALID))
    assert module.version == (1, 0)
    assert module.bound == 100
    assert module.capabilities == [ADDRESSES, KERNEL]
    assert (module.addressing_model, module.memory_model) == (2, 2)
    assert [inst.opname for inst in module.globals] == ["OpTypeVoid", "OpTypeFunction"]
    (fn,) = module.functions
    assert (fn.id, fn.result_type, fn.control, fn.function_type) == (FN, VOID, 0, FN_TYPE)
    assert [b.label_id for b in fn.blocks] == [LABEL]
    assert [i.opname for i in fn.blocks[0].instructions] == ["OpReturn"]
    assert len(module.instructions) == len(VALID)
    assert set(module.defs) == {VOID, FN_TYPE, FN, LABEL}


def test_accepts_all_input_types() -> None:
    data = build(*VALID)
    for form in (data, bytearray(data), memoryview(data)):
        assert len(read_module(form).instructions) == len(VALID)


# -- real modules --------------------------------------------------------------------


def test_clang22_fixture() -> None:
    module = read_module(CLANG22_FIXTURE.read_bytes())
    assert not module.big_endian
    names = {ep.name: ep for ep in module.entry_points}
    assert set(names) == {"add", "sw", "dbl"}
    dbl = names["dbl"].function_id
    modes = {m.mode: m.operands for m in module.execution_modes[dbl]}
    assert modes[grammar.ExecutionMode.LocalSize] == [8, 1, 1]
    builtins = {
        d.operands[0]
        for target in module.defs
        for d in module.decorations_of(target, grammar.Decoration.BuiltIn)
    }
    assert grammar.BuiltIn.GlobalInvocationId in builtins
    assert module.ext_inst_imports == {1: "OpenCL.std"}
    fma = [i for i in module.instructions if i.opname == "OpExtInst" and i.operands[1] == 26]
    assert fma and fma[0].operands[0] == 1 and len(fma[0].operands) == 5
    assert fma[0].kinds[:2] == ("IdRef", "LiteralExtInstInteger")
    assert_structure(module)


def test_llvm_spirv15_fixture_and_64bit_switch() -> None:
    module = read_module(LLVM_SPIRV15_FIXTURE.read_bytes())
    (switch,) = [i for i in module.instructions if i.opname == "OpSwitch"]
    assert switch.operands[2::2] == [1, 5_000_000_000]
    constants = [i for i in module.globals if i.opname == "OpConstant"]
    doubles = [i for i in constants if module.defs[i.result_type].opname == "OpTypeFloat"]
    assert struct.pack("<Q", 0x400A000000000000) == struct.pack("<d", 3.25)
    assert 0x400A000000000000 in [c.operands[0] for c in doubles]
    assert_structure(module)


def assert_structure(module) -> None:
    """Invariants every read module keeps."""
    for fn in module.functions:
        for block in fn.blocks:
            assert block.instructions, "a block holds at least its terminator"
            for inst in block.instructions:
                assert inst.opname not in ("OpLine", "OpNoLine", "OpLabel")
    for inst in module.instructions:
        assert len(inst.operands) == len(inst.kinds)
        if inst.result_id is not None:
            assert module.defs[inst.result_id] is inst


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_both_endiannesses_agree(path: Path) -> None:
    data = path.read_bytes()
    little, big = read_module(data), read_module(byteswapped(data))
    assert big.big_endian and not little.big_endian
    assert big.instructions == little.instructions
    assert big.names == little.names


def test_fresh_clang22_output(tmp_path: Path) -> None:
    clang = need("clang-22")
    source = tmp_path / "k.cl"
    source.write_text(
        "__kernel void k(__global uint *o, uint n) {\n"
        "  uint i = get_global_id(0);\n"
        "  if (i < n) o[i] = popcount(i) + (uint)(sqrt((float)i) * 0.5f);\n"
        "}\n"
    )
    out = tmp_path / "k.spv"
    cmd = [clang, "-cl-std=CL3.0", "--target=spirv64", "-O2", "-c", str(source), "-o", str(out)]
    subprocess.run(cmd, check=True)
    module = read_module(out.read_bytes())
    assert [ep.name for ep in module.entry_points] == ["k"]
    assert_structure(module)


def test_hand_assembled_module(tmp_path: Path) -> None:
    module = read_module(assemble(ASSEMBLY, tmp_path))
    by_name = {v: k for k, v in module.names.items() if v != "x"}
    main = by_name["main"]
    assert module.version == (1, 4)
    (mode,) = module.execution_modes[main]
    assert mode.mode == grammar.ExecutionMode.LocalSizeId and len(mode.operands) == 3
    members = {key[1]: name for key, name in module.member_names.items()}
    assert members == {0: "first", 1: "second"}
    (struct_id,) = {key[0] for key in module.member_names}

    def kinds_of(decorations):
        return sorted((d.decoration, tuple(d.operands)) for d in decorations)

    restrict, alignment = grammar.Decoration.Restrict, grammar.Decoration.Alignment
    group = [(restrict, ()), (alignment, (16,))]
    params = [i.result_id for i in module.functions[0].parameters]
    assert kinds_of(module.decorations[params[1]]) == sorted(group)
    user = (grammar.Decoration.UserSemantic, ("hello",))
    assert kinds_of(module.decorations[params[0]]) == sorted([*group, user])
    assert kinds_of(module.member_decorations[(struct_id, 0)]) == sorted(group)
    volatile = (grammar.Decoration.Volatile, ())
    assert kinds_of(module.member_decorations[(struct_id, 1)]) == sorted([*group, volatile])
    groups = [i.result_id for i in module.instructions if i.opname == "OpDecorationGroup"]
    assert groups and groups[0] not in module.decorations
    assert kinds_of(module.decorations[by_name["a-b c"]])[0][0] == grammar.Decoration.AlignmentId

    spec = {i.opname: i for i in module.globals if i.opname.startswith("OpSpecConstant")}
    assert spec["OpSpecConstant"].operands == [7]
    assert spec["OpSpecConstant"].kinds == ("LiteralContextDependentNumber",)
    assert module.decorations_of(spec["OpSpecConstant"].result_id, grammar.Decoration.SpecId)
    spec_op = spec["OpSpecConstantOp"]
    assert spec_op.operands[0] == OPCODES["OpIAdd"]
    assert spec_op.kinds == ("LiteralSpecConstantOpInteger", "IdRef", "IdRef")
    constants = [i.operands[0] for i in module.globals if i.opname == "OpConstant"]
    assert constants[:3] == [1, 8, 5_000_000_000]
    assert struct.unpack("<f", struct.pack("<I", constants[3]))[0] == 3.25
    assert struct.unpack("<d", struct.pack("<Q", constants[4]))[0] == -2.5e-300
    assert "OpTypeForwardPointer" in [i.opname for i in module.globals]

    (fn,) = module.functions
    assert len(fn.blocks) == 5
    switch = fn.blocks[2].instructions[-1]
    assert switch.opname == "OpSwitch" and switch.operands[2::2] == [1, 5_000_000_000]
    store = fn.blocks[-1].instructions[0]
    access = grammar.MemoryAccess.Volatile | grammar.MemoryAccess.Aligned
    assert store.operands[2:] == [access, 4]
    assert store.kinds[2:] == ("MemoryAccess", "LiteralInteger")
    ext = [i for i in fn.blocks[3].instructions if i.opname == "OpExtInst"][0]
    assert ext.operands[1] == grammar.OpenCLStd.u_max and len(ext.operands) == 4
    assert_structure(module)
    big = read_module(byteswapped(assemble(ASSEMBLY, tmp_path)))
    assert big.instructions == module.instructions


def test_large_module_parses_fast() -> None:
    """~100 KB of constants and arithmetic: parse time stays well under 100 ms."""
    uint, fn_type, fn, label = 1, 2, 3, 4
    insts = [*PREAMBLE, inst("OpTypeInt", uint, 32, 0), inst("OpTypeFunction", fn_type, uint)]
    next_id = 10
    for value in range(2000):
        insts.append(inst("OpConstant", uint, next_id, value))
        next_id += 1
    insts += [inst("OpFunction", uint, fn, 0, fn_type), inst("OpLabel", label)]
    for _ in range(4000):
        insts.append(inst("OpIAdd", uint, next_id, next_id - 1, 10))
        next_id += 1
    insts += [inst("OpReturnValue", next_id - 1), inst("OpFunctionEnd")]
    data = build(*insts, bound=next_id)
    assert len(data) > 100_000
    best = min(_time(read_module, data) for _ in range(3))
    assert best < 0.1, f"{len(data)} bytes took {best * 1000:.1f} ms"


def _time(fn, *args) -> float:
    """CPU seconds of ``fn(*args)`` on this thread: unlike wall time, not inflated when
    other processes load the machine."""
    start = time.thread_time()
    fn(*args)
    return time.thread_time() - start


# -- malformed input -----------------------------------------------------------------


def raises_at(data: bytes, offset: int | None, fragment: str) -> SpirvError:
    with pytest.raises(SpirvError) as info:
        read_module(data)
    assert info.value.offset == offset, str(info.value)
    assert fragment in info.value.message, str(info.value)
    return info.value


def test_size_not_multiple_of_4() -> None:
    raises_at(build(*VALID) + b"\0\0", (len(build(*VALID)) + 2) // 4, "multiple of 4")


@pytest.mark.parametrize("size", [0, 4, 16])
def test_header_truncated(size: int) -> None:
    raises_at(build()[:size], size // 4, "header truncated")


def test_bad_magic() -> None:
    raises_at(b"\x01\x02\x03\x04" + build(*VALID)[4:], 0, "magic")


def test_bad_version() -> None:
    raises_at(build(*VALID, version=0x00020000), 1, "version")
    raises_at(build(*VALID, version=0x00010700), 1, "version")


def case(index: int, insts: list[list[int]], fragment: str, bound: int = 100):
    """(data, offset, fragment) for instruction ``index`` of ``insts`` being the culprit."""
    return build(*insts, bound=bound), offset_of(index, *insts), fragment


def _replace(index: int, new: list[int]) -> list[list[int]]:
    insts = list(VALID)
    insts[index] = new
    return insts


def _insert(index: int, *new: list[int]) -> list[list[int]]:
    return [*VALID[:index], *new, *VALID[index:]]


T = len(PREAMBLE)  # index of the first type
F = T + len(TYPES)  # index of OpFunction

MALFORMED = {
    "word count 0": case(T, _replace(T, inst("OpTypeVoid", VOID, word_count=0)), "word count"),
    "past the end": case(len(VALID), [*VALID, inst("OpNop", word_count=3)], "past the end"),
    "unknown opcode": case(T, _replace(T, [1 << 16 | 0xFFFE]), "unknown opcode"),
    "too few operands": case(T, _insert(T, inst("OpTypeInt", 9, 32)), "too few"),
    "too few: missing result": case(T, _replace(T, inst("OpTypeVoid")), "too few"),
    "too many operands": case(T, _replace(T, inst("OpTypeVoid", VOID, 7)), "too many"),
    "value enum": case(0, _replace(0, inst("OpCapability", 0xFFFF)), "not in the grammar"),
    "bit enum": case(F, _replace(F, inst("OpFunction", VOID, FN, 1 << 30, FN_TYPE)), "bit"),
    "enum parameter missing": case(
        T, _insert(T, inst("OpDecorate", VOID, grammar.Decoration.Alignment)), "too few"
    ),
    "string without nul": case(
        1, _insert(1, [2 << 16 | OPCODES["OpExtension"], int.from_bytes(b"SPV_", "little")]), "nul"
    ),
    "string not UTF-8": case(
        1, _insert(1, [2 << 16 | OPCODES["OpExtension"], 0x00FFFEFF]), "UTF-8"
    ),
    "id 0": case(T, _replace(T, inst("OpTypeVoid", 0)), "out of range"),
    "id at the bound": case(T, _replace(T, inst("OpTypeVoid", 100)), "out of range"),
    "reference at the bound": case(
        T + 1, _replace(T + 1, inst("OpTypeFunction", FN_TYPE, 100)), "out of range"
    ),
    "defined twice": case(T + 1, _insert(T + 1, inst("OpTypeBool", VOID)), "defined twice"),
    "used before definition": case(
        T, _insert(T, inst("OpTypePointer", 9, grammar.StorageClass.Function, VOID)), "before"
    ),
    "never defined": case(T, _insert(T, inst("OpName", 50, "x")), "never defined"),
    "label outside a function": case(T, _insert(T, inst("OpLabel", 9)), "outside a function"),
    "no OpFunctionEnd": case(F, VALID[:-1], "no OpFunctionEnd"),
    "block without terminator": case(F + 2, [*VALID[: F + 2], VALID[-1]], "no terminator"),
    "block without terminator before label": case(
        F + 2, [*VALID[: F + 2], inst("OpLabel", 9), *VALID[F + 2 :]], "no terminator"
    ),
    "instruction after terminator": case(
        F + 3, _insert(F + 3, inst("OpNot", VOID, 9, VOID)), "outside a block"
    ),
    "parameter after label": case(
        F + 2, _insert(F + 2, inst("OpFunctionParameter", VOID, 9)), "first block"
    ),
    "type inside function": case(F + 2, _insert(F + 2, inst("OpTypeBool", 9)), "inside a function"),
    "capability after memory model": case(3, _insert(3, inst("OpCapability", KERNEL)), "order"),
    "type after function": case(len(VALID), [*VALID, inst("OpTypeBool", 9)], "order"),
    "second memory model": case(3, _insert(3, MEMORY_MODEL), "second OpMemoryModel"),
    "missing memory model": case(2, [VALID[0], VALID[1], *VALID[3:]], "OpMemoryModel"),
    "constant of non-number": case(
        T + 2, _insert(T + 2, inst("OpConstant", VOID, 9, 0)), "not an integer"
    ),
    "ext inst set not imported": case(
        F + 2, _insert(F + 2, inst("OpExtInst", VOID, 9, VOID, 0)), "OpExtInstImport"
    ),
    "unknown OpenCL.std instruction": case(
        F + 3,
        [
            *PREAMBLE[:2],
            inst("OpExtInstImport", 20, "OpenCL.std"),
            *VALID[2 : F + 2],
            inst("OpExtInst", VOID, 9, 20, 100_000),
            *VALID[F + 2 :],
        ],
        "unknown OpenCL.std",
    ),
    "group decorate of a non-group": case(
        T, _insert(T, inst("OpGroupDecorate", VOID, FN)), "not an OpDecorationGroup"
    ),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed(name: str) -> None:
    data, offset, fragment = MALFORMED[name]
    raises_at(data, offset, fragment)


def test_missing_memory_model_at_end() -> None:
    raises_at(build(*PREAMBLE[:2]), offset_of(2, *PREAMBLE[:2]), "no OpMemoryModel")


def test_error_names_the_instruction() -> None:
    data, offset, _ = MALFORMED["too many operands"]
    error = raises_at(data, offset, "too many")
    assert error.opname == "OpTypeVoid"
    assert f"word {offset}" in str(error)
