"""AMD wavefront (cross-lane) built-ins on targets that are not AMD GPUs.

HIP code sees the wavefront size through ``warpSize`` (``__builtin_amdgcn_wavefrontsize``).
AMD GPUs have 64 (gfx9) or 32 (gfx10+) lanes, and LLVM's optimizer assumes one of
those (it rotates ``for (o = warpSize / 2; o > 0; o /= 2)`` into a loop that runs at
least once), so every target reports 32 or 64:

- **NVIDIA: 32**, the hardware warp (as HIP's own NVIDIA platform has it). The
  built-ins are exact: ``ds_bpermute`` and ``readlane`` are ``shfl.sync.idx``,
  ``ballot`` is ``vote.ballot.sync`` (widened to the 64-bit mask HIP's ``__ballot``
  returns), ``mbcnt`` counts lanes below ``%laneid``, ``readfirstlane`` reads the lowest
  active lane, ``wave_barrier`` is ``bar.warp.sync``. The lanes taking part are the
  active ones (``activemask``), as on AMD.
- **Host CPU: 64**, amdgcnspirv's default. A work-item's lane is its linear local id
  modulo 64 (AMD fills wavefronts in that order), so ``mbcnt`` (``__lane_id``) is exact.
  The operations that exchange values between lanes (``ballot``, ``ds_bpermute``,
  ``readlane``, ``readfirstlane``, ``wave_barrier``) need a wavefront's work-items to
  run in lock step, which the CPU back end does not do yet: a kernel that reaches one
  fails to compile, naming it (docs/hip.md has the design).
"""

from __future__ import annotations

from llvmlite import ir

from .function import FunctionTranslator

I1, I32, I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
CPU_WAVEFRONT_SIZE = 64
NVIDIA_WAVEFRONT_SIZE = 32
CROSS_LANE = frozenset(
    {"wavefrontsize", "mbcnt_lo", "mbcnt_hi", "ballot", "ds_bpermute", "readlane"}
    | {"readfirstlane", "wave_barrier"}
)


def _nvidia(t: FunctionTranslator) -> bool:
    return t.mt.abi.triple.startswith("nvptx")


def wavefront_size(t: FunctionTranslator) -> int:
    return NVIDIA_WAVEFRONT_SIZE if _nvidia(t) else CPU_WAVEFRONT_SIZE


def emulate(
    t: FunctionTranslator, base: str, ty: ir.Type, values: list[ir.Value]
) -> ir.Value | None:
    """The value of cross-lane built-in ``base`` (a name in CROSS_LANE)."""
    if base == "wavefrontsize":
        return ir.Constant(ty, wavefront_size(t))
    if _nvidia(t):
        return _nvidia_builtin(t, base, ty, values)
    if base in ("mbcnt_lo", "mbcnt_hi"):
        return _cpu_mbcnt(t, base == "mbcnt_hi", values[0], values[1])
    raise NotImplementedError(base)  # the caller turns this into a named compile error


def _cpu_lane(t: FunctionTranslator) -> ir.Value:
    """The work-item's lane: its linear local id modulo the wavefront size, as i64."""
    b = t.b
    ids = [t.workitem.query("local_id", d) for d in range(3)]
    sizes = [t.workitem.query("local_size", d) for d in range(2)]
    linear = b.add(ids[0], b.mul(sizes[0], b.add(ids[1], b.mul(sizes[1], ids[2]))))
    return b.urem(linear, ir.Constant(I64, CPU_WAVEFRONT_SIZE))


def _cpu_mbcnt(t: FunctionTranslator, high: bool, mask: ir.Value, accumulator: ir.Value):
    """mbcnt_lo/hi: ``accumulator`` plus the set bits of ``mask`` (lanes 0-31, or 32-63
    for hi) that belong to lanes below this one."""
    b = t.b
    lane = _cpu_lane(t)
    thirty_two = ir.Constant(I64, 32)
    if high:
        below_32 = b.icmp_unsigned("<", lane, thirty_two)
        lane = b.select(below_32, ir.Constant(I64, 0), b.sub(lane, thirty_two))
    # Lanes below: (1 << lane) - 1, all 32 bits once lane reaches 32.
    clamped = b.select(b.icmp_unsigned("<", lane, thirty_two), lane, thirty_two)
    below = b.trunc(b.sub(b.shl(ir.Constant(I64, 1), clamped), ir.Constant(I64, 1)), I32)
    count = t.intrinsic("llvm.ctpop.i32", I32, [b.and_(mask, below)])
    return b.add(accumulator, count)


def _sreg(t: FunctionTranslator, name: str) -> ir.Value:
    return t.intrinsic(f"llvm.nvvm.read.ptx.sreg.{name}", I32, [])


def _shuffle(t: FunctionTranslator, value: ir.Value, lane: ir.Value) -> ir.Value:
    """``value`` of lane ``lane`` (taken modulo 32) among the active lanes."""
    b = t.b
    mask = t.intrinsic("llvm.nvvm.activemask", I32, [])
    ty = value.type
    if isinstance(ty, ir.IntType) and ty.width == 64:
        lo = _shuffle(t, b.trunc(value, I32), lane)
        hi = _shuffle(t, b.trunc(b.lshr(value, ir.Constant(I64, 32)), I32), lane)
        return b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), ir.Constant(I64, 32)))
    if ty != I32:  # float and other 32-bit values travel as their bits
        bits = _shuffle(t, b.bitcast(value, I32), lane)
        return b.bitcast(bits, ty)
    clamp = ir.Constant(I32, 0x1F)
    return t.intrinsic("llvm.nvvm.shfl.sync.idx.i32", I32, [mask, value, lane, clamp])


def _nvidia_builtin(
    t: FunctionTranslator, base: str, ty: ir.Type, values: list[ir.Value]
) -> ir.Value | None:
    b = t.b
    if base == "mbcnt_lo":
        below = _sreg(t, "lanemask.lt")
        count = t.intrinsic("llvm.ctpop.i32", I32, [b.and_(values[0], below)])
        return b.add(values[1], count)
    if base == "mbcnt_hi":
        return values[1]  # lanes 32-63 do not exist
    if base == "ballot":
        mask = t.intrinsic("llvm.nvvm.activemask", I32, [])
        votes = t.intrinsic("llvm.nvvm.vote.ballot.sync", I32, [mask, values[0]])
        return b.zext(votes, ty) if ty.width > 32 else votes
    if base == "ds_bpermute":
        return _shuffle(t, values[1], b.lshr(values[0], ir.Constant(I32, 2)))
    if base == "readlane":
        return _shuffle(t, values[0], values[1])
    if base == "readfirstlane":
        mask = t.intrinsic("llvm.nvvm.activemask", I32, [])
        first = t.intrinsic("llvm.cttz.i32", I32, [mask, ir.Constant(I1, 0)])
        return _shuffle(t, values[0], first)
    mask = t.intrinsic("llvm.nvvm.activemask", I32, [])
    t.intrinsic("llvm.nvvm.bar.warp.sync", ir.VoidType(), [mask])
    return None
