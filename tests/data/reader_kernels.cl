// Source of the reader/disassembler fixtures (see tests/unit/test_fuzz_reader.py):
//   clang-22 -cl-std=CL3.0 --target=spirv64 -O2 -c reader_kernels.cl -o reader_kernels.clang22.spv
//   clang-15 -cl-std=CL2.0 -target spir64 -O2 -emit-llvm -c reader_kernels.cl -o k.bc
//   llvm-spirv-15 k.bc -o reader_kernels.llvm-spirv15.spv
//   (and with -O0 -g for reader_kernels.llvm-spirv15-g.spv)
typedef struct { int a; float b; long c; } S;

__kernel void add(__global const float *a, __global const float *b, __global float *c, float k) {
  size_t i = get_global_id(0);
  c[i] = fma(a[i], b[i], k) + 1.5f;
}

__kernel void sw(__global int *x, __global S *s, __local int *tmp, long v) {
  int i = get_local_id(0);
  tmp[i] = x[i];
  barrier(CLK_LOCAL_MEM_FENCE);
  switch (v) {
  case 1: x[i] = 3; break;
  case 5000000000L: x[i] = tmp[0]; break;
  default: x[i] = s->a;
  }
  for (int j = 0; j < x[1]; j++)
    x[j] += (int)s[j].c;
  vstore_half_rte(1.0f, 0, (__global half *)x);
  float4 f = vload4(i, (__global float *)x);
  x[2] = (int)(f.x * 2.0) + (x[3] > 0 ? 1 : 2);
}

__kernel __attribute__((reqd_work_group_size(8, 1, 1))) void dbl(__global double *d) {
  d[0] = d[1] * 3.25 + (double)(ulong)-1;
}
