"""clang's T[0xFFFFFFFF] (HIP ``extern __shared__`` arrays) is accepted by the SPIR-V
validator only where clang puts it: an imported Workgroup variable and the Workgroup
and Generic pointers to it. Anywhere else it is a 16-32 GiB object (a variable, a
value, a member, a whole-object copy) and the module is refused at load with a
SpirvError. Before, every storage class was accepted (commit 29b5730), and a composite
constant of such a type made the validator build a list of 2**32 members.
"""

from __future__ import annotations

import resource
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import spirvjit
from spirvjit.errors import SpirvError
from spirvjit.spirv.grammar import StorageClass
from spirvjit.spirv.reader import read_module
from spirvjit.toolchain import find_tool

# A kernel that writes 3 into an extern __shared__ array and copies it out, spelled as
# clang spells it: the imported Workgroup variable is cast to a generic pointer first.
TEMPLATE = """
               OpCapability Addresses
               OpCapability Kernel
               OpCapability Int64
               OpCapability Linkage
               OpCapability GenericPointer
               OpMemoryModel Physical64 OpenCL
               OpEntryPoint Kernel %k "k"
               OpDecorate %dyn LinkageAttributes "dyn" Import
       %void = OpTypeVoid
       %uint = OpTypeInt 32 0
      %ulong = OpTypeInt 64 0
     %uint_0 = OpConstant %uint 0
     %uint_3 = OpConstant %uint 3
   %uint_max = OpConstant %uint 4294967295
    %unsized = OpTypeArray %uint %uint_max
 %ptr_wg_uns = OpTypePointer Workgroup %unsized
%ptr_gen_uns = OpTypePointer Generic %unsized
%ptr_gen_uint = OpTypePointer Generic %uint
   %ptr_uint = OpTypePointer CrossWorkgroup %uint
     %kernty = OpTypeFunction %void %ptr_uint
        %dyn = OpVariable %ptr_wg_uns Workgroup
{types}
          %k = OpFunction %void None %kernty
          %p = OpFunctionParameter %ptr_uint
      %entry = OpLabel
          %g = OpPtrCastToGeneric %ptr_gen_uns %dyn
          %e = OpInBoundsAccessChain %ptr_gen_uint %g %uint_0
               OpStore %e %uint_3
          %v = OpLoad %uint %e
               OpStore %p %v
{body}
               OpReturn
               OpFunctionEnd
"""


def assemble(tmp_path: Path, types: str = "", body: str = "") -> bytes:
    spirv_as = shutil.which("spirv-as")
    if spirv_as is None:
        pytest.skip("spirv-as is not installed")
    source, binary = tmp_path / "m.spvasm", tmp_path / "m.spv"
    source.write_text(TEMPLATE.format(types=types, body=body))
    subprocess.run([spirv_as, "--target-env", "spv1.2", str(source), "-o", str(binary)], check=True)
    return binary.read_bytes()


def refused_at_load(data: bytes, match: str) -> None:
    """Program() reads and validates: the module never reaches the translator. The
    address space is capped so that a 2**32-element list fails the test, not the box."""
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    resource.setrlimit(resource.RLIMIT_DATA, (8 << 30, hard))
    try:
        with pytest.raises(SpirvError, match=match):
            spirvjit.Program(data)
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def test_the_extern_shared_spelling_runs(tmp_path: Path) -> None:
    """The cases below differ from this valid module by a type or an instruction."""
    out = np.zeros(1, np.uint32)
    spirvjit.Program(assemble(tmp_path)).k(out, global_size=1, shared_mem=16)
    assert out[0] == 3


@pytest.mark.parametrize("storage", ["Function", "CrossWorkgroup", "UniformConstant"])
def test_unsized_array_outside_workgroup_storage_is_refused(tmp_path: Path, storage) -> None:
    types = f"%bad_ptr = OpTypePointer {storage} %unsized\n"
    if storage != "Function":
        types += f"%bad_var = OpVariable %bad_ptr {storage}\n"
    body = "%local = OpVariable %bad_ptr Function" if storage == "Function" else ""
    data = assemble(tmp_path, types, body)
    refused_at_load(data, rf"pointer type %\d+ in {storage} storage to the unsized array %\d+")


@pytest.mark.parametrize(
    ("types", "body", "match"),
    [
        ("%null = OpConstantNull %unsized\n", "", "a value of the unsized array type"),
        ("%cc = OpConstantComposite %unsized %uint_3\n", "", "a value of the unsized array"),
        ("%u = OpUndef %unsized\n", "", "a value of the unsized array type"),
        ("", "%whole = OpLoad %unsized %g", "a value of the unsized array type"),
        ("", "OpCopyMemory %g %g", "copies the unsized array"),
        ("%s = OpTypeStruct %uint %unsized\n", "", "struct member type .* is an unsized array"),
        ("%aa = OpTypeArray %unsized %uint_3\n", "", "array element type .* is an unsized"),
        ("%ra = OpTypeRuntimeArray %unsized\n", "", "array element type .* is an unsized"),
        ("%ft = OpTypeFunction %void %unsized\n", "", "parameter type .* is an unsized"),
        ("%rt = OpTypeFunction %unsized\n", "", "return type .* is an unsized array"),
        ("%dyn2 = OpVariable %ptr_wg_uns Workgroup\n", "", "not imported"),
        # Only a 32-bit OpConstant length of 0xFFFFFFFF is clang's spelling.
        ("%c = OpConstant %ulong 4294967295\n%a = OpTypeArray %uint %c\n", "", "length 4294"),
        ("%c = OpSpecConstant %uint 4294967295\n%a = OpTypeArray %uint %c\n", "", "length 4294"),
    ],
)
def test_unsized_arrays_elsewhere_are_refused(tmp_path: Path, types, body, match) -> None:
    refused_at_load(assemble(tmp_path, types, body), match)


HIP = """
#include <hip/hip_runtime.h>
__global__ void reverse(const float* in, float* out) {
  extern __shared__ float buffer[];
  unsigned t = threadIdx.x;
  buffer[t] = in[t];
  __syncthreads();
  out[t] = buffer[blockDim.x - 1 - t];
}
"""


@pytest.mark.skipif(
    find_tool("clang") is None or find_tool("opt") is None or find_tool("llc") is None,
    reason="clang-22, opt-22 and llc-22 are needed to compile HIP",
)
@pytest.mark.parametrize(
    "storage", [StorageClass.Function, StorageClass.CrossWorkgroup], ids=lambda s: s.name
)
def test_mutated_hip_module_with_unsized_array_elsewhere_is_refused(storage) -> None:
    """Fuzz-style: clang's own module for an extern __shared__ kernel, with the storage
    class of the pointer to the unsized array mutated. The unmutated module runs."""
    program = spirvjit.compile_hip(HIP)
    x = np.arange(64, dtype=np.float32)
    out = np.zeros_like(x)
    program.reverse(x, out, grid=1, block=64, shared_mem=64 * 4)
    np.testing.assert_array_equal(out, x[::-1])

    spirv = bytearray(program.spirv)
    module = read_module(bytes(spirv))
    unsized = {
        inst.result_id
        for inst in module.globals
        if inst.opname == "OpTypeArray" and module.defs[inst.operands[1]].operands[0] == 0xFFFFFFFF
    }
    mutated = [
        inst
        for inst in module.globals
        if inst.opname == "OpTypePointer"
        and inst.operands[0] == StorageClass.Workgroup
        and inst.operands[1] in unsized
    ]
    assert mutated, "clang no longer spells extern __shared__ as T[0xFFFFFFFF]"
    word = (mutated[0].offset + 2) * 4  # OpTypePointer: opcode, result id, storage class
    spirv[word : word + 4] = int(storage).to_bytes(4, "little")
    refused_at_load(
        bytes(spirv),
        rf"pointer type %{mutated[0].result_id} in {storage.name} storage to the unsized array",
    )


SPECIALIZED = """
               OpCapability Addresses
               OpCapability Kernel
               OpCapability Int64
               OpMemoryModel Physical64 OpenCL
               OpEntryPoint Kernel %k "k"
               OpDecorate %len SpecId 7
       %void = OpTypeVoid
       %uint = OpTypeInt 32 0
     %uint_0 = OpConstant %uint 0
     %uint_3 = OpConstant %uint 3
        %len = OpSpecConstant %uint 4
        %arr = OpTypeArray %uint %len
     %ptr_fn = OpTypePointer Function %arr
   %ptr_fn_u = OpTypePointer Function %uint
   %ptr_uint = OpTypePointer CrossWorkgroup %uint
     %kernty = OpTypeFunction %void %ptr_uint
          %k = OpFunction %void None %kernty
          %p = OpFunctionParameter %ptr_uint
      %entry = OpLabel
          %a = OpVariable %ptr_fn Function
          %e = OpInBoundsAccessChain %ptr_fn_u %a %uint_0
               OpStore %e %uint_3
          %v = OpLoad %uint %e
               OpStore %p %v
               OpReturn
               OpFunctionEnd
"""


def test_array_length_from_a_spec_constant_is_checked_after_specialization(
    tmp_path: Path,
) -> None:
    """The validator sees the default length (4); a launch-time value of 0xFFFFFFFF made a
    private array of 2**32 elements, and 0 one of none: both ran before."""
    spirv_as = shutil.which("spirv-as")
    if spirv_as is None:
        pytest.skip("spirv-as is not installed")
    source, binary = tmp_path / "m.spvasm", tmp_path / "m.spv"
    source.write_text(SPECIALIZED)
    subprocess.run([spirv_as, "--target-env", "spv1.2", str(source), "-o", str(binary)], check=True)
    data = binary.read_bytes()
    out = np.zeros(1, np.uint32)
    spirvjit.Program(data, spec_constants={7: 1 << 24}).k(out, global_size=1)
    assert out[0] == 3
    for length in (0xFFFFFFFF, 0, (1 << 24) + 1):
        program = spirvjit.Program(data, spec_constants={7: length})
        with pytest.raises(SpirvError, match=f"array length {length} after specialization"):
            program.kernel("k").compile()
