// A block-wide radix sort (one bit per pass: "split" with a scan) built from __device__
// functions that hold barriers, sub-wavefront shuffles with a width, __syncthreads_or
// as a loop condition, and device printf as debugging code leaves it in.
#include <hip/hip_runtime.h>
#include <cstdio>
#include "common.h"

// Inclusive Hillis-Steele scan of one value per thread across the block.
template <int BLOCK>
__device__ unsigned block_scan(unsigned v, unsigned* tmp) {
  const int t = threadIdx.x;
  tmp[t] = v;
  __syncthreads();
  for (int offset = 1; offset < BLOCK; offset <<= 1) {
    unsigned add = t >= offset ? tmp[t - offset] : 0u;
    __syncthreads();
    tmp[t] += add;
    __syncthreads();
  }
  unsigned result = tmp[t];
  __syncthreads();
  return result;
}

// Stable partition by one bit: zeros first, then ones.
template <int BLOCK>
__device__ unsigned split(unsigned key, int bit, unsigned* keys, unsigned* tmp) {
  const int t = threadIdx.x;
  unsigned is_one = (key >> bit) & 1u;
  unsigned ones_before = block_scan<BLOCK>(is_one, tmp) - is_one;
  __shared__ unsigned total_zeros;
  if (t == BLOCK - 1) total_zeros = BLOCK - (ones_before + is_one);
  __syncthreads();
  unsigned dest = is_one ? total_zeros + ones_before : t - ones_before;
  keys[dest] = key;
  __syncthreads();
  unsigned sorted = keys[t];
  __syncthreads();
  return sorted;
}

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) radix_sort_block(unsigned* data, int bits) {
  __shared__ unsigned keys[BLOCK];
  __shared__ unsigned tmp[BLOCK];
  unsigned key = data[blockIdx.x * BLOCK + threadIdx.x];
  for (int bit = 0; bit < bits; ++bit) key = split<BLOCK>(key, bit, keys, tmp);
  data[blockIdx.x * BLOCK + threadIdx.x] = key;
}

// Sub-wavefront operations: sums over groups of 8 lanes with __shfl_xor(v, m, 8),
// broadcasts from lane 3 of each 16-lane group with __shfl(v, 3, 16).
__global__ void segment_ops(const int* in, int* sums8, int* bcast16) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = in[i];
  int s = v;
  for (int m = 4; m > 0; m >>= 1) s += __shfl_xor(s, m, 8);
  sums8[i] = s;
  bcast16[i] = __shfl(v, 3, 16);
}

// Collatz steps until every thread of the block is done: __syncthreads_or ends the loop.
__global__ void collatz_steps(const unsigned* start, int* steps) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long x = start[i];
  int count = 0;
  while (__syncthreads_or(x != 1)) {
    if (x != 1) {
      x = (x & 1) ? 3 * x + 1 : x / 2;
      ++count;
    }
  }
  steps[i] = count;
}

// Warp reductions of CUDA 11 (sm_80) as HIP 6.2 has them, with 64-bit masks:
// out[6 * i ...]: sum, min, max, xor over the wavefront; the sum over the even lanes
// (even lanes only); the or of the active lanes' high nibbles.
__global__ void reduce_sync_ops(const int* x, int* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = x[i];
  const unsigned long long all = ~0ull, even = 0x5555555555555555ull;
  out[6 * i] = __reduce_add_sync(all, v);
  out[6 * i + 1] = __reduce_min_sync(all, v);
  out[6 * i + 2] = __reduce_max_sync(all, v);
  out[6 * i + 3] = (int)__reduce_xor_sync(all, (unsigned)v);
  out[6 * i + 4] = (threadIdx.x & 1) ? 0 : __reduce_add_sync(even, v);
  out[6 * i + 5] = (int)__reduce_or_sync(__activemask(), (unsigned)v & 0xF0u);
}

__global__ void report(const float* values, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && values[i] < 0.0f)
    printf("block %u thread %u: values[%d] = %.3f (%e) is negative, %s\n", blockIdx.x,
           threadIdx.x, i, values[i], (double)values[i], "skipping");
  if (i == 0) printf("checked %d values, %lld bytes, %5.1f%%, %llx\n", n, (long long)n * 4, 100.0, 0xABCDEFull);
}

int main() {
  unsigned* data;
  HIP_CHECK(hipMalloc(&data, 1024 * sizeof(unsigned)));
  radix_sort_block<256><<<4, 256>>>(data, 32);
  segment_ops<<<4, 256>>>((int*)data, (int*)data, (int*)data);
  report<<<4, 256>>>((float*)data, 1024);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
