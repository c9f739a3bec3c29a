// A register-tiled SGEMM as tuned CUDA code is ported: 64x64 tiles of C per block of
// 16x16 threads, each thread computing a 4x4 micro-tile; A and B tiles staged in shared
// memory and read back as float4 through reinterpret_cast, float4 global loads.
#include <hip/hip_runtime.h>
#include "common.h"

#define BM 64
#define BN 64
#define BK 16
#define TM 4
#define TN 4

// C = alpha * A * B + beta * C, row-major; M, N multiples of 64 and K of 16.
__global__ void __launch_bounds__(256) sgemm_tiled(int M, int N, int K, float alpha,
                                                   const float* __restrict__ A,
                                                   const float* __restrict__ B, float beta,
                                                   float* __restrict__ C) {
  __shared__ __align__(16) float As[BK][BM];  // A's tile, transposed
  __shared__ __align__(16) float Bs[BK][BN];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const int tid = ty * 16 + tx;
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
  float acc[TM][TN] = {};

  for (int k0 = 0; k0 < K; k0 += BK) {
    // 256 threads load 64x16 of A (one float4 each) and 16x64 of B (one float4 each).
    {
      int r = tid / 4, c = (tid % 4) * 4;
      float4 a = *reinterpret_cast<const float4*>(&A[(row0 + r) * K + k0 + c]);
      As[c + 0][r] = a.x;
      As[c + 1][r] = a.y;
      As[c + 2][r] = a.z;
      As[c + 3][r] = a.w;
      int br = tid / 16, bc = (tid % 16) * 4;
      *reinterpret_cast<float4*>(&Bs[br][bc]) =
          *reinterpret_cast<const float4*>(&B[(k0 + br) * N + col0 + bc]);
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      float4 a = *reinterpret_cast<const float4*>(&As[k][ty * TM]);
      float4 b = *reinterpret_cast<const float4*>(&Bs[k][tx * TN]);
      float av[TM] = {a.x, a.y, a.z, a.w}, bv[TN] = {b.x, b.y, b.z, b.w};
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    float4* out = reinterpret_cast<float4*>(&C[(row0 + ty * TM + i) * N + col0 + tx * TN]);
    float4 c = *out;
    *out = make_float4(alpha * acc[i][0] + beta * c.x, alpha * acc[i][1] + beta * c.y,
                       alpha * acc[i][2] + beta * c.z, alpha * acc[i][3] + beta * c.w);
  }
}

int main() {
  const int M = 256, N = 128, K = 64;
  float *A, *B, *C;
  HIP_CHECK(hipMalloc(&A, M * K * sizeof(float)));
  HIP_CHECK(hipMalloc(&B, K * N * sizeof(float)));
  HIP_CHECK(hipMalloc(&C, M * N * sizeof(float)));
  sgemm_tiled<<<dim3(N / BN, M / BM), dim3(16, 16)>>>(M, N, K, 1.0f, A, B, 0.0f, C);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
