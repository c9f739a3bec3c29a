// Matrix transposes of the CUDA SDK "transpose" sample, hipified: 32x32 tiles handled by
// blocks of 32x8 threads (each thread moves four elements), a padded tile against bank
// conflicts, the diagonal block reordering, and a shared-memory copy for reference;
// templates instantiated for float and double.
#include <hip/hip_runtime.h>
#include "common.h"

#define TILE_DIM 32
#define BLOCK_ROWS 8

template <typename T>
__global__ void copySharedMem(T* odata, const T* idata, int width, int height) {
  __shared__ T tile[TILE_DIM * TILE_DIM];
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    if (x < width && y + j < height)
      tile[(threadIdx.y + j) * TILE_DIM + threadIdx.x] = idata[(y + j) * width + x];
  __syncthreads();
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    if (x < width && y + j < height)
      odata[(y + j) * width + x] = tile[(threadIdx.y + j) * TILE_DIM + threadIdx.x];
}

template <typename T>
__global__ void transposeNoBankConflicts(T* odata, const T* idata, int width, int height) {
  __shared__ T tile[TILE_DIM][TILE_DIM + 1];
  int x = blockIdx.x * TILE_DIM + threadIdx.x;
  int y = blockIdx.y * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    if (x < width && y + j < height) tile[threadIdx.y + j][threadIdx.x] = idata[(y + j) * width + x];
  __syncthreads();
  x = blockIdx.y * TILE_DIM + threadIdx.x;  // transposed block offset
  y = blockIdx.x * TILE_DIM + threadIdx.y;
  for (int j = 0; j < TILE_DIM; j += BLOCK_ROWS)
    if (x < height && y + j < width) odata[(y + j) * height + x] = tile[threadIdx.x][threadIdx.y + j];
}

// Square matrices, whole tiles: blocks walk the tiles along diagonals.
__global__ void transposeDiagonal(float* odata, const float* idata, int width, int height) {
  __shared__ float tile[TILE_DIM][TILE_DIM + 1];
  int blockIdx_x, blockIdx_y;
  if (width == height) {
    blockIdx_y = blockIdx.x;
    blockIdx_x = (blockIdx.x + blockIdx.y) % gridDim.x;
  } else {
    int bid = blockIdx.x + gridDim.x * blockIdx.y;
    blockIdx_y = bid % gridDim.y;
    blockIdx_x = ((bid / gridDim.y) + blockIdx_y) % gridDim.x;
  }
  int xIndex = blockIdx_x * TILE_DIM + threadIdx.x;
  int yIndex = blockIdx_y * TILE_DIM + threadIdx.y;
  int index_in = xIndex + yIndex * width;
  xIndex = blockIdx_y * TILE_DIM + threadIdx.x;
  yIndex = blockIdx_x * TILE_DIM + threadIdx.y;
  int index_out = xIndex + yIndex * height;
  for (int i = 0; i < TILE_DIM; i += BLOCK_ROWS) tile[threadIdx.y + i][threadIdx.x] = idata[index_in + i * width];
  __syncthreads();
  for (int i = 0; i < TILE_DIM; i += BLOCK_ROWS) odata[index_out + i * height] = tile[threadIdx.x][threadIdx.y + i];
}

int main() {
  const int w = 1024, h = 768;
  float *in, *out;
  HIP_CHECK(hipMalloc(&in, w * h * sizeof(float)));
  HIP_CHECK(hipMalloc(&out, w * h * sizeof(float)));
  dim3 grid(w / TILE_DIM, h / TILE_DIM), threads(TILE_DIM, BLOCK_ROWS);
  copySharedMem<float><<<grid, threads>>>(out, in, w, h);
  transposeNoBankConflicts<float><<<grid, threads>>>(out, in, w, h);
  transposeNoBankConflicts<double><<<grid, threads>>>((double*)out, (double*)in, w / 2, h);
  transposeDiagonal<<<grid, threads>>>(out, in, w, h);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
