// difftest seed=26200 count=10 index=3 kernel=k3
// producer=clang kind=error verdict=unexplained
// global=(4, 8) local=(2, 4) nseg=2 options=-cl-std=CL3.0 -cl-fp32-correctly-rounded-divide-sqrt -w
// compile: CompileError: clang-22 failed to compile kernel.cl: exit status 1
// rerun: python3 -m tests.fuzz.differential --seed 26200 --count 10 --only 3 --size normal
#pragma OPENCL FP_CONTRACT OFF
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
static ulong hmix(ulong h, ulong v) { return (h ^ v) * 0x100000001b3UL + (h >> 29); }
static uint fbits(float x) { return isnan(x) ? 0x7fc00000U : as_uint(x); }
static ulong dbits(double x) { return isnan(x) ? 0x7ff8000000000000UL : as_ulong(x); }
static float zcf(float x) { return x == 0.0f ? 0.0f : x; }
static double zcd(double x) { return x == 0.0 ? 0.0 : x; }
typedef struct { ushort f0; uint f1; ushort f2; ulong f3; } S1;
static char div_char(char a, char b) {
    return (b == 0 || (a == ((char)-128) && b == (char)-1)) ? a : (char)(a / b);
}
static short add_short(short a, short b) {
    return (short)((uint)a + (uint)b);
}
static short sub_short(short a, short b) {
    return (short)((uint)a - (uint)b);
}
static long add_long(long a, long b) {
    return (long)((ulong)a + (ulong)b);
}
static short mul_short(short a, short b) {
    return (short)((uint)a * (uint)b);
}
static short shl_short(short a, short b) {
    return (short)((uint)a << (b & 15));
}
__constant short ctab_short[16] = { ((short)1), ((short)7), ((short)17746), ((short)41), ((short)-32767), ((short)-76), ((short)15715), ((short)-32768), ((short)-49), ((short)-10196), ((short)-3756), ((short)28), ((short)-32767), ((short)-1), ((short)-12714), ((short)7) };
static long sub_long(long a, long b) {
    return (long)((ulong)a - (ulong)b);
}
static long shl_long(long a, long b) {
    return (long)((ulong)a << (b & 63));
}
static ushort4 add_ushort4(ushort4 a, ushort4 b) {
    return a + b;
}
static ushort mul_ushort(ushort a, ushort b) {
    return (ushort)((uint)a * (uint)b);
}
__constant uchar ctab_uchar[16] = { ((uchar)128), ((uchar)0), ((uchar)44), ((uchar)71), ((uchar)219), ((uchar)0), ((uchar)77), ((uchar)2), ((uchar)66), ((uchar)22), ((uchar)0), ((uchar)0), ((uchar)0), ((uchar)0), ((uchar)170), ((uchar)255) };
static ushort shr_ushort(ushort a, ushort b) {
    return (ushort)(a >> (b & 15));
}
static ulong shr_ulong(ulong a, ulong b) {
    return (ulong)(a >> (b & 63));
}
static uint mod_uint(uint a, uint b) {
    return (b == 0) ? a : (uint)(a % b);
}
static uint mul_uint(uint a, uint b) {
    return (uint)((uint)a * (uint)b);
}
static int add_int(int a, int b) {
    return (int)((uint)a + (uint)b);
}
__constant long ctab_long[16] = { 5062393000468706392L, -94L, 2L, -1L, -20L, 1311172095923693156L, 1037359374310347091L, (-9223372036854775807L - 1), -1467886592681999760L, -7177678720119374317L, 9223372036854775806L, 9223372036854775807L, -87L, 0L, -81L, -9L };
__constant uint ctab_uint[16] = { 2U, 1U, 4294967295U, 7U, 1U, 2U, 0U, 1326527225U, 4294967295U, 7U, 0U, 1316121993U, 0U, 1832187878U, 0U, 2U };
static ulong div_ulong(ulong a, ulong b) {
    return (b == 0) ? a : (ulong)(a / b);
}
static uchar8 shr_uchar8(uchar8 a, uchar8 b) {
    return a >> (b & (uchar8)(7));
}
static ushort mod_ushort(ushort a, ushort b) {
    return (b == 0) ? a : (ushort)(a % b);
}
static ulong sub_ulong(ulong a, ulong b) {
    return (ulong)((ulong)a - (ulong)b);
}
static ushort sub_ushort(ushort a, ushort b) {
    return (ushort)((uint)a - (uint)b);
}
__constant ushort ctab_ushort[16] = { ((ushort)2), ((ushort)28), ((ushort)23122), ((ushort)7), ((ushort)79), ((ushort)0), ((ushort)32768), ((ushort)39362), ((ushort)32768), ((ushort)3), ((ushort)0), ((ushort)0), ((ushort)3), ((ushort)0), ((ushort)45707), ((ushort)13) };
static int shl_int(int a, int b) {
    return (int)((uint)a << (b & 31));
}
static uint div_uint(uint a, uint b) {
    return (b == 0) ? a : (uint)(a / b);
}
static S1 smix_S1(S1 s, uint k)
{
    s.f0 ^= (ushort)(k * 2654435761U);
    s.f1 ^= (uint)(k * 2654435761U);
    s.f2 ^= (ushort)(k * 2654435761U);
    s.f3 ^= (ulong)(k * 2654435761U);
    return s;
}
typedef struct { long f0; char f1; double f2; long2 f3; char f4; } S39;
__constant char ctab_char[16] = { ((char)6), ((char)-76), ((char)61), ((char)-1), ((char)-73), ((char)-59), ((char)43), ((char)57), ((char)-64), ((char)-82), ((char)55), ((char)-21), ((char)-128), ((char)126), ((char)77), ((char)1) };
static uchar mul_uchar(uchar a, uchar b) {
    return (uchar)((uint)a * (uint)b);
}
static int mod_int(int a, int b) {
    return (b == 0 || (a == (-2147483647 - 1) && b == (int)-1)) ? a : (int)(a % b);
}
static int mul_int(int a, int b) {
    return (int)((uint)a * (uint)b);
}
static long mod_long(long a, long b) {
    return (b == 0 || (a == (-9223372036854775807L - 1) && b == (long)-1)) ? a : (long)(a % b);
}
__constant double ctab_double[16] = { 0x1.6977a8f261c24p+3, -0x1.2600000000000p+9, 0x1.4a80000000000p+8, -0x1.0a491d7160db4p+45, ((double)INFINITY), 0.0, 0x1.7266666666666p+5, -0x1.0f00000000000p+6, -0x1.c912865acd781p+63, ((double)INFINITY), 0.0, -0x1.2380000000000p+8, 0x1.6000000000000p+1, 0x1.2800000000000p+6, ((double)INFINITY), -0x1.d1d210d6a84dfp+16 };
static int div_int(int a, int b) {
    return (b == 0 || (a == (-2147483647 - 1) && b == (int)-1)) ? a : (int)(a / b);
}
static uint shr_uint(uint a, uint b) {
    return (uint)(a >> (b & 31));
}
static ushort3 add_ushort3(ushort3 a, ushort3 b) {
    return a + b;
}
static int sub_int(int a, int b) {
    return (int)((uint)a - (uint)b);
}
static short3 shr_short3(short3 a, short3 b) {
    return a >> (b & (short3)(15));
}
static char mod_char(char a, char b) {
    return (b == 0 || (a == ((char)-128) && b == (char)-1)) ? a : (char)(a % b);
}
static uchar mod_uchar(uchar a, uchar b) {
    return (b == 0) ? a : (uchar)(a % b);
}
__constant int ctab_int[16] = { -968939137, 1520578077, -88, -1807963244, 3, 2147483646, -61, -52, -2147483647, 2147483647, -2, -692575072, 1529449065, 2, -373546481, -1533609561 };
static ulong4 sub_ulong4(ulong4 a, ulong4 b) {
    return a - b;
}
static uint shl_uint(uint a, uint b) {
    return (uint)((uint)a << (b & 31));
}
static ulong mod_ulong(ulong a, ulong b) {
    return (b == 0) ? a : (ulong)(a % b);
}
__constant float ctab_float[16] = { 0x1.6900000000000p+7f, 0x1.20aaaa0000000p+7f, ((float)INFINITY), -0x1.c26bda0000000p+42f, -0.0f, -0x1.0000000000000p+0f, 0x1.0000000000000p-1f, 0x1.f300000000000p+6f, 0x1.0000000000000p-1f, 0x1.0000000000000p+1f, 0x1.309c180000000p-32f, 0x1.1d00000000000p+5f, -0x1.4935c00000000p+33f, -0x1.ae00000000000p+7f, 0x1.bdc5f80000000p+60f, 0.0f };

static __attribute__((noinline)) uchar k3_f40(__global const uint *in, char p0)
{
    const uint gid = get_global_id(0), lid = get_local_id(0), grp = get_group_id(0);
    p0 = ((char)(-(uint)clz(ctab_char[(uint)(((uint)((((uint)(((uint)in[(gid + 172U) & 255U]) ^ 1U))) >> (((long)(((ulong)in[(gid + 91U) & 255U] << 32) | in[(lid * 6U + 52U) & 255U])))))) & 15U])));
    p0 += ((char)46);
    return mul_uchar(((uchar)((mul_hi(((char)in[144]), p0) > min(((char)in[(gid + 14U) & 255U]), ((char)-97))) ? ((uchar)37) : convert_uchar(p0))), ((uchar)164));
}

static __attribute__((noinline)) int k3_sync41(__local int *lm, int v, uint lid, uint off)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    lm[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    return lm[(lid + off) % 8U];
}

__kernel __attribute__((reqd_work_group_size(2, 4, 1)))
void k3(__global ulong *out, __global const uint *in, __global uint *gat, S39 sarg)
{
    const uint gid = get_global_id(0) + get_global_id(1) * get_global_size(0),
        lid = get_local_id(0) + get_local_id(1) * get_local_size(0),
        grp = get_group_id(0) + get_group_id(1) * get_num_groups(0);
    __local int lm[8];
    __local int la[1];
    __local uint lu[1];
    ulong h;
    { /* segment 0 */
    h = 3660708304UL;
    h = hmix(h, (ulong)sarg.f0);
    h = hmix(h, (ulong)sarg.f1);
    h = hmix(h, (ulong)dbits(sarg.f2));
    h = hmix(h, (ulong)sarg.f3.s0); h = hmix(h, (ulong)sarg.f3.s1);
    h = hmix(h, (ulong)sarg.f4);
        short2 v42 = clz(clamp(((short2)(((short)-88), ((short)-16))), ((short)7), ((short)20808)));
        int x43 = k3_sync41(lm, mod_int(((int)((((char)18) >= ((char)-113)) ? ((int)in[(gid + 87U) & 255U]) : ((int)in[216]))), mul_int(189269881, -2147483647)), lid, 2U);
        barrier(CLK_LOCAL_MEM_FENCE);
        lm[lid] = (convert_int2_sat_rtn(vload2((uint)(mod_long(-7498655358275407259L, ((long)get_global_linear_id()))) % 128U, (__global const float *)in))).s1;
        barrier(CLK_LOCAL_MEM_FENCE);
        if ((((uint)((0x1.0000000000000p+1 <= ctab_double[(uint)(div_int(((int)in[149]), x43)) & 15U]) ? ((uint)in[(lid * 1U + 252U) & 255U]) : 1150138597U)) < shr_uint(1457750345U, 3U))) lm[(lid + 6U) % 8U] = -78;
        barrier(CLK_LOCAL_MEM_FENCE);
        int x44 = lm[7U - lid];
        h = hmix(h, (ulong)v42.s0); h = hmix(h, (ulong)v42.s1);
        h = hmix(h, (ulong)x43);
    out[gid * 2U + 0U] = h;
    }
    { /* segment 1 */
    h = 2179390755UL;
    h = hmix(h, (ulong)sarg.f0);
    h = hmix(h, (ulong)sarg.f1);
    h = hmix(h, (ulong)dbits(sarg.f2));
    h = hmix(h, (ulong)sarg.f3.s0); h = hmix(h, (ulong)sarg.f3.s1);
    h = hmix(h, (ulong)sarg.f4);
        int v45 = (-0x1.ca46700000000p-32f >= ldexp(((float)INFINITY), 25));
        switch (convert_char_sat_rtp((0x1.0000000000000p-1f + 0x1.0000000000000p-1f))) {
        case ((char)2):
          {
            ushort a46[16];
            for (int q47 = 0; q47 < 16; q47++)
                a46[q47] = ((ushort)~((ushort)32768));
            for (int i48 = 0; i48 < (int)(in[17] % 5U); i48++) {
                ushort4 a49[4];
                for (int q50 = 0; q50 < 4; q50++)
                    a49[q50] = ((ushort4)(a46[(uint)(2147483648U) & 15U], ((ushort)in[(gid + 125U) & 255U]), a46[(uint)(convert_uchar_sat(-0x1.8400000000000p+6)) & 15U], a46[(uint)(2732556770825404594L) & 15U]));
                { uint o51, d52 = 89U; do o51 = *(volatile __global uint *)(&gat[grp * 16U + 0U]); while (atomic_cmpxchg(&gat[grp * 16U + 0U], o51, min(o51, d52)) != o51); }
                a49[(uint)((-72 <= -660332807)) & 3U].s02 -= (add_ushort3(((ushort3)(((ushort)0))), ((ushort3)(((ushort)in[(gid + 135U) & 255U]), ((ushort)in[(lid * 6U + 132U) & 255U]), ((ushort)in[(gid + 246U) & 255U]))))).xz;
            }
            h = hmix(h, (ulong)a46[0]); h = hmix(h, (ulong)a46[1]); h = hmix(h, (ulong)a46[2]); h = hmix(h, (ulong)a46[3]); h = hmix(h, (ulong)a46[4]); h = hmix(h, (ulong)a46[5]); h = hmix(h, (ulong)a46[6]); h = hmix(h, (ulong)a46[7]); h = hmix(h, (ulong)a46[8]); h = hmix(h, (ulong)a46[9]); h = hmix(h, (ulong)a46[10]); h = hmix(h, (ulong)a46[11]); h = hmix(h, (ulong)a46[12]); h = hmix(h, (ulong)a46[13]); h = hmix(h, (ulong)a46[14]); h = hmix(h, (ulong)a46[15]);
            vstore3(convert_ushort3_rtn(((char3)((max(((char3)(((char)88))), ((char3)(((char)127), ((char)in[(gid + 234U) & 255U]), ((char)22))))) ^ (((char3)(((char)in[221]))))))), (uint)(((uint)((((ulong)(((ulong)in[249] << 32) | in[(lid * 4U + 128U) & 255U])) >= ((ulong)(((ulong)in[172] << 32) | in[(lid * 9U + 119U) & 255U]))) ? 0U : 1U))) % 5U, a46);
            h = hmix(h, (ulong)a46[0]); h = hmix(h, (ulong)a46[1]); h = hmix(h, (ulong)a46[2]); h = hmix(h, (ulong)a46[3]); h = hmix(h, (ulong)a46[4]); h = hmix(h, (ulong)a46[5]); h = hmix(h, (ulong)a46[6]); h = hmix(h, (ulong)a46[7]); h = hmix(h, (ulong)a46[8]); h = hmix(h, (ulong)a46[9]); h = hmix(h, (ulong)a46[10]); h = hmix(h, (ulong)a46[11]); h = hmix(h, (ulong)a46[12]); h = hmix(h, (ulong)a46[13]); h = hmix(h, (ulong)a46[14]); h = hmix(h, (ulong)a46[15]);
          }
        case ((char)34):
        case ((char)58):
          {
            switch (41568188U) {
            case 0U:
            case 1U:
              {
                ushort a53[8];
                for (int q54 = 0; q54 < 8; q54++)
                    a53[q54] = shr_ushort(((ushort)63417), ((ushort)1));
                h = hmix(h, (ulong)a53[0]); h = hmix(h, (ulong)a53[1]); h = hmix(h, (ulong)a53[2]); h = hmix(h, (ulong)a53[3]); h = hmix(h, (ulong)a53[4]); h = hmix(h, (ulong)a53[5]); h = hmix(h, (ulong)a53[6]); h = hmix(h, (ulong)a53[7]);
              }
                break;
            case 81U:
              {
                atomic_xor(&gat[grp * 16U + 1U], 1703572314U);
                atomic_max(&gat[grp * 16U + 2U], 0U);
                short a55[16];
                for (int q56 = 0; q56 < 16; q56++)
                    a55[q56] = convert_short_sat(mod_uint(*(ctab_uint + ((uint)(convert_int_sat_rtz(((ushort)in[(gid + 192U) & 255U]))) & 15U)), 900302199U));
                h = hmix(h, (ulong)a55[0]); h = hmix(h, (ulong)a55[1]); h = hmix(h, (ulong)a55[2]); h = hmix(h, (ulong)a55[3]); h = hmix(h, (ulong)a55[4]); h = hmix(h, (ulong)a55[5]); h = hmix(h, (ulong)a55[6]); h = hmix(h, (ulong)a55[7]); h = hmix(h, (ulong)a55[8]); h = hmix(h, (ulong)a55[9]); h = hmix(h, (ulong)a55[10]); h = hmix(h, (ulong)a55[11]); h = hmix(h, (ulong)a55[12]); h = hmix(h, (ulong)a55[13]); h = hmix(h, (ulong)a55[14]); h = hmix(h, (ulong)a55[15]);
              }
                break;
            case 1814288050U:
            case 3016470521U:
              {
                v45 = sub_int(convert_int(12), ((int)((convert_int_sat_rtn((float)(int)(in[(lid * 7U + 233U) & 255U] & 0xffffU))) | (v45))));
                v45 = (((int16)(-1908432234))).sc;
              }
            }
          }
            break;
        }
        switch (convert_uint((((uint4)(100U, 1484224687U, ((uint)in[68]), ((uint)in[220])))).s1)) {
        case 0U:
          {
            { int i57 = 0;
            while (i57 < 5) {
                i57++;
                h = hmix(h, (ulong)v45);
            } }
            for (int i58 = 0; i58 < 1; i58++) {
                short a59[4];
                for (int q60 = 0; q60 < 4; q60++)
                    a59[q60] = ((short)46);
                h = hmix(h, (ulong)a59[0]); h = hmix(h, (ulong)a59[1]); h = hmix(h, (ulong)a59[2]); h = hmix(h, (ulong)a59[3]);
            }
            short3 v61 = ((short3)~shr_short3(((short3)(((short)-30459), ((short)3), ((short)grp))), ((short3)(((short)46), ((short)-41), ((short)in[(lid * 3U + 196U) & 255U])))));
            h = hmix(h, (ulong)v61.s0); h = hmix(h, (ulong)v61.s1); h = hmix(h, (ulong)v61.s2);
          }
            break;
        case 1U:
        case 44U:
          {
            uint v62 = 4294967295U;
            ushort v63 = ((ushort)gid);
            h = hmix(h, (ulong)v62);
            h = hmix(h, (ulong)v63);
          }
            break;
        case 754149183U:
          {
            atomic_inc(&gat[grp * 16U + 3U]);
            v45 = ((int)in[230]);
            int v64 = shl_int(((int)((((int)(-(uint)v45))) & (-2147483647))), convert_int_sat_rtp(vload_half((uint)(sub_long(-6225811835458658314L, ((long)(((ulong)in[(gid + 225U) & 255U] << 32) | in[(gid + 141U) & 255U])))) % 512U, (__global const half *)in)));
          }
            break;
        case 2689105692U:
          {
            char a65[4];
            for (int q66 = 0; q66 < 4; q66++)
                a65[q66] = ((char)((((vload16((lid * 3U + 12U) % 64U, (__global const char *)in)).odd).s2) & (mad_hi(((char)in[(gid + 47U) & 255U]), ((char)-47), ((char)2)))));
            h = hmix(h, (ulong)a65[0]); h = hmix(h, (ulong)a65[1]); h = hmix(h, (ulong)a65[2]); h = hmix(h, (ulong)a65[3]);
          }
            break;
        }
        int x67 = k3_sync41(lm, add_int(((int)in[46]), ((int)lid)), lid, 4U);
        h = hmix(h, (ulong)x67);
    out[gid * 2U + 1U] = h;
    }
}

/* full detail:
compile: CompileError: clang-22 failed to compile kernel.cl: exit status 1
fatal error: error in backend: OpTypeInt type with a width other than 8, 16, 32 or 64 bits requires the following SPIR-V extension: SPV_ALTERA_arbitrary_precision_integers
PLEASE submit a bug report to https://github.com/llvm/llvm-project/issues/ and include the crash backtrace, preprocessed source, and associated run script.
Stack dump:
0.	Program arguments: /usr/bin/clang-22 --target=spirv64 -c -mllvm --spirv-ext=+SPV_EXT_shader_atomic_float_add,+SPV_EXT_shader_atomic_float_min_max -O2 out.ll -o out.spv
1.	Code generation
2.	Running pass 'SPIRV module analysis' on module 'out.ll'.
 #0 0x00007f17b70b8786 llvm::sys::PrintStackTrace(llvm::raw_ostream&, int) (/usr/lib/llvm-22/bin/../lib/libLLVM.so.22.1+0x4eb8786)
 #1 0x00007f17b70b5fd3 llvm::sys::RunSignalHandlers() (/usr/lib/llvm-22/bin/../lib/libLLVM.so.22.1+0x4eb5fd3)
 #2 0x00007f17b6fe81de (/usr/lib/llvm-22/bin/../lib/libLLVM.so.22.1+0x4de81de)
 #3 0x00007f17b6fe819b (/usr/lib/llvm-22/bin/../lib/libLLVM.so.22.1+0x4de819b)
 #4 0x00007f17b70b2a87 llvm::sys::Process::Exit(int, bool) (/usr/lib/llvm-22/bin/../lib/libLLVM.so.22.1+0x4eb2a87)
 #5 0x000055946f5130c6 (/usr/bin/clang-22+0x140c6)
 #6 0x00007f17b6ff9a06 llvm::report_fatal_error(llvm::Twine const&, bool) (/usr/lib/llvm-22/bin/../lib/libLLVM.so.22.1+0x4df9a06)
 #7 0x00007f17b6ff98f6 (/usr/lib/llvm-22/bin/../lib/libLLVM.so.22.1+0x4df98f6)
 #8 0x00007f17b6ff9bb8 (/usr/lib/llvm-22/bin/../lib/libLLVM.so.22.1+0x4df9bb8)
 #9 0x00007f17ba42f489 (/usr/lib/llvm-22/bin/../lib/libLLVM.so.22.1+0x822f489)
#10 0x00007f17ba430fc7 (/usr/lib/llvm-22/bin/../lib/libLLVM.so.22.1+0x8230fc7)
#11 0x00007f17ba430e08 (/usr/lib/llvm-22/bin/../lib/libLLVM.so.22.1+0x8230e08)
#12 0x00007f17b7224ce2 llvm::legacy::PassManagerImpl::run(llvm::Module&) (/usr/lib/llvm-22/bin/../lib/libLLVM.so.22.1+0x5024ce2)
#13 0x00007f17bd9fca3a clang::emitBackendOutput(clang::CompilerInstance&, clang::CodeGenOptions&, llvm::StringRef, llvm::Module*, clang::BackendAction, llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>, std::unique_ptr<llvm::raw_pwrite_stream, std::default_delete<llvm::raw_pwrite_stream> >, clang::BackendConsumer*) (/usr/lib/llvm-22/bin/../lib/libclang-cpp.so.22.1+0x27fca3a)
#14 0x00007f17bdd26aa6 clang::CodeGenAction::ExecuteAction() (/usr/lib/llvm-22/bin/../lib/libclang-cpp.so.22.1+0x2b26aa6)
#15 0x00007f17be51714b clang::FrontendAction::Execute() (/usr/lib/llvm-22/bin/../lib/libclang-cpp.so.22.1+0x331714b)
#16 0x00007f17be488ac4 clang::CompilerInstance::ExecuteAction(clang::FrontendAction&) (/usr/lib/llvm-22/bin/../lib/libclang-cpp.so.22.1+0x3288ac4)
#17 0x00007f17be5a555a clang::ExecuteCompilerInvocation(clang::CompilerInstance*) (/usr/lib/llvm-22/bin/../lib/libclang-cpp.so.22.1+0x33a555a)
#18 0x000055946f5129f0 cc1_main(llvm::ArrayRef<char const*>, char const*, void*) (/usr/bin/clang-22+0x139f0)
#19 0x000055946f50f6ab (/usr/bin/clang-22+0x106ab)
#20 0x000055946f511048 (/usr/bin/clang-22+0x12048)

*/
