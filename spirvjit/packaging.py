"""Kernels shipped inside installed Python packages: how a package declares its unified
binaries, and how they are found at run time (``load_package_kernels``) and at install
time (``spirvjit precompile``). See docs/packaging.md.

A package declares its kernels in one of two ways:

* **Entry point** (preferred; ``spirvjit precompile --all`` finds it): in the group
  ``spirvjit.kernels``, a name (usually the package's) whose value is ``package`` or
  ``package:directory``, the package (or a directory inside it) holding ``.ubin``
  files::

      [project.entry-points."spirvjit.kernels"]
      mylib = "mylib:kernels"

* **Convention**: ``.ubin`` files in ``<package>/kernels/`` or directly in
  ``<package>/``, shipped as package data.

A kernel set's name is its file name without ``.ubin`` (``kernels/ops.ubin`` is
``ops``; one in a subdirectory is ``sub/ops``).
"""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import importlib.util
import pathlib
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from . import config
from .program import Program

ENTRY_POINT_GROUP = "spirvjit.kernels"
SUFFIX = ".ubin"
CONVENTIONAL_DIRS = ("kernels", "")  # searched in this order when nothing is declared

_loaded: dict[tuple, Program] = {}
_loaded_lock = threading.Lock()
_warmed: set[str] = set()
_warmups: list = []  # the background precompiles started (subprocess.Popen)


@dataclass(frozen=True)
class KernelSource:
    """Where one package keeps its unified binaries: a package and a directory in it."""

    package: str  # the import name, e.g. "mylib"
    directory: str  # relative to the package; "" for the package's own directory
    declared_by: str  # "entry point NAME of DIST" or "convention"


def _normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _entry_points() -> list[importlib.metadata.EntryPoint]:
    return list(importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def _from_entry_point(ep: importlib.metadata.EntryPoint) -> KernelSource:
    dist = getattr(ep, "dist", None)
    by = f"entry point {ep.name!r}" + (f" of {dist.name}" if dist is not None else "")
    directory = (ep.attr or "").replace(".", "/") if ep.attr else ""
    return KernelSource(ep.module, directory, by)


def declared_sources(package: str | None = None) -> list[KernelSource]:
    """Kernel sources declared by entry points: all of them, or those of ``package``
    (a distribution name, an entry point name or the import name the value names)."""
    found = []
    for ep in _entry_points():
        dist = getattr(ep, "dist", None)
        names = {_normalize(ep.name), _normalize(ep.module.split(".")[0])}
        if dist is not None:
            names.add(_normalize(dist.name))
        if package is None or _normalize(package) in names:
            found.append(_from_entry_point(ep))
    return found


def sources_of(package: str) -> list[KernelSource]:
    """Where ``package`` keeps its kernels: its entry points, else the convention."""
    declared = declared_sources(package)
    if declared:
        return declared
    return [KernelSource(package, d, "convention") for d in CONVENTIONAL_DIRS]


def package_directories(package: str) -> list[pathlib.Path]:
    """The directories of an import package, found without importing it (a top-level
    package's code does not run; a dotted name's parents are not imported either)."""
    top, *rest = package.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return [pathlib.Path(p, *rest) for p in spec.submodule_search_locations]


def binaries_of(package: str) -> list[pathlib.Path]:
    """Every ``.ubin`` file ``package`` ships, on the file system (for precompile).

    Entry-point directories are searched recursively; the conventional ones only at
    their top (``<package>/`` holds code, not only kernels).
    """
    found: dict[pathlib.Path, None] = {}
    for source in sources_of(package):
        for root in package_directories(source.package):
            directory = root / source.directory
            if not directory.is_dir():
                continue
            pattern = "*" + SUFFIX
            matches = (
                directory.glob(pattern)
                if source.declared_by == "convention"
                else directory.rglob(pattern)
            )
            for path in sorted(matches):
                if path.is_file():
                    found[path.resolve()] = None
        if found and source.declared_by == "convention":
            break  # kernels/ wins over the package's top directory
    return list(found)


def all_kernel_packages() -> list[str]:
    """The import packages every installed entry point of ``spirvjit.kernels`` names."""
    return sorted({s.package for s in declared_sources()})


def _resource(package: str, name: str):
    """The ``Traversable`` of kernel set ``name`` in ``package`` (FileNotFoundError)."""
    file_name = name if name.endswith(SUFFIX) else name + SUFFIX
    parts = [p for p in file_name.split("/") if p]
    if any(p in (".", "..") for p in parts) or not parts:
        raise ValueError(f"kernel set name {name!r} must be a relative name without '..'")
    tried = []
    for source in sources_of(package):
        base = importlib.resources.files(source.package)
        for part in [p for p in source.directory.split("/") if p]:
            base = base / part
        candidate = base
        for part in parts:
            candidate = candidate / part
        tried.append(f"{source.package}/{'/'.join(filter(None, [source.directory, *parts]))}")
        if candidate.is_file():
            return candidate
    available = sorted({_set_name(p, package) for p in binaries_of(package)})
    raise FileNotFoundError(
        f"no kernel set {name!r} in package {package!r} (looked for {', '.join(tried)}); "
        + (f"it has: {', '.join(available)}" if available else "it ships no .ubin files")
    )


def _set_name(path: pathlib.Path, package: str) -> str:
    for source in sources_of(package):
        for root in package_directories(source.package):
            base = root / source.directory
            if path.is_relative_to(base.resolve()):
                return path.relative_to(base.resolve()).as_posix()[: -len(SUFFIX)]
    return path.stem


def load_package_kernels(
    package: str,
    name: str,
    spec_constants: Mapping[int, object] | None = None,
    *,
    module: int | None = None,
) -> Program:
    """The Program of kernel set ``name`` (``name.ubin``) shipped by installed ``package``.

    Found through the package's ``spirvjit.kernels`` entry points, else in
    ``<package>/kernels/`` or ``<package>/`` (see docs/packaging.md). The same arguments
    return the same Program (its kernels stay compiled). Raises FileNotFoundError (saying
    where it looked and what the package has), ModuleNotFoundError for an unknown
    package, BinaryFormatError for a damaged file.

    With ``SPIRVJIT_WARMUP=1`` the first call for a package starts ``spirvjit precompile``
    of it in a background process (see ``warmup``).
    """
    from .ubin.api import load

    name = name.removesuffix(SUFFIX)
    spec = tuple(sorted((spec_constants or {}).items()))
    key = (package, name, spec, module)
    with _loaded_lock:
        found = _loaded.get(key)
    if found is not None:
        return found
    resource = _resource(package, name)
    if isinstance(resource, pathlib.Path):
        program = load(resource, spec_constants, module=module)
    else:  # inside a zip file: read it into memory
        program = load(resource.read_bytes(), spec_constants, module=module)
    with _loaded_lock:
        program = _loaded.setdefault(key, program)
    if config.warmup_enabled():
        warmup([package])
    return program


def warmup(packages: Iterable[str]):
    """Starts ``spirvjit precompile PACKAGE...`` in a background process, at low priority,
    once per package per process; returns the ``subprocess.Popen`` (None if nothing new).

    It never blocks a launch: the child fills the persistent cache, and a launch that
    comes first compiles its kernel itself as it would have anyway (no lock is shared).
    Its output goes to /dev/null; failures show in the child's exit status only.
    """
    import subprocess
    import sys

    with _loaded_lock:
        new = [p for p in packages if p not in _warmed]
        _warmed.update(new)
    if not new:
        return None
    code = (
        "import os, sys\n"
        "if hasattr(os, 'nice'): os.nice(10)\n"
        "from spirvjit.cli import main\n"
        "sys.exit(main(['precompile', '--quiet', *sys.argv[1:]]))\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, *new],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    with _loaded_lock:
        _warmups.append(child)
    return child


def reset() -> None:
    """Forgets loaded Programs and started warm-ups (for tests)."""
    with _loaded_lock:
        _loaded.clear()
        _warmed.clear()
        _warmups.clear()
