"""Checked-mode launches on the host CPU: the check table and the violation report.

The kernel was translated with bounds checks (translate/checks.py); this side fills the
launch's check table with each argument's extent, runs the launch, and turns the first
recorded violation into a ``LaunchError`` that names the kernel, the work-item, the
argument or variable, the element index, the array's size and the source location.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

import numpy as np

from ...arguments import ArgumentPacker, host_array
from ...debuginfo import file_name
from ...errors import LaunchError
from ...spirv.grammar import StorageClass
from ...translate import checks
from .abi import LaunchRecord
from .launcher import ARENA_ALIGN, LOCAL_MEMORY_BYTES, CpuKernel, _abort_flag, thread_pool

_SPACE = {
    StorageClass.Workgroup: "__local",
    StorageClass.Function: "private",
    StorageClass.CrossWorkgroup: "program-scope __global",
    StorageClass.UniformConstant: "program-scope __constant",
}


class CheckedCpuKernel(CpuKernel):
    """A kernel's bounds-checked variant (``check=True``, ``SPIRVJIT_CHECK=1``)."""

    def __init__(self, code, signature, origin: str, times, program):
        super().__init__(code, signature, origin, times)
        self._packer = ArgumentPacker(signature)
        self._module = program.module

    def launch(
        self, args: Sequence, global_size, local_size, global_offset, dynamic_shared: int = 0
    ) -> None:
        plan = self._plan(global_size, local_size, global_offset)
        slots, keep, local_bytes = self._packer.pack(args, (LOCAL_MEMORY_BYTES, "host CPU"))
        if dynamic_shared:  # HIP's extern __shared__ (see CpuKernel.launch)
            from ...hip_launch import cpu_local_bytes

            local_bytes = cpu_local_bytes(
                self.signature, local_bytes, dynamic_shared, LOCAL_MEMORY_BYTES
            )
        sig = self.signature
        table = np.zeros(checks.CHECK_ARGS + 2 * len(sig.args), np.int64)
        items: list[int] = [1] * len(sig.args)  # element size per argument, for reports
        for spec, value, storage in zip(sig.args, args, keep, strict=False):
            word = checks.CHECK_ARGS + 2 * spec.index
            if spec.kind in ("global", "constant") and value is not None:
                array = value if isinstance(value, np.ndarray) else host_array(value)
                table[word] = storage.value or 0
                table[word + 1] = array.nbytes
                items[spec.index] = array.itemsize or 1
            elif spec.kind == "local":
                table[word + 1] = value.nbytes
                items[spec.index] = max(1, spec.element_bits * spec.lanes // 8)
        record = LaunchRecord.from_buffer_copy(plan.record)
        record.frames_offset = _aligned(local_bytes)
        # After the frames: the shadow of the group's local memory, one byte per byte
        # (reads of __local memory never written in the group, translate/checks.py).
        shadow = _aligned(record.frames_offset + sig.frame_bytes * plan.group_items)
        arena_bytes = shadow + local_bytes
        table[checks.W_SHADOW] = shadow  # from a local address to its shadow byte
        table[checks.W_ABORT] = ctypes.addressof(record) + LaunchRecord.abort.offset
        table[checks.W_NARGS] = len(sig.args)
        table[checks.W_LOCAL_BYTES] = local_bytes
        record.check = table.ctypes.data
        thread_pool().run(
            self._runner,
            ctypes.addressof(slots),
            ctypes.addressof(record),
            plan.threads,
            arena_bytes,
            _abort_flag(record),
        )
        del keep
        if table[checks.R_FLAG]:
            raise LaunchError(self._report(table, args, items), sig.name)

    # ----- the report ----------------------------------------------------------------

    def _report(self, table: np.ndarray, args: Sequence, items: list[int]) -> str:
        kind = int(table[checks.R_KIND])
        gid = tuple(int(v) for v in table[checks.R_GID : checks.R_GID + 3])
        lid = tuple(int(v) for v in table[checks.R_LID : checks.R_LID + 3])
        who = f"work-item global id {gid}, local id {lid}"
        if kind == checks.KIND_BARRIER:
            return (
                f"divergent barrier: {who} {_state(int(table[checks.R_WHICH]))} while the "
                f"group's first work-item {_state(int(table[checks.R_OFFSET]))}; every "
                "work-item of a group must reach the same barriers"
            )
        size = int(table[checks.R_SIZE])
        offset = int(table[checks.R_OFFSET])
        which = int(table[checks.R_WHICH])
        extent = int(table[checks.R_EXTENT])
        access = f"{'write' if table[checks.R_STORE] else 'read'} of {size} bytes"
        where = self._location(table)
        if kind in (
            checks.KIND_UNSET_ARGUMENT,
            checks.KIND_UNSET_VARIABLE,
            checks.KIND_UNSET_LOCAL,
        ):
            return self._unset(kind, which, offset, size, who, items, where)
        if kind == checks.KIND_ARGUMENT:
            spec = self.signature.args[which]
            name = f"argument {which}" + ("" if spec.name.startswith("#") else f" '{spec.name}'")
            if spec.kind in ("global", "constant") and args[which] is None:
                return f"NULL dereference: {access} by {who} through {name}, given None{where}"
            item = items[which]
            return (
                f"out-of-bounds {access} by {who}: {name}, element index {offset // item} "
                f"(byte offset {offset}), the array has {extent // item} elements "
                f"({extent} bytes){where}"
            )
        if kind == checks.KIND_VARIABLE:
            inst = self._module.defs.get(which)
            space = _SPACE.get(inst.operands[0], "") if inst is not None else ""
            name = f"{space} variable '{self._module.name_of(which)}'".strip()
            return (
                f"out-of-bounds {access} by {who}: {name}, byte offset {offset}, "
                f"the variable has {extent} bytes{where}"
            )
        address = int(table[checks.R_ADDRESS])
        space = "__global/__constant" if kind == checks.KIND_ANY_GLOBAL else "__local"
        return (
            f"out-of-bounds {access} by {who}: a {space} pointer to {address:#x}, which "
            f"is inside no array passed to the kernel{self._nearest(address, args)}{where}"
        )

    def _unset(self, kind, which, offset, size, who, items, where) -> str:
        """A read of __local memory that no work-item of the group had written."""
        head = f"read of __local memory never written in this work-group: {size} bytes by {who}: "
        if kind == checks.KIND_UNSET_ARGUMENT:
            spec = self.signature.args[which]
            name = f"argument {which}" + ("" if spec.name.startswith("#") else f" '{spec.name}'")
            item = items[which]
            return f"{head}{name}, element index {offset // item} (byte offset {offset}){where}"
        if kind == checks.KIND_UNSET_VARIABLE:
            name = f"__local variable '{self._module.name_of(which)}'"
            return (
                f"{head}{name}, element index {offset // size} (byte offset {offset}, "
                f"{size}-byte elements){where}"
            )
        return f"{head}the group's local memory at byte offset {offset}{where}"

    def _nearest(self, address: int, args: Sequence) -> str:
        best = None
        for spec, value in zip(self.signature.args, args, strict=False):
            if spec.kind in ("global", "constant") and value is not None:
                array = value if isinstance(value, np.ndarray) else host_array(value)
                base = array.ctypes.data
                distance = min(abs(address - base), abs(address - base - array.nbytes))
                if best is None or distance < best[0]:
                    best = (distance, spec, address - base, array)
        if best is None:
            return ""
        _, spec, offset, array = best
        return (
            f" (nearest: argument {spec.index}, element index "
            f"{offset // (array.itemsize or 1)} of {array.size})"
        )

    def _location(self, table: np.ndarray) -> str:
        line = int(table[checks.R_LINE])
        if not line:
            return " (no line information: compile with -g for file:line:column)"
        file = file_name(self._module, int(table[checks.R_FILE]))
        where = f", at {file}:{line}:{int(table[checks.R_COLUMN])}"
        caller = int(table[checks.R_CALLER])
        if caller:  # the access is in a helper function: where the kernel called it
            name = file_name(self._module, caller >> 40)
            line, column = caller >> 16 & 0xFFFFFF, caller & 0xFFFF
            where += f", in a function called from {name}:{line}:{column}"
        return where


def _aligned(offset: int) -> int:
    return (offset + ARENA_ALIGN - 1) // ARENA_ALIGN * ARENA_ALIGN


def _state(state: int) -> str:
    return "finished the kernel" if state < 0 else f"waits at barrier {state}"
