"""Kernel signatures: what the host needs to know to pack a launch's arguments."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class KernelArg:
    """One kernel parameter as the host sees it.

    kind: "global" or "constant" (a buffer: pass a NumPy array), "local" (pass
    ``LocalMemory``), "value" (a scalar or vector passed by value), "struct" (a
    struct passed by value: NumPy structured scalar or bytes).
    For buffers, ``element_*`` describe the pointee (``element_kind`` is None
    when the pointee says nothing useful, e.g. ``char*`` or a struct).
    For values, ``size``/``align`` are the by-value size and alignment and
    ``element_*`` describe the scalar lanes.
    ``name`` is the parameter's name in the source (``#<index>`` when the module has
    none). ``read_only``: the kernel does not write through this pointer (declared
    ``const``, a ``__constant`` buffer, or marked NoWrite), so a read-only array will do.
    """

    index: int
    name: str
    kind: str
    size: int
    align: int
    element_kind: str | None = None  # "int", "float", "bool" or None
    element_bits: int = 0
    lanes: int = 1
    read_only: bool = False

    def describe(self) -> str:
        """A C-like spelling of the expected argument, for error messages."""
        if self.element_kind is None:
            base = "struct" if self.kind == "struct" else "void"
        else:
            base = {"int": "int", "float": "float", "bool": "bool"}[self.element_kind] + str(
                self.element_bits
            )
        if self.lanes > 1:
            base += f"x{self.lanes}"
        if self.kind in ("global", "constant", "local"):
            return f"__{self.kind} {base}*"
        return base


@dataclass(frozen=True, slots=True)
class KernelSignature:
    name: str
    args: tuple[KernelArg, ...]
    required_local_size: tuple[int, int, int] | None = None
    local_size_hint: tuple[int, int, int] | None = None
    static_local_bytes: int = 0
    # Kernels with barriers run as step functions: bytes of per-work-item frame and the
    # number of barrier continuations (0: no barrier, one plain work-item loop).
    frame_bytes: int = 0
    barrier_states: int = 0
    # Kernels with AMD wavefront operations (translate/wavefront.py): the frame offsets of
    # the work-item state and active-mask arrays the work-group function uses (-1: none).
    wave_state_offset: int = -1
    wave_mask_offset: int = -1
