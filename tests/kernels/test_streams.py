"""spirvjit.Stream and Event: asynchronous launches and copies, and timing them.

On the host CPU for real (launches run at once, events read the host clock); on a GPU
through the fake driver context of test_gpu_launch.py (what is queued on which stream,
and that nothing waits or copies), and the same sequence on a real GPU where one is
present (tests/unit/test_gpu_drivers.py covers the driver calls themselves)."""

from __future__ import annotations

import struct
import time

import numpy as np
import pytest
from harness import build
from test_gpu_launch import FakeContext

import spirvjit
from spirvjit.array import asarray, empty, zeros
from spirvjit.backends import backend
from spirvjit.device import Device
from spirvjit.errors import LaunchError
from spirvjit.target import parse_target

SOURCE = """
kernel void axpy(global float* y, global const float* x, float a) {
    size_t i = get_global_id(0);
    y[i] += a * x[i];
}
"""


@pytest.fixture(scope="module")
def program():
    return build(SOURCE)


def run_sequence(program, device, n: int = 4096) -> tuple[np.ndarray, float]:
    """The sequence the GPU test runs too: upload on a stream, launches on it between two
    events, read back on it. Returns the result and the events' elapsed milliseconds."""
    host_x = np.arange(n, dtype=np.float32)
    with spirvjit.Stream(device) as stream:
        x = empty(n, device=device).copy_from(host_x, stream=stream)
        y = zeros(n, device=device)
        start = stream.record()
        for _ in range(3):
            program.axpy(y, x, np.float32(0.5), global_size=n, stream=stream)
        end = spirvjit.Event(device).record(stream)
        result = y.to_numpy(stream=stream)  # synchronises the stream
        elapsed = start.elapsed_ms(end)
    return result, elapsed


# ----- the host CPU, for real ------------------------------------------------------


def test_cpu_stream_runs_the_sequence(program):
    result, elapsed = run_sequence(program, None)
    np.testing.assert_array_equal(result, 1.5 * np.arange(4096, dtype=np.float32))
    assert elapsed >= 0


def test_cpu_launch_on_a_stream_runs_at_once(program):
    """Host memory is the CPU device's memory: NumPy arrays are fine, and the result is
    there when the call returns (no synchronize needed on the host)."""
    stream = spirvjit.Stream()
    y, x = np.zeros(64, np.float32), np.ones(64, np.float32)
    program.axpy(y, x, np.float32(3), global_size=64, stream=stream)
    np.testing.assert_array_equal(y, np.full(64, 3, np.float32))
    stream.synchronize()
    stream.close()
    stream.close()  # twice is harmless
    with pytest.raises(LaunchError, match="closed"):
        program.axpy(y, x, np.float32(3), global_size=64, stream=stream)


def test_cpu_events_time_host_work():
    stream = spirvjit.Stream()
    before = time.perf_counter()
    start = spirvjit.Event().record(stream)
    time.sleep(0.05)
    end = stream.record()
    after = time.perf_counter()
    end.synchronize()
    elapsed = start.elapsed_ms(end)
    assert 49 <= elapsed <= (after - before) * 1000
    assert end.elapsed_ms(start) == pytest.approx(-elapsed)


def test_event_and_stream_misuse_is_refused(program, fake):
    _, gpu = fake
    never = spirvjit.Event()
    recorded = spirvjit.Stream().record()
    with pytest.raises(LaunchError, match="never recorded"):
        never.synchronize()
    with pytest.raises(LaunchError, match="never recorded"):
        recorded.elapsed_ms(never)
    with pytest.raises(LaunchError, match="cannot be recorded on a stream of"):
        spirvjit.Event(gpu).record(spirvjit.Stream())
    with pytest.raises(LaunchError, match="different devices"):
        recorded.elapsed_ms(spirvjit.Event(gpu))
    y = np.zeros(4, np.float32)
    with pytest.raises(LaunchError, match="takes a spirvjit.Stream, not int.*by position"):
        program.axpy(y, y, np.float32(1), global_size=4, stream=0)
    cpu = spirvjit.devices()[0]
    with pytest.raises(LaunchError, match="the stream is on fake H200.*the launch on host"):
        program.axpy(y, y, np.float32(1), global_size=4, device=cpu, stream=spirvjit.Stream(gpu))
    with pytest.raises(LaunchError, match="the stream is on host CPU"):
        zeros(4, device=gpu).to_numpy(stream=spirvjit.Stream())


# ----- a GPU through the fake driver context -----------------------------------------


@pytest.fixture
def fake(monkeypatch) -> tuple[FakeContext, Device]:
    context = FakeContext()
    monkeypatch.setattr(backend("nvptx"), "context", lambda device: context)
    device = Device(
        f"fake H200 {id(context)}", "nvidia", parse_target("sm_90"), 132, 1024, 228 * 1024, 0
    )
    return context, device


def test_gpu_launch_on_a_stream_is_queued_without_copies_or_waits(program, fake):
    context, device = fake
    stream = spirvjit.Stream(device)
    (handle,) = context.streams
    y = zeros(256, device=device)
    x = asarray(np.arange(256, dtype=np.float32), device=device)
    context.log.clear()
    program.axpy(y, x, np.float32(2), global_size=256, stream=stream)  # device from stream
    program.axpy(y, x, np.float32(2), global_size=256, device=device, stream=stream)
    assert context.log == [("launch", "axpy", handle)] * 2
    assert context.synchronized == 0 and context.freed == []  # nothing waited, no staging
    params = context.launches[-1][4]
    assert struct.unpack("<Q", params[0])[0] == y.address
    stream.synchronize()
    assert context.log[-1] == ("synchronize_stream", handle)
    # The plain form still copies, launches on the default stream and waits.
    out = np.zeros(256, np.float32)
    program.axpy(out, x, np.float32(2), global_size=256, device=device)
    assert context.log[-2] == ("launch", "axpy", None) and context.synchronized == 1
    assert out[0] == 42  # copied back


def test_gpu_launch_on_a_stream_refuses_host_arrays(program, fake):
    context, device = fake
    stream = spirvjit.Stream(device)
    x = asarray(np.ones(64, np.float32), device=device)
    context.log.clear()
    with pytest.raises(LaunchError, match=r"argument 'y' is host memory \(ndarray\).*stream"):
        program.axpy(np.zeros(64, np.float32), x, np.float32(1), global_size=64, stream=stream)
    assert context.launches == [] and context.log == [] and context.freed == []


def test_gpu_array_copies_and_events_go_to_the_stream(program, fake):
    context, device = fake
    stream = spirvjit.Stream(device)
    (handle,) = context.streams
    start, end = spirvjit.Event(device), spirvjit.Event(device)
    source = np.arange(32, dtype=np.float32)
    y = empty(32, device=device)
    context.log.clear()
    start.record(stream)
    y.copy_from(source, stream=stream)
    program.axpy(y, y, np.float32(1), global_size=32, stream=stream)
    end.record(stream)
    back = y.to_numpy(stream=stream)
    assert start.elapsed_ms(end) == 1.25  # the context's answer, in milliseconds
    assert [entry[0] for entry in context.log] == [
        "record_event",
        "copy_to_device",
        "launch",
        "record_event",
        "copy_to_host",
        "synchronize_stream",
        "synchronize_event",
        "synchronize_event",
        "elapsed_ms",
    ]
    assert context.log[0][2] == context.log[3][2] == handle  # (event, stream)
    assert context.log[1] == ("copy_to_device", y.address, 128, handle)
    assert context.log[4] == ("copy_to_host", y.address, 128, handle)
    assert context.log[6:] == [
        ("synchronize_event", end._handle),
        ("synchronize_event", start._handle),
        ("elapsed_ms", start._handle, end._handle),
    ]
    expected = source.copy()
    expected[0] = 42  # the fake kernel's mark
    np.testing.assert_array_equal(back, expected)


def test_stream_keeps_queued_host_data_alive_until_synchronized(fake):
    context, device = fake
    stream = spirvjit.Stream(device)
    empty(16, device=device).copy_from(np.arange(16.0), stream=stream)  # a temporary
    assert len(stream._pending) == 1
    stream.synchronize()
    assert stream._pending == []
    on_host = spirvjit.Stream()
    for _ in range(3):  # a loop that never synchronises keeps nothing on the host
        empty(16).copy_from(np.arange(16.0), stream=on_host)
    assert on_host._pending == []


# ----- a real GPU ---------------------------------------------------------------------

GPUS = [d for d in spirvjit.devices() if d.kind != "cpu"]


@pytest.mark.gpu
@pytest.mark.skipif(not GPUS, reason="no GPU: neither the CUDA driver nor HIP lists a device")
@pytest.mark.parametrize("device", GPUS, ids=[d.target.name for d in GPUS])
def test_stream_sequence_on_a_real_gpu(program, device):
    result, elapsed = run_sequence(program, device, n=1 << 20)
    np.testing.assert_array_equal(result, 1.5 * np.arange(1 << 20, dtype=np.float32))
    assert 0 < elapsed < 10_000
    x = asarray(np.ones(256, np.float32), device=device)
    with pytest.raises(LaunchError, match="host memory"):
        program.axpy(np.zeros(256, np.float32), x, np.float32(1), global_size=256,
                     stream=spirvjit.Stream(device))  # fmt: skip
