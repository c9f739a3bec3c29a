// The math that ported kernels call besides the usual sin/exp: sincosf, fast
// intrinsics (__sinf, __logf, __powf), exact-rounding helpers (__fadd_rn, __fmaf_rn,
// __frcp_rn, __fsqrt_rn), rounding-mode conversions and floating-point decomposition.
#include <hip/hip_runtime.h>
#include <cmath>
#include "common.h"

// out[8 * i ...]: sincosf (s, c), __sincosf (s, c), __sinf, __cosf, __tanf, __logf
__global__ void trig_fast(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i], s, c, fs, fc;
  sincosf(v, &s, &c);
  __sincosf(v, &fs, &fc);
  float* o = out + 8 * i;
  o[0] = s;
  o[1] = c;
  o[2] = fs;
  o[3] = fc;
  o[4] = __sinf(v);
  o[5] = __cosf(v);
  o[6] = __tanf(v * 0.25f);
  o[7] = __logf(v + 5.0f);
}

// out[8 * i ...]: __powf, exp10f, __exp10f, __log2f, __log10f, rsqrtf, __frsqrt_rn, __frcp_rn
__global__ void exp_log_fast(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  float* o = out + 8 * i;
  o[0] = __powf(v, 1.7f);
  o[1] = exp10f(v - 2.0f);
  o[2] = __exp10f(v - 2.0f);
  o[3] = __log2f(v);
  o[4] = __log10f(v);
  o[5] = rsqrtf(v);
  o[6] = __frsqrt_rn(v);
  o[7] = __frcp_rn(v);
}

// Correctly rounded operations: out[7 * i ...]: __fadd_rn, __fsub_rn, __fmul_rn,
// __fdiv_rn, __fmaf_rn, __fsqrt_rn, and __fadd_rn(__fmul_rn) (never fused into an fma)
__global__ void rounded_ops(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = a[i], y = b[i];
  float* o = out + 7 * i;
  o[0] = __fadd_rn(x, y);
  o[1] = __fsub_rn(x, y);
  o[2] = __fmul_rn(x, y);
  o[3] = __fdiv_rn(x, y);
  o[4] = __fmaf_rn(x, y, -1.0f);
  o[5] = __fsqrt_rn(fabsf(x));
  o[6] = __fadd_rn(__fmul_rn(x, y), -1.0f);
}

// out[12 * i ...]: __float2int_rn/rz/ru/rd, __float2uint_rn(|x|), lrintf, llroundf,
// rintf, nearbyintf, truncf, roundf, __double2int_rn
__global__ void conversions(const float* x, long long* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  long long* o = out + 12 * i;
  o[0] = __float2int_rn(v);
  o[1] = __float2int_rz(v);
  o[2] = __float2int_ru(v);
  o[3] = __float2int_rd(v);
  o[4] = __float2uint_rn(fabsf(v));
  o[5] = lrintf(v);
  o[6] = llroundf(v);
  o[7] = (long long)rintf(v);
  o[8] = (long long)nearbyintf(v);
  o[9] = (long long)truncf(v);
  o[10] = (long long)roundf(v);
  o[11] = __double2int_rn((double)v * 0.5);
}

// out[8 * i ...]: frexpf (mantissa, exponent), ldexpf, modff (fraction, integer part),
// fmodf, remainderf, remquof's quotient (low 3 bits)
__global__ void decompose(const float* x, const float* y, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i], w = y[i];
  int e, q;
  float whole;
  float* o = out + 8 * i;
  o[0] = frexpf(v, &e);
  o[1] = (float)e;
  o[2] = ldexpf(v, i % 20 - 10);
  o[3] = modff(v, &whole);
  o[4] = whole;
  o[5] = fmodf(v, w);
  o[6] = remainderf(v, w);
  remquof(v, w, &q);
  o[7] = (float)(q & 7) * (q < 0 ? -1.0f : 1.0f);
}

// Double helpers: out[4 * i ...]: sincos (s, c), __hiloint2double of the halves, hypot
__global__ void double_bits(const double* x, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double v = x[i], s, c;
  sincos(v, &s, &c);
  out[4 * i] = s;
  out[4 * i + 1] = c;
  out[4 * i + 2] = __hiloint2double(__double2hiint(v), __double2loint(v)) - v;
  out[4 * i + 3] = hypot(v, 3.0);
}

int main() {
  float *x, *out;
  HIP_CHECK(hipMalloc(&x, 1024 * sizeof(float)));
  HIP_CHECK(hipMalloc(&out, 8 * 1024 * sizeof(float)));
  trig_fast<<<4, 256>>>(x, out, 1024);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
