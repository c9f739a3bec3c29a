// PoCL 3.1 (Debian 12 pocl-opencl-icd 3.1-3+deb12u1) miscompiles these; each kernel is right on
// spirvjit. Run with global size 16 on PoCL: every kernel but `control` and `floor_nan_float` leaves `out` untouched
// (the whole kernel body is folded away). In larger kernels abs(INT_MIN) and
// abs_diff(INT_MIN, INT_MAX) were seen to give 0 instead (e.g. `ulong v = abs(INT_MIN);`).
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void rint_const(__global uint *out) {           // stores nothing; expect 0xd1ba43b7
    out[get_global_id(0)] = as_uint(rint(-1e11f));
}
__kernel void rint_const_double(__global ulong *out) {   // stores nothing; expect 0x4415af1d78b58c40
    out[get_global_id(0)] = as_ulong(rint(1e20));
}
__kernel void convert_sat_rte_const(__global ulong *out) { // stores nothing; expect 65535
    out[get_global_id(0)] = convert_ushort_sat_rte((float)INFINITY);
}
__kernel void abs_int_min(__global uint *out) {          // stores nothing; expect 0x80000000
    out[get_global_id(0)] = abs(-2147483647 - 1);
}
__kernel void abs_diff_int(__global uint *out) {         // stores nothing; expect 0xffffffff
    out[get_global_id(0)] = abs_diff(-2147483647 - 1, 2147483647);
}
__kernel void abs_long_min(__global ulong *out) {        // stores nothing; expect 1UL << 63
    out[get_global_id(0)] = abs((long)0x8000000000000000UL);
}
__kernel void floor_nan_double(__global ulong *out) {   // stores nothing; expect a NaN
    out[get_global_id(0)] = as_ulong(floor((double)NAN));
}
__kernel void floor_nan_float(__global uint *out) {      // stores 0 (+0.0f); expect a NaN
    out[get_global_id(0)] = as_uint(floor((float)NAN));
}
__kernel void control(__global uint *out) {              // stores 7 (a sanity check)
    out[get_global_id(0)] = 7;
}
// A vector division or remainder whose divisor is select(b, (int4)1, b == 0) with b from a
// built-in call (convert_int4, mul_hi, select) is folded to a division by 1 in every lane:
// PoCL stores (99, 11, 7, 7); the spec (and spirvjit, and PoCL with -cl-opt-disable) gives
// (2, 2, 0, 7). The generator's safe vector div/mod helpers are written this way: the
// differential tester's 5,000-program run (seeds 5320, 5420, 5461) found it three times.
__kernel void vector_div_by_select(__global ulong *out) { // stores 99 11 7 7; expect 2 2 0 7
    int4 b = convert_int4((uint4)(42U, 5U, 9U, 0U));
    int4 v = (int4)(99, 11, 7, 7) / select(b, (int4)1, b == (int4)0);
    out[0] = v.s0; out[1] = v.s1; out[2] = v.s2; out[3] = v.s3;
}
// A loop whose trip count differs between work-items and whose body only stores a constant,
// followed by a barrier, runs at least once in every work-item: PoCL stores 4 in every
// work-item; the spec (and spirvjit, and PoCL without the barrier or with -cl-opt-disable)
// gives 0xffffffff in the work-items with an even local id. Not hit with a body that depends
// on the loop (v += 4, v = i), nor when the loop is written as `if (n > 0) do ... while`.
// The differential tester's 1,000-program run (seed 57 count 10 kernel 9) found it.
__kernel void loop_before_barrier(__global ulong *out) { // stores 4 4 4 4; expect ~0U 4 ~0U 4
    uint v = 0xffffffffU;
    for (int i = 0; i < (int)(get_local_id(0) % 2); i++) v = 4;
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_local_id(0)] = v;
}
// A private variable whose address a pointer select takes (`p = c ? &v : &x`) after a barrier,
// with v live across the barrier: in a work-group of (3, 4) PoCL vectorizes its work-item loop
// across y with the three x work-items as an interleaved group, and sinks the store that
// initializes x (its slot of the per-work-item context array, `x = lm[11 - lid]`) past the
// read-modify-write through p and the reads of x: where p points at v, x is read before it is
// written (uninitialized stack: the result changes from run to run); where p points at x, the
// update is overwritten by lm's value. Run with global and local size (3, 4). The spec (and
// spirvjit, and oclgrind, and PoCL with -cl-opt-disable or a (4, 3) or (12) work-group) gives
// hmix(hmix(hmix(2754743990, v), x), x) of v = -4449, x = 0 where lid % 3 == 0, and of v = 0,
// x = -4449 elsewhere: 0x2bef6de25d656650, else 0xc6750f1bdd41ecc3. PoCL gives 0x5cc9cf02cda8d8ac
// or 0x2bef6de25d656650 in most work-items, different ones in different runs. Not hit without the
// hash (the values stored as they are). A pointer at a run-time offset into a private array
// (`short a[2]; ... short *p = a + (lid % 3U != 0U);`) is miscompiled the same way. The
// differential tester's seed 31001 count 10 kernel 0
// found it; PoCL gets the same update written without the pointer (`if (c) v = v ^ x; else
// x = x ^ x;`: generator.REFERENCE_WORKAROUNDS "pocl_psel").
static ulong hmix(ulong h, ulong v) { return (h ^ v) * 0x100000001b3UL + (h >> 29); }
__kernel __attribute__((reqd_work_group_size(3, 4, 1)))
void pointer_select_in_work_group(__global ulong *out) { // garbage; expect the hashes above
    uint lid = get_local_id(0) + get_local_id(1) * 3U;
    __local short lm[12];
    short v = -4449;
    lm[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    short x = lm[11U - lid];
    short *p = (lid % 3U != 0U) ? &v : &x;
    *p = *p ^ x;
    ulong h = hmix(2754743990UL, (ulong)v);
    h = hmix(h, (ulong)x);
    h = hmix(h, (ulong)x);
    out[lid] = h;
}
// fract(x, iptr) returns a zero with x's sign for a zero and for an infinity (OpenCL C 3.0
// 7.5.1: fract(-0) is -0, fract(-inf) is -0): PoCL returns +0 for both, on constants and on
// values read from memory (x - floor(x), then fmin with 0x1.fffffep-1f, without the special
// cases). Found writing the differential tester's exact math built-ins (REFERENCE_WORKAROUNDS
// "pocl_fract"); spirvjit gave +0 for -0 too until then.
__kernel void fract_signed_zero(__global uint *out) { // stores 0 0; expect 0x80000000 0x80000000
    float w;
    out[0] = as_uint(fract(-0.0f, &w));
    out[1] = as_uint(fract(-INFINITY, &w));
}
// modf of a constant NaN makes the kernel store nothing (neither the result nor *iptr), float
// and double, scalar and vector; modf of a NaN read from memory is right. The differential
// tester's SPIRVJIT_TIERED=0 run (seed 40501 count 10 kernel 6: modf of
// (float2)(-INFINITY, NAN) computed from constants) found it (REFERENCE_WORKAROUNDS
// "pocl_modf").
__kernel void modf_nan_const(__global uint *out) { // stores nothing; expect a NaN, a NaN
    float w;
    out[0] = as_uint(modf((float)NAN, &w));
    out[1] = as_uint(w);
}
// A do-while loop whose trip count differs between work-items, followed by a barrier, runs
// as many times in every work-item as in the group's last one: with in = {3, 0, 1, 2, 3,
// 4, 5, 6, 7} and one group of 8, PoCL stores 1185 in every work-item; the spec (and
// spirvjit, and PoCL without the barrier) gives 38 38 1185 36742 1139009 38 38 1185. The
// loop_before_barrier bug in another form; its spelling (a guarded do-while) is this loop.
// The differential tester's SPIRVJIT_CHECK=1 run (seed 41002 count 10 kernel 2, every
// mode and both producers; spirvjit's result is the same with the barrier removed) found it.
// PoCL is right with the loop spelt as the reference's "pocl_dowhile" copy (see
// do_while_inner_loop_barrier below): seed 41002 kernel 2 agrees with it.
__kernel void do_while_before_barrier(__global ulong *out, __global const uint *in) {
    uint lid = get_local_id(0);
    ulong h = 1;
    int i = 0;
    do {
        i++;
        h = h * 31 + 7;
    } while (i < (int)(in[lid + 1] % 5U));
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = h;
}
// A do-while loop whose trip count differs between work-items and whose body holds an inner
// loop runs once in every work-item when the kernel has a barrier anywhere (here in a branch
// before the loop that no work-item takes): run with global size (8, 2), local size (4, 2)
// and in = {0, 3, 3, 2, 2, 1, 3, 2, 1}; PoCL stores 922490255881852 (one trip) in every
// work-item; the spec (and spirvjit, and by hand) gives 15441423690875713692 where the trip
// count is 3 (lid 0, 1, 5), 627497883126942976 where it is 2 (lid 2, 3, 6) and 922490255881852
// where it is 1 (lid 4, 7). PoCL is right without the barrier branch, with the inner loop
// replaced by one statement, and with the do-while written as `for (i = 0; i < n; i++)`;
// still wrong (in the found kernel) spelt `while (i == 0 || i < n) { i++; ... }`, and here
// spelt `for (;;) { i++; ...; if (!(i < n)) break; }`, with a flag (`while (go) { ...;
// go = i < n; }`) or as `for (i = 0; i < max(n, 1); )`. It looks like PoCL's implicit loop
// barriers: its uniformity analysis takes the inner loop's header for uniform (every
// work-item enters the do-while's first trip), puts barriers in that loop (its trip count
// is uniform), so the do-while becomes a loop with barriers, which PoCL runs in lock-step
// on one work-item's exit test. The differential tester's 1,000-program run (seed 16
// count 10 kernel 6, both producers, every tier; oclgrind agrees with spirvjit) found it.
// PoCL is right (on this kernel, on do_while_before_barrier, and on the found kernels) with
// the do-while as a loop of a uniform trip count, as many as the bound can reach, whose
// body runs on the first trip and then while the do-while's test holds: the reference
// copy's spelling (generator.REFERENCE_WORKAROUNDS "pocl_dowhile"; `continue` steps to the
// test and `break` leaves, as in the do-while; the bound is the same at every test):
//     { int i = 0;
//     for (int it = 0; it < 4; it++) if (i < max((int)(in[lid + 1] % 5U), 1)) {
//         i++;
//         ...
//     } }
__kernel __attribute__((reqd_work_group_size(4, 2, 1)))
void do_while_inner_loop_barrier(__global ulong *out, __global const uint *in) {
    __local int lm[8];
    uint lid = get_local_id(0) + get_local_id(1) * get_local_size(0);
    uint gid = get_global_id(0) + get_global_id(1) * get_global_size(0);
    ulong h = 1;
    if (in[0] == 12345U) {
        barrier(CLK_LOCAL_MEM_FENCE);
        lm[lid] = 1;
        barrier(CLK_LOCAL_MEM_FENCE);
        h = lm[(lid + 1) % 8U];
    }
    uint v = 1;
    { int i = 0;
    do {
        i++;
        for (int j = 0; j < 3; j++)
            v = v * 3U + in[j];
        h = hmix(h, 0UL);
    } while (i < (int)(in[lid + 1] % 5U)); }
    out[gid] = hmix(h, v);
}
