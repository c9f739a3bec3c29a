// HIP kernels for the amdgcnspirv path (tests/kernels/test_gpu_targets.py). Built with
// -nogpuinc, so the few HIP names used are defined here from clang's AMDGCN built-ins.
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __device__ __attribute__((device))
__device__ inline void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
extern "C" __global__ void vadd(float* out, const float* a, const float* b, int n) {
  int i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x();
  if (i < n) out[i] = a[i] + b[i];
}
extern "C" __global__ void red(float* out, const float* a) {
  __shared__ float tmp[256];
  int l = __builtin_amdgcn_workitem_id_x();
  tmp[l] = a[__builtin_amdgcn_workgroup_id_x() * 256 + l];
  __syncthreads();
  if (l == 0) { float s = 0; for (int j = 0; j < 256; j++) s += tmp[j]; __hip_atomic_fetch_add(out, s, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_AGENT); }
}
// Sizes come from the dispatch packet and the implicit kernel arguments.
extern "C" __global__ void sizes(int* out) {
  int i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() + __builtin_amdgcn_workitem_id_x();
  out[4 * i + 0] = __builtin_amdgcn_workgroup_size_x();
  out[4 * i + 1] = __builtin_amdgcn_grid_size_x();
  out[4 * i + 2] = __builtin_amdgcn_workgroup_size_y() + __builtin_amdgcn_workitem_id_z();
  out[4 * i + 3] = __builtin_amdgcn_workgroup_id_y();
}
// A built-in only AMD targets run (the error names the HIP built-in).
extern "C" __global__ void swizzle(int* out, const int* a) {
  int l = __builtin_amdgcn_workitem_id_x();
  out[l] = __builtin_amdgcn_ds_swizzle(a[l], 0x041f);
}
