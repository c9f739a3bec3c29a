"""Kernels run on each GPU present, against the host CPU's results. Skipped, with the
reason, where no GPU driver reports a device."""

from __future__ import annotations

import numpy as np
import pytest
from harness import build, run_case
from sources import CASES

import spirvjit

GPUS = [d for d in spirvjit.devices() if d.kind != "cpu"]
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not GPUS, reason="no GPU: neither the CUDA driver nor HIP lists a device"),
]
# Differences the GPU math libraries (libdevice, libclc) may show against glibc's libm,
# all within OpenCL's bounds: a few ulp.
RTOL = {np.float16: 2e-3, np.float32: 2e-6, np.float64: 1e-14}


def _compare(name: str, gpu: dict, cpu: dict) -> None:
    for key, expected in cpu.items():
        got = gpu[key]
        if expected.dtype.kind == "f":
            rtol = RTOL[expected.dtype.type]
            np.testing.assert_allclose(got, expected, rtol=rtol, equal_nan=True, err_msg=key)
        else:
            np.testing.assert_array_equal(got, expected, err_msg=f"{name}: {key}")


@pytest.mark.parametrize("device", GPUS, ids=[d.target.name for d in GPUS])
@pytest.mark.parametrize("name", sorted(CASES))
def test_suite_case_on_gpu(device, name: str):
    case = CASES[name]
    program = build(case.source, case.options).for_target(device.target)
    _compare(name, case.runner(program), run_case(name))


REVERSE = """
kernel void reverse(global int* data, local int* tmp, global int* count) {
    int l = get_local_id(0), n = get_local_size(0);
    tmp[l] = data[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    data[get_global_id(0)] = tmp[n - 1 - l];
    atomic_inc(count);
}
"""


@pytest.mark.parametrize("device", GPUS, ids=[d.target.name for d in GPUS])
def test_barrier_local_memory_and_atomics_on_gpu(device):
    program = build(REVERSE)
    data = np.arange(4096, dtype=np.int32)
    count = np.zeros(1, dtype=np.int32)
    tmp = spirvjit.LocalMemory(256 * 4)
    program.reverse(data, tmp, count, global_size=4096, local_size=256, device=device)
    expected = np.arange(4096, dtype=np.int32).reshape(16, 256)[:, ::-1].ravel()
    np.testing.assert_array_equal(data, expected)
    assert count[0] == 4096
