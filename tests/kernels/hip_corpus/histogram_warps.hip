// The CUDA SDK's histogram256, hipified: per-warp sub-histograms in shared memory
// (so fewer threads collide on one bin), input read four bytes at a time as uint,
// partial histograms per block, and a merge kernel that sums the partials with a
// shared-memory reduction.
#include <hip/hip_runtime.h>
#include "common.h"

#define HISTOGRAM256_BIN_COUNT 256
#define LOG2_WARP_SIZE 5U
#define WARP_SIZE (1U << LOG2_WARP_SIZE)
#define HISTOGRAM256_THREADBLOCK_SIZE (6 * WARP_SIZE)
#define HISTOGRAM256_THREADBLOCK_MEMORY (6 * HISTOGRAM256_BIN_COUNT)
#define MERGE_THREADBLOCK_SIZE 256

inline __device__ void addByte(unsigned* s_WarpHist, unsigned data) {
  atomicAdd(s_WarpHist + data, 1);
}

inline __device__ void addWord(unsigned* s_WarpHist, unsigned data) {
  addByte(s_WarpHist, (data >> 0) & 0xFFU);
  addByte(s_WarpHist, (data >> 8) & 0xFFU);
  addByte(s_WarpHist, (data >> 16) & 0xFFU);
  addByte(s_WarpHist, (data >> 24) & 0xFFU);
}

__global__ void histogram256Kernel(unsigned* d_PartialHistograms, const unsigned* d_Data,
                                   unsigned dataCount) {
  __shared__ unsigned s_Hist[HISTOGRAM256_THREADBLOCK_MEMORY];
  unsigned* s_WarpHist = s_Hist + (threadIdx.x >> LOG2_WARP_SIZE) * HISTOGRAM256_BIN_COUNT;
#pragma unroll
  for (unsigned i = 0; i < (HISTOGRAM256_THREADBLOCK_MEMORY / HISTOGRAM256_THREADBLOCK_SIZE); i++)
    s_Hist[threadIdx.x + i * HISTOGRAM256_THREADBLOCK_SIZE] = 0;
  __syncthreads();
  for (unsigned pos = blockIdx.x * blockDim.x + threadIdx.x; pos < dataCount;
       pos += blockDim.x * gridDim.x)
    addWord(s_WarpHist, d_Data[pos]);
  __syncthreads();
  for (unsigned bin = threadIdx.x; bin < HISTOGRAM256_BIN_COUNT;
       bin += HISTOGRAM256_THREADBLOCK_SIZE) {
    unsigned sum = 0;
    for (unsigned i = 0; i < 6; i++) sum += s_Hist[bin + i * HISTOGRAM256_BIN_COUNT];
    d_PartialHistograms[blockIdx.x * HISTOGRAM256_BIN_COUNT + bin] = sum;
  }
}

// One block per bin sums that bin over every partial histogram.
__global__ void mergeHistogram256Kernel(unsigned* d_Histogram, const unsigned* d_PartialHistograms,
                                        unsigned histogramCount) {
  unsigned sum = 0;
  for (unsigned i = threadIdx.x; i < histogramCount; i += MERGE_THREADBLOCK_SIZE)
    sum += d_PartialHistograms[blockIdx.x + i * HISTOGRAM256_BIN_COUNT];
  __shared__ unsigned data[MERGE_THREADBLOCK_SIZE];
  data[threadIdx.x] = sum;
  for (unsigned stride = MERGE_THREADBLOCK_SIZE / 2; stride > 0; stride >>= 1) {
    __syncthreads();
    if (threadIdx.x < stride) data[threadIdx.x] += data[threadIdx.x + stride];
  }
  if (threadIdx.x == 0) d_Histogram[blockIdx.x] = data[0];
}

int main() {
  const unsigned byteCount = 1 << 20, partials = 240;
  unsigned *data, *partial, *histogram;
  HIP_CHECK(hipMalloc(&data, byteCount));
  HIP_CHECK(hipMalloc(&partial, partials * HISTOGRAM256_BIN_COUNT * sizeof(unsigned)));
  HIP_CHECK(hipMalloc(&histogram, HISTOGRAM256_BIN_COUNT * sizeof(unsigned)));
  histogram256Kernel<<<partials, HISTOGRAM256_THREADBLOCK_SIZE>>>(partial, data, byteCount / 4);
  mergeHistogram256Kernel<<<HISTOGRAM256_BIN_COUNT, MERGE_THREADBLOCK_SIZE>>>(histogram, partial, partials);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
