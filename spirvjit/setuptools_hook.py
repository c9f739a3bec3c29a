"""Building a package's kernels into ``.ubin`` package data when setuptools builds it.

A package's ``pyproject.toml`` names the hook and its kernel sets (see docs/packaging.md)::

    [build-system]
    requires = ["setuptools>=64", "spirvjit"]
    build-backend = "setuptools.build_meta"

    [tool.setuptools.cmdclass]
    build_py = "spirvjit.setuptools_hook.build_py"

    [[tool.spirvjit.kernels]]
    package = "mylib"                 # the import package that ships the binary
    name = "ops"                      # written as mylib/kernels/ops.ubin
    sources = ["kernels/ops.cl"]      # from the project root: .cl .hip .spv .spvasm .ll .bc
    options = ["-DTILE=16"]           # optional: clang options
    targets = ["x86-64-v3"]           # optional: native variants (host, gfx942, sm_90, ...)
    directory = "kernels"             # optional: where in the package (default "kernels")
    embed_source = false              # optional
    launch_variants = "common"        # optional: GPU code for the common launch too, or "none"

``build_py`` runs setuptools' own, then builds every kernel set into the build
directory (so it lands in the wheel), or into the source tree for an editable install.
The bytes are reproducible: the same sources, options, targets and toolchain give the
same file (the unified binary records no times or directories; see docs/ubin.md).
HIP sources go through the HIP front end first and enter the binary as SPIR-V.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from setuptools.command.build_py import build_py as _build_py

KINDS = (".cl", ".hip", ".spv", ".spvasm", ".ll", ".bc")


@dataclass(frozen=True)
class KernelSet:
    """One ``[[tool.spirvjit.kernels]]`` table, checked."""

    package: str
    name: str
    sources: tuple[str, ...]
    options: tuple[str, ...] = ()
    targets: tuple[str, ...] = ()
    directory: str = "kernels"
    embed_source: bool = False
    launch_variants: str = "common"  # ubin.build.LAUNCH_VARIANTS

    def relative_output(self) -> Path:
        """The binary's path inside the package's directory."""
        return Path(self.directory, f"{self.name}.ubin")


def _load_toml(path: Path) -> dict:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        try:
            import tomli as tomllib
        except ImportError:
            from setuptools.extern import tomli as tomllib  # vendored by setuptools
    with open(path, "rb") as f:
        return tomllib.load(f)


def _strings(table: Mapping, key: str, where: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}: {key} must be a list of strings")
    return tuple(value)


def read_config(pyproject: str | os.PathLike) -> list[KernelSet]:
    """The kernel sets of ``[[tool.spirvjit.kernels]]`` (ValueError naming a bad field)."""
    tables = _load_toml(Path(pyproject)).get("tool", {}).get("spirvjit", {}).get("kernels", [])
    if not isinstance(tables, list):
        raise ValueError(
            "[tool.spirvjit] kernels must be an array of tables ([[tool.spirvjit.kernels]])"
        )
    sets = []
    known = {
        "package",
        "name",
        "sources",
        "options",
        "targets",
        "directory",
        "embed_source",
        "launch_variants",
    }
    for i, table in enumerate(tables):
        where = f"[[tool.spirvjit.kernels]] #{i + 1}"
        unknown = set(table) - known
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        for key in ("package", "name"):
            if not isinstance(table.get(key), str) or not table[key]:
                raise ValueError(f"{where}: {key} is required (a string)")
        sources = _strings(table, "sources", where)
        if not sources:
            raise ValueError(f"{where}: sources must name at least one file")
        for source in sources:
            if not source.endswith(KINDS):
                raise ValueError(f"{where}: {source}: expected one of {', '.join(KINDS)}")
        directory = table.get("directory", "kernels")
        if (
            not isinstance(directory, str)
            or Path(directory).is_absolute()
            or ".." in Path(directory).parts
        ):
            raise ValueError(f"{where}: directory must be a relative path inside the package")
        launch_variants = table.get("launch_variants", "common")
        if launch_variants not in ("common", "none"):
            raise ValueError(f'{where}: launch_variants must be "common" or "none"')
        sets.append(
            KernelSet(
                package=table["package"],
                name=table["name"],
                sources=sources,
                options=_strings(table, "options", where),
                targets=_strings(table, "targets", where),
                directory=directory,
                embed_source=bool(table.get("embed_source", False)),
                launch_variants=launch_variants,
            )
        )
    return sets


def build_kernel_set(kernel_set: KernelSet, project_root: Path, output: Path) -> None:
    """Compiles one kernel set's sources into the unified binary ``output``."""
    from .target import parse_target
    from .ubin.build import EXTENSIONS, Input, build_contents
    from .ubin.writer import write_file

    inputs = []
    for source in kernel_set.sources:
        path = project_root / source
        if path.suffix == ".hip" and ".hip" not in EXTENSIONS:  # a build without HIP inputs
            from .frontend.source_cache import hip_to_spirv

            spirv = hip_to_spirv(
                path.read_text(encoding="utf-8"), list(kernel_set.options), filename=path.name
            )
            inputs.append(Input(path.stem + ".spv", spirv, "spv"))
        else:
            inputs.append(Input.from_path(path))
    contents = build_contents(
        inputs,
        options=kernel_set.options,
        targets=[parse_target(t) for t in kernel_set.targets],
        embed_source=kernel_set.embed_source,
        launch_variants=kernel_set.launch_variants,
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    write_file(contents, output)


def build_all(
    kernel_sets: Sequence[KernelSet], project_root: Path, package_dir, announce=print
) -> list[Path]:
    """Builds every kernel set; ``package_dir(package)`` says where a package's files go."""
    written = []
    for kernel_set in kernel_sets:
        output = Path(package_dir(kernel_set.package)) / kernel_set.relative_output()
        announce(
            f"spirvjit: building {kernel_set.name} ({len(kernel_set.sources)} sources) -> {output}"
        )
        build_kernel_set(kernel_set, project_root, output)
        written.append(output)
    return written


class build_py(_build_py):  # noqa: N801 (setuptools' command names are lower case)
    """setuptools' ``build_py`` that also builds ``[[tool.spirvjit.kernels]]`` into
    ``.ubin`` package data (in the build directory, or the source tree when editable)."""

    def run(self) -> None:
        super().run()
        self._spirvjit_outputs = self._build_kernels()

    def _build_kernels(self) -> list[str]:
        root = Path(self.distribution.src_root or os.curdir).resolve()
        pyproject = root / "pyproject.toml"
        if not pyproject.is_file():
            return []
        kernel_sets = read_config(pyproject)
        editable = getattr(self, "editable_mode", False)

        def package_dir(package: str) -> Path:
            if editable:  # the installed package is the source tree itself
                return root / self.get_package_dir(package)
            return Path(self.build_lib, *package.split("."))

        written = build_all(kernel_sets, root, package_dir, lambda m: self.announce(m, 2))
        return [str(p) for p in written]

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = super().get_outputs(include_bytecode)
        return outputs + [p for p in getattr(self, "_spirvjit_outputs", []) if p not in outputs]
