"""A non-semantic instruction using another's (void) result across a barrier.

Found by the SPIR-V mutation fuzzer (``python3 -m tests.spirv_fuzz --count 300 --seed
40000``, input 113: an OpenCL.DebugInfo.100 instruction made to name another one's
result). The same holds for valid modules: instructions of a ``NonSemantic.*`` set may
name each other's results (all of type void), and spirv-val accepts this one. The
barrier split kept every value live across the barrier in the work-item frame, the void
result too, and llvmlite's assertion on a pointer to void escaped the compile (neither a
result nor a CompileError). A void result has no value to keep.
"""

from __future__ import annotations

import numpy as np
import pytest
from harness import assemble

import spirvjit

SOURCE = """
               OpCapability Addresses
               OpCapability Kernel
               OpCapability Int64
               OpExtension "SPV_KHR_non_semantic_info"
         %ns = OpExtInstImport "NonSemantic.Spirvjit.Test"
               OpMemoryModel Physical64 OpenCL
               OpEntryPoint Kernel %k "k" %gid
               OpDecorate %gid BuiltIn GlobalInvocationId
               OpDecorate %gid Constant
      %ulong = OpTypeInt 64 0
       %uint = OpTypeInt 32 0
       %void = OpTypeVoid
    %v3ulong = OpTypeVector %ulong 3
  %ptr_in_v3 = OpTypePointer Input %v3ulong
 %ptr_g_uint = OpTypePointer CrossWorkgroup %uint
      %fn_ty = OpTypeFunction %void %ptr_g_uint
     %uint_2 = OpConstant %uint 2
   %uint_272 = OpConstant %uint 272
     %uint_7 = OpConstant %uint 7
        %gid = OpVariable %ptr_in_v3 Input
          %k = OpFunction %void None %fn_ty
        %out = OpFunctionParameter %ptr_g_uint
      %entry = OpLabel
        %ids = OpLoad %v3ulong %gid
          %i = OpCompositeExtract %ulong %ids 0
         %n1 = OpExtInst %void %ns 1 %i
               OpControlBarrier %uint_2 %uint_2 %uint_272
         %n2 = OpExtInst %void %ns 2 %n1
          %p = OpInBoundsPtrAccessChain %ptr_g_uint %out %i
         %iv = OpUConvert %uint %i
          %v = OpIAdd %uint %iv %uint_7
               OpStore %p %v
               OpReturn
               OpFunctionEnd
"""


@pytest.mark.parametrize("wfv", ["0", "all"])
def test_a_void_result_used_after_a_barrier_compiles_and_runs(monkeypatch, wfv):
    monkeypatch.setenv("SPIRVJIT_WFV", wfv)
    kernel = spirvjit.Program(assemble(SOURCE)).kernel("k")
    want = np.arange(24, dtype=np.uint32) + 7
    out = np.zeros(24, np.uint32)
    kernel(out, global_size=24, local_size=12)  # the quick tier (tiered: the default)
    np.testing.assert_array_equal(out, want)
    kernel.wait_optimized()
    out[:] = 0
    kernel(out, global_size=24, local_size=12)  # the optimized tier
    np.testing.assert_array_equal(out, want)
