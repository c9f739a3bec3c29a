"""Progress of long work (spirvjit/progress.py) and the build's progress callback."""

from __future__ import annotations

import io

import pytest

from spirvjit import progress
from spirvjit.progress import Progress
from spirvjit.toolchain import find_tool


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_few_lines_and_always_the_last(monkeypatch):
    monkeypatch.delenv("SPIRVJIT_PROGRESS", raising=False)
    stream = io.StringIO()
    with Progress(100, "work", stream=stream) as bar:
        for _ in range(100):
            bar.advance(1, "item")
    lines = stream.getvalue().splitlines()
    assert 1 <= len(lines) <= 3  # at most one per LOG_INTERVAL, plus the end
    assert lines[-1].startswith("work: 100/100 kernels (100%)")


def test_a_terminal_gets_one_line_rewritten(monkeypatch):
    monkeypatch.delenv("SPIRVJIT_PROGRESS", raising=False)
    monkeypatch.setattr(Progress, "_fancy", lambda self: None)  # as without rich and tqdm
    stream = Terminal()
    with Progress(3, "build", "step", stream=stream) as bar:
        for name in ("a.cl", "x86-64-v3", "gfx942"):
            bar.advance(1, name)
    text = stream.getvalue()
    assert text.count("\r") == 3 and text.endswith("\n") and text.count("\n") == 1
    assert "build: 3/3 steps (100%)" in text and "gfx942" in text


def test_switched_off(monkeypatch):
    monkeypatch.setenv("SPIRVJIT_PROGRESS", "0")
    stream = Terminal()
    with Progress(2, "x", stream=stream) as bar:
        bar.advance(2)
    assert stream.getvalue() == "" and bar.done == 2
    monkeypatch.delenv("SPIRVJIT_PROGRESS")
    with Progress(2, "x", stream=stream, enabled=False) as bar:
        bar.advance(2)
    assert stream.getvalue() == ""
    assert progress.LOG_INTERVAL > 0


def test_build_reports_each_input_and_variant():
    if find_tool("clang") is None:
        pytest.skip("needs clang-22")
    from spirvjit.target import parse_target
    from spirvjit.ubin.build import Input, build_contents

    steps = []
    source = b"kernel void f(global int *x) { x[0] = 1; }"
    build_contents(
        [Input("a.cl", source, "cl")],
        targets=[parse_target("generic"), parse_target("generic")],
        progress=steps.append,
    )
    assert steps == ["a.cl", "generic"]  # a duplicate target is built (and counted) once
