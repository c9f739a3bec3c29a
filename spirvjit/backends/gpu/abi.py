"""The kernel ABIs of AMD (amdgcn-amd-amdhsa) and NVIDIA (nvptx64-nvidia-cuda) GPUs.

Work-item ids and sizes come from the hardware (AMD: work-item/work-group id
intrinsics and the HSA dispatch packet; NVIDIA: PTX special registers). What the
hardware does not know travels as hidden parameters of every translated function,
filled from trailing kernel arguments by the entry wrapper (``entry.py``):

    i64 global offset x, y, z; i32 work_dim

Memory: global 1, shared (``__local``) 3, constant 4 (AMD only: read-only global
memory there; NVIDIA's space 4 is the 64 KiB constant bank, which a buffer from
cuMemAlloc is not in, so ``__constant`` buffers are global memory), private 5 on
AMD (its data layout puts allocas there) and generic 0 on NVIDIA (allocas are
generic; LLVM infers the local space).
"""

from __future__ import annotations

from llvmlite import ir

from ...spirv.grammar import Scope, StorageClass
from ...translate.module import declare
from ...translate.signature import KernelSignature

I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
_VOID_FN = ir.FunctionType(ir.VoidType(), [])
HIDDEN = [I64, I64, I64, I32]  # global offset x/y/z, work_dim
_XYZ = "xyz"


class GpuABI:
    """What AMD and NVIDIA GPUs share; subclasses read ids and sizes their own way."""

    sequential_workgroups = False
    native_barriers = True
    host_libc = False
    spaces: dict[int, int] = {}
    scopes: dict[int, str] = {}

    def __init__(self, triple: str, data_layout: str):
        self.triple = triple
        self.data_layout = data_layout

    def address_space(self, storage_class: int) -> int:
        return self.spaces.get(storage_class, 0)

    def hidden_parameters(self) -> list[ir.Type]:
        return list(HIDDEN)

    def sync_scope(self, scope: int) -> str | None:
        return self.scopes.get(scope)

    def workgroup_variable(self, module: ir.Module, name: str, ty: ir.Type, align: int) -> ir.Value:
        gv = ir.GlobalVariable(module, ty, name, addrspace=3)
        gv.type = ir.PointerType(addrspace=3)  # opaque pointers
        gv.linkage = "internal"
        gv.initializer = ir.Constant(ty, ir.Undefined)  # shared memory has no initial value
        gv.align = align
        return gv

    def workgroup_address(
        self, builder: ir.IRBuilder, hidden: list[ir.Value], offset: int
    ) -> ir.Value:
        raise AssertionError("GPU __local variables are globals (workgroup_variable)")

    def intrinsic(self, builder: ir.IRBuilder, name: str, ret: ir.Type) -> ir.Value:
        return builder.call(declare(builder.module, name, ir.FunctionType(ret, [])), [])

    def workitem(
        self, builder: ir.IRBuilder, hidden: list[ir.Value], name: str, dim: int
    ) -> ir.Value:
        b = builder
        if name == "global_offset":
            return hidden[dim]
        if name == "work_dim":
            return b.zext(hidden[3], I64)
        if name == "global_id":
            group = b.mul(self.workitem(b, hidden, "group_id", dim), self.enqueued(b, dim))
            local = self.workitem(b, hidden, "local_id", dim)
            return b.add(b.add(group, local, flags=["nuw"]), hidden[dim])
        if name == "local_id":
            return b.zext(self.local_id(b, dim), I64)
        if name == "group_id":
            return b.zext(self.group_id(b, dim), I64)
        if name == "enqueued_local_size":
            return self.enqueued(b, dim)
        if name == "global_size":
            return self.global_size(b, dim)
        if name == "num_groups":
            return self.num_groups(b, dim)
        if name == "local_size":
            return self.local_size(b, dim)
        raise KeyError(name)

    # Per vendor: i32 ids, i64 sizes.
    def local_id(self, b: ir.IRBuilder, dim: int) -> ir.Value:
        raise NotImplementedError

    def group_id(self, b: ir.IRBuilder, dim: int) -> ir.Value:
        raise NotImplementedError

    def enqueued(self, b: ir.IRBuilder, dim: int) -> ir.Value:
        raise NotImplementedError

    def global_size(self, b: ir.IRBuilder, dim: int) -> ir.Value:
        raise NotImplementedError

    def num_groups(self, b: ir.IRBuilder, dim: int) -> ir.Value:
        raise NotImplementedError

    def local_size(self, b: ir.IRBuilder, dim: int) -> ir.Value:
        raise NotImplementedError


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
        # Without reqd_work_group_size any launch up to 1024 work-items must work (the
        # back end sizes registers for it); the last group may be partial.
        size = required[0] * required[1] * required[2] if required else None
        flat = f"{size},{size}" if size else "1,1024"
        return [
            f'"amdgpu-flat-work-group-size"="{flat}"',
            f'"uniform-work-group-size"="{"true" if required else "false"}"',
        ]

    def control_barrier(
        self, builder: ir.IRBuilder, memory_scope: str | None, ordering: str | None
    ) -> None:
        # What clang emits for OpenCL's barrier(): release, s_barrier, acquire.
        if ordering:
            builder.fence("release", memory_scope)
        builder.call(declare(builder.module, "llvm.amdgcn.s.barrier", _VOID_FN), [])
        if ordering:
            builder.fence("acquire", memory_scope)

    def local_id(self, b, dim):
        return self.intrinsic(b, f"llvm.amdgcn.workitem.id.{_XYZ[dim]}", I32)

    def group_id(self, b, dim):
        return self.intrinsic(b, f"llvm.amdgcn.workgroup.id.{_XYZ[dim]}", I32)

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
        # The last group holds what is left of the grid.
        size, group = self.global_size(b, dim), self.enqueued(b, dim)
        start = b.mul(b.zext(self.group_id(b, dim), I64), group)
        left = b.sub(size, start)
        return b.select(b.icmp_unsigned("<", left, group), left, group)


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

    def entry_attributes(self, signature: KernelSignature) -> list[str]:
        required = signature.required_local_size
        return [f'"nvvm.reqntid"="{",".join(map(str, required))}"'] if required else []

    def control_barrier(
        self, builder: ir.IRBuilder, memory_scope: str | None, ordering: str | None
    ) -> None:
        # bar.sync orders shared and global memory among the block's threads (PTX ISA,
        # "Memory consistency model"); a fence is needed only for a wider scope.
        if ordering and memory_scope != "block":
            builder.fence("acq_rel", memory_scope)
        fnty = ir.FunctionType(ir.VoidType(), [I32])
        barrier = declare(builder.module, "llvm.nvvm.barrier.cta.sync.aligned.all", fnty)
        builder.call(barrier, [ir.Constant(I32, 0)])

    def _sreg(self, b: ir.IRBuilder, register: str, dim: int) -> ir.Value:
        return self.intrinsic(b, f"llvm.nvvm.read.ptx.sreg.{register}.{_XYZ[dim]}", I32)

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


def gpu_abi(kind: str, triple: str, data_layout: str) -> GpuABI:
    """The ABI of a GPU target kind ("amdgpu" or "nvptx")."""
    return {"amdgpu": AmdgpuABI, "nvptx": NvptxABI}[kind](triple, data_layout)
