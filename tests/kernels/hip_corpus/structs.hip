// Arrays of structs with HIP vector members, float4 loads and make_float4.
#include <hip/hip_runtime.h>
#include "common.h"

struct Particle {
  float3 position;
  float3 velocity;
  float mass;
  int alive;
};

__global__ void particles_update(Particle* particles, float3 gravity, float dt, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n || !particles[i].alive) return;
  Particle p = particles[i];
  p.velocity = p.velocity + gravity * dt;
  p.position += p.velocity * dt;
  if (p.position.y < 0.0f) p.alive = 0;
  particles[i] = p;
}

__global__ void float4_scale(const float4* in, float4* out, float4 scale, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float4 v = in[i];
    out[i] = make_float4(v.x * scale.x, v.y * scale.y, v.z * scale.z, v.w + scale.w);
  }
}

__global__ void int2_swap(int2* pairs, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    int2 p = pairs[i];
    pairs[i] = make_int2(p.y, p.x);
  }
}

int main() {
  Particle* p;
  HIP_CHECK(hipMalloc(&p, 1024 * sizeof(Particle)));
  particles_update<<<4, 256>>>(p, make_float3(0.0f, -9.81f, 0.0f), 0.01f, 1024);
  HIP_CHECK(hipDeviceSynchronize());
  return 0;
}
