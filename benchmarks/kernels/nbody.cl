// One step of an all-pairs n-body simulation. pos = (x, y, z, mass); each work-item
// owns one body; tiles of get_local_size(0) bodies are staged in local memory.
// n must be a multiple of the local size.
kernel void nbody(global const float4 *pos, global const float4 *vel, global float4 *new_pos,
                  global float4 *new_vel, local float4 *tile, int n, float dt, float eps2)
{
    int i = get_global_id(0);
    int lid = get_local_id(0);
    int ls = get_local_size(0);
    float4 p = pos[i];
    float3 acc = (float3)(0.0f);
    for (int base = 0; base < n; base += ls) {
        tile[lid] = pos[base + lid];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int j = 0; j < ls; j++) {
            float4 q = tile[j];
            float3 d = q.xyz - p.xyz;
            float r2 = dot(d, d) + eps2;
            float inv = rsqrt(r2);
            acc += d * (q.w * inv * inv * inv);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float4 v = vel[i];
    v.xyz += acc * dt;
    new_vel[i] = v;
    new_pos[i] = (float4)(p.xyz + v.xyz * dt, p.w);
}
