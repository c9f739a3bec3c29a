// What CUDA code keeps after hipify: __ldg loads, __restrict__, the C++ standard
// library's constexpr helpers (std::min, std::max, std::numeric_limits), INFINITY and
// std::isinf, initialized __device__ tables, and recursion in __device__ functions.
#include <hip/hip_runtime.h>
#include <algorithm>
#include <cmath>
#include <limits>
#include "common.h"

__device__ int primes[8] = {2, 3, 5, 7, 11, 13, 17, 19};

// Recursion (the HIP compiler allows it on every AMD target): a binomial coefficient
// by Pascal's rule, and the depth of a balanced binary search.
__device__ int binomial(int n, int k) {
  if (k == 0 || k == n) return 1;
  return binomial(n - 1, k - 1) + binomial(n - 1, k);
}

__device__ int search_depth(const int* sorted, int lo, int hi, int key) {
  if (lo >= hi) return 0;
  int mid = lo + (hi - lo) / 2;
  if (sorted[mid] == key) return 1;
  return 1 + (key < sorted[mid] ? search_depth(sorted, lo, mid, key)
                                : search_depth(sorted, mid + 1, hi, key));
}

// out[6 * i ...]: __ldg + primes[i % 8], std::min/max clamp, numeric_limits, binomial,
// search depth, std::isinf(x / 0.0f) on a finite x
__global__ void ported_helpers(const int* __restrict__ in, const int* __restrict__ sorted,
                               int sorted_n, int* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int v = __ldg(&in[i]);
  int* o = out + 6 * i;
  o[0] = v + primes[i % 8];
  o[1] = std::min(std::max(v, -50), 50);
  o[2] = v == 0 ? std::numeric_limits<int>::max() : std::numeric_limits<short>::lowest() / v;
  o[3] = binomial(i % 16, (i / 16) % ((i % 16) + 1));
  o[4] = search_depth(sorted, 0, sorted_n, v);
  float inf = (float)v / 0.0f;  // +-inf, or NaN for 0
  o[5] = std::isinf(inf) + 2 * (INFINITY > std::numeric_limits<float>::max());
}

// Device-side malloc/free: each block builds a linked list of its positive inputs in
// heap nodes (thread 0, in input order), then walks it.
struct Node {
  int value;
  Node* next;
};

__global__ void heap_lists(const int* in, unsigned* sums, int* counts, int per_block) {
  if (threadIdx.x != 0) return;
  const int* chunk = in + blockIdx.x * per_block;
  Node* head = nullptr;
  Node** tail = &head;
  for (int k = 0; k < per_block; ++k) {
    if (chunk[k] <= 0) continue;
    Node* node = (Node*)malloc(sizeof(Node));
    node->value = chunk[k];
    node->next = nullptr;
    *tail = node;
    tail = &node->next;
  }
  unsigned sum = 0;
  int count = 0;
  while (head != nullptr) {
    Node* next = head->next;
    sum = sum * 3u + (unsigned)head->value;  // the list keeps the input's order
    ++count;
    free(head);
    head = next;
  }
  sums[blockIdx.x] = sum;
  counts[blockIdx.x] = count;
}

int main() {
  int *in, *sorted, *out;
  HIP_CHECK(hipMalloc(&in, 1024 * sizeof(int)));
  HIP_CHECK(hipMalloc(&sorted, 1024 * sizeof(int)));
  HIP_CHECK(hipMalloc(&out, 6 * 1024 * sizeof(int)));
  ported_helpers<<<4, 256>>>(in, sorted, 1024, out, 1024);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
