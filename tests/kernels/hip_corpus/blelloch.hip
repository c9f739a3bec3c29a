// Work-efficient (Blelloch) exclusive scan with padded shared memory, the
// second pass that adds the scanned block sums, and the "threadfence reduction":
// the last block to finish sums every block's partial result.
#include <hip/hip_runtime.h>
#include "common.h"

#define LOG_NUM_BANKS 5
#define CONFLICT_FREE_OFFSET(n) ((n) >> LOG_NUM_BANKS)

// Each block scans 2 * blockDim.x elements; the shared array is sized at launch with
// room for the padding (one slot every 32 elements).
__global__ void prescan(const int* in, int* out, int* block_sums, int n) {
  extern __shared__ int temp[];
  const int tid = threadIdx.x;
  const int m = 2 * blockDim.x;
  const int base = blockIdx.x * m;
  const int ai = tid, bi = tid + blockDim.x;
  const int pad_a = CONFLICT_FREE_OFFSET(ai), pad_b = CONFLICT_FREE_OFFSET(bi);
  temp[ai + pad_a] = base + ai < n ? in[base + ai] : 0;
  temp[bi + pad_b] = base + bi < n ? in[base + bi] : 0;

  int offset = 1;
  for (int d = m >> 1; d > 0; d >>= 1) {  // up-sweep (reduce)
    __syncthreads();
    if (tid < d) {
      int a = offset * (2 * tid + 1) - 1;
      int b = offset * (2 * tid + 2) - 1;
      a += CONFLICT_FREE_OFFSET(a);
      b += CONFLICT_FREE_OFFSET(b);
      temp[b] += temp[a];
    }
    offset <<= 1;
  }
  if (tid == 0) {
    const int last = m - 1 + CONFLICT_FREE_OFFSET(m - 1);
    if (block_sums != nullptr) block_sums[blockIdx.x] = temp[last];
    temp[last] = 0;
  }
  for (int d = 1; d < m; d <<= 1) {  // down-sweep
    offset >>= 1;
    __syncthreads();
    if (tid < d) {
      int a = offset * (2 * tid + 1) - 1;
      int b = offset * (2 * tid + 2) - 1;
      a += CONFLICT_FREE_OFFSET(a);
      b += CONFLICT_FREE_OFFSET(b);
      int t = temp[a];
      temp[a] = temp[b];
      temp[b] += t;
    }
  }
  __syncthreads();
  if (base + ai < n) out[base + ai] = temp[ai + pad_a];
  if (base + bi < n) out[base + bi] = temp[bi + pad_b];
}

__global__ void add_block_offsets(int* data, const int* scanned_sums, int n) {
  __shared__ int offset;
  if (threadIdx.x == 0) offset = scanned_sums[blockIdx.x];
  __syncthreads();
  int i = blockIdx.x * 2 * blockDim.x + threadIdx.x;
  if (i < n) data[i] += offset;
  if (i + blockDim.x < n) data[i + blockDim.x] += offset;
}

// A block-wide sum in a __device__ function with barriers of its own.
template <unsigned BLOCK>
__device__ float block_reduce_sum(float v, float* scratch) {
  const unsigned tid = threadIdx.x;
  scratch[tid] = v;
  __syncthreads();
#pragma unroll
  for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
    if (tid < s) scratch[tid] += scratch[tid + s];
    __syncthreads();
  }
  float total = scratch[0];
  __syncthreads();  // scratch may be reused by the caller
  return total;
}

__device__ unsigned int retirement_count = 0;

template <unsigned BLOCK>
__global__ void __launch_bounds__(BLOCK) reduce_single_pass(const float* in, float* partial,
                                                            float* result, unsigned n) {
  __shared__ float scratch[BLOCK];
  __shared__ bool am_last;
  float sum = 0.0f;
  for (unsigned i = blockIdx.x * BLOCK + threadIdx.x; i < n; i += BLOCK * gridDim.x) sum += in[i];
  sum = block_reduce_sum<BLOCK>(sum, scratch);
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = sum;
    __threadfence();  // the partial sum is visible before the ticket is taken
    unsigned ticket = atomicInc(&retirement_count, gridDim.x);
    am_last = ticket == gridDim.x - 1;
  }
  __syncthreads();
  if (am_last) {
    float total = 0.0f;
    for (unsigned i = threadIdx.x; i < gridDim.x; i += BLOCK) total += partial[i];
    total = block_reduce_sum<BLOCK>(total, scratch);
    if (threadIdx.x == 0) {
      *result = total;
      retirement_count = 0;  // ready for the next launch
    }
  }
}

int main() {
  const int n = 1 << 16, block = 256;
  int *in, *out, *sums;
  HIP_CHECK(hipMalloc(&in, n * sizeof(int)));
  HIP_CHECK(hipMalloc(&out, n * sizeof(int)));
  HIP_CHECK(hipMalloc(&sums, n / 512 * sizeof(int)));
  size_t shared = (2 * block + 2 * block / 32) * sizeof(int);
  prescan<<<n / (2 * block), block, shared>>>(in, out, sums, n);
  prescan<<<1, n / 1024, shared>>>(sums, sums, nullptr, n / 512);
  add_block_offsets<<<n / (2 * block), block>>>(out, sums, n);
  float *x, *partial, *result;
  HIP_CHECK(hipMalloc(&x, n * sizeof(float)));
  HIP_CHECK(hipMalloc(&partial, 64 * sizeof(float)));
  HIP_CHECK(hipMalloc(&result, sizeof(float)));
  reduce_single_pass<256><<<64, 256>>>(x, partial, result, n);
  reduce_single_pass<128><<<64, 128>>>(x, partial, result, n);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
