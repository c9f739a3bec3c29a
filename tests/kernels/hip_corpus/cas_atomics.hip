// Atomics that HIP lacks, written as ported code writes them: atomicCAS loops on the
// bits of a float or double (max, min, multiply, add as before native double atomics),
// and warp-aggregated atomics (one atomicAdd per wavefront: __ballot, __ffsll, __popcll
// and a shuffle to broadcast the base).
#include <hip/hip_runtime.h>
#include "common.h"

__device__ float atomicMaxFloat(float* address, float value) {
  int* bits = (int*)address;
  int old = *bits, assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) >= value) break;
    old = atomicCAS(bits, assumed, __float_as_int(value));
  } while (assumed != old);
  return __int_as_float(old);
}

// The sign trick: for non-negative floats the int order is the float order; for
// negative ones the unsigned order is the reverse.
__device__ float atomicMinFloat(float* address, float value) {
  return value >= 0.0f
             ? __int_as_float(atomicMin((int*)address, __float_as_int(value)))
             : __uint_as_float(atomicMax((unsigned*)address, __float_as_uint(value)));
}

__device__ float atomicMulFloat(float* address, float value) {
  unsigned* bits = (unsigned*)address;
  unsigned old = *bits, assumed;
  do {
    assumed = old;
    old = atomicCAS(bits, assumed, __float_as_uint(__uint_as_float(assumed) * value));
  } while (assumed != old);
  return __uint_as_float(old);
}

__device__ double atomicAddDouble(double* address, double value) {
  unsigned long long* bits = (unsigned long long*)address;
  unsigned long long old = *bits, assumed;
  do {
    assumed = old;
    old = atomicCAS(bits, assumed,
                    __double_as_longlong(__longlong_as_double(assumed) + value));
  } while (assumed != old);
  return __longlong_as_double(old);
}

// out: [max, min, product], sum
__global__ void cas_float_atomics(const float* x, const float* factors, float* out,
                                  double* sum, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  atomicMaxFloat(&out[0], x[i]);
  atomicMinFloat(&out[1], x[i]);
  if (i < 64) atomicMulFloat(&out[2], factors[i]);
  atomicAddDouble(sum, (double)x[i]);
}

// Warp-aggregated increment: the wavefront's first active lane reserves room for every
// active lane, then each lane takes the slot of its rank among them.
__device__ int atomicAggInc(int* counter) {
  unsigned long long active = __activemask();
  int leader = __ffsll((long long)active) - 1;
  unsigned lane = __lane_id();
  int rank = __popcll(active & ((1ull << lane) - 1));
  int base = 0;
  if ((int)lane == leader) base = atomicAdd(counter, __popcll(active));
  base = __shfl(base, leader);
  return base + rank;
}

__global__ void filter_positive(const int* in, int* out, int* count, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && in[i] > 0) out[atomicAggInc(count)] = in[i];
}

int main() {
  float *x, *out;
  HIP_CHECK(hipMalloc(&x, 1024 * sizeof(float)));
  HIP_CHECK(hipMalloc(&out, 3 * sizeof(float)));
  cas_float_atomics<<<4, 256>>>(x, x, out, (double*)out, 1024);
  filter_positive<<<4, 256>>>((int*)x, (int*)out, (int*)out, 1024);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
