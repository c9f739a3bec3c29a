// llvm-spirv-15 writes an OpDecorate for an id it never defines: spirvjit's reader rejects the
// module ('OpDecorate: id %N is never defined'). A difftest program (seed 1019 of commit 12d7397),
// compile with spirvjit.compile_opencl(src, ['-cl-std=CL3.0', '-w'], producer="translator"),
// kernel k7 with local size 4; `in` holds 256 words.
// Cause: the decorations are `SaturatedConversion` and `FPRoundingMode RTZ` of
// convert_short3_sat_rtz, whose result was used before the call was translated (its blocks
// are out of dominance order too); the conversion took the forward id and left its
// decorations on the id it was made with. Dropping them would run an unsaturated conversion
// (wrong values in segment 0, seen against PoCL).
// FIXED: convert_* results pass through a select, so the call is never forward-referenced
// (spirvjit/frontend/translator_ir.py); test: tests/kernels/test_translator_repairs.py.
#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
static ulong hmix(ulong h, ulong v) { return (h ^ v) * 0x100000001b3UL + (h >> 29); }
static uint fbits(float x) { return isnan(x) ? 0x7fc00000U : as_uint(x); }
static ulong dbits(double x) { return isnan(x) ? 0x7ff8000000000000UL : as_ulong(x); }
static float zcf(float x) { return x == 0.0f ? 0.0f : x; }
static double zcd(double x) { return x == 0.0 ? 0.0 : x; }
static ushort add_ushort(ushort a, ushort b) {
    return (ushort)((uint)a + (uint)b);
}
static ushort mod_ushort(ushort a, ushort b) {
    return (b == 0) ? a : (ushort)(a % b);
}
static ulong16 sub_ulong16(ulong16 a, ulong16 b) {
    return a - b;
}
static ulong16 div_ulong16(ulong16 a, ulong16 b) {
    long16 bad = b == (ulong16)0;
    return select(a / select(b, (ulong16)1, bad), a, bad);
}
static ushort shr_ushort(ushort a, ushort b) {
    return (ushort)(a >> (b & 15));
}
static long shr_long(long a, long b) {
    return (long)(a >> (b & 63));
}
static char sub_char(char a, char b) {
    return (char)((uint)a - (uint)b);
}
static ulong mul_ulong(ulong a, ulong b) {
    return (ulong)((ulong)a * (ulong)b);
}
static ulong shr_ulong(ulong a, ulong b) {
    return (ulong)(a >> (b & 63));
}
static short add_short(short a, short b) {
    return (short)((uint)a + (uint)b);
}
static short mod_short(short a, short b) {
    return (b == 0 || (a == ((short)-32768) && b == (short)-1)) ? a : (short)(a % b);
}
static int sub_int(int a, int b) {
    return (int)((uint)a - (uint)b);
}
static uint shr_uint(uint a, uint b) {
    return (uint)(a >> (b & 31));
}
static int shr_int(int a, int b) {
    return (int)(a >> (b & 31));
}
static uint shl_uint(uint a, uint b) {
    return (uint)((uint)a << (b & 31));
}
static short3 sub_short3(short3 a, short3 b) {
    return as_short3(as_ushort3(a) - as_ushort3(b));
}
static short3 add_short3(short3 a, short3 b) {
    return as_short3(as_ushort3(a) + as_ushort3(b));
}
static short div_short(short a, short b) {
    return (b == 0 || (a == ((short)-32768) && b == (short)-1)) ? a : (short)(a / b);
}
static int add_int(int a, int b) {
    return (int)((uint)a + (uint)b);
}
static ushort div_ushort(ushort a, ushort b) {
    return (b == 0) ? a : (ushort)(a / b);
}
static ushort shl_ushort(ushort a, ushort b) {
    return (ushort)((uint)a << (b & 15));
}
static ulong shl_ulong(ulong a, ulong b) {
    return (ulong)((ulong)a << (b & 63));
}
static ulong mod_ulong(ulong a, ulong b) {
    return (b == 0) ? a : (ulong)(a % b);
}
static short sub_short(short a, short b) {
    return (short)((uint)a - (uint)b);
}

__kernel __attribute__((reqd_work_group_size(4, 1, 1)))
void k7(__global ulong *out, __global const uint *in, __global uint *gat)
{
    const uint gid = get_global_id(0), lid = get_local_id(0), grp = get_group_id(0);
    __local int la[1];
    __local uint lu[1];
    ulong h;
    { /* segment 0 */
    h = 1144708471UL;
        short3 v54 = ((short3)(((short)32767)));
        switch (((uchar)((int)(uchar)(((uchar)0) % 4)))) {
        case ((uchar)2):
          {
            h = hmix(h, (ulong)v54.s0); h = hmix(h, (ulong)v54.s1); h = hmix(h, (ulong)v54.s2);
            h = hmix(h, (ulong)v54.s0); h = hmix(h, (ulong)v54.s1); h = hmix(h, (ulong)v54.s2);
            switch (((short)((int)(short)(((short)21920) % 3)))) {
            case ((short)1):
              {
                short2 v55 = ((short2)(((short)3)));
                int a56[2];
                for (int q57 = 0; q57 < 2; q57++)
                    a56[q57] = shr_int(((int)(((uchar)in[162]))), ((int)gid));
                h = hmix(h, (ulong)v55.s0); h = hmix(h, (ulong)v55.s1);
              }
                break;
            default: {
                atomic_add(&gat[grp * 16U + 0U], shl_uint(((uint)(11U ^ 259231585U)), ((uint)(4294967294U ^ 0U))));
                uchar a58[4];
                for (int q59 = 0; q59 < 4; q59++)
                    a58[q59] = ((uchar)2);
                int v60 = ((int)(((ushort)65534)));
                h = hmix(h, (ulong)a58[0]); h = hmix(h, (ulong)a58[1]); h = hmix(h, (ulong)a58[2]); h = hmix(h, (ulong)a58[3]);
                h = hmix(h, (ulong)v60);
              }
            }
          }
            break;
        case ((uchar)3):
          {
            short a61[4];
            for (int q62 = 0; q62 < 4; q62++)
                a61[q62] = ((short)gid);
          }
            break;
        default: {
            for (int i63 = 0; i63 < 5; i63++) {
                atomic_dec(&gat[grp * 16U + 1U]);
                float v64 = -((0x1.9bbe7c0000000p+19f / (float)(int)(in[(gid + 201U) & 255U] & 0xffffU)));
                v54 = mad_hi((((short3)(((short)0), ((short)-22), ((short)-11562))) <= ((short3)(((short)58), ((short)11827), ((short)5911)))), v54, sub_short3(v54, v54));
                h = hmix(h, (ulong)fbits(v64));
            }
            for (int i65 = 0; i65 < (int)(in[(gid + 60U) & 255U] % 5U); i65++) {
                v54 = sub_short3(convert_short3_sat_rtz(((float3)(-0x1.2666660000000p+3f, -0x1.0da4180000000p+23f, 0x1.b8eada0000000p+67f))), ((short3)(((short)-32767))));
            }
            for (int i66 = 0; i66 < (int)(in[(gid + 119U) & 255U] % 5U); i66++) {
                h = hmix(h, (ulong)v54.s0); h = hmix(h, (ulong)v54.s1); h = hmix(h, (ulong)v54.s2);
                v54 = ((v54 != ((short3)(v54 ^ ((short3)(((short)17), ((short)-6406), ((short)30325)))))) ? v54 : add_short3(((short3)(((short)-46), ((short)20), ((short)18960))), v54));
                h = hmix(h, (ulong)v54.s0); h = hmix(h, (ulong)v54.s1); h = hmix(h, (ulong)v54.s2);
            }
          }
        }
        switch (20U) {
        case 0U:
          {
            ulong v67 = convert_ulong_sat_rtn(((uint)(-(uint)0U)));
            float4 v68 = ceil(((float4)(0) + fmax(((float4)(-0x1.a46afe0000000p-38f, 0x1.4045aa0000000p+62f, 0x1.0700000000000p+7f, -0x1.dce74a0000000p-9f)), ((float4)(0x1.97f0dc0000000p+42f)))));
            v67 = v67;
            h = hmix(h, (ulong)v67);
            h = hmix(h, (ulong)fbits(v68.s0)); h = hmix(h, (ulong)fbits(v68.s1)); h = hmix(h, (ulong)fbits(v68.s2)); h = hmix(h, (ulong)fbits(v68.s3));
          }
            break;
        }
        h = hmix(h, (ulong)v54.s0); h = hmix(h, (ulong)v54.s1); h = hmix(h, (ulong)v54.s2);
    out[gid * 2U + 0U] = h;
    }
    { /* segment 1 */
    h = 3502524982UL;
        int4 v69 = as_int4(-as_uint4(((((uint4)(3657568482U)) < ((uint4)(((uint)in[(lid * 6U + 190U) & 255U])))) ? ((int4)(41, ((int)in[(gid + 14U) & 255U]), 74005365, ((int)in[179]))) : ((int4)(-82, 27, (-2147483647 - 1), -822623902)))));
        short v70 = rotate(add_short(((short)in[(gid + 17U) & 255U]), ((short)-9)), ((short)-51));
        h = hmix(h, (ulong)v69.s0); h = hmix(h, (ulong)v69.s1); h = hmix(h, (ulong)v69.s2); h = hmix(h, (ulong)v69.s3);
    out[gid * 2U + 1U] = h;
    }
}

