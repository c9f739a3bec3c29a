// clang-15 -O2 (-target spir64) miscompiles a switch on the low bits of a vector lane loaded
// from memory. InstCombine reads `v.y & 3` of a loaded uchar4 as lane 4 of
// `load <16 x i2>, bitcast (<4 x i8>* p)`; VectorCombine (scalarizeLoadExtract) then makes
// that `load i2` from `getelementptr <16 x i2>, p, 0, 4`, and a getelementptr steps over a
// lane of a non-byte-sized type by its alloc size, one byte: the load reads 4 bytes on, the
// .x of in[gid + 1] (llvm/llvm-project#67060, nikic: "VectorCombine ... doesn't deal with
// non-byte-sized types correctly"; fixed upstream after LLVM 15). With an input of
// {0,1,0,0}, {2,3,0,0} clang-15's IR run under lli-15 gives 7 for gid 0 instead of 5.
// spirvjit.compile_opencl(src, producer="translator") raised CompileError, since
// llvm-spirv-15 rejects the i2 ("InvalidBitWidth: Invalid bit width in input: 2"); a
// widening of that `load i2` to "load the byte and mask" would have read the wrong element.
// FIXED: the translator producer runs clang-15 with -mllvm -disable-vector-combine, and loads
// the whole legal vector in place of the odd-width one (odd_widths.load_odd_vectors_whole),
// whose lanes split_odd_vector_casts then shifts out exactly;
// test: tests/kernels/test_translator_repairs.py::test_switch_on_low_bits_of_a_loaded_vector_lane.
__kernel void k(__global int *out, __global const uchar4 *in) {
    size_t gid = get_global_id(0);
    uchar4 v = in[gid];
    int r;
    switch (v.y & 3) {
    case 1: r = 5; break;
    case 2: r = 7; break;
    case 3: r = 13; break;
    default: r = 9;
    }
    out[gid] = r;
}
