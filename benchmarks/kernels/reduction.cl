// Sum of n floats: each work-item first adds its strided share of the input, then
// the work-group combines its items in a local-memory tree (the local size must be a
// power of two); one partial sum per work-group, added up on the host.
kernel void reduction(global const float *x, global float *partial, local float *scratch,
                      uint n)
{
    size_t lid = get_local_id(0);
    float sum = 0.0f;
    for (size_t i = get_global_id(0); i < n; i += get_global_size(0))
        sum += x[i];
    scratch[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t stride = get_local_size(0) / 2; stride > 0; stride /= 2) {
        if (lid < stride)
            scratch[lid] += scratch[lid + stride];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0)
        partial[get_group_id(0)] = scratch[0];
}
