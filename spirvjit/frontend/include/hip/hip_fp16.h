// spirvjit: HIP's half precision (hip/hip_fp16.h): __half is clang's _Float16, which
// has the arithmetic and conversions HIP's class provides; __half2 is a 2-vector.
#ifndef SPIRVJIT_HIP_FP16_H
#define SPIRVJIT_HIP_FP16_H

#include "hip_runtime.h"

typedef _Float16 __half;
typedef _Float16 __half2 __attribute__((ext_vector_type(2)));
typedef __half half;
typedef __half2 half2;

#define __SPIRVJIT_HALF static __host__ __device__ inline
__SPIRVJIT_HALF __half __float2half(float x) { return (__half)x; }
__SPIRVJIT_HALF __half __float2half_rn(float x) { return (__half)x; }
__SPIRVJIT_HALF float __half2float(__half x) { return (float)x; }
__SPIRVJIT_HALF __half __int2half_rn(int x) { return (__half)x; }
__SPIRVJIT_HALF int __half2int_rz(__half x) { return (int)x; }
__SPIRVJIT_HALF __half2 __floats2half2_rn(float a, float b) { return __half2{(__half)a, (__half)b}; }
__SPIRVJIT_HALF __half2 __float2half2_rn(float a) { return __half2{(__half)a, (__half)a}; }
__SPIRVJIT_HALF __half2 __halves2half2(__half a, __half b) { return __half2{a, b}; }
__SPIRVJIT_HALF float __low2float(__half2 v) { return (float)v.x; }
__SPIRVJIT_HALF float __high2float(__half2 v) { return (float)v.y; }
__SPIRVJIT_HALF __half __low2half(__half2 v) { return v.x; }
__SPIRVJIT_HALF __half __high2half(__half2 v) { return v.y; }
__SPIRVJIT_HALF __half __hadd(__half a, __half b) { return a + b; }
__SPIRVJIT_HALF __half __hsub(__half a, __half b) { return a - b; }
__SPIRVJIT_HALF __half __hmul(__half a, __half b) { return a * b; }
__SPIRVJIT_HALF __half __hdiv(__half a, __half b) { return a / b; }
__SPIRVJIT_HALF __half __hneg(__half a) { return -a; }
__SPIRVJIT_HALF __half __habs(__half a) { return a < (__half)0 ? -a : a; }
__SPIRVJIT_HALF __half2 __hadd2(__half2 a, __half2 b) { return a + b; }
__SPIRVJIT_HALF __half2 __hsub2(__half2 a, __half2 b) { return a - b; }
__SPIRVJIT_HALF __half2 __hmul2(__half2 a, __half2 b) { return a * b; }
__SPIRVJIT_HALF bool __heq(__half a, __half b) { return a == b; }
__SPIRVJIT_HALF bool __hne(__half a, __half b) { return a != b; }
__SPIRVJIT_HALF bool __hlt(__half a, __half b) { return a < b; }
__SPIRVJIT_HALF bool __hle(__half a, __half b) { return a <= b; }
__SPIRVJIT_HALF bool __hgt(__half a, __half b) { return a > b; }
__SPIRVJIT_HALF bool __hge(__half a, __half b) { return a >= b; }
__SPIRVJIT_HALF bool __hisnan(__half a) { return a != a; }
__SPIRVJIT_HALF bool __hisinf(__half a) { return a == (__half)__builtin_inff() || a == -(__half)__builtin_inff(); }
// HIP's rule: a NaN operand gives the other one.
__SPIRVJIT_HALF __half __hmax(__half a, __half b) { return __hisnan(a) ? b : (a < b ? b : a); }
__SPIRVJIT_HALF __half __hmin(__half a, __half b) { return __hisnan(a) ? b : (b < a ? b : a); }
__SPIRVJIT_HALF __half2 __hmax2(__half2 a, __half2 b) { return __half2{__hmax(a.x, b.x), __hmax(a.y, b.y)}; }
__SPIRVJIT_HALF __half2 __hmin2(__half2 a, __half2 b) { return __half2{__hmin(a.x, b.x), __hmin(a.y, b.y)}; }
__SPIRVJIT_HALF __half2 __habs2(__half2 a) { return __half2{__habs(a.x), __habs(a.y)}; }
__SPIRVJIT_HALF __half2 __hneg2(__half2 a) { return -a; }
__SPIRVJIT_HALF __half2 __h2div(__half2 a, __half2 b) { return a / b; }
__SPIRVJIT_HALF __half2 __float22half2_rn(float2 v) { return __half2{(__half)v.x, (__half)v.y}; }
__SPIRVJIT_HALF float2 __half22float2(__half2 v) { return float2{(float)v.x, (float)v.y}; }
__SPIRVJIT_HALF unsigned short __half_as_ushort(__half a) { return __builtin_bit_cast(unsigned short, a); }
__SPIRVJIT_HALF short __half_as_short(__half a) { return __builtin_bit_cast(short, a); }
__SPIRVJIT_HALF __half __ushort_as_half(unsigned short a) { return __builtin_bit_cast(__half, a); }
__SPIRVJIT_HALF __half __short_as_half(short a) { return __builtin_bit_cast(__half, a); }
#undef __SPIRVJIT_HALF

// Shuffles of halves, as HIP's amd_hip_fp16.h has them (a __half converts to int, float
// and double alike: the int/float overloads alone are ambiguous). A __half2 moves as its
// 32 bits, a __half as 16 bits in an int.
#define __SPIRVJIT_HALF_SHUFFLE(ARG, A)                                                      \
  static __device__ inline __half2 __shfl##ARG(__half2 var, A arg, int width = warpSize) {  \
    return __builtin_bit_cast(__half2, __shfl##ARG(__builtin_bit_cast(int, var), arg, width)); \
  }                                                                                         \
  static __device__ inline __half __shfl##ARG(__half var, A arg, int width = warpSize) {    \
    int bits = __builtin_bit_cast(unsigned short, var);                                     \
    return __builtin_bit_cast(__half, (unsigned short)__shfl##ARG(bits, arg, width));        \
  }
__SPIRVJIT_HALF_SHUFFLE(, int)
__SPIRVJIT_HALF_SHUFFLE(_up, unsigned int)
__SPIRVJIT_HALF_SHUFFLE(_down, unsigned int)
__SPIRVJIT_HALF_SHUFFLE(_xor, int)
#undef __SPIRVJIT_HALF_SHUFFLE
// fma and the math functions compute in float and round once: exact for fma of halves
// (a float holds every product of two halves exactly), OpenCL's bounds for the rest.
static __device__ inline __half __hfma(__half a, __half b, __half c) {
  return (__half)((float)a * (float)b + (float)c);
}
static __device__ inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
  return __half2{__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)};
}
static __device__ inline __half hsqrt(__half x) { return (__half)sqrtf((float)x); }
static __device__ inline __half hrsqrt(__half x) { return (__half)rsqrtf((float)x); }
static __device__ inline __half hexp(__half x) { return (__half)expf((float)x); }
static __device__ inline __half hlog(__half x) { return (__half)logf((float)x); }
static __device__ inline __half hsin(__half x) { return (__half)sinf((float)x); }
static __device__ inline __half hcos(__half x) { return (__half)cosf((float)x); }
static __device__ inline __half hexp2(__half x) { return (__half)exp2f((float)x); }
static __device__ inline __half hexp10(__half x) { return (__half)exp10f((float)x); }
static __device__ inline __half hlog2(__half x) { return (__half)log2f((float)x); }
static __device__ inline __half hlog10(__half x) { return (__half)log10f((float)x); }
static __device__ inline __half hrcp(__half x) { return (__half)1.0f / x; }
// Rounding to an integer is exact in float.
static __device__ inline __half hfloor(__half x) { return (__half)floorf((float)x); }
static __device__ inline __half hceil(__half x) { return (__half)ceilf((float)x); }
static __device__ inline __half htrunc(__half x) { return (__half)truncf((float)x); }
static __device__ inline __half hrint(__half x) { return (__half)rintf((float)x); }
#define __SPIRVJIT_HALF2_MATH(NAME, ONE) \
  static __device__ inline __half2 NAME(__half2 v) { return __half2{ONE(v.x), ONE(v.y)}; }
__SPIRVJIT_HALF2_MATH(h2sqrt, hsqrt)
__SPIRVJIT_HALF2_MATH(h2rsqrt, hrsqrt)
__SPIRVJIT_HALF2_MATH(h2exp, hexp)
__SPIRVJIT_HALF2_MATH(h2exp2, hexp2)
__SPIRVJIT_HALF2_MATH(h2log, hlog)
__SPIRVJIT_HALF2_MATH(h2log2, hlog2)
__SPIRVJIT_HALF2_MATH(h2sin, hsin)
__SPIRVJIT_HALF2_MATH(h2cos, hcos)
__SPIRVJIT_HALF2_MATH(h2rcp, hrcp)
__SPIRVJIT_HALF2_MATH(h2floor, hfloor)
__SPIRVJIT_HALF2_MATH(h2ceil, hceil)
__SPIRVJIT_HALF2_MATH(h2trunc, htrunc)
__SPIRVJIT_HALF2_MATH(h2rint, hrint)
#undef __SPIRVJIT_HALF2_MATH
#endif
