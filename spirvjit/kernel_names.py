"""Kernels found by their source names: ``saxpy_kernel`` for ``_Z12saxpy_kernelfPKfPfi``.

HIP and C++ kernels keep their Itanium-mangled names as SPIR-V entry point names. A user
asks for the name in the source: the plain name (``saxpy_kernel``), the qualified one
(``ns::saxpy_kernel``) or a template instantiation (``reduce<float, 256>``, spaces
optional). Names are demangled with llvm-cxxfilt-22 (exact for every mangling); without
it, with a small reader of plain and namespaced names (no templates).
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence

from .toolchain import find_tool

_SOURCE_NAME = re.compile(r"(\d+)")


_LITERAL_SUFFIX = re.compile(r"(?<=[<,])(-?\d+)(?:ull|ul|ll|u|l)(?=[,>])")


def _normalize(name: str) -> str:
    """A spelling-insensitive form: no spaces, and integer template arguments without
    the suffix llvm-cxxfilt prints for unsigned ones (``reduce<float,256>`` for
    ``reduce<float, 256u>``)."""
    return _LITERAL_SUFFIX.sub(r"\1", re.sub(r"\s+", "", name))


def demangle_names(names: Sequence[str]) -> dict[str, str]:
    """Mangled name -> its demangled name without parameters, for the mangled ones."""
    mangled = [n for n in names if n.startswith("_Z")]
    if not mangled:
        return {}
    tool = find_tool("llvm-cxxfilt")
    if tool is not None:
        proc = subprocess.run(
            [tool, "--no-params"],
            input="\n".join(mangled),
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        lines = proc.stdout.splitlines()
        if proc.returncode == 0 and len(lines) == len(mangled):
            return {m: d for m, d in zip(mangled, lines, strict=True) if d != m}
    found = {}
    for name in mangled:
        plain = _simple_demangle(name)
        if plain is not None:
            found[name] = plain
    return found


def _simple_demangle(name: str) -> str | None:
    """``_Z3fooPi`` -> ``foo``, ``_ZN2ns3fooEPi`` -> ``ns::foo``; None for anything else."""
    pos, parts = 2, []
    nested = name.startswith("_ZN")
    if nested:
        pos = 3
    while True:
        match = _SOURCE_NAME.match(name, pos)
        if not match:
            return None
        length = int(match.group(1))
        parts.append(name[match.end() : match.end() + length])
        pos = match.end() + length
        if not nested or name.startswith("E", pos):
            break
    if name.startswith("I", pos) or (nested and not name.startswith("E", pos)):
        return None  # a template instantiation: needs llvm-cxxfilt
    return "::".join(parts)


def aliases(kernel_names: Sequence[str]) -> dict[str, list[str]]:
    """Every source-level spelling (normalized) -> the kernels it may mean.

    A demangled name ``ns::reduce<float, 256>`` gives ``ns::reduce<float,256>``,
    ``reduce<float,256>``, ``ns::reduce`` and ``reduce``; the last two are ambiguous
    when several instantiations or overloads exist.
    """
    table: dict[str, list[str]] = {}
    for mangled, demangled in demangle_names(kernel_names).items():
        # Template functions print their return type first: "void reduce<float, 256>".
        full = _normalize(_strip_return_type(demangled))
        spellings = {full, _unqualified(full)}
        bare = _without_template_args(full)
        spellings |= {bare, _unqualified(bare)}
        for spelling in spellings:
            table.setdefault(spelling, []).append(mangled)
    return table


def resolve(kernel_names: Sequence[str], name: str) -> str | None:
    """The kernel ``name`` means, or None; raises KeyError naming the candidates when it
    is ambiguous (several overloads or instantiations)."""
    if name in kernel_names:
        return name
    found = aliases(kernel_names).get(_normalize(name))
    if not found:
        return None
    if len(found) > 1:
        raise KeyError(
            f"{name!r} is ambiguous: it names {', '.join(found)}; "
            "use the instantiated name or the mangled one"
        )
    return found[0]


def _strip_return_type(demangled: str) -> str:
    """Drops a leading return type outside any <...> ("void f<int>" -> "f<int>")."""
    depth = 0
    for i, ch in enumerate(demangled):
        if ch in "<(":
            depth += 1  # "(anonymous namespace)" has a space of its own
        elif ch in ">)":
            depth -= 1
        elif ch == " " and depth == 0 and not demangled[:i].endswith(("operator", ",")):
            return demangled[i + 1 :]
    return demangled


def _without_template_args(name: str) -> str:
    """``ns::reduce<float,256>`` -> ``ns::reduce`` (only a trailing argument list)."""
    if not name.endswith(">"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        if name[i] == ">":
            depth += 1
        elif name[i] == "<":
            depth -= 1
            if depth == 0:
                return name[:i]
    return name


def _unqualified(name: str) -> str:
    """The last ``::`` component, template arguments included."""
    depth, cut = 0, 0
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0 and name.startswith("::", i):
            cut = i + 2
    return name[cut:]
