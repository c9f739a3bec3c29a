"""Checked mode covers the OpenCL vector loads and stores (vloadn, vstoren, vload_half[n],
vloada_halfn, vstore_half[n], vstorea_halfn): their address is the pointer plus
offset * n, and their size the n elements'. Before, they went unchecked: an out-of-bounds
vstore4 under SPIRVJIT_CHECK=1 wrote past its buffer (the differential tester's checked
run aborted on the corrupted heap)."""

from __future__ import annotations

import numpy as np
import pytest

import spirvjit

SOURCE = r"""
__kernel void load4(__global const float *a, __global float4 *out, int shift) {
    int i = get_global_id(0);
    out[i] = vload4(i + shift, a);
}
__kernel void store4(__global const float4 *in, __global float *b, int shift) {
    int i = get_global_id(0);
    vstore4(in[i], i + shift, b);
}
__kernel void load3(__global const float *a, __global float *out, int shift) {
    int i = get_global_id(0);
    float3 v = vload3(i + shift, a);
    out[i] = v.x + v.y + v.z;
}
__kernel void store_half4(__global const float4 *in, __global half *h, int shift) {
    int i = get_global_id(0);
    vstore_half4(in[i], i + shift, h);
}
__kernel void load_half(__global const half *h, __global float *out, int shift) {
    int i = get_global_id(0);
    out[i] = vload_half(i + shift, h);
}
__kernel void storea_half3(__global const float4 *in, __global half *h, int shift) {
    int i = get_global_id(0);
    vstorea_half3(in[i].xyz, i + shift, h);
}
__kernel void local_store4(__global const float4 *in, __global float4 *out, int shift) {
    __local float tile[32];
    int l = get_local_id(0);
    vstore4(in[get_global_id(0)], l + shift, tile);
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = vload4(l, tile);
}
__kernel void local_load4(__global const float4 *in, __global float4 *out, int shift) {
    __local float tile[32];
    int l = get_local_id(0);
    vstore4(in[get_global_id(0)], l, tile);
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = vload4(l + shift, tile);
}
__kernel void local_unset(__global const float4 *in, __global float4 *out) {
    __local float tile[32];
    int l = get_local_id(0);
    if (l < 4) vstore4(in[l], l, tile);
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = vload4(l, tile);
}
__kernel void local_arg_store4(__local float *tile, __global const float4 *in,
                               __global float4 *out, int shift) {
    int l = get_local_id(0);
    vstore4(in[get_global_id(0)], l + shift, tile);
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = vload4(l, tile);
}
"""


@pytest.fixture(scope="module")
def prog():
    return spirvjit.compile_opencl(SOURCE)


def _error(call) -> str:
    with pytest.raises(spirvjit.LaunchError) as info:
        call()
    return str(info.value)


def test_vload4_past_the_end_is_reported(prog):
    a = np.arange(32, dtype=np.float32)
    out = np.zeros((8, 4), np.float32)
    prog.load4(a, out, 0, global_size=8, check=True)  # the last valid offset: 7
    np.testing.assert_array_equal(out, a.reshape(8, 4))
    message = _error(lambda: prog.load4(a, out, 1, global_size=8, check=True))
    assert "out-of-bounds read of 16 bytes" in message
    assert "global id (7, 0, 0)" in message
    assert "argument 0 'a', element index 32 (byte offset 128)" in message
    assert "the array has 32 elements (128 bytes)" in message


def test_vstore4_past_the_end_is_stopped_before_the_neighbour(prog):
    memory = np.zeros(40, np.float32)
    b, neighbour = memory[:32], memory[32:]
    data = np.arange(32, dtype=np.float32).reshape(8, 4) + 1
    prog.store4(data, b, 0, global_size=8, check=True)
    np.testing.assert_array_equal(b, data.ravel())
    b[:] = 0
    message = _error(lambda: prog.store4(data, b, 1, global_size=8, check=True))
    assert (neighbour == 0).all()  # unchecked, vstore4(…, 8, b) writes neighbour[0:4]
    assert "out-of-bounds write of 16 bytes" in message
    assert "global id (7, 0, 0)" in message
    assert "argument 1 'b', element index 32 (byte offset 128)" in message
    np.testing.assert_array_equal(b[:4], 0)  # offset 0 not written: the shift is 1
    np.testing.assert_array_equal(b[4:], data.ravel()[:28])


def test_vstore4_before_the_start_is_reported(prog):
    b = np.zeros(32, np.float32)
    data = np.ones((8, 4), np.float32)
    message = _error(lambda: prog.store4(data, b, -1, global_size=8, check=True))
    # The offset is a size_t: -1 is 2^64 - 1, so the address wraps to 16 bytes before b.
    assert "out-of-bounds write of 16 bytes" in message
    assert "global id (0, 0, 0)" in message
    assert "element index -4 (byte offset -16)" in message


def test_vload3_reads_12_bytes(prog):
    # vload3 reads 3 floats at a + 3 * offset: the last one ends at the array's end,
    # though a float3 takes 16 bytes in memory.
    a = np.arange(24, dtype=np.float32)
    out = np.zeros(8, np.float32)
    prog.load3(a, out, 0, global_size=8, check=True)
    np.testing.assert_array_equal(out, a.reshape(8, 3).sum(axis=1))
    message = _error(lambda: prog.load3(a[:23], out, 0, global_size=8, check=True))
    assert "out-of-bounds read of 12 bytes" in message
    assert "global id (7, 0, 0)" in message
    assert "byte offset 84" in message


def test_vstore_half4_past_the_end_is_reported(prog):
    data = np.linspace(-2, 2, 32, dtype=np.float32).reshape(8, 4)
    h = np.zeros(32, np.float16)
    prog.store_half4(data, h, 0, global_size=8, check=True)
    np.testing.assert_array_equal(h, data.ravel().astype(np.float16))
    message = _error(lambda: prog.store_half4(data, h, 1, global_size=8, check=True))
    assert "out-of-bounds write of 8 bytes" in message
    assert "global id (7, 0, 0)" in message
    assert "argument 1 'h', element index 32 (byte offset 64)" in message


def test_vload_half_past_the_end_is_reported(prog):
    h = np.linspace(-1, 1, 8).astype(np.float16)
    out = np.zeros(8, np.float32)
    prog.load_half(h, out, 0, global_size=8, check=True)
    np.testing.assert_array_equal(out, h.astype(np.float32))
    message = _error(lambda: prog.load_half(h, out, 3, global_size=8, check=True))
    assert "out-of-bounds read of 2 bytes" in message
    assert "global id (5, 0, 0)" in message
    assert "argument 0 'h', element index 8 (byte offset 16)" in message


def test_vstorea_half3_uses_a_stride_of_four(prog):
    # vstorea_half3 writes 3 halves at h + 4 * offset: the last offset's 3 halves end
    # one half before an array of 8 * 4 - 1 halves ends.
    data = np.arange(32, dtype=np.float32).reshape(8, 4)
    h = np.full(31, -1, np.float16)
    prog.storea_half3(data, h, 0, global_size=8, check=True)
    want = np.full(32, -1, np.float16)
    want.reshape(8, 4)[:, :3] = data[:, :3]
    np.testing.assert_array_equal(h, want[:31])
    message = _error(lambda: prog.storea_half3(data, h, 1, global_size=8, check=True))
    assert "out-of-bounds write of 6 bytes" in message
    assert "global id (7, 0, 0)" in message
    assert "byte offset 64" in message


def test_vstore4_past_a_local_array_is_reported(prog):
    data = np.arange(32, dtype=np.float32).reshape(8, 4)
    out = np.zeros((8, 4), np.float32)
    prog.local_store4(data, out, 0, global_size=8, local_size=8, check=True)
    np.testing.assert_array_equal(out, data)
    message = _error(
        lambda: prog.local_store4(data, out, 1, global_size=8, local_size=8, check=True)
    )
    assert "out-of-bounds write of 16 bytes" in message
    assert "local id (7, 0, 0)" in message
    assert "__local variable" in message
    assert "byte offset 128, the variable has 128 bytes" in message


def test_vload4_past_a_local_array_is_reported(prog):
    data = np.arange(32, dtype=np.float32).reshape(8, 4)
    out = np.zeros((8, 4), np.float32)
    message = _error(
        lambda: prog.local_load4(data, out, 1, global_size=8, local_size=8, check=True)
    )
    assert "out-of-bounds read of 16 bytes" in message
    assert "local id (7, 0, 0)" in message
    assert "byte offset 128, the variable has 128 bytes" in message


def test_vstore4_past_a_local_argument_is_reported(prog):
    data = np.arange(32, dtype=np.float32).reshape(8, 4)
    out = np.zeros((8, 4), np.float32)
    tile = spirvjit.LocalMemory(32 * 4)
    prog.local_arg_store4(tile, data, out, 0, global_size=8, local_size=8, check=True)
    np.testing.assert_array_equal(out, data)
    message = _error(
        lambda: prog.local_arg_store4(tile, data, out, 1, global_size=8, local_size=8, check=True)
    )
    assert "out-of-bounds write of 16 bytes" in message
    assert "local id (7, 0, 0)" in message
    assert "argument 0 'tile', element index 32 (byte offset 128)" in message


def test_vstore_into_local_marks_the_bytes_written(prog):
    # The shadow of __local memory sees vstores: the elements vstore4 wrote read clean,
    # the ones no work-item wrote are reported (vload4 of local id 4: tile[16..20)).
    data = np.arange(32, dtype=np.float32).reshape(8, 4)
    out = np.zeros((8, 4), np.float32)
    prog.local_unset(data, out, global_size=4, local_size=4, check=True)
    np.testing.assert_array_equal(out[:4], data[:4])
    message = _error(lambda: prog.local_unset(data, out, global_size=8, local_size=8, check=True))
    assert "read of __local memory never written in this work-group: 16 bytes" in message
    assert "local id (4, 0, 0)" in message
    assert "byte offset 64" in message
