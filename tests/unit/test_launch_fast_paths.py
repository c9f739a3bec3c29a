"""The per-launch shortcuts (arguments.array_address, config._launch_flag) give what the
slow, obvious calls give (array.ctypes.data, os.environ.get)."""

from __future__ import annotations

import numpy as np
import pytest

from spirvjit import config
from spirvjit.arguments import array_address


def _arrays() -> list[np.ndarray]:
    base = np.arange(64, dtype=np.float32)
    return [
        base,
        base[5:],  # a view: its own data pointer
        base[::2],
        base.reshape(8, 8).T,
        np.empty(0, np.int32),
        np.zeros((3, 0), np.float64),
        np.frombuffer(bytearray(16), np.uint8),  # memory NumPy does not own
        np.asarray(np.float64(2.5)),  # 0-d
        np.zeros(4, np.float32).view(np.int32),
    ]


@pytest.mark.parametrize("index", range(len(_arrays())))
def test_array_address_is_ctypes_data(index: int) -> None:
    array = _arrays()[index]
    assert array_address(array) == array.ctypes.data


def test_array_address_of_a_subclass(tmp_path) -> None:
    mapped = np.memmap(tmp_path / "m.bin", np.int32, "w+", shape=(16,))
    assert array_address(mapped) == mapped.ctypes.data
    assert array_address(mapped[3:]) == mapped[3:].ctypes.data


def test_array_address_follows_a_resize() -> None:
    # ndarray.resize may move the data: nothing may remember an old address.
    array = np.zeros(4, np.int64)
    array.resize(1 << 16, refcheck=False)
    assert array_address(array) == array.ctypes.data


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", True), (" yes ", True), ("ON", True), ("0", False), ("off", False), ("", False)],
)
def test_launch_flag_reads_os_environ_changes(monkeypatch, value: str, expected: bool) -> None:
    monkeypatch.setenv("SPIRVJIT_CHECK", value)
    assert config.check() is expected
    assert config.check() == config._flag("SPIRVJIT_CHECK")
    monkeypatch.delenv("SPIRVJIT_CHECK")
    assert config.check() is False
