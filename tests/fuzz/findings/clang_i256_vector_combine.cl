// Found next to the differential tester's seed 29103 kernel 6 (clang_one_lane_vector.cl),
// probing more splats of private array elements: clang-22 -O2 compiles
//   vstore16((short16)(b[0]) + (short16)(b[3]), 0, b)
// through VectorCombine into `bitcast <16 x i16> to i256`, `lshr i256 .., 48`, `trunc to
// i128` (eight lanes at an odd offset), and its SPIR-V back end crashes: "fatal error:
// error in backend: Unsupported Integer width!" (SPIRV pre legalizer). A producer bug (the
// optimizer makes integers its own back end cannot write; -fno-unroll-loops alone still
// leaves them). The OpenCL C front end now compiles such a program again with
// `-fno-unroll-loops -mllvm -disable-vector-combine` (frontend/opencl.py
// _WIDTH_WORKAROUND; tests/kernels/test_clang_wide_integers.py).
__kernel void k(__global short *out, __global const short *in)
{
    uint gid = get_global_id(0);
    short b[16];
    for (int q = 0; q < 16; q++)
        b[q] = in[gid + q];
    vstore16((short16)(b[0]) + (short16)(b[3]), 0, b);
    out[gid] = b[5];
}
