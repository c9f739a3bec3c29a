"""What a backend tells the translator: address spaces and the work-item interface.

The translator turns SPIR-V into LLVM IR that is the same for every backend
except where this contract says otherwise. A CPU backend passes the work-item
state to every function through hidden parameters; a GPU backend reads it from
intrinsics and needs none.
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
