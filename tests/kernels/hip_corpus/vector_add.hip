// Vector addition, the first sample of every HIP tutorial: one kernel with an if-guard
// and one with a grid-stride loop.
#include <hip/hip_runtime.h>
#include <iostream>
#include <vector>
#include "common.h"

__global__ void vectorAdd(const float* a, const float* b, float* c, int n) {
  int i = blockDim.x * blockIdx.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

__global__ void vectorAddGridStride(const float* __restrict__ a, const float* __restrict__ b,
                                    float* __restrict__ c, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    c[i] = a[i] * 2.0f + b[i];
}

int main() {
  const int n = 1 << 16;
  std::vector<float> a(n, 1.0f), b(n, 2.0f), c(n);
  float *da, *db, *dc;
  HIP_CHECK(hipMalloc(&da, n * sizeof(float)));
  HIP_CHECK(hipMalloc(&db, n * sizeof(float)));
  HIP_CHECK(hipMalloc(&dc, n * sizeof(float)));
  HIP_CHECK(hipMemcpy(da, a.data(), n * sizeof(float), hipMemcpyHostToDevice));
  HIP_CHECK(hipMemcpy(db, b.data(), n * sizeof(float), hipMemcpyHostToDevice));
  hipLaunchKernelGGL(vectorAdd, dim3(ceil_div(n, 256)), dim3(256), 0, 0, da, db, dc, n);
  HIP_CHECK(hipGetLastError());
  vectorAddGridStride<<<dim3(64), dim3(128)>>>(da, db, dc, n);
  HIP_CHECK(hipMemcpy(c.data(), dc, n * sizeof(float), hipMemcpyDeviceToHost));
  std::cout << (c[0] == 4.0f ? "PASSED" : "FAILED") << std::endl;
  hipFree(da);
  hipFree(db);
  hipFree(dc);
}
