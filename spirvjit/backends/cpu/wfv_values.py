"""Whole-function vectorization (vectorize.py) of values that are not one scalar per lane:
varying vectors and aggregates, private arrays, and what runs lane by lane under the mask
(compare-exchange, atomic loads and stores, calls that were not inlined).

* **Vectors.** A varying ``<N x T>`` is one ``<N*W x T>`` in structure-of-arrays order:
  component c of lane l at ``c*W + l``. Element-wise operations (arithmetic, compares,
  conversions, selects, element-wise intrinsics) then apply to the wide vector as they
  are; extract/insert with a constant index and shuffles are shuffles of it; a
  run-time index becomes compares and selects. A struct or array value widens field by
  field (``{A, B}`` -> ``{wide A, wide B}``).
* **Vector memory.** Consecutive lanes (``float4 *p; p[i]``, ``vload4(i, p)``) load or
  store ``N*W`` elements at once and transpose them (interleaved access); other
  addresses are one gather/scatter of ``N*W`` elements, the scatter in the scalar loop's
  order (lane by lane, each lane's components in order).
* **Private arrays** (``alloca``). An array accessed only by loads and stores of one
  element size through ``getelementptr`` is *interleaved*: element k of lane l at
  ``(k*W + l) * size``, so a uniform index is one vector load or store and a varying one a
  gather/scatter. Any other use (a call, memset, a pointer kept in a variable) gives
  each lane a contiguous copy instead (``W`` copies side by side), where every pointer
  operation means what it did.
* **Lane by lane** under the mask, in lane order: ``cmpxchg``, atomic loads and stores,
  and calls to functions that were not inlined (each lane's call gets a copy of the
  work-item context with its own x ids).
"""

from __future__ import annotations

from llvmlite import ir

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()

# The work-item context slots of the x global and local ids (abi._QUERY_BASE).
_GLOBAL_ID_X, _LOCAL_ID_X = 0, 3
# llvm.vector.reduce.<op> -> how two lanes' components combine (a binary opcode or an
# element-wise intrinsic).
_REDUCTIONS = {
    "add": ("add", None), "mul": ("mul", None), "and": ("and", None), "or": ("or", None),
    "xor": ("xor", None), "smax": (None, "smax"), "smin": (None, "smin"),
    "umax": (None, "umax"), "umin": (None, "umin"), "fmax": (None, "maxnum"),
    "fmin": (None, "minnum"), "fmaximum": (None, "maximum"), "fminimum": (None, "minimum"),
    "fadd": ("fadd", None), "fmul": ("fmul", None),
}  # fmt: skip


# Interleaved private arrays up to this many elements are indexed per lane by compares and
# selects (see _private_access); longer ones by gathers and scatters.
_SELECT_ELEMENTS = 16
_STORED = object()  # what _private_access returns for a store it emitted


def _i32s(values) -> ir.Constant:
    return ir.Constant(ir.VectorType(I32, len(values)), [ir.Constant(I32, v) for v in values])


def _scalar(ty) -> bool:
    return isinstance(ty, ir.IntType | ir.FloatType | ir.DoubleType | ir.HalfType | ir.PointerType)


class _Private:
    """A private variable (alloca) of the kernel and how the lanes' copies are laid out."""

    def __init__(self, alloca: ir.AllocaInstr, interleaved: bool, unit: int, size: int):
        self.alloca = alloca
        self.interleaved = interleaved  # element k of lane l at (k*W + l) * unit
        self.unit = unit  # interleaved: the element size; else the distance between copies
        self.size = size  # bytes of one lane's copy


class ValueLanes:
    """Mixin of vectorize._Vectorizer: the parts named in the module docstring."""

    # ----- types and lanes -----------------------------------------------------------

    def _widen(self, ty):
        """The type of a varying value of type ``ty``."""
        W = self.W
        if isinstance(ty, ir.VectorType):
            if not _scalar(ty.element):
                raise _declined(f"varying value of type {ty}")
            return ir.VectorType(ty.element, ty.count * W)
        if isinstance(ty, ir.LiteralStructType) and not ty.packed:
            return ir.LiteralStructType([self._widen(t) for t in ty.elements])
        if isinstance(ty, ir.ArrayType):
            return ir.ArrayType(self._widen(ty.element), ty.count)
        if _scalar(ty):
            return ir.VectorType(ty, W)
        raise _declined(f"varying value of type {ty}")

    def _broadcast(self, value):
        """A uniform value of any type as the varying value every lane has."""
        ty = value.type
        if isinstance(ty, ir.VectorType):
            n, W = ty.count, self.W
            mask = _i32s([c for c in range(n) for _ in range(W)])
            return self.b.shuffle_vector(value, ir.Constant(ty, ir.Undefined), mask)
        if isinstance(ty, ir.LiteralStructType | ir.ArrayType):
            wide = self._widen(ty)
            result = ir.Constant(wide, ir.Undefined)
            count = len(ty.elements) if isinstance(ty, ir.LiteralStructType) else ty.count
            for k in range(count):
                part = self._broadcast(self.b.extract_value(value, k))
                result = self.b.insert_value(result, part, k)
            return result
        return self._splat(value)

    def _expand(self, vector, n: int):
        """A ``<W x T>`` (one value per lane) repeated for each of ``n`` components, in
        the order of a widened ``<n x T>``."""
        if n == 1:
            return vector
        W = self.W
        if not isinstance(vector.type, ir.VectorType):
            return vector  # a uniform i1 condition selects whole values
        mask = _i32s([lane for _ in range(n) for lane in range(W)])
        return self.b.shuffle_vector(vector, ir.Constant(vector.type, ir.Undefined), mask)

    def _component(self, wide, c: int):
        """Component c of every lane of a widened vector."""
        W = self.W
        undef = ir.Constant(wide.type, ir.Undefined)
        return self.b.shuffle_vector(wide, undef, _i32s(range(c * W, c * W + W)))

    def _pad(self, vector, count: int):
        """``vector`` lengthened to ``count`` elements (the rest undefined)."""
        have = vector.type.count
        if have == count:
            return vector
        mask = list(range(have)) + [0] * (count - have)
        undef = ir.Constant(vector.type, ir.Undefined)
        return self.b.shuffle_vector(vector, undef, _i32s(mask))

    def _with_component(self, wide, c: int, part):
        """``wide`` with component c replaced by ``part`` (one value per lane)."""
        W, total = self.W, wide.type.count
        mask = [k if k // W != c else total + k % W for k in range(total)]
        return self.b.shuffle_vector(wide, self._pad(part, total), _i32s(mask))

    def _to_lanes(self, wide, n: int):
        """Structure-of-arrays -> each lane's n components together (array of structures)."""
        W = self.W
        mask = [c * W + lane for lane in range(W) for c in range(n)]
        return self.b.shuffle_vector(wide, ir.Constant(wide.type, ir.Undefined), _i32s(mask))

    def _from_lanes(self, lanes, n: int):
        W = self.W
        mask = [lane * n + c for c in range(n) for lane in range(W)]
        return self.b.shuffle_vector(lanes, ir.Constant(lanes.type, ir.Undefined), _i32s(mask))

    def _lane(self, wide, ty, lane: int):
        """Lane ``lane``'s value (of the scalar type ``ty``) of a widened value."""
        b, W = self.b, self.W
        if isinstance(ty, ir.VectorType):
            mask = [c * W + lane for c in range(ty.count)]
            return b.shuffle_vector(wide, ir.Constant(wide.type, ir.Undefined), _i32s(mask))
        if isinstance(ty, ir.LiteralStructType | ir.ArrayType):
            parts = ty.elements if isinstance(ty, ir.LiteralStructType) else [ty.element] * ty.count
            result = ir.Constant(ty, ir.Undefined)
            for k, part in enumerate(parts):
                value = self._lane(b.extract_value(wide, k), part, lane)
                result = b.insert_value(result, value, k)
            return result
        return b.extract_element(wide, ir.Constant(I32, lane))

    def _set_lane(self, wide, ty, lane: int, value):
        b, W = self.b, self.W
        if isinstance(ty, ir.VectorType):
            total = wide.type.count
            mask = [k if k % W != lane else total + k // W for k in range(total)]
            return b.shuffle_vector(wide, self._pad(value, total), _i32s(mask))
        if isinstance(ty, ir.LiteralStructType | ir.ArrayType):
            parts = ty.elements if isinstance(ty, ir.LiteralStructType) else [ty.element] * ty.count
            for k, part in enumerate(parts):
                field = self._set_lane(
                    b.extract_value(wide, k), part, lane, b.extract_value(value, k)
                )
                wide = b.insert_value(wide, field, k)
            return wide
        return b.insert_element(wide, value, ir.Constant(I32, lane))

    def _select_wide(self, mask, on, off):
        """select(mask, on, off) for widened values of any type; ``mask`` is an i1 or one
        bit per lane."""
        ty = on.type
        b = self.b
        if isinstance(ty, ir.LiteralStructType | ir.ArrayType):
            count = len(ty.elements) if isinstance(ty, ir.LiteralStructType) else ty.count
            result = ir.Constant(ty, ir.Undefined)
            for k in range(count):
                part = self._select_wide(mask, b.extract_value(on, k), b.extract_value(off, k))
                result = b.insert_value(result, part, k)
            return result
        if isinstance(mask.type, ir.VectorType):
            mask = self._expand(mask, ty.count // self.W)
        return b.select(mask, on, off)

    def _lane_mask(self, mask, ty):
        """A lane mask (one bit per lane) spread over the components of a widened ``ty``."""
        mask = self._splat(mask)
        if isinstance(ty, ir.VectorType) and ty.count != self.W:
            return self._expand(mask, ty.count // self.W)
        return mask

    # ----- varying vector and aggregate instructions --------------------------------------

    def _emit_aggregate(self, inst, block, mask):
        """extractelement, insertelement, shufflevector, extractvalue, insertvalue and
        bitcasts between vector shapes, on varying values (None: not one of those)."""
        b, W = self.b, self.W
        name = inst.opname

        def val(op):
            return self._value(op, block, True)

        if name == "extractelement":
            vector, index = inst.operands
            n = vector.type.count
            wide = val(vector)
            index = self._resolve(index)
            if isinstance(index, ir.Constant):
                return self._component(wide, index.constant)
            at = val(index)
            result = self._component(wide, 0)
            for c in range(1, n):
                hit = b.icmp_unsigned("==", at, self._splat(ir.Constant(at.type.element, c)))
                result = b.select(hit, self._component(wide, c), result)
            return result
        if name == "insertelement":
            vector, element, index = inst.operands
            n = vector.type.count
            wide, part = val(vector), val(element)
            index = self._resolve(index)
            if isinstance(index, ir.Constant):
                return self._with_component(wide, index.constant, part)
            at = self._expand(val(index), n)
            which = ir.Constant(at.type, [c for c in range(n) for _ in range(W)])
            return b.select(b.icmp_unsigned("==", at, which), self._expand(part, n), wide)
        if name == "shufflevector":
            first, second, selector = inst.operands
            n = first.type.count
            picks = [int(c.constant) for c in selector.constant]
            mask = []
            for pick in picks:
                for lane in range(W):
                    mask.append(pick * W + lane)  # the second operand follows the first
            left = val(first)
            right = val(second) if second is not ir.Undefined and not _undefined(second) else None
            if right is None:
                right = ir.Constant(left.type, ir.Undefined)
            if any(m >= 2 * n * W for m in mask):
                raise _declined("shufflevector mask")
            return b.shuffle_vector(left, right, _i32s(mask))
        if name == "extractvalue":
            return b.extract_value(val(inst.operands[0]), inst.indices)
        if name == "insertvalue":
            return b.insert_value(val(inst.operands[0]), val(inst.operands[1]), inst.indices)
        if name == "bitcast":
            return self._bitcast(inst, val(inst.operands[0]))
        return None

    def _bitcast(self, inst, wide):
        """A per-lane bitcast: each lane's bits side by side (array of structures), cast as
        a whole, and back to structure-of-arrays order."""
        src, dst = inst.operands[0].type, inst.type
        n_src = src.count if isinstance(src, ir.VectorType) else 1
        n_dst = dst.count if isinstance(dst, ir.VectorType) else 1
        element = dst.element if isinstance(dst, ir.VectorType) else dst
        if n_src == n_dst:
            return self.b.bitcast(wide, self._widen(dst))
        lanes = self._to_lanes(wide, n_src) if n_src > 1 else wide
        cast = self.b.bitcast(lanes, ir.VectorType(element, n_dst * self.W))
        return self._from_lanes(cast, n_dst) if n_dst > 1 else cast

    def _reduce(self, base: str, args, ret):
        """llvm.vector.reduce.<op> of each lane's vector, in element order."""
        opcode, intrinsic = _REDUCTIONS[base]
        b = self.b
        if base in ("fadd", "fmul"):
            acc, wide, n = args[0], args[1], args[1].type.count // self.W
            parts = [self._component(wide, c) for c in range(n)]
        else:
            wide = args[0]
            n = wide.type.count // self.W
            parts = [self._component(wide, c) for c in range(n)]
            acc, parts = parts[0], parts[1:]
        for part in parts:
            if opcode is not None:
                acc = self._put(ir.Instruction(b.block, acc.type, opcode, [acc, part]))
            else:
                suffix = _mangle(acc.type)
                fn = _declare(self.module, f"llvm.{intrinsic}.{suffix}", acc.type, [acc.type] * 2)
                acc = b.call(fn, [acc, part])
        return acc

    # ----- vector loads and stores ---------------------------------------------------

    def _vector_access_ok(self, ty) -> bool:
        """Whether a ``<N x T>`` occupies exactly N elements (no padding: float3 does not)."""
        return ty.count * ty.element.get_abi_size(self.td) == ty.get_abi_size(self.td)

    def _element_pointers(self, pointers, ty, lane_order: bool):
        """The address of every component of every lane: structure-of-arrays order, or
        lane by lane (``lane_order``, each lane's components in order)."""
        W, n = self.W, ty.count
        size = ty.element.get_abi_size(self.td)
        if lane_order:
            picks = [lane for lane in range(W) for _ in range(n)]
            offsets = [c * size for _ in range(W) for c in range(n)]
        else:
            picks = [lane for _ in range(n) for lane in range(W)]
            offsets = [c * size for c in range(n) for _ in range(W)]
        spread = self.b.shuffle_vector(
            pointers, ir.Constant(pointers.type, ir.Undefined), _i32s(picks)
        )
        offset = ir.Constant(ir.VectorType(I64, n * W), offsets)
        gep = self.b.gep(spread, [offset], source_etype=I8)
        gep.type = ir.VectorType(PTR, n * W)
        return gep

    def _spread_mask(self, mask, n: int, lane_order: bool):
        W = self.W
        picks = (
            [lane for lane in range(W) for _ in range(n)]
            if lane_order
            else [lane for _ in range(n) for lane in range(W)]
        )
        return self.b.shuffle_vector(mask, ir.Constant(mask.type, ir.Undefined), _i32s(picks))

    def _load_vector(self, inst, block, mask):
        b = self.b
        ty = inst.type
        n = ty.count
        wide_ty = self._widen(ty)
        pointers = self._value(inst.operands[0], block, True)
        esize = ty.element.get_abi_size(self.td)
        align = inst.align or ty.get_abi_size(self.td)
        full = self._splat(ir.Constant(I1, 1)) if mask is None else mask

        def gather():
            addresses = self._element_pointers(pointers, ty, lane_order=False)
            return self._gather(
                addresses, self._spread_mask(full, n, False), wide_ty, min(align, esize)
            )

        if not self._vector_access_ok(ty) or not self._consecutive(inst.operands[0], ty):
            return gather()
        base, fast = self._fast_path(pointers, mask, ty.get_abi_size(self.td), inst.operands[0])
        return self._fast_or_not(
            fast, lambda: self._from_lanes(b.load(base, typ=wide_ty, align=align), n), gather
        )

    def _store_vector(self, inst, block, mask):
        b = self.b
        value_op, pointer_op = inst.operands
        ty = value_op.type
        n = ty.count
        value = self._value(value_op, block, True)
        pointers = self._value(pointer_op, block, True)
        esize = ty.element.get_abi_size(self.td)
        align = inst.align or ty.get_abi_size(self.td)
        full = self._splat(ir.Constant(I1, 1)) if mask is None else mask
        lanes = self._to_lanes(value, n)

        def scatter():
            # Lane by lane, each lane's components in order: the scalar loop's order where
            # lanes overlap.
            addresses = self._element_pointers(pointers, ty, lane_order=True)
            self._scatter(lanes, addresses, self._spread_mask(full, n, True), min(align, esize))

        consecutive = (
            self._resolve(pointer_op) in self.varying
            and self._vector_access_ok(ty)
            and self._consecutive(pointer_op, ty)
        )
        if not consecutive:
            scatter()
            return None
        base, fast = self._fast_path(pointers, mask, ty.get_abi_size(self.td), pointer_op)
        self._fast_or_not(fast, lambda: b.store(lanes, base, align), scatter)
        return None

    # ----- private variables -----------------------------------------------------------

    def _privates(self) -> None:
        """Chooses each alloca's layout (see the module docstring)."""
        users: dict = {}
        for block in self.rpo:
            for inst in block.instructions:
                for op in inst.operands:
                    users.setdefault(id(op), []).append(inst)
        self.private: dict = {}  # alloca -> _Private
        self.private_pointer: set = set()  # GEPs into interleaved privates
        for block in self.rpo:
            for inst in block.instructions:
                if not isinstance(inst, ir.AllocaInstr):
                    continue
                if block is not self.entry:
                    raise _declined("a private variable allocated outside the entry block")
                count = inst.operands[0] if inst.operands else ir.Constant(I32, 1)
                if not isinstance(count, ir.Constant):
                    raise _declined("a private array of run-time size")
                size = inst.allocated_type.get_abi_size(self.td) * count.constant
                align = max(inst.align or 1, inst.allocated_type.get_abi_alignment(self.td))
                derived, unit = self._interleavable(inst, users)
                if unit and size % unit == 0:
                    self.private[inst] = _Private(inst, True, unit, size)
                    self.private_pointer.update(derived)
                else:
                    stride = -(-size // align) * align
                    self.private[inst] = _Private(inst, False, stride, size)

    def _interleavable(self, alloca, users) -> tuple[set, int]:
        """(the GEPs derived from ``alloca``, the one element size of every access) when
        only such GEPs, loads and stores of scalars of that size use it; else (set(), 0)."""
        derived, sizes, work, copies = set(), set(), [alloca], []
        while work:
            value = work.pop()
            for user in users.get(id(value), []):
                if isinstance(user, ir.GEPInstr) and user.pointer is value:
                    if any(i is value for i in user.indices) or not self._unit_gep(user):
                        return set(), 0
                    derived.add(user)
                    work.append(user)
                elif isinstance(user, ir.LoadInstr) and _scalar(user.type):
                    sizes.add(user.type.get_abi_size(self.td))
                elif (
                    isinstance(user, ir.StoreInstr)
                    and user.operands[1] is value
                    and user.operands[0] is not value
                    and _scalar(user.operands[0].type)
                ):
                    sizes.add(user.operands[0].type.get_abi_size(self.td))
                elif isinstance(user, ir.CallInstr) and self._call_kind(user)[0] == "drop":
                    continue
                elif self._memory_call(user, value) is not None:
                    copies.append(self._memory_call(user, value))
                else:
                    return set(), 0
        if len(sizes) != 1:
            return set(), 0
        unit = sizes.pop()
        if any(length % unit for length in copies):
            return set(), 0
        for gep in derived:
            if not self._unit_gep(gep, unit):
                return set(), 0
        return derived, unit

    def _memory_call(self, call, pointer) -> int | None:
        """The length of a memcpy/memmove/memset that ``pointer`` (into a private array) is
        one side of, with a constant length and (copies) the other side not private
        memory; else None."""
        if not isinstance(call, ir.CallInstr):
            return None
        name = getattr(call.callee, "name", "")
        if not name.startswith(("llvm.memcpy.", "llvm.memmove.", "llvm.memset.")):
            return None
        args = call.args
        if args[0] is not pointer and (name.startswith("llvm.memset.") or args[1] is not pointer):
            return None
        length = self._resolve(args[2])
        if not isinstance(length, ir.Constant) or length.constant <= 0:
            return None
        if not name.startswith("llvm.memset."):
            other = args[1] if args[0] is pointer else args[0]
            if other is pointer or isinstance(self._pointer_root(other), ir.AllocaInstr):
                return None
        return length.constant

    def _pointer_root(self, pointer):
        pointer = self._resolve(pointer)
        while isinstance(pointer, ir.GEPInstr):
            pointer = self._resolve(pointer.pointer)
        return pointer

    def _private_memory_call(self, inst, block, mask) -> bool:
        """A memcpy/memmove/memset with one side an interleaved private array (see
        _interleavable), as vector loads and stores of its elements: a copy between the
        array and lanes' blocks side by side (``float v[8]`` filled from ``in + 8 * i``) is
        one wide load or store and a transpose. False: not such a call."""
        name = inst.callee.name
        if not name.startswith(("llvm.memcpy.", "llvm.memmove.", "llvm.memset.")):
            return False
        args = inst.args
        sides = [0] if name.startswith("llvm.memset.") else [0, 1]
        private_side = None
        for side in sides:
            root = self._resolve(args[side])
            while root in self.private_pointer:
                root = self._resolve(root.pointer)
            private = self.private.get(root) if isinstance(root, ir.AllocaInstr) else None
            if private is not None and private.interleaved:
                private_side = side
        if private_side is None:
            return False
        pointer = self._resolve(args[private_side])
        if any(
            self._resolve(i) in self.varying
            for gep in self._gep_chain(pointer)
            for i in gep.indices
        ):
            raise _declined("a memory copy at a per-lane offset into a private array")
        b, W = self.b, self.W
        root = self._pointer_root(pointer)
        unit = self.private[root].unit
        count = self._resolve(args[2]).constant // unit
        ty = ir.IntType(8 * unit)
        wide_ty = ir.VectorType(ty, count * W)
        base = b.extract_element(self._value(pointer, block, True), ir.Constant(I32, 0))
        if name.startswith("llvm.memset."):
            byte = b.zext(self._value(args[1], block, True), self._vec_type(ty))
            pattern = int.from_bytes(b"\x01" * unit, "little")
            lanes = b.mul(byte, self._splat(ir.Constant(ty, pattern)))
            self._private_store(base, self._expand(lanes, count), mask, unit)
            return True
        other = self._value(args[1 - private_side], block, True)
        element = ir.VectorType(ty, count)
        if private_side == 1:  # out of the array
            values = self._to_lanes(b.load(base, typ=wide_ty, align=unit), count)
            full = self._splat(ir.Constant(I1, 1)) if mask is None else mask
            fast = self._all(full)
            fast = b.and_(fast, self._consecutive_check(other, count * unit))
            with b.if_else(fast, likely=True) as (then, otherwise):
                with then:
                    b.store(values, b.extract_element(other, ir.Constant(I32, 0)), 1)
                with otherwise:
                    addresses = self._element_pointers(other, element, lane_order=True)
                    self._scatter(values, addresses, self._spread_mask(full, count, True), 1)
            return True
        # Into the array: every lane's block read (gathered where not side by side).
        full = self._splat(ir.Constant(I1, 1)) if mask is None else mask
        fast = b.and_(self._all(full), self._consecutive_check(other, count * unit))
        with b.if_else(fast, likely=True) as (then, otherwise):
            with then:
                first = b.extract_element(other, ir.Constant(I32, 0))
                plain = self._from_lanes(b.load(first, typ=wide_ty, align=1), count)
                plain_block = b.block
            with otherwise:
                addresses = self._element_pointers(other, element, lane_order=False)
                gathered = self._gather(
                    addresses, self._spread_mask(full, count, False), wide_ty, 1
                )
                gather_block = b.block
        values = b.phi(wide_ty)
        values.add_incoming(plain, plain_block)
        values.add_incoming(gathered, gather_block)
        self._private_store(base, values, mask, unit)
        return True

    def _gep_chain(self, pointer) -> list:
        chain = []
        while isinstance(pointer, ir.GEPInstr):
            chain.append(pointer)
            pointer = self._resolve(pointer.pointer)
        return chain

    def _private_store(self, base, values, mask, unit: int) -> None:
        """Stores consecutive elements of an interleaved private array (masked: blended
        with what the array holds)."""
        b = self.b
        if mask is not None:
            spread = self._expand(self._splat(mask), values.type.count // self.W)
            values = b.select(spread, values, b.load(base, typ=values.type, align=unit))
        b.store(values, base, unit)

    def _unit_gep(self, gep, unit: int | None = None) -> bool:
        """Whether every address ``gep`` can make is a multiple of ``unit`` bytes from its
        pointer (its element types are all of that size, or constant byte offsets)."""
        if unit is None:
            return True

        def leaves_ok(ty) -> bool:
            if isinstance(ty, ir.ArrayType):
                return leaves_ok(ty.element)
            if isinstance(ty, ir.VectorType):
                return ty.element.get_abi_size(self.td) == unit and self._vector_access_ok(ty)
            if isinstance(ty, ir.LiteralStructType):
                return all(leaves_ok(t) for t in ty.elements)
            return _scalar(ty) and ty.get_abi_size(self.td) == unit

        if leaves_ok(gep.source_etype):
            return True
        if isinstance(gep.source_etype, ir.IntType) and len(gep.indices) == 1:
            size = gep.source_etype.get_abi_size(self.td)
            return size % unit == 0 or self._multiple_of(gep.indices[0], unit // size)
        return False

    def _multiple_of(self, value, factor: int, depth: int = 0) -> bool:
        """Whether integer ``value`` is always a multiple of ``factor`` (a power of two):
        a constant, a shift or product by one, sums and extensions of those."""
        value = self._resolve(value)
        if factor <= 1:
            return True
        if isinstance(value, ir.Constant):
            return isinstance(value.constant, int) and value.constant % factor == 0
        if not isinstance(value, ir.Instruction) or depth > 8:
            return False
        ops = [self._resolve(op) for op in value.operands]
        if value.opname in ("shl", "mul"):
            k = ops[1]
            if isinstance(k, ir.Constant) and isinstance(k.constant, int):
                step = 1 << k.constant if value.opname == "shl" else k.constant
                if step % factor == 0:
                    return True
            return self._multiple_of(ops[0], factor, depth + 1)
        if value.opname in ("add", "sub", "or"):
            return all(self._multiple_of(op, factor, depth + 1) for op in ops)
        if value.opname == "select":
            return all(self._multiple_of(op, factor, depth + 1) for op in ops[1:])
        if value.opname == "and":
            return any(self._multiple_of(op, factor, depth + 1) for op in ops)
        if value.opname in ("sext", "zext"):
            return self._multiple_of(ops[0], factor, depth + 1)
        return False

    def _emit_alloca(self, inst):
        """The lanes' pointers to their copies of a private variable."""
        private = self.private[inst]
        W = self.W
        if private.interleaved:
            element = ir.IntType(8 * private.unit)
            memory = self._entry_alloca(ir.ArrayType(element, private.size // private.unit * W))
            memory.align = max(inst.align or 1, min(private.unit * W, 64))
        else:
            memory = self._entry_alloca(ir.ArrayType(I8, private.unit * W))
            memory.align = max(inst.align or 1, inst.allocated_type.get_abi_alignment(self.td))
        offsets = ir.Constant(ir.VectorType(I64, W), [lane * private.unit for lane in range(W)])
        gep = self.b.gep(memory, [offsets], source_etype=I8)
        gep.type = ir.VectorType(PTR, W)
        return gep

    def _entry_alloca(self, ty):
        """A static alloca at the start of the clone's entry block."""
        entry = self.fn.blocks[0]
        at_start = ir.IRBuilder(entry)
        at_start.position_at_start(entry)
        memory = at_start.alloca(ty)
        memory.type = PTR  # opaque pointers: llvmlite's alloca is typed
        if self.b.block is entry:  # the builder's place in the block moved by one
            self.b.position_at_end(entry)
        return memory

    def _emit_private_gep(self, inst, block):
        """A GEP into an interleaved private array: the byte offset it adds in one lane's
        view, times W."""
        b = self.b
        varying = any(self._resolve(i) in self.varying for i in inst.indices)
        indices = [self._value(i, block, varying) for i in inst.indices]
        null = ir.Constant(PTR, None)
        offset = b.gep(null, indices, source_etype=inst.source_etype)
        if varying:
            offset.type = ir.VectorType(PTR, self.W)
            offset = b.ptrtoint(offset, ir.VectorType(I64, self.W))
        else:
            offset = self._splat(b.ptrtoint(offset, I64))
        scaled = b.mul(offset, self._splat(ir.Constant(I64, self.W)))
        gep = b.gep(self._value(inst.pointer, block, True), [scaled], source_etype=I8)
        gep.type = ir.VectorType(PTR, self.W)
        return gep

    def _private_stride(self, inst, of):
        """The lane stride of an alloca or of a GEP into an interleaved private (None: not
        one of those; ``of``: the stride of an operand)."""
        if isinstance(inst, ir.AllocaInstr) and inst in self.private:
            return self.private[inst].unit
        if inst in self.private_pointer:
            if any(of(i) != 0 for i in inst.indices):
                return "unknown"
            return of(inst.pointer)
        return None

    def _private_root(self, pointer, size: int):
        """True (as an i1) when ``pointer`` is a private copy whose lanes are ``size``
        bytes apart by construction."""
        private = self.private.get(pointer) if isinstance(pointer, ir.AllocaInstr) else None
        if private is not None and private.unit == size:
            return ir.Constant(I1, 1)
        return None

    def _private_access(self, inst, block, mask):
        """A load or store of a scalar in a private variable, without gathers, scatters or
        run-time checks where possible (None: not one of those). Private memory is the
        work-item's own and always there, so a lane that is masked off may be read, and
        written with the value it had (a blend): no other work-item can see it.

        * The lanes' addresses ``size`` apart by construction (uniform indices): one vector
          load, or store (masked: load, select, store).
        * An interleaved array of at most ``_SELECT_ELEMENTS`` elements at an index that
          differs per lane: every element's vector loaded and picked by compares (a
          store: blended into each element where the index matches), which stays in
          registers after LLVM's SROA, where a gather/scatter would go through memory."""
        b = self.b
        is_store = isinstance(inst, ir.StoreInstr)
        pointer_op = inst.operands[1] if is_store else inst.operands[0]
        ty = inst.operands[0].type if is_store else inst.type
        if not _scalar(ty):
            return None
        size = ty.get_abi_size(self.td)
        root = self._resolve(pointer_op)
        while isinstance(root, ir.GEPInstr) and not any(
            self._resolve(i) in self.varying for i in root.indices
        ):
            root = self._resolve(root.pointer)
        private = self.private.get(root) if isinstance(root, ir.AllocaInstr) else None
        pointers = self._value(pointer_op, block, True)
        vt = self._vec_type(ty)
        if private is not None and private.unit == size:
            base = b.extract_element(pointers, ir.Constant(I32, 0))
            if not is_store:
                return b.load(base, typ=vt, align=size)
            value = self._value(inst.operands[0], block, True)
            if mask is not None:
                value = b.select(mask, value, b.load(base, typ=vt, align=size))
            b.store(value, base, size)
            return _STORED
        while root in self.private_pointer:
            root = self._resolve(root.pointer)
        private = self.private.get(root) if isinstance(root, ir.AllocaInstr) else None
        if private is None or not private.interleaved:
            return None
        count = private.size // private.unit
        if count > _SELECT_ELEMENTS:
            return None
        lanes = self._value(root, block, True)
        wide = ir.VectorType(I64, self.W)
        distance = b.sub(b.ptrtoint(pointers, wide), b.ptrtoint(lanes, wide))
        shift = (self.W * private.unit).bit_length() - 1  # W and the unit: powers of two
        # The element index in 32 bits: one compare per element (at most 16 of them).
        element = b.trunc(
            b.lshr(distance, self._splat(ir.Constant(I64, shift))), self._vec_type(I32)
        )
        base = b.extract_element(lanes, ir.Constant(I32, 0))
        result = ir.Constant(vt, ir.Undefined)
        value = self._value(inst.operands[0], block, True) if is_store else None
        for k in range(count):
            at = b.gep(base, [ir.Constant(I64, k * self.W * private.unit)], source_etype=I8)
            hit = b.icmp_unsigned("==", element, self._splat(ir.Constant(I32, k)))
            current = b.load(at, typ=vt, align=size)
            if is_store:
                if mask is not None:
                    hit = b.select(mask, hit, ir.Constant(hit.type, None))
                b.store(b.select(hit, value, current), at, size)
            else:
                result = b.select(hit, current, result) if k else current
        return _STORED if is_store else result

    # ----- lane by lane ----------------------------------------------------------------

    def _lane_by_lane(self, mask, ty, emit_one):
        """Runs ``emit_one(lane)`` for each active lane in order; the results (of scalar
        type ``ty``, None: void) as a varying value."""
        b = self.b
        void = ty is None or isinstance(ty, ir.VoidType)
        result = None if void else ir.Constant(self._widen(ty), ir.Undefined)
        for lane in range(self.W):
            before = b.block
            if mask is not None:
                run = self.fn.append_basic_block(f"lane{lane}")
                done = self.fn.append_basic_block(f"lane{lane}.done")
                b.cbranch(b.extract_element(mask, ir.Constant(I32, lane)), run, done)
                b.position_at_end(run)
            value = emit_one(lane)
            updated = None if void else self._set_lane(result, ty, lane, value)
            if mask is not None:
                end = b.block
                b.branch(done)
                b.position_at_end(done)
                if not void:
                    phi = b.phi(result.type)
                    phi.add_incoming(updated, end)
                    phi.add_incoming(result, before)
                    updated = phi
            result = updated
        return result

    def _lane_context(self, lane: int):
        """A copy of the work-item context whose x ids are lane ``lane``'s."""
        b = self.b
        if getattr(self, "_context_copy", None) is None:
            self._context_copy = self._entry_alloca(_context_type())
        copy = self._context_copy
        size = _context_type().get_abi_size(self.td)
        memcpy = _declare(self.module, "llvm.memcpy.p0.p0.i64", ir.VoidType(), [PTR, PTR, I64, I1])
        ctx = self.fn.args[-1]
        b.call(memcpy, [copy, ctx, ir.Constant(I64, size), ir.Constant(I1, 0)])
        for slot in (_GLOBAL_ID_X, _LOCAL_ID_X):
            at = [ir.Constant(I32, 0), ir.Constant(I32, 0), ir.Constant(I32, slot)]
            first = b.load(b.gep(ctx, at, source_etype=_context_type()), typ=I64)
            mine = b.add(first, ir.Constant(I64, lane))
            b.store(mine, b.gep(copy, at, source_etype=_context_type()))
        return copy

    def _call_lanes(self, inst, block, mask):
        """A call that was not inlined (or has no vector form), once per active lane."""
        b = self.b
        args = []
        for a in inst.args:
            if a is self.ctx:
                args.append(None)
            elif self._resolve(a) in self.varying or self._liveout_use(a, block):
                args.append(self._value(a, block, True))
            else:
                args.append(self._value(a, block, False))
        wide = [a is not None and self._is_wide(inst.args[n], block) for n, a in enumerate(args)]

        callee = inst.callee
        uses_context = any(a is None and _uses_argument(callee, n) for n, a in enumerate(args))

        def one(lane):
            values = []
            for n, a in enumerate(args):
                if a is None:
                    # The lane's own x ids, where the callee reads the context at all.
                    values.append(self._lane_context(lane) if uses_context else self.vmap[self.ctx])
                elif wide[n]:
                    values.append(self._lane(a, inst.args[n].type, lane))
                else:
                    values.append(a)
            call = b.call(inst.callee, values, cconv=inst.cconv)
            for attr in inst.attributes:
                call.attributes.add(attr)
            call.arg_attributes = dict(inst.arg_attributes)  # byval, sret, ...
            return call

        return self._lane_by_lane(mask, inst.type, one)

    def _is_wide(self, value, block) -> bool:
        return self._resolve(value) in self.varying or self._liveout_use(value, block)

    def _cmpxchg(self, inst, block, mask):
        b = self.b
        pointer, expected, new = (self._value(op, block, True) for op in inst.operands)
        ty = inst.operands[1].type

        def one(lane):
            at = ir.Constant(I32, lane)
            return b.cmpxchg(
                b.extract_element(pointer, at),
                self._lane(expected, ty, lane),
                self._lane(new, ty, lane),
                inst.ordering,
                inst.failordering,
            )

        return self._lane_by_lane(mask, inst.type, one)

    def _atomic_load(self, inst, block, mask):
        b = self.b
        pointer = self._value(inst.operands[0], block, True)

        def one(lane):
            at = b.extract_element(pointer, ir.Constant(I32, lane))
            return b.load_atomic(at, inst.ordering, inst.align, typ=inst.type)

        return self._lane_by_lane(mask, inst.type, one)

    def _atomic_store(self, inst, block, mask):
        b = self.b
        value = self._value(inst.operands[0], block, True)
        pointer = self._value(inst.operands[1], block, True)
        ty = inst.operands[0].type

        def one(lane):
            at = b.extract_element(pointer, ir.Constant(I32, lane))
            store = ir.StoreAtomicInstr(
                b.block, self._lane(value, ty, lane), at, inst.ordering, inst.align
            )
            b._insert(store)

        return self._lane_by_lane(mask, None, one)


def _uses_argument(fn: ir.Function, index: int) -> bool:
    """Whether ``fn`` (a definition) uses its argument ``index`` (a declaration: yes)."""
    if not fn.blocks:
        return True
    arg = fn.args[index]
    for block in fn.blocks:
        for inst in block.instructions:
            ops = [v for v, _ in inst.incomings] if isinstance(inst, ir.PhiInstr) else inst.operands
            if any(op is arg for op in ops):
                return True
    return False


def _undefined(value) -> bool:
    return isinstance(value, ir.Constant) and value.constant is ir.Undefined


def _declined(reason: str) -> Exception:
    from .vectorize import Declined  # vectorize imports this module

    return Declined(reason)


def _mangle(ty) -> str:
    from .vectorize import _mangle

    return _mangle(ty)


def _declare(module: ir.Module, name: str, ret, args) -> ir.Function:
    from .vectorize import _declare

    return _declare(module, name, ret, args)


def _context_type():
    from .abi import _CONTEXT  # abi imports vectorize, which imports this module

    return _CONTEXT
