// Separable convolution in the style of the CUDA sample convolutionSeparable (hipified):
// the filter taps live in __constant__ memory, each block loads its tile plus an apron
// into shared memory. A __constant__ struct carries the image geometry.
#include <hip/hip_runtime.h>
#include "common.h"

#define KERNEL_RADIUS 4
#define KERNEL_LENGTH (2 * KERNEL_RADIUS + 1)
#define ROWS_BLOCKDIM_X 16
#define ROWS_BLOCKDIM_Y 4
#define ROWS_RESULT_STEPS 4
#define ROWS_HALO_STEPS 1
#define COLUMNS_BLOCKDIM_X 16
#define COLUMNS_BLOCKDIM_Y 8
#define COLUMNS_RESULT_STEPS 4
#define COLUMNS_HALO_STEPS 1

__constant__ float c_Kernel[KERNEL_LENGTH];

struct ImageGeometry {
  int width, height, pitch;
};
__constant__ ImageGeometry c_geometry;

__global__ void convolutionRows(float* __restrict__ dst, const float* __restrict__ src) {
  __shared__ float s_Data[ROWS_BLOCKDIM_Y]
                         [(ROWS_RESULT_STEPS + 2 * ROWS_HALO_STEPS) * ROWS_BLOCKDIM_X];
  const int w = c_geometry.width, h = c_geometry.height, pitch = c_geometry.pitch;
  const int baseX = (blockIdx.x * ROWS_RESULT_STEPS - ROWS_HALO_STEPS) * ROWS_BLOCKDIM_X +
                    threadIdx.x;
  const int baseY = blockIdx.y * ROWS_BLOCKDIM_Y + threadIdx.y;
  if (baseY >= h) return;  // the whole row of the block is outside: no barrier skipped
  src += baseY * pitch + baseX;
  dst += baseY * pitch + baseX;

#pragma unroll
  for (int i = 0; i < ROWS_RESULT_STEPS + 2 * ROWS_HALO_STEPS; i++) {
    int x = baseX + i * ROWS_BLOCKDIM_X;
    s_Data[threadIdx.y][threadIdx.x + i * ROWS_BLOCKDIM_X] =
        (x >= 0 && x < w) ? src[i * ROWS_BLOCKDIM_X] : 0.0f;
  }
  __syncthreads();

#pragma unroll
  for (int i = ROWS_HALO_STEPS; i < ROWS_HALO_STEPS + ROWS_RESULT_STEPS; i++) {
    float sum = 0.0f;
#pragma unroll
    for (int j = -KERNEL_RADIUS; j <= KERNEL_RADIUS; j++)
      sum += c_Kernel[KERNEL_RADIUS - j] *
             s_Data[threadIdx.y][threadIdx.x + i * ROWS_BLOCKDIM_X + j];
    if (baseX + i * ROWS_BLOCKDIM_X < w) dst[i * ROWS_BLOCKDIM_X] = sum;
  }
}

__global__ void convolutionColumns(float* __restrict__ dst, const float* __restrict__ src) {
  __shared__ float s_Data[COLUMNS_BLOCKDIM_X]
                         [(COLUMNS_RESULT_STEPS + 2 * COLUMNS_HALO_STEPS) * COLUMNS_BLOCKDIM_Y + 1];
  const int w = c_geometry.width, h = c_geometry.height, pitch = c_geometry.pitch;
  const int baseX = blockIdx.x * COLUMNS_BLOCKDIM_X + threadIdx.x;
  const int baseY = (blockIdx.y * COLUMNS_RESULT_STEPS - COLUMNS_HALO_STEPS) * COLUMNS_BLOCKDIM_Y +
                    threadIdx.y;
  const bool inside = baseX < w;
  src += baseY * pitch + baseX;
  dst += baseY * pitch + baseX;

#pragma unroll
  for (int i = 0; i < COLUMNS_RESULT_STEPS + 2 * COLUMNS_HALO_STEPS; i++) {
    int y = baseY + i * COLUMNS_BLOCKDIM_Y;
    s_Data[threadIdx.x][threadIdx.y + i * COLUMNS_BLOCKDIM_Y] =
        (inside && y >= 0 && y < h) ? src[i * COLUMNS_BLOCKDIM_Y * pitch] : 0.0f;
  }
  __syncthreads();

#pragma unroll
  for (int i = COLUMNS_HALO_STEPS; i < COLUMNS_HALO_STEPS + COLUMNS_RESULT_STEPS; i++) {
    float sum = 0.0f;
#pragma unroll
    for (int j = -KERNEL_RADIUS; j <= KERNEL_RADIUS; j++)
      sum += c_Kernel[KERNEL_RADIUS - j] *
             s_Data[threadIdx.x][threadIdx.y + i * COLUMNS_BLOCKDIM_Y + j];
    if (inside && baseY + i * COLUMNS_BLOCKDIM_Y < h) dst[i * COLUMNS_BLOCKDIM_Y * pitch] = sum;
  }
}

int main() {
  const int w = 128, h = 96;
  float h_Kernel[KERNEL_LENGTH] = {};
  ImageGeometry geometry = {w, h, w};
  HIP_CHECK(hipMemcpyToSymbol(HIP_SYMBOL(c_Kernel), h_Kernel, sizeof(h_Kernel)));
  HIP_CHECK(hipMemcpyToSymbol(HIP_SYMBOL(c_geometry), &geometry, sizeof(geometry)));
  float *src, *tmp, *dst;
  HIP_CHECK(hipMalloc(&src, w * h * sizeof(float)));
  HIP_CHECK(hipMalloc(&tmp, w * h * sizeof(float)));
  HIP_CHECK(hipMalloc(&dst, w * h * sizeof(float)));
  dim3 rows(w / (ROWS_RESULT_STEPS * ROWS_BLOCKDIM_X), h / ROWS_BLOCKDIM_Y);
  convolutionRows<<<rows, dim3(ROWS_BLOCKDIM_X, ROWS_BLOCKDIM_Y)>>>(tmp, src);
  dim3 columns(w / COLUMNS_BLOCKDIM_X, h / (COLUMNS_RESULT_STEPS * COLUMNS_BLOCKDIM_Y));
  convolutionColumns<<<columns, dim3(COLUMNS_BLOCKDIM_X, COLUMNS_BLOCKDIM_Y)>>>(dst, tmp);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
