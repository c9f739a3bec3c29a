"""CPU benchmark suite: spirvjit vs Intel's and PoCL's OpenCL vs native C (gcc -O3) vs NumPy.

For each kernel of benchmarks/cases.py, every contender computes the same problem on its
own copy of the same data; its result is checked against a reference (NumPy, mostly in
double precision) before it is timed. Then: kernel time (median of repeated runs after a
warm-up), first launch from OpenCL C in a fresh process with caches off and with a warm
cache, and the launch overhead of a one-work-item kernel. Results go to stdout,
benchmarks/results/suite.md and benchmarks/results/suite.png.

    python3 benchmarks/suite.py [--quick] [--only saxpy,sgemm] [--contenders spirvjit,intel]
        [--repeats N] [--no-cold]

Exit status 1 if any contender computes a wrong result (or spirvjit fails to run a
kernel); contenders that are not installed are reported and skipped.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import numpy as np  # noqa: E402
from bench_lib import (  # noqa: E402
    fmt_ms,
    fmt_ratio,
    geomean,
    machine_info,
    markdown_table,
    median_seconds,
    median_us,
)
from cases import CASES, KERNEL_DIRS, Case  # noqa: E402
from coldstart import CHILDREN_PER_REPEAT, first_launches  # noqa: E402
from contenders import CONTENDERS, Unavailable  # noqa: E402

RESULTS = HERE / "results"
LABELS = {
    "spirvjit": "spirvjit",
    "intel": "Intel",
    "intel-spv": "Intel (SPIR-V)",
    "pocl": "PoCL",
    "native": "native C",
    "numpy": "NumPy",
}
# Speed-up columns: (contender, goal per kernel). Above 1x spirvjit is faster.
VERSUS = (("intel", 0.8), ("pocl", 1.2), ("native", 0.8))
GOALS = [
    "geomean >= 1.0x Intel CPU OpenCL (from source), every kernel >= 0.8x Intel",
    "every kernel >= 1.2x PoCL",
    "guarded kernels (saxpy, stencil, ...) >= 0.8x native C",
    "tiny-kernel launch overhead <= 20 us",
    "cold JIT <= 50 ms per kernel",
]


@dataclass
class Outcome:
    """One contender on one kernel: a time, or why there is none."""

    seconds: float | None = None
    runs: int = 0
    note: str = ""  # "skipped: ..." or the mismatch / failure message
    wrong: bool = False  # a result that does not match the reference
    failed: bool = False  # an exception while compiling or running


@dataclass
class Report:
    mode: str
    repeats: int
    warmup: int
    sizes: dict[str, str] = field(default_factory=dict)
    times: dict[str, dict[str, Outcome]] = field(default_factory=dict)
    launch_us: dict[str, float | str] = field(default_factory=dict)
    first: dict[str, dict] = field(default_factory=dict)  # runtime -> {"cold"/"warm": rows}
    machine: list[tuple[str, str]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--only", help=f"comma-separated kernels of: {','.join(CASES)}")
    parser.add_argument("--contenders", help=f"comma-separated, of: {','.join(CONTENDERS)} (all)")
    parser.add_argument("--repeats", type=int, help="timed runs per figure (10; quick: 3)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs first (2)")
    parser.add_argument("--launches", type=int, help="launches for the overhead (2000)")
    parser.add_argument("--no-cold", action="store_true", help="skip the first-launch figures")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where suite.md/png go")
    opts = parser.parse_args(argv)
    names = opts.only.split(",") if opts.only else list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"unknown kernel(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    opts.names = names
    opts.runtimes = opts.contenders.split(",") if opts.contenders else list(CONTENDERS)
    if any(c not in CONTENDERS for c in opts.runtimes):
        parser.error(f"--contenders: choose from {', '.join(CONTENDERS)}")
    opts.mode = "quick" if opts.quick else "full"
    opts.repeats = opts.repeats or (3 if opts.quick else 10)
    opts.launches = opts.launches or (500 if opts.quick else 2000)
    if opts.repeats < 1:
        parser.error("--repeats must be at least 1")
    return opts


def make_contenders(wanted: list[str]) -> tuple[dict[str, object], dict[str, str]]:
    """The contenders that can run here, and why the others cannot."""
    made, missing = {}, {}
    for name, cls in CONTENDERS.items():
        if name not in wanted:
            continue
        try:
            made[name] = cls()
        except Exception as e:  # not installed: report, run the others
            missing[name] = f"{type(e).__name__}: {e}"
    return made, missing


def measure(case: Case, p: dict, contender, want: object, opts) -> Outcome:
    """Check one contender's result on the case, then time it."""
    try:
        data = case.make_data(p)
        prepared = contender.prepare(case, data, p)
        start = time.perf_counter()
        returned = prepared.run()
        check_s = time.perf_counter() - start
        error = case.compare(prepared.result(returned), want)
    except Unavailable as e:
        return Outcome(note=f"skipped: {e}")
    except Exception as e:
        traceback.print_exc()
        return Outcome(note=f"failed: {type(e).__name__}: {e}", failed=True)
    if error:
        return Outcome(note=f"WRONG RESULT: {error}", wrong=True)
    budget = 1.0 if opts.quick else 5.0
    # The checked run was the first warm-up: slow kernels (> 0.25 s) get one more only.
    warmup = min(opts.warmup, 1) if check_s > 0.25 else opts.warmup
    try:
        if prepared.timer is not None:  # timed where it runs (Intel's child process)
            seconds, runs = prepared.timer(warmup, opts.repeats, budget)
        else:
            seconds, runs = median_seconds(prepared.run, warmup, opts.repeats, budget)
    except Exception as e:
        traceback.print_exc()
        return Outcome(note=f"failed: {type(e).__name__}: {e}", failed=True)
    return Outcome(seconds, runs)


def measure_kernels(report: Report, contenders: dict, opts) -> None:
    for number, name in enumerate(opts.names, 1):
        case = CASES[name]
        p = case.sizes[opts.mode]
        print(f"[{number}/{len(opts.names)}] {name}", flush=True)
        report.sizes[name] = case.describe(p)
        start = time.perf_counter()
        want = case.reference(case.make_data(p), p)
        ref_s = time.perf_counter() - start
        row = report.times.setdefault(name, {})
        for cname, contender in contenders.items():
            outcome = measure(case, p, contender, want, opts)
            row[cname] = outcome
            gc.collect()
            shown = f"{outcome.seconds * 1e3:9.3f} ms" if outcome.seconds else outcome.note
            print(f"  {name:<13} {cname:<9} {shown}", flush=True)
            # A wrong result is always a problem; a crash only for spirvjit (the others
            # are references, and their failures are listed under Notes).
            if outcome.wrong or (outcome.failed and cname == "spirvjit"):
                report.problems.append(f"{name} / {cname}: {outcome.note}")
        print(f"  {name:<13} (reference {ref_s:.2f} s)", flush=True)


def launch_overhead(contenders: dict, count: int) -> dict[str, float | str]:
    """Median µs of one whole launch of a one-work-item kernel (arguments included)."""
    source = (KERNEL_DIRS[0] / "tiny.cl").read_text()
    out: dict[str, float | str] = {}
    target = np.zeros(1, np.int32)
    if "spirvjit" in contenders:
        import spirvjit

        kernel = spirvjit.compile_opencl(source).kernel("tiny")
        kernel.compile()  # the optimized code, not the tiered JIT's quick tier
        out["spirvjit"] = median_us(lambda: kernel(target, 7, global_size=(1,)), count)
    if "pocl" in contenders:
        pocl = contenders["pocl"]
        cl, queue = pocl.cl, pocl.queue
        tiny = cl.Program(pocl.ctx, source).build().tiny
        buf = cl.Buffer(
            pocl.ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR, hostbuf=target
        )
        value = np.int32(7)

        def pocl_launch() -> None:
            tiny(queue, (1,), None, buf, value)  # clSetKernelArg x2 + enqueue
            queue.finish()

        out["pocl"] = median_us(pocl_launch, count)
    return out


def measure_first_launches(report: Report, contenders: dict, opts) -> None:
    from spirvjit.progress import Progress

    repeats = 1 if opts.quick else 3
    runtimes = [r for r in ("spirvjit", "pocl") if r in contenders]
    steps = len(runtimes) * repeats * CHILDREN_PER_REPEAT
    with Progress(steps, "first launches", "child process") as bar:
        for runtime in runtimes:
            _first_launches_of(report, runtime, opts, repeats, lambda what: bar.advance(1, what))


def _first_launches_of(report: Report, runtime: str, opts, repeats: int, progress) -> None:
    try:
        rows = first_launches(runtime, opts.names, repeats, progress)
    except Exception as e:
        report.problems.append(f"first launch / {runtime}: {e}")
        return
    report.first[runtime] = rows
    for mode, by_case in rows.items():
        for name, row in by_case.items():
            if row.get("error"):
                report.problems.append(f"first launch {mode} {name} / {runtime}: {row['error']}")


# ---------------------------------------------------------------- reporting


def _ratio(row: dict[str, Outcome], other: str) -> float | None:
    mine, theirs = row.get("spirvjit"), row.get(other)
    if mine and theirs and mine.seconds and theirs.seconds:
        return theirs.seconds / mine.seconds
    return None


def _time_cell(o: Outcome | None) -> str:
    if o is None or o.note.startswith("skipped"):
        return "-"
    return "WRONG" if o.wrong else "FAILED" if o.failed else fmt_ms(o.seconds)


def kernel_table(report: Report) -> str:
    header = ["kernel", "size", *(f"{LABELS[c]} ms" for c in CONTENDERS)]
    header += [f"vs {LABELS[c]}" for c, _ in VERSUS]
    header += ["goals (" + ", ".join(f">={g}x {LABELS[c]}" for c, g in VERSUS) + ")"]
    rows = []
    for name, row in report.times.items():
        cells = [name, report.sizes[name]]
        for c in CONTENDERS:
            o = row.get(c)
            cells.append(_time_cell(o))
        ratios = [_ratio(row, c) for c, _ in VERSUS]
        met = [
            "n/a" if v is None else ("met" if v >= goal else "MISSED")
            for v, (_, goal) in zip(ratios, VERSUS, strict=True)
        ]
        rows.append([*cells, *map(fmt_ratio, ratios), " / ".join(met)])
    means = [geomean(_ratio(r, c) for r in report.times.values()) for c, _ in VERSUS]
    g_intel = means[0]
    goal = "n/a" if g_intel is None else ("met" if g_intel >= 1.0 else "MISSED")
    blanks = [""] * (len(CONTENDERS) + 1)
    rows.append(["geomean", *blanks, *map(fmt_ratio, means), f">=1.0x Intel: {goal}"])
    return markdown_table(header, rows)


def _first_cell(rows: dict, name: str, key: str) -> str:
    row = rows.get(name)
    return f"{row[key]:.1f}" if row and key in row else "n/a"


def first_launch_table(report: Report) -> str:
    sj, pocl = report.first.get("spirvjit", {}), report.first.get("pocl", {})
    header = [
        "kernel",
        "spirvjit clang",
        "spirvjit JIT cold",
        "spirvjit cold total",
        "spirvjit warm total",
        "spirvjit warm load",
        "PoCL build cold",
        "PoCL 1st launch cold",
        "PoCL cold total",
        "PoCL warm total",
        "cold JIT <= 50 ms",
    ]
    rows = []
    for name in report.times:
        jit = sj.get("cold", {}).get(name, {}).get("jit_ms")
        rows.append(
            [
                name,
                _first_cell(sj.get("cold", {}), name, "build_ms"),
                _first_cell(sj.get("cold", {}), name, "jit_ms"),
                _first_cell(sj.get("cold", {}), name, "total_ms"),
                _first_cell(sj.get("warm", {}), name, "total_ms"),
                _first_cell(sj.get("warm", {}), name, "jit_ms"),
                _first_cell(pocl.get("cold", {}), name, "build_ms"),
                _first_cell(pocl.get("cold", {}), name, "first_ms"),
                _first_cell(pocl.get("cold", {}), name, "total_ms"),
                _first_cell(pocl.get("warm", {}), name, "total_ms"),
                "n/a" if jit is None else ("met" if jit <= 50 else "MISSED"),
            ]
        )
    return markdown_table(header, rows)


def launch_table(report: Report) -> str:
    rows = []
    for runtime, us in report.launch_us.items():
        goal = "met" if runtime == "spirvjit" and us <= 20 else "MISSED"
        rows.append([LABELS[runtime], f"{us:.1f}", goal if runtime == "spirvjit" else ""])
    return markdown_table(["runtime", "µs per launch", "<= 20 µs"], rows)


def render(report: Report) -> str:
    lines = [
        f"# spirvjit CPU benchmark suite ({report.mode} sizes)",
        "",
        f"Generated by `python3 benchmarks/suite.py{' --quick' if report.mode == 'quick' else ''}`"
        f" on {time.strftime('%Y-%m-%d %H:%M')}.",
        "",
        "## Machine",
        "",
        markdown_table(["", ""], [list(m) for m in report.machine]),
        "",
        f"## Kernel time (median of up to {report.repeats} runs after {report.warmup} warm-up)",
        "",
        "Speed-ups are other time / spirvjit time: above 1x spirvjit is faster. The contenders"
        " run one after the other on each kernel (interleaved), so one kernel's ratios come"
        " from the same minute of a shared machine. PoCL and Intel run on"
        " buffers wrapping page-aligned arrays (USE_HOST_PTR, no copies); each timed"
        " run ends with `clFinish`. Intel: its CPU runtime (intel-opencl-rt, CL_CONFIG_* at"
        " defaults) in a child process, from the OpenCL C source and (Intel (SPIR-V)) from the"
        " SPIR-V spirvjit runs (clCreateProgramWithIL). Native C: gcc -O3 -march=native"
        " -fopenmp, called through ctypes. Compilation is never in these times.",
        "",
        kernel_table(report),
        "",
        "## First launch from OpenCL C in a fresh process (ms, tiny problem)",
        "",
        "Cold: caches off (SPIRVJIT_CACHE=0, POCL_KERNEL_CACHE=0). Warm: a second process on"
        " the cache directory a first one filled. spirvjit: clang (OpenCL C -> SPIR-V), then"
        " the JIT (`Kernel.compile_seconds`; warm: loading the cached code); total = source to"
        " first result. PoCL: clBuildProgram, then the first launch (PoCL generates the"
        " work-group function there). One-time runtime start-up is excluded (a different"
        " kernel is launched first). n/a: no measurement (e.g. the warm run was no cache hit).",
        "",
        first_launch_table(report) if report.first else "(skipped: --no-cold)",
        "",
        "## Launch overhead of a one-work-item kernel (median, arguments set each launch)",
        "",
        launch_table(report),
        "",
        "## Goals (shown, not asserted)",
        "",
        *(f"- {g}" for g in GOALS),
    ]
    if report.problems:
        lines += ["", "## PROBLEMS", "", *(f"- {p}" for p in report.problems)]
    notes = [
        (name, c, o.note)
        for name, row in report.times.items()
        for c, o in row.items()
        if o.note and not o.wrong and not (o.failed and c == "spirvjit")
    ]
    if notes:
        lines += ["", "## Notes", "", *(f"- {n} / {c}: {note}" for n, c, note in notes)]
    return "\n".join(lines) + "\n"


def plot(report: Report, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(report.times)
    series = {f"vs {LABELS[c]}": [_ratio(report.times[n], c) for n in names] for c, _ in VERSUS}
    labels = [*names, "geomean"]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(labels)), 4.5))
    width = 0.8 / len(series)
    for i, (label, values) in enumerate(series.items()):
        values = [*values, geomean(values)]
        xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(labels))]
        heights = [v if v else 0 for v in values]
        bars = ax.bar(xs, heights, width, label=f"spirvjit speed-up {label}")
        for bar, v in zip(bars, values, strict=True):
            if v:
                ax.annotate(
                    f"{v:.2f}",
                    (bar.get_x() + width / 2, v),
                    ha="center",
                    fontsize=7,
                    xytext=(0, 2),
                    textcoords="offset points",
                )
    ax.set_yscale("log")
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.axhline(1.2, color="tab:orange", linewidth=0.8, linestyle="--", label="goal: 1.2x PoCL")
    ax.axhline(0.8, color="tab:gray", linewidth=0.8, linestyle="--", label="goal: 0.8x Intel")
    ax.set_xticks(range(len(labels)), labels, rotation=30)
    ax.set_ylabel("speed-up (other time / spirvjit time)")
    cpu = dict(report.machine).get("CPU", "host CPU")
    ax.set_title(f"spirvjit on {cpu} ({report.mode} sizes)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    opts = parse_args(argv)
    contenders, missing = make_contenders(opts.runtimes)
    report = Report(opts.mode, opts.repeats, opts.warmup)
    for name, why in missing.items():
        print(f"{name}: not available ({why})", file=sys.stderr)
        if name == "spirvjit":
            report.problems.append(f"spirvjit not available: {why}")
    pocl, intel = contenders.get("pocl"), contenders.get("intel") or contenders.get("intel-spv")
    report.machine = machine_info(pocl.version if pocl else None, intel.version if intel else None)

    print(f"Kernel times ({opts.mode} sizes):", flush=True)
    measure_kernels(report, contenders, opts)
    print("Launch overhead ...", flush=True)
    report.launch_us = launch_overhead(contenders, opts.launches)
    if not opts.no_cold:
        print("First launches (child processes) ...", flush=True)
        measure_first_launches(report, contenders, opts)

    text = render(report)
    print()
    print(text)
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / "suite.md").write_text(text)
    try:
        plot(report, opts.out / "suite.png")
    except ImportError as e:
        print(f"no plot: {e}", file=sys.stderr)
    print(f"wrote {opts.out / 'suite.md'} and {opts.out / 'suite.png'}")
    for problem in report.problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    return 1 if report.problems else 0


if __name__ == "__main__":
    sys.exit(main())
