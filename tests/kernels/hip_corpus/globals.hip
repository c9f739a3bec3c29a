// Program-scope data: a __constant__ table with an initializer, a __device__ counter
// every block bumps, and a __constant__ array the host fills (hipMemcpyToSymbol).
#include <hip/hip_runtime.h>
#include "common.h"

__constant__ float poly[4] = {1.0f, -0.5f, 0.25f, -0.125f};
__constant__ float scale[2];
__device__ unsigned int blocks_done = 0;

__global__ void evaluate_poly(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = ((poly[3] * v + poly[2]) * v + poly[1]) * v + poly[0];
  }
  if (threadIdx.x == 0) atomicAdd(&blocks_done, 1u);
}

__global__ void apply_scale(float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = y[i] * scale[0] + scale[1];
}

int main() {
  const float h_scale[2] = {2.0f, 1.0f};
  HIP_CHECK(hipMemcpyToSymbol(HIP_SYMBOL(scale), h_scale, sizeof(h_scale)));
  float *x, *y;
  HIP_CHECK(hipMalloc(&x, 1000 * sizeof(float)));
  HIP_CHECK(hipMalloc(&y, 1000 * sizeof(float)));
  evaluate_poly<<<4, 256>>>(x, y, 1000);
  apply_scale<<<4, 256>>>(y, 1000);
  unsigned done = 0;
  HIP_CHECK(hipMemcpyFromSymbol(&done, HIP_SYMBOL(blocks_done), sizeof(done)));
  return done == 4 ? 0 : 1;
}
