// clang-22 -O2 copies the tail padding of a by-value struct argument as an i24
// (`load i24, ptr %sarg + 5, align 1`), and its SPIR-V back end rounds the width up to 32
// bits (llvm-project pull request 95147: without SPV_INTEL_arbitrary_precision_integers,
// OpTypeInt widths other than 8/16/32/64 become the next one), so the module reads 4 bytes
// at byte 5 of an 8-byte struct: one byte past it. Unchecked, harmless (spirvjit places
// struct arguments in a 128-byte aligned buffer); SPIRVJIT_CHECK=1 reports
// "out-of-bounds read of 4 bytes ... argument 2 'sarg', element index 5 (byte offset 5),
// the array has 8 elements (8 bytes)" on the clang producer; the translator's module has
// no such load. Found by the differential tester's SPIRVJIT_CHECK=1 run (seed 41001 count
// 10 kernel 4), reduced by hand. Not worked around yet.
// Run: kernel k, global size 4, in = 1..8, sarg = bytes 01 00 00 00 02 09 09 09.
typedef struct { int f0; char f1; } S24;
static __attribute__((noinline)) S24 smix(S24 s, uint k) { s.f0 ^= (int)(k * 2654435761U); s.f1 ^= (char)(k * 2654435761U); return s; }
__kernel void k(__global ulong *out, __global const uint *in, S24 sarg) {
    uint gid = get_global_id(0);
    ulong h = (ulong)sarg.f0 + (ulong)sarg.f1;
    if (in[gid] & 1) {
        S24 st = sarg;
        st = smix(st, gid);
        st.f1 = (char)in[gid + 1];
        h += (ulong)st.f0 + (ulong)st.f1;
    }
    out[gid] = h;
}
