"""The key of a compiled kernel: everything that can change its native code.

Used by the caches (a key part that differs explains a miss) and by unified
binaries (a native variant is valid for the keys it was built with).
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path

from ..target import Target


@functools.cache
def compiler_digest() -> str:
    """Digest of the code that turns SPIR-V into native code.

    Covers the translator, the OpenCL.std lowering (today's device library) and the
    backends, so an edited or upgraded spirvjit never reuses code it would now
    compile differently, even between two builds with the same version number.
    """
    root = Path(__file__).resolve().parent.parent  # the spirvjit package
    digest = hashlib.sha256()
    files = [root / "jit.py", root / "spirv" / "grammar.py"]
    for folder in ("translate", "backends"):
        files += sorted((root / folder).rglob("*.py"))
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@functools.cache
def llvm_version() -> str:
    import llvmlite
    import llvmlite.binding as llvm

    return f"{'.'.join(map(str, llvm.llvm_version_info))} (llvmlite {llvmlite.__version__})"


@dataclass(frozen=True, slots=True)
class KernelKey:
    spirv_digest: str
    entry_point: str
    spec_constants: tuple[tuple[int, str], ...]
    triple: str
    cpu: str
    features: str
    options: tuple[str, ...]
    # Launch values baked into the code, e.g. (("max_group_size", "1024"),) on AMD GPUs.
    specialization: tuple[tuple[str, str], ...]
    spirvjit_version: str
    llvm_version: str
    compiler_digest: str

    @classmethod
    def make(
        cls,
        spirv_digest: str,
        entry_point: str,
        spec_constants: dict[int, object],
        target: Target,
        options: tuple[str, ...] = (),
        specialization: tuple[tuple[str, str], ...] = (),
    ) -> KernelKey:
        from .. import __version__

        return cls(
            spirv_digest=spirv_digest,
            entry_point=entry_point,
            spec_constants=tuple(sorted((k, repr(v)) for k, v in spec_constants.items())),
            triple=target.triple,
            cpu=target.arch,
            features=target.features,
            options=tuple(options),
            specialization=tuple(specialization),
            spirvjit_version=__version__,
            llvm_version=llvm_version(),
            compiler_digest=compiler_digest(),
        )

    def parts(self) -> dict[str, object]:
        """The key's parts in readable form (what a cache entry records)."""
        return asdict(self)

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.parts(), sort_keys=True).encode()).hexdigest()
