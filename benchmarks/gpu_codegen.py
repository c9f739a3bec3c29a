"""GPU code through SPIR-V vs clang's native build of the same OpenCL C, without a GPU.

For every kernel of the benchmark suite and every target, the same OpenCL C is built
twice: natively by clang-22 (AMD: ``-target amdgcn-amd-amdhsa -mcpu=T`` with libclc linked
as builtin bitcode, then ``ld.lld -shared``; NVIDIA: ``-target nvptx64-nvidia-cuda
-march=T`` with libclc and libdevice, then ``ptxas -v``) and through spirvjit
(clang-22 -> SPIR-V -> spirvjit's JIT for T). Compared: registers, LDS/shared memory,
scratch/stack, spills, an occupancy estimate (registers only) and instruction counts by
class.

    python3 benchmarks/gpu_codegen.py [--targets gfx942,sm_90] [--kernels reduction,nbody]
        [--out benchmarks/results] [--keep DIR]

``--kernels`` and ``--targets`` restrict the comparison (the table then has those rows
only); ``--keep DIR`` keeps every code object, PTX file and disassembly there, to diff.

Writes ``gpu_codegen.md`` (and ``gpu_codegen.png`` where matplotlib is installed).
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import spirvjit  # noqa: E402
from spirvjit.backends import backend  # noqa: E402
from spirvjit.backends.gpu.abi import launch_specialization  # noqa: E402
from spirvjit.toolchain import require_tool  # noqa: E402

TARGETS = ["gfx90a", "gfx942", "gfx1100", "gfx1201", "sm_80", "sm_90"]
KERNEL_FILES = [
    *sorted((HERE / "kernels").glob("*.cl")),
    *sorted((HERE.parent / "examples" / "kernels").glob("*.cl")),
]
SKIP_FILES = {"tiny.cl"}  # a launch-overhead probe, not a kernel worth comparing
# What most launches promise: ids below 2**31, no global offset, whole groups.
FAST_LAUNCH = launch_specialization(("ids32", "uniform", "zero_offset"))
LIBCLC_NVPTX = Path("/usr/lib/clc/nvptx64--nvidiacl.bc")

# Instruction classes: (name, pattern on the mnemonic). First match wins.
AMD_CLASSES = [
    ("div/sqrt fixups", r"^v_div_(scale|fmas|fixup)"),
    ("packed v_pk_*", r"^v_pk_"),
    ("global/flat/buffer memory", r"^(global|flat|buffer|scratch)_"),
    ("LDS ds_*", r"^ds_"),
    ("waits s_waitcnt", r"^s_waitcnt"),
    ("64-bit VALU", r"^v_.*_(u64|i64|b64)|^v_lshl_add_u64|^v_mad_u64"),
    ("vector ALU v_*", r"^v_"),
    ("scalar s_*", r"^s_"),
]
PTX_CLASSES = [
    ("ld/st.global", r"^(ld|st)\.global"),
    ("ld/st.shared", r"^(ld|st)\.shared"),
    ("vector ld/st .v2/.v4", r"^(ld|st)\.\w+\.v[24]"),
    ("cvt", r"^cvt"),
    ("64-bit integer", r"^(add|sub|mul|mad|shl|shr|and|or|xor)(\.lo|\.wide)?\.(s64|u64|b64)"),
    ("atom/red", r"^(atom|red)"),
    ("bar", r"^bar"),
    ("div/sqrt/rcp", r"^(div|sqrt|rcp)"),
]


@dataclass
class Code:
    """What one build of one kernel for one target uses."""

    registers: int = 0  # VGPRs (+AGPRs) on AMD, registers per thread on NVIDIA
    sgprs: int = 0
    shared: int = 0  # LDS / shared memory, bytes
    scratch: int = 0  # private segment / stack frame, bytes
    spills: int = 0  # spilled registers (AMD) / spill store+load bytes (NVIDIA)
    instructions: int = 0
    classes: dict[str, int] = field(default_factory=dict)
    error: str = ""


def _run(cmd: list[str], what: str) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"{what}: {' '.join(cmd[:3])}... failed: {proc.stderr[-800:]}")
    return proc


def _kernels(source: str) -> list[str]:
    return re.findall(r"kernel\s+void\s+(\w+)\s*\(", source)


# ----- AMD ---------------------------------------------------------------------------


def amd_native(path: Path, arch: str, work: Path, options=()) -> bytes:
    clang, lld = require_tool("clang", "native builds"), require_tool("ld.lld", "linking")
    library = backend("amdgpu").device_library()
    obj, hsaco = work / f"{path.stem}.{arch}.o", work / f"{path.stem}.{arch}.hsaco"
    flags = ["-x", "cl", "-cl-std=CL3.0", "-target", "amdgcn-amd-amdhsa", f"-mcpu={arch}"]
    flags += ["-O3", "-nogpulib", "-Xclang", "-mlink-builtin-bitcode", "-Xclang", str(library.path)]
    flags += list(options)  # OpenCL C build options (gpu_timings.py: the case's)
    _run([clang, *flags, "-c", "-o", str(obj), str(path)], f"clang {arch}")
    _run([lld, "-shared", str(obj), "-o", str(hsaco)], "ld.lld")
    return hsaco.read_bytes()


def amd_analyse(image: bytes, kernel: str, arch: str, work: Path) -> Code:
    path = work / f"analyse.{arch}.hsaco"
    path.write_bytes(image)
    notes = _run([require_tool("llvm-readelf", "notes"), "--notes", str(path)], "readelf").stdout
    code = Code()
    # One YAML list item per kernel ("  - .first_key: ..."); keys come before and after .name.
    blocks = re.split(r"\n\s+- (?=\.)", notes)
    name = re.compile(rf"\.name:\s+{re.escape(kernel)}\s*$", re.M)
    block = next((b for b in blocks if name.search(b)), "")

    def number(key: str) -> int:
        match = re.search(rf"\.{key}:\s+(\d+)", block)
        return int(match.group(1)) if match else 0

    code.registers = number("vgpr_count") + number("agpr_count")
    code.sgprs = number("sgpr_count")
    code.shared = number("group_segment_fixed_size")
    code.scratch = number("private_segment_fixed_size")
    code.spills = number("vgpr_spill_count") + number("sgpr_spill_count")
    dis = _run(
        [require_tool("llvm-objdump", "disassembly"), "-d", f"--mcpu={arch}", str(path)], "objdump"
    ).stdout
    # The kernel, plus clang's out-of-line body of an OpenCL kernel where it was not
    # inlined.
    mnemonics = _gcn_function(dis, kernel)
    if "s_swappc_b64" in mnemonics:
        mnemonics += _gcn_function(dis, f"__clang_ocl_kern_imp_{kernel}")
    code.instructions = len(mnemonics)
    code.classes = _classify(mnemonics, AMD_CLASSES)
    return code


def _gcn_function(dis: str, name: str) -> list[str]:
    """The mnemonics of function ``name``: up to the next symbol, without the padding
    (s_code_end, and s_nop after a jump: alignment of a loop or the next function). Not up to
    the first s_endpgm: the block layout may put loops after it (clang's reduction
    tree loop on gfx9 is), and they are the kernel's code too."""
    if f"<{name}>:" not in dis:
        return []
    body = re.split(r"^[0-9a-f]+ <[^>]+>:", dis.split(f"<{name}>:", 1)[1], maxsplit=1, flags=re.M)
    kept: list[str] = []
    for mnemonic in re.findall(r"^\s+(\w+)", body[0], re.M):
        # s_nop after an unconditional branch is alignment padding (a loop header
        # aligned for the instruction prefetch): never executed, not counted.
        if mnemonic == "s_code_end" or (mnemonic == "s_nop" and kept and kept[-1] in _JUMPS):
            continue
        kept.append(mnemonic)
    return kept


# After these, execution never falls through to the next instruction.
_JUMPS = ("s_branch", "s_endpgm", "s_setpc_b64")


def amd_occupancy(code: Code, arch: str) -> int:
    """Waves per SIMD from registers alone: gfx9 has 512 VGPRs per lane (granule 8, at
    most 8 waves), gfx10+ in wave32 1536 (granule 8... at most 16 waves)."""
    if code.registers == 0:
        return 0
    gfx9 = arch.startswith("gfx9")
    budget, cap, granule = (512, 8, 8) if gfx9 else (1536, 16, 8)
    used = -(-code.registers // granule) * granule
    return min(cap, budget // used)


# ----- NVIDIA ------------------------------------------------------------------------


def nvidia_native(path: Path, arch: str, work: Path, options=()) -> str:
    clang = require_tool("clang", "native builds")
    libdevice = backend("nvptx").device_library()
    ptx = work / f"{path.stem}.{arch}.ptx"
    flags = ["-x", "cl", "-cl-std=CL3.0", "-target", "nvptx64-nvidia-cuda", f"-march={arch}"]
    flags += ["-O3", "-nogpulib", *options]
    for library in (LIBCLC_NVPTX, libdevice.path if libdevice else None):
        if library:
            flags += ["-Xclang", "-mlink-builtin-bitcode", "-Xclang", str(library)]
    _run([clang, *flags, "-S", "-o", str(ptx), str(path)], f"clang {arch}")
    return ptx.read_text()


def nvidia_analyse(ptx: str, kernel: str, arch: str, work: Path) -> Code:
    path = work / f"analyse.{arch}.ptx"
    path.write_text(ptx)
    ptxas = require_tool("ptxas", "register counts")
    out = _run([ptxas, "-v", f"-arch={arch}", str(path), "-o", "/dev/null"], "ptxas").stderr
    code = Code()
    text = out.split(f"Compiling entry function '{kernel}'", 1)[-1]
    text = text.split("Compiling entry function", 1)[0]

    def number(pattern: str) -> int:
        match = re.search(pattern, text)
        return int(match.group(1)) if match else 0

    code.registers = number(r"Used (\d+) registers")
    code.shared = number(r"(\d+) bytes smem")
    code.scratch = number(r"(\d+) bytes stack frame")
    code.spills = number(r"(\d+) bytes spill stores") + number(r"(\d+) bytes spill loads")
    # clang's native build calls the kernel's body out of line (a stub entry point
    # calling __clang_ocl_kern_imp_<kernel>): count that body instead of the stub.
    body = _ptx_function(ptx, f".entry {kernel}(")
    if re.search(rf"call(\.uni)?\s+__clang_ocl_kern_imp_{kernel}\b", body):
        body = _ptx_function(ptx, f".func __clang_ocl_kern_imp_{kernel}(")
    mnemonics = _ptx_mnemonics(body)
    code.instructions = len(mnemonics)
    code.classes = _classify(mnemonics, PTX_CLASSES, first_only=False)
    return code


def _ptx_function(ptx: str, header: str) -> str:
    if header not in ptx:
        return ""
    body = ptx.split(header, 1)[1]
    return body[body.index("{") : body.index("\n}")] if "\n}" in body else body


def _ptx_mnemonics(body: str) -> list[str]:
    mnemonics = []
    for line in (ln.strip() for ln in body.splitlines()):
        line = re.sub(r"^@!?%p\d+\s+", "", line)  # predicated
        if line.startswith((".", "//", "{", "}")) or line.endswith(":"):
            continue
        match = re.match(r"^([a-z][\w.]*)", line)
        if match:
            mnemonics.append(match.group(1))
    return mnemonics


def nvidia_occupancy(code: Code, arch: str) -> int:
    """Warps per SM from registers alone: 64K registers, allocated per warp in 256s, at
    most 64 warps (48 on sm_86/89)."""
    if code.registers == 0:
        return 0
    per_warp = -(-code.registers * 32 // 256) * 256
    cap = 48 if arch in ("sm_86", "sm_89") else 64
    return min(cap, 65536 // per_warp)


def _classify(mnemonics: list[str], classes, first_only: bool = True) -> dict[str, int]:
    counts: dict[str, int] = collections.Counter()
    for mnemonic in mnemonics:
        for name, pattern in classes:
            if re.search(pattern, mnemonic):
                counts[name] += 1
                if first_only:
                    break
    return dict(counts)


# ----- the comparison ----------------------------------------------------------------


def compare(
    targets: list[str], work: Path, kernels: set[str] | None = None
) -> list[tuple[str, str, Code, Code]]:
    rows = []
    for path in KERNEL_FILES:
        if path.name in SKIP_FILES or (kernels and path.stem not in kernels):
            continue
        source = path.read_text()
        program = spirvjit.compile_opencl(source, filename=path.name)
        for arch in targets:
            target = spirvjit.parse_target(arch)
            ours = program.for_target(target)
            amd = target.kind == "amdgpu"
            try:
                native = amd_native(path, arch, work) if amd else nvidia_native(path, arch, work)
            except RuntimeError as exc:
                native = exc
            for kernel in _kernels(source):
                print(f"  {path.name}:{kernel} {arch}", file=sys.stderr, flush=True)
                analyse = amd_analyse if amd else nvidia_analyse
                if isinstance(native, RuntimeError):
                    theirs = Code(error=str(native).splitlines()[0])
                else:
                    theirs = analyse(native, kernel, arch, work)
                if not isinstance(native, RuntimeError):
                    _keep(work, f"{path.stem}.{kernel}.{arch}.native", native, arch)
                variants = []
                for variant in ((), FAST_LAUNCH):
                    try:
                        mine_input = (
                            ours.object_code(kernel, None, variant)[0]
                            if amd
                            else ours.assembly(kernel, variant)
                        )
                        name = "generic" if not variant else "fast"
                        _keep(work, f"{path.stem}.{kernel}.{arch}.{name}", mine_input, arch)
                        variants.append(analyse(mine_input, kernel, arch, work))
                    except Exception as exc:  # a kernel spirvjit cannot build is a result too
                        error = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
                        variants.append(Code(error=error))
                rows.append((f"{path.stem}:{kernel}", arch, theirs, *variants))
    return rows


def _keep(work: Path, stem: str, code: bytes | str, arch: str) -> None:
    """With --keep: the code (PTX, or a code object and its disassembly) for diffing."""
    if not KEEP:
        return
    if isinstance(code, str):
        (KEEP / f"{stem}.ptx").write_text(code)
        return
    (KEEP / f"{stem}.hsaco").write_bytes(code)
    tool = require_tool("llvm-objdump", "disassembly")
    dis = _run([tool, "-d", f"--mcpu={arch}", str(KEEP / f"{stem}.hsaco")], "objdump").stdout
    (KEEP / f"{stem}.s").write_text(dis)


KEEP: Path | None = None


def render(rows) -> str:
    out = [
        "# GPU code: spirvjit (SPIR-V -> JIT) vs clang-22 native, same OpenCL C",
        "",
        "Command: `python3 benchmarks/gpu_codegen.py`. Registers: VGPR+AGPR (AMD; SGPRs in",
        "brackets) or per-thread registers (NVIDIA, from `ptxas -v`). Occupancy: waves per",
        "SIMD (AMD) or warps per SM (NVIDIA) that the register count alone allows. Instr:",
        "machine instructions (AMD, llvm-objdump) or PTX instructions (NVIDIA) of the kernel.",
        "Cells are native / spirvjit. Why the differences left are there: docs/gpu.md,",
        '"Code quality against clang\'s native build".',
        "",
        "Two tables: spirvjit's generic variant (right for every launch: what a launch with",
        "a global offset or a partial group runs), and the variant a launch with 32-bit ids,",
        "no global offset and whole groups runs (launch facts, docs/gpu.md; `compile()`, the",
        "disk cache after precompile and unified binaries hold both).",
    ]
    for index, title in ((3, "generic variant"), (4, "launch-specialised variant")):
        out += ["", f"## spirvjit {title}", "", *_table([(*r[:3], r[index]) for r in rows])]
    return "\n".join(out) + "\n"


def _table(rows) -> list[str]:
    out = [
        "| kernel | target | registers | occupancy | LDS/shared B | scratch B | spills "
        "| instr | instr ratio | classes that differ (native/spirvjit) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    ratios = []
    for name, arch, theirs, mine in rows:
        if theirs.error or mine.error:
            out.append(f"| {name} | {arch} | {theirs.error or '-'} | {mine.error or '-'} |||||||")
            continue
        occupancy = amd_occupancy if arch.startswith("gfx") else nvidia_occupancy
        ratio = mine.instructions / max(1, theirs.instructions)
        ratios.append((name, arch, ratio, mine.registers / max(1, theirs.registers)))
        sg = f" [{theirs.sgprs}/{mine.sgprs}]" if arch.startswith("gfx") else ""
        differ = [
            f"{k} {theirs.classes.get(k, 0)}/{mine.classes.get(k, 0)}"
            for k in sorted(set(theirs.classes) | set(mine.classes))
            if theirs.classes.get(k, 0) != mine.classes.get(k, 0)
        ]
        out.append(
            f"| {name} | {arch} | {theirs.registers}/{mine.registers}{sg} "
            f"| {occupancy(theirs, arch)}/{occupancy(mine, arch)} | {theirs.shared}/{mine.shared} "
            f"| {theirs.scratch}/{mine.scratch} | {theirs.spills}/{mine.spills} "
            f"| {theirs.instructions}/{mine.instructions} | {ratio:.2f} | {'; '.join(differ)} |"
        )
    if ratios:
        worse = [r for r in ratios if r[2] > 1.05 or r[3] > 1.05]
        out += [
            "",
            f"{len(ratios)} kernel/target pairs; {len(worse)} with more than 5% more "
            "instructions or registers than native.",
        ]
    return out


def plot(rows, path: Path) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    # The launch-specialised variant: what launches with the common facts run.
    good = [(n, a, t, m) for n, a, t, _, m in rows if not (t.error or m.error)]
    targets = sorted({a for _, a, _, _ in good})
    names = sorted({n for n, _, _, _ in good})
    fig, axes = plt.subplots(2, 1, figsize=(12, 8), sharex=True)
    width = 0.8 / max(1, len(targets))
    measures = (
        ("instructions", lambda code: code.instructions),
        ("registers", lambda code: code.registers),
    )
    for ax, (what, measure) in zip(axes, measures, strict=True):
        highest = 1.0
        for i, arch in enumerate(targets):
            values = []
            for name in names:
                row = next((r for r in good if r[0] == name and r[1] == arch), None)
                values.append(measure(row[3]) / max(1, measure(row[2])) if row else 0)
            ax.bar([j + i * width for j in range(len(names))], values, width, label=arch)
            highest = max(highest, *values)
        ax.set_ylim(0, max(1.15, highest * 1.05))
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.axhline(1.05, color="grey", linewidth=0.6, linestyle="--")
        ax.set_ylabel(f"{what}, spirvjit / native")
    axes[0].set_title("spirvjit's launch-specialised variant against clang's native build")
    axes[0].legend(ncol=len(targets), loc="lower center", bbox_to_anchor=(0.5, 1.08))
    axes[-1].set_xticks([j + 0.4 for j in range(len(names))], names, rotation=45, ha="right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", default=",".join(TARGETS))
    parser.add_argument("--kernels", default="", help="kernel files (stems) to compare")
    parser.add_argument("--out", default=str(HERE / "results"), help="where the table goes")
    parser.add_argument("--keep", default="", help="a folder to keep the code in")
    args = parser.parse_args()
    global KEEP
    if args.keep:
        KEEP = Path(args.keep)
        KEEP.mkdir(parents=True, exist_ok=True)
    kernels = {k for k in args.kernels.split(",") if k} or None
    with tempfile.TemporaryDirectory() as tmp:
        rows = compare([t for t in args.targets.split(",") if t], Path(tmp), kernels)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = render(rows)
    (out / "gpu_codegen.md").write_text(text)
    plotted = plot(rows, out / "gpu_codegen.png")
    print(text)
    written = [out / "gpu_codegen.md", *([out / "gpu_codegen.png"] if plotted else [])]
    print("written:", ", ".join(map(str, written)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
