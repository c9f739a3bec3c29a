"""Streams and events: asynchronous launches and copies, and timing them.

A ``Stream`` is an in-order queue of work on one device (a CUDA stream, a HIP stream).
``kernel(..., stream=s)`` queues a launch on it and returns at once; its arguments must
be in the device's memory (``spirvjit.Array``, or GPU memory of another library), since
a NumPy array would have to be copied back when the kernel is done. ``Array.copy_from``
and ``Array.to_numpy`` take ``stream=`` too. ``s.synchronize()`` waits for everything
queued on ``s`` and raises the errors of that work (a kernel fault, for instance).

An ``Event`` marks a point in a stream: ``e.record(s)``, ``e.synchronize()`` and
``start.elapsed_ms(end)`` time the work between two marks on the device's clock.

On the host CPU device every launch and copy runs at once, so a stream has nothing to
queue and an event's time is the host's clock when it is recorded: code written for a
GPU stream runs unchanged (and correctly, just synchronously) on the CPU.

Streams are created blocking: they wait for work on the default stream, which the
plain synchronous launches and copies use, so the two forms can be mixed.
"""

from __future__ import annotations

import contextlib
import threading

from .device import Device, host_device
from .errors import LaunchError


class Stream:
    """An in-order queue of launches and copies on ``device`` (the host CPU when None)."""

    def __init__(self, device: Device | None = None):
        self.device = device if device is not None else host_device()
        self._backend = self.device.backend
        self._handle = self._backend.create_stream(self.device)
        self._lock = threading.Lock()
        # Host buffers that queued copies read or write: kept alive until the stream
        # is synchronised, so a temporary given to copy_from cannot be freed under it.
        self._pending: list = []

    @property
    def handle(self):
        """The backend's stream (a CUstream / hipStream_t address on a GPU)."""
        if self._handle is None:
            raise LaunchError("the Stream was closed")
        return self._handle

    def keep(self, host_buffer) -> None:
        """Keeps ``host_buffer`` alive until the next synchronize (for queued copies)."""
        if self.device.kind == "cpu":
            return  # the host copies at once: nothing is queued to read it later
        with self._lock:
            self._pending.append(host_buffer)

    def synchronize(self) -> None:
        """Returns when all work queued on the stream is done; raises its errors."""
        self._backend.synchronize_stream(self.device, self.handle)
        with self._lock:
            self._pending.clear()

    def record(self, event: Event | None = None) -> Event:
        """Records ``event`` (a new one when None) at this point of the stream."""
        event = event if event is not None else Event(self.device)
        event.record(self)
        return event

    def close(self) -> None:
        """Waits for the stream's work, then releases it (later uses raise LaunchError)."""
        if self._handle is None:
            return
        self.synchronize()
        handle, self._handle = self._handle, None
        self._backend.destroy_stream(self.device, handle)

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        # At interpreter shutdown the driver may be unloaded already; and a stream's
        # queued work completes even when it is destroyed.
        with contextlib.suppress(Exception):
            if self._handle is not None:
                self._backend.destroy_stream(self.device, self._handle)

    def __repr__(self) -> str:
        return f"spirvjit.Stream(device={self.device.name!r})"


class Event:
    """A mark in a stream of ``device`` (the host CPU when None), with the time it was
    reached. Record it with :meth:`record` before waiting on it or timing with it."""

    def __init__(self, device: Device | None = None):
        self.device = device if device is not None else host_device()
        self._backend = self.device.backend
        self._handle = self._backend.create_event(self.device)
        self._recorded = False

    def record(self, stream: Stream) -> Event:
        """Marks the point ``stream`` has reached now (its queued work so far); returns
        the event."""
        if stream.device != self.device:
            raise LaunchError(
                f"an event of {self.device.name} cannot be recorded on a stream of "
                f"{stream.device.name}"
            )
        self._backend.record_event(self.device, self._handle, stream.handle)
        self._recorded = True
        return self

    def synchronize(self) -> None:
        """Returns when the work before the last record is done."""
        self._check_recorded()
        self._backend.synchronize_event(self.device, self._handle)

    def elapsed_ms(self, end: Event) -> float:
        """Milliseconds from this event to ``end`` (both recorded; waits for both, since
        the drivers refuse to time an event that has not completed, and the two may be
        on different streams)."""
        if end.device != self.device:
            raise LaunchError("the two events are on different devices")
        self._check_recorded()
        end._check_recorded()
        end.synchronize()
        self.synchronize()
        return self._backend.event_elapsed_ms(self.device, self._handle, end._handle)

    def _check_recorded(self) -> None:
        if not self._recorded:
            raise LaunchError("the event was never recorded: call event.record(stream) first")

    def __del__(self):
        with contextlib.suppress(Exception):
            self._backend.destroy_event(self.device, self._handle)

    def __repr__(self) -> str:
        return f"spirvjit.Event(device={self.device.name!r}, recorded={self._recorded})"


def check_stream(stream, device: Device | None, kernel: str | None) -> Device:
    """The device of a launch or copy on ``stream`` (the stream's when ``device`` is
    None); refuses a stream of another device, or something not a Stream."""
    if not isinstance(stream, Stream):
        raise LaunchError(
            f"stream= takes a spirvjit.Stream, not {type(stream).__name__} (a kernel "
            "parameter named 'stream' is passed by position)",
            kernel,
        )
    if device is not None and stream.device != device:
        raise LaunchError(
            f"the stream is on {stream.device.name}, the launch on {device.name}", kernel
        )
    stream.handle  # noqa: B018 (raises for a closed stream)
    return stream.device
