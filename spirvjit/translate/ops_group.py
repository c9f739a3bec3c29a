"""Sub-group operations with sub-groups of one work-item, and the expect/assume hints.

Every spirvjit target reports a sub-group size of 1 (``get_sub_group_size()``; see
spirv/capabilities.py for why): each work-item is its own sub-group, with local id 0.
Each operation is then what the SPIR-V specification defines for a group whose only
invocation is the current one: a reduction or inclusive scan is the value itself, an
exclusive scan the operation's identity, a broadcast or shuffle from invocation 0 the
value, a ballot the predicate in bit 0. Reading another invocation (a shuffle by a
non-zero delta) is undefined in SPIR-V and gives the value itself here.

Work-group collectives (``work_group_reduce_add`` and the like: OpGroup* with Workgroup
scope) need every work-item's value and are refused with an error naming them.
"""

from __future__ import annotations

import math

from llvmlite import ir

from ..spirv.grammar import GroupOperation, Scope, StorageClass
from ..spirv.module import Instruction
from .function import FunctionTranslator, handles, overload_suffix

I1 = ir.IntType(1)
I32 = ir.IntType(32)
I64 = ir.IntType(64)

# Identity of each arithmetic operation (for exclusive scans), by opname suffix.
_IDENTITY = {
    "IAdd": "zero", "FAdd": "zero", "IMul": "one", "FMul": "one",
    "SMin": "smax", "UMin": "umax", "FMin": "inf", "SMax": "smin", "UMax": "zero",
    "FMax": "-inf", "BitwiseAnd": "ones", "BitwiseOr": "zero", "BitwiseXor": "zero",
    "LogicalAnd": "ones", "LogicalOr": "zero", "LogicalXor": "zero",
}  # fmt: skip
_ARITHMETIC = [f"OpGroupNonUniform{op}" for op in _IDENTITY] + [
    f"OpGroup{op}" for op in ("IAdd", "FAdd", "FMin", "UMin", "SMin", "FMax", "UMax", "SMax")
]


def _subgroup_scope(t: FunctionTranslator, scope_id: int, what: str) -> None:
    scope = t.mt.constants.int_value(scope_id)
    if scope == Scope.Subgroup:
        return
    name = Scope(scope).name if scope in Scope._value2member_map_ else str(scope)
    raise t.error(
        f"{what} with {name} scope (a work-group collective function) is not supported; "
        "only sub-group operations are"
    )


def _identity(ty: ir.Type, kind: str) -> ir.Constant:
    element = ty.element if isinstance(ty, ir.VectorType) else ty
    if isinstance(element, ir.IntType):
        width = element.width
        value = {
            "zero": 0,
            "one": 1,
            "ones": (1 << width) - 1,
            "umax": (1 << width) - 1,
            "smax": (1 << (width - 1)) - 1,
            "smin": 1 << (width - 1),
        }[kind]
    else:
        value = {"zero": 0.0, "one": 1.0, "inf": math.inf, "-inf": -math.inf}[kind]
    lane = ir.Constant(element, value)
    return ir.Constant(ty, [lane] * ty.count) if isinstance(ty, ir.VectorType) else lane


@handles(*_ARITHMETIC)
def group_arithmetic(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    """Reduce, InclusiveScan and ClusteredReduce of one value: the value; ExclusiveScan:
    the operation's identity."""
    scope_id, operation, value_id = inst.operands[:3]
    _subgroup_scope(t, scope_id, inst.opname)
    value = t.value(value_id)
    if operation == GroupOperation.ExclusiveScan:
        op = inst.opname.removeprefix("OpGroupNonUniform").removeprefix("OpGroup")
        return _identity(value.type, _IDENTITY[op])
    if operation not in (
        GroupOperation.Reduce,
        GroupOperation.InclusiveScan,
        GroupOperation.ClusteredReduce,
    ):
        raise t.error(f"group operation {operation} is not supported")
    return value


@handles("OpGroupNonUniformElect")
def elect(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    _subgroup_scope(t, inst.operands[0], inst.opname)
    return ir.Constant(I1, 1)


@handles("OpGroupNonUniformAllEqual")
def all_equal(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    _subgroup_scope(t, inst.operands[0], inst.opname)
    return ir.Constant(I1, 1)


@handles(
    "OpGroupAll",
    "OpGroupAny",
    "OpGroupNonUniformAll",
    "OpGroupNonUniformAny",
    "OpGroupNonUniformBroadcastFirst",
)
def own_value(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    """all/any of one predicate, the first active invocation's value: the operand."""
    _subgroup_scope(t, inst.operands[0], inst.opname)
    return t.value(inst.operands[1])


@handles(
    "OpGroupBroadcast",
    "OpGroupNonUniformBroadcast",
    "OpGroupNonUniformShuffle",
    "OpGroupNonUniformShuffleXor",
    "OpGroupNonUniformShuffleUp",
    "OpGroupNonUniformShuffleDown",
    "OpGroupNonUniformRotateKHR",
)
def from_invocation(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    """The value of invocation 0 (the only one): the operand. The id, mask or delta must
    select an active invocation, which only 0 does; anything else is undefined."""
    _subgroup_scope(t, inst.operands[0], inst.opname)
    return t.value(inst.operands[1])


@handles("OpGroupNonUniformBallot")
def ballot(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    """A uint4 with the predicate in bit 0 of its first lane."""
    _subgroup_scope(t, inst.operands[0], inst.opname)
    ty = t.llvm_type(inst.result_type)
    bit = t.b.zext(t.value(inst.operands[1]), ty.element)
    return t.b.insert_element(_identity(ty, "zero"), bit, ir.Constant(I32, 0))


def _bit0(t: FunctionTranslator, ballot_id: int) -> ir.Value:
    """Invocation 0's bit of a ballot value, as i1."""
    value = t.value(ballot_id)
    word = t.b.extract_element(value, ir.Constant(I32, 0))
    return t.b.trunc(word, I1)


@handles("OpGroupNonUniformInverseBallot")
def inverse_ballot(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    _subgroup_scope(t, inst.operands[0], inst.opname)
    return _bit0(t, inst.operands[1])


@handles("OpGroupNonUniformBallotBitExtract")
def ballot_bit_extract(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    """Bit ``index`` of the ballot (any index, as the instruction defines)."""
    _subgroup_scope(t, inst.operands[0], inst.opname)
    value, index = t.value(inst.operands[1]), t.value(inst.operands[2])
    b = t.b
    index = b.zext(index, I32) if index.type.width < 32 else b.trunc(index, I32)
    word = b.extract_element(value, b.lshr(index, ir.Constant(I32, 5)))
    bit = b.lshr(word, b.and_(index, ir.Constant(I32, 31)))
    return b.trunc(bit, I1)


@handles("OpGroupNonUniformBallotBitCount")
def ballot_bit_count(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    """Set bits among the group's invocations (bit 0 only): for Reduce and InclusiveScan
    that bit, for ExclusiveScan none."""
    _subgroup_scope(t, inst.operands[0], inst.opname)
    operation, ballot_id = inst.operands[1:3]
    ty = t.llvm_type(inst.result_type)
    if operation == GroupOperation.ExclusiveScan:
        return ir.Constant(ty, 0)
    return t.b.zext(_bit0(t, ballot_id), ty)


@handles("OpGroupNonUniformBallotFindLSB", "OpGroupNonUniformBallotFindMSB")
def ballot_find(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    """The lowest/highest set bit among the group's bits: 0 (undefined when none is set)."""
    _subgroup_scope(t, inst.operands[0], inst.opname)
    return ir.Constant(t.llvm_type(inst.result_type), 0)


@handles("OpExpectKHR")
def expect(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    """cl_khr_expect_assume: the value, with the expectation passed to LLVM for integers."""
    value, expected = t.value(inst.operands[0]), t.value(inst.operands[1])
    element = value.type.element if isinstance(value.type, ir.VectorType) else value.type
    if not isinstance(element, ir.IntType):
        return value
    return t.intrinsic(f"llvm.expect.{overload_suffix(value.type)}", value.type, [value, expected])


# --- async_work_group_copy / async_work_group_strided_copy / wait_group_events -----------
#
# OpGroupAsyncCopy is run as a plain copy at once, shared out among the group: work-item
# k copies elements k, k + S, k + 2S, ... (S the group's size). OpGroupWaitEvents, the
# only point where the copied data may be read, is a work-group barrier
# (``hip_prepass.prepare_module`` rewrites it to OpControlBarrier before barrier
# preparation sees the kernel), so every element is in place, whoever copied it, when any
# work-item goes on. Events are null: nothing is left to wait for.


@handles("OpGroupAsyncCopy")
def group_async_copy(t: FunctionTranslator, inst: Instruction) -> ir.Value:
    scope, dst_id, src_id, count_id, stride_id, _event = inst.operands
    if t.mt.constants.int_value(scope) != Scope.Workgroup:
        raise t.error("OpGroupAsyncCopy with a scope other than Workgroup is not supported")
    dst_type = t.types.spv(t.type_of(dst_id))
    element = t.llvm_type(t.types.spv(t.type_of(src_id)).element or dst_type.element)
    b = t.b
    # The stride steps through the global side: the source when copying to local memory.
    strided_source = dst_type.storage == StorageClass.Workgroup
    dst, src = t.value(dst_id), t.value(src_id)
    count, stride = (_as_i64(t, t.value(v)) for v in (count_id, stride_id))
    first = t.workitem.scalar("LocalInvocationIndex")
    sizes = [t.workitem.query("local_size", d) for d in range(3)]
    step = b.mul(b.mul(sizes[0], sizes[1]), sizes[2])
    before = b.block
    head = t.llfn.append_basic_block("async_copy.head")
    body = t.llfn.append_basic_block("async_copy.body")
    done = t.llfn.append_basic_block("async_copy.done")
    b.branch(head)
    b.position_at_end(head)
    i = b.phi(I64, "async_copy.i")
    i.add_incoming(first, before)
    b.cbranch(b.icmp_unsigned("<", i, count), body, done)
    b.position_at_end(body)
    far = b.mul(i, stride)
    src_index, dst_index = (far, i) if strided_source else (i, far)
    value = b.load(b.gep(src, [src_index], source_etype=element), typ=element)
    b.store(value, b.gep(dst, [dst_index], source_etype=element))
    i.add_incoming(b.add(i, step), b.block)
    b.branch(head)
    b.position_at_end(done)
    return ir.Constant(t.llvm_type(inst.result_type), None)


@handles("OpGroupWaitEvents")
def group_wait_events(t: FunctionTranslator, inst: Instruction) -> None:
    """A sub-group's wait (a work-group's became a barrier before translation): each
    work-item is its own sub-group and copied its elements itself."""
    if t.mt.constants.int_value(inst.operands[0]) == Scope.Workgroup:
        raise t.error("OpGroupWaitEvents of a work-group was not made a barrier")


def _as_i64(t: FunctionTranslator, value: ir.Value) -> ir.Value:
    if value.type.width < 64:
        return t.b.zext(value, I64)
    return value
