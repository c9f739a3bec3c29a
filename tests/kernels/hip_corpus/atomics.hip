// Histograms with shared-memory and global atomics, and the whole atomic family.
#include <hip/hip_runtime.h>
#include <vector>
#include "common.h"

#define NUM_BINS 256

__global__ void histogram256(const unsigned char* data, size_t n, unsigned int* histo) {
  __shared__ unsigned int local[NUM_BINS];
  for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) local[b] = 0;
  __syncthreads();
  for (size_t i = threadIdx.x + blockIdx.x * blockDim.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&local[data[i]], 1u);
  __syncthreads();
  for (int b = threadIdx.x; b < NUM_BINS; b += blockDim.x) atomicAdd(&histo[b], local[b]);
}

// out: add, sub, min, max, and, or, xor, exch-count, cas-count, inc, dec
__global__ void atomic_ops(const int* values, int* out, unsigned int* wrap, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = values[i];
  atomicAdd(&out[0], v);
  atomicSub(&out[1], v);
  atomicMin(&out[2], v);
  atomicMax(&out[3], v);
  atomicAnd(&out[4], ~(1 << (i % 31)));
  atomicOr(&out[5], 1 << (i % 31));
  atomicXor(&out[6], v);
  if (atomicExch(&out[7], i) >= 0) atomicAdd(&out[8], 1);
  int expected = atomicCAS(&out[9], 0, 1);  // exactly one work-item sees 0
  if (expected == 0) atomicAdd(&out[10], 1);
  atomicInc(&wrap[0], 9u);  // counts modulo 10
  atomicDec(&wrap[1], 6u);
}

__global__ void float_atomics(const float* x, float* sum, double* dsum, float* maxv, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    atomicAdd(sum, x[i]);
    atomicAdd(dsum, (double)x[i]);
    atomicMax(maxv, x[i]);
  }
}

int main() {
  const size_t n = 1 << 20;
  unsigned char* data;
  unsigned int* histo;
  HIP_CHECK(hipMalloc(&data, n));
  HIP_CHECK(hipMalloc(&histo, NUM_BINS * sizeof(unsigned)));
  HIP_CHECK(hipMemset(histo, 0, NUM_BINS * sizeof(unsigned)));
  hipLaunchKernelGGL(histogram256, dim3(120), dim3(256), 0, 0, data, n, histo);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
