// Tiled matrix multiplication and a transpose through a padded shared tile (2-D grids).
#include <hip/hip_runtime.h>
#include <vector>
#include "common.h"

constexpr int TILE = 16;

__global__ void matrixMul(const float* A, const float* B, float* C, int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y;
  int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < (K + TILE - 1) / TILE; ++t) {
    int ak = t * TILE + threadIdx.x, bk = t * TILE + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? A[row * K + ak] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? B[bk * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}

__global__ void matrixTranspose(float* out, const float* in, int width, int height) {
  __shared__ float tile[TILE][TILE + 1];  // +1: no bank conflicts on the column reads
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
  if (x < width && y < height) tile[threadIdx.y][threadIdx.x] = in[y * width + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
  if (x < height && y < width) out[y * height + x] = tile[threadIdx.x][threadIdx.y];
}

int main() {
  const int M = 256, N = 192, K = 320;
  float *A, *B, *C;
  HIP_CHECK(hipMalloc(&A, M * K * sizeof(float)));
  HIP_CHECK(hipMalloc(&B, K * N * sizeof(float)));
  HIP_CHECK(hipMalloc(&C, M * N * sizeof(float)));
  dim3 block(TILE, TILE);
  dim3 grid(ceil_div(N, TILE), ceil_div(M, TILE));
  hipLaunchKernelGGL(matrixMul, grid, block, 0, 0, A, B, C, M, N, K);
  hipLaunchKernelGGL(matrixTranspose, dim3(ceil_div(N, TILE), ceil_div(M, TILE)), block, 0, 0,
                     A, C, N, M);
  HIP_CHECK(hipDeviceSynchronize());
  hipFree(A);
  hipFree(B);
  hipFree(C);
  return 0;
}
