// Device math in float and double, with C names, C++ overloads and fast intrinsics.
#include <hip/hip_runtime.h>
#include <cmath>
#include "common.h"

__global__ void math_double(const double* x, double* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double v = x[i];
  out[6 * i + 0] = sin(v) * cos(v);
  out[6 * i + 1] = exp(-v * v);
  out[6 * i + 2] = pow(v, 1.5);
  out[6 * i + 3] = sqrt(v) + cbrt(v);
  out[6 * i + 4] = log1p(v) + atan2(v, 1.0 + v);
  out[6 * i + 5] = erf(v) + tanh(v);
}

__global__ void math_float(const float* x, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  out[6 * i + 0] = sinf(v) + cosf(v);
  out[6 * i + 1] = __expf(v) / (1.0f + expf(v));
  out[6 * i + 2] = rsqrtf(v + 1.0f);
  out[6 * i + 3] = fmaxf(fminf(v, 2.0f), 0.5f);
  out[6 * i + 4] = std::sqrt(v) + std::floor(v);
  out[6 * i + 5] = __fdividef(v, 3.0f) + log2f(v + 1.0f) + __saturatef(v - 1.0f);
}

int main() {
  double *x, *out;
  HIP_CHECK(hipMalloc(&x, 1000 * sizeof(double)));
  HIP_CHECK(hipMalloc(&out, 6000 * sizeof(double)));
  math_double<<<4, 256>>>(x, out, 1000);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
