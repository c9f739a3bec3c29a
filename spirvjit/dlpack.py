"""DLPack export of memory spirvjit owns (``spirvjit.Array``), on any device.

NumPy can export host memory, but nothing in the standard library exports GPU memory:
this module builds the ``DLManagedTensor`` of dlpack.h (the unversioned form every
consumer reads) with ctypes and wraps it in a ``"dltensor"`` capsule. The capsule keeps
its owner alive until the consumer calls the deleter, or until the capsule itself is
destroyed unconsumed.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", _DELETER),
]

# dlpack.h DLDataTypeCode by NumPy kind
_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}

# What each exported tensor holds alive, by its DLManagedTensor's address.
_live: dict[int, tuple] = {}
_live_lock = threading.Lock()


@_DELETER
def _deleter(managed) -> None:
    with _live_lock:
        _live.pop(ctypes.cast(managed, ctypes.c_void_p).value, None)


_NAME = b"dltensor"
_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_is_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_is_valid.restype = ctypes.c_int
# PyObject* as c_void_p: the destructor runs on a capsule being deallocated, which a
# py_object argument would resurrect (incref) and free again (decref).
_capsule_is_valid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.c_void_p, ctypes.c_char_p]


@ctypes.PYFUNCTYPE(None, ctypes.c_void_p)
def _capsule_destructor(capsule: int) -> None:
    # A consumer renames the capsule "used_dltensor" and owns the tensor; an unconsumed
    # one still named "dltensor" is deleted here.
    if _capsule_is_valid(capsule, _NAME):
        managed = _capsule_pointer(capsule, _NAME)
        with _live_lock:
            _live.pop(managed, None)


def dtype_of(dtype: np.dtype) -> DLDataType:
    """The DLPack data type of a NumPy dtype (TypeError for one DLPack has not)."""
    code = _CODES.get(dtype.kind)
    if code is None or dtype.byteorder == ">":
        raise TypeError(f"no DLPack data type for {dtype}")
    return DLDataType(code, dtype.itemsize * 8, 1)


def export(owner, address: int, shape: tuple[int, ...], dtype: np.dtype, device: tuple[int, int]):
    """A ``"dltensor"`` capsule of C-contiguous memory at ``address`` on DLPack
    ``device`` (type, index); ``owner`` stays alive while the tensor is."""
    ndim = len(shape)
    shape_array = (ctypes.c_int64 * max(1, ndim))(*shape)
    managed = DLManagedTensor()
    managed.dl_tensor = DLTensor(
        address,
        DLDevice(*device),
        ndim,
        dtype_of(np.dtype(dtype)),
        ctypes.cast(shape_array, ctypes.POINTER(ctypes.c_int64)),
        None,  # NULL strides: compact row-major
        0,
    )
    managed.deleter = _deleter
    key = ctypes.addressof(managed)
    with _live_lock:
        _live[key] = (managed, shape_array, owner)
    return _capsule_new(key, _NAME, ctypes.cast(_capsule_destructor, ctypes.c_void_p))


def read_capsule(capsule) -> DLTensor:
    """The DLTensor of an unconsumed ``"dltensor"`` capsule (for checks and tests)."""
    if not _capsule_is_valid(id(capsule), _NAME):  # id(): the PyObject* in CPython
        raise ValueError("not an unconsumed dltensor capsule")
    return DLManagedTensor.from_address(_capsule_pointer(id(capsule), _NAME)).dl_tensor
