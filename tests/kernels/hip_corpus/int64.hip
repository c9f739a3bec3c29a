// 64-bit integer arithmetic and the integer intrinsics the other samples leave out:
// a counter-based random generator, 64-bit atomics and the 32-bit mul/add helpers.
#include <hip/hip_runtime.h>
#include <cstdint>
#include "common.h"

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// out[12 * i ...]: a*b, a/b, a%b, a>>s, (u)a>>s, a<<s, __mul64hi, __umul64hi,
// __clzll, __ffsll | __popcll << 8, __brevll, llmin(a, b) ^ llmax(a, b)
__global__ void int64_ops(const long long* a, const long long* b, long long* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  long long x = a[i], y = b[i];
  unsigned s = (unsigned)y & 63u;
  long long* o = out + 12 * i;
  o[0] = (long long)((unsigned long long)x * (unsigned long long)y);  // wraps, no UB
  o[1] = y != 0 ? x / y : 0;
  o[2] = y != 0 ? x % y : 0;
  o[3] = x >> s;
  o[4] = (long long)((unsigned long long)x >> s);
  o[5] = (long long)((unsigned long long)x << s);
  o[6] = __mul64hi(x, y);
  o[7] = (long long)__umul64hi((unsigned long long)x, (unsigned long long)y);
  o[8] = __clzll(x);
  o[9] = __ffsll(x) | (__popcll((unsigned long long)x) << 8);
  o[10] = (long long)__brevll((unsigned long long)x);
  o[11] = llmin(x, y) ^ llmax(x, y);
}

// Every thread draws `per_thread` numbers; 64-bit atomics keep the sum, the maximum,
// the minimum (signed) and a bucket count.
__global__ void random_stats(uint64_t seed, int per_thread, unsigned long long* sum,
                             unsigned long long* maximum, long long* minimum,
                             unsigned long long* buckets) {
  uint64_t id = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x;
  for (int k = 0; k < per_thread; ++k) {
    uint64_t r = splitmix64(seed + id * (uint64_t)per_thread + (uint64_t)k);
    atomicAdd(sum, (unsigned long long)(r >> 20));
    atomicMax(maximum, (unsigned long long)r);
    atomicMin(minimum, (long long)r);
    atomicAdd(&buckets[r >> 60], 1ull);
  }
}

// A 64-bit atomicCAS loop: each thread multiplies the product by its factor mod 2^64.
__global__ void cas_product(const unsigned long long* factors, unsigned long long* product,
                            int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned long long old = *product, assumed;
  do {
    assumed = old;
    old = atomicCAS(product, assumed, assumed * factors[i]);
  } while (old != assumed);
}

// out[10 * i ...]: __mulhi, __mul24, __umul24, __usad, __hadd, __rhadd, __uhadd,
// __urhadd, __funnelshift_l, __bitextract_s32
__global__ void int32_helpers(const int* a, const int* b, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int x = a[i], y = b[i];
  unsigned ux = (unsigned)x, uy = (unsigned)y;
  int* o = out + 10 * i;
  o[0] = __mulhi(x, y);
  o[1] = __mul24(x, y);
  o[2] = (int)__umul24(ux, uy);
  o[3] = (int)__usad(ux, uy, 3u);
  o[4] = __hadd(x, y);
  o[5] = __rhadd(x, y);
  o[6] = (int)__uhadd(ux, uy);
  o[7] = (int)__urhadd(ux, uy);
  o[8] = (int)__funnelshift_l(ux, uy, (unsigned)i);
  o[9] = __bitextract_s32(x, (unsigned)(i % 24), 8u);
}

int main() {
  long long *a, *b, *out;
  HIP_CHECK(hipMalloc(&a, 1024 * sizeof(long long)));
  HIP_CHECK(hipMalloc(&b, 1024 * sizeof(long long)));
  HIP_CHECK(hipMalloc(&out, 12 * 1024 * sizeof(long long)));
  int64_ops<<<4, 256>>>(a, b, out, 1024);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
