"""``spirvjit precompile``: JIT-compile installed packages' kernels before their first call.

For every unified binary of the named packages (see ``spirvjit.packaging``), every
module and every target (by default each device present: the host CPU and the GPUs
spirvjit finds), each kernel's native code is compiled into the persistent kernel cache
(docs/cache.md), so the first launch in any later process loads it from disk. With
``--aot`` it goes into the ``.ubin`` itself as a native variant, where the file is
writable (else into the cache, said in the summary).

On a GPU each kernel is built twice, as a unified binary ships it: its generic code
(right for every launch) and its code for the common launch (whole groups, no global
offset, 32-bit ids; ``ubin.build.launch_variants_of``), which most launches run.

Kernels already served need no work: those a valid native variant of the binary covers
for that target, and those whose cache entry exists and verifies. A second run does
nothing and says so. The rest are compiled in worker processes (``-j``; processes, not
threads, because the JIT holds the GIL for parts of its work), with a progress bar.
Precompiling uses the modules' default spec constants: what ``spirvjit.load`` and
``load_package_kernels`` use without ``spec_constants``.

Exit status: 0 when every kernel is served, 1 when a kernel failed to compile, a
package has no kernels or the cache is unusable, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .errors import EXIT_BAD_INPUT, EXIT_OK
from .target import Target


@dataclass
class Group:
    """The kernels of one module of one binary on one target (their code specialised for
    ``launch_facts``, () the generic code), sorted by what they need."""

    path: Path
    module: int
    target: Target
    kernels: tuple[str, ...]
    spirv_sha256: str
    launch_facts: tuple[str, ...] = ()
    native: list[str] = field(default_factory=list)
    cached: dict[str, bytes] = field(default_factory=dict)
    todo: list[str] = field(default_factory=list)
    compiled: dict[str, bytes] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)


@dataclass
class Report:
    groups: list[Group]
    seconds: float = 0.0
    workers: int = 1
    written: list[Path] = field(default_factory=list)  # --aot: binaries given variants
    not_writable: list[Path] = field(default_factory=list)  # --aot: kept in the cache instead

    def count(self, name: str) -> int:
        return sum(len(getattr(g, name)) for g in self.groups)

    @property
    def kernels(self) -> int:
        return sum(len(g.kernels) for g in self.groups)


class PrecompileError(Exception):
    """Nothing can be precompiled (no such package, no usable cache); the message says why."""


# --- what to compile ---------------------------------------------------------------------------


def find_binaries(packages: Sequence[str], all_packages: bool = False) -> list[tuple[str, Path]]:
    """(package, .ubin path) of every binary of ``packages`` (or of every package that
    declares kernels); an argument that is a ``.ubin`` file stands for itself."""
    from . import packaging

    names = list(packages)
    if all_packages:
        names += [p for p in packaging.all_kernel_packages() if p not in names]
    found: list[tuple[str, Path]] = []
    for name in names:
        if name.endswith(packaging.SUFFIX) and os.path.isfile(name):
            found.append((name, Path(name).resolve()))
            continue
        binaries = packaging.binaries_of(name)
        if not binaries:
            where = (
                "is not installed"
                if not packaging.package_directories(name)
                else (
                    f"declares no kernels (no entry point in {packaging.ENTRY_POINT_GROUP}, "
                    f"no .ubin in {name}/kernels/ or {name}/)"
                )
            )
            raise PrecompileError(f"package {name!r} {where}")
        found += [(name, path) for path in binaries]
    return found  # empty only for --all with no package declaring kernels: nothing to do


def resolve_targets(text: str) -> list[Target]:
    """``auto``/``all``: each device present (host CPU and GPUs); ``cpu``: the host CPU;
    otherwise target names (``host,x86-64-v3,gfx942,sm_90``). ValueError for a bad name."""
    from .target import host_target, parse_targets

    if text in ("auto", "all"):
        from .device import devices

        return list(dict.fromkeys(d.target for d in devices()))
    if text == "cpu":
        return [host_target()]
    return list(dict.fromkeys(parse_targets(text)))


def _native_kernels(
    binary, module: int, target: Target, spirv: bytes, launch_facts: tuple[str, ...] = ()
) -> set[str]:
    """Kernels that a valid native variant of ``binary`` serves on ``target``, chosen as
    ``spirvjit.load`` chooses (exact or compatible variant for the host CPU; the exact
    target and ``launch_facts`` for a GPU; none for another CPU target, which load never
    uses)."""
    import hashlib

    from .target import host_target
    from .ubin.api import choice_for
    from .ubin.select import spec_key, stale_reason

    if target == host_target():
        choice = choice_for(binary, module, spirv, {})
        return set(choice.variant.objects) if choice.variant is not None else set()
    if target.kind == "cpu":
        return set()
    digest = hashlib.sha256(spirv).hexdigest()
    for v in binary.variants:
        if (
            v.module == module
            and v.target == target
            and v.launch_facts == launch_facts
            and v.problem is None
            and stale_reason(v, digest, spec_key({})) is None
        ):
            return set(v.objects)
    return set()


def plan(binaries: Sequence[Path], targets: Sequence[Target], aot: bool = False) -> list[Group]:
    """Every (binary, module, target) with its kernels sorted into native, cached, todo.

    A kernel is cached when its disk entry reads and verifies (``DiskCache.load``:
    unlike a launch's lookup, this records no event and counts no hit, since nothing
    was launched). With ``aot`` the cached code is kept for the variant, and a module
    is "native" only when a variant serves all of its kernels (else all are compiled
    for the target's own variant).
    """
    import hashlib

    from .backends.gpu.abi import launch_specialization
    from .program import Program
    from .ubin.build import launch_variants_of
    from .ubin.reader import read_file

    disk = _disk_cache()
    groups = []
    for path in binaries:
        binary = read_file(path)
        for module in range(binary.module_count):
            spirv = binary.module(module)
            digest = hashlib.sha256(spirv).hexdigest()
            program = Program(spirv, {}, name=binary.name)
            kernels = program.kernel_names
            for target, facts in ((t, facts) for t in targets for facts in launch_variants_of(t)):
                group = Group(path, module, target, kernels, digest, facts)
                native = _native_kernels(binary, module, target, spirv, facts)
                if aot and not native.issuperset(kernels):
                    native = set()
                on_target = program.for_target(target)
                specialization = launch_specialization(facts)
                for name in kernels:
                    if name in native:
                        group.native.append(name)
                        continue
                    key = on_target.kernel_key(name, specialization)
                    obj = disk.load(key).obj if disk else None
                    if obj is None:
                        group.todo.append(name)
                    else:
                        group.cached[name] = obj if aot else b""
                groups.append(group)
    return groups


# --- compiling ----------------------------------------------------------------------------------

_worker_programs: dict[tuple[str, int, Target], object] = {}


def compile_one(
    path: str,
    module: int,
    target: tuple[str, str, str, str],
    kernel: str,
    want_object: bool,
    launch_facts: tuple[str, ...] = (),
) -> tuple[str, bytes | None, str | None]:
    """Compiles ``kernel`` (in a worker process; its code for ``launch_facts``) into the
    cache: (origin, object code when ``want_object``, error text or None). Never raises:
    a failure is a result."""
    from .backends.gpu.abi import launch_specialization
    from .program import Program
    from .ubin.reader import read_file

    key = (path, module, Target(*target))
    try:
        program = _worker_programs.get(key)
        if program is None:
            binary = read_file(path)
            program = Program(binary.module(module), {}, name=binary.name, target=key[2])
            _worker_programs[key] = program
        obj, origin = program.object_code(kernel, None, launch_specialization(launch_facts))
    except Exception as exc:  # a compiler crash must not stop the other kernels
        message = str(exc).splitlines()[0] if str(exc) else ""
        return "failed", None, f"{type(exc).__name__}: {message}"
    return origin, obj if want_object else None, None


def _identity(target: Target) -> tuple[str, str, str, str]:
    return (target.kind, target.triple, target.arch, target.features)


def run(
    groups: list[Group],
    jobs: int,
    aot: bool = False,
    progress: Callable[[int, str], None] | None = None,
) -> int:
    """Compiles every group's ``todo`` kernels over ``jobs`` processes (in this process
    when ``jobs`` is 1 or there is one kernel); returns the processes used."""
    work = [(g, name) for g in groups for name in g.todo]
    if not work:
        return 0

    def record(group: Group, name: str, result: tuple) -> None:
        origin, obj, error = result
        if error is not None:
            group.failed[name] = error
        elif origin in ("memory", "disk"):  # another process stored it meanwhile
            group.cached[name] = obj or b""
        else:
            group.compiled[name] = obj or b""
        if progress is not None:
            progress(1, name)

    def args(group: Group, name: str) -> tuple:
        target = _identity(group.target)
        return (str(group.path), group.module, target, name, aot, group.launch_facts)

    if jobs <= 1 or len(work) == 1:
        for group, name in work:
            record(group, name, compile_one(*args(group, name)))
        return 1
    import concurrent.futures
    import multiprocessing

    workers = min(jobs, len(work))
    # spawn: a fresh interpreter per worker, not a fork of this one (LLVM is initialised
    # here, and forking a process that has threads is unsafe).
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        futures = {pool.submit(compile_one, *args(g, n)): (g, n) for g, n in work}
        for future in concurrent.futures.as_completed(futures):
            group, name = futures[future]
            try:
                result = future.result()
            except Exception as exc:  # the worker died (killed, out of memory)
                result = ("failed", None, f"worker process failed: {exc}")
            record(group, name, result)
    return workers


def write_variants(report: Report) -> None:
    """--aot: adds each complete group's objects to its binary as a native variant."""
    import dataclasses

    from . import __version__
    from .cache.key import compiler_digest, llvm_version
    from .ubin.format import Variant
    from .ubin.reader import read_file
    from .ubin.writer import write_file

    by_path: dict[Path, list[Variant]] = {}
    for g in report.groups:
        if g.native or g.failed or not (g.compiled or g.cached):
            continue
        objects = {**g.cached, **g.compiled}
        if set(objects) != set(g.kernels) or not all(objects.values()):
            continue
        by_path.setdefault(g.path, []).append(
            Variant(
                target=g.target,
                module=g.module,
                spirv_sha256=g.spirv_sha256,
                spec_constants=(),
                compiler_digest=compiler_digest(),
                llvm_version=llvm_version(),
                spirvjit_version=__version__,
                objects=objects,
                launch_facts=g.launch_facts,
            )
        )
    for path, variants in by_path.items():
        if not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
            report.not_writable.append(path)
            continue
        contents = read_file(path).contents()
        merged = {v.identity(): v for v in contents.variants}
        merged.update({v.identity(): v for v in variants})
        write_file(dataclasses.replace(contents, variants=tuple(merged.values())), path)
        report.written.append(path)


def precompile(
    packages: Sequence[str] = (),
    *,
    all_packages: bool = False,
    targets: Sequence[Target] | None = None,
    jobs: int | None = None,
    aot: bool = False,
    progress: bool | None = None,
) -> Report:
    """Precompiles the kernels of ``packages`` (see the module docstring) and reports.

    ``targets``: default every device present. ``jobs``: worker processes (default: the
    cores this process may use); they start with multiprocessing's "spawn", so a script
    calling this with ``jobs`` > 1 must do so under ``if __name__ == "__main__":``.
    Raises PrecompileError when there is nothing to work on or nowhere to put the code.
    """
    from .progress import Progress

    if not aot:
        _check_cache()
    binaries = [path for _, path in find_binaries(packages, all_packages)]
    targets = list(targets) if targets is not None else resolve_targets("auto")
    started = time.perf_counter()
    groups = plan(list(dict.fromkeys(binaries)), targets, aot)
    report = Report(groups)
    todo = report.count("todo")
    with Progress(todo, "spirvjit precompile", enabled=progress if todo else False) as bar:
        report.workers = run(groups, jobs or _cores(), aot, lambda n, name: bar.advance(n, name))
    if aot:
        write_variants(report)
    report.seconds = time.perf_counter() - started
    return report


def _cores() -> int:
    """The cores this process may run on (the default worker count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not every platform has affinity masks
        return os.cpu_count() or 1


def _disk_cache():
    """The persistent cache directory launches use, or None when it is off or unusable."""
    from . import config
    from .cache.disk import CacheUnavailable, DiskCache

    if not config.cache_enabled():
        return None
    try:
        return DiskCache(config.cache_dir(), config.DEFAULT_CACHE_MAX_SIZE)
    except CacheUnavailable:
        return None


def _check_cache() -> None:
    from . import config
    from .cache.disk import CacheUnavailable, DiskCache

    if not config.cache_enabled():
        raise PrecompileError(
            "the persistent kernel cache is off (SPIRVJIT_CACHE=0), so there is nowhere to "
            "keep precompiled kernels; unset it, or use --aot to write them into the .ubin files"
        )
    try:
        DiskCache(config.cache_dir(), config.DEFAULT_CACHE_MAX_SIZE)
    except CacheUnavailable as exc:
        raise PrecompileError(str(exc)) from None


# --- the command --------------------------------------------------------------------------------


def register_precompile(subparsers: argparse._SubParsersAction) -> None:
    """``spirvjit precompile [PACKAGE ... | --all] [--device D] [-j N] [--aot]``."""
    parser = subparsers.add_parser(
        "precompile",
        help="compile installed packages' kernels into the kernel cache now",
        description="JIT-compile every kernel of the named installed packages (their "
        "spirvjit.kernels entry points, or .ubin files in PACKAGE/kernels/), or of .ubin "
        "files given by path, for every local device, into the persistent kernel cache, so "
        "that no first launch pays for the JIT. Kernels already cached or shipped as native "
        "code are skipped: a second run does nothing. See docs/packaging.md.",
    )
    parser.add_argument("packages", nargs="*", metavar="PACKAGE", help="import or dist name")
    parser.add_argument(
        "--all", action="store_true", help="every installed package that declares kernels"
    )
    parser.add_argument(
        "--device",
        default="auto",
        metavar="auto|cpu|TARGETS",
        help="auto (default; also 'all'): every device present; cpu: the host CPU; or "
        "target names, e.g. host,gfx942,sm_90",
    )
    parser.add_argument(
        "-j", "--jobs", type=int, default=None, metavar="N", help="worker processes (all cores)"
    )
    parser.add_argument(
        "--aot",
        action="store_true",
        help="write native variants into the .ubin files (where writable) instead of the cache",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress, no summary")
    parser.set_defaults(handler=_run_precompile, error=parser.error)


def _run_precompile(args: argparse.Namespace) -> int:
    if not args.packages and not args.all:
        args.error("name a PACKAGE (or a .ubin file), or give --all")
    if args.jobs is not None and args.jobs < 1:
        args.error("-j must be at least 1")
    try:
        targets = resolve_targets(args.device)
    except ValueError as exc:
        args.error(str(exc))
    if not args.aot:
        from .target import host_target

        for target in targets:
            if target.kind == "cpu" and target != host_target():
                print(
                    f"spirvjit precompile: note: {target.name} is not this machine's CPU "
                    "target, so launches here never use its cache entries; give --aot to "
                    "ship them in the .ubin as a variant the loader can choose",
                    file=sys.stderr,
                )
    try:
        report = precompile(
            args.packages,
            all_packages=args.all,
            targets=targets,
            jobs=args.jobs,
            aot=args.aot,
            progress=False if args.quiet else None,
        )
    except PrecompileError as exc:
        print(f"spirvjit precompile: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for g in report.groups:
        for name, error in sorted(g.failed.items()):
            print(
                f"spirvjit precompile: FAILED {name} ({g.path.name}, {g.target.name}): {error}",
                file=sys.stderr,
            )
    if not args.quiet:
        print(summary(report))
    return EXIT_BAD_INPUT if report.count("failed") else EXIT_OK


def summary(report: Report) -> str:
    """What was done, in two or three lines."""
    if not report.groups:
        return "nothing to do: no installed package declares kernels (spirvjit.kernels)"
    paths = {g.path for g in report.groups}
    targets = sorted({g.target.name for g in report.groups})
    what = (
        f"{report.kernels} kernel builds ({len(paths)} binar{'y' if len(paths) == 1 else 'ies'}"
        f" x {len(targets)} target{'s' if len(targets) != 1 else ''}: {', '.join(targets)})"
    )
    compiled, cached, native = (report.count(n) for n in ("compiled", "cached", "native"))
    failed = report.count("failed")
    if compiled == 0 and failed == 0 and not report.written:
        lines = [f"nothing to do: all {what} are already cached ({cached}) or native ({native})"]
    else:
        rate = compiled / report.seconds if report.seconds else 0.0
        plural = "es" if report.workers != 1 else ""
        speed = f" ({rate:.1f} kernels/s, {report.workers} process{plural})" if compiled else ""
        lines = [
            f"precompiled {what}: {compiled} compiled, {cached} already cached, "
            f"{native} native, {failed} failed in {report.seconds:.1f} s{speed}"
        ]
    for path in report.written:
        lines.append(f"wrote native variants into {path}")
    for path in report.not_writable:
        lines.append(f"{path} is not writable: its kernels are in the cache instead")
    return "\n".join(lines)
