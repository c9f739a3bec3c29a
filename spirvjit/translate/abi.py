"""What a backend tells the translator: address spaces and the work-item interface.

The translator turns SPIR-V into LLVM IR that is the same for every backend
except where this contract says otherwise. A CPU backend passes the work-item
state to every function through hidden parameters and runs barriers as step
functions; a GPU backend reads ids from intrinsics, passes only what the hardware
does not know (the global offset, the work dimension) and has barrier instructions.
"""

from __future__ import annotations

from typing import Protocol

from llvmlite import ir


class TargetABI(Protocol):
    triple: str
    data_layout: str
    # True when one thread runs a work-group's work-items one after another, so that
    # atomics on local memory need no atomic instructions.
    sequential_workgroups: bool
    # True when the target has a barrier instruction (GPUs): kernels are translated as
    # written and OpControlBarrier calls ``control_barrier``. False: the translator
    # splits barrier kernels into step functions (see barriers.py).
    native_barriers: bool
    # True when the C library is linked in (printf).
    host_libc: bool
    # True when vector accesses may assume the vector's natural alignment (buffers the
    # runtime allocates); False: only the lane's (NumPy arrays on the host).
    natural_vector_alignment: bool
    # The accuracy (ULP) float division and sqrt may have on this target, attached as
    # ``!fpmath`` metadata (OpenCL C allows 2.5 and 3 ulp), or None: correctly rounded
    # (the host CPU's instructions are; -cl-fp32-correctly-rounded-divide-sqrt asks so).
    fp32_divide_ulp: float | None
    fp32_sqrt_ulp: float | None

    def address_space(self, storage_class: int) -> int:
        """The LLVM address space of a SPIR-V storage class."""

    def hidden_parameters(self) -> list[ir.Type]:
        """Types of the parameters appended to every translated function."""

    def workitem(
        self, builder: ir.IRBuilder, hidden: list[ir.Value], name: str, dim: int
    ) -> ir.Value:
        """The i64 value of the work-item query ``name`` (e.g. "global_id") in ``dim`` 0..2.

        Names: global_id, local_id, group_id, global_size, local_size,
        enqueued_local_size, num_groups, global_offset, and (with dim 0)
        work_dim. Dimensions the launch does not use read 0 for ids and offsets
        and 1 for sizes, as OpenCL requires.
        """

    def workgroup_address(
        self, builder: ir.IRBuilder, hidden: list[ir.Value], offset: int
    ) -> ir.Value:
        """The address of the work-group-local storage at byte ``offset`` of this group."""

    def sync_scope(self, scope: int) -> str | None:
        """The LLVM ``syncscope`` of a SPIR-V memory Scope value; None for the default
        (system) scope, which is correct for every scope, only slower."""


class NativeBarrierABI(TargetABI, Protocol):
    """What a target with ``native_barriers`` adds."""

    def control_barrier(
        self,
        builder: ir.IRBuilder,
        memory_scope: str | None,
        ordering: str | None,
        semantics: int = 0,
    ) -> None:
        """A work-group barrier that also orders memory with ``ordering`` at ``memory_scope``
        (no fence when ``ordering`` is None); ``semantics``: the SPIR-V MemorySemantics,
        whose storage bits say which memory the fences order (0: unknown, all of it)."""

    def workgroup_variable(self, module: ir.Module, name: str, ty: ir.Type, align: int) -> ir.Value:
        """A ``__local`` variable of the group: on GPUs a global in the shared-memory space."""
