// 256-bin histogram of n bytes (n a multiple of 4): each work-group counts its
// strided share in local memory with local atomics, then adds its bins to the
// global histogram with global atomics. The local size must be 256.
kernel void histogram(global const uint *data, global uint *hist, uint n_words)
{
    local uint bins[256];
    uint lid = get_local_id(0);
    bins[lid] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = get_global_id(0); i < n_words; i += get_global_size(0)) {
        uint w = data[i];
        atomic_inc(&bins[w & 0xff]);
        atomic_inc(&bins[(w >> 8) & 0xff]);
        atomic_inc(&bins[(w >> 16) & 0xff]);
        atomic_inc(&bins[w >> 24]);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (bins[lid])
        atomic_add(&hist[lid], bins[lid]);
}
