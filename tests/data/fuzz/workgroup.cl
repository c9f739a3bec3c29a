// Fuzzing seed with what the kernel-suite cases lack: barriers, __local memory,
// atomics, printf, structs passed by value, a helper function and a loop.
typedef struct { int n; float scale; } params;

float helper(float x, int i) { return x * (float)i + 1.0f; }

kernel void reduce(global const float* in, global float* out, local float* scratch, params p) {
    int lid = get_local_id(0), size = get_local_size(0);
    scratch[lid] = in[get_global_id(0)] * p.scale;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = size / 2; s > 0; s >>= 1) {
        if (lid < s) scratch[lid] += scratch[lid + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) out[get_group_id(0)] = helper(scratch[0], p.n);
}

kernel void count(global const int* in, volatile global int* counter, global int* hist) {
    int x = in[get_global_id(0)];
    atomic_inc(counter);
    atomic_add(&hist[x & 15], 1);
    if (x == 12345) printf("item %d saw %d %v2hlf %s\n", (int)get_global_id(0), x, (float2)(1.0f, 2.0f), "x");
}
