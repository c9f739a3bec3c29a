// Wavefront (warp) idioms from the public HIP samples and libraries (ROCm examples'
// warp reductions, rocPRIM-style ballot compaction, butterfly all-reduce), written for
// any block size: warpSize lanes per wavefront, lanes numbered by linear thread id.
#include <hip/hip_runtime.h>
#include "common.h"

__device__ float warp_reduce_sum(float v) {
  for (int offset = warpSize / 2; offset > 0; offset /= 2) v += __shfl_down(v, offset);
  return v;
}

// Block sum: each wavefront reduces with __shfl_down, lane 0 stores its partial in
// shared memory, and the first wavefront reduces the partials (the divergent
// `if (tid < warpSize)` pattern), with __syncthreads between the two.
__global__ void block_reduce_shfl(const float* in, float* out, int n) {
  __shared__ float partial[32];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  float v = i < n ? in[i] : 0.0f;
  v = warp_reduce_sum(v);
  int lane = tid % warpSize, wave = tid / warpSize;
  if (lane == 0) partial[wave] = v;
  __syncthreads();
  if (tid < warpSize) {
    int waves = (blockDim.x + warpSize - 1) / warpSize;
    v = tid < waves ? partial[tid] : 0.0f;
    v = warp_reduce_sum(v);
    if (tid == 0) out[blockIdx.x] = v;
  }
}

// Only the first 32 threads of each block reduce: the other lanes of the wavefront are
// inactive, and a shuffle reading one of them gets 0 (AMD's ds_bpermute).
__global__ void half_warp_sum(const int* in, int* out) {
  int tid = threadIdx.x;
  if (tid < 32) {
    int v = in[blockIdx.x * blockDim.x + tid];
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down(v, offset);
    if (tid == 0) out[blockIdx.x] = v;
  }
}

// Stream compaction: the positive elements of each block, in order, at the start of
// the block's output segment; counts[block] = how many.
__global__ void compact_positive(const int* in, int* out, int* counts) {
  __shared__ int wave_count[16];
  __shared__ int wave_base[16];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int x = in[i];
  bool keep = x > 0;
  unsigned long long mask = __ballot(keep);
  int lane = __lane_id(), wave = tid / warpSize;
  // rank among the kept lanes below this one (mbcnt over the ballot)
  unsigned below = __builtin_amdgcn_mbcnt_hi((unsigned)(mask >> 32),
                                             __builtin_amdgcn_mbcnt_lo((unsigned)mask, 0u));
  if (lane == 0) wave_count[wave] = __popcll(mask);
  __syncthreads();
  if (tid == 0) {
    int total = 0;
    for (int w = 0; w < (int)((blockDim.x + warpSize - 1) / warpSize); ++w) {
      wave_base[w] = total;
      total += wave_count[w];
    }
    counts[blockIdx.x] = total;
  }
  __syncthreads();
  if (keep) out[blockIdx.x * blockDim.x + wave_base[wave] + below] = x;
}

// Butterfly all-reduce with __shfl_xor: every lane gets its wavefront's sum (int) and
// maximum (double, two 32-bit shuffles per step).
__global__ void butterfly_allreduce(const int* in, const double* din, int* sum, double* mx) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int s = in[i];
  double m = din[i];
  for (int mask = warpSize / 2; mask > 0; mask /= 2) {
    s += __shfl_xor(s, mask);
    m = fmax(m, __shfl_xor(m, mask));
  }
  sum[i] = s;
  mx[i] = m;
}

// Broadcasts: readfirstlane over the whole wavefront and over the odd threads only,
// readlane of lane 5, and __shfl from lane 3.
__global__ void lane_broadcast(const int* in, int* first, int* odd_first, int* lane5, int* shfl3) {
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  int v = in[i];
  first[i] = __builtin_amdgcn_readfirstlane(v);
  odd_first[i] = -1;
  if (tid % 2 == 1) odd_first[i] = __builtin_amdgcn_readfirstlane(v);
  lane5[i] = __builtin_amdgcn_readlane(v, 5);
  shfl3[i] = __shfl(v, 3);
}

// Lane index by mbcnt, votes, and the wavefront's active mask in a divergent branch.
__global__ void lane_votes(const int* in, int* lane, int* any_all, unsigned long long* active) {
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  lane[i] = __builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
  any_all[i] = __any(in[i] > 90) + 2 * __all(in[i] >= 0);
  active[i] = 0;
  if (tid % 3 == 0) active[i] = __activemask();
}

// Lanes exchange through shared memory, ordered by __syncwarp (wave_barrier), then a
// loop whose trip count differs between lanes shuffles inside it.
__global__ void syncwarp_exchange(const int* in, int* swapped, int* uneven) {
  __shared__ int buf[256];
  int tid = threadIdx.x;
  int i = blockIdx.x * blockDim.x + tid;
  buf[tid] = in[i];
  __syncwarp();
  swapped[i] = buf[tid ^ 1];
  int v = in[i];
  for (int k = 0; k < tid % 4; ++k) v += __shfl_xor(v, 1);
  uneven[i] = v;
}

// 3-D blocks: lanes follow the linear thread id (x fastest), as AMD fills wavefronts.
__global__ void wave_sum_3d(const int* in, int* out) {
  int t = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  int i = blockIdx.x * blockDim.x * blockDim.y * blockDim.z + t;
  int v = in[i];
  for (int mask = 1; mask < warpSize; mask *= 2) v += __shfl_xor(v, mask);
  out[i] = v;
}

// Inclusive scan of each wavefront with __shfl_up (Kogge-Stone), and sums of 16-lane
// segments with __shfl_down's width argument.
__global__ void warp_scan_segments(const int* in, int* scan, int* segment_sum) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int lane = __lane_id();
  int v = in[i];
  for (int offset = 1; offset < warpSize; offset *= 2) {
    int t = __shfl_up(v, offset);
    if (lane >= offset) v += t;
  }
  scan[i] = v;
  int s = in[i];
  for (int offset = 8; offset > 0; offset /= 2) s += __shfl_down(s, offset, 16);
  segment_sum[i] = s;
}

int main() {
  int n = 1 << 12, *d;
  float *f;
  HIP_CHECK(hipMalloc(&f, n * sizeof(float)));
  HIP_CHECK(hipMalloc(&d, n * sizeof(int)));
  block_reduce_shfl<<<n / 256, 256>>>(f, f, n);
  half_warp_sum<<<n / 64, 64>>>(d, d);
  compact_positive<<<n / 256, 256>>>(d, d, d);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
