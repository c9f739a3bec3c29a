"""The all-active copy of divergent loops in the CPU vectorizer
(backends/cpu/vectorize.py: ``_all_active``, ``_all_active_copy``, ``_goes_on``,
``_every_lane``; issue 19, the suite's reduction).

A divergent loop whose lanes leave only at its latch (a grid-stride loop ``for (i =
get_global_id(0); i < n; i += get_global_size(0))``) first runs as a copy in which every
lane is active: no active mask, no any-lane tests, plain vector loads; where the latch
compares an i64 counter whose lanes are consecutive with a uniform bound, whether every
lane goes on is one scalar compare of the last lane. When not every lane goes on, the
masked loop takes over from that iteration with the lanes left (and is skipped when none
is left). Every kernel runs with the vectorizer on and off for several local sizes and
lengths (multiples of the global size, one more or fewer for some lanes, shorter than the
global size, empty) and must give the same bits, and the NumPy/Python reference's.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import spirvjit
from spirvjit.arguments import LocalMemory

ROOT = Path(__file__).resolve().parents[2]

SOURCE = r"""
#pragma OPENCL FP_CONTRACT OFF
/* Grid-stride loops: each lane runs n / G iterations or one more. */
kernel void gsum_u(global const uint *x, global uint *out, uint n)
{
    uint acc = 0;
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0))
        acc = acc * 3u + x[i];
    out[get_global_id(0)] = acc;
}

kernel void gsum_f(global const float *x, global float *out, uint n)
{
    float acc = 0.0f;
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0))
        acc += x[i];
    out[get_global_id(0)] = acc;
}

/* A divergent if in the loop: masked blocks inside the all-active copy. */
kernel void gsum_if(global const int *x, global int *out, uint n)
{
    int acc = 0;
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) {
        int v = x[i];
        if (v & 1)
            acc += v / 3;
        else
            acc ^= (int)i;
    }
    out[get_global_id(0)] = acc;
}

/* An int counter (a vector compare decides whether every lane goes on) and lanes that
   leave at very different iterations. */
kernel void ragged(global const int *len, global int *out)
{
    int g = get_global_id(0);
    int acc = 1;
    for (int k = 0; k < len[g]; k++)
        acc = acc * 5 + k;
    out[g] = acc;
}

/* Lanes 2^61 apart, so that those of a chunk wrap around 2^64: lane 0's compare with the
   bound says nothing about the others, and the loop's lanes leave one by one. */
kernel void wrapping(global const int *w, global int *out, ulong off, ulong lim, int cap)
{
    size_t g = get_global_id(0);
    ulong i = g * 0x2000000000000000UL + off;
    int count = 0, acc = 0;
    do {
        acc = acc * 3 + w[count];  /* no closed form for clang to replace the loop by */
        count++;
        i += 1;
    } while (i < lim && count < cap);
    out[g] = acc;
}

/* A pointer walked by a uniform step for a per-lane count: lanes leave one by one. */
kernel void pointer_walk(global const float *a, global float *out, int n)
{
    int g = get_global_id(0);
    global const float *p = a + g;
    float s = 0.0f;
    for (int k = 0; k < n + g % 5; k++) {
        s = s * 0.5f + *p;
        p += get_global_size(0);
    }
    out[g] = s;
}

/* A break: lanes leave in the middle of an iteration, no all-active copy. */
kernel void find_first(global const int *x, global int *out, uint n, int key)
{
    int found = -1;
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0)) {
        if (x[i] == key) {
            found = (int)i;
            break;
        }
    }
    out[get_global_id(0)] = found;
}

/* Conditions on the local id against a uniform k, which hold for a range of lanes: a
   chunk's first and last lanes decide them (``_lane_range``). The blocks read the tile
   at other work-items' places, so the skipped and the masked lanes must not run. */
kernel void ranges(global const int *x, global int *out, local int *tile, int k)
{
    int lid = get_local_id(0);
    size_t ulid = get_local_id(0);
    size_t g = get_global_id(0);
    int size = get_local_size(0);
    tile[lid] = x[g];
    barrier(CLK_LOCAL_MEM_FENCE);
    int r = 0;
    if (lid < k)
        r += tile[lid] * 3;
    if (ulid >= (size_t)k)
        r -= tile[size - 1 - lid];
    if (lid > size - k)
        r ^= tile[(lid + k) % size];
    if (k > lid)
        r *= 3;
    if (lid <= k)
        r += 11;
    if (ulid == (size_t)k)
        r += 1000 + tile[0];
    if (lid != k)
        r += 7;
    if (k > 2) {
        if (ulid < (size_t)k)  /* under a uniform mask */
            r += tile[k - 1 - lid];
    }
    if (g < (size_t)k)  /* the global id (below 2^63 - 1) */
        r += 100;
    int gi = get_global_id(0);
    if (gi * 4 - 2 < k)  /* not known to be in order (no nsw): the lanes of the mask */
        r += 200;
    barrier(CLK_LOCAL_MEM_FENCE);
    tile[lid] = r;
    out[g] = r;
}

/* The benchmark suite's reduction shape over integers (barrier regions). */
kernel void reduce_u(global const uint *x, global uint *partial, local uint *scratch, uint n)
{
    size_t lid = get_local_id(0);
    uint sum = 0;
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0))
        sum = sum * 7u + x[i];
    scratch[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t stride = get_local_size(0) / 2; stride > 0; stride /= 2) {
        if (lid < stride)
            scratch[lid] = scratch[lid] * 3u + scratch[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = scratch[0];
}
"""

REDUCTION = (ROOT / "benchmarks" / "kernels" / "reduction.cl").read_text()

# (local size, groups): 1 and 7 (no vector chunk on 8 lanes), 12 (one chunk and 4 items
# one by one), 64, 256.
SHAPES = [(1, 5), (7, 3), (12, 4), (64, 3), (256, 2)]


def _lengths(global_size: int) -> list[int]:
    """Multiples of the global size, one more or fewer for some lanes, fewer items than
    work-items, none."""
    g = global_size
    return sorted({16 * g, 3 * g + 5, 4 * g - 1, max(g - 3, 0), 1, 0})


def _settings(monkeypatch, tmp_path: Path, on: bool) -> None:
    """The vectorizer on (every kernel it can) or off; each kernel's stages dumped under
    tmp_path/on or tmp_path/off when it is compiled (at its first launch)."""
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    monkeypatch.setenv("SPIRVJIT_WFV", "all" if on else "0")
    monkeypatch.setenv("SPIRVJIT_DUMP", str(tmp_path / ("on" if on else "off")))


def _programs(monkeypatch, tmp_path: Path, source: str) -> dict:
    """The program translated with the vectorizer on and off."""
    out = {}
    for on in (True, False):
        _settings(monkeypatch, tmp_path, on)
        program = spirvjit.compile_opencl(source)
        program.translation()  # now, under these settings
        out[on] = program
    out["dump"] = tmp_path
    return out


def _launch_both(programs, monkeypatch, name: str, make_args, **launch) -> list[np.ndarray]:
    """The array arguments after a launch with the vectorizer on, asserted bit for bit
    equal to those after a launch with it off."""
    results = []
    for on in (True, False):
        _settings(monkeypatch, programs["dump"], on)
        args = make_args()
        programs[on].kernel(name)(*args, **launch)
        results.append([a.copy() for a in args if isinstance(a, np.ndarray)])
    for vec, scalar in zip(*results, strict=True):
        np.testing.assert_array_equal(vec.view(np.uint8), scalar.view(np.uint8))
    return results[0]


def _clone_text(tmp_path: Path, clone: str) -> str:
    """The body of vector clone ``clone`` (a regex) in the unoptimized module dump."""
    for path in (tmp_path / "on").glob("*.ll"):
        if path.name.endswith(".opt.ll"):
            continue
        text = path.read_text()
        match = re.search(rf'define internal \w+ @"([^"]*{clone})"', text)
        if match:
            body = text[match.start() :]
            return body[: body.index("\n}")]
    raise AssertionError(f"no vector clone {clone}")


def _all_active_blocks(text: str) -> list[str]:
    return re.findall(r'^"?([\w.]+\.all)"?:', text, re.M)


def _grid_model(x: np.ndarray, n: int, g: int, step) -> list:
    out = []
    for lane in range(g):
        acc = step.start
        for i in range(lane, n, g):
            acc = step(acc, x[i], i)
        out.append(acc)
    return out


class _Step:
    def __init__(self, start, fn):
        self.start, self.fn = start, fn

    def __call__(self, acc, v, i):
        return self.fn(acc, v, i)


def test_grid_stride_integer_sum(monkeypatch, tmp_path):
    """Bit-exact per-lane order (acc * 3 + x) for every shape and length; the vector
    clone has the all-active copy and its latch test is a scalar compare of the last
    lane (``add ... 7`` of lane 0's counter, then ``icmp ult``)."""
    programs = _programs(monkeypatch, tmp_path, SOURCE)
    rng = np.random.default_rng(41)
    for local, groups in SHAPES:
        g = local * groups
        for n in _lengths(g):
            x = rng.integers(0, 2**32, max(n, 1), dtype=np.uint64).astype(np.uint32)
            (_, out) = _launch_both(
                programs, monkeypatch, "gsum_u",
                lambda x=x, g=g, n=n: [x.copy(), np.zeros(g, np.uint32), np.uint32(n)],
                global_size=g, local_size=local,
            )  # fmt: skip
            step = _Step(0, lambda acc, v, i: (acc * 3 + int(v)) & 0xFFFFFFFF)
            want = np.array(_grid_model(x, n, g, step), np.uint32)
            np.testing.assert_array_equal(out, want, err_msg=f"local {local}, n {n}")
    clone = _clone_text(tmp_path, r"\.gsum_u\.[^\"]*\.wfv")
    assert _all_active_blocks(clone), "no all-active copy"
    fast = clone[re.search(r'^"?[\w.]+\.all"?:', clone, re.M).start() :]
    fast = fast[: re.search(r'^"?[\w.]+\.all\.exit"?:', fast, re.M).start()]
    assert re.search(r"icmp ult i64 %\S+, %\S+", fast), "the latch test is not scalar"


def test_grid_stride_float_sum(monkeypatch, tmp_path):
    """Floats: the same bits as the scalar path and as float32 adds in the lanes' order."""
    programs = _programs(monkeypatch, tmp_path, SOURCE)
    rng = np.random.default_rng(43)
    for local, groups in SHAPES:
        g = local * groups
        for n in _lengths(g):
            x = rng.uniform(-1, 1, max(n, 1)).astype(np.float32)
            (_, out) = _launch_both(
                programs, monkeypatch, "gsum_f",
                lambda x=x, g=g, n=n: [x.copy(), np.zeros(g, np.float32), np.uint32(n)],
                global_size=g, local_size=local,
            )  # fmt: skip
            step = _Step(np.float32(0), lambda acc, v, i: np.float32(acc + v))
            want = np.array(_grid_model(x, n, g, step), np.float32)
            np.testing.assert_array_equal(out.view(np.uint32), want.view(np.uint32))


def test_masked_blocks_inside_the_copy(monkeypatch, tmp_path):
    programs = _programs(monkeypatch, tmp_path, SOURCE)
    rng = np.random.default_rng(47)
    for local, groups in [(12, 4), (64, 2)]:
        g = local * groups
        for n in _lengths(g):
            x = rng.integers(-1000, 1000, max(n, 1)).astype(np.int32)
            (_, out) = _launch_both(
                programs, monkeypatch, "gsum_if",
                lambda x=x, g=g, n=n: [x.copy(), np.zeros(g, np.int32), np.uint32(n)],
                global_size=g, local_size=local,
            )  # fmt: skip

            def step(acc, v, i):
                v = int(v)
                if v & 1:
                    return acc + int(np.fix(v / 3))  # C division truncates
                return acc ^ i

            want = np.array(_grid_model(x, n, g, _Step(0, step)), np.int64).astype(np.int32)
            np.testing.assert_array_equal(out, want, err_msg=f"local {local}, n {n}")
    assert _all_active_blocks(_clone_text(tmp_path, r"\.gsum_if\.[^\"]*\.wfv"))


def test_lanes_that_leave_at_different_iterations(monkeypatch, tmp_path):
    programs = _programs(monkeypatch, tmp_path, SOURCE)
    rng = np.random.default_rng(53)
    g = 96
    length = rng.integers(0, 30, g).astype(np.int32)
    length[:8] = 20  # a chunk whose lanes all leave together
    length[8:16] = 7 + np.arange(8) % 2  # one more iteration for every other lane

    (_, out) = _launch_both(
        programs, monkeypatch, "ragged", lambda: [length.copy(), np.zeros(g, np.int32)],
        global_size=g, local_size=32,
    )  # fmt: skip
    want = []
    for n in length.tolist():
        acc = 1
        for k in range(n):
            acc = (acc * 5 + k) & 0xFFFFFFFF
        want.append(acc)
    np.testing.assert_array_equal(out, np.array(want, np.uint32).view(np.int32))
    assert _all_active_blocks(_clone_text(tmp_path, r"\.ragged\.[^\"]*\.wfv"))


def test_lanes_that_wrap_around(monkeypatch, tmp_path):
    """The lanes of a chunk are lane 0's + i * 2^61 modulo 2^64: the last lane's compare
    (and the first's) says nothing about the others, so the latch test must see that
    the lanes are not in order (lane 1 leaves after one iteration, the others go on)."""
    programs = _programs(monkeypatch, tmp_path, SOURCE)
    g, cap = 32, 6
    umax = (1 << 64) - 1
    w = np.array([5, -7, 11, 13, -17, 19, 23], np.int32)
    for off, lim in [(umax - (1 << 61) - 1, umax), (umax - 3, umax - 1), (5, 1 << 63)]:
        (_, out) = _launch_both(
            programs, monkeypatch, "wrapping",
            lambda off=off, lim=lim: [
                w.copy(), np.zeros(g, np.int32), np.uint64(off), np.uint64(lim), np.int32(cap)
            ],
            global_size=g, local_size=16,
        )  # fmt: skip
        want, counts = [], set()
        for lane in range(g):
            i = (lane * (1 << 61) + off) & umax
            count = acc = 0
            while True:
                acc = (acc * 3 + int(w[count])) & 0xFFFFFFFF
                count += 1
                i = (i + 1) & umax
                if not (i < lim and count < cap):
                    break
            want.append(acc)
            counts.add(count)
        want = np.array(want, np.uint32).view(np.int32)
        np.testing.assert_array_equal(out, want, err_msg=f"off {off}, lim {lim}")
        assert len(counts) > 1  # lanes of a chunk leave at different iterations
    assert _all_active_blocks(_clone_text(tmp_path, r"\.wrapping\.[^\"]*\.wfv"))


def test_a_break_keeps_the_masked_loop_alone(monkeypatch, tmp_path):
    programs = _programs(monkeypatch, tmp_path, SOURCE)
    rng = np.random.default_rng(59)
    g, n = 48, 48 * 9 + 7
    x = rng.integers(0, 40, n).astype(np.int32)
    (_, out) = _launch_both(
        programs, monkeypatch, "find_first",
        lambda: [x.copy(), np.zeros(g, np.int32), np.uint32(n), np.int32(3)],
        global_size=g, local_size=16,
    )  # fmt: skip
    want = [next((i for i in range(lane, n, g) if x[i] == 3), -1) for lane in range(g)]
    np.testing.assert_array_equal(out, want)
    assert not _all_active_blocks(_clone_text(tmp_path, r"\.find_first\.[^\"]*\.wfv"))


def _tree(values: list, local: int, combine) -> list:
    """The work-group tree of ``reduce_u``/the suite's reduction, one group's scratch."""
    scratch = list(values)
    stride = local // 2
    while stride > 0:
        for lid in range(stride):
            scratch[lid] = combine(scratch[lid], scratch[lid + stride])
        stride //= 2
    return scratch[0]


@pytest.mark.parametrize("local", [1, 7, 24, 64, 256])
def test_reduction_regions(monkeypatch, tmp_path, local):
    """The suite's reduction (floats) and its integer form in barrier regions: the first
    region's grid-stride loop has the all-active copy; per-group results are the scalar
    path's bits and the model's (float32 adds in the kernel's order). On 8-lane targets
    the float sum carried around the loop gets the 16-wide region clones
    (abi._fma_loop): 24 work-items are a 16-wide chunk and an 8-wide one."""
    programs = _programs(monkeypatch, tmp_path, SOURCE)
    floats = _programs(monkeypatch, tmp_path / "f", REDUCTION)
    rng = np.random.default_rng(61 + local)
    groups = 3
    g = local * groups
    for n in _lengths(g):
        x = rng.integers(0, 2**32, max(n, 1), dtype=np.uint64).astype(np.uint32)
        (_, partial) = _launch_both(
            programs, monkeypatch, "reduce_u",
            lambda x=x, n=n: [
                x.copy(), np.zeros(groups, np.uint32), LocalMemory(4 * local), np.uint32(n)
            ],
            global_size=g, local_size=local,
        )  # fmt: skip
        step = _Step(0, lambda acc, v, i: (acc * 7 + int(v)) & 0xFFFFFFFF)
        sums = _grid_model(x, n, g, step)
        want = [
            _tree(sums[k * local : (k + 1) * local], local, lambda a, c: (a * 3 + c) & 0xFFFFFFFF)
            for k in range(groups)
        ]
        np.testing.assert_array_equal(partial, np.array(want, np.uint32))

        xf = rng.uniform(0, 1, max(n, 1)).astype(np.float32)
        (_, partial) = _launch_both(
            floats, monkeypatch, "reduction",
            lambda xf=xf, n=n: [
                xf.copy(), np.zeros(groups, np.float32), LocalMemory(4 * local), np.uint32(n)
            ],
            global_size=g, local_size=local,
        )  # fmt: skip
        sums = _grid_model(xf, n, g, _Step(np.float32(0), lambda acc, v, i: np.float32(acc + v)))
        want = [
            _tree(sums[k * local : (k + 1) * local], local, lambda a, c: np.float32(a + c))
            for k in range(groups)
        ]
        np.testing.assert_array_equal(
            partial.view(np.uint32), np.array(want, np.float32).view(np.uint32)
        )
    assert _all_active_blocks(_clone_text(tmp_path, r"\.reduce_u\.[^\"]*\.wfv\.r0"))
    assert _all_active_blocks(_clone_text(tmp_path / "f", r"\.reduction\.[^\"]*\.wfv\.r0"))
    note = floats[True].translation().kernel_functions["reduction"].wfv_note
    if "8 per instruction" in note:  # AVX2
        assert note.endswith("16 per instruction in 3 of them"), note
    note = programs[True].translation().kernel_functions["reduce_u"].wfv_note
    assert "per instruction in" not in note, note  # no float sum: one width (no wide clones)


def _ranges_model(x: np.ndarray, local: int, k: int) -> np.ndarray:
    out = np.zeros(len(x), np.int64)
    for g in range(len(x)):
        group, lid = divmod(g, local)
        tile = [int(v) for v in x[group * local : (group + 1) * local]]
        r = 0
        if lid < k:
            r += tile[lid] * 3
        if lid >= k % (1 << 64):  # (size_t)k: a negative k is huge
            r -= tile[local - 1 - lid]
        if lid > local - k:
            r ^= tile[(lid + k) % local] if lid + k >= 0 else 0
        if k > lid:
            r *= 3
        if lid <= k:
            r += 11
        if lid == k % (1 << 64):
            r += 1000 + tile[0]
        if lid != k:
            r += 7
        if k > 2 and lid < k:
            r += tile[k - 1 - lid]
        if g < k % (1 << 64):
            r += 100
        if g * 4 - 2 < k:
            r += 200
        out[g] = r
    return out.astype(np.int32)


@pytest.mark.parametrize("local", [1, 7, 8, 12, 64, 256])
def test_lane_ranges(monkeypatch, tmp_path, local):
    """Every predicate's scalar any-lane/every-lane tests (``_lane_range``) for k before,
    inside, at the ends of and past each chunk, and negative; the same bits as the
    scalar path and the model's. The region clone has the named scalar tests."""
    programs = _programs(monkeypatch, tmp_path, SOURCE)
    rng = np.random.default_rng(67)
    groups = 3
    g = local * groups
    x = rng.integers(-50, 50, g).astype(np.int32)
    for k in sorted({-2, 0, 1, 3, 7, 8, 9, local // 2, local - 1, local, local + 5}):
        if k >= 3 and k - 1 >= local:
            continue  # tile[k - 1 - lid] past the tile: undefined
        (_, out) = _launch_both(
            programs, monkeypatch, "ranges",
            lambda k=k: [x.copy(), np.zeros(g, np.int32), LocalMemory(4 * local), np.int32(k)],
            global_size=g, local_size=local,
        )  # fmt: skip
        np.testing.assert_array_equal(out, _ranges_model(x, local, k), err_msg=f"k {k}")
    clone = _clone_text(tmp_path, r"\.ranges\.[^\"]*\.wfv\.r1")
    assert len(re.findall(r'%"lanes\.some[.\d]*" = icmp', clone)) >= 6
    assert re.search(r'%"lanes\.at[.\d]*" = and', clone)


@pytest.mark.parametrize(("level", "width"), [("x86-64", 4), ("x86-64-v4", 16)])
def test_other_x86_levels_vectorize(monkeypatch, tmp_path, capsys, level, width):
    """SSE (W = 4, masks as 32-bit lanes) and AVX-512 (W = 16, masks as vectors of i1):
    every kernel here is still vectorized, with its all-active copies and lane ranges,
    and no region declines (compiled only: this host may not run them)."""
    from spirvjit.cli import main

    monkeypatch.setenv("SPIRVJIT_WFV", "all")
    monkeypatch.setenv("SPIRVJIT_CACHE", "0")
    path = tmp_path / "k.spv"
    path.write_bytes(spirvjit.compile_opencl(SOURCE).spirv)
    assert main(["dis", str(path), "--target", level]) == 0
    notes = re.findall(
        r"^; ((?:not )?vectorized across work-items.*)$", capsys.readouterr().out, re.M
    )
    assert len(notes) == len(re.findall(r"^kernel void", SOURCE, re.M)), notes
    assert all(n.startswith(f"vectorized across work-items, {width} per") for n in notes), notes
    assert not any("(" in n for n in notes), notes  # no region declined (a vectorizer error)


def test_pointer_walk(monkeypatch, tmp_path):
    """A pointer induction in the loop (its lane 0 a scalar phi in both copies) whose
    lanes leave at different iterations: the scalar path's bits and float32 in order."""
    programs = _programs(monkeypatch, tmp_path, SOURCE)
    g, n = 40, 6
    a = np.random.default_rng(71).uniform(-1, 1, g * (n + 5)).astype(np.float32)
    (_, out) = _launch_both(
        programs, monkeypatch, "pointer_walk",
        lambda: [a.copy(), np.zeros(g, np.float32), np.int32(n)],
        global_size=g, local_size=20,
    )  # fmt: skip
    want = []
    for lane in range(g):
        s = np.float32(0)
        for k in range(n + lane % 5):
            s = np.float32(np.float32(s * np.float32(0.5)) + a[lane + k * g])
        want.append(s)
    np.testing.assert_array_equal(out.view(np.uint32), np.array(want, np.float32).view(np.uint32))
    assert _all_active_blocks(_clone_text(tmp_path, r"\.pointer_walk\.[^\"]*\.wfv"))
