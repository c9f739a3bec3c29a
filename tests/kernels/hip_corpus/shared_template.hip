// The CUDA samples' reduction, hipified: a SharedMemory<T> helper that gives each type
// its own view of the one `extern __shared__` array (a specialization for double), a
// kernel templated on type, block size and whether n is a power of two, and a final
// wavefront stage with __shfl_down. Also several typed arrays carved out of one
// dynamic shared buffer.
#include <hip/hip_runtime.h>
#include "common.h"

template <class T>
struct SharedMemory {
  __device__ inline operator T*() {
    extern __shared__ int __smem[];
    return (T*)__smem;
  }
  __device__ inline operator const T*() const {
    extern __shared__ int __smem[];
    return (T*)__smem;
  }
};

template <>
struct SharedMemory<double> {
  __device__ inline operator double*() {
    extern __shared__ double __smem_d[];
    return (double*)__smem_d;
  }
  __device__ inline operator const double*() const {
    extern __shared__ double __smem_d[];
    return (double*)__smem_d;
  }
};

template <class T, unsigned int blockSize, bool nIsPow2>
__global__ void reduce6(const T* g_idata, T* g_odata, unsigned int n) {
  T* sdata = SharedMemory<T>();
  unsigned int tid = threadIdx.x;
  unsigned int gridSize = blockSize * 2 * gridDim.x;
  unsigned int i = blockIdx.x * blockSize * 2 + threadIdx.x;
  T mySum = 0;
  // Many elements per thread: the grid strides over the input.
  while (i < n) {
    mySum += g_idata[i];
    if (nIsPow2 || i + blockSize < n) mySum += g_idata[i + blockSize];
    i += gridSize;
  }
  sdata[tid] = mySum;
  __syncthreads();
  if ((blockSize >= 512) && (tid < 256)) sdata[tid] = mySum = mySum + sdata[tid + 256];
  __syncthreads();
  if ((blockSize >= 256) && (tid < 128)) sdata[tid] = mySum = mySum + sdata[tid + 128];
  __syncthreads();
  if ((blockSize >= 128) && (tid < 64)) sdata[tid] = mySum = mySum + sdata[tid + 64];
  __syncthreads();
  if (tid < 64) {
    // The first wavefront of 64 (warpSize on the host CPU and gfx9) finishes with shuffles;
    // blockSize >= 64 here.
    if (blockSize >= 64 && warpSize == 32) mySum += sdata[tid + 32];
    for (int offset = warpSize / 2; offset > 0; offset /= 2) mySum += __shfl_down(mySum, offset);
  }
  if (tid == 0) g_odata[blockIdx.x] = mySum;
}

// Key/value pairs staged in one dynamic buffer: blockDim.x ints, then blockDim.x floats,
// then blockDim.x chars. Each block reverses its segment of both arrays.
__global__ void carve_shared(const int* keys, const float* values, int* keys_out,
                             float* values_out, unsigned char* flags, int n) {
  extern __shared__ unsigned char smem[];
  int* s_keys = (int*)smem;
  float* s_values = (float*)&s_keys[blockDim.x];
  unsigned char* s_flags = (unsigned char*)&s_values[blockDim.x];
  int t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  s_keys[t] = i < n ? keys[i] : -1;
  s_values[t] = i < n ? values[i] : 0.0f;
  s_flags[t] = (unsigned char)(i < n && keys[i] % 3 == 0);
  __syncthreads();
  int r = blockDim.x - 1 - t;
  if (i < n) {
    keys_out[i] = s_keys[r];
    values_out[i] = s_values[r] * 2.0f;
    flags[i] = s_flags[r];
  }
}

// CUDA code hipified as it was: a hard-coded 32-lane warp and 32-bit masks. Each 32-lane
// "warp" sums with __shfl_down_sync; warp sums meet in shared memory; the first warp adds
// them. On 64-lane wavefronts the shuffles of lanes 16-31 read the next "warp", which
// changes no lane-0 result: the sums stay right (HIP's porting guide's case).
#define WARP_SIZE 32
#define FULL_MASK 0xffffffff

__device__ float warpReduceSum(float v) {
  for (int offset = WARP_SIZE / 2; offset > 0; offset /= 2) v += __shfl_down_sync(FULL_MASK, v, offset);
  return v;
}

__global__ void reduce_warp32(const float* in, float* out, int n) {
  __shared__ float warp_sums[WARP_SIZE];
  int lane = threadIdx.x % WARP_SIZE, warp = threadIdx.x / WARP_SIZE;
  float sum = 0.0f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) sum += in[i];
  sum = warpReduceSum(sum);
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < blockDim.x / WARP_SIZE ? warp_sums[lane] : 0.0f;
    sum = warpReduceSum(sum);
    if (lane == 0) atomicAdd(out, sum);
  }
}

int main() {
  float *in, *out;
  HIP_CHECK(hipMalloc(&in, (1 << 20) * sizeof(float)));
  HIP_CHECK(hipMalloc(&out, 64 * sizeof(float)));
  reduce6<float, 256, true><<<64, 256, 256 * sizeof(float)>>>(in, out, 1 << 20);
  reduce6<double, 128, false><<<64, 128, 128 * sizeof(double)>>>((double*)in, (double*)out, 1000);
  reduce6<int, 512, false><<<8, 512, 512 * sizeof(int)>>>((int*)in, (int*)out, 12345);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
