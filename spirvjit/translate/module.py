"""Translation of a whole SPIR-V module into one LLVM module.

Every function with a body becomes an internal LLVM function that takes the
backend's hidden parameters after its own. Entry points are left for the
backend to wrap (the CPU backend builds work-group functions around them).
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

import llvmlite.binding as llvm
from llvmlite import ir

from ..errors import SpirvError
from ..spirv import capabilities
from ..spirv.grammar import (
    AddressingModel,
    Decoration,
    ExecutionMode,
    ExecutionModel,
    FunctionControl,
    FunctionParameterAttribute,
    LinkageType,
    StorageClass,
)
from ..spirv.module import Instruction, Module
from . import (  # noqa: F401  (importing them registers their handlers)
    opencl_std,
    ops_arith,
    ops_atomic,
    ops_control,
    ops_convert,
    ops_group,
    ops_memory,
    printf,
)
from .abi import TargetABI
from .arg_types import DeclaredArg, declared_args, read_declared_args
from .barriers import SteppedKernel, functions_with_barriers, prepare_stepped_kernel
from .builtins import SCALAR_BUILTINS, VECTOR_BUILTINS
from .constants import ConstantTable
from .debuginfo import DebugInfo
from .dynamic_shared import dynamic_offset, gpu_dynamic_shared, is_dynamic_shared
from .function import FunctionTranslator
from .signature import KernelArg, KernelSignature
from .types import TypeTable

_NAME_SAFE = re.compile(r"[^A-Za-z0-9_.]")


def declare(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    """Function ``name`` of ``module``, declared with ``fnty`` if it is not there yet."""
    existing = module.globals.get(name)
    if existing is not None:
        return existing
    return ir.Function(module, fnty, name)


@dataclass
class Translation:
    """The result of translating a module: LLVM IR plus what the host needs."""

    module: ir.Module
    kernels: dict[str, KernelSignature]
    kernel_functions: dict[str, ir.Function]
    # Program-scope variables the kernels write: one instance per program, shared by its kernels.
    mutable_globals: list[ir.GlobalVariable]
    # Functions that could not be translated: the symbol their stub body calls -> why.
    # Only the kernels that reach one fail, at their compile (``untranslatable``).
    errors: dict[str, SpirvError] = field(default_factory=dict)

    def untranslatable(self, ir_text: str, kernel: str) -> SpirvError | None:
        """The error of a kernel whose IR (what it reaches) calls a failed function's stub."""
        for symbol, error in self.errors.items():
            if f'@"{symbol}"' in ir_text:
                return SpirvError(
                    f"kernel {kernel} cannot be translated: {error.message}",
                    error.offset,
                    error.opname,
                )
        return None


class ModuleTranslator:
    def __init__(
        self,
        module: Module,
        abi: TargetABI,
        spec_constants: dict[int, object] | None = None,
        symbol_prefix: str = "spirvjit",
    ):
        self.module = module
        self.symbol_prefix = symbol_prefix
        self.mutable_globals: list[ir.GlobalVariable] = []
        self.abi = abi
        self.target_data = llvm.create_target_data(abi.data_layout)
        self.llmodule = ir.Module(name="spirvjit")
        self.llmodule.triple = abi.triple
        self.llmodule.data_layout = abi.data_layout
        self.types = TypeTable(module, abi.address_space, lambda i: self.constants.int_value(i))
        self.constants = ConstantTable(module, self.types, spec_constants or {}, self._global)
        self.functions: dict[int, ir.Function] = {}
        self._globals: dict[int, ir.Value] = {}
        self.workgroup_offsets: dict[int, int] = {}
        self.static_local_bytes = 0
        self.private_space = abi.address_space(StorageClass.Function)
        self._check_module(spec_constants or {})
        # Debug translations (the CPU backend's debug mode) carry DWARF metadata.
        self.debug = DebugInfo(self) if getattr(abi, "debug_info", False) else None

    # -- checks ----------------------------------------------------------------------

    def _check_module(self, spec_constants: dict[int, object]) -> None:
        capabilities.check_module(self.module)  # Shader, ImageBasic, Pipes, ...: refused
        if self.module.addressing_model == AddressingModel.Logical:
            raise SpirvError(
                "Logical addressing (a shader module) is not supported; "
                "spirvjit runs OpenCL kernels"
            )
        known = {
            d.operands[0]
            for decos in self.module.decorations.values()
            for d in decos
            if d.decoration == Decoration.SpecId
        }
        unknown = sorted(set(spec_constants) - known)
        if unknown:
            have = ", ".join(map(str, sorted(known))) or "none"
            raise SpirvError(
                f"spec constant id(s) {unknown} are not in this module (its SpecIds: {have})"
            )

    # -- globals ---------------------------------------------------------------------

    def local_symbol(self, prefix: str, value_id: int) -> str:
        """``prefix.<SPIR-V name>.<id>``: readable in dumps, unique in the module."""
        return (
            f"{prefix}.{_NAME_SAFE.sub('_', self.module.name_of(value_id).lstrip('%'))}.{value_id}"
        )

    def is_builtin_variable(self, value_id: int) -> bool:
        return bool(self.module.decorations_of(value_id, Decoration.BuiltIn))

    def builtin_of(self, value_id: int) -> str:
        from ..spirv.grammar import BuiltIn

        value = self.module.decorations_of(value_id, Decoration.BuiltIn)[0].operands[0]
        name = BuiltIn(value).name
        if name not in VECTOR_BUILTINS and name not in SCALAR_BUILTINS:
            raise SpirvError(f"BuiltIn {name} is not a kernel built-in spirvjit knows")
        return name

    def _global(self, inst: Instruction) -> ir.Value:
        found = self._globals.get(inst.result_id)
        if found is not None:
            return found
        storage = inst.operands[0]
        if storage == StorageClass.Workgroup:
            raise SpirvError("work-group variables are addressed per function", inst.offset)
        if storage not in (StorageClass.UniformConstant, StorageClass.CrossWorkgroup):
            raise SpirvError(
                f"module-scope variable with storage class {StorageClass(storage).name} "
                "is not supported",
                inst.offset,
            )
        pointee = self.types.spv(inst.result_type).element
        ty = self.types.llvm(pointee)
        constant = storage == StorageClass.UniformConstant or bool(
            self.module.decorations_of(inst.result_id, Decoration.Constant)
        )
        if constant:
            name = self.local_symbol("g", inst.result_id)
        else:
            name = f"{self.symbol_prefix}.g{inst.result_id}"
        gv = ir.GlobalVariable(self.llmodule, ty, name, addrspace=self.abi.address_space(storage))
        gv.type = ir.PointerType(addrspace=gv.addrspace)  # opaque pointers: LLVM 22 has no others
        gv.global_constant = constant
        if constant:
            gv.linkage = "internal"
        else:
            self.mutable_globals.append(gv)
        align = self.module.decorations_of(inst.result_id, Decoration.Alignment)
        gv.align = align[0].operands[0] if align else ty.get_abi_alignment(self.target_data)
        self._globals[inst.result_id] = gv
        if len(inst.operands) > 1:
            gv.initializer = self.constants.value(inst.operands[1])
        else:
            gv.initializer = ir.Constant(ty, None)
        return gv

    def _layout_workgroup_variables(self) -> None:
        """Static __local variables get fixed offsets in the group's local memory."""
        offset, dynamic = 0, []
        for inst in self.module.globals:
            if is_dynamic_shared(self.module, inst):
                dynamic.append(inst.result_id)  # extern __shared__: sized at launch
            elif inst.opname == "OpVariable" and inst.operands[0] == StorageClass.Workgroup:
                ty = self.types.llvm(self.types.spv(inst.result_type).element)
                align = max(ty.get_abi_alignment(self.target_data), 16)
                offset = (offset + align - 1) // align * align
                self.workgroup_offsets[inst.result_id] = offset
                offset += ty.get_abi_size(self.target_data)
        self.static_local_bytes = offset
        for value_id in dynamic:
            self.workgroup_offsets[value_id] = dynamic_offset(offset)

    def workgroup_variable(self, translator: FunctionTranslator, value_id: int) -> ir.Value:
        if self.abi.native_barriers:
            found = self._globals.get(value_id)
            if found is None and is_dynamic_shared(self.module, self.module.defs[value_id]):
                found = self._globals[value_id] = gpu_dynamic_shared(self.llmodule)
            if found is None:
                inst = self.module.defs[value_id]
                ty = self.types.llvm(self.types.spv(inst.result_type).element)
                name = self.local_symbol("lds", value_id)
                align = max(ty.get_abi_alignment(self.target_data), 16)
                found = self.abi.workgroup_variable(self.llmodule, name, ty, align)
                self._globals[value_id] = found
            return found
        offset = self.workgroup_offsets[value_id]
        return self.abi.workgroup_address(translator.alloca_builder, translator.hidden, offset)

    def _barrier_functions(self) -> set[int]:
        """Functions to translate as step functions: none where the target has barriers."""
        return set() if self.abi.native_barriers else functions_with_barriers(self.module)

    # -- functions -------------------------------------------------------------------

    def declare(self, name: str, fnty: ir.FunctionType) -> ir.Function:
        """An external function (an LLVM intrinsic or a C library function), declared once."""
        return declare(self.llmodule, name, fnty)

    def import_name(self, function_id: int) -> str:
        for deco in self.module.decorations_of(function_id, Decoration.LinkageAttributes):
            if deco.operands[-1] == LinkageType.Import:
                return deco.operands[0]
        return self.module.name_of(function_id)

    def _declare_functions(self, skip: set[int]) -> None:
        hidden = self.abi.hidden_parameters()
        for fn in self.module.functions:
            if not fn.blocks or fn.id in skip:
                continue
            fnty = self.types.llvm(fn.function_type)
            fnty = ir.FunctionType(fnty.return_type, list(fnty.args) + hidden)
            name = self.local_symbol("spv", fn.id)
            llfn = ir.Function(self.llmodule, fnty, name)
            llfn.linkage = "internal"
            if fn.control & FunctionControl.DontInline:
                llfn.attributes.add("noinline")
            self.functions[fn.id] = llfn

    def _isolate_module(self) -> None:
        """Barrier preparation adds ids; give this translation its own tables for them."""
        m = self.module
        self.module = replace(
            m,
            defs=dict(m.defs),
            decorations=dict(m.decorations),
            names=dict(m.names),
        )
        self.types.module = self.module
        self.constants.module = self.module

    def _translate_stepped(
        self, fn_id: int, barrier_functions: set[int]
    ) -> tuple[ir.Function, int, int, dict[str, int]]:
        """Translates kernel ``fn_id`` as a step function; returns it, its frame size, its
        number of barrier continuations and its wavefront fields of KernelSignature."""
        fnty = self.types.llvm(self.module.function(fn_id).function_type)
        # After the hidden parameters: the group's frame arrays, this work-item's index in
        # the group, the group's work-item count, and the state to resume from.
        i64 = ir.IntType(64)
        extra = [ir.PointerType(), i64, i64, ir.IntType(32)]
        params = list(fnty.args) + self.abi.hidden_parameters() + extra
        name = self.local_symbol("spv.step", fn_id)
        llfn = ir.Function(self.llmodule, ir.FunctionType(ir.IntType(32), params), name)
        llfn.linkage = "internal"
        try:
            stepped: SteppedKernel = prepare_stepped_kernel(
                self.module, self.module.function(fn_id), barrier_functions
            )
            fn = stepped.function
            translator = FunctionTranslator(self, fn, llfn, stepped)
            translator.translate()
        except SpirvError as error:
            raise _SteppedError(llfn, error) from error
        waves = {}
        if stepped.gathers:  # the frame arrays the work-group function schedules with
            from .wavefront import WAVE_MASK, WAVE_STATE

            offsets = translator.frame.offset
            waves = {
                "wave_state_offset": offsets[WAVE_STATE],
                "wave_mask_offset": offsets[WAVE_MASK],
            }
        return llfn, translator.frame.bytes, len(stepped.states), waves

    def signatures(self) -> dict[str, KernelSignature] | None:
        """Every kernel's signature without translating function bodies (cheap), or None
        when only a full translation can tell (a barrier kernel's frame size)."""
        with llvm_errors():
            return self._signatures()

    def _signatures(self) -> dict[str, KernelSignature] | None:
        if self._barrier_functions():
            return None
        self._layout_workgroup_variables()
        signatures = {}
        for entry in self.module.entry_points:
            self._check_entry_point(entry)
            signatures[entry.name] = self._signature(entry.name, entry.function_id)
        return signatures

    def has_mutable_globals(self) -> bool:
        """Whether the module has program-scope variables its kernels may write."""
        return any(
            inst.opname == "OpVariable"
            and inst.operands[0] == StorageClass.CrossWorkgroup
            and not self.module.decorations_of(inst.result_id, Decoration.Constant)
            for inst in self.module.globals
        )

    def _check_entry_point(self, entry) -> None:
        if entry.execution_model != ExecutionModel.Kernel:
            raise SpirvError(
                f"entry point '{entry.name}' has execution model "
                f"{ExecutionModel(entry.execution_model).name}; "
                "only Kernel entry points can run",
                entry.offset,
            )

    def translate(self) -> Translation:
        self._layout_workgroup_variables()
        barrier_functions = self._barrier_functions()
        if barrier_functions:
            self._isolate_module()
        self._declare_functions(barrier_functions)
        errors: dict[str, SpirvError] = {}
        for fn in self.module.functions:
            if fn.blocks and fn.id not in barrier_functions:
                llfn = self.functions[fn.id]
                try:
                    FunctionTranslator(self, fn, llfn).translate()
                except SpirvError as error:
                    self._stub(llfn, fn.id, error, errors)
        kernels: dict[str, KernelSignature] = {}
        kernel_functions: dict[str, ir.Function] = {}
        for entry in self.module.entry_points:
            self._check_entry_point(entry)
            if entry.function_id in barrier_functions:
                try:
                    llfn, frame_bytes, states, waves = self._translate_stepped(
                        entry.function_id, barrier_functions
                    )
                except _SteppedError as failed:
                    llfn, frame_bytes, states, waves = failed.llfn, 0, 1, {}  # a step function
                    self._stub(llfn, entry.function_id, failed.error, errors)
                signature = self._signature(entry.name, entry.function_id)
                kernels[entry.name] = replace(
                    signature, frame_bytes=frame_bytes, barrier_states=states, **waves
                )
                kernel_functions[entry.name] = llfn
                continue
            kernels[entry.name] = self._signature(entry.name, entry.function_id)
            kernel_functions[entry.name] = self.functions[entry.function_id]
        return Translation(self.llmodule, kernels, kernel_functions, self.mutable_globals, errors)

    def _stub(
        self, llfn: ir.Function, fn_id: int, error: SpirvError, errors: dict[str, SpirvError]
    ) -> None:
        """Replaces the (partial) body of a function that failed to translate by a call to
        a symbol naming the failure: the other kernels of the module stay usable, and a
        kernel that reaches this function fails at its compile with ``error``."""
        # Under spirvjit.unsupported.: the GPU back end binds every other declaration to
        # its math library (backends/gpu/devicelib.math_calls).
        symbol = f"spirvjit.unsupported.untranslatable.{fn_id}"
        errors[symbol] = error
        llfn.blocks.clear()
        b = ir.IRBuilder(llfn.append_basic_block("untranslatable"))
        b.call(self.declare(symbol, ir.FunctionType(ir.VoidType(), [])), [])
        b.unreachable()

    @functools.cached_property
    def _declared_args(self) -> dict[str, dict[str, list[str]]]:
        """The kernel argument strings of the module (types and qualifiers as declared)."""
        return read_declared_args(self.module)

    def _signature(self, name: str, function_id: int) -> KernelSignature:
        fn = self.module.function(function_id)
        declared = declared_args(self._declared_args, name, len(fn.parameters))
        args = tuple(
            self._kernel_arg(i, p, declared[i] if declared else None)
            for i, p in enumerate(fn.parameters)
        )
        required = hint = None
        for mode in self.module.execution_modes.get(function_id, ()):
            if mode.mode == ExecutionMode.LocalSize:
                required = tuple(mode.operands[:3])
            elif mode.mode == ExecutionMode.LocalSizeHint:
                hint = tuple(mode.operands[:3])
        return KernelSignature(name, args, required, hint, self.static_local_bytes)

    def _kernel_arg(
        self, index: int, param: Instruction, declared: DeclaredArg | None = None
    ) -> KernelArg:
        name = self.module.names.get(param.result_id, f"#{index}")
        spv = self.types.spv(param.result_type)
        td = self.target_data
        if spv.kind == "pointer":
            byval = any(
                d.operands[0] == FunctionParameterAttribute.ByVal
                for d in self.module.decorations_of(param.result_id, Decoration.FuncParamAttr)
            )
            pointee_ty = self.types.llvm(spv.element) if spv.element else ir.IntType(8)
            if byval or spv.storage == StorageClass.Function:
                return KernelArg(
                    index,
                    name,
                    "struct",
                    pointee_ty.get_abi_size(td),
                    pointee_ty.get_abi_alignment(td),
                )
            kind = {
                StorageClass.CrossWorkgroup: "global",
                StorageClass.UniformConstant: "constant",
                StorageClass.Workgroup: "local",
            }.get(spv.storage)
            if kind is None:
                raise SpirvError(
                    f"kernel parameter {name} has storage class {StorageClass(spv.storage).name}",
                    param.offset,
                )
            element_kind, bits, lanes = self._element(spv.element) if spv.element else (None, 8, 1)
            # The declared element type wins over the producer's guess (opaque pointers).
            pointee = declared.pointee() if declared else None
            if pointee is not None:
                element_kind, bits, lanes = pointee
            if element_kind == "int" and bits == 8 and lanes == 1:
                element_kind = None  # char* and void* take any buffer
            # Buffers need the alignment of their scalars only (see ops_memory.lane_alignment).
            align = bits // 8 if element_kind or pointee else pointee_ty.get_abi_alignment(td)
            read_only = kind == "constant" or bool(declared and declared.const)
            read_only = read_only or any(
                d.operands[0] == FunctionParameterAttribute.NoWrite
                for d in self.module.decorations_of(param.result_id, Decoration.FuncParamAttr)
            )
            return KernelArg(
                index, name, kind, 8, max(1, align), element_kind, bits, lanes, read_only
            )
        ty = self.types.llvm(param.result_type)
        element_kind, bits, lanes = self._element(param.result_type)
        return KernelArg(
            index,
            name,
            "value",
            ty.get_abi_size(td),
            ty.get_abi_alignment(td),
            element_kind,
            bits,
            lanes,
        )

    def _element(self, type_id: int) -> tuple[str | None, int, int]:
        spv = self.types.spv(type_id)
        lanes = 1
        if spv.kind == "vector":
            lanes = spv.count
            spv = self.types.spv(spv.element)
        if spv.kind in ("int", "float", "bool"):
            return spv.kind, spv.width, lanes
        return None, 0, lanes


class _SteppedError(Exception):
    """A step function failed to translate: its LLVM function (to stub) and the error."""

    def __init__(self, llfn: ir.Function, error: SpirvError):
        super().__init__(str(error))
        self.llfn, self.error = llfn, error


def translate(
    module: Module,
    abi: TargetABI,
    spec_constants: dict[int, object] | None = None,
    symbol_prefix: str = "spirvjit",
) -> Translation:
    """Translates every function and entry point of ``module`` for ``abi``.

    ``symbol_prefix`` makes the names of externally visible symbols unique to
    this program.
    """
    with llvm_errors():
        return ModuleTranslator(module, abi, spec_constants, symbol_prefix).translate()


@contextlib.contextmanager
def llvm_errors() -> Iterator[None]:
    """LLVM's own errors (llvmlite raises RuntimeError), met while translating a module
    the checks let through, as SpirvError: what LLVM cannot take is not run."""
    try:
        yield
    except RuntimeError as exc:
        if isinstance(exc, RecursionError):
            raise SpirvError("the module's types or expressions nest too deeply") from None
        raise SpirvError(f"LLVM rejected the translated module: {exc}") from None
