"""A Python function's source, parsed, with the positions and names compile errors need."""

from __future__ import annotations

import ast
import builtins
import contextlib
import inspect
import textwrap
from dataclasses import dataclass

from ...errors import CompileError


@dataclass
class Source:
    """The ``def`` of one function: its AST with line and column numbers as in its file,
    the file's name, and the names it can see (module globals, closure, builtins)."""

    filename: str
    tree: ast.FunctionDef
    namespace: dict
    closure: dict

    def lookup(self, name: str):
        """The Python object ``name`` refers to in the function's scope; KeyError if none."""
        if name in self.closure:
            return self.closure[name]
        if name in self.namespace:
            return self.namespace[name]
        return getattr(builtins, name)

    def error(self, node: ast.AST | None, message: str) -> CompileError:
        """A CompileError that points at ``node`` as ``file:line:col: error: message``."""
        line = getattr(node, "lineno", None) or self.tree.lineno
        col = getattr(node, "col_offset", 0) + 1
        err = CompileError(f"{self.filename}:{line}:{col}: error: {message}")
        err.filename, err.lineno, err.col = self.filename, line, col
        return err


def parse(fn) -> Source:
    """Parses ``fn``'s definition; its decorators are kept out of the tree."""
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as exc:
        raise CompileError(
            f"cannot read the source of {fn.__qualname__}: {exc} (kernels must be defined "
            "in a file, not typed at an interactive prompt or built with exec)"
        ) from exc
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    # Columns in messages must match the file: add back what dedent removed.
    indent = len(lines[0]) - len(lines[0].lstrip()) - (len(dedented) - len(dedented.lstrip()))
    tree = ast.parse(dedented)
    ast.increment_lineno(tree, first - 1)
    if indent:
        for node in ast.walk(tree):
            if hasattr(node, "col_offset"):
                node.col_offset += indent
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise CompileError(f"{fn.__qualname__} is not a plain 'def' function")
    closure = {}
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__, strict=True):
            with contextlib.suppress(ValueError):  # a cell not bound yet
                closure[name] = cell.cell_contents
    filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    return Source(filename, fdef, fn.__globals__, closure)
