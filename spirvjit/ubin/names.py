"""Names read from a unified binary, made safe where they leave it: on a terminal and as
file names.

A file can say anything in its kernel, argument, target and input names (the JSON
allows any Unicode through ``\\u`` escapes). Printed as they are, control characters
move the cursor, retitle the window or hide text from the reader; used as file names,
``../x`` or ``/etc/x`` write outside the directory the user chose.
"""

from __future__ import annotations

import os

from ..errors import BinaryFormatError
from .schema import file_name_ok


def printable(text: str, *, backslash: bool = True) -> str:
    """``text`` with every character that is not printable (C0/C1 controls, DEL, line
    and paragraph separators, bidirectional and other format characters) and, unless
    ``backslash`` is False, the backslash written as a Python escape (``\\x1b``,
    ``\\u202e``), so what a terminal shows is what the file says and nothing else."""
    if text.isprintable() and (not backslash or "\\" not in text):
        return text
    out = []
    for char in text:
        if char == "\\" and backslash:
            out.append("\\\\")
        elif char.isprintable() or char == "\\":
            out.append(char)
        else:
            code = ord(char)
            if code < 0x100:
                out.append(f"\\x{code:02x}")
            elif code < 0x10000:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    return "".join(out)


def printable_lines(text: str) -> str:
    """``printable`` for multi-line text (disassembly, PTX): newlines, tabs and
    backslashes (assembly uses them) stay; every other unprintable character is escaped."""
    return "\n".join(
        "\t".join(printable(part, backslash=False) for part in line.split("\t"))
        for line in text.split("\n")
    )


def path_in(directory: str | os.PathLike, name: str, what: str) -> str:
    """``directory/name`` for a ``name`` read from a file, which must be a bare file name
    (``[A-Za-z0-9_+-][A-Za-z0-9_.+-]*``, no separators, not ``.``/``..``).

    Raises BinaryFormatError naming ``what`` (e.g. "kernel") otherwise: the name came
    from the file, and a hostile one must not choose where we write.
    """
    if not file_name_ok(name):
        raise BinaryFormatError(
            f"{what} name {printable(name)!r} is not a bare file name; refusing to use it as "
            "one (extract that part to a file you name instead)"
        )
    directory = os.fspath(directory)
    path = os.path.join(directory, name)
    # Belt and braces over file_name_ok: the path must lie directly in ``directory``.
    if os.path.dirname(os.path.abspath(path)) != os.path.abspath(directory):
        raise BinaryFormatError(f"{what} name {printable(name)!r} leaves {directory}")
    return path
