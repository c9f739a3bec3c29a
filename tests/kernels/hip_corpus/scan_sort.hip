// Inclusive prefix sum (Hillis-Steele, double-buffered in dynamic shared memory) and
// bitonic sort: the global step kernel launched once per (k, j), and a whole sort of
// one block in shared memory.
#include <hip/hip_runtime.h>
#include <vector>
#include "common.h"

__global__ void block_scan(const int* in, int* out, int n) {
  extern __shared__ int temp[];  // 2 * blockDim.x ints
  int tid = threadIdx.x;
  int gid = blockIdx.x * blockDim.x + tid;
  int pout = 0, pin = 1;
  temp[tid] = gid < n ? in[gid] : 0;
  __syncthreads();
  for (int offset = 1; offset < blockDim.x; offset *= 2) {
    pout = 1 - pout;
    pin = 1 - pout;
    int v = temp[pin * blockDim.x + tid];
    if (tid >= offset) v += temp[pin * blockDim.x + tid - offset];
    temp[pout * blockDim.x + tid] = v;
    __syncthreads();
  }
  if (gid < n) out[gid] = temp[pout * blockDim.x + tid];
}

__global__ void bitonic_sort_step(float* values, int j, int k) {
  unsigned i = threadIdx.x + blockDim.x * blockIdx.x;
  unsigned partner = i ^ j;
  if (partner > i) {
    bool ascending = (i & k) == 0;
    float a = values[i], b = values[partner];
    if ((a > b) == ascending) {
      values[i] = b;
      values[partner] = a;
    }
  }
}

template <int N>
__global__ void bitonic_sort_shared(unsigned* keys) {
  __shared__ unsigned s[N];
  unsigned* block_keys = keys + blockIdx.x * N;
  for (int i = threadIdx.x; i < N; i += blockDim.x) s[i] = block_keys[i];
  __syncthreads();
  for (int k = 2; k <= N; k <<= 1) {
    for (int j = k >> 1; j > 0; j >>= 1) {
      for (int i = threadIdx.x; i < N; i += blockDim.x) {
        int partner = i ^ j;
        if (partner > i) {
          bool up = (i & k) == 0;
          unsigned a = s[i], b = s[partner];
          if ((a > b) == up) {
            s[i] = b;
            s[partner] = a;
          }
        }
      }
      __syncthreads();
    }
  }
  for (int i = threadIdx.x; i < N; i += blockDim.x) block_keys[i] = s[i];
}

int main() {
  const int n = 4096;
  float* values;
  HIP_CHECK(hipMalloc(&values, n * sizeof(float)));
  for (int k = 2; k <= n; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1)
      hipLaunchKernelGGL(bitonic_sort_step, dim3(n / 256), dim3(256), 0, 0, values, j, k);
  hipLaunchKernelGGL(bitonic_sort_shared<1024>, dim3(4), dim3(256), 0, 0, (unsigned*)values);
  block_scan<<<n / 256, 256, 2 * 256 * sizeof(int)>>>((int*)values, (int*)values, n);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
