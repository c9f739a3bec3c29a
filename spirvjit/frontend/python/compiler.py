"""Kernels and helpers written in Python: the decorators' objects, compiling a set of them
into one LLVM module, and that module into SPIR-V with LLVM's own SPIR-V back end (the
one llvmlite ships: no clang, no external tool).
"""

from __future__ import annotations

import functools
import inspect
import linecache
import operator
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from llvmlite import ir

from ...errors import CompileError
from . import types as T
from .backend import TRIPLE, data_layout, emit_spirv
from .lower import I32, FunctionLowering, NeedsConstantValue, Unit, Var, lit_type
from .source import Source, parse
from .values import ArrayRef, Lit, Val


def new_unit(name: str) -> Unit:
    module = ir.Module(name)
    module.triple = TRIPLE
    module.data_layout = data_layout()
    # OpenCL C 3.0, as clang records it: the back end writes OpSource OpenCL_C from it.
    version = module.add_metadata([ir.Constant(I32, 3), ir.Constant(I32, 0)])
    module.add_named_metadata("opencl.ocl.version", version)
    return Unit(module)


@dataclass(frozen=True)
class Param:
    name: str
    type: object  # a KernelType, a ConstantParam, or None (an unannotated helper parameter)
    default: object = inspect.Parameter.empty


def _params(fn, src: Source, need_types: bool) -> list[Param]:
    sig = inspect.signature(fn)
    out = []
    for p in sig.parameters.values():
        node = (
            next(a for a in src.tree.args.args if a.arg == p.name) if src.tree.args.args else None
        )
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise src.error(
                node or src.tree, f"parameter '{p.name}': only plain positional parameters"
            )
        ann = p.annotation
        if isinstance(ann, str):  # from __future__ import annotations
            try:
                ann = eval_annotation(ann, src)
            except Exception as exc:
                raise src.error(
                    node, f"cannot evaluate the annotation of '{p.name}': {exc}"
                ) from None
        if ann is inspect.Parameter.empty:
            if need_types:
                raise src.error(node, f"kernel parameter '{p.name}' needs a type annotation")
            ann = None
        elif ann is bool and need_types:
            raise src.error(
                node, "bool kernel parameters are not allowed (OpenCL forbids them); use uint8"
            )
        elif not isinstance(ann, (T.Scalar, T.Vector, T.Pointer, T.ConstantParam)):
            raise src.error(node, f"parameter '{p.name}': {ann!r} is not a kernel type")
        elif ann == T.BOOL and need_types:
            raise src.error(
                node, "bool kernel parameters are not allowed (OpenCL forbids them); use uint8"
            )
        out.append(Param(p.name, ann, p.default))
    return out


def eval_annotation(text: str, src: Source):
    """A string annotation (``from __future__ import annotations``) evaluated in the
    function's scope. A kernel defined inside a function cannot see that function's
    locals through annotations (they are not in its closure unless the body uses them),
    so spirvjit.lang's names are the last resort: ``Global``, ``float32``, ..."""
    from ... import lang

    scope = {k: v for k, v in vars(lang).items() if not k.startswith("_")}
    scope.update(src.namespace)
    return eval(text, scope, dict(src.closure))  # noqa: S307 (the user's own annotation)


class HelperFunction:
    """A function kernels can call (``@spirvjit.func``). It is compiled once per set of
    argument types it is called with; annotations, where given, fix a parameter's type."""

    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self.py = fn
        self._source: Source | None = None

    @property
    def source(self) -> Source:
        if self._source is None:
            self._source = parse(self.py)
        return self._source

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{self.__name__} is a kernel helper; call it from a @spirvjit.kernel")


def instantiate_helper(unit: Unit, helper: HelperFunction, args: list):
    """(LLVM function, return type or None, parameter types) of ``helper`` for ``args``."""
    src = helper.source
    params = _params(helper.py, src, need_types=False)
    if len(params) != len(args):
        raise CompileError(f"{helper.__name__}() takes {len(params)} arguments, got {len(args)}")
    types = []
    for p, a in zip(params, args, strict=True):
        if isinstance(p.type, T.ConstantParam):
            raise src.error(src.tree, "helpers take no Constant parameters; pass the value")
        if p.type is not None:
            types.append(p.type)
        elif isinstance(a, (ArrayRef, Val)):
            types.append(a.type)
        else:
            types.append(lit_type(a.value))
    key = (helper, tuple(types))
    if key in unit.helpers:
        return unit.helpers[key]
    if key in unit.in_progress:
        raise src.error(
            src.tree, f"{helper.__name__} calls itself; recursion is not allowed in kernels"
        )
    unit.in_progress.add(key)
    try:
        ret = _return_type(unit, helper, params, types)
        llvm_params = [
            ir.PointerType(addrspace=t.space) if isinstance(t, T.Array) else t.llvm for t in types
        ]
        fnty = ir.FunctionType(ret.llvm if ret else ir.VoidType(), llvm_params)
        fn = ir.Function(unit.module, fnty, unit.unique(helper.__name__))
        fn.calling_convention = "spir_func"
        fn.linkage = "internal"
        fn.attributes.add("nounwind")
        fn.attributes.add("convergent")  # it may hold a barrier
        _lower(unit, src, fn, params, types, ret, None)
    finally:
        unit.in_progress.discard(key)
    unit.helpers[key] = (fn, ret, types)
    return unit.helpers[key]


def _return_type(unit, helper, params, types):
    src = helper.source
    ann = helper.py.__annotations__.get("return", inspect.Parameter.empty)
    if isinstance(ann, str):
        ann = eval_annotation(ann, src)
    if ann is None:
        return None
    if ann is not inspect.Parameter.empty:
        if not isinstance(ann, (T.Scalar, T.Vector)):
            raise src.error(src.tree, f"return annotation {ann!r} is not a scalar or vector type")
        return ann
    # No annotation: lower once into a scratch module to see what it returns.
    scratch = new_unit("infer")
    scratch.in_progress = set(unit.in_progress)
    fn = ir.Function(
        scratch.module, ir.FunctionType(ir.VoidType(), [_llvm(t) for t in types]), "infer"
    )
    lowering = _lower(scratch, src, fn, params, types, "infer", None)
    found = lowering.returned
    if not found:
        return None
    ret = found[0]
    for t in found[1:]:
        if t == ret:
            continue
        if (
            isinstance(t, T.Scalar)
            and isinstance(ret, T.Scalar)
            and "bool" not in (t.kind, ret.kind)
        ):
            ret = T.common_scalar(ret, t)
        else:
            raise src.error(src.tree, f"{helper.__name__} returns both {ret!r} and {t!r}")
    return ret


def _llvm(t):
    return ir.PointerType(addrspace=t.space) if isinstance(t, T.Array) else t.llvm


def _lower(unit, src, fn, params, types, ret, kernel_name, bound=None) -> FunctionLowering:
    """Lowers ``src`` into ``fn``. ``bound(lowering)`` gives values for the parameters
    that are not LLVM arguments (Constant parameters); the others take ``fn``'s
    arguments in order, in allocas so that the body may assign to them."""
    lowering = FunctionLowering(unit, src, fn, ret, kernel_name)
    values = bound(lowering) if bound else {}
    args = iter(fn.args)
    for p, t in zip(params, types, strict=True):
        if p.name in values:
            lowering.vars[p.name] = values[p.name]
            continue
        arg = next(args)
        arg.name = p.name
        if isinstance(t, T.Array):
            lowering.vars[p.name] = ArrayRef(t, arg)
        else:
            slot = lowering.alloca(t.llvm, p.name + ".addr")
            lowering.alloca_b.store(arg, slot)
            lowering.vars[p.name] = Var(t, slot)
    lowering.lower_body(src.tree.body)
    lowering.finish()
    return lowering


class KernelFunction:
    """A kernel written in Python (``@spirvjit.kernel``). Call it like any kernel:
    ``saxpy(a, x, y, global_size=n)``; its SPIR-V and Program are built at the first call
    and kept per value of its Constant parameters."""

    def __init__(self, fn, local_size: Sequence[int] | None = None):
        functools.update_wrapper(self, fn)
        self.py = fn
        self.name = fn.__name__
        self.local_size = tuple(local_size) if local_size else None
        self._source: Source | None = None
        self._params: list[Param] | None = None
        self._lock = threading.RLock()
        self._spec_spirv: bytes | None = None
        self._baked = False  # Constant values are needed at compile time (array shapes)
        self._programs: dict = {}
        self._plain_kernel = None  # the Kernel to launch when there are no Constants

    @property
    def source(self) -> Source:
        if self._source is None:
            self._source = parse(self.py)
        return self._source

    @property
    def params(self) -> list[Param]:
        if self._params is None:
            self._params = _params(self.py, self.source, need_types=True)
        return self._params

    @property
    def constants(self) -> list[Param]:
        """The Constant parameters, in order (their SpecIds are 0, 1, ... in this order)."""
        return [p for p in self.params if isinstance(p.type, T.ConstantParam)]

    @property
    def spec_ids(self) -> dict[str, int]:
        return {p.name: i for i, p in enumerate(self.constants)}

    # --- compiling --------------------------------------------------------------------
    def lower_into(self, unit: Unit, values: Mapping[str, object] | None) -> None:
        """Adds this kernel to ``unit``: with ``values`` its Constant parameters are baked
        in; without, they are SPIR-V specialization constants (NeedsConstantValue when a
        value is needed at compile time)."""
        src = self.source
        params = self.params
        runtime = [p for p in params if not isinstance(p.type, T.ConstantParam)]
        fnty = ir.FunctionType(ir.VoidType(), [p.type.llvm for p in runtime])
        if self.name in unit.module.globals:
            raise src.error(src.tree, f"two kernels named '{self.name}' in one module")
        fn = ir.Function(unit.module, fnty, self.name)
        fn.calling_convention = "spir_kernel"
        fn.attributes.add("nounwind")
        fn.attributes.add("convergent")
        _kernel_metadata(unit.module, fn, runtime, self.local_size)

        def constants(lowering: FunctionLowering) -> dict:
            out = {}
            for p in self.constants:
                if values is not None:
                    out[p.name] = self._baked_value(p, values)
                    continue
                # A spec constant, read in the entry block; SpecIds count up per unit.
                scalar = p.type.scalar
                spec_id = unit.spec_ids[(self.name, p.name)] = unit.next_spec_id
                unit.next_spec_id += 1
                default = 0 if p.default is inspect.Parameter.empty else p.default
                read = unit.declare(
                    "_Z20__spirv_SpecConstanti" + scalar.code, scalar.llvm, [I32, scalar.llvm]
                )
                args = [ir.Constant(I32, spec_id), lowering.const(scalar, default)]
                out[p.name] = Val(scalar, lowering.alloca_b.call(read, args))
                lowering.spec_constants = True
            return out

        _lower(unit, src, fn, params, [p.type for p in params], None, self.name, constants)

    def _baked_value(self, p: Param, values: Mapping[str, object]):
        if p.name in values:
            value = values[p.name]
        elif p.default is not inspect.Parameter.empty:
            value = p.default
        else:
            raise CompileError(f"kernel '{self.name}': no value for Constant parameter '{p.name}'")
        return Lit(_spec_value(p, value, self.name))

    def spirv(self, **values) -> bytes:
        """The kernel's SPIR-V module. Its Constant parameters are specialization
        constants (SpecId = position among them) unless they size arrays, in which case
        ``values`` are baked in."""
        with self._lock:
            if not self._baked and self._spec_spirv is None:
                try:
                    self._spec_spirv = compile_kernels([self], None)
                except NeedsConstantValue:
                    self._baked = True
            if not self._baked:
                return self._spec_spirv
            return compile_kernels([self], values)

    def llvm_ir(self, **values) -> str:
        """The LLVM IR handed to the SPIR-V back end (before optimization)."""
        unit = new_unit(self.name)
        try:
            self.lower_into(unit, values if (values or self._baked) else None)
        except NeedsConstantValue:
            unit = new_unit(self.name)
            self.lower_into(unit, values)
        return module_text(unit)

    def program(self, **values):
        """The spirvjit Program of this kernel for these Constant values (cached)."""
        from ...program import Program

        names = {p.name for p in self.constants}
        unknown = set(values) - names
        if unknown:
            raise CompileError(
                f"kernel '{self.name}' has no Constant parameter {sorted(unknown)[0]!r}"
            )
        full = {}
        for p in self.constants:
            if p.name in values:
                full[p.name] = values[p.name]
            elif p.default is not inspect.Parameter.empty:
                full[p.name] = p.default
            else:
                raise CompileError(
                    f"kernel '{self.name}': no value for Constant parameter '{p.name}'"
                )
        key = tuple(sorted(full.items()))
        with self._lock:
            found = self._programs.get(key)
            if found is not None:
                return found
            spirv = self.spirv(**full)
            spec = {}
            if not self._baked:
                for p in self.constants:
                    spec[self.spec_ids[p.name]] = _spec_value(p, full[p.name], self.name)
            found = self._programs[key] = Program(spirv, spec, name=f"{self.name}.py")
            return found

    def __call__(
        self, *args, global_size, local_size=None, global_offset=None, device=None, **constants
    ):
        fast = self._plain_kernel
        if fast is not None and not constants:  # no Constant parameters: launch directly
            fast(
                *args,
                global_size=global_size,
                local_size=local_size,
                global_offset=global_offset,
                device=device,
            )
            return
        # Constant values come by keyword, or by position like the other arguments.
        runtime, values = [], dict(constants)
        it = iter(args)
        for p in self.params:
            if isinstance(p.type, T.ConstantParam) and p.name in values:
                continue
            try:
                value = next(it)
            except StopIteration:
                if isinstance(p.type, T.ConstantParam) and p.default is not inspect.Parameter.empty:
                    continue
                raise TypeError(f"{self.name}(): missing argument '{p.name}'") from None
            if isinstance(p.type, T.ConstantParam):
                values[p.name] = value
            else:
                runtime.append(value)
        extra = len(list(it))
        if extra:
            raise TypeError(f"{self.name}(): {extra} more arguments than parameters")
        kernel = self.program(**values).kernel(self.name)
        if not self.constants:
            self._plain_kernel = kernel
        kernel(
            *runtime,
            global_size=global_size,
            local_size=local_size,
            global_offset=global_offset,
            device=device,
        )

    def __repr__(self) -> str:
        return f"<spirvjit python kernel {self.name}>"


def _spec_value(p: Param, value, kernel: str):
    """A Constant parameter's value as its type's Python value (CompileError if it is not
    one: no wrapping of -1 into a uint32 here, unlike literals in expressions)."""
    scalar = p.type.scalar
    bad = CompileError(f"kernel '{kernel}': {p.name}={value!r} is not a {scalar!r}")
    if scalar.kind == "bool":
        if not isinstance(value, (bool, int)) or value not in (0, 1):
            raise bad
        return bool(value)
    if scalar.is_int:
        if isinstance(value, (float, bool)) or not isinstance(value, int):
            try:
                value = operator.index(value)  # NumPy integers
            except TypeError:
                raise bad from None
        low = -(1 << (scalar.bits - 1)) if scalar.signed else 0
        if not low <= value < low + (1 << scalar.bits):
            raise bad
        return int(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        raise bad from None


def _kernel_metadata(module: ir.Module, fn: ir.Function, params: list[Param], local_size) -> None:
    """The kernel_arg_* metadata clang writes: the SPIR-V back end reads pointee types
    (opaque pointers carry none) from kernel_arg_type, and OpName from the names."""
    spaces, quals, tys, tquals, names = [], [], [], [], []
    for p in params:
        t = p.type
        if isinstance(t, T.Pointer):
            spaces.append(ir.Constant(I32, t.space))
            tys.append(f"{t.elem.cl}*")
            tquals.append("const" if t.space == T.CONSTANT else "")
        else:
            spaces.append(ir.Constant(I32, 0))
            tys.append(t.cl)
            tquals.append("")
        quals.append("none")
        names.append(p.name)
    fn.set_metadata("kernel_arg_addr_space", module.add_metadata(spaces))
    fn.set_metadata("kernel_arg_access_qual", module.add_metadata(quals))
    fn.set_metadata("kernel_arg_type", module.add_metadata(tys))
    fn.set_metadata("kernel_arg_base_type", module.add_metadata(tys))
    fn.set_metadata("kernel_arg_type_qual", module.add_metadata(tquals))
    fn.set_metadata("kernel_arg_name", module.add_metadata(names))
    if local_size:
        dims = [*local_size, 1, 1][:3]
        fn.set_metadata(
            "reqd_work_group_size", module.add_metadata([ir.Constant(I32, d) for d in dims])
        )


def compile_kernels(
    kernels: Iterable[KernelFunction], values: Mapping[str, object] | None
) -> bytes:
    """One SPIR-V module holding ``kernels`` (NeedsConstantValue passes through)."""
    kernels = list(kernels)
    unit = new_unit(kernels[0].name if kernels else "empty")
    for k in kernels:
        k.lower_into(unit, values)
    return emit_spirv(module_text(unit), kernels[0].name if kernels else "module")


def module_text(unit: Unit) -> str:
    """The module's LLVM IR text. llvmlite separates a function's metadata attachments
    with commas, which LLVM's parser rejects: only ``define`` lines are patched (an
    instruction's attachments are comma-separated)."""
    lines = str(unit.module).splitlines()
    for i, line in enumerate(lines):
        if line.startswith("define ") and ", !" in line:
            lines[i] = line.replace(", !", " !")
    return "\n".join(lines) + "\n"


def module_kernels(namespace: Mapping[str, object]) -> list[KernelFunction]:
    """The kernels defined in a module's namespace, in definition order."""
    seen, out = set(), []
    for value in namespace.values():
        if isinstance(value, KernelFunction) and id(value) not in seen:
            seen.add(id(value))
            out.append(value)
    return out


def python_to_spirv(source: bytes | str, filename: str) -> bytes:
    """Runs a Python module's source and compiles every ``@spirvjit.kernel`` in it into
    one SPIR-V module (``spirvjit build kernels.py``). Constant parameters become
    specialization constants numbered across the kernels in definition order, with the
    parameter's default as the default value; a kernel whose Constants size arrays is
    compiled with its defaults baked in."""
    text = source.decode("utf-8") if isinstance(source, bytes) else source
    lines = text.splitlines(keepends=True)
    # inspect.getsource reads kernels' code from linecache: the module need not be a file.
    linecache.cache[filename] = (len(text), None, lines, filename)
    namespace = {"__name__": "__spirvjit_build__", "__file__": filename}
    try:
        code = compile(text, filename, "exec")
        exec(code, namespace)  # noqa: S102 (the user's module, as `python kernels.py` would)
    except SyntaxError as exc:
        raise CompileError(f"{filename}:{exc.lineno}:{exc.offset}: error: {exc.msg}") from exc
    except Exception as exc:
        raise CompileError(
            f"{filename}: running the module failed: {type(exc).__name__}: {exc}"
        ) from exc
    kernels = [k for k in module_kernels(namespace) if k.py.__code__.co_filename == filename]
    if not kernels:
        raise CompileError(f"{filename}: no @spirvjit.kernel functions")
    return emit_spirv(module_text(build_unit(kernels, filename)), filename)


def build_unit(kernels: Sequence[KernelFunction], name: str) -> Unit:
    """All ``kernels`` in one unit, their Constants as spec constants numbered in order,
    except a kernel whose Constants size arrays: its defaults are baked in."""
    baked: set[str] = set()
    while True:
        unit = new_unit(name)
        try:
            for k in kernels:
                k.lower_into(unit, {} if k.name in baked else None)
            return unit
        except NeedsConstantValue:
            # Start again (a half-built LLVM function cannot be taken out of a module).
            baked.add(k.name)


def spec_id_table(kernels: Sequence[KernelFunction], name: str = "module") -> dict:
    """{(kernel, parameter): SpecId} of the module python_to_spirv builds from ``kernels``."""
    return dict(build_unit(kernels, name).spec_ids)
