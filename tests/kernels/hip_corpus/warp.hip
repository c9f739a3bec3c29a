// Wavefront-level code: shuffles, ballots, lane ids and the bit intrinsics.
#include <hip/hip_runtime.h>
#include "common.h"

__device__ float warp_sum(float v) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_down(v, offset);
  return v;
}

__global__ void warp_reduce(const float* in, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = warp_sum(in[i]);
  if (__lane_id() == 0) out[i / warpSize] = v;
}

__global__ void ballot_count(const int* in, int* counts) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long mask = __ballot(in[i] > 0);
  if (__lane_id() == 0) counts[i / warpSize] = __popcll(mask);
}

// Lane numbers and wavefront sizes as seen by each work-item.
__global__ void lane_ids(int* lane, int* wave_size) {
  int i = (blockIdx.x * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  lane[i] = __lane_id();
  wave_size[i] = warpSize;
}

// out[8 * i ...]: popc, clz, ffs, brev, bitextract(8, 12), funnelshift_r, mulhi, sad
__global__ void bit_ops(const unsigned* a, const unsigned* b, unsigned* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned x = a[i], y = b[i];
  out[8 * i + 0] = __popc(x);
  out[8 * i + 1] = __clz((int)x);
  out[8 * i + 2] = __ffs((int)x);
  out[8 * i + 3] = __brev(x);
  out[8 * i + 4] = __bitextract_u32(x, 8, 12);
  out[8 * i + 5] = __funnelshift_r(x, y, i % 40);
  out[8 * i + 6] = __umulhi(x, y);
  out[8 * i + 7] = __sad((int)x, (int)y, 7u);
}

int main() {
  float *in, *out;
  HIP_CHECK(hipMalloc(&in, 1024 * sizeof(float)));
  HIP_CHECK(hipMalloc(&out, 16 * sizeof(float)));
  hipLaunchKernelGGL(warp_reduce, dim3(4), dim3(256), 0, 0, in, out);
  ballot_count<<<4, 256>>>((int*)in, (int*)out);
  lane_ids<<<dim3(2), dim3(32, 4)>>>((int*)in, (int*)out);
  bit_ops<<<4, 256>>>((unsigned*)in, (unsigned*)in, (unsigned*)out, 1024);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
