"""Arrays in a device's memory that stay there across launches.

An ``Array`` is memory from its device's backend (``Backend.allocate``), filled and read
with the backend's copies. Kernel launches take it without copies: on a GPU it is passed
by its device address (it exports ``__cuda_array_interface__``, which the GPU argument
packer reads); on the host CPU it is host memory and exports ``__array_interface__`` and
DLPack, so NumPy, torch and the CPU launcher view it in place.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading

import numpy as np

from .device import Device, host_device


class Array:
    """``shape`` elements of ``dtype``, C-contiguous, in ``device``'s memory.

    Made with ``Array(shape, dtype, device=...)`` (uninitialised), :func:`empty`,
    :func:`zeros` or :func:`asarray`; read back with :meth:`to_numpy`. The memory is freed
    by :meth:`free` or when the last reference (a NumPy or DLPack view of a host Array
    included) goes away.
    """

    def __init__(self, shape, dtype=np.float32, device: Device | None = None):
        self.device = device if device is not None else host_device()
        self.shape = (int(shape),) if np.isscalar(shape) else tuple(int(n) for n in shape)
        if any(n < 0 for n in self.shape):
            raise ValueError(f"negative dimension in shape {self.shape}")
        self.dtype = np.dtype(dtype)
        if self.dtype.hasobject:
            raise TypeError("an Array cannot hold Python objects")
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.nbytes = self.size * self.dtype.itemsize
        self._backend = self.device.backend
        self._address: int | None = self._backend.allocate(self.device, self.nbytes)
        self._lock = threading.Lock()

    @property
    def on_host(self) -> bool:
        """Whether the memory is the host's (the CPU device's)."""
        return self.device.kind == "cpu"

    @property
    def address(self) -> int:
        """The memory's address on its device."""
        if self._address is None:
            raise ValueError("the Array was freed")
        return self._address

    def free(self) -> None:
        """Gives the memory back now (later uses raise ValueError)."""
        with self._lock:
            address, self._address = self._address, None
        if address is not None:
            self._backend.free(self.device, address)

    def __del__(self):
        # At interpreter shutdown the driver may be unloaded already.
        with contextlib.suppress(Exception):
            self.free()

    # ----- copies ------------------------------------------------------------------

    def copy_from(self, host, stream=None) -> Array:
        """Copies a host array of the same size and dtype into this Array; returns it.

        With ``stream`` (a spirvjit.Stream of this device) the copy is queued on it, after
        the stream's earlier work; the stream keeps the host data alive until it is
        synchronised, but the caller must not change it before then."""
        source = np.ascontiguousarray(host, dtype=self.dtype)
        if source.size != self.size:
            raise ValueError(f"copy of {source.size} elements into an Array of {self.size}")
        handle = self._stream_handle(stream)
        if handle is not None:
            stream.keep(source)
        self._backend.copy_to_device(
            self.device, self.address, source.ctypes.data, self.nbytes, handle
        )
        return self

    def to_numpy(self, stream=None) -> np.ndarray:
        """A NumPy copy of the contents (after the device's work on them is done).

        With ``stream`` the copy is queued after the stream's work and the stream is then
        synchronised, so the result is complete (and the stream's errors raised) on return.
        """
        out = np.empty(self.shape, self.dtype)
        handle = self._stream_handle(stream)
        self._backend.copy_to_host(self.device, out.ctypes.data, self.address, self.nbytes, handle)
        if stream is not None:
            stream.synchronize()
        return out

    def _stream_handle(self, stream):
        if stream is None:
            return None
        from .stream import check_stream

        check_stream(stream, self.device, None)
        return stream.handle

    # ----- exports -----------------------------------------------------------------

    def _interface(self) -> dict:
        return {
            "shape": self.shape,
            "typestr": self.dtype.str,
            "data": (self.address, False),
            "strides": None,
            "version": 3,
        }

    @property
    def __array_interface__(self) -> dict:
        if not self.on_host:
            raise AttributeError(
                f"the Array lives on {self.device.name}, not in host memory: use to_numpy()"
            )
        return self._interface()

    @property
    def __cuda_array_interface__(self) -> dict:
        if self.on_host:
            raise AttributeError("the Array is host memory: it has __array_interface__")
        # Synchronous launches leave the memory ready for any stream; after launches on a
        # spirvjit.Stream the user synchronises it before handing the Array on.
        return {**self._interface(), "stream": None}

    def __dlpack_device__(self) -> tuple[int, int]:
        if self.on_host:
            return (1, 0)  # kDLCPU
        return (10 if self.device.kind == "amd" else 2, self.device.index)  # ROCm / CUDA

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule of the memory, wherever it is (no copy; ``copy=True`` and
        another ``dl_device`` are refused). Launches are synchronous, so there is no
        pending work for the consumer's ``stream`` to wait for."""
        from . import dlpack

        if copy:
            raise BufferError("a spirvjit.Array exports its memory, not copies")
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"the Array is on {self.__dlpack_device__()}, not {dl_device}")
        if self.on_host:
            # NumPy's export of a view (whose base is this Array) is the versioned form,
            # which tells consumers the memory is writable.
            kwargs = {} if max_version is None else {"max_version": max_version}
            return np.asarray(self).__dlpack__(stream=stream, **kwargs)
        return dlpack.export(self, self.address, self.shape, self.dtype, self.__dlpack_device__())

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d Array")
        return self.shape[0]

    def __repr__(self) -> str:
        where = self.device.name
        return f"spirvjit.Array(shape={self.shape}, dtype={self.dtype}, device={where!r})"


def empty(shape, dtype=np.float32, device: Device | None = None) -> Array:
    """An uninitialised Array on ``device`` (the host CPU when None)."""
    return Array(shape, dtype, device)


def zeros(shape, dtype=np.float32, device: Device | None = None) -> Array:
    """An Array of zeros on ``device``."""
    out = Array(shape, dtype, device)
    if out.on_host:
        ctypes.memset(out.address, 0, out.nbytes)
    else:
        out.copy_from(np.zeros(out.shape, out.dtype))
    return out


def asarray(value, dtype=None, device: Device | None = None) -> Array:
    """A copy of host array ``value`` (NumPy, DLPack, buffer protocol) on ``device``."""
    from .arguments import host_array

    try:
        host = host_array(value)
    except TypeError:
        host = np.asarray(value)  # lists and scalars too
    if dtype is not None:
        host = host.astype(dtype, copy=False)
    return Array(host.shape, host.dtype, device).copy_from(host)
