// A 1-D stencil with halo cells in shared memory, an N-body step over shared tiles of
// bodies, and a 3-D grid with a bool parameter.
#include <hip/hip_runtime.h>
#include "common.h"

#define RADIUS 3
#define BLOCK 128

__global__ void stencil_1d(const float* in, float* out, int n) {
  __shared__ float tmp[BLOCK + 2 * RADIUS];
  int g = blockIdx.x * blockDim.x + threadIdx.x;
  int l = threadIdx.x + RADIUS;
  tmp[l] = g < n ? in[g] : 0.0f;
  if (threadIdx.x < RADIUS) {
    tmp[l - RADIUS] = g >= RADIUS ? in[g - RADIUS] : 0.0f;
    tmp[l + BLOCK] = g + BLOCK < n ? in[g + BLOCK] : 0.0f;
  }
  __syncthreads();
  float result = 0.0f;
  for (int off = -RADIUS; off <= RADIUS; off++) result += tmp[l + off];
  if (g < n) out[g] = result;
}

__global__ void nbody_step(const float4* pos, float4* acc, int n, float softening) {
  __shared__ float4 tile[BLOCK];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float4 me = pos[i];
  float ax = 0.0f, ay = 0.0f, az = 0.0f;
  for (int start = 0; start < n; start += BLOCK) {
    tile[threadIdx.x] = pos[start + threadIdx.x];
    __syncthreads();
    for (int j = 0; j < BLOCK; j++) {
      float4 other = tile[j];
      float dx = other.x - me.x, dy = other.y - me.y, dz = other.z - me.z;
      float inv = rsqrtf(dx * dx + dy * dy + dz * dz + softening);
      float s = other.w * inv * inv * inv;
      ax += dx * s;
      ay += dy * s;
      az += dz * s;
    }
    __syncthreads();
  }
  acc[i] = make_float4(ax, ay, az, 0.0f);
}

__global__ void fill3d(int* volume, int nx, int ny, int nz, bool negate) {
  unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
  unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x < nx && y < ny && z < nz) {
    int v = (int)(x + 100 * y + 10000 * z + gridDim.x * 1000000);
    volume[(z * ny + y) * nx + x] = negate ? -v : v;
  }
}

int main() {
  float *in, *out;
  HIP_CHECK(hipMalloc(&in, 1024 * sizeof(float)));
  HIP_CHECK(hipMalloc(&out, 1024 * sizeof(float)));
  stencil_1d<<<8, BLOCK>>>(in, out, 1024);
  nbody_step<<<2, BLOCK>>>((float4*)in, (float4*)out, 256, 0.01f);
  fill3d<<<dim3(2, 3, 4), dim3(8, 4, 2)>>>((int*)out, 16, 12, 8, true);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
