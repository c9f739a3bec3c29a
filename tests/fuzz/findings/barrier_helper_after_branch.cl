// spirvjit bug (both producers, current main 3fad085): a noinline helper with two barriers,
// called twice after a divergent if/else, returns values of the *second* call's stores from
// the first call in some work-items. PoCL gives x39 == 91 in every work-item (the first call
// stores 91 everywhere between its barriers, then reads another work-item's slot);
// spirvjit gives another value in work-items 9, 10 and 11 of each group of 16.
// Found by `python3 -m tests.fuzz.differential --count 300 --seed 4242 --jobs 1`
// (seed 4259 count 10 kernel 3, segment 1, 12 work-items), reduced by hand.
// Run: kernel k3, global 64, local 16; in[i] = i * 2654435761u (256 words), gat: 64 zeros.
// Without the if/else (or with x39 computed inline) the results are right.
// The wrong x39 values are 7, 5, 5: h of work-items 0, 1, 2 (frame words, which follow
// the group's 128 bytes of local memory).
// FIXED (branch i12-barrier2, tests/kernels/test_vectorizer_wrap.py): not a barrier bug.
// LLVM 22's loop vectorizer made the work-item loop's lm[(lid + 7) % 16] a consecutive
// <4 x i64> load without the check that the 4-bit index does not wrap (the check was
// dropped as "implied" by the i32 one of in[lid + 154u]), so work-items 8..11 read
// lm[15..18]: lm[16..18] are the first frame words. A kernel without barriers hits it too
// (a[(lid + 7) % 16] + in[lid + 154u]). backends/cpu/vectorizer_guard.py detects such
// vector loops and codegen.optimize_here re-optimizes the kernel without the loop vectorizer.
static __attribute__((noinline)) long sync24(__local long *lm, long v, uint lid, uint off)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    lm[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    return lm[(lid + off) % 16U];
}
__kernel __attribute__((reqd_work_group_size(16, 1, 1)))
void k3(__global ulong *out, __global const uint *in, __global uint *gat)
{
    const uint gid = get_global_id(0), lid = get_local_id(0);
    __local long lm[16];
    ulong h = 1;
    if (in[gid & 255U] % 3U == 0U) {
        h = 7;
    } else {
        h = 5;
    }
    long x39 = sync24(lm, 91L, lid, 7U);
    long x40 = sync24(lm, (long)in[lid + 154U], lid, 5U);
    out[gid * 2U] = x39;
    out[gid * 2U + 1U] = h + x40;
}
