"""Errors raised by spirvjit.

Every error says what failed, where (word offset, kernel, argument, file:line) and,
where there is one, what to do about it. The location parts are also kept as
attributes so tools can act on them without parsing messages.
"""

from __future__ import annotations

# Exit statuses of the ``spirvjit`` command line: success, a failure (the message on
# stderr), a usage error (argparse's own status).
EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2


class SpirvJitError(Exception):
    """Base class of every error spirvjit raises on purpose."""


class SpirvError(SpirvJitError):
    """A SPIR-V module is malformed or uses something spirvjit cannot translate.

    ``offset`` is the word offset of the offending instruction (or word) in the
    module, when known; ``opname`` the instruction's name.
    """

    def __init__(self, message: str, offset: int | None = None, opname: str | None = None):
        self.message = message
        self.offset = offset
        self.opname = opname
        where = []
        if offset is not None:
            where.append(f"word {offset}")
        if opname:
            where.append(opname)
        prefix = f"SPIR-V {' '.join(where)}: " if where else "SPIR-V: "
        super().__init__(prefix + message)


class BinaryFormatError(SpirvJitError):
    """A unified binary is corrupted, truncated or not a unified binary at all."""

    def __init__(self, message: str, offset: int | None = None):
        self.message = message
        self.offset = offset
        super().__init__(message if offset is None else f"byte {offset}: {message}")


class CompileError(SpirvJitError):
    """A compiler (clang, the translator, LLVM, a linker) rejected its input.

    ``log`` holds the tool's own diagnostics (file:line:col lines from clang).
    """

    def __init__(self, message: str, log: str = ""):
        self.message = message
        self.log = log
        super().__init__(f"{message}\n{log}".rstrip())


class LaunchError(SpirvJitError):
    """A kernel launch was refused: wrong arguments, sizes or resources.

    ``kernel`` and ``argument`` (index or name) say where, when they apply.
    """

    def __init__(self, message: str, kernel: str | None = None, argument: str | int | None = None):
        self.message = message
        self.kernel = kernel
        self.argument = argument
        where = f"kernel '{kernel}'" if kernel else "launch"
        if argument is not None:
            where += f", argument {argument}"
        super().__init__(f"{where}: {message}")
