// llvm-spirv-15 rejects what clang-15 -O2 makes of a switch on x % 5: InstCombine narrows the
// condition to i3, and llvm-spirv-15 fails with 'InvalidBitWidth: Invalid bit width in input: 3'
// (with --spirv-ext=+SPV_INTEL_arbitrary_precision_integers it aborts instead).
// spirvjit.compile_opencl(src, producer="translator") raised CompileError.
// FIXED: the translator producer keeps odd-width integers in the next legal width before
// llvm-spirv (spirvjit/frontend/odd_widths.py); test: tests/kernels/test_translator_repairs.py.
__kernel void k(__global int *out, __global const uint *in) {
    int y = 0;
    switch ((int)(in[get_global_id(0)] % 5u)) {
    case 0: y = 11; break;
    case 1: y = 27; break;
    case 2: y = 5; break;
    case 3: y = 91; break;
    case 4: y = 40; break;
    }
    out[get_global_id(0)] = y;
}
