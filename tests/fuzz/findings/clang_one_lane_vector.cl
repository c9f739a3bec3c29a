// Differential tester, seed 29103 kernel 6 (SPIRVJIT_TIERED=1 run; every mode alike):
//   python3 -m tests.fuzz.differential --seed 29103 --count 10 --only 6
// (with the generator of main e63e768; later generators give that seed other programs).
// clang-22 -O2 turns the splat of a private array element below into a load of LLVM's
// <1 x i64> (from the array's alloca) and its SPIR-V back end writes that type as
// `OpTypeVector %ulong 1`, which SPIR-V allows only with SPV_EXT_long_vector (spirv-val:
// "Illegal number of components (1) for TypeVector"). A producer bug: llvm-project issue
// 171175, fixed by pull request 180735 (LLVM 23: <1 x T> becomes T). spirvjit refused the
// module ("OpTypeVector: vector of 1 components (2, 3, 4, 8 or 16)"); it now reads the
// type as LLVM's <1 x T> (tests/kernels/test_one_lane_vectors.py). Reduced from 214 lines.
__kernel void k(__global long *out, __global const long *in)
{
    uint gid = get_global_id(0);
    long a[4];
    for (int q = 0; q < 4; q++)
        a[q] = in[gid * 4 + q];
    vstore4((long4)(a[0]), 0, a);
    out[gid] = a[0] + a[1] * 3 + a[2] * 5 + a[3] * 7;
}
