"""The kernel ABI of NVIDIA GPUs (nvptx64-nvidia-cuda).

See ``backends/gpu/abi.py`` for what AMD and NVIDIA share."""

from __future__ import annotations

from llvmlite import ir

from ...spirv.grammar import Scope, StorageClass
from ...translate.module import declare
from ...translate.signature import KernelSignature
from ..gpu.abi import I32, I64, XYZ, GpuABI


class NvptxABI(GpuABI):
    """NVIDIA GPUs. CUDA launches whole blocks, so every group has the full size (the
    launcher refuses a global size that is not a multiple of the local size)."""

    kernel_calling_convention = "ptx_kernel"
    spaces = {
        StorageClass.CrossWorkgroup: 1,
        StorageClass.UniformConstant: 1,
        StorageClass.Workgroup: 3,
    }
    scopes = {
        Scope.Invocation: "singlethread",
        Scope.Workgroup: "block",
        Scope.Device: "device",
    }
    # rsqrt.approx.f32 (subnormals kept, IEEE special cases): 2 ulp per CUDA's rsqrtf,
    # OpenCL C's bound for rsqrt. Not used under -cl-fp32-correctly-rounded-divide-sqrt.
    fp32_rsqrt_intrinsic = "llvm.nvvm.rsqrt.approx.f"

    def entry_attributes(self, signature: KernelSignature) -> list[str]:
        required = signature.required_local_size
        return [f'"nvvm.reqntid"="{",".join(map(str, required))}"'] if required else []

    def control_barrier(
        self,
        builder: ir.IRBuilder,
        memory_scope: str | None,
        ordering: str | None,
        semantics: int = 0,
    ) -> None:
        # bar.sync orders shared and global memory among the block's threads (PTX ISA,
        # "Memory consistency model"); a fence is needed only for a wider scope.
        if ordering and memory_scope != "block":
            builder.fence("acq_rel", memory_scope)
        fnty = ir.FunctionType(ir.VoidType(), [I32])
        barrier = declare(builder.module, "llvm.nvvm.barrier.cta.sync.aligned.all", fnty)
        builder.call(barrier, [ir.Constant(I32, 0)])

    def _sreg(self, b: ir.IRBuilder, register: str, dim: int) -> ir.Value:
        return self.intrinsic(b, f"llvm.nvvm.read.ptx.sreg.{register}.{XYZ[dim]}", I32)

    def local_id(self, b, dim):
        return self._sreg(b, "tid", dim)

    def group_id(self, b, dim):
        return self._sreg(b, "ctaid", dim)

    def enqueued(self, b, dim):
        return b.zext(self._sreg(b, "ntid", dim), I64)

    def local_size(self, b, dim):
        return self.enqueued(b, dim)

    def num_groups(self, b, dim):
        return b.zext(self._sreg(b, "nctaid", dim), I64)

    def global_size(self, b, dim):
        return b.mul(self.num_groups(b, dim), self.enqueued(b, dim), flags=["nuw"])
