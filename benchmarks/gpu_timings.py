"""Kernel times on a GPU: the benchmark kernels launched through spirvjit against clang's
native build of the same OpenCL C, on the same device, driver context, data and NDRange.

    python3 benchmarks/gpu_timings.py [--size quick|full|first] [--kernels saxpy,nbody]
        [--repeat 20] [--out benchmarks/results]

spirvjit: ``compile_opencl`` -> SPIR-V -> spirvjit's JIT, launched as users launch it
(device arrays, a ``Stream``; the launch-specialised variant where the launch allows).
Native: the same source built as ``gpu_codegen.py`` builds it (AMD: clang-22 with libclc,
``ld.lld -shared``; NVIDIA: clang-22 with libclc and libdevice to PTX, then ptxas where
installed), loaded into the same driver context and launched with the same arguments
(the HIP runtime fills an AMD code object's hidden arguments from its metadata note).
Each is timed with driver events around one launch, ``--repeat`` times after two warm-up
launches; the table gives the medians. Both outputs are checked against the case's
reference (benchmarks/cases.py) first: a wrong result is reported, not timed.

Without an AMD or NVIDIA GPU (and its driver) this says so and exits 0, writing nothing:
the static comparison that needs no GPU is ``gpu_codegen.py``.

Writes ``gpu_timings.md``.
"""

from __future__ import annotations

import argparse
import re
import statistics
import struct
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from cases import CASES, Local  # noqa: E402
from gpu_codegen import amd_native, nvidia_native  # noqa: E402

import spirvjit  # noqa: E402
from spirvjit.arguments import device_buffer  # noqa: E402
from spirvjit.ndrange import choose_whole_groups  # noqa: E402
from spirvjit.toolchain import find_tool  # noqa: E402

SHARED_ALIGN = 16
# A kernel that stores the shared-window address of the dynamic shared memory: where a
# native NVIDIA kernel's __local pointer argument points (CUDA does not tell the host).
DYNAMIC_SHARED_PROBE = """.version 7.0
.target {arch}
.address_size 64
.extern .shared .align 16 .b8 dynamic_shared[];
.visible .entry probe(.param .u64 out)
{{
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u64 %rd2, dynamic_shared;
    st.global.u64 [%rd1], %rd2;
    ret;
}}
"""


class Skip(Exception):
    """A kernel that cannot be compared on this device, with the reason."""


def gpus() -> list:
    return [d for d in spirvjit.devices() if d.kind in ("amd", "nvidia")]


def ndrange(case, p, device) -> tuple[tuple[int, int, int], tuple[int, int, int], int]:
    """(global, local, dims), three dimensions each, local sizes chosen as the launcher
    chooses them where the case leaves them open: both builds run the same groups."""
    global_size, local_size = case.ndrange(p)
    dims = len(global_size)
    gs = (*global_size, *(1,) * (3 - dims))
    if local_size is None:
        ls = choose_whole_groups(gs, dims, device.max_work_group_size)
    else:
        ls = (*local_size, *(1,) * (3 - dims))
    return gs, ls, dims


def to_device(args: list, device) -> list:
    return [
        spirvjit.asarray(a, device=device)
        if isinstance(a, np.ndarray)
        else spirvjit.LocalMemory(a.nbytes)
        if isinstance(a, Local)
        else a
        for a in args
    ]


def check(case, d, p, host_args, device_args) -> str | None:
    """None where the outputs the launch left in ``device_args`` are right."""
    outs = dict(d)
    for host, dev in zip(host_args, device_args, strict=True):
        if isinstance(host, np.ndarray):
            for name, array in d.items():
                if array is host:
                    outs[name] = dev.to_numpy()
    returned = case.host_finish(outs, p)
    return case.compare(case.result(outs, returned), case.reference(d, p))


def native_image(case, device, work: Path) -> tuple[bytes, str]:
    """The native build of ``case`` for ``device``: (code object or cubin/PTX, PTX text or
    '' on AMD)."""
    source = work / f"{case.name}.cl"
    source.write_text(case.source)
    arch = device.target.arch
    if device.kind == "amd":
        return amd_native(source, arch, work, case.options), ""
    ptx = nvidia_native(source, arch, work, case.options)
    ptxas = find_tool("ptxas")
    if ptxas is None:
        return ptx.encode(), ptx  # the driver compiles the PTX at load
    import subprocess

    cubin = work / f"{case.name}.cubin"
    (work / f"{case.name}.ptx").write_text(ptx)
    cmd = [ptxas, f"-arch={arch}", "-O3", "-o", str(cubin), str(work / f"{case.name}.ptx")]
    subprocess.run(cmd, check=True, capture_output=True)
    return cubin.read_bytes(), ptx


def native_params(case, device, image: bytes, ptx: str, device_args, ctx) -> tuple[list, int]:
    """The native kernel's parameters for ``device_args`` and its dynamic shared bytes."""
    base = 0
    if device.kind == "amd":
        from spirvjit.backends.amdgpu.code_object import kernels

        info = kernels(image, f"native {case.name}").get(case.name)
        if info is None or len(info.explicit_args) != len(device_args):
            raise Skip("the native code object's kernel takes other arguments")
        # Dynamic LDS follows the kernel's static LDS.
        base = -(-info.group_segment_fixed_size // SHARED_ALIGN) * SHARED_ALIGN
    elif any(isinstance(a, spirvjit.LocalMemory) for a in device_args):
        if re.search(r"^\s*\.shared\s", ptx, re.M):
            raise Skip("native kernel with static shared memory and a __local argument")
        base = dynamic_shared_base(ctx, device)
    params, shared = [], 0
    pointer = "<I" if device.kind == "amd" else "<Q"
    for arg in device_args:
        if isinstance(arg, spirvjit.LocalMemory):
            shared = -(-shared // SHARED_ALIGN) * SHARED_ALIGN
            params.append(struct.pack(pointer, base + shared))
            shared += arg.nbytes
        elif device_buffer(arg) is not None:
            params.append(struct.pack("<Q", device_buffer(arg).address))
        else:
            params.append(np.asarray(arg).tobytes())
    return params, shared


_PROBED: dict[int, int] = {}


def dynamic_shared_base(ctx, device) -> int:
    if device.index not in _PROBED:
        module = ctx.load_module(
            DYNAMIC_SHARED_PROBE.format(arch=device.target.arch).encode(), "probe"
        )
        out = spirvjit.zeros(1, np.uint64, device=device)
        params = [struct.pack("<Q", device_buffer(out).address)]
        ctx.launch(module.function("probe"), (1, 1, 1), (1, 1, 1), 16, params)
        ctx.synchronize()
        _PROBED[device.index] = int(out.to_numpy()[0])
    return _PROBED[device.index]


def median_ms(launch, stream, device, repeat: int) -> float:
    for _ in range(2):
        launch()
    stream.synchronize()
    times = []
    for _ in range(repeat):
        start = spirvjit.Event(device).record(stream)
        launch()
        end = spirvjit.Event(device).record(stream)
        times.append(start.elapsed_ms(end))
    return statistics.median(times)


def time_case(case, size: str, device, repeat: int, work: Path) -> list[str]:
    p = case.sizes[size]
    gs, ls, dims = ndrange(case, p, device)
    stream = spirvjit.Stream(device)
    program = spirvjit.compile_opencl(case.source, options=list(case.options))
    kernel = program.kernel(case.name)

    # spirvjit, checked once on fresh data, then timed.
    d = case.make_data(p)
    host_args = case.ocl_args(d, p)
    args = to_device(host_args, device)
    ranges = {"global_size": gs[:dims], "local_size": ls[:dims], "device": device}

    def ours():
        kernel(*args, **ranges, stream=stream)

    ours()
    stream.synchronize()
    wrong = check(case, d, p, host_args, args)
    ours_ms = None if wrong else median_ms(ours, stream, device, repeat)

    # The native build, the same way.
    native_ms, native_wrong = None, None
    try:
        image, ptx = native_image(case, device, work)
        ctx = device.backend.context(device)
        module = ctx.load_module(image, f"native {case.name}")
        function = module.function(case.name)
        d2 = case.make_data(p)
        host2 = case.ocl_args(d2, p)
        args2 = to_device(host2, device)
        params, shared = native_params(case, device, image, ptx, args2, ctx)

        def native():
            ctx.launch(function, gs, ls, shared, params, stream=stream.handle)

        native()
        stream.synchronize()
        native_wrong = check(case, d2, p, host2, args2)
        native_ms = None if native_wrong else median_ms(native, stream, device, repeat)
    except Skip as exc:
        native_wrong = f"not run: {exc}"
    except Exception as exc:  # a build or launch failure is a result too
        native_wrong = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"

    ratio = f"{ours_ms / native_ms:.2f}" if ours_ms and native_ms else "-"
    notes = "; ".join(
        f"{who}: {why}" for who, why in (("spirvjit", wrong), ("native", native_wrong)) if why
    )
    fmt = lambda ms: f"{ms:.4f}" if ms is not None else "-"  # noqa: E731
    size_text = case.describe(p)
    return [case.name, size_text, fmt(ours_ms), fmt(native_ms), ratio, notes]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="quick", choices=("first", "quick", "full"))
    parser.add_argument("--kernels", default="", help="case names (default: all)")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--out", default=str(HERE / "results"))
    args = parser.parse_args()
    found = gpus()
    if not found:
        print(
            "gpu_timings: no AMD or NVIDIA GPU here (spirvjit.devices() lists none, or "
            "their driver is missing): nothing timed, nothing written. The static "
            "comparison with clang's native build is benchmarks/gpu_codegen.py."
        )
        return 0
    names = [n for n in args.kernels.split(",") if n] or list(CASES)
    lines = [
        "# GPU kernel times: spirvjit vs clang-22's native build of the same OpenCL C",
        "",
        f"Command: `python3 benchmarks/gpu_timings.py --size {args.size} "
        f"--repeat {args.repeat}`. Median milliseconds of one launch (driver events), "
        "same device, data and NDRange; ratio = spirvjit / native.",
    ]
    for device in found:
        lines += ["", f"## {device.name} ({device.target.arch})", ""]
        lines += ["| kernel | size | spirvjit ms | native ms | ratio | notes |"]
        lines += ["|---|---|---|---|---|---|"]
        with tempfile.TemporaryDirectory() as tmp:
            for name in names:
                print(f"  {name} on {device.name}", file=sys.stderr, flush=True)
                row = time_case(CASES[name], args.size, device, args.repeat, Path(tmp))
                lines.append("| " + " | ".join(row) + " |")
    text = "\n".join(lines) + "\n"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_timings.md").write_text(text)
    print(text)
    print("written:", out / "gpu_timings.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
