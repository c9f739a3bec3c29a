"""A Python function's source, parsed, with the positions and names compile errors need."""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import inspect
import linecache
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


@functools.lru_cache(maxsize=64)
def _module_tree(filename: str, text: str) -> ast.Module:
    return ast.parse(text, filename)


def parse(fn) -> Source:
    """Parses the file ``fn`` comes from (once per file) and finds its ``def`` by line:
    positions in the tree are the file's own, so messages point at the right column."""
    code = fn.__code__
    filename = inspect.getsourcefile(fn) or code.co_filename
    lines = linecache.getlines(filename, fn.__globals__)
    fdef = None
    if lines:
        try:
            tree = _module_tree(filename, "".join(lines))
        except SyntaxError:
            tree = None
        for node in ast.walk(tree) if tree else ():
            if isinstance(node, ast.FunctionDef) and node.name == fn.__name__:
                first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                if code.co_firstlineno in (first, node.lineno):
                    fdef = node
                    break
    if fdef is None:
        raise CompileError(
            f"cannot read the source of {fn.__qualname__} (kernels must be defined in a "
            "file, not typed at an interactive prompt or built with exec)"
        )
    closure = {}
    if fn.__closure__:
        for name, cell in zip(code.co_freevars, fn.__closure__, strict=True):
            with contextlib.suppress(ValueError):  # a cell not bound yet
                closure[name] = cell.cell_contents
    return Source(filename, fdef, fn.__globals__, closure)
