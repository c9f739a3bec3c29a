// SAXPY and DAXPY with scalar parameters.
#include <hip/hip_runtime.h>
#include <cmath>
#include <vector>
#include "common.h"

__global__ void saxpy_kernel(float a, const float* x, float* y, unsigned int n) {
  const unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void daxpy(int n, double a, const double* x, double* y) {
  int i = hipBlockIdx_x * hipBlockDim_x + hipThreadIdx_x;
  if (i < n) y[i] = fma(a, x[i], y[i]);
}

int main() {
  const unsigned n = 1000000;
  std::vector<float> x(n, 1.0f), y(n, 2.0f);
  float *dx, *dy;
  HIP_CHECK(hipMalloc(&dx, n * sizeof(float)));
  HIP_CHECK(hipMalloc(&dy, n * sizeof(float)));
  HIP_CHECK(hipMemcpy(dx, x.data(), n * sizeof(float), hipMemcpyHostToDevice));
  HIP_CHECK(hipMemcpy(dy, y.data(), n * sizeof(float), hipMemcpyHostToDevice));
  saxpy_kernel<<<ceil_div(n, 256), 256, 0, hipStreamDefault>>>(2.0f, dx, dy, n);
  HIP_CHECK(hipDeviceSynchronize());
  HIP_CHECK(hipMemcpy(y.data(), dy, n * sizeof(float), hipMemcpyDeviceToHost));
  std::printf("%s\n", std::fabs(y[0] - 4.0f) < 1e-6f ? "PASSED" : "FAILED");
}
