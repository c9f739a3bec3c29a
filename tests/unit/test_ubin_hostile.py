"""Hostile unified binaries: names that are paths or terminal control sequences, and JSON
that a lenient reader would read differently from a strict one (issue 13, items 3 and 9).
"""

from __future__ import annotations

import dataclasses
import json
import os

import pytest
import ubin_samples as S

from spirvjit import cli
from spirvjit.errors import BinaryFormatError
from spirvjit.ubin import format as fmt
from spirvjit.ubin.describe import describe, render
from spirvjit.ubin.names import printable
from spirvjit.ubin.reader import UnifiedBinary, read_file
from spirvjit.ubin.writer import write_bytes, write_file

HOSTILE_KERNELS = ["../escaped", "../../escaped", "/tmp/spirvjit-absolute-escape", "a/../../b"]


def _with_kernels(names: list[str]) -> fmt.Contents:
    """The sample binary whose kernels (and x86-64-v3 objects) have these names."""
    kernels = tuple(S.kernel(n) for n in names)
    objects = {n: b"\x7fELF" + n.encode() for n in names}
    return S.contents(kernels=kernels, variants=(S.variant("x86-64-v3", objects=objects),))


@pytest.mark.parametrize("name", HOSTILE_KERNELS)
def test_extract_variant_refuses_kernel_names_that_leave_the_directory(tmp_path, name, capsys):
    """`extract --variant T -o DIR/` wrote DIR/../escaped.o (and absolute paths) before."""
    if name.startswith("/"):
        name = f"{tmp_path}/abs/escape"  # an absolute path the test may create
        (tmp_path / "abs").mkdir()
    path = tmp_path / "app.ubin"
    write_file(_with_kernels(["fine", name]), path)
    out = tmp_path / "deep" / "er" / "out"
    status = cli.main(["extract", str(path), "--variant", "x86-64-v3", "-o", f"{out}{os.sep}"])
    assert status == 1
    assert "not a bare file name" in capsys.readouterr().err
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert [str(p) for p in written] == ["app.ubin"]  # nothing at all, not even "fine.o"


def test_extract_one_hostile_kernel_to_a_named_file_still_works(tmp_path):
    path = tmp_path / "app.ubin"
    write_file(_with_kernels(["../x"]), path)
    out = tmp_path / "k.o"
    status = cli.main(
        ["extract", str(path), "--variant", "x86-64-v3", "--kernel", "../x", "-o", str(out)]
    )
    assert status == 0 and out.read_bytes() == b"\x7fELF../x"


CONTROL = "k\x1b]0;pwned\x07\x1b[2J\r\u202e\x9b1m"


def test_inspect_escapes_control_characters_from_the_file(tmp_path, capsys):
    """Names in the file went to the terminal as they were: escape sequences included."""
    contents = _with_kernels([CONTROL])
    arg = dataclasses.replace(contents.kernels[0].args[0], name="a\x1b[31m")
    kernel = dataclasses.replace(contents.kernels[0], args=(arg,), execution_modes=("Mode\x1b[1m",))
    build = dataclasses.replace(
        contents.build, compiler_version="clang\r\x1b[K", flags=("-D\x07=1",)
    )
    contents = dataclasses.replace(contents, kernels=(kernel,), build=build)
    path = tmp_path / "app.ubin"
    write_file(contents, path)
    assert cli.main(["inspect", str(path)]) == 0
    text = capsys.readouterr().out
    assert not any(c in text for c in "\x1b\x07\r\u202e\x9b")
    assert "k\\x1b]0;pwned\\x07" in text and "a\\x1b[31m" in text and "\\u202e" in text
    assert cli.main(["inspect", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kernels"][0]["name"] == CONTROL


def test_printable_keeps_ordinary_names():
    assert printable("saxpy_2") == "saxpy_2"
    assert printable("naïve") == "naïve"
    assert printable("a\\b\n") == "a\\\\b\\x0a"


# -- strict JSON (item 9) ------------------------------------------------------------------


def _replace_json(kind: int, change) -> bytes:
    rows = S.sections(write_bytes(S.contents()))
    row = next(r for r in rows if r[0] == kind)
    row[3] = change(row[3])
    row[2] = len(row[3])
    return S.assemble(rows)


def _edit(kind: int, edit) -> bytes:
    def change(raw: bytes) -> bytes:
        value = json.loads(raw)
        edit(value)
        return fmt.canonical_json(value)

    return _replace_json(kind, change)


@pytest.mark.parametrize(
    "kind, edit, where",
    [
        (
            fmt.KERNELS,
            lambda v: v.update(extra=1),
            "kernels section: top level: unknown field 'extra'",
        ),
        (
            fmt.KERNELS,
            lambda v: v["kernels"][1].update(inline=True),
            "kernel 1: unknown field 'inline'",
        ),
        (
            fmt.KERNELS,
            lambda v: v["kernels"][0]["args"][1].update(restrict=True),
            "kernel 0 'k1', argument 1: unknown field 'restrict'",
        ),
        (fmt.BUILD, lambda v: v.update(time=0), "build section: top level: unknown field 'time'"),
        (fmt.BUILD, lambda v: v["inputs"][0].update(path="/x"), "input 0: unknown field 'path'"),
        (
            fmt.VARIANTS,
            lambda v: v["variants"][0].update(signed=True),
            "variant 0: unknown field 'signed'",
        ),
        (
            fmt.VARIANTS,
            lambda v: v["variants"][0]["target"].update(os="linux"),
            "variant 0, target: unknown field 'os'",
        ),
        (fmt.SOURCES, lambda v: v["sources"][0].update(mode=420), "source 0: unknown field 'mode'"),
    ],
)
def test_unknown_fields_are_refused_naming_the_field(kind, edit, where):
    """Unknown fields used to be ignored although docs/ubin.md says readers are strict."""
    with pytest.raises(BinaryFormatError, match=f"^byte [0-9]+: .*{where}".replace("(", r"\(")):
        UnifiedBinary(_edit(kind, edit))


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda raw: raw.replace(b'{"kernels":[{', b'{"kernels":[{"name":"evil",', 1),
            "duplicate key 'name'",
        ),
        (
            lambda raw: raw.replace(b'"static_local_bytes":0', b'"static_local_bytes":NaN'),
            "NaN is not JSON",
        ),
        (
            lambda raw: raw.replace(b'"static_local_bytes":0', b'"static_local_bytes":Infinity'),
            "Infinity is not JSON",
        ),
        (lambda raw: raw.replace(b",", b", "), "not in canonical form"),
        (
            lambda raw: raw.replace(b'"module":0,"name":"k1"', b'"name":"k1","module":0', 1),
            "not in canonical form",
        ),
        (lambda raw: raw.replace(b'"k1"', b'"\\u006b1"', 1), "not in canonical form"),
        (
            lambda raw: raw.replace(b'"static_local_bytes":0', b'"static_local_bytes":-0', 1),
            "not in canonical form",
        ),
        (lambda raw: raw.replace(b'"k1"', '"k\u00e91"'.encode(), 1), "not valid JSON"),
        (lambda raw: raw + b"\n", "not in canonical form"),
    ],
)
def test_duplicate_keys_constants_and_non_canonical_json_are_refused(change, message):
    """These were all accepted: a duplicate key even let a second reader see another name."""
    data = _replace_json(fmt.KERNELS, change)
    with pytest.raises(BinaryFormatError, match=message):
        UnifiedBinary(data)


def test_canonical_files_still_read():
    binary = UnifiedBinary(write_bytes(S.contents()))
    assert [k.name for k in binary.kernels] == ["k1", "k2"]
    info = describe(binary)
    assert "k1(" in render(info)


def test_read_file_names_come_from_the_path(tmp_path):
    path = tmp_path / "a\x1bb.ubin"
    write_file(S.contents(), path)
    assert "a\\x1bb.ubin" in render(describe(read_file(path)))


# OpEntryPoint Kernel %f "k\x1b]0;pwned\x07" and OpName %f "f\x1b[2J" (spirv-as output).
CONTROL_SPIRV = bytes.fromhex(
    "0302230700060100000007000500000000000000110002000400000011000200060000000e000300"
    "02000000020000000f00060006000000010000006b1b5d303b70776e656407000500040001000000"
    "661b5b324a00000013000200020000002100030003000000020000003600050002000000010000000000"
    "000003000000f800020004000000fd00010038000100"
)


def test_dis_escapes_control_characters_from_the_module(tmp_path, capsys):
    """`dis` printed the module's strings (names) to the terminal as they were."""
    path = tmp_path / "ctl.spv"
    path.write_bytes(CONTROL_SPIRV)
    assert cli.main(["dis", str(path)]) == 0
    text = capsys.readouterr().out
    assert "\x1b" not in text and "\x07" not in text
    assert '"k\\x1b]0;pwned\\x07"' in text and "OpFunctionEnd\n" in text
    out = tmp_path / "ctl.spvasm"  # a file gets the text as it is
    assert cli.main(["dis", str(path), "-o", str(out)]) == 0
    assert "\x1b" in out.read_text()
