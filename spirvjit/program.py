"""Programs and kernels: the objects users hold and launch."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Mapping, Sequence

from . import cache, config, hip_launch, jit
from .arguments import ArgumentPacker
from .backends import backend
from .cache.key import KernelKey
from .device import Device
from .errors import LaunchError
from .spirv.module import Module
from .spirv.reader import read_module
from .stream import check_stream
from .target import Target, host_target
from .translate.hip_prepass import is_hip_module, prepare_module
from .translate.module import Translation
from .translate.signature import KernelSignature

log = logging.getLogger("spirvjit")

# Build options that change the code the JIT makes (as clBuildProgram takes them with
# SPIR-V): part of the cache key. -cl-fp32-correctly-rounded-divide-sqrt keeps float
# division and sqrt correctly rounded on GPUs, which otherwise use OpenCL C's 2.5/3 ulp.
JIT_OPTIONS = frozenset({"-cl-fp32-correctly-rounded-divide-sqrt"})
# HIP's float division and sqrt are correctly rounded (clang's default for HIP,
# -fhip-fp32-correctly-rounded-divide-sqrt); its SPIR-V does not say so, and OpenCL's
# bounds let AMD GPUs divide with a bare v_rcp_f32 (2.5 ulp).
_HIP_OPTIONS = ("-cl-fp32-correctly-rounded-divide-sqrt",)


# The specialization of a debug-mode kernel and the backend option that translates it
# (backends/cpu/debugload.py).
_DEBUG_VARIANT = ("spirvjit:debug", ("debug", "1"))


class Program:
    """A SPIR-V module ready to run: kernels are JIT-compiled at their first launch.

    ``native_objects`` maps kernel names to object code already built for ``target``
    with this module and these spec constants (a unified binary's native variants);
    those kernels skip the JIT. ``native_variants`` maps specializations
    (``KernelKey.specialization``, e.g. a GPU's launch facts) to such maps, for code
    specialised for some launches. ``other_targets`` maps other targets to the same (a
    unified binary's GPU variants: specialization -> kernel -> object code), used when
    a kernel runs on such a device.
    ``offload_code``: a clang offload bundle's native ``gfx*`` entries the native-code
    policy allowed (``offload_bundle.BundleEntry``), run on the AMD GPUs they match.
    """

    def __init__(
        self,
        spirv: bytes,
        spec_constants: Mapping[int, object] | None = None,
        name: str = "program",
        *,
        target: Target | None = None,
        native_objects: Mapping[str, bytes] | None = None,
        native_variants: Mapping[tuple, Mapping[str, bytes]] | None = None,
        other_targets: Mapping[Target, Mapping[tuple, Mapping[str, bytes]]] | None = None,
        options: Sequence[str] = (),
        offload_code: Sequence = (),
    ):
        unknown = [o for o in options if o not in JIT_OPTIONS]
        if unknown:
            known = ", ".join(sorted(JIT_OPTIONS))
            raise ValueError(f"unknown build option {unknown[0]!r}; the JIT takes: {known}")
        self.options: tuple[str, ...] = tuple(sorted(set(options)))
        self._spirv = bytes(spirv)
        self.name = name
        self.module: Module = read_module(self._spirv)
        prepare_module(self.module)  # HIP's __syncthreads (amdgcnspirv), producer fixes
        if is_hip_module(self.module):
            self.options = tuple(sorted({*self.options, *_HIP_OPTIONS}))
        self.spec_constants = dict(spec_constants or {})
        self.spirv_digest = hashlib.sha256(self._spirv).hexdigest()
        digest = hashlib.sha256(self.spirv_digest.encode())
        digest.update(repr(sorted(self.spec_constants.items())).encode())
        # Symbols are named after the module and its spec constants, so object code
        # built for them (cached, or shipped in a unified binary) links the same way.
        self.symbol_prefix = f"spirvjit.{digest.hexdigest()[:16]}"
        self.target: Target = target or host_target()
        # Native code by specialization: () the generic code, right for every launch.
        self._native: dict[tuple, dict[str, bytes]] = {
            tuple(k): dict(v) for k, v in (native_variants or {}).items()
        }
        self._native[()] = dict(native_objects or {})
        # Native objects for other targets (a unified binary's GPU variants), used by
        # for_target.
        self._other_targets = dict(other_targets or {})
        self.offload_code = tuple(offload_code)
        # Guards this object's dictionaries, held briefly, never across a translation or a
        # compile: those take a lock of their own per translation (``_translations``) and
        # per kernel variant (``_once``), so that different kernels and variants of
        # the program (the tiered JIT's quick and optimized tiers of one kernel) compile
        # at the same time, each exactly once.
        self._lock = threading.RLock()
        # Translations by their backend options (() the program's own; checked, debug
        # and quick-tier ones on the CPU).
        self._translations: dict[tuple[str, ...], Translation] = {}
        # Seconds of a translation not yet counted by a compile (the next compile of
        # that translation reports them as its "translate" stage).
        self._translate_seconds: dict[tuple[str, ...], float] = {}
        self._once_locks: dict[object, threading.Lock] = {}
        self._kernels: dict[str, Kernel] = {}
        self._for_targets: dict[Target, Program] = {}
        # What backends keep per device for this program (GPU variables' state).
        self.device_state: dict[Device, object] = {}
        self.origins: dict[str, str] = {}  # kernel -> "native", "memory", "disk" or "compile"
        self.kernel_names = tuple(e.name for e in self.module.entry_points)
        # Entry points and spec constants are checked now; function bodies are translated
        # at the first compile, so a kernel found in a cache never pays for translation.
        signatures, self.has_mutable_globals = jit.quick_look(
            self.module, self.target, self.spec_constants, self.symbol_prefix
        )
        if signatures is None:
            variant = backend(self.target.kind).signature_variant(self.target)
            signatures = self._translation_for(variant).kernels
        self._signatures = signatures

    @property
    def spirv(self) -> bytes:
        """The SPIR-V module's bytes."""
        return self._spirv

    def kernel(self, name: str) -> Kernel:
        """The kernel ``name``; raises LaunchError listing the kernels when there is none."""
        with self._lock:
            found = self._kernels.get(name)
            if found is None:
                if name not in self._signatures:
                    # A source-level name (saxpy_kernel, reduce<float, 256>) of a mangled one.
                    found = self._kernels[name] = self._kernel_by_source_name(name)
                    return found
                found = self._kernels[name] = Kernel(self, name, self._signatures[name])
            return found

    def _kernel_by_source_name(self, name: str) -> Kernel:
        from .kernel_names import resolve

        try:
            mangled = resolve(self.kernel_names, name)
        except KeyError as exc:
            raise LaunchError(exc.args[0], name) from None
        if mangled is not None:
            return self.kernel(mangled)
        raise LaunchError(
            "no kernel of that name; this program has " + (", ".join(self.kernel_names) or "none"),
            name,
        )

    def global_variable(self, name: str, dtype=None, *, device: Device | None = None):
        """The program-scope variable ``name`` (HIP ``__device__`` / ``__constant__``,
        OpenCL ``__global``; source or mangled name) on ``device`` (default: where
        launches naming no device run), to write before launches and read after them
        (hipMemcpyToSymbol's and hipMemcpyFromSymbol's role). ``dtype`` reinterprets its
        bytes. Every form has ``read(stream=None)``, ``write(value, stream=None)``,
        ``name``, ``dtype``, ``shape`` and ``nbytes``; on the host CPU it is besides a
        NumPy view of the variable itself, on a GPU a ``DeviceVariable`` whose read and
        write copy. See ``device_globals.py``."""
        if device is None:
            device = backend(self.target.kind).default_device(self.target)
            if device is None:
                raise LaunchError(f"no {self.target.name} device is present", name)
        return device.backend.global_variable(self, name, device, dtype)

    def __getattr__(self, name: str) -> Kernel:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.kernel(name)
        except LaunchError:
            raise AttributeError(name) from None

    @property
    def signatures(self) -> dict[str, KernelSignature]:
        """Every kernel's signature (arguments, work-group size hints), by name."""
        return dict(self._signatures)

    def kernel_key(self, name: str, specialization: tuple = ()) -> KernelKey:
        """The cache key of kernel ``name`` on this program's target (and of its variant
        specialised for launch values, see ``object_code``)."""
        return KernelKey.make(
            self.spirv_digest,
            name,
            self.spec_constants,
            self.target,
            jit.key_options(self.target) + self.options,
            specialization,
        )

    def for_target(self, target: Target) -> Program:
        """This program compiled for ``target`` (this program itself for its own target)."""
        if target == self.target:
            return self
        with self._lock:
            found = self._for_targets.get(target)
            if found is None:
                native = dict(self._other_targets.get(target) or {})
                found = Program(
                    self._spirv,
                    self.spec_constants,
                    self.name,
                    target=target,
                    native_objects=native.pop((), None),
                    native_variants=native,
                    options=self.options,
                    offload_code=self.offload_code,
                )
                self._for_targets[target] = found
            return found

    def translation(self) -> Translation:
        """The whole module translated for the target (once per program)."""
        return self._variant_translated(())

    def _once(self, key: object) -> threading.Lock:
        """The lock that makes the work named ``key`` (a translation, a kernel variant's
        compile) happen once while other work of the program goes on."""
        with self._lock:
            found = self._once_locks.get(key)
            if found is None:
                found = self._once_locks[key] = threading.Lock()
            return found

    def translation_for(self, specialization: tuple) -> Translation:
        """The translation the kernel variant ``specialization`` is compiled from (checked,
        debug, quick tier; () the program's own), once per program."""
        return self._translation_for(specialization)

    @staticmethod
    def _translation_options(specialization: tuple) -> tuple[str, ...]:
        """The backend options of the translation the variant ``specialization`` needs."""
        return tuple(
            option
            for option, variant in (
                ("spirvjit:check", ("check", "1")),
                _DEBUG_VARIANT,
                ("spirvjit:quick", jit.QUICK_TIER),
            )
            if variant in specialization
        )

    def _translation_for(self, specialization: tuple) -> Translation:
        """The translation a kernel variant is compiled from."""
        return self._variant_translated(self._translation_options(specialization))

    def _variant_translated(self, extra: tuple[str, ...]) -> Translation:
        """The module translated with backend options ``extra`` (checked mode:
        ``spirvjit:check``; debug mode: ``spirvjit:debug``; the quick tier:
        ``spirvjit:quick``; none: the program's own), once per program; other
        translations and compiles of the program go on meanwhile."""
        found = self._translations.get(extra)
        if found is not None:
            return found
        with self._once(("translate", extra)):
            found = self._translations.get(extra)
            if found is None:
                times = jit.StageTimes()
                found = times.run(
                    "translate",
                    jit.translate_program,
                    self.module,
                    self.target,
                    self.spec_constants,
                    self.symbol_prefix,
                    (*self.options, *extra),
                )
                with self._lock:
                    self._translations[extra] = found
                    # The next compile from it reports them as its stage.
                    self._translate_seconds[extra] = times.total
            return found

    def object_code(
        self,
        name: str,
        times: jit.StageTimes | None = None,
        specialization: tuple[tuple[str, str], ...] = (),
        compile: bool = True,
    ) -> tuple[bytes | None, str]:
        """Native object code of kernel ``name`` for the target, and where it came from.

        Order: a native object given at load ("native"), the cache ("memory": compiled
        earlier by this process; "disk": the persistent cache; not asked when
        SPIRVJIT_DUMP is set), the JIT ("compile"; the result is stored in the cache).
        ``specialization``: launch values the backend bakes into this variant (e.g. the
        largest work-group it is launched with, on AMD GPUs). ``compile=False``: only
        what is in hand (native or cached); ``(None, "")`` where it would be compiled.
        """
        times = times or jit.StageTimes()
        if name not in self._signatures:
            # A source-level name, or the LaunchError that lists the kernels.
            name = self.kernel(name).name
        with self._lock:
            obj = self._native.get(specialization, {}).get(name)
        if obj is not None:
            return obj, "native"
        key = self.kernel_key(name, specialization)
        directory = config.dump_dir()
        # The quick tier is never cached: the cache holds optimized code only.
        transient = jit.QUICK_TIER in specialization
        # One compile per variant at a time (a second caller finds its result in the
        # cache); other kernels and variants compile meanwhile.
        with self._once(("compile", name, specialization)):
            # Dumps come from compiling, so SPIRVJIT_DUMP skips the cache lookup.
            hit = None if directory or transient else times.run("cache", cache.lookup, key)
            if hit is not None:
                return hit.obj, hit.origin
            if not compile:
                return None, ""
            # Dumps are named after the kernel, the program and the variant, so that
            # same-named kernels of different programs do not overwrite each other.
            stem = f"{name}.{self.spirv_digest[:12]}.{self.target.name}"
            stem += "".join(f".{k}-{v}" for k, v in specialization)
            if directory is not None:
                from .spirv.disasm import disassemble

                jit.dump(directory, stem, {"spv": self._spirv, "spvasm": disassemble(self.module)})
            symbol = jit.kernel_symbol(self.module, self.symbol_prefix, name, self.target)
            translation = self._translation_for(specialization)
            with self._lock:
                seconds = self._translate_seconds.pop(self._translation_options(specialization), 0)
            if seconds:
                times.seconds["translate"] = seconds
            obj = jit.compile_kernel(
                translation, self.target, symbol, name, times, specialization, stem
            )
            if not transient:
                cache.store(key, obj)
            return obj, "compile"

    def native_specializations(self, name: str) -> tuple[tuple[tuple[str, str], ...], ...]:
        """The specializations of kernel ``name`` given at load as native code (a unified
        binary's), () the generic one among them if it is."""
        with self._lock:
            return tuple(spec for spec, objects in self._native.items() if name in objects)

    def assembly(self, name: str, specialization: tuple[tuple[str, str], ...] = ()) -> str:
        """Kernel ``name`` compiled for the target now, as assembly (x86-64, GCN, PTX);
        ``specialization`` as for ``object_code``."""
        if name not in self._signatures:
            # A source-level name, or the LaunchError that lists the kernels.
            name = self.kernel(name).name
        symbol = jit.kernel_symbol(self.module, self.symbol_prefix, name, self.target)
        translation = self._translation_for(specialization)
        return jit.kernel_assembly(translation, self.target, symbol, specialization)

    def refuse_object_code(
        self,
        name: str,
        origin: str,
        why: str,
        times: jit.StageTimes | None = None,
        specialization: tuple[tuple[str, str], ...] = (),
    ) -> tuple[bytes, str]:
        """Object code of ``name`` that a backend refused to load (``origin`` "native": a
        unified binary's; "memory"/"disk": the cache's), e.g. wrong symbols or it does not
        link: drops it (one warning; a cache entry is removed) and returns the next
        candidate, as ``object_code`` does, in the end compiled from the SPIR-V."""
        if origin == "native":
            with self._lock:
                self._native.get(specialization, {}).pop(name, None)
            log.warning(
                "spirvjit: %r: native code of kernel %r refused (%s); JIT-compiling it "
                "from the SPIR-V",
                self.name,
                name,
                why,
            )
        else:
            with self._once(("compile", name, specialization)):
                cache.discard(self.kernel_key(name, specialization), why)
        return self.object_code(name, times, specialization)


class Kernel:
    """One kernel of a Program. Call it to launch it (synchronously)."""

    def __init__(self, program: Program, name: str, signature: KernelSignature):
        self.program = program
        self.name = name
        self.signature = signature
        self._arguments = ArgumentPacker(signature)  # binds keyword arguments
        self.compile_seconds: float | None = None
        self._loaded: dict[Device, object] = {}  # device -> the backend's LoadedKernel
        # Held while this kernel is loaded (its own lock, not the program's: the program's
        # other kernels load meanwhile, and so does this kernel's optimized tier).
        self._load_lock = threading.Lock()
        self._default = None  # the LoadedKernel of launches that name no device

    @property
    def num_args(self) -> int:
        return len(self.signature.args)

    @property
    def optimized_seconds(self) -> float | None:
        """Tiered (CPU, SPIRVJIT_TIERED): seconds the background compile of the optimized
        tier took for launches that name no device, None while it runs or before the
        kernel is loaded (``compile_seconds`` is then the quick tier's). Without tiering,
        or when the kernel was not tiered: ``compile_seconds``."""
        loaded = self._default
        if loaded is None:
            return None
        return getattr(loaded, "optimized_seconds", loaded.compile_seconds)

    def wait_optimized(self, timeout: float | None = None) -> bool:
        """Waits until every tiered load of this kernel runs its optimized code (see
        SPIRVJIT_TIERED); False if ``timeout`` seconds passed first. At once without
        tiering."""
        for loaded in list(self._loaded.values()):
            wait = getattr(loaded, "wait_optimized", None)
            if wait is not None and not wait(timeout):
                return False
        return True

    def compile(self, device: Device | None = None, *, quick: bool = False) -> None:
        """JIT-compiles and loads the kernel now instead of at its first launch: its best
        code, the optimized tier, whether tiered or not (a first launch on the CPU runs
        quickly compiled code while the optimized code compiles in the background,
        backends/cpu/tiered.py). After a tiered first launch it waits for the optimized
        tier. ``quick=True``: loads what a first launch would and returns (on the CPU,
        tiered: the quick tier, the optimized one still compiling; ``wait_optimized``)."""
        if device is None:
            device = self._default_device()
            loaded = self._default = self._loaded_on(device, optimized=not quick)
        else:
            loaded = self._loaded_on(device, optimized=not quick)
        prepare = getattr(loaded, "prepare", None)
        if prepare is not None:
            # A GPU kernel compiles a variant at the launch that runs it: compile() asks
            # for the generic one (right for any launch) now.
            prepare()
            self.compile_seconds = loaded.compile_seconds
        wait = getattr(loaded, "wait_optimized", None)
        if wait is not None and not quick:  # a tiered load made by a launch before
            wait()

    def __call__(
        self,
        *args,
        global_size=None,
        local_size=None,
        global_offset=None,
        device: Device | None = None,
        grid=None,
        block=None,
        shared_mem: int = 0,
        check: bool | None = None,
        stream=None,
        **kwargs,
    ) -> None:
        """Runs the kernel over ``global_size`` work-items and returns when it is done.

        Arguments in order, or by parameter name as keywords. ``device``: one of
        ``spirvjit.devices()``; when None, the host CPU for a program built for a CPU,
        the first GPU of the program's target otherwise. On a GPU, NumPy arrays are
        copied to the device and the writable ones back. HIP's form: ``grid`` blocks of
        ``block`` work-items instead of global/local sizes, ``shared_mem`` bytes of
        dynamic shared memory (``hip_launch.py``; kernel parameters named grid, block,
        shared_mem, check or stream are passed by position). ``check``: run the bounds-checked
        variant (host CPU only; default: SPIRVJIT_CHECK), see docs/debugging.md.
        ``stream``: a ``spirvjit.Stream`` to queue the launch on (asynchronous on a GPU;
        arguments must be device memory): see ``stream.py``.
        """
        if kwargs:
            args = self._arguments.bind(args, kwargs)
        if grid is not None or block is not None or global_size is None:
            global_size, local_size = hip_launch.launch_sizes(
                self.name, global_size, local_size, grid, block
            )
        if stream is not None:
            device = check_stream(stream, device, self.name)
        if check if check is not None else config.check():
            if shared_mem:
                hip_launch.check_shared_mem(self.signature, shared_mem)
            checked = self._checked(device)
            checked.launch(args, global_size, local_size, global_offset, shared_mem)
            return
        if device is None:
            loaded = self._default or self._default_loaded()
        else:
            loaded = self._loaded.get(device) or self._loaded_on(device)
        # Only a launch on a stream passes one: LoadedKernels may predate streams.
        on_stream = {"stream": stream} if stream is not None else {}
        if shared_mem:
            hip_launch.check_shared_mem(self.signature, shared_mem)
            loaded.launch(args, global_size, local_size, global_offset, shared_mem, **on_stream)
        else:
            loaded.launch(args, global_size, local_size, global_offset, **on_stream)

    def _default_device(self) -> Device:
        target = self.program.target
        # Finding the device asks the drivers for a GPU target: once per kernel.
        device = backend(target.kind).default_device(target)
        if device is None:
            raise LaunchError(f"no {target.name} device is present to run on", self.name)
        return device

    def _default_loaded(self):
        self._default = self._loaded_on(self._default_device())
        return self._default

    def _loaded_on(self, device: Device, optimized: bool = False):
        """The kernel loaded on ``device``: compiled and loaded once, whichever threads
        launch it first (they wait for the one that loads it); ``optimized``: as
        ``compile()`` asks, the optimized code now (``Backend.load_optimized``) where no
        launch has loaded it yet."""
        found = self._loaded.get(device)
        if found is not None:
            return found
        with self._load_lock:
            found = self._loaded.get(device)
            if found is None:
                owner = device.backend
                load = owner.load_optimized if optimized else owner.load
                found = load(self.program, self.name, device)
                self._loaded[device] = found
                with self.program._lock:
                    self.program.origins[self.name] = found.origin
                self.compile_seconds = found.compile_seconds
                if config.debug():
                    log.info(
                        "spirvjit: %s %s for %s: %s",
                        found.origin,
                        self.name,
                        device.target,
                        found.times,
                    )
            return found

    def _checked(self, device: Device | None):
        """The checked-mode variant on ``device`` (a CPU), loaded once."""
        if device is None:
            target = self.program.target
            device = backend(target.kind).default_device(target)
            if device is None:
                raise LaunchError(f"no {target.name} device is present to run on", self.name)
        key = (device, "check")
        found = self._loaded.get(key)
        if found is None:
            with self._load_lock:
                found = self._loaded.get(key)
                if found is None:
                    found = device.backend.load_checked(self.program, self.name, device)
                    self._loaded[key] = found
        return found

    def __repr__(self) -> str:
        args = ", ".join(a.describe() for a in self.signature.args)
        return f"<spirvjit kernel {self.name}({args})>"
