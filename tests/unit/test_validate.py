"""Structural checks (spirvjit/spirv/validate.py): modules spirv-val rejects for their
structure are a SpirvError at load, never another exception, an LLVM error, a memory
blow-up or code that runs. Each case was found by fuzzing or reported in issue 13;
before the checks they escaped as MemoryError (22 GB), RuntimeError from llvmlite,
KeyError, TypeError or AssertionError.
"""

from __future__ import annotations

import resource
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

import spirvjit
from spirvjit.errors import SpirvError

HEADER = """
               OpCapability Addresses
               OpCapability Kernel
               OpCapability Int64
               OpMemoryModel Physical64 OpenCL
               OpEntryPoint Kernel %k "k"
       %void = OpTypeVoid
       %uint = OpTypeInt 32 0
      %float = OpTypeFloat 32
     %uint_0 = OpConstant %uint 0
     %uint_1 = OpConstant %uint 1
     %uint_5 = OpConstant %uint 5
    %float_1 = OpConstant %float 1
     %v2uint = OpTypeVector %uint 2
     %struct = OpTypeStruct %uint %float
 %ptr_struct = OpTypePointer CrossWorkgroup %struct
   %ptr_uint = OpTypePointer CrossWorkgroup %uint
     %kernty = OpTypeFunction %void %ptr_struct
"""

KERNEL = """
          %k = OpFunction %void None %kernty
          %p = OpFunctionParameter %ptr_struct
      %entry = OpLabel
{body}
               OpReturn
               OpFunctionEnd
"""


def assemble(tmp_path: Path, text: str) -> bytes:
    spirv_as = shutil.which("spirv-as")
    if spirv_as is None:
        pytest.skip("spirv-as is not installed")
    source, binary = tmp_path / "m.spvasm", tmp_path / "m.spv"
    source.write_text(text)
    subprocess.run([spirv_as, "--target-env", "spv1.2", str(source), "-o", str(binary)], check=True)
    return binary.read_bytes()


def module(tmp_path: Path, body: str = "", types: str = "") -> bytes:
    return assemble(tmp_path, HEADER + types + KERNEL.format(body=body))


def refused(data: bytes, match: str) -> None:
    with pytest.raises(SpirvError, match=match):
        program = spirvjit.Program(data)
        program.kernel("k").compile()


def test_the_base_module_runs(tmp_path: Path) -> None:
    """The cases below differ from this valid module by one instruction."""
    program = spirvjit.Program(
        module(
            tmp_path,
            "%x = OpCompositeExtract %uint %v 1",
            "%v = OpConstantComposite %v2uint %uint_0 %uint_1\n",
        )
    )
    program.kernel("k").compile()


def test_vector_of_billions_of_components_is_refused_without_memory(tmp_path: Path) -> None:
    """The issue's 1.6 KB module: a vector of 2,866,505,235 lanes grew the process to
    22 GB (a null constant of it, as a Python list). Now: refused in the reader, and
    the test process' address space is capped so a regression fails instead of
    swapping."""
    data = module(
        tmp_path,
        types="%huge = OpTypeVector %uint 2866505235\n%null = OpConstantNull %huge\n",
    )
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    resource.setrlimit(resource.RLIMIT_DATA, (8 << 30, hard))
    try:
        refused(data, "vector of 2866505235 components")
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


@pytest.mark.parametrize(
    ("types", "body", "match"),
    [
        ("%big = OpTypeArray %uint %uint_0\n", "", "array length 0"),
        ("%i7 = OpTypeInt 7 0\n", "", "integer type of width 7"),
        # 128 bits only with SPV_ALTERA_arbitrary_precision_integers (HIP's __int128).
        ("%i128 = OpTypeInt 128 0\n", "", "integer type of width 128"),
        ("%f8 = OpTypeFloat 8\n", "", "unsupported floating-point type"),
        ("%vv = OpTypeVector %v2uint 2\n", "", "lanes must be scalars"),
        ("%sv = OpTypeStruct %void\n", "", "struct member type .* is void"),
        ("%bad = OpConstantComposite %v2uint %uint_0\n", "", "1 constituents for a type of 2"),
        ("", "%x = OpCompositeExtract %float %p 0", "index 0 into a Pointer"),
        (
            "%v = OpConstantComposite %v2uint %uint_0 %uint_1\n",
            "%x = OpCompositeExtract %uint %v 2",
            "index 2 out of range",
        ),
        (
            "%v = OpConstantComposite %v2uint %uint_0 %uint_1\n",
            "%x = OpVectorShuffle %v2uint %v %v 0 4",
            "component 4 of 4 lanes",
        ),
        ("", "%x = OpInBoundsPtrAccessChain %ptr_uint %p %uint_0 %uint_5", "member 5 of a struct"),
        ("", "%x = OpIAdd %uint %uint %uint_1", "is a TypeInt, not a value"),
        ("", "%x = OpIAdd %uint %entry %uint_1", "is a Label, not a value"),
        ("", "%x = OpIAdd %uint %k %uint_1", "is a Function, not a value"),
        ("", "%x = OpFunctionCall %void %k", "0 arguments for a function of 1"),
        ("", "%x = OpFunctionCall %void %uint_1 %p", "is not a function"),
        ("", "OpBranch %uint_1\n%next = OpLabel", "is not a label of this function"),
    ],
)
def test_structural_errors_are_spirv_errors(tmp_path: Path, types, body, match) -> None:
    refused(module(tmp_path, body, types), match)


def test_global_variable_of_a_function_type_is_refused(tmp_path: Path) -> None:
    """Found by tests/spirv_fuzz.py: llvmlite's 'invalid type for global variable'
    RuntimeError escaped from the translator."""
    types = "%fnptr = OpTypePointer CrossWorkgroup %kernty\n%g = OpVariable %fnptr CrossWorkgroup\n"
    refused(module(tmp_path, "", types), "the variable's type .* is function")


def test_half_constant_with_a_32_bit_literal_is_refused(tmp_path: Path) -> None:
    """A half constant whose literal word has high bits set: struct.error escaped from
    the constant folder before. spirv-as refuses to write one, so the word is patched."""
    data = bytearray(
        module(tmp_path, "", "%half = OpTypeFloat 16\n%h = OpConstant %half 1.0009765625\n")
    )
    at = data.index(struct.pack("<I", 0x3C01))
    data[at : at + 4] = struct.pack("<I", 0x12345)
    refused(bytes(data), "wider than the type")


def test_kernel_returning_a_value_is_refused(tmp_path: Path) -> None:
    text = (HEADER + KERNEL.format(body="")).replace(
        "%kernty = OpTypeFunction %void %ptr_struct", "%kernty = OpTypeFunction %uint %ptr_struct"
    )
    text = text.replace("%k = OpFunction %void", "%k = OpFunction %uint")
    refused(assemble(tmp_path, text.replace("OpReturn\n", "OpReturnValue %uint_0\n")), "returns")


def test_decorating_a_missing_member_is_refused(tmp_path: Path) -> None:
    text = HEADER.replace(
        "       %void = OpTypeVoid",
        "               OpMemberDecorate %struct 9 Volatile\n       %void = OpTypeVoid",
    )
    refused(assemble(tmp_path, text + KERNEL.format(body="")), "member 9 of a struct of 2")
