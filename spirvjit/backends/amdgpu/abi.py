"""The kernel ABI of AMD GPUs (amdgcn-amd-amdhsa, HSA code object v5).

See ``backends/gpu/abi.py`` for what AMD and NVIDIA share."""

from __future__ import annotations

from llvmlite import ir

from ...spirv.grammar import MemorySemantics, Scope, StorageClass
from ...translate.module import declare
from ...translate.signature import KernelSignature
from ..gpu.abi import I16, I32, I64, VOID_FN, XYZ, GpuABI

DEFAULT_GROUP_LIMIT = 256


def flat_work_group_size(limit: int) -> str:
    """The entry attribute of a kernel built for groups of up to ``limit`` work-items."""
    return f'"amdgpu-flat-work-group-size"="1,{limit}"'


# The storage-class bits of SPIR-V MemorySemantics.
_MEMORY = (
    MemorySemantics.UniformMemory
    | MemorySemantics.SubgroupMemory
    | MemorySemantics.WorkgroupMemory
    | MemorySemantics.CrossWorkgroupMemory
    | MemorySemantics.AtomicCounterMemory
    | MemorySemantics.ImageMemory
    | MemorySemantics.OutputMemory
)


class _Fence(ir.Fence):
    """llvmlite's fence, printed with its metadata (llvmlite's drops it)."""

    def descr(self, buf: list[str]) -> None:
        super().descr(buf)
        buf[-1] = buf[-1].rstrip("\n") + self._stringify_metadata(leading_comma=True) + "\n"


def _fence(builder: ir.IRBuilder, ordering: str, scope: str | None, local_only: bool) -> None:
    """A fence; ``local_only``: it orders LDS (``__local`` memory) only."""
    fence = _Fence(builder.block, ordering, scope)
    builder._insert(fence)
    if local_only:
        module = builder.module
        names = ("amdgpu-synchronize-as", "local")
        mmra = module.add_metadata([ir.MetaDataString(module, s) for s in names])
        fence.set_metadata("mmra", mmra)


class AmdgpuABI(GpuABI):
    """AMD GPUs with HSA code object v5. Sizes come from the dispatch packet (AQL), whose
    grid size counts work-items, so the last group may be partial as OpenCL allows."""

    kernel_calling_convention = "amdgpu_kernel"
    spaces = {
        StorageClass.CrossWorkgroup: 1,
        StorageClass.Workgroup: 3,
        StorageClass.UniformConstant: 4,
        StorageClass.Function: 5,
        StorageClass.Private: 5,
    }
    scopes = {
        Scope.Invocation: "singlethread",
        Scope.Subgroup: "wavefront",
        Scope.Workgroup: "workgroup",
        Scope.Device: "agent",
    }

    def entry_attributes(self, signature: KernelSignature) -> list[str]:
        required = signature.required_local_size
        # The back end sizes the register budget for the largest group the kernel may be
        # launched with: reqd_work_group_size when given, else OpenCL's usual limit of
        # DEFAULT_GROUP_LIMIT as clang does (1024 would cut the budget of large kernels
        # 4x); launches with larger groups use a variant built for them
        # (AmdgpuBackend.kernel_ir). The last group may be partial.
        size = required[0] * required[1] * required[2] if required else None
        flat = f"{size},{size}" if size else f"1,{DEFAULT_GROUP_LIMIT}"
        return [
            f'"amdgpu-flat-work-group-size"="{flat}"',  # see flat_work_group_size
            f'"uniform-work-group-size"="{"true" if required else "false"}"',
        ]

    def control_barrier(
        self,
        builder: ir.IRBuilder,
        memory_scope: str | None,
        ordering: str | None,
        semantics: int = 0,
    ) -> None:
        # What clang emits for OpenCL's barrier(): release, s_barrier, acquire.
        # barrier(CLK_LOCAL_MEM_FENCE) orders __local memory only: as clang does, say so
        # (an MMRA), and the fences need not wait for or invalidate the vector caches of
        # global memory (buffer_gl0_inv on gfx10+ after every barrier).
        local = semantics & _MEMORY == MemorySemantics.WorkgroupMemory
        if ordering:
            _fence(builder, "release", memory_scope, local)
        builder.call(declare(builder.module, "llvm.amdgcn.s.barrier", VOID_FN), [])
        if ordering:
            _fence(builder, "acquire", memory_scope, local)

    def local_id(self, b, dim):
        return self.intrinsic(b, f"llvm.amdgcn.workitem.id.{XYZ[dim]}", I32)

    def group_id(self, b, dim):
        return self.intrinsic(b, f"llvm.amdgcn.workgroup.id.{XYZ[dim]}", I32)

    def _packet(self, b: ir.IRBuilder, offset: int, ty: ir.IntType) -> ir.Value:
        """A field of the hsa_kernel_dispatch_packet_t this dispatch was launched with."""
        packet = self.intrinsic(b, "llvm.amdgcn.dispatch.ptr", ir.PointerType(addrspace=4))
        field = b.gep(packet, [ir.Constant(I64, offset)], source_etype=ir.IntType(8))
        load = b.load(field, typ=ty)
        load.align = ty.width // 8
        return b.zext(load, I64)

    def enqueued(self, b, dim):
        return self._packet(b, 4 + 2 * dim, I16)  # workgroup_size_x/y/z

    def global_size(self, b, dim):
        return self._packet(b, 12 + 4 * dim, I32)  # grid_size_x/y/z, in work-items

    def num_groups(self, b, dim):
        size, group = self.global_size(b, dim), self.enqueued(b, dim)
        return b.udiv(b.add(size, b.sub(group, ir.Constant(I64, 1))), group)

    def local_size(self, b, dim):
        # The last group holds what is left of the grid. In 32 bits: the packet's grid
        # size is 32-bit and a group starts inside the grid, so nothing wraps.
        size = b.trunc(self.global_size(b, dim), I32)
        group = b.trunc(self.enqueued(b, dim), I32)
        start = b.mul(self.group_id(b, dim), group, flags=["nuw"])
        left = b.sub(size, start, flags=["nuw"])
        return b.zext(b.select(b.icmp_unsigned("<", left, group), left, group), I64)
