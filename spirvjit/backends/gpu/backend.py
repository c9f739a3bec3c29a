"""What the AMD and NVIDIA backends share: translation with an entry point per kernel,
device math libraries, O3, and launching through a driver context.

One kernel per code object, as on the CPU: a first launch pays only for its kernel,
and the unified binary stores native code per kernel. The vendors add their ABI, how
the product is made (``emit``), where their math library is and their driver.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Mapping

import llvmlite.binding as llvm

from ...device import Device
from ...errors import LaunchError
from ...target import Target, parse_target
from ...translate.kernel_ir import kernel_ir, parse_ir
from ...translate.module import Translation, translate
from ..base import Backend
from . import devicelib
from .abi import FACT_PREFIX, GpuABI
from .driver import DeviceContext, GpuDeviceInfo
from .entry import DYNAMIC_SHARED, emit_entry
from .launch import GpuKernel
from .variables import ProgramVariables, export_names, rename_for_export

log = logging.getLogger("spirvjit")

# The tools read what spirvjit generated: a failure is spirvjit's bug, not the user's.
OURS = "; this is a spirvjit bug"


@functools.cache
def target_machine(target: Target) -> llvm.TargetMachine:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    return llvm.Target.from_triple(target.triple).create_target_machine(
        cpu=target.arch, features=target.features, opt=3, reloc="pic", codemodel="default"
    )


_FACT_DECLARATION = re.compile(
    r'^declare i1 @"' + re.escape(FACT_PREFIX) + r'(\w+)"\(\)[^\n]*$', re.M
)


def define_launch_facts(text: str, specialization=()) -> str:
    """Defines the launch-fact functions the work-item queries call (abi.LAUNCH_FACTS):
    true for the facts ``specialization`` names, false for the others (the generic
    variant, right for every launch)."""
    values = dict(specialization)

    def define(match: re.Match) -> str:
        value = "true" if values.get(match[1]) == "1" else "false"
        return (
            f'define internal i1 @"{FACT_PREFIX}{match[1]}"() alwaysinline {{\n  ret i1 {value}\n}}'
        )

    return _FACT_DECLARATION.sub(define, text)


class GpuBackend(Backend):
    abi_class: type[GpuABI]
    vendor: str  # Device.kind of its devices: "nvidia", "amd"
    module_flag: str  # the llvm.module.flags entry every kernel module carries
    library_hint: str  # how to install the math library where it is missing

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._contexts: dict[int, DeviceContext] = {}

    # ----- what a vendor provides ----------------------------------------------------

    def device_library(self) -> devicelib.DeviceLibrary | None:
        """The vendor's math library in bitcode, or None where it is not installed."""
        raise NotImplementedError

    def driver_devices(self) -> list[GpuDeviceInfo]:
        """The devices the vendor's driver reports ([] without a driver)."""
        raise NotImplementedError

    def make_context(self, index: int) -> DeviceContext:
        """A driver context on device ``index``."""
        raise NotImplementedError

    def group_limit(self, signature) -> int | None:
        """The largest group a kernel's default build may be launched with, where the
        vendor builds for a limit (None: any the device allows). Larger launches use a
        variant specialised with ("max_group_size", the device's limit)."""
        return None

    # ----- compiler side -------------------------------------------------------------

    def abi(self, target: Target, options: tuple[str, ...] = ()) -> GpuABI:
        return self.abi_class(target.triple, str(target_machine(target).target_data), options)

    def key_options(self, target: Target) -> tuple[str, ...]:
        library = self.device_library()
        return (f"devicelib={library.kind}:{library.fingerprint}" if library else "devicelib=none",)

    def translate_program(
        self, module, target: Target, spec_constants: Mapping, prefix: str, options=()
    ) -> Translation:
        """Translates the module for ``target``, binds its math calls to the device
        library and adds an entry point per kernel."""
        gpu = self.abi(target, options)
        translation = translate(module, gpu, spec_constants, prefix)
        rename_for_export(translation, module, prefix)
        devicelib.bind(translation.module, self.device_library(), target.name)
        # HIP's extern __shared__ arrays are the only users of the dynamic shared memory
        # before the entry points add theirs (__local arguments).
        extern_shared = DYNAMIC_SHARED in translation.module.globals
        for name, fn in translation.kernel_functions.items():
            emit_entry(translation.module, gpu, fn, translation.kernels[name], extern_shared)
        return translation

    def kernel_symbol(self, module, prefix: str, kernel: str) -> str:
        return kernel  # the entry point the driver looks up by the kernel's name

    def kernel_ir(
        self, translation: Translation, target: Target, symbol: str, specialization=()
    ) -> str:
        """IR text of the entry point and what it reaches. Every program-scope variable
        of the program becomes part of each kernel's code object, exported, whether the
        kernel uses it or not (``variables.py`` keeps the copies one value)."""
        exported = tuple(gv.name for gv in translation.mutable_globals)
        text = kernel_ir(translation.module, symbol, [], exported)
        text = define_launch_facts(text, specialization)
        # The next free metadata id: the kernel's own nodes (!fpmath, ...) come first.
        flag = 1 + max((int(n) for n in re.findall(r"^!(\d+) =", text, re.M)), default=-1)
        return f"{text}!llvm.module.flags = !{{!{flag}}}\n!{flag} = {self.module_flag}\n"

    def optimize(self, module: llvm.ModuleRef, target: Target, symbol: str) -> llvm.ModuleRef:
        """Links the device library if the kernel calls it, then runs O3 with only the
        entry point and the program-scope variables visible (the variables stay
        exported, so the host finds them and O3 does not fold them into constants)."""
        # The translator's only non-internal variables are the program's mutable ones.
        exported = {
            gv.name
            for gv in module.global_variables
            if not gv.is_declaration and gv.linkage.name == "external"
        }
        missing = [
            fn.name
            for fn in module.functions
            if fn.is_declaration and not fn.name.startswith("llvm.") and fn.name != symbol
        ]
        library = self.device_library()
        if missing:
            if library is None:
                raise devicelib.missing_library(missing[0], target.name, self.library_hint)
            linked = devicelib.library_module(
                library, target.triple, module.data_layout, module._context
            )
            module.link_in(linked)
        for fn in module.functions:
            if not fn.is_declaration and fn.name != symbol:
                fn.linkage = "internal"
        for gv in module.global_variables:
            if gv.name in exported:
                # Exported but not preemptible (as clang marks HIP's device variables):
                # accessed directly rather than through the GOT.
                gv.visibility = "protected"
            elif not gv.is_declaration and gv.name != DYNAMIC_SHARED:
                gv.linkage = "internal"
        tm = target_machine(target)
        # clang's -O3: with the vectorizers. SLP packs independent float lanes into
        # <2 x float> operations, which gfx90a/gfx942 run as one v_pk_* instruction.
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(module, pb)
        text, changed = self.after_o3(str(module))
        return parse_ir(text, module.name) if changed else module

    def after_o3(self, text: str) -> tuple[str, int]:
        """Rewrites of the optimized IR that the vendor's back end needs and O3 would
        undo: the text, and how many were made (the module is parsed again only then)."""
        return text, 0

    def assembly(self, module: llvm.ModuleRef, target: Target) -> str:
        return target_machine(target).emit_assembly(module)

    # ----- runtime side --------------------------------------------------------------

    def devices(self) -> list[Device]:
        found = []
        for info in self.driver_devices():
            try:
                target = parse_target(info.arch)
            except ValueError as exc:
                log.warning("spirvjit: skipping GPU %d (%s): %s", info.index, info.name, exc)
                continue
            found.append(
                Device(
                    name=info.name,
                    kind=info.vendor,
                    target=target,
                    compute_units=info.compute_units,
                    max_work_group_size=info.max_work_group_size,
                    local_memory_bytes=info.local_memory_bytes,
                    index=info.index,
                )
            )
        return found

    def context(self, device: Device) -> DeviceContext:
        """The driver context of ``device``, made once per process."""
        with self._lock:
            found = self._contexts.get(device.index)
            if found is None:
                found = self._contexts[device.index] = self.make_context(device.index)
            return found

    def load(self, program, kernel: str, device: Device) -> GpuKernel:
        from ...jit import StageTimes

        times = StageTimes()
        ours = program.for_target(device.target)
        # The generic variant only where it is in hand (native or cached): otherwise the
        # first launch compiles just the variant it runs (most run a specialised one).
        image, origin = ours.object_code(kernel, times, compile=False)
        if image is None:
            ours.translation()  # translation errors still surface here
            origin = "compile"
        signature = program.signatures.get(kernel)
        if signature is None:
            raise LaunchError("no kernel of that name", kernel)
        context = self.context(device)

        def load_variant(variant: tuple[tuple[str, str], ...]):
            image, _origin = ours.object_code(kernel, times if not variant else None, variant)
            what = ", ".join(f"{k}={v}" for k, v in variant) or "any launch"
            return context.load_module(image, f"kernel {kernel} specialised for {what}")

        return GpuKernel(
            device,
            context,
            image,
            signature,
            origin,
            times,
            group_limit=self.group_limit(signature),
            load_variant=load_variant,
            variables=self.variables(ours, device),
            shipped=ours.native_specializations(kernel) if origin == "native" else (),
        )

    def variables(self, program, device: Device) -> ProgramVariables | None:
        """The state of ``program``'s variables on ``device`` (made once; None for a
        program without mutable program-scope variables)."""
        if not program.has_mutable_globals:
            return None
        with program._lock:
            found = program.device_state.get(device)
            if found is None:
                symbols = {
                    symbol: tuple(dict.fromkeys((symbol, program.module.names.get(i) or symbol)))
                    for i, symbol in export_names(program.module).items()
                }
                describe = f"program {program.name!r} on {device.name}"
                found = ProgramVariables(self.context(device), symbols, describe)
                kernel = program.kernel_names[0] if program.kernel_names else None
                if kernel is not None:
                    found.set_first_load(lambda: program.kernel(kernel).compile(device))
                program.device_state[device] = found
            return found

    def global_variable(self, program, name: str, device: Device, dtype=None):
        """A ``DeviceVariable``: reads and writes copy (``variables.py``)."""
        from ...device_globals import DeviceVariable, variable_type

        ours = program.for_target(device.target)
        variable_id, view_dtype, shape = variable_type(ours, name, dtype)
        symbol = export_names(ours.module)[variable_id]
        state = self.variables(ours, device)
        return DeviceVariable(name, symbol, view_dtype, shape, device, state)

    def allocate(self, device: Device, nbytes: int) -> int:
        return self.context(device).alloc(nbytes)

    def free(self, device: Device, address: int) -> None:
        self.context(device).free(address)

    def copy_to_device(
        self, device: Device, dst: int, src_host_address: int, nbytes: int, stream=None
    ) -> None:
        self.context(device).copy_to_device(dst, src_host_address, nbytes, stream)

    def copy_to_host(
        self, device: Device, dst_host_address: int, src: int, nbytes: int, stream=None
    ) -> None:
        self.context(device).copy_to_host(dst_host_address, src, nbytes, stream)

    def create_stream(self, device: Device) -> int:
        return self.context(device).create_stream()

    def destroy_stream(self, device: Device, stream: int) -> None:
        self.context(device).destroy_stream(stream)

    def synchronize_stream(self, device: Device, stream: int) -> None:
        self.context(device).synchronize_stream(stream)

    def create_event(self, device: Device) -> int:
        return self.context(device).create_event()

    def record_event(self, device: Device, event: int, stream: int) -> None:
        self.context(device).record_event(event, stream)

    def synchronize_event(self, device: Device, event: int) -> None:
        self.context(device).synchronize_event(event)

    def event_elapsed_ms(self, device: Device, start: int, end: int) -> float:
        return self.context(device).elapsed_ms(start, end)

    def destroy_event(self, device: Device, event: int) -> None:
        self.context(device).destroy_event(event)
