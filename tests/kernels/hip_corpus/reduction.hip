// Block reductions: a template kernel instantiated for two types and block sizes, and a
// kernel whose scratch space is dynamic shared memory sized at launch.
#include <hip/hip_runtime.h>
#include <vector>
#include "common.h"

template <typename T, unsigned BLOCK>
__global__ void reduce(const T* __restrict__ in, T* __restrict__ out, unsigned n) {
  __shared__ T partial[BLOCK];
  unsigned tid = threadIdx.x;
  unsigned i = blockIdx.x * (BLOCK * 2) + tid;
  T sum = 0;
  if (i < n) sum = in[i];
  if (i + BLOCK < n) sum += in[i + BLOCK];
  partial[tid] = sum;
  __syncthreads();
  for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) partial[tid] += partial[tid + s];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = partial[0];
}

// Sum of squares: the block's scratch is extern __shared__ (blockDim.x doubles).
__global__ void block_sum_dynamic(const double* in, double* out, int n) {
  extern __shared__ double scratch[];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  scratch[tid] = i < n ? in[i] * in[i] : 0.0;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (tid < s) scratch[tid] += scratch[tid + s];
    __syncthreads();
  }
  if (tid == 0) atomicAdd(out, scratch[0]);
}

int main() {
  const unsigned n = 1 << 20;
  float *in, *out;
  HIP_CHECK(hipMalloc(&in, n * sizeof(float)));
  HIP_CHECK(hipMalloc(&out, n / 512 * sizeof(float)));
  reduce<float, 256><<<n / 512, 256>>>(in, out, n);
  hipLaunchKernelGGL(reduce<int, 128>, dim3(n / 256), dim3(128), 0, 0, (const int*)in, (int*)out, n);
  hipLaunchKernelGGL(block_sum_dynamic, dim3(n / 256), dim3(256), 256 * sizeof(double), 0,
                     (const double*)in, (double*)out, (int)n / 2);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
