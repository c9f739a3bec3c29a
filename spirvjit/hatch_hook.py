"""The hatchling build hook: ``[[tool.spirvjit.kernels]]`` built into ``.ubin`` files in
the wheel, as ``spirvjit.setuptools_hook`` does for setuptools (same configuration; see
docs/packaging.md). A project enables it as hatchling's custom build hook, with a
``hatch_build.py`` of one line, ``from spirvjit.hatch_hook import get_build_hook``, and::

    [build-system]
    requires = ["hatchling", "spirvjit"]
    build-backend = "hatchling.build"

    [tool.hatch.build.hooks.custom]

(spirvjit registers no ``hatch`` entry point: hatchling would import spirvjit, and
llvmlite, in every build of an environment that has it.)
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

from .setuptools_hook import build_kernel_set, read_config


class SpirvjitBuildHook(BuildHookInterface):
    """Builds each kernel set into a temporary directory and adds it to the wheel at
    ``<package>/<directory>/<name>.ubin``. Sdists are left alone: they ship the sources."""

    PLUGIN_NAME = "spirvjit"

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel":
            return
        root = Path(self.root)
        kernel_sets = read_config(root / "pyproject.toml")
        if not kernel_sets:
            return
        self._spirvjit_tmp = tempfile.mkdtemp(prefix="spirvjit-hatch-")
        for kernel_set in kernel_sets:
            inside = Path(*kernel_set.package.split(".")) / kernel_set.relative_output()
            output = Path(self._spirvjit_tmp) / inside
            self.app.display_info(f"spirvjit: building {kernel_set.name} -> {inside}")
            build_kernel_set(kernel_set, root, output)
            build_data["force_include"][str(output)] = inside.as_posix()

    def finalize(self, version: str, build_data: dict, artifact_path: str) -> None:
        tmp = getattr(self, "_spirvjit_tmp", None)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def get_build_hook() -> type[SpirvjitBuildHook]:
    """For a ``hatch_build.py`` used as hatchling's custom build hook."""
    return SpirvjitBuildHook
