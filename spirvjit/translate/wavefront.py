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
  ``readlane``, ``readfirstlane``, ``wave_barrier``) are synchronization points of the
  kernel's step function (``barriers.py`` splits each into gather, call and sync): a
  lane stores its operand in its slot of the frame and returns; the work-group
  function (``backends/cpu/abi.py``) runs the other lanes of the wavefront to their
  next synchronization point, picks the pending operation no other waiting lane can
  still reach (``barriers._wave_order``), records which lanes wait there (the
  *active* lanes) and resumes the lowest of them, which computes every active lane's
  result from the slots into the lanes' frames here; then they all run on. Lanes that
  did not reach the operation (a divergent branch, lanes past the end of a partial
  wavefront, finished lanes) are inactive: their ``ballot`` bits are 0, and a shuffle
  or ``readlane`` of an inactive lane gives 0 (AMD's ``ds_bpermute`` reads inactive
  lanes as 0; ``readlane`` would read the lane's stale register, which the CPU does
  not keep).
"""

from __future__ import annotations

from llvmlite import ir

from .barriers import WAVE_GATHER, WAVE_STATE_BASE, WAVE_SYNC
from .function import FunctionTranslator, handles

I1, I32, I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)
CPU_WAVEFRONT_SIZE = 64
# Keys of the step function's frame arrays for wavefront operations (function.Frame):
# each lane's operand (as i64 bits), the active-lane mask (at the wavefront's first
# lane), the work-item's state (the work-group function's, not the kernel's), and the
# lane each lane reads (ds_bpermute's address, readlane's lane).
WAVE_DATA, WAVE_MASK, WAVE_STATE, WAVE_LANE = -1, -2, -3, -4
WAVE_ARRAYS = ((WAVE_DATA, I64), (WAVE_MASK, I64), (WAVE_STATE, I32), (WAVE_LANE, I32))
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
    if t.stepped is not None and t.current_label in t.stepped.gathers:
        return _cpu_exchange(t, base, ty, values)
    raise NotImplementedError(base)  # the caller turns this into a named compile error


# -- the host CPU: lock-step exchange through the frame ------------------------------------


def _frame_element(t: FunctionTranslator, key: int, index: ir.Value) -> ir.Value:
    """The address of work-item ``index``'s element of frame array ``key``."""
    frame, b = t.frame, t.b
    size = frame.types[key].get_abi_size(t.mt.target_data)
    start = b.mul(ir.Constant(I64, frame.offset[key]), frame.items)
    address = b.add(start, b.mul(index, ir.Constant(I64, size)))
    return b.gep(frame.base, [address], inbounds=True, source_etype=ir.IntType(8))


def _to_bits(t: FunctionTranslator, value: ir.Value, builtin: str) -> ir.Value:
    """``value`` as an i64 (its bits, zero-extended), the operand of ``builtin``."""
    b, ty = t.b, value.type
    if isinstance(ty, ir.PointerType):
        return b.ptrtoint(value, I64)
    if isinstance(ty, (ir.FloatType, ir.DoubleType, ir.HalfType)):
        width = {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(ty)]
        value = b.bitcast(value, ir.IntType(width))
        ty = value.type
    if not isinstance(ty, ir.IntType) or ty.width > 64:
        raise t.error(
            f"__builtin_amdgcn_{builtin} on a {ty} value: the host CPU's lock-step "
            "wavefronts exchange scalars of up to 64 bits only"
        )
    return value if ty.width == 64 else b.zext(value, I64)


def _from_bits(t: FunctionTranslator, bits: ir.Value, ty: ir.Type) -> ir.Value:
    b = t.b
    if isinstance(ty, ir.PointerType):
        return b.inttoptr(bits, ty)
    if isinstance(ty, (ir.FloatType, ir.DoubleType, ir.HalfType)):
        width = {ir.HalfType: 16, ir.FloatType: 32, ir.DoubleType: 64}[type(ty)]
        return b.bitcast(b.trunc(bits, ir.IntType(width)) if width < 64 else bits, ty)
    return bits if ty.width == 64 else b.trunc(bits, ty)


@handles(WAVE_GATHER, WAVE_SYNC)
def wave_point(t: FunctionTranslator, inst) -> None:
    """Ends a region at a wavefront operation: the gather stores this lane's operand in
    its slot; both return the state to resume at (the work-group function decides when)."""
    if t.frame is None or t.stepped is None:
        raise t.error("a wavefront operation outside a step function (a spirvjit bug)")
    if inst.kinds:  # the operand this lane contributes
        value = _to_bits(t, t.value(inst.operands[0]), inst.operands[-1])
        t.b.store(value, _frame_element(t, WAVE_DATA, t.frame.linear))
    if len(inst.kinds) > 1:  # the lane it reads
        lane = t.value(inst.operands[1])
        lane = t.b.trunc(lane, I32) if lane.type.width > 32 else t.b.zext(lane, I32)
        t.b.store(lane, _frame_element(t, WAVE_LANE, t.frame.linear))
    resume = t.stepped.continuations[t.current_label]
    t.b.ret(ir.Constant(I32, t.stepped.states[resume]))


def _cpu_exchange(t: FunctionTranslator, base: str, ty: ir.Type, values: list[ir.Value]):
    """Wavefront operation ``base``, run by one active lane for all of them: from the
    slots of the wavefront's active lanes (the mask the work-group function stored), each
    active lane's result goes to its element of the call's frame array, where it finds
    it when it resumes after the sync (one entry into the step function per operation,
    not one per lane). Returns this lane's own result."""
    b = t.b
    wave_size = ir.Constant(I64, CPU_WAVEFRONT_SIZE)
    linear = t.frame.linear
    first = b.sub(linear, b.urem(linear, wave_size))
    mask = b.load(_frame_element(t, WAVE_MASK, first), typ=I64)
    if base == "wave_barrier":
        return None  # the synchronization was the point of it
    result_id = t.current.result_id
    if result_id not in t.frame.types:
        result_id = None  # not used after the sync: only this lane's result matters
    if base in ("ballot", "readfirstlane"):  # the same for every active lane
        if base == "ballot":
            value = _cpu_ballot(t, ty, first, mask)
        else:
            lowest = t.intrinsic("llvm.cttz.i64", I64, [mask, ir.Constant(I1, 0)])
            value = _lane_value(t, ty, first, mask, lowest, linear)
        if result_id is not None:
            _for_each_lane(t, mask, lambda lane: _store_result(t, result_id, first, lane, value))
        return value

    def result_of(lane: ir.Value) -> ir.Value:
        reads = b.load(_frame_element(t, WAVE_LANE, b.add(first, lane)), typ=I32)
        if base == "ds_bpermute":  # a byte address: lane * 4, modulo the wavefront
            reads = b.lshr(reads, ir.Constant(I32, 2))
        source = b.zext(b.and_(reads, ir.Constant(I32, CPU_WAVEFRONT_SIZE - 1)), I64)
        return _lane_value(t, ty, first, mask, source, linear)

    if result_id is not None:
        _for_each_lane(
            t, mask, lambda lane: _store_result(t, result_id, first, lane, result_of(lane))
        )
    return result_of(b.sub(linear, first))


def _lane_value(t, ty, first, mask, source, linear) -> ir.Value:
    """The value active lane ``source`` gathered, as ``ty``; 0 for an inactive lane."""
    b = t.b
    active = b.trunc(b.lshr(mask, source), I1)
    # An inactive lane may lie past the group's last work-item: read this lane's instead.
    index = b.select(active, b.add(first, source), linear)
    bits = b.load(_frame_element(t, WAVE_DATA, index), typ=I64)
    return _from_bits(t, b.select(active, bits, ir.Constant(I64, 0)), ty)


def _store_result(t, result_id: int, first: ir.Value, lane: ir.Value, value: ir.Value) -> None:
    t.b.store(value, _frame_element(t, result_id, t.b.add(first, lane)))


def _for_each_lane(t: FunctionTranslator, mask: ir.Value, body, carried: ir.Value | None = None):
    """Emits ``body(lane)`` (lane: i64) for each set bit of ``mask``, lowest first. With
    ``carried``, ``body(lane, value)`` returns the value the next lane gets, starting from
    ``carried``; the value after the last lane is returned."""
    b = t.b
    fn = b.function
    head = fn.append_basic_block("lanes.head")
    loop = fn.append_basic_block("lanes.body")
    done = fn.append_basic_block("lanes.done")
    entry = b.block
    b.branch(head)
    b.position_at_end(head)
    left = b.phi(I64, "lanes.left")
    left.add_incoming(mask, entry)
    value = None
    if carried is not None:
        value = b.phi(carried.type, "lanes.value")
        value.add_incoming(carried, entry)
    b.cbranch(b.icmp_unsigned("!=", left, ir.Constant(I64, 0)), loop, done)
    b.position_at_end(loop)
    lane = t.intrinsic("llvm.cttz.i64", I64, [left, ir.Constant(I1, 1)])
    if value is None:
        body(lane)
    else:
        value.add_incoming(body(lane, value), b.block)
    left.add_incoming(b.and_(left, b.sub(left, ir.Constant(I64, 1))), b.block)
    b.branch(head)
    b.position_at_end(done)
    return value


def _cpu_ballot(t: FunctionTranslator, ty: ir.Type, first: ir.Value, mask: ir.Value):
    """Bit j set for each active lane j whose predicate is true."""
    b = t.b

    def vote(lane: ir.Value, votes: ir.Value) -> ir.Value:
        predicate = b.load(_frame_element(t, WAVE_DATA, b.add(first, lane)), typ=I64)
        true = b.icmp_unsigned("!=", predicate, ir.Constant(I64, 0))
        bit = b.shl(ir.Constant(I64, 1), lane)
        return b.or_(votes, b.select(true, bit, ir.Constant(I64, 0)))

    votes = _for_each_lane(t, mask, vote, ir.Constant(I64, 0))
    return votes if ty.width == 64 else b.trunc(votes, ty)


def is_gather_state(b: ir.IRBuilder, state: ir.Value) -> ir.Value:
    """Whether a step function's state (i32) resumes a wavefront operation's gather."""
    at_least = b.icmp_signed(">=", state, ir.Constant(I32, WAVE_STATE_BASE))
    even = b.icmp_unsigned("==", b.and_(state, ir.Constant(I32, 1)), ir.Constant(I32, 0))
    return b.and_(at_least, even)


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
