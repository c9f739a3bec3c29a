"""The probes of the known bugs: inactive now that the bugs are fixed, and (for the
translator producer's) active again, so the tester's explanations come back, if a fix is
undone."""

from __future__ import annotations

import pytest

from spirvjit.frontend import opencl

from .classify import KNOWN, PROBES

TRANSLATOR_BUGS = ("tr-i3", "tr-order", "tr-decoration")


def _needs_translator() -> None:
    from spirvjit.toolchain import find_tool

    for tool in ("clang15", "llvm-spirv"):
        if not find_tool(tool):
            pytest.skip(f"{tool} not installed")


def test_every_known_bug_has_a_probe():
    assert {k.key for k in KNOWN} == set(PROBES)


@pytest.mark.parametrize("key,producer", [(k.key, p) for k in KNOWN for p in k.producers])
def test_probe_is_inactive_once_fixed(key, producer):
    # Every bug listed is fixed in this build: a probe that still reports one would have
    # the tester explain away findings (item2's probe once read past its output array).
    _needs_translator()
    assert PROBES[key](producer) is False


UNDONE = {
    "tr-i3": ("widen_odd_integers", lambda text: (text, 0)),
    "tr-order": ("fix_translator_spirv", lambda spirv: (spirv, 0)),
    "tr-decoration": ("copy_conversion_results", lambda text: (text, 0)),
}


@pytest.mark.parametrize("key", TRANSLATOR_BUGS)
def test_translator_probe_sees_the_bug_when_the_fix_is_undone(key, monkeypatch):
    _needs_translator()
    # The source cache's key knows the front end's files, not a patched function.
    monkeypatch.setenv("SPIRVJIT_SOURCE_CACHE", "0")
    name, undo = UNDONE[key]
    monkeypatch.setattr(opencl, name, undo)
    assert PROBES[key]("translator") is True
