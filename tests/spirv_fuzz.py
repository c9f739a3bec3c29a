"""Mutation fuzzer for the whole SPIR-V pipeline: read -> translate -> compile -> load.

Mutants of real modules (the committed fixtures in tests/data, and with ``--suite``
every program of the kernel test suite compiled by clang) go through
``spirvjit.Program`` and ``Kernel.compile(quick=True)`` for every kernel (never a launch):
the quick tier a first launch runs and the optimized tier compiled after it.
Each input ends one of four ways:

* ``ok`` or ``refused`` (SpirvError, CompileError or LaunchError): what we want;
* ``escape``: any other exception (the bug class this fuzzer hunts);
* ``crash``: the process died (a signal, an abort);
* ``hang``: no answer within ``--timeout`` seconds.

A long run: ``python3 -m tests.spirv_fuzz --count 5000 --seed 1 [--suite] [--save DIR]``.
Inputs run in a worker process (restarted after a crash or hang) under a memory
rlimit, so crashes, hangs and memory blow-ups are counted instead of killing the
run. The test suite runs a fixed-seed sample in-process (tests/unit/test_fuzz_pipeline.py).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import resource
import select
import struct
import subprocess
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
EXPECTED = ("SpirvError", "CompileError", "LaunchError")
# Values that sit on boundaries: sizes, counts, widths, ids, enumerants.
INTERESTING = (
    0,
    1,
    2,
    3,
    4,
    5,
    7,
    8,
    16,
    17,
    31,
    32,
    33,
    63,
    64,
    65,
    128,
    255,
    256,
    0xFFFF,
    0x10000,
    0x7FFFFFFF,
    0x80000000,
    0xFFFFFFFE,
    0xFFFFFFFF,
    2866505235,
)


# -- corpus ------------------------------------------------------------------------------


def fixture_corpus() -> list[bytes]:
    """The committed modules: reader fixtures (clang-22, llvm-spirv-15 with and without
    debug info) and modules of the kernel suite compiled by clang (tests/data/fuzz)."""
    paths = sorted(DATA.glob("*.spv")) + sorted((DATA / "fuzz").glob("*.spv"))
    return [path.read_bytes() for path in paths]


def suite_corpus() -> list[bytes]:
    """Every program of the kernel test suite, compiled by clang now (slow: clang)."""
    sys.path.insert(0, str(ROOT / "tests" / "kernels"))
    from sources import CASES

    import spirvjit

    modules = []
    for case in CASES.values():
        modules.append(spirvjit.compile_opencl(case.source, options=list(case.options)).spirv)
    return modules


# -- mutation ----------------------------------------------------------------------------


class Seed:
    """A corpus module with what the mutators need: its words, instruction
    boundaries and the ids it defines."""

    def __init__(self, data: bytes):
        from spirvjit.spirv.reader import read_module

        self.words = list(struct.unpack(f"<{len(data) // 4}I", data))
        self.starts: list[int] = []
        pos = 5
        while pos < len(self.words):
            self.starts.append(pos)
            pos += max(1, self.words[pos] >> 16)
        defs = read_module(data).defs
        self.ids = sorted(defs)
        # Ids of values (they have a type): swapping one for another passes the
        # operand-kind checks and reaches the translator with a wrong type.
        self.values = sorted(
            i for i, d in defs.items() if d.result_type and d.opname != "OpFunction"
        )
        self.value_set = set(self.values)


def _pack(words: list[int]) -> bytes:
    return struct.pack(f"<{len(words)}I", *(w & 0xFFFFFFFF for w in words))


def mutate(seed: Seed, others: list[Seed], rng: random.Random) -> bytes:
    """One mutant of ``seed``: 1-4 mutations chosen from the kinds below."""
    words = list(seed.words)
    for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 4))):
        kind = rng.choice((0, 1, 2, 3, 3, 3, 4, 5, 6, 7, 8, 9))
        starts = _boundaries(words)
        if len(words) <= 6 or not starts:
            break
        if kind == 0:  # one word: an interesting value
            words[rng.randrange(5, len(words))] = rng.choice(INTERESTING)
        elif kind == 1:  # one bit
            words[rng.randrange(5, len(words))] ^= 1 << rng.randrange(32)
        elif kind == 2:  # an operand becomes another defined id
            at = rng.choice(starts)
            # An earlier mutation may have made the word count run past the end.
            count = min(max(1, words[at] >> 16), len(words) - at)
            if count > 1 and seed.ids:
                words[at + rng.randrange(1, count)] = rng.choice(seed.ids)
        elif kind == 3:  # a value operand becomes another value (type confusion)
            at = rng.choice(starts)
            count = max(1, words[at] >> 16)
            end = min(at + count, len(words))
            slots = [i for i in range(at + 2, end) if words[i] in seed.value_set]
            if slots and seed.values:
                words[rng.choice(slots)] = rng.choice(seed.values)
        elif kind == 4:  # an operand word becomes a small number (ids, indices, counts)
            at = rng.choice(starts)
            count = min(max(1, words[at] >> 16), len(words) - at)
            if count > 1:
                words[at + rng.randrange(1, count)] = rng.randrange(64)
        elif kind == 5:  # remove an instruction
            i = rng.randrange(len(starts))
            end = starts[i + 1] if i + 1 < len(starts) else len(words)
            del words[starts[i] : end]
        elif kind == 6:  # duplicate an instruction elsewhere
            i = rng.randrange(len(starts))
            end = starts[i + 1] if i + 1 < len(starts) else len(words)
            at = rng.choice(starts)
            words[at:at] = words[starts[i] : end]
        elif kind == 7:  # splice in an instruction of another module
            other = rng.choice(others)
            i = rng.randrange(len(other.starts))
            end = other.starts[i + 1] if i + 1 < len(other.starts) else len(other.words)
            at = rng.choice(starts)
            words[at:at] = other.words[other.starts[i] : end]
        elif kind == 8:  # change an instruction's opcode, keeping its operands
            at = rng.choice(starts)
            words[at] = (words[at] & 0xFFFF0000) | rng.choice(_opcodes())
        else:  # truncate, or change the id bound
            if rng.random() < 0.3:
                del words[rng.randrange(5, len(words)) :]
            else:
                words[3] = rng.choice((words[3] - 1, words[3] + 1, 0, 1, 0xFFFFFFFF))
    return _pack(words)


def _boundaries(words: list[int]) -> list[int]:
    starts, pos = [], 5
    while pos < len(words):
        starts.append(pos)
        pos += max(1, words[pos] >> 16)
    return starts


_OPCODE_LIST: list[int] = []


def _opcodes() -> list[int]:
    if not _OPCODE_LIST:
        from spirvjit.spirv import grammar

        _OPCODE_LIST.extend(sorted(grammar.INSTRUCTIONS))
    return _OPCODE_LIST


def mutants(corpus: list[bytes], count: int, seed: int):
    """``count`` mutants of ``corpus``, the same for the same seed."""
    seeds = [Seed(data) for data in corpus]
    rng = random.Random(seed)
    for _ in range(count):
        yield mutate(rng.choice(seeds), seeds, rng)


# -- running one input -------------------------------------------------------------------


def run_pipeline(data: bytes) -> None:
    """Everything up to a launch: read, check, translate, compile and load each kernel,
    as a first launch loads it: on the CPU, tiered (the default), its quick tier (the
    scalar translation, a few passes, -O0 code generation), then the optimized tier
    compiled in the background, whose failure the kernel only logs (it keeps the quick
    code): that error is raised here, so both tiers' outcomes count."""
    import spirvjit
    from spirvjit.jit import Abandoned

    program = spirvjit.Program(data)
    for name in program.kernel_names:
        kernel = program.kernel(name)
        kernel.compile(quick=True)
        kernel.wait_optimized()
        error = getattr(kernel._default, "error", None)  # a TieredKernel's optimized tier
        if error is not None and not isinstance(error, Abandoned):
            raise error


def classify(data: bytes) -> tuple[str, str]:
    """(outcome, signature) for one input run in this process: ``ok``, ``refused``
    (signature: the error class) or ``escape`` (signature: class and innermost
    spirvjit frame, which is what tells distinct bugs apart)."""
    try:
        run_pipeline(data)
    except Exception as exc:
        name = type(exc).__name__
        if name in EXPECTED:
            return "refused", name
        return "escape", signature(exc)
    return "ok", ""


def signature(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "spirvjit" in f.filename] or frames
    where = ours[-1] if ours else None
    place = f"{Path(where.filename).name}:{where.lineno}" if where else "?"
    # The innermost frame of all too, when it's a library's (llvmlite, struct, ...).
    inner = frames[-1] if frames else None
    if inner is not None and inner is not where:
        place += f" ({Path(inner.filename).name}:{inner.lineno})"
    return f"{type(exc).__name__} at {place}: {str(exc)[:120]}"


# -- the long run ------------------------------------------------------------------------


def _worker() -> int:
    """Reads length-prefixed inputs on stdin, writes one JSON line per input."""
    stdin = sys.stdin.buffer
    while True:
        head = stdin.read(4)
        if len(head) < 4:
            return 0
        data = stdin.read(struct.unpack("<I", head)[0])
        try:
            outcome, sig = classify(data)
        except MemoryError:  # raised outside classify's own handler (rare)
            outcome, sig = "escape", "MemoryError"
        sys.stdout.write(json.dumps({"outcome": outcome, "signature": sig}) + "\n")
        sys.stdout.flush()


class _Runner:
    """A worker process under a memory rlimit; restarted after a crash or a hang."""

    def __init__(self, memory_bytes: int, timeout: float):
        self.memory_bytes = memory_bytes
        self.timeout = timeout
        self.process: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        limit = self.memory_bytes

        def limits() -> None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

        env = {**os.environ, "SPIRVJIT_CACHE": "0", "PYTHONPATH": str(ROOT)}
        return subprocess.Popen(
            [sys.executable, "-m", "tests.spirv_fuzz", "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=ROOT,
            preexec_fn=limits,
        )

    def run(self, data: bytes) -> tuple[str, str]:
        if self.process is None or self.process.poll() is not None:
            self.process = self._start()
        process = self.process
        try:
            process.stdin.write(struct.pack("<I", len(data)) + data)
            process.stdin.flush()
        except BrokenPipeError:
            return self._died()
        ready, _, _ = select.select([process.stdout], [], [], self.timeout)
        if not ready:
            process.kill()
            process.wait()
            self.process = None
            return "hang", f"no answer in {self.timeout:.0f} s"
        line = process.stdout.readline()
        if not line:
            return self._died()
        result = json.loads(line)
        return result["outcome"], result["signature"]

    def _died(self) -> tuple[str, str]:
        code = self.process.wait()
        self.process = None
        return "crash", f"worker exited with {code}"

    def close(self) -> None:
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait()


def long_run(args: argparse.Namespace) -> dict:
    corpus = fixture_corpus() + (suite_corpus() if args.suite else [])
    runner = _Runner(args.memory_mib << 20, args.timeout)
    counts: collections.Counter[str] = collections.Counter()
    signatures: dict[str, dict] = {}
    save = Path(args.save) if args.save else None
    start = time.monotonic()
    for index, data in enumerate(mutants(corpus, args.count, args.seed)):
        outcome, sig = runner.run(data)
        counts[outcome] += 1
        if outcome in ("escape", "crash", "hang"):
            entry = signatures.setdefault(f"{outcome}: {sig}", {"count": 0, "first": index})
            entry["count"] += 1
            if save is not None and entry["count"] == 1:
                save.mkdir(parents=True, exist_ok=True)
                (save / f"{outcome}-{index}.spv").write_bytes(data)
        if args.progress and (index + 1) % args.progress == 0:
            print(
                f"{index + 1} inputs, {dict(counts)}, {time.monotonic() - start:.0f} s", flush=True
            )
    runner.close()
    return {
        "inputs": args.count,
        "seed": args.seed,
        "corpus_modules": len(corpus),
        "outcomes": dict(counts),
        "seconds": round(time.monotonic() - start, 1),
        "signatures": signatures,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tests.spirv_fuzz", description=__doc__)
    parser.add_argument("--count", type=int, default=1000, help="number of mutants")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--suite", action="store_true", help="add the kernel suite's programs")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per input")
    parser.add_argument("--memory-mib", type=int, default=4096, help="address-space rlimit")
    parser.add_argument("--save", help="directory for the first input of each bad signature")
    parser.add_argument("--progress", type=int, default=0, help="print a line every N inputs")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker()
    report = long_run(args)
    print(json.dumps(report, indent=2))
    bad = sum(report["outcomes"].get(k, 0) for k in ("escape", "crash", "hang"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
