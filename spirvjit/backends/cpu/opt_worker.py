"""A child process that runs LLVM's O3 (or O2) pipeline on bitcode for ``codegen.optimize``.

Why a process: llvmlite 0.50 leaks every PassBuilder's PassInstrumentationCallbacks
(``LLVMPY_CreatePassBuilder`` allocates it and nothing frees it) and, with it, the
instrumentation state each run registers there — about 90 KiB per optimized module,
never returned. A process that compiles thousands of distinct kernels (a server, a
test suite, an autotuner) grew without bound. After ``codegen.IN_PROCESS_OPTIMIZATIONS``
optimizations in the user's process, further ones run here, and this process exits
after ``MAX_REQUESTS`` so the leak stays bounded in both.

Protocol on stdin/stdout, all integers little-endian u32: a request is the length
and UTF-8 JSON of ``{"triple", "arch", "features", "speed_level"}``, then the length and bytes of
the module's bitcode; the reply is a status (0 ok, 1 error), then the length and
bytes of the optimized bitcode (ok) or of the UTF-8 error text (error). End of input
ends the process.
"""

from __future__ import annotations

import json
import struct
import sys
from typing import BinaryIO

# The user's process restarts the worker after this many requests: the leak in
# here is then at most MAX_REQUESTS * ~90 KiB.
MAX_REQUESTS = 200


def read_frame(stream: BinaryIO) -> bytes | None:
    """One length-prefixed frame, or None at a clean end of input."""
    head = stream.read(4)
    if not head:
        return None
    if len(head) != 4:
        raise EOFError("truncated frame header")
    (size,) = struct.unpack("<I", head)
    data = stream.read(size)
    if len(data) != size:
        raise EOFError("truncated frame")
    return data


def write_frame(stream: BinaryIO, data: bytes) -> None:
    stream.write(struct.pack("<I", len(data)))
    stream.write(data)


def main() -> int:
    import llvmlite.binding as llvm

    from ...target import Target
    from . import codegen

    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    for _ in range(MAX_REQUESTS):
        header = read_frame(stdin)
        if header is None:
            return 0
        bitcode = read_frame(stdin)
        if bitcode is None:
            return 1
        try:
            fields = json.loads(header)
            target = Target("cpu", fields["triple"], fields["arch"], fields["features"])
            module = llvm.parse_bitcode(bitcode, context=llvm.create_context())
            module = codegen.optimize_here(module, target, fields.get("speed_level", 3))
            reply, status = module.as_bitcode(), 0
        except Exception as exc:  # reported to the parent, which raises CompileError
            reply, status = f"{type(exc).__name__}: {exc}".encode(), 1
        stdout.write(struct.pack("<I", status))
        write_frame(stdout, reply)
        stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
