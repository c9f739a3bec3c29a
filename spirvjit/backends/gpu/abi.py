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

from ...translate.module import declare

I1 = ir.IntType(1)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
VOID_FN = ir.FunctionType(ir.VoidType(), [])
HIDDEN = [I64, I64, I64, I32]
CORRECTLY_ROUNDED_DIVIDE_SQRT = (
    "-cl-fp32-correctly-rounded-divide-sqrt"  # global offset x/y/z, work_dim
)
XYZ = "xyz"

# Launch facts: what a launch may promise about its NDRange, that the code can be
# specialised on. The work-item queries read each through a call to
# ``spirvjit.launch.<fact>()`` and select the fast or the general computation;
# ``GpuBackend.kernel_ir`` defines the call as the variant's value (false in the generic
# variant, which is right for every launch) and O3 folds the other branch away.
#   ids32: every global id, offset included, is below 2**31 (32-bit id arithmetic);
#   zero_offset: the global offset is 0 (not added, nor read from the arguments);
#   uniform: every global size is a multiple of the local size (no partial last group).
LAUNCH_FACTS = ("ids32", "uniform", "zero_offset")
FACT_PREFIX = "spirvjit.launch."
FACT_TYPE = ir.FunctionType(I1, [])


def launch_specialization(facts) -> tuple[tuple[str, str], ...]:
    """The ``KernelKey.specialization`` entries of a variant for launch facts ``facts``
    (names from LAUNCH_FACTS): ("ids32", "1"), ... in a fixed order."""
    return tuple((fact, "1") for fact in LAUNCH_FACTS if fact in facts)


class GpuABI:
    """What AMD and NVIDIA GPUs share; subclasses read ids and sizes their own way."""

    sequential_workgroups = False
    native_barriers = True
    host_libc = False
    # Buffers are the driver's allocations (256-byte aligned), and OpenCL C guarantees
    # vector types their natural alignment: float4 accesses are one 16-byte access.
    natural_vector_alignment = True
    # OpenCL C's accuracy for float division and sqrt (its ULP table); without
    # -cl-fp32-correctly-rounded-divide-sqrt the GPU may use its fast sequences.
    fp32_divide_ulp: float | None = 2.5
    fp32_sqrt_ulp: float | None = 3.0
    # OpenCL 1.x atomics (atomic_inc, atom_add, ...) lower relaxed at their memory's
    # scope, as libclc does, instead of sequentially consistent (translate/imports.py).
    relaxed_legacy_atomics = True
    # Built-ins whose bound allows it (dot) are computed with fused multiply-adds.
    contract_builtins = True
    spaces: dict[int, int] = {}
    scopes: dict[int, str] = {}

    def __init__(self, triple: str, data_layout: str, options: tuple[str, ...] = ()):
        self.triple = triple
        self.data_layout = data_layout
        if CORRECTLY_ROUNDED_DIVIDE_SQRT in options:
            self.fp32_divide_ulp = self.fp32_sqrt_ulp = None

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

    def fact(self, builder: ir.IRBuilder, name: str) -> ir.Value:
        """The i1 launch fact ``name`` (see LAUNCH_FACTS), fixed per compiled variant."""
        assert name in LAUNCH_FACTS, name
        return builder.call(declare(builder.module, FACT_PREFIX + name, FACT_TYPE), [])

    def workitem(
        self, builder: ir.IRBuilder, hidden: list[ir.Value], name: str, dim: int
    ) -> ir.Value:
        b = builder
        if name == "global_offset":
            return b.select(self.fact(b, "zero_offset"), ir.Constant(I64, 0), hidden[dim])
        if name == "work_dim":
            return b.zext(hidden[3], I64)
        if name == "global_id":
            offset = self.workitem(b, hidden, "global_offset", dim)
            # group * size + local is below the global size, which both launchers keep
            # below 2**32 in every dimension (driver.check_sizes refuses more; AMD's
            # dispatch packet has 32-bit grid sizes anyway): 32-bit arithmetic for
            # every launch, zero-extended. Only the global offset is 64-bit. A kernel
            # that keeps the id in an int then computes it in 32 bits as clang's native
            # build does (trunc(zext(x) + offset) narrows; a 64-bit sum did not). No
            # nuw on the 32-bit operations: with it SCEV looks through the zext and LSR
            # computes the id a second time, in 64 bits, before a loop starting at it
            # (reduction on NVIDIA: 3 PTX instructions more).
            enqueued32 = b.trunc(self.enqueued(b, dim), I32)
            group32 = b.mul(self.group_id(b, dim), enqueued32)
            core = b.add(group32, self.local_id(b, dim))
            general = b.add(b.zext(core, I64), offset, flags=["nuw"])
            # With ids32 the whole sum fits 31 bits: 32-bit arithmetic, and LLVM knows
            # the id's upper bits are zero (index arithmetic on it can stay narrow).
            narrow = b.add(core, b.trunc(offset, I32), flags=["nuw", "nsw"])
            ids32 = self.fact(b, "ids32")
            # ... and that it is non-negative as an int: `(size_t)i * n` with `int i` is
            # then one 32x32->64 multiply (v_mad_u64_u32), not a sign-extended 64-bit
            # one. An assumption only where the fact holds (true in the generic variant).
            positive = b.icmp_signed(">=", narrow, ir.Constant(I32, 0))
            assume = declare(b.module, "llvm.assume", ir.FunctionType(ir.VoidType(), [I1]))
            b.call(assume, [b.or_(b.not_(ids32), positive)])
            return b.select(ids32, b.zext(narrow, I64), general)
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
            # Without partial groups every group has the enqueued size.
            uniform = self.fact(b, "uniform")
            return b.select(uniform, self.enqueued(b, dim), self.local_size(b, dim))
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
