// Half precision as mixed-precision code uses it: __half2 axpy, a half dot product
// accumulated in float with a shuffle reduction, conversions and comparisons.
#include <hip/hip_runtime.h>
#include <hip/hip_fp16.h>
#include "common.h"

__global__ void haxpy(int n2, __half a, const __half2* x, __half2* y) {
  const __half2 a2 = __halves2half2(a, a);
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n2; i += blockDim.x * gridDim.x)
    y[i] = __hfma2(a2, x[i], y[i]);
}

__device__ float warp_sum(float v) {
  for (int mask = warpSize / 2; mask > 0; mask >>= 1) v += __shfl_xor(v, mask);
  return v;
}

// One float partial dot product per wavefront.
__global__ void hdot(const __half* a, const __half* b, float* partial, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? __half2float(a[i]) * __half2float(b[i]) : 0.0f;
  v = warp_sum(v);
  if (__lane_id() == 0) partial[i / warpSize] = v;
}

// out[4 * i ...]: float -> half -> float, relu in half, max and min, the sign of a - b
__global__ void half_misc(const float* x, const float* y, __half* out, int* sign, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half a = __float2half(x[i]), b = __float2half(y[i]);
  const __half zero = __float2half(0.0f);
  out[4 * i] = __float2half(__half2float(a) * 2.0f);
  out[4 * i + 1] = __hgt(a, zero) ? a : zero;
  out[4 * i + 2] = __hmax(a, b);
  out[4 * i + 3] = __hmin(a, b);
  sign[i] = __hlt(a, b) ? -1 : (__heq(a, b) ? 0 : 1);
}

// Per-wavefront maximum of halves (__shfl_xor on __half) and pairwise sums of __half2
// with the next lane's (__shfl_down on __half2).
__global__ void hwave_max(const __half* x, const __half2* pairs, __half* maxima,
                          __half2* sums) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  __half m = x[i];
  for (int mask = warpSize / 2; mask > 0; mask >>= 1) m = __hmax(m, __shfl_xor(m, mask));
  maxima[i] = m;
  __half2 p = pairs[i];
  sums[i] = __hadd2(p, __shfl_down(p, 1));
}

// The rest of hip_fp16.h that ported code calls: float2 <-> __half2, rounding, bit
// reinterpretation, NaN/inf tests, NaN-aware max, reciprocal and exp2/log2.
// out[8 * i ...]: round trip of f.x, of f.y, hfloor + hceil (as h2floor/h2ceil), htrunc,
// hrint, hrcp, hexp2, hlog2(|x| + 1); bits: __half_as_ushort; flags: nan + 2 * inf
__global__ void half_math(const float2* f, __half* out, unsigned short* bits, int* flags,
                          __half* maxima, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  __half2 v = __float22half2_rn(f[i]);
  float2 back = __half22float2(v);
  __half* o = out + 8 * i;
  o[0] = __float2half(back.x);
  o[1] = __float2half(back.y);
  __half2 fl = h2floor(v), ce = h2ceil(v);
  o[2] = fl.x + ce.x;
  o[3] = htrunc(v.x);
  o[4] = hrint(v.x);
  o[5] = hrcp(v.x);
  o[6] = hexp2(__hmin(v.x, __float2half(10.0f)));
  o[7] = hlog2(__habs2(v).y + __float2half(1.0f));
  bits[i] = __half_as_ushort(v.x);
  __half h = __ushort_as_half(bits[i]);
  flags[i] = __hisnan(h) + 2 * __hisinf(h);
  __half2 m = __hmax2(v, __hneg2(v));
  maxima[i] = __hmax(m.x, m.y);
}

int main() {
  __half *x, *y;
  HIP_CHECK(hipMalloc(&x, 1024 * sizeof(__half)));
  HIP_CHECK(hipMalloc(&y, 1024 * sizeof(__half)));
  haxpy<<<2, 256>>>(512, __float2half(2.0f), (const __half2*)x, (__half2*)y);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
