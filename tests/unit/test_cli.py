"""The command line's shape: every subcommand has --help, usage errors exit 2."""

from __future__ import annotations

import pytest

from spirvjit.cli import build_parser, main

COMMANDS = sorted(build_parser()._subparsers._group_actions[0].choices)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_subcommand_has_help(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    assert command in capsys.readouterr().out


def test_unified_binary_commands_are_registered():
    assert {"build", "inspect", "extract", "add-target", "strip", "dis", "run"} <= set(COMMANDS)


@pytest.mark.parametrize(
    "argv",
    [[], ["build", "a.cl"], ["extract", "x.ubin"], ["run", "x.ubin", "k"], ["no-such-command"]],
)
def test_usage_errors_exit_2(argv):
    try:
        assert main(argv) == 2
    except SystemExit as exc:
        assert exc.code == 2


def test_bad_input_exits_1_with_the_message(tmp_path, capsys):
    path = tmp_path / "x.ubin"
    path.write_bytes(b"\x89UBIN\r\n\x1a" + bytes(10))
    assert main(["inspect", str(path)]) == 1
    assert "spirvjit inspect: byte 18: truncated" in capsys.readouterr().err


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("spirvjit 0.")


def test_doctor_reports_tools_devices_and_the_cache(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SPIRVJIT_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("SPIRVJIT_CLANG15", str(tmp_path / "no-such-clang"))
    from spirvjit.toolchain import find_tool

    find_tool.cache_clear()
    try:
        assert main(["doctor"]) == 0
    finally:
        find_tool.cache_clear()
    out = capsys.readouterr().out
    assert "tools:" in out and "devices:" in out and "host CPU" in out
    assert str(tmp_path) in out
    assert "clang15: compile_opencl(producer='translator')" in out  # missing, and what for
