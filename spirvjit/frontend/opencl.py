"""OpenCL C to SPIR-V, with clang-22's SPIR-V back end or clang-15 plus the SPIR-V translator.

Producers:

``"clang"``
    ``clang-22 --target=spirv64 -S -emit-llvm -O2 -cl-std=CL3.0 -cl-kernel-arg-info
    [options] kernel.cl -o kernel.ll``, then ``clang-22 --target=spirv64 -c kernel.ll -o
    kernel.spv``. The spirv64 target enables every OpenCL 3.0 optional feature and
    ``cl_khr_*`` extension clang knows (fp64, fp16, int64 atomics, generic address
    space, program-scope variables), so no ``-cl-ext`` is needed. Going through LLVM IR
    lets the front end fix what the back end gets wrong before it runs (int→int
    ``convert_*``, see ``convert_builtins``) and carry the kernels' argument metadata
    into the SPIR-V (``kernel_args``). Without a rewrite the second step only runs the
    back end (``-disable-llvm-passes``): the optimized IR is what a one-step compile
    would have handed it.
``"translator"``
    ``clang-15 -target spir64 -S -emit-llvm -O2 -fno-vectorize -fno-slp-vectorize
    -mllvm -disable-vector-combine -cl-std=CL3.0 -cl-kernel-arg-info [options] kernel.cl
    -o kernel.ll``, ``freeze`` removed (llvm-spirv-15 cannot translate it), odd-width
    integers widened (``odd_widths``), ``convert_*`` results copied and ``llvm.fmuladd`` fused
    (``translator_ir``), ``clang-15 -c -emit-llvm`` back to bitcode without optimizing,
    then ``llvm-spirv-15 --preserve-ocl-kernel-arg-type-metadata-through-string kernel.bc
    -o kernel.spv`` and the blocks put in dominance order (``translator_fixups``): the
    Khronos translator route, kept so the runtime is tested against a second,
    independent SPIR-V producer. The vectorizers are off: vectorizing across work-items
    is the JIT's job, not the producer's; LLVM 15's VectorCombine miscompiles lanes of
    odd-width vectors (``_TRANSLATOR_FLAGS``). With ``-g`` and no ``-O`` option the first
    step runs at ``-O0`` instead, so that variables stay printable in gdb.

User options (``-D``, ``-I``, ``-cl-fast-relaxed-math``, ``-cl-std=...``, ...) are
passed through unchanged after the defaults, so they win over them. The second step
sees only those that steer code generation (``-O<n>``, ``-mllvm ...``).
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import tempfile
from collections.abc import Sequence

from spirvjit.errors import CompileError
from spirvjit.frontend.alignment_repair import repair_alignments
from spirvjit.frontend.constant_null_repair import repair_constant_nulls
from spirvjit.frontend.convert_builtins import backend_converts_correctly, define_int_conversions
from spirvjit.frontend.kernel_args import annotate_spirv, read_kernel_arg_info
from spirvjit.frontend.odd_widths import (
    UnsupportedWidth,
    load_odd_vectors_whole,
    split_odd_vector_casts,
    widen_odd_integers,
)
from spirvjit.frontend.translator_fixups import fix_translator_spirv
from spirvjit.frontend.translator_ir import (
    copy_conversion_results,
    fuse_fmuladd,
    select_condition,
)
from spirvjit.toolchain import require_tool

PRODUCERS: tuple[str, ...] = ("clang", "translator")


def wants_debug_info(options: Sequence[str]) -> bool:
    """Whether clang ``options`` ask for debug information (``-g``, ``-g2``, ``-gdwarf-5``)."""
    debug = False
    for option in options:
        if option.startswith("-g") and option != "-gno-column-info":
            debug = not option.startswith("-g0") and not option.startswith("-gno-")
    return debug


def default_producer(options: Sequence[str]) -> str:
    """The producer compile_opencl uses when none is named: the translator for ``-g``
    (clang-22's SPIR-V back end emits no OpLine nor variable information), else clang."""
    return "translator" if wants_debug_info(options) else "clang"


# Generous: a pathological kernel can take a while at -O2, but a hung compiler
# must not hang the caller forever.
TIMEOUT_S = 120

# VectorCombine of LLVM 15 scalarizes a lane of a load of <16 x i2> (clang-15's reading of
# `v.s1 & 3` on a loaded uchar4) to a getelementptr that counts each 2-bit lane as a byte:
# a load from the wrong address (llvm/llvm-project#67060; see odd_widths.load_odd_vectors_whole).
_TRANSLATOR_FLAGS = ("-fno-vectorize", "-fno-slp-vectorize", "-mllvm", "-disable-vector-combine")

_log = logging.getLogger("spirvjit")


def opencl_to_spirv(
    source: str,
    options: Sequence[str] = (),
    *,
    producer: str = "clang",
    filename: str = "kernel.cl",
) -> bytes:
    """Compile OpenCL C ``source`` to a SPIR-V module and return its bytes.

    ``options`` are clang command-line options, passed through. ``filename`` is the
    name diagnostics use (``kernel.cl:LINE:COL: error: ...``); it must be a bare file
    name. Raises CompileError (with clang's diagnostics as ``log``) when compilation
    fails, times out or a tool is missing; ValueError for an unknown ``producer`` or a
    ``filename`` with a directory part; TypeError when ``options`` is a single string.
    Warnings go to the ``spirvjit`` logger. No temporary files outlive the call.
    """
    if producer not in PRODUCERS:
        raise ValueError(f"unknown producer {producer!r}; valid producers: {', '.join(PRODUCERS)}")
    if isinstance(options, str):
        raise TypeError("options must be a sequence of strings, e.g. ['-DN=4'], not one string")
    if os.path.basename(filename) != filename or filename in ("", ".", ".."):
        raise ValueError(f"filename must be a bare file name, got {filename!r}")
    options = list(options)
    with tempfile.TemporaryDirectory(prefix="spirvjit-") as tmp:
        src = os.path.join(tmp, filename)
        with open(src, "w", encoding="utf-8") as f:
            f.write(source)
        spv = os.path.join(tmp, "out.spv")
        if producer == "clang":
            _compile_clang(src, spv, options, tmp)
        else:
            _compile_translator(src, spv, options, tmp)
        with open(spv, "rb") as f:
            return f.read()


# SPIR-V extensions spirvjit translates, allowed in clang's output (float atomics
# otherwise stop clang's SPIR-V backend with "requires the following SPIR-V extension").
_SPIRV_EXTENSIONS = (
    "-mllvm",
    "--spirv-ext=+SPV_EXT_shader_atomic_float_add,+SPV_EXT_shader_atomic_float_min_max",
)


def _std_options(options: list[str]) -> list[str]:
    """The default language standard, unless the user chose one."""
    if any(o.startswith("-cl-std=") for o in options):
        return []
    return ["-cl-std=CL3.0"]


def _backend_options(options: list[str]) -> list[str]:
    """The user options the back-end step needs: the last ``-O`` level and ``-mllvm`` pairs."""
    level = ["-O2"]
    passed: list[str] = []
    it = iter(options)
    for option in it:
        if re.fullmatch(r"-O([0-3sz]|fast)?", option):
            level = [option]
        elif option == "-mllvm":
            passed += [option, next(it, "")]
        elif option.startswith("-mllvm="):
            passed.append(option)
    return level + passed


# clang-22's -O2 can leave integers of a width SPIR-V has only with an extension (an
# i128 load of 16 bytes of a private array after its loops are unrolled; differential
# tester seed 26200 kernel 3, tests/fuzz/findings/clang_i128_private_array.cl), and its
# SPIR-V back end then stops: "OpTypeInt type with a width other than 8, 16, 32 or 64 bits
# requires the following SPIR-V extension: SPV_ALTERA_arbitrary_precision_integers".
# A wider one (i256: VectorCombine's shift of a <16 x i16> private array bitcast to one
# integer, to take 8 lanes at an odd offset; `vstore16((short16)(b[0]) + (short16)(b[3]),
# 0, b)`, tests/fuzz/findings/clang_i256_vector_combine.cl) crashes the back end instead:
# "Unsupported Integer width!".
_WIDTH_FAILURES = ("arbitrary_precision_integers", "Unsupported Integer width")
# Compiled again with the front end's loop unrolling and VectorCombine off, those programs
# have no such integer; the JIT's own O3 unrolls and combines later, so the code loses
# nothing.
_WIDTH_WORKAROUND = ("-fno-unroll-loops", "-mllvm", "-disable-vector-combine")


def _width_failure(log: str) -> bool:
    return any(message in log for message in _WIDTH_FAILURES)


# C99's inline rule, which OpenCL C keeps: a plain `inline` definition (no `static`, no
# `extern`) is "inline only": clang emits no body for it, and a call it does not inline
# (its heuristics decide: a large helper with several callers; any call at -O0) is left
# calling a function the module imports but nobody defines. Public samples write helpers
# that way (NVIDIA's oclBlackScholes `inline void BlackScholesBody`, tests/kernels/
# test_c99_inline.py), and OpenCL platforms accept them. clang-22 keeps such bodies as local
# copies (-avail-extern-to-local, at -O1 and up); when a compile still leaves a declaration
# (clang-15, any -O0), the program is compiled again with GNU89 inline semantics, where a
# plain `inline` definition is also the external one. Only such programs pay the second
# compile, and only there does `extern inline` turn inline-only (a program mixing both
# spellings in non-inlined calls then still fails, as it did before).
_GNU_INLINE = "-fgnu89-inline"
# `declare ... @name(`: the functions a module calls without defining. OpenCL C's own
# functions are mangled (overloadable: _Z...), intrinsics start with llvm., and the
# unmangled built-ins are printf and reserved `__` names (__to_global, ...).
_DECLARED = re.compile(r'^declare [^@\n]*@("?)([-\w$.]+)\1\(', re.MULTILINE)


def inline_only_functions(ir_text: str) -> list[str]:
    """The unmangled functions ``ir_text`` declares but does not define: user functions
    whose body clang did not emit (C99 inline-only definitions), or truly missing ones."""
    return [
        name
        for _, name in _DECLARED.findall(ir_text)
        if not name.startswith(("_Z", "llvm.", "__")) and name != "printf"
    ]


def _compile_to_ir(cmd: list[str], ll: str, name: str, tmp: str) -> str:
    """Runs the IR-emitting compile ``cmd`` (compiler first, writing ``ll``) and returns the
    IR; again with GNU89 inline semantics when C99 left inline-only helpers undefined."""
    run_compiler(cmd, "compile", name, tmp)
    with open(ll, encoding="utf-8") as f:
        ir_text = f.read()
    missing = inline_only_functions(ir_text)
    if not missing or _GNU_INLINE in cmd:
        return ir_text
    _log.debug(
        "%s: %s declared but not defined (C99 inline-only); compiling again with %s",
        name,
        ", ".join(missing),
        _GNU_INLINE,
    )
    # Right after the compiler: a user's -fno-gnu89-inline still comes later and wins.
    run_compiler([cmd[0], _GNU_INLINE, *cmd[1:]], "compile", name, tmp)
    with open(ll, encoding="utf-8") as f:
        return f.read()


def _compile_clang(src: str, spv: str, options: list[str], tmp: str) -> None:
    try:
        _compile_clang_once(src, spv, options, tmp)
    except CompileError as e:
        if not _width_failure(e.log):
            raise
        _log.debug(
            "%s: clang-22 made an integer width SPIR-V lacks; compiling again with %s",
            os.path.basename(src),
            " ".join(_WIDTH_WORKAROUND),
        )
    else:
        return
    try:
        _compile_clang_once(src, spv, [*_WIDTH_WORKAROUND, *options], tmp)
    except CompileError as e:
        if not _width_failure(e.log):
            raise
        raise CompileError(
            f"{e.message}: clang-22 made an integer of a width SPIR-V has only with an "
            "extension spirvjit does not take, even without loop unrolling and "
            "VectorCombine; producer='translator' may compile it",
            e.log,
        ) from e


def _compile_clang_once(src: str, spv: str, options: list[str], tmp: str) -> None:
    clang = require_tool("clang", "compiling OpenCL C to SPIR-V")
    name = os.path.basename(src)
    ll = os.path.join(tmp, "out.ll")
    cmd = [clang, "--target=spirv64", "-S", "-emit-llvm", "-O2", "-cl-kernel-arg-info"]
    # spirv64's data layout calls i64 native, so -O2 would widen int loop counters to 64
    # bits (sext/trunc around every index, 64-bit compares on GPUs); the target's own O3
    # widens them again where its registers make that cheaper (x86-64).
    cmd += ["-mllvm", "-indvars-widen-indvars=false"]
    # C99 inline-only helpers (see _GNU_INLINE): LLVM 22 can keep their bodies as local
    # copies instead of dropping them, which is C99's own reading (a call may use the
    # inline definition) and keeps `extern inline` an external definition.
    cmd += ["-mllvm", "-avail-extern-to-local"]
    cmd += [*_SPIRV_EXTENSIONS, *_std_options(options), *options, src, "-o", ll]
    ir_text = _compile_to_ir(cmd, ll, name, tmp)
    infos = read_kernel_arg_info(ir_text)
    rewritten = 0
    if not backend_converts_correctly(clang, run_compiler):
        ir_text, rewritten = define_int_conversions(ir_text)
    if rewritten:
        _log.debug(
            "%s: defined %d int->int convert_* in the IR for clang's back end", name, rewritten
        )
        with open(ll, "w", encoding="utf-8") as f:
            f.write(ir_text)
    backend = [clang, "--target=spirv64", "-c", *_SPIRV_EXTENSIONS, *_backend_options(options)]
    if not rewritten:
        backend += ["-Xclang", "-disable-llvm-passes"]
    run_compiler([*backend, ll, "-o", spv], "compile", name, tmp)
    with open(spv, "rb") as f:
        spirv, repaired = repair_alignments(f.read())
    if repaired:
        _log.debug("%s: repaired %d Alignment decorations of clang's back end", name, repaired)
    spirv, repaired = repair_constant_nulls(spirv)
    if repaired:
        _log.debug("%s: repaired %d OpConstantNull of clang's back end", name, repaired)
    with open(spv, "wb") as f:
        f.write(annotate_spirv(spirv, infos))


# `%x = freeze <ty> <value>` (and its metadata attachments): llvm-spirv-15 cannot translate
# freeze, which clang-15 -O2 emits for `i / n` next to `i % n` (DivRemPairs), among others.
_FREEZE = re.compile(r"^(\s*%[-\w$.]+ = )freeze ([^\n]*?)((?:, ![-\w.]+ ![^\n]*)?)$", re.MULTILINE)


def remove_freeze(ir_text: str) -> str:
    """``ir_text`` with every ``freeze`` replaced by an identity (``select i1 true, v, v``,
    with a vector of true for a vector v).

    freeze only changes undef or poison inputs (it picks one fixed value); an OpenCL
    program whose result depends on such a value is undefined anyway, and the SPIR-V
    consumer sees an ordinary value either way. The value numbering stays as it was.
    """

    def identity(m: re.Match) -> str:
        cond = select_condition(m.group(2))
        return f"{m.group(1)}select {cond}, {m.group(2)}, {m.group(2)}{m.group(3)}"

    return _FREEZE.sub(identity, ir_text)


def _compile_translator(src: str, spv: str, options: list[str], tmp: str) -> None:
    clang15 = require_tool("clang15", "compiling OpenCL C with the translator producer")
    translator = require_tool("llvm-spirv", "translating LLVM bitcode to SPIR-V")
    name = os.path.basename(src)
    ll, bc = os.path.join(tmp, "out.ll"), os.path.join(tmp, "out.bc")
    cmd = [clang15, "-target", "spir64", "-S", "-emit-llvm", "-O2", *_TRANSLATOR_FLAGS]
    cmd += ["-cl-kernel-arg-info", *_std_options(options)]
    if wants_debug_info(options) and not any(re.fullmatch(r"-O.*", o) for o in options):
        # Debugging wants every variable in memory and every line its own code.
        cmd.append("-O0")
    ir_text = _compile_to_ir([*cmd, *options, src, "-o", ll], ll, name, tmp)
    fixed = remove_freeze(ir_text) if " freeze " in ir_text else ir_text
    fixed, copied = copy_conversion_results(fixed)
    fixed, fused = fuse_fmuladd(fixed)
    fixed, loaded = load_odd_vectors_whole(fixed)
    fixed, split = split_odd_vector_casts(fixed)
    try:
        fixed, widened = widen_odd_integers(fixed)
    except UnsupportedWidth as e:  # llvm-spirv-15 reports the width itself
        _log.debug("%s: odd-width integers left as they are: %s", name, e)
        widened = 0
    widened += split + loaded
    if widened or copied or fused:
        counts = (widened, copied, fused)
        _log.debug(
            "%s: for llvm-spirv, %d odd-width integer instructions widened, %d convert_* "
            "results copied, %d fmuladd fused",
            name,
            *counts,
        )
    if fixed != ir_text:
        with open(ll, "w", encoding="utf-8") as f:
            f.write(fixed)
    assemble = [clang15, "-target", "spir64", "-c", "-emit-llvm", "-Xclang", "-disable-llvm-passes"]
    run_compiler([*assemble, ll, "-o", bc], "compile", name, tmp)
    translate = [translator, "--preserve-ocl-kernel-arg-type-metadata-through-string", bc]
    run_compiler([*translate, "-o", spv], "translate", name, tmp)
    with open(spv, "rb") as f:
        spirv, reordered = fix_translator_spirv(f.read())
    if reordered:
        _log.debug("%s: %d functions' blocks put in dominance order", name, reordered)
        with open(spv, "wb") as f:
            f.write(spirv)


def run_compiler(cmd: list[str], verb: str, filename: str, tmp: str) -> None:
    """Run one compiler tool; raise CompileError (clang's error count, its diagnostics
    as the log) on failure or timeout, log warnings. The HIP front end uses it too."""
    tool = os.path.basename(cmd[0])
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired as e:
        raise CompileError(f"{tool} timed out after {TIMEOUT_S} s on {filename}") from e
    # Diagnostics name the temporary path; show the name the caller chose instead.
    log = proc.stderr.replace(tmp + os.sep, "")
    if proc.returncode != 0:
        summary = _summary(log, proc.returncode)
        raise CompileError(f"{tool} failed to {verb} {filename}: {summary}", log)
    if log.strip():
        _log.warning("%s reported on %s:\n%s", tool, filename, log.rstrip())


def _summary(log: str, returncode: int) -> str:
    """'1 error' / '3 errors' from clang's closing line, else how the process ended."""
    m = re.search(r"^(\d+ errors?) generated", log, re.MULTILINE)
    if m:
        return m.group(1)
    if returncode < 0:
        return f"killed by signal {-returncode}"
    return f"exit status {returncode}"
