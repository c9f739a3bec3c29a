"""Python AST -> LLVM IR (llvmlite.ir) shaped like clang's OpenCL C output for SPIR-V.

One ``FunctionLowering`` turns one ``def`` into one LLVM function: kernels become
``spir_kernel`` functions with OpenCL address spaces and ``kernel_arg_*`` metadata,
helpers ``spir_func`` functions (one per argument-type signature). Work-item functions,
barriers and math are calls to the mangled OpenCL built-ins (``_Z13get_global_idj``,
``_Z3sinf``) that LLVM's SPIR-V back end turns into built-in variables, OpControlBarrier
and OpExtInst; atomics are LLVM atomicrmw/cmpxchg; specialization constants are
``__spirv_SpecConstant`` calls, which the back end turns into OpSpecConstant.

Local variables live in allocas that the optimizer promotes to registers; every
variable has one type, fixed by its first assignment (or annotation).
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass, field

from llvmlite import ir

from ... import lang
from ...errors import CompileError
from . import types as T
from .source import Source
from .values import ArrayRef, Lit, Obj, Tuple, Val

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
_WORKITEM = {
    "global_id": "get_global_id",
    "local_id": "get_local_id",
    "group_id": "get_group_id",
    "global_size": "get_global_size",
    "local_size": "get_local_size",
    "num_groups": "get_num_groups",
    "global_offset": "get_global_offset",
}
# Python's math module -> OpenCL C names (math.floor & co. return floats in kernels).
_PY_MATH = {
    "sqrt": "sqrt", "sin": "sin", "cos": "cos", "tan": "tan", "asin": "asin", "acos": "acos",
    "atan": "atan", "atan2": "atan2", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
    "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "exp": "exp", "exp2": "exp2",
    "expm1": "expm1", "log": "log", "log2": "log2", "log10": "log10", "log1p": "log1p",
    "pow": "pow", "fabs": "fabs", "floor": "floor", "ceil": "ceil", "trunc": "trunc",
    "hypot": "hypot", "copysign": "copysign", "fmod": "fmod", "erf": "erf", "erfc": "erfc",
    "gamma": "tgamma", "lgamma": "lgamma", "isnan": "isnan", "isinf": "isinf",
    "isfinite": "isfinite", "ldexp": "ldexp", "cbrt": "cbrt", "fma": "fma",
}  # fmt: skip
_ATOMIC_RMW = {
    "atomic_add": "add", "atomic_sub": "sub", "atomic_xchg": "xchg", "atomic_min": "min",
    "atomic_max": "max", "atomic_and": "and", "atomic_or": "or", "atomic_xor": "xor",
    "atomic_inc": "add", "atomic_dec": "sub",
}  # fmt: skip
_SWIZZLE = {"x": 0, "y": 1, "z": 2, "w": 3}


# What a call to a function that returns nothing evaluates to: usable only as a statement.
NO_VALUE = Obj(None)


class NeedsConstantValue(Exception):
    """A Constant parameter was used where the compiler needs its value (an array
    shape): the kernel is compiled once per value instead of with spec constants."""


@dataclass
class Var:
    """A local variable: its type and the alloca holding it."""

    type: T.KernelType
    slot: ir.Value


@dataclass
class Unit:
    """One LLVM module being built: kernels, helper instances, declarations."""

    module: ir.Module
    helpers: dict = field(default_factory=dict)  # (pyfunc, arg key) -> (ir.Function, ret type)
    in_progress: set = field(default_factory=set)
    spec_ids: dict = field(default_factory=dict)  # (kernel, param) -> SpecId
    next_spec_id: int = 0
    counter: int = 0

    def unique(self, base: str) -> str:
        self.counter += 1
        return f"{base}.{self.counter}"

    def declare(self, name: str, ret: ir.Type, args: list[ir.Type], convergent=False):
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, args), name)
            fn.calling_convention = "spir_func"
            fn.attributes.add("nounwind")
            if convergent:
                fn.attributes.add("convergent")
        return fn


def mangle(name: str, types: list[T.KernelType]) -> str:
    """The Itanium mangling clang gives OpenCL C's overloaded built-in ``name``."""
    out = f"_Z{len(name)}{name}"
    subs: list[str] = []
    for t in types:
        code = t.code
        if isinstance(t, T.Vector):
            if code in subs:
                i = subs.index(code)
                out += "S_" if i == 0 else f"S{i - 1}_"
                continue
            subs.append(code)
        out += code
    return out


def lit_type(value) -> T.Scalar:
    """The type a literal takes when nothing else decides: bool, int32 (int64 when it does
    not fit), float32."""
    if isinstance(value, bool):
        return T.BOOL
    if isinstance(value, int):
        return T.INT32 if -(2**31) <= value < 2**31 else T.INT64
    return T.FLOAT32


def elem_of(t: T.KernelType) -> T.Scalar:
    return t.elem if isinstance(t, T.Vector) else t


class FunctionLowering(ast.NodeVisitor):
    """Lowers one kernel or helper ``def`` into ``fn``."""

    def __init__(self, unit: Unit, src: Source, fn: ir.Function, ret_type, kernel_name: str):
        self.unit = unit
        self.src = src
        self.fn = fn
        self.ret_type = ret_type  # None: void; "infer": a helper whose type is being found
        self.returned: list[T.KernelType] = []
        self.kernel_name = kernel_name
        self.spec_constants = False  # set when Constant parameters are spec constants
        self.vars: dict[str, object] = {}
        entry = fn.append_basic_block("entry")
        self.alloca_b = ir.IRBuilder(entry)
        body = fn.append_basic_block("body")
        self.b = ir.IRBuilder(body)
        self.exit = fn.append_basic_block("exit")
        self.ret_slot = None
        self.loops: list[tuple[ir.Block, ir.Block]] = []  # (continue target, break target)

    # --- errors and small helpers -----------------------------------------------------
    def err(self, node, message: str) -> CompileError:
        return self.src.error(node, message)

    def alloca(self, ty: ir.Type, name: str = "") -> ir.Value:
        slot = self.alloca_b.alloca(ty, name=name)
        slot.type = ir.PointerType()  # opaque pointers: LLVM 22 has no others
        return slot

    def const(self, t: T.KernelType, value) -> ir.Constant:
        if isinstance(t, T.Vector):
            return ir.Constant(t.llvm, [self.const(t.elem, value).constant] * t.lanes)
        if t.kind == "bool":
            return ir.Constant(I1, int(bool(value)))
        if t.is_int:
            if isinstance(value, float):
                value = int(value)
            return ir.Constant(t.llvm, value & ((1 << t.bits) - 1))
        return ir.Constant(t.llvm, float(value))

    def finish(self) -> None:
        """Closes the function: entry jumps to the body, the body falls into the exit."""
        if not self.b.block.is_terminated:
            self.b.branch(self.exit)
        self.alloca_b.branch(self.fn.blocks[1])
        self.b.position_at_end(self.exit)
        if self.ret_slot is None:
            self.b.ret_void()
        else:
            self.b.ret(self.b.load(self.ret_slot, typ=self.ret_type.llvm))

    def live_block(self) -> None:
        """After return/break/continue, code that follows is unreachable: give it a block."""
        if self.b.block.is_terminated:
            self.b.position_at_end(self.fn.append_basic_block("dead"))

    # --- statements -------------------------------------------------------------------
    def lower_body(self, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self.live_block()
            self.stmt(stmt)

    def stmt(self, node: ast.stmt) -> None:
        method = getattr(self, "s_" + type(node).__name__, None)
        if method is None:
            raise self.err(node, f"'{type(node).__name__}' statements are not supported in kernels")
        method(node)

    def s_Pass(self, node):
        pass

    def s_Expr(self, node: ast.Expr):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # a docstring
        self.expr(node.value)

    def s_Assign(self, node: ast.Assign):
        if len(node.targets) != 1:
            raise self.err(node, "chained assignment (a = b = c) is not supported")
        target = node.targets[0]
        if isinstance(target, ast.Tuple):
            if not isinstance(node.value, ast.Tuple) or len(node.value.elts) != len(target.elts):
                raise self.err(node, "tuple assignment needs a tuple of the same length")
            values = [self.expr(v) for v in node.value.elts]  # all read before any write
            for t, v in zip(target.elts, values, strict=True):
                self.assign(t, v, node)
            return
        self.assign(target, self.expr(node.value), node)

    def s_AnnAssign(self, node: ast.AnnAssign):
        if not isinstance(node.target, ast.Name):
            raise self.err(node, "annotations are allowed on plain names only")
        ty = self.compile_time(node.annotation)
        if not isinstance(ty, (T.Scalar, T.Vector)):
            raise self.err(node.annotation, f"{ty!r} is not a scalar or vector type")
        name = node.target.id
        if name in self.vars:
            raise self.err(node, f"'{name}' is already defined")
        self.vars[name] = Var(ty, self.alloca(ty.llvm, name))
        if node.value is not None:
            self.assign(node.target, self.expr(node.value), node)

    def s_AugAssign(self, node: ast.AugAssign):
        target = node.target
        if isinstance(target, ast.Name):
            self.assign(
                target,
                self.binop(node.op, self.load_name(target), self.expr(node.value), node),
                node,
            )
        elif isinstance(target, ast.Subscript):
            base = self.writable(self.expr(target.value), target)
            ptr, ty = self.address(target, base)
            old = Val(ty, self.load(ptr, ty))
            self.store(ptr, ty, self.binop(node.op, old, self.expr(node.value), node), node)
        elif isinstance(target, ast.Attribute):
            current = self.expr(target)
            self.assign(target, self.binop(node.op, current, self.expr(node.value), node), node)
        else:
            raise self.err(node, "unsupported augmented assignment target")

    def assign(self, target: ast.expr, value, node) -> None:
        if isinstance(target, ast.Name):
            name = target.id
            found = self.vars.get(name)
            if isinstance(value, ArrayRef):
                if found is not None:
                    raise self.err(
                        target, f"'{name}' already names a value; arrays cannot be rebound"
                    )
                self.vars[name] = value
                return
            if isinstance(found, ArrayRef):
                raise self.err(target, f"'{name}' names an array; it cannot be reassigned")
            if value is NO_VALUE:
                raise self.err(node, "this call returns nothing")
            if isinstance(value, (Obj, Tuple)):
                raise self.err(
                    node, "only numbers, vectors and pointers can be assigned to variables"
                )
            if found is None:
                ty = value.type if isinstance(value, Val) else lit_type(value.value)
                found = self.vars[name] = Var(ty, self.alloca(ty.llvm, name))
            v = self.coerce(value, found.type, node)
            self.b.store(v.ir, found.slot)
        elif isinstance(target, ast.Subscript):
            base = self.expr(target.value)
            if isinstance(base, Val) and isinstance(base.type, T.Vector):
                self.assign_lanes(
                    target.value, self.lane_indices_subscript(target, base.type), value, node
                )
                return
            ptr, ty = self.address(target, self.writable(base, target))
            self.store(ptr, ty, value, node)
        elif isinstance(target, ast.Attribute):
            base = self.expr(target.value)
            if not (isinstance(base, Val) and isinstance(base.type, T.Vector)):
                raise self.err(
                    target, "only vector lanes (v.x, v.s01) can be assigned as attributes"
                )
            self.assign_lanes(target.value, self.swizzle_lanes(target, base.type), value, node)
        else:
            raise self.err(target, f"cannot assign to {type(target).__name__}")

    def writable(self, base, node):
        pointer = isinstance(base, Val) and isinstance(base.type, T.Pointer)
        if pointer and base.type.space == T.CONSTANT:
            raise self.err(node, "ConstantMem (__constant) memory is read-only")
        return base

    def assign_lanes(self, var_node, lanes: list[int], value, node) -> None:
        if not isinstance(var_node, ast.Name) or not isinstance(self.vars.get(var_node.id), Var):
            raise self.err(node, "lanes can be assigned only in a vector held in a variable")
        var = self.vars[var_node.id]
        vec = self.b.load(var.slot, typ=var.type.llvm)
        if len(lanes) == 1:
            v = self.coerce(value, var.type.elem, node)
            vec = self.b.insert_element(vec, v.ir, ir.Constant(I32, lanes[0]))
        else:
            v = self.coerce(value, T.Vector(var.type.elem, len(lanes)), node)
            for i, lane in enumerate(lanes):
                x = self.b.extract_element(v.ir, ir.Constant(I32, i))
                vec = self.b.insert_element(vec, x, ir.Constant(I32, lane))
        self.b.store(vec, var.slot)

    def s_If(self, node: ast.If):
        cond = self.truth(self.expr(node.test), node.test)
        then = self.fn.append_basic_block("then")
        after = self.fn.append_basic_block("endif")
        other = self.fn.append_basic_block("else") if node.orelse else after
        self.b.cbranch(cond, then, other)
        self.b.position_at_end(then)
        self.lower_body(node.body)
        if not self.b.block.is_terminated:
            self.b.branch(after)
        if node.orelse:
            self.b.position_at_end(other)
            self.lower_body(node.orelse)
            if not self.b.block.is_terminated:
                self.b.branch(after)
        self.b.position_at_end(after)

    def s_While(self, node: ast.While):
        if node.orelse:
            raise self.err(node, "while ... else is not supported")
        head = self.fn.append_basic_block("while.cond")
        body = self.fn.append_basic_block("while.body")
        done = self.fn.append_basic_block("while.end")
        self.b.branch(head)
        self.b.position_at_end(head)
        self.b.cbranch(self.truth(self.expr(node.test), node.test), body, done)
        self.b.position_at_end(body)
        self.loops.append((head, done))
        self.lower_body(node.body)
        self.loops.pop()
        if not self.b.block.is_terminated:
            self.b.branch(head)
        self.b.position_at_end(done)

    def s_For(self, node: ast.For):
        if node.orelse:
            raise self.err(node, "for ... else is not supported")
        it = node.iter
        if not (
            isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
        ):
            raise self.err(it, "kernels loop only over range(...)")
        if it.keywords or not 1 <= len(it.args) <= 3:
            raise self.err(it, "range takes 1 to 3 positional arguments")
        if not isinstance(node.target, ast.Name):
            raise self.err(node.target, "the loop variable must be a plain name")
        args = [self.expr(a) for a in it.args]
        if len(args) == 1:
            args = [Lit(0), args[0]]
        if len(args) == 2:
            args.append(Lit(1))
        start, stop, step = args
        for a in args:
            if isinstance(a, Val) and not (isinstance(a.type, T.Scalar) and a.type.is_int):
                raise self.err(it, f"range needs integers, got {a.type!r}")
            integer = isinstance(a, Lit) and isinstance(a.value, int)
            if not integer and not isinstance(a, Val):
                raise self.err(it, "range needs integers")
        name = node.target.id
        var = self.vars.get(name)
        if isinstance(var, Var):
            ty = var.type
        else:
            ty = self.unify([start, stop, step], it)
            var = self.vars[name] = Var(ty, self.alloca(ty.llvm, name))
        if isinstance(step, Lit) and step.value == 0:
            raise self.err(it, "range() step must not be zero")
        start_v = self.coerce(start, ty, it).ir
        stop_v = self.coerce(stop, ty, it).ir
        step_v = self.coerce(step, ty, it).ir
        counter = self.alloca(ty.llvm, name + ".iter")
        self.b.store(start_v, counter)
        head = self.fn.append_basic_block("for.cond")
        body = self.fn.append_basic_block("for.body")
        latch = self.fn.append_basic_block("for.inc")
        done = self.fn.append_basic_block("for.end")
        self.b.branch(head)
        self.b.position_at_end(head)
        i = self.b.load(counter, typ=ty.llvm)
        if isinstance(step, Lit):
            cond = self.icmp(ty, "<" if step.value > 0 else ">", i, stop_v)
        else:  # the direction is known only at run time
            up = self.icmp(ty, ">", step_v, ir.Constant(ty.llvm, 0))
            cond = self.b.select(up, self.icmp(ty, "<", i, stop_v), self.icmp(ty, ">", i, stop_v))
        self.b.cbranch(cond, body, done)
        self.b.position_at_end(body)
        # The user's variable is a copy of the hidden counter, as in Python: assigning
        # to it inside the body does not change the iteration.
        self.b.store(self.b.load(counter, typ=ty.llvm), var.slot)
        self.loops.append((latch, done))
        self.lower_body(node.body)
        self.loops.pop()
        if not self.b.block.is_terminated:
            self.b.branch(latch)
        self.b.position_at_end(latch)
        self.b.store(self.b.add(self.b.load(counter, typ=ty.llvm), step_v), counter)
        self.b.branch(head)
        self.b.position_at_end(done)

    def icmp(self, ty: T.Scalar, op: str, a, b):
        if ty.signed:
            return self.b.icmp_signed(op, a, b)
        return self.b.icmp_unsigned(op, a, b)

    def s_Break(self, node):
        if not self.loops:
            raise self.err(node, "'break' outside a loop")
        self.b.branch(self.loops[-1][1])

    def s_Continue(self, node):
        if not self.loops:
            raise self.err(node, "'continue' outside a loop")
        self.b.branch(self.loops[-1][0])

    def s_Return(self, node: ast.Return):
        if node.value is None:
            if self.ret_type not in (None, "infer"):
                raise self.err(node, f"this function returns {self.ret_type!r}; return a value")
            self.b.branch(self.exit)
            return
        if self.kernel_name:
            raise self.err(node, "kernels cannot return values; write results to memory")
        value = self.expr(node.value)
        if self.ret_type == "infer":
            if isinstance(value, Val) and isinstance(value.type, (T.Scalar, T.Vector)):
                self.returned.append(value.type)
            elif isinstance(value, Lit):
                self.returned.append(lit_type(value.value))
            else:
                raise self.err(node.value, "helpers return numbers or vectors only")
            self.b.branch(self.exit)
            return
        if self.ret_type is None:
            raise self.err(node, "this function returns nothing (no value is returned elsewhere)")
        if self.ret_slot is None:
            self.ret_slot = self.alloca(self.ret_type.llvm, "retval")
        self.b.store(self.coerce(value, self.ret_type, node).ir, self.ret_slot)
        self.b.branch(self.exit)

    # --- expressions ------------------------------------------------------------------
    def expr(self, node: ast.expr):
        method = getattr(self, "e_" + type(node).__name__, None)
        if method is None:
            raise self.err(
                node, f"'{type(node).__name__}' expressions are not supported in kernels"
            )
        return method(node)

    def compile_time(self, node: ast.expr):
        """Evaluates an annotation or type argument: it must name a Python object."""
        value = self.expr(node)
        if isinstance(value, Obj):
            return value.value
        if isinstance(value, Lit):
            return value.value
        raise self.err(node, "expected a compile-time value here (a type or a constant)")

    def e_Constant(self, node: ast.Constant):
        if isinstance(node.value, (bool, int, float)):
            return Lit(node.value)
        raise self.err(node, f"{type(node.value).__name__} constants are not supported in kernels")

    def e_Tuple(self, node: ast.Tuple):
        return Tuple([self.expr(e) for e in node.elts])

    def e_Name(self, node: ast.Name):
        return self.load_name(node)

    def load_name(self, node: ast.Name):
        found = self.vars.get(node.id)
        if isinstance(found, Var):
            return Val(found.type, self.b.load(found.slot, typ=found.type.llvm))
        if found is not None:
            return found
        try:
            obj = self.src.lookup(node.id)
        except (KeyError, AttributeError):
            raise self.err(node, f"name '{node.id}' is not defined") from None
        return self.python_value(obj, node)

    def python_value(self, obj, node):
        """A Python object seen from a kernel: numbers become literals, NumPy scalars
        typed constants, anything else stays a compile-time object."""
        if isinstance(obj, (bool, int, float)):
            return Lit(obj)
        dtype = getattr(obj, "dtype", None)
        if dtype is not None and getattr(obj, "shape", None) == ():
            ty = T.from_dtype(dtype)
            return Val(ty, self.const(ty, obj.item()))
        return Obj(obj)

    def e_Attribute(self, node: ast.Attribute):
        base = self.expr(node.value)
        if isinstance(base, Obj):
            try:
                return self.python_value(getattr(base.value, node.attr), node)
            except AttributeError:
                raise self.err(node, f"{base.value!r} has no attribute '{node.attr}'") from None
        if isinstance(base, Val) and isinstance(base.type, T.Vector):
            return self.shuffle(base, self.swizzle_lanes(node, base.type), node)
        raise self.err(node, f"'.{node.attr}' is not supported on this value")

    def swizzle_lanes(self, node: ast.Attribute, vt: T.Vector) -> list[int]:
        name, n = node.attr, vt.lanes
        if name in ("lo", "hi", "even", "odd"):
            half = (n + 1) // 2
            lanes = {
                "lo": list(range(half)),
                "hi": list(range(half, half * 2)),
                "even": list(range(0, half * 2, 2)),
                "odd": list(range(1, half * 2, 2)),
            }[name]
        elif (
            name[0] == "s"
            and len(name) > 1
            and all(c in "0123456789abcdefABCDEF" for c in name[1:])
        ):
            lanes = [int(c, 16) for c in name[1:]]
        elif all(c in _SWIZZLE for c in name):
            lanes = [_SWIZZLE[c] for c in name]
        else:
            raise self.err(
                node, f"'{name}' is not a lane selector of {vt!r} (x y z w, s0..sf, lo hi even odd)"
            )
        if any(lane >= n for lane in lanes) and name not in ("hi", "odd"):
            raise self.err(node, f"{vt!r} has no lane {max(lanes)} ('{name}')")
        if len(lanes) not in (1, *T.VECTOR_LANES):
            raise self.err(
                node, f"'{name}' selects {len(lanes)} lanes; vectors have 2, 3, 4, 8 or 16"
            )
        return lanes

    def shuffle(self, v: Val, lanes: list[int], node):
        if len(lanes) == 1:
            return Val(v.type.elem, self.b.extract_element(v.ir, ir.Constant(I32, lanes[0])))
        # hi/odd of a 3-vector read lane 3, which does not exist: undefined, as in OpenCL.
        mask = ir.Constant(
            ir.VectorType(I32, len(lanes)), [min(x, v.type.lanes - 1) for x in lanes]
        )
        return Val(
            T.Vector(v.type.elem, len(lanes)),
            self.b.shuffle_vector(v.ir, ir.Constant(v.type.llvm, ir.Undefined), mask),
        )

    def lane_indices_subscript(self, node: ast.Subscript, vt: T.Vector) -> list[int]:
        index = self.expr(node.slice)
        if (
            not isinstance(index, Lit)
            or not isinstance(index.value, int)
            or not 0 <= index.value < vt.lanes
        ):
            raise self.err(
                node.slice,
                f"assigning a lane of {vt!r} needs a constant lane number 0..{vt.lanes - 1}",
            )
        return [index.value]

    # memory
    def e_Subscript(self, node: ast.Subscript):
        base = self.expr(node.value)
        if isinstance(base, Val) and isinstance(base.type, T.Vector):
            index = self.expr(node.slice)
            if isinstance(index, Lit):
                if not 0 <= index.value < base.type.lanes:
                    raise self.err(node.slice, f"{base.type!r} has no lane {index.value}")
                return Val(
                    base.type.elem, self.b.extract_element(base.ir, ir.Constant(I32, index.value))
                )
            idx = self.coerce(index, T.UINT32, node.slice)
            return Val(base.type.elem, self.b.extract_element(base.ir, idx.ir))
        if isinstance(base, Obj):
            raise self.err(node, f"cannot subscript {base.value!r} in a kernel")
        result = self.address(node, base)
        if isinstance(result, ArrayRef):
            return result
        ptr, ty = result
        return Val(ty, self.load(ptr, ty))

    def address(self, node: ast.Subscript, base=None):
        """(address, element type) of ``base[index]``, or an ArrayRef for a partly
        indexed multi-dimensional array."""
        if base is None:
            base = self.expr(node.value)
        index_nodes = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if any(isinstance(i, ast.Slice) for i in index_nodes):
            raise self.err(node.slice, "slices are not supported; index one element at a time")
        indices = [self.index(self.expr(i), i) for i in index_nodes]
        if isinstance(base, Val) and isinstance(base.type, T.Pointer):
            if len(indices) != 1:
                raise self.err(node.slice, "a pointer takes one index")
            ptr = self.b.gep(base.ir, [indices[0]], source_etype=base.type.elem.llvm)
            return ptr, base.type.elem
        if isinstance(base, ArrayRef):
            shape = base.type.shape
            if len(indices) > len(shape):
                raise self.err(
                    node.slice,
                    f"{base.type!r} has {len(shape)} dimensions, got {len(indices)} indices",
                )
            flat = None
            for k, idx in enumerate(indices):
                stride = math.prod(shape[k + 1 :])
                term = idx if stride == 1 else self.b.mul(idx, ir.Constant(I64, stride))
                flat = term if flat is None else self.b.add(flat, term)
            elem = base.type.elem
            ptr = self.b.gep(base.ptr, [flat], source_etype=elem.llvm)
            if len(indices) < len(shape):
                return ArrayRef(T.Array(elem, shape[len(indices) :], base.type.space), ptr)
            return ptr, elem
        raise self.err(node.value, "only pointers, arrays and vectors can be subscripted")

    def index(self, value, node) -> ir.Value:
        """An index as the i64 a GEP takes (sign- or zero-extended by its type)."""
        if (
            isinstance(value, Lit)
            and isinstance(value.value, int)
            and not isinstance(value.value, bool)
        ):
            if value.value < 0:  # Python would count from the end; a pointer cannot
                raise self.err(node, f"negative index {value.value}: no wrap-around in kernels")
            return ir.Constant(I64, value.value)
        if isinstance(value, Val) and isinstance(value.type, T.Scalar) and value.type.is_int:
            return self.convert(value, T.INT64 if value.type.signed else T.UINT64, node).ir
        raise self.err(node, "indices must be integers")

    def load(self, ptr, ty: T.KernelType):
        return self.b.load(ptr, typ=ty.llvm, align=elem_of(ty).size)

    def store(self, ptr, ty: T.KernelType, value, node) -> None:
        self.b.store(self.coerce(value, ty, node).ir, ptr, align=elem_of(ty).size)

    # operators
    def e_BinOp(self, node: ast.BinOp):
        return self.binop(node.op, self.expr(node.left), self.expr(node.right), node)

    def binop(self, op: ast.operator, a, b, node):
        for v in (a, b):
            if isinstance(v, (Obj, Tuple, ArrayRef)):
                raise self.err(
                    node, f"operator {type(op).__name__} needs numbers, vectors or pointers"
                )
        if isinstance(a, Lit) and isinstance(b, Lit):
            return self.fold(op, a.value, b.value, node)
        if isinstance(a, Val) and isinstance(a.type, T.Pointer):
            if isinstance(op, (ast.Add, ast.Sub)):
                idx = self.index(b, node)
                if isinstance(op, ast.Sub):
                    idx = self.b.neg(idx)
                return Val(a.type, self.b.gep(a.ir, [idx], source_etype=a.type.elem.llvm))
            raise self.err(node, "pointers support only + and - with an integer")
        if isinstance(op, (ast.LShift, ast.RShift)):
            return self.shift(op, a, b, node)
        if isinstance(op, ast.Pow):
            return self.power(a, b, node)
        ty = self.unify([a, b], node)
        x, y = self.coerce(a, ty, node).ir, self.coerce(b, ty, node).ir
        el = elem_of(ty)
        name = type(op).__name__
        if el.kind == "bool":
            ops = {"BitAnd": self.b.and_, "BitOr": self.b.or_, "BitXor": self.b.xor}
            if name not in ops:
                raise self.err(
                    node, f"operator {name} is not defined on bool; convert with int32(...)"
                )
            return Val(ty, ops[name](x, y))
        if el.is_float:
            if name == "Div":
                return Val(ty, self.b.fdiv(x, y))
            if name == "FloorDiv":
                q = Val(ty, self.b.fdiv(x, y))
                return self.call_builtin("floor", [q], ty)
            ops = {"Add": self.b.fadd, "Sub": self.b.fsub, "Mult": self.b.fmul, "Mod": self.b.frem}
            if name not in ops:
                raise self.err(node, f"operator {name} is not defined on {ty!r}")
            return Val(ty, ops[name](x, y))
        if name == "Div":
            raise self.err(
                node,
                "'/' on integers is true division; write '//' (rounds toward zero, as in C) "
                "or convert to a float type first",
            )
        signed = el.signed
        ops = {
            "Add": self.b.add,
            "Sub": self.b.sub,
            "Mult": self.b.mul,
            "FloorDiv": self.b.sdiv if signed else self.b.udiv,
            "Mod": self.b.srem if signed else self.b.urem,
            "BitAnd": self.b.and_,
            "BitOr": self.b.or_,
            "BitXor": self.b.xor,
        }
        if name not in ops:
            raise self.err(node, f"operator {name} is not defined on {ty!r}")
        return Val(ty, ops[name](x, y))

    def fold(self, op, a, b, node):
        """Both operands are literals: compute now (integer // and % round toward zero, as
        they do at run time)."""
        name = type(op).__name__
        try:
            if name == "FloorDiv" and isinstance(a, int) and isinstance(b, int):
                q = abs(a) // abs(b)
                return Lit(q if (a < 0) == (b < 0) else -q)
            if name == "Mod" and isinstance(a, int) and isinstance(b, int):
                return Lit(int(math.fmod(a, b)))
            if name == "Div" and isinstance(a, int) and isinstance(b, int):
                raise self.err(node, "'/' on integers is true division; write '//'")
            ops = {
                "Add": operator.add, "Sub": operator.sub, "Mult": operator.mul,
                "Div": operator.truediv, "FloorDiv": operator.floordiv, "Mod": math.fmod,
                "Pow": operator.pow, "LShift": operator.lshift, "RShift": operator.rshift,
                "BitAnd": operator.and_, "BitOr": operator.or_, "BitXor": operator.xor,
            }  # fmt: skip
            return Lit(ops[name](a, b))
        except (ZeroDivisionError, ValueError, OverflowError, KeyError, TypeError) as exc:
            raise self.err(node, f"cannot evaluate constant expression: {exc}") from None

    def shift(self, op, a, b, node):
        # The result has the left operand's type (a literal's: the count's); the count
        # is taken modulo the width, as OpenCL C defines (LLVM would make it poison).
        ty = a.type if isinstance(a, Val) else b.type
        if not elem_of(ty).is_int:
            raise self.err(node, f"shifts need integers, got {ty!r}")
        if isinstance(b, Lit):
            if not isinstance(b.value, int) or isinstance(b.value, bool):
                raise self.err(node, f"a shift count must be an integer, got {b.value!r}")
            y = self.const(ty, b.value)
        else:
            if not elem_of(b.type).is_int:
                raise self.err(node, f"a shift count must be an integer, got {b.type!r}")
            if isinstance(b.type, T.Vector) and b.type.lanes != getattr(ty, "lanes", 0):
                raise self.err(node, f"cannot shift {ty!r} by {b.type!r}")
            y = self.convert(b, ty, node).ir
        x = self.coerce(a, ty, node).ir
        y = self.b.and_(y, self.const(ty, elem_of(ty).bits - 1))
        if isinstance(op, ast.LShift):
            return Val(ty, self.b.shl(x, y))
        return Val(ty, self.b.ashr(x, y) if elem_of(ty).signed else self.b.lshr(x, y))

    def power(self, a, b, node):
        ty = self.unify([a, b], node)
        if elem_of(ty).is_float:
            return self.call_builtin(
                "pow", [self.coerce(a, ty, node), self.coerce(b, ty, node)], ty
            )
        if isinstance(b, Lit) and isinstance(b.value, int) and 0 <= b.value <= 64:
            x = self.coerce(a, ty, node)
            result = Val(ty, self.const(ty, 1))
            for _ in range(b.value):
                result = Val(ty, self.b.mul(result.ir, x.ir))
            return result
        raise self.err(node, "integer ** needs a constant exponent 0..64")

    def e_UnaryOp(self, node: ast.UnaryOp):
        v = self.expr(node.operand)
        name = type(node.op).__name__
        if isinstance(v, Lit):
            ops = {
                "USub": operator.neg,
                "UAdd": operator.pos,
                "Not": operator.not_,
                "Invert": operator.invert,
            }
            try:
                return Lit(ops[name](v.value))
            except TypeError:  # ~1.5
                raise self.err(node, f"operator {name} is not defined on {v.value!r}") from None
        if name == "Not":
            return Val(T.BOOL, self.b.not_(self.truth(v, node)))
        if not isinstance(v, Val) or isinstance(v.type, (T.Pointer,)):
            raise self.err(node, f"operator {name} needs a number or vector")
        el = elem_of(v.type)
        if name == "UAdd":
            return v
        if name == "USub":
            if el.kind == "bool":
                raise self.err(node, "cannot negate a bool")
            return Val(v.type, self.b.fneg(v.ir) if el.is_float else self.b.neg(v.ir))
        if not el.is_int:
            raise self.err(node, f"~ needs integers, got {v.type!r}")
        return Val(v.type, self.b.not_(v.ir))

    def e_BoolOp(self, node: ast.BoolOp):
        # Short-circuit: later operands run only when needed, as in Python (the result
        # is a bool, not one of the operands).
        is_and = isinstance(node.op, ast.And)
        done = self.fn.append_basic_block("bool.end")
        incoming = []
        for value_node in node.values[:-1]:
            cond = self.truth(self.expr(value_node), value_node)
            nxt = self.fn.append_basic_block("bool.next")
            incoming.append((ir.Constant(I1, 0 if is_and else 1), self.b.block))
            if is_and:
                self.b.cbranch(cond, nxt, done)
            else:
                self.b.cbranch(cond, done, nxt)
            self.b.position_at_end(nxt)
        last = self.truth(self.expr(node.values[-1]), node.values[-1])
        incoming.append((last, self.b.block))
        self.b.branch(done)
        self.b.position_at_end(done)
        phi = self.b.phi(I1)
        for v, blk in incoming:
            phi.add_incoming(v, blk)
        return Val(T.BOOL, phi)

    def e_IfExp(self, node: ast.IfExp):
        cond = self.truth(self.expr(node.test), node.test)
        then = self.fn.append_basic_block("ifexp.then")
        other = self.fn.append_basic_block("ifexp.else")
        done = self.fn.append_basic_block("ifexp.end")
        self.b.cbranch(cond, then, other)
        self.b.position_at_end(then)
        a = self.expr(node.body)
        a_end = self.b.block
        self.b.position_at_end(other)
        c = self.expr(node.orelse)
        c_end = self.b.block
        ty = self.unify([a, c], node)
        self.b.position_at_end(a_end)
        av = self.coerce(a, ty, node).ir
        self.b.branch(done)
        self.b.position_at_end(c_end)
        cv = self.coerce(c, ty, node).ir
        a_end, c_end = a_end, self.b.block
        self.b.branch(done)
        self.b.position_at_end(done)
        phi = self.b.phi(ty.llvm)
        phi.add_incoming(av, a_end)
        phi.add_incoming(cv, c_end)
        return Val(ty, phi)

    def e_Compare(self, node: ast.Compare):
        left = self.expr(node.left)
        result = None
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = self.expr(right_node)
            c = self.compare(op, left, right, node)
            result = c if result is None else Val(T.BOOL, self.b.and_(result.ir, c.ir))
            left = right
        return result

    def compare(self, op, a, b, node):
        sym = {
            ast.Lt: "<",
            ast.LtE: "<=",
            ast.Gt: ">",
            ast.GtE: ">=",
            ast.Eq: "==",
            ast.NotEq: "!=",
        }
        s = sym.get(type(op))
        if s is None:
            raise self.err(node, f"comparison {type(op).__name__} is not supported in kernels")
        if isinstance(a, Lit) and isinstance(b, Lit):
            compare = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
            compare.update({"==": operator.eq, "!=": operator.ne})
            return Lit(compare[s](a.value, b.value))
        ty = self.unify([a, b], node)
        x, y = self.coerce(a, ty, node).ir, self.coerce(b, ty, node).ir
        el = elem_of(ty)
        rt = T.Vector(T.BOOL, ty.lanes) if isinstance(ty, T.Vector) else T.BOOL
        if el.is_float:
            # Ordered comparisons, except != (true for NaN), as in Python and C.
            return Val(
                rt, self.b.fcmp_unordered(s, x, y) if s == "!=" else self.b.fcmp_ordered(s, x, y)
            )
        if el.signed:
            return Val(rt, self.b.icmp_signed(s, x, y))
        return Val(rt, self.b.icmp_unsigned(s, x, y))

    def truth(self, v, node) -> ir.Value:
        """Python truthiness of a scalar as an i1 (a NaN is true, as in Python)."""
        if isinstance(v, Lit):
            return ir.Constant(I1, int(bool(v.value)))
        if not isinstance(v, Val) or not isinstance(v.type, T.Scalar):
            raise self.err(
                node, "a condition must be a bool or a number (use any()/all() for vectors)"
            )
        if v.type.kind == "bool":
            return v.ir
        if v.type.is_float:
            return self.b.fcmp_unordered("!=", v.ir, self.const(v.type, 0.0))
        return self.b.icmp_unsigned("!=", v.ir, self.const(v.type, 0))

    # --- types: unification and conversion --------------------------------------------
    def unify(self, values: list, node) -> T.KernelType:
        """The type a binary operation on ``values`` computes in (see the docs: the
        typed operand's type for a literal, C's usual conversions otherwise)."""
        typed = [v.type for v in values if isinstance(v, Val)]
        lits = [v.value for v in values if isinstance(v, Lit)]
        for v in values:
            if not isinstance(v, (Val, Lit)):
                raise self.err(node, "expected a number or a vector here")
        for t in typed:
            if isinstance(t, (T.Pointer, T.Array)):
                raise self.err(node, f"cannot compute with {t!r} here")
        if not typed:
            kinds = [lit_type(x) for x in lits]
            out = kinds[0]
            for k in kinds[1:]:
                out = T.common_scalar(out, k) if out.kind != "bool" and k.kind != "bool" else out
            return out
        vectors = [t for t in typed if isinstance(t, T.Vector)]
        if vectors:
            vt = vectors[0]
            for t in vectors[1:]:
                if t != vt:
                    raise self.err(node, f"vector types differ: {vt!r} and {t!r}")
            for t in typed:
                if isinstance(t, T.Scalar) and T.common_scalar(t, vt.elem) != vt.elem:
                    raise self.err(node, f"{t!r} does not convert implicitly to lanes of {vt!r}")
            if any(isinstance(x, float) for x in lits) and not vt.elem.is_float:
                raise self.err(node, f"a float constant with an integer vector {vt!r}")
            return vt
        out = typed[0]
        for t in typed[1:]:
            if (out.kind == "bool") != (t.kind == "bool"):
                raise self.err(
                    node,
                    f"cannot mix bool and {t if out.kind == 'bool' else out!r}; convert explicitly",
                )
            out = T.common_scalar(out, t)
        if any(isinstance(x, float) and not isinstance(x, bool) for x in lits) and not out.is_float:
            out = T.FLOAT32
        return out

    def coerce(self, v, ty: T.KernelType, node) -> Val:
        """``v`` as a ``ty``, implicitly: literals adapt, typed values convert only to a
        type that C's usual arithmetic conversions would pick (no silent narrowing)."""
        if v is NO_VALUE:
            raise self.err(node, "this call returns nothing")
        if isinstance(v, Lit):
            el = elem_of(ty)
            if isinstance(ty, (T.Pointer, T.Array)):
                raise self.err(node, f"expected {ty!r}, got the number {v.value!r}")
            if el.is_int and isinstance(v.value, float):
                raise self.err(
                    node, f"the float {v.value!r} would be truncated to {ty!r}; convert explicitly"
                )
            if el.kind == "bool" and not isinstance(v.value, bool):
                raise self.err(node, f"expected a bool, got {v.value!r}")
            # Either signedness's range: 0xFFFFFFFF is an int32 -1, -1 a uint32 max.
            if el.is_int and not -(1 << (el.bits - 1)) <= v.value < (1 << el.bits):
                raise self.err(node, f"{v.value} does not fit in {el!r}")
            return Val(ty, self.const(ty, v.value))
        if not isinstance(v, Val):
            raise self.err(node, f"expected {ty!r} here")
        if v.type == ty:
            return v
        src, dst = v.type, ty
        if isinstance(src, T.Pointer) or isinstance(dst, T.Pointer):
            raise self.err(node, f"expected {dst!r}, got {src!r}")
        if isinstance(src, T.Vector) and (not isinstance(dst, T.Vector) or src.lanes != dst.lanes):
            raise self.err(node, f"expected {dst!r}, got {src!r}")
        se, de = elem_of(src), elem_of(dst)
        if se.kind == "bool" or de.kind == "bool" or T.common_scalar(se, de) != de:
            raise self.err(
                node,
                f"{src!r} does not convert implicitly to {dst!r}; write {de.name}(...) to convert",
            )
        return self.convert(v, dst, node)

    def convert(self, v, ty: T.KernelType, node) -> Val:
        """An explicit conversion (C cast semantics) of a scalar or vector; a scalar into
        a vector type is converted then copied to every lane."""
        if isinstance(v, Lit):
            el = elem_of(ty)
            value = v.value
            if el.is_int and isinstance(value, float):
                if not math.isfinite(value):
                    raise self.err(node, f"cannot convert {value} to {el!r}")
                value = int(value)
            return Val(ty, self.const(ty, value))
        if not isinstance(v, Val) or isinstance(v.type, (T.Pointer, T.Array)):
            raise self.err(node, f"cannot convert this value to {ty!r}")
        if isinstance(ty, T.Vector) and isinstance(v.type, T.Scalar):
            s = self.convert(v, ty.elem, node)
            vec = ir.Constant(ty.llvm, ir.Undefined)
            vec = self.b.insert_element(vec, s.ir, ir.Constant(I32, 0))
            mask = ir.Constant(ir.VectorType(I32, ty.lanes), [0] * ty.lanes)
            return Val(ty, self.b.shuffle_vector(vec, ir.Constant(ty.llvm, ir.Undefined), mask))
        if isinstance(v.type, T.Vector) != isinstance(ty, T.Vector) or (
            isinstance(ty, T.Vector) and ty.lanes != v.type.lanes
        ):
            raise self.err(node, f"cannot convert {v.type!r} to {ty!r}")
        src, dst = elem_of(v.type), elem_of(ty)
        x, lt = v.ir, ty.llvm
        if src == dst:
            return Val(ty, x)
        if dst.kind == "bool":
            zero = self.const(v.type, 0)
            if src.is_float:
                return Val(ty, self.b.fcmp_unordered("!=", x, zero))
            return Val(ty, self.b.icmp_unsigned("!=", x, zero))
        if src.kind == "bool":
            return Val(ty, self.b.uitofp(x, lt) if dst.is_float else self.b.zext(x, lt))
        if src.is_int and dst.is_int:
            if dst.bits < src.bits:
                return Val(ty, self.b.trunc(x, lt))
            if dst.bits > src.bits:
                return Val(ty, self.b.sext(x, lt) if src.signed else self.b.zext(x, lt))
            return Val(ty, x)
        if src.is_int:
            return Val(ty, self.b.sitofp(x, lt) if src.signed else self.b.uitofp(x, lt))
        if dst.is_int:
            return Val(ty, self.b.fptosi(x, lt) if dst.signed else self.b.fptoui(x, lt))
        if dst.bits > src.bits:
            return Val(ty, self.b.fpext(x, lt))
        return Val(ty, self.b.fptrunc(x, lt))

    # --- calls ------------------------------------------------------------------------
    def e_Call(self, node: ast.Call):
        callee = self.expr(node.func)
        if not isinstance(callee, Obj):
            raise self.err(node.func, "this value cannot be called")
        fn = callee.value
        if node.keywords and not isinstance(fn, (T.Scalar, T.Vector)):
            raise self.err(node, "keyword arguments are not supported in kernel calls")
        if isinstance(fn, (T.Scalar, T.Vector)):
            return self.construct(fn, node)
        if isinstance(fn, lang.Intrinsic):
            return self.intrinsic(fn.name, node)
        from .compiler import HelperFunction, KernelFunction

        if isinstance(fn, HelperFunction):
            return self.call_helper(fn, node)
        if isinstance(fn, KernelFunction):
            raise self.err(
                node, "a kernel cannot call another kernel; mark shared code @spirvjit.func"
            )
        module = getattr(fn, "__module__", None)
        name = getattr(fn, "__name__", "")
        if module == "math" and name in _PY_MATH:
            return self.intrinsic(_PY_MATH[name], node)
        if fn in (min, max, abs, any, all, round, pow):  # Python's, as spirvjit.lang's
            return self.intrinsic(fn.__name__, node)
        if fn in (int, float, bool):
            raise self.err(
                node,
                f"{fn.__name__}(...) is ambiguous in kernels; "
                "write int32(...), float32(...) or bool_(...)",
            )
        if fn is range:
            raise self.err(node, "range(...) is allowed only as a for loop's iterable")
        raise self.err(
            node.func, f"cannot call {fn!r} from a kernel (mark Python helpers @spirvjit.func)"
        )

    def construct(self, ty, node: ast.Call):
        """``float32(x)`` converts; ``float4(a, b, c, d)`` / ``float4(x)`` / ``float4(v2, v2)``
        builds a vector from scalars and vectors whose lanes add up."""
        if node.keywords:
            raise self.err(node, "type conversions take no keyword arguments")
        args = [self.expr(a) for a in node.args]
        if isinstance(ty, T.Scalar):
            if len(args) != 1:
                raise self.err(node, f"{ty!r}(...) takes one argument")
            return self.convert(args[0], ty, node)
        if len(args) == 1:  # float4(x) copies x to every lane; float4(int4_v) converts
            return self.convert(args[0], ty, node)
        lanes = []
        for a, n in zip(args, node.args, strict=True):
            if isinstance(a, Val) and isinstance(a.type, T.Vector):
                for k in range(a.type.lanes):
                    lane = Val(a.type.elem, self.b.extract_element(a.ir, ir.Constant(I32, k)))
                    lanes.append(self.coerce_or_convert(lane, ty.elem, n))
            else:
                lanes.append(self.coerce_or_convert(a, ty.elem, n))
        if len(lanes) != ty.lanes:
            raise self.err(node, f"{ty!r} needs {ty.lanes} lanes, got {len(lanes)}")
        vec = ir.Constant(ty.llvm, ir.Undefined)
        for k, lane in enumerate(lanes):
            vec = self.b.insert_element(vec, lane.ir, ir.Constant(I32, k))
        return Val(ty, vec)

    def coerce_or_convert(self, v, ty, node):
        # Vector constructors convert their lanes explicitly (the type is written out),
        # but a float literal in an integer vector is more likely a mistake: an error.
        if isinstance(v, Lit) and isinstance(v.value, float) and ty.is_int:
            return self.coerce(v, ty, node)
        return self.convert(v, ty, node)

    def args_of(self, node: ast.Call, count: int | tuple[int, ...], name: str) -> list:
        counts = (count,) if isinstance(count, int) else count
        if len(node.args) not in counts:
            want = " or ".join(map(str, counts))
            raise self.err(node, f"{name}() takes {want} arguments, got {len(node.args)}")
        return [self.expr(a) for a in node.args]

    def intrinsic(self, name: str, node: ast.Call):
        if name in _WORKITEM:
            (dim,) = self.args_of(node, 1, name)
            d = self.coerce(dim, T.UINT32, node.args[0]).ir
            fn = self.unit.declare(mangle(_WORKITEM[name], [T.UINT32]), I64, [I32])
            return Val(T.INT64, self.b.call(fn, [d]))
        if name == "work_dim":
            self.args_of(node, 0, name)
            fn = self.unit.declare("_Z12get_work_dimv", I32, [])
            return Val(T.UINT32, self.b.call(fn, []))
        if name == "barrier":
            args = self.args_of(node, (0, 1), name)
            flags = args[0] if args else Lit(lang.LOCAL_MEM_FENCE | lang.GLOBAL_MEM_FENCE)
            if not isinstance(flags, Lit):
                raise self.err(
                    node, "barrier flags must be constants (LOCAL_MEM_FENCE, GLOBAL_MEM_FENCE)"
                )
            fn = self.unit.declare("_Z7barrierj", ir.VoidType(), [I32], convergent=True)
            self.b.call(fn, [ir.Constant(I32, flags.value)])  # convergent, as declared
            return NO_VALUE
        if name in ("local_array", "private_array"):
            return self.array(name, node)
        if name in _ATOMIC_RMW or name == "atomic_cmpxchg":
            return self.atomic(name, node)
        if name == "select":
            cond, a, b = self.args_of(node, 3, name)
            ty = self.unify([a, b], node)
            if isinstance(cond, Lit):
                cond = Val(T.BOOL, ir.Constant(I1, int(bool(cond.value))))
            c = (
                cond.ir
                if isinstance(cond, Val) and elem_of(cond.type).kind == "bool"
                else self.truth(cond, node.args[0])
            )
            if isinstance(ty, T.Vector) and isinstance(cond.type, T.Scalar):
                c = self.convert(Val(T.BOOL, c), T.Vector(T.BOOL, ty.lanes), node).ir
            elif isinstance(cond.type, T.Vector) and getattr(ty, "lanes", 0) != cond.type.lanes:
                raise self.err(node, f"select: a {cond.type!r} condition for {ty!r} values")
            return Val(
                ty, self.b.select(c, self.coerce(a, ty, node).ir, self.coerce(b, ty, node).ir)
            )
        if name == "bitcast":
            if len(node.args) != 2:
                raise self.err(node, "bitcast(value, type) takes two arguments")
            v = self.expr(node.args[0])
            ty = self.compile_time(node.args[1])
            if not isinstance(ty, (T.Scalar, T.Vector)) or not isinstance(v, Val):
                raise self.err(node, "bitcast takes a typed value and a scalar or vector type")
            if elem_of(v.type).bits * getattr(v.type, "lanes", 1) != elem_of(ty).bits * getattr(
                ty, "lanes", 1
            ):
                raise self.err(node, f"bitcast from {v.type!r} to {ty!r}: sizes differ")
            return Val(ty, self.b.bitcast(v.ir, ty.llvm))
        if name in ("any", "all"):
            (v,) = self.args_of(node, 1, name)
            if (
                not isinstance(v, Val)
                or not isinstance(v.type, T.Vector)
                or v.type.elem.kind != "bool"
            ):
                raise self.err(node, f"{name}() takes a bool vector (a vector comparison)")
            acc = self.b.extract_element(v.ir, ir.Constant(I32, 0))
            for k in range(1, v.type.lanes):
                lane = self.b.extract_element(v.ir, ir.Constant(I32, k))
                acc = self.b.or_(acc, lane) if name == "any" else self.b.and_(acc, lane)
            return Val(T.BOOL, acc)
        if name in ("isnan", "isinf", "isfinite", "signbit"):
            return self.predicate(name, node)
        return self.math(name, node)

    def predicate(self, name, node):
        (v,) = self.args_of(node, 1, name)
        if isinstance(v, Lit):
            v = self.coerce(v, T.FLOAT32, node)
        if not isinstance(v, Val) or not elem_of(v.type).is_float:
            raise self.err(node, f"{name}() takes a float")
        rt = T.Vector(T.BOOL, v.type.lanes) if isinstance(v.type, T.Vector) else T.BOOL
        if name == "isnan":
            return Val(rt, self.b.fcmp_unordered("uno", v.ir, v.ir))
        if name == "signbit":
            el = elem_of(v.type)
            ity = (
                ir.IntType(el.bits)
                if rt == T.BOOL
                else ir.VectorType(ir.IntType(el.bits), v.type.lanes)
            )
            bits = self.b.bitcast(v.ir, ity)
            zero = ir.Constant(ity, 0) if rt == T.BOOL else ir.Constant(ity, [0] * v.type.lanes)
            return Val(rt, self.b.icmp_signed("<", bits, zero))
        mag = self.call_builtin("fabs", [v], v.type).ir
        inf = self.const(v.type, math.inf)
        if name == "isinf":
            return Val(rt, self.b.fcmp_ordered("==", mag, inf))
        return Val(rt, self.b.fcmp_ordered("<", mag, inf))

    def math(self, name: str, node: ast.Call):
        args = [self.expr(a) for a in node.args]
        if not args:
            raise self.err(node, f"{name}() needs arguments")
        if name in ("min", "max", "clamp", "abs"):
            return self.generic(name, args, node)
        if name in lang.INT_UNARY or name in lang.INT_BINARY:
            want = 1 if name in lang.INT_UNARY else 2
            if len(args) != want:
                raise self.err(node, f"{name}() takes {want} arguments")
            ty = self.unify(args, node)
            if not elem_of(ty).is_int:
                raise self.err(node, f"{name}() takes integers, got {ty!r}")
            return self.call_builtin(name, [self.coerce(a, ty, node) for a in args], ty)
        if name in lang.MATH_INT_ARG:
            if len(args) != 2:
                raise self.err(node, f"{name}() takes 2 arguments")
            ty = self.float_type([args[0]], node)
            ity = T.Vector(T.INT32, ty.lanes) if isinstance(ty, T.Vector) else T.INT32
            if (
                isinstance(args[1], Val)
                and isinstance(args[1].type, T.Scalar)
                and isinstance(ty, T.Vector)
            ):
                ity = T.INT32  # ldexp(float4, int) is an overload of its own
            return self.call_builtin(
                name, [self.coerce(args[0], ty, node), self.coerce(args[1], ity, node)], ty
            )
        if name in lang.GEOMETRIC:
            ty = self.float_type(args, node)
            vals = [self.coerce(a, ty, node) for a in args]
            scalar_result = name in ("dot", "length", "distance", "fast_length")
            return self.call_builtin(name, vals, elem_of(ty) if scalar_result else ty)
        counts = {
            **dict.fromkeys(lang.MATH_UNARY, 1),
            **dict.fromkeys(lang.MATH_BINARY, 2),
            **dict.fromkeys(lang.MATH_TERNARY, 3),
        }
        if name not in counts:
            raise self.err(node, f"unknown kernel function {name}")
        if len(args) != counts[name]:
            raise self.err(node, f"{name}() takes {counts[name]} arguments, got {len(args)}")
        # Scalars meeting vectors are broadcast (mix(v, w, 0.5) calls the all-vector
        # overload, which computes the same).
        ty = self.float_type(args, node)
        return self.call_builtin(name, [self.coerce(a, ty, node) for a in args], ty)

    def float_type(self, args, node) -> T.KernelType:
        ty = self.unify(args, node)
        if not elem_of(ty).is_float:
            if all(isinstance(a, Lit) for a in args):
                return T.FLOAT32
            raise self.err(node, f"expected float arguments, got {ty!r}; convert with float32(...)")
        return ty

    def generic(self, name, args, node):
        if name == "abs":
            if len(args) != 1:
                raise self.err(node, "abs() takes 1 argument")
            ty = self.unify(args, node)
            v = self.coerce(args[0], ty, node)
            if elem_of(ty).is_float:
                return self.call_builtin("fabs", [v], ty)
            if not elem_of(ty).signed:
                return v
            return self.call_builtin("abs", [v], ty)  # same bits; OpenCL's abs is unsigned
        want = 3 if name == "clamp" else 2
        if len(args) != want:
            raise self.err(node, f"{name}() takes {want} arguments in kernels")
        ty = self.unify(args, node)
        vals = [self.coerce(a, ty, node) for a in args]
        if elem_of(ty).is_float and name != "clamp":
            name = "f" + name  # fmin/fmax: the IEEE minNum/maxNum
        return self.call_builtin(name, vals, ty)

    def call_builtin(self, name: str, args: list[Val], ret: T.KernelType) -> Val:
        types = [a.type for a in args]
        fn = self.unit.declare(mangle(name, types), ret.llvm, [t.llvm for t in types])
        return Val(ret, self.b.call(fn, [a.ir for a in args]))

    def array(self, name: str, node: ast.Call):
        if len(node.args) != 2:
            raise self.err(node, f"{name}(dtype, shape) takes 2 arguments")
        elem = self.compile_time(node.args[0])
        if not isinstance(elem, (T.Scalar, T.Vector)) or elem == T.BOOL:
            raise self.err(node.args[0], f"{name} needs a scalar or vector type, got {elem!r}")
        shape_v = self.expr(node.args[1])
        dims = shape_v.items if isinstance(shape_v, Tuple) else [shape_v]
        shape = []
        for d in dims:
            if isinstance(d, Val) and self.spec_constants:
                raise NeedsConstantValue  # compile again with the Constant values baked in
            if not isinstance(d, Lit) or not isinstance(d.value, int) or d.value <= 0:
                raise self.err(node.args[1], f"{name} needs a shape of positive constant integers")
            shape.append(d.value)
        space = T.LOCAL if name == "local_array" else T.PRIVATE
        ty = T.Array(elem, tuple(shape), space)
        if space == T.PRIVATE:
            return ArrayRef(ty, self.alloca(ty.llvm, "private"))
        gv = ir.GlobalVariable(
            self.unit.module, ty.llvm, self.unit.unique(f"{self.fn.name}.local"), addrspace=T.LOCAL
        )
        gv.linkage = "internal"
        gv.initializer = ir.Constant(ty.llvm, ir.Undefined)
        gv.align = max(16, elem_of(elem).size)
        gv.type = ir.PointerType(addrspace=T.LOCAL)
        return ArrayRef(ty, gv)

    def atomic(self, name: str, node: ast.Call):
        want = {"atomic_inc": 2, "atomic_dec": 2, "atomic_cmpxchg": 4}.get(name, 3)
        if len(node.args) != want:
            raise self.err(
                node, f"{name}() takes {want} arguments (array, index{', value' * (want - 2)})"
            )
        base = self.writable(self.expr(node.args[0]), node.args[0])
        fake = ast.Subscript(value=node.args[0], slice=node.args[1], ctx=ast.Load())
        ast.copy_location(fake, node)
        result = self.address(fake, base)
        if isinstance(result, ArrayRef):
            raise self.err(node.args[1], "atomics need one element: give every index")
        space = base.type.space if isinstance(base, ArrayRef) else getattr(base.type, "space", None)
        if space not in (T.GLOBAL, T.LOCAL):
            raise self.err(node.args[0], "atomics work on Global and Local memory only")
        ptr, ty = result
        if not isinstance(ty, T.Scalar) or ty.kind == "bool" or ty.bits < 32 or ty == T.FLOAT16:
            raise self.err(node, f"atomics work on 32- and 64-bit integers and floats, not {ty!r}")
        ordering = "monotonic"  # relaxed, like OpenCL C's atomic_add & co.
        if name == "atomic_cmpxchg":
            if ty.is_float:
                raise self.err(node, "atomic_cmpxchg works on integers")
            cmp = self.coerce(self.expr(node.args[2]), ty, node.args[2]).ir
            val = self.coerce(self.expr(node.args[3]), ty, node.args[3]).ir
            pair = self.b.cmpxchg(ptr, cmp, val, ordering, ordering)
            return Val(ty, self.b.extract_value(pair, 0))
        op = _ATOMIC_RMW[name]
        if name in ("atomic_inc", "atomic_dec"):
            val = self.const(ty, 1)
        else:
            val = self.coerce(self.expr(node.args[2]), ty, node.args[2]).ir
        if ty.is_float:
            fop = {"add": "fadd", "sub": "fsub", "min": "fmin", "max": "fmax", "xchg": "xchg"}.get(
                op
            )
            if fop is None:
                raise self.err(node, f"{name} works on integers only")
            op = fop
        elif op in ("min", "max") and not ty.signed:
            op = "u" + op
        return Val(ty, self.b.atomic_rmw(op, ptr, val, ordering))

    def call_helper(self, helper, node: ast.Call) -> Val:
        args = [self.expr(a) for a in node.args]
        for a, n in zip(args, node.args, strict=True):
            if isinstance(a, (Obj, Tuple)):
                raise self.err(n, "helpers take numbers, vectors, pointers and arrays")
        fn, ret, params = self.unit_helper(helper, args, node)
        values = []
        for a, p, n in zip(args, params, node.args, strict=True):
            if isinstance(p, T.Array):
                values.append(a.ptr)
            else:
                values.append(self.coerce(a, p, n).ir)
        call = self.b.call(fn, values)
        if ret is None:
            return NO_VALUE
        return Val(ret, call)

    def unit_helper(self, helper, args, node):
        from .compiler import instantiate_helper

        try:
            return instantiate_helper(self.unit, helper, args)
        except CompileError as exc:
            if getattr(exc, "lineno", None) is not None:
                raise
            raise self.err(node, exc.message) from None
