// llvm-spirv-15 writes the blocks of a function out of dominance order: spirv-val and
// spirvjit's reader reject the module ('id %N is used before its definition').
// Reduced (line by line, not minimal) from difftest programs, then made well defined to run
// (h and lm initialised): spirvjit.compile_opencl(src, ['-cl-std=CL3.0', '-w'],
// producer="translator"), kernel k5 with local size 8; `in` holds 256 words.
// FIXED: the translator producer puts each function's blocks in a dominance order
// (spirvjit/frontend/translator_fixups.py); test: tests/kernels/test_translator_repairs.py.
static ulong hmix(ulong h, ulong v) { return (h ^ v) * 0x100000001b3UL + (h >> 29); }
static uint fbits(float x) { return isnan(x) ? 0x7fc00000U : as_uint(x); }
static ulong dbits(double x) { return isnan(x) ? 0x7ff8000000000000UL : as_ulong(x); }
static short mul_short(short a, short b) {
    return (short)((uint)a * (uint)b);
}
static ulong2 add_ulong2(ulong2 a, ulong2 b) {
    return a + b;
}
static uint shl_uint(uint a, uint b) {
    return (uint)((uint)a << (b & 31));
}
static uint div_uint(uint a, uint b) {
    return (b == 0) ? a : (uint)(a / b);
}
static short2 add_short2(short2 a, short2 b) {
    return as_short2(as_ushort2(a) + as_ushort2(b));
}
static ushort div_ushort(ushort a, ushort b) {
    return (b == 0) ? a : (ushort)(a / b);
    return (b == 0 || (a == (-2147483647 - 1) && b == (int)-1)) ? a : (int)(a % b);
}
static uchar sub_uchar(uchar a, uchar b) {
    return (uchar)((uint)a - (uint)b);
    return (uint)((uint)a * (uint)b);
}
static uint mod_uint(uint a, uint b) {
    return (b == 0) ? a : (uint)(a % b);
    return (long)((ulong)a * (ulong)b);
}
static uchar div_uchar(uchar a, uchar b) {
    return (b == 0) ? a : (uchar)(a / b);
    return (b == 0 || (a == (-9223372036854775807L - 1) && b == (long)-1)) ? a : (long)(a % b);
}
static long16 shr_long16(long16 a, long16 b) {
    return a >> (b & (long16)(63));
}
static short2 shr_short2(short2 a, short2 b) {
    return a >> (b & (short2)(15));
}
static short4 shl_short4(short4 a, short4 b) {
    return as_short4(as_ushort4(a) << as_ushort4(b & (short4)(15)));
}
static ulong mod_ulong(ulong a, ulong b) {
    return (b == 0) ? a : (ulong)(a % b);
}

__kernel __attribute__((reqd_work_group_size(8, 1, 1)))
void k5(__global ulong *out, __global const uint *in, __global uint *gat)
{
    const uint gid = get_global_id(0), lid = get_local_id(0), grp = get_group_id(0);
    __local uchar lm[8];
    ulong h = 0x9e3779b97f4a7c15UL;
    lm[lid] = (uchar)(in[lid] * 7U);
    { /* segment 0 */
        for (int i43 = 0; i43 < 1; i43++) {
            barrier(CLK_LOCAL_MEM_FENCE);
            uchar x44 = lm[7U - lid];
            ushort v45 = ((ushort)65535);
            for (int i46 = 0; i46 < 1; i46++) {
                v45 = v45;
            }
            h = hmix(h, (ulong)x44);
            h = hmix(h, (ulong)v45);
        }
        for (int i51 = 0; i51 < 6; i51++) {
            if ((((uchar)in[163]) > sub_uchar(convert_uchar_sat_rtz(as_float(in[124])), convert_uchar_rtn(((ulong)(((ulong)in[(lid * 4U + 30U) & 255U] << 32) | in[(lid * 6U + 205U) & 255U])))))) {
                atomic_max(&gat[grp * 16U + 1U], 0U);
                for (int i52 = 0; i52 < (int)(in[185] % 5U); i52++) {
                }
                long v54 = convert_long_sat_rtz((fma((float)(int)(in[(gid + 124U) & 255U] & 0xffffU), 0x1.1405140000000p-3f, -0x1.1ee93a0000000p+67f) / ((float)((i51 <= i51) ? -0x1.5471200000000p-35f : 0.0f))));
                for (int i55 = 0; i55 < (int)(in[229] % 5U); i55++) {
                    uint a56[4];
                }
            }
            int16 v58 = ((((uint16)((((uint2)(0U, 86U))).s0111110001011111 | ((uint16)(2714551796U, 1U, 63U, 0U, 66U, 17U, 2890117649U, 20U, 76U, 3U, 2878856227U, 0U, 44U, 414728648U, 0U, 24U)))) == convert_uint16(((uint16)(0U, ((uint)in[(gid + 179U) & 255U]), 1316169647U, 2598617469U, 26U, 7U, ((uint)in[(gid + 114U) & 255U]), 0U, 0U, 3U, 544267160U, 0U, 67U, 1U, 4137158975U, 3353662253U)))) ? ((((int16)(1850574100, i51, i51, i51, i51, ((int)in[(lid * 5U + 203U) & 255U]), ((int)in[113]), ((int)lid), -1088154418, i51, i51, 0, 2, i51, ((int)in[(gid + 247U) & 255U]), -1756697212)) > select(((int16)(2122052945, -22, -31, -2147483647, -2147483647, -55, -634104293, 0, -60, 3, 49, (-2147483647 - 1), 2, -1824843050, -2110361260, 3)), ((int16)(-31, ((int)i51), ((int)in[(lid * 2U + 211U) & 255U]), i51, 3, i51, -77, i51, i51, i51, -301699814, ((int)gid), 203586540, ((int)in[(gid + 254U) & 255U]), ((int)in[(lid * 1U + 249U) & 255U]), ((int)in[(gid + 163U) & 255U]))), (((uint16)(0U, 83U, 1U, 2537705743U, 88U, ((uint)i51), 7U, 0U, 2U, 0U, 3713492690U, 93U, 54U, ((uint)in[185]), ((uint)in[(lid * 4U + 12U) & 255U]), ((uint)i51))) < ((uint16)(((uint)in[(lid * 1U + 245U) & 255U]), 2U, ((uint)in[(lid * 9U + 158U) & 255U]), 2649730955U, 2540246339U, 3790253234U, ((uint)in[(lid * 9U + 103U) & 255U]), 7U, 3131450020U, 0U, 3U, 10U, ((uint)gid), 0U, 0U, 9U))))) ? (((float16)((float)(int)(in[(lid * 1U + 210U) & 255U] & 0xffffU), (float)(int)(in[(gid + 213U) & 255U] & 0xffffU), 0x1.469ae80000000p-5f, 0x1.e780000000000p+7f, ((float)NAN), -0x1.284b860000000p+74f, 0x1.d2aaaa0000000p+7f, -0x1.8380000000000p+6f, as_float(in[192]), (float)(int)(in[(lid * 7U + 165U) & 255U] & 0xffffU), -0x1.8000000000000p+8f, -0x1.ca345c0000000p+60f, 0x1.0000000000000p+1f, 0x1.73894c0000000p+70f, as_float(in[218]), (float)(int)(in[(gid + 253U) & 255U] & 0xffffU))) < ((float16)(as_float(in[(lid * 9U + 221U) & 255U]), -0x1.8b64a40000000p-32f, -0x1.2a00000000000p+7f, -0x1.a400000000000p+6f, -0x1.2e00000000000p+9f, as_float(in[(gid + 208U) & 255U]), -0x1.54cccc0000000p+6f, 0x1.5800000000000p+6f, -0x1.0000000000000p+0f, -0x1.b5b7ac0000000p+33f, -0x1.0e00000000000p+5f, 0x1.24a6580000000p+9f, -0x1.2800000000000p+6f, (float)(int)(in[(gid + 65U) & 255U] & 0xffffU), 0x1.0000000000000p+1f, 0x1.d41d920000000p+64f))) : ((int16)(-76, ((int)in[(gid + 248U) & 255U]), ((int)i51), ((int)in[(lid * 5U + 199U) & 255U]), ((int)in[(lid * 1U + 28U) & 255U]), i51, i51, ((int)in[138]), -1433423463, i51, i51, i51, ((int)in[(lid * 5U + 102U) & 255U]), -1595788757, i51, ((int)i51)))) : ((int16)(i51, ((int)in[253]), ((int)in[(gid + 188U) & 255U]), i51, ((int)in[(gid + 7U) & 255U]), i51, ((int)lid), i51, i51, i51, ((int)in[(gid + 221U) & 255U]), ((int)in[66]), ((int)i51), ((int)in[(lid * 9U + 175U) & 255U]), -1396843329, ((int)in[202]))));
            barrier(CLK_LOCAL_MEM_FENCE);
            uchar x59 = lm[(lid + 1U) % 8U];
            h = hmix(h, (ulong)v58.s0); h = hmix(h, (ulong)v58.s1); h = hmix(h, (ulong)v58.s2); h = hmix(h, (ulong)v58.s3); h = hmix(h, (ulong)v58.s4); h = hmix(h, (ulong)v58.s5); h = hmix(h, (ulong)v58.s6); h = hmix(h, (ulong)v58.s7); h = hmix(h, (ulong)v58.s8); h = hmix(h, (ulong)v58.s9); h = hmix(h, (ulong)v58.sa); h = hmix(h, (ulong)v58.sb); h = hmix(h, (ulong)v58.sc); h = hmix(h, (ulong)v58.sd); h = hmix(h, (ulong)v58.se); h = hmix(h, (ulong)v58.sf);
        }
        long v60 = ((long)grp);
    out[gid * 3U + 2U] = h;
    }
}
