/* Follows AMD APP SDK 2.x Histogram_Kernels.cl (histogram256, LINEAR_MEM_ACCESS): one uchar
 * sub-histogram per work-item in local memory, laid out bin-major, cleared through a
 * `__local uint4 *` view of the same `__local uchar *` buffer, counted with ++ on uchar
 * elements, and merged per group with the group size in the loop bounds. Differences: the
 * input is `__global const uint *`, the clearing loop stores BIN_SIZE / 16 uint4 per
 * work-item (16 uchar counters each: exactly the work-item's share of the buffer), and an
 * optional `reqd_work_group_size(GROUP_SIZE, 1, 1)` (-DGROUP_SIZE=n). */
#define BIN_SIZE 256

#ifdef GROUP_SIZE
__attribute__((reqd_work_group_size(GROUP_SIZE, 1, 1)))
#endif
__kernel void histogram256(__global const uint *data, __local uchar *sharedArray,
                           __global uint *binResult)
{
    size_t localId = get_local_id(0);
    size_t globalId = get_global_id(0);
    size_t groupId = get_group_id(0);
    size_t groupSize = get_local_size(0);

    /* initialize shared array to zero */
    __local uint4 *input = (__local uint4 *)sharedArray;
    for (int i = 0; i < (BIN_SIZE / 16); ++i)
        input[groupSize * i + localId] = 0;

    barrier(CLK_LOCAL_MEM_FENCE);

    /* calculate thread-histograms */
    for (int i = 0; i < BIN_SIZE; ++i) {
        uint value = data[groupId * groupSize * BIN_SIZE + i * groupSize + localId];
        sharedArray[value * groupSize + localId]++;
    }

    barrier(CLK_LOCAL_MEM_FENCE);

    /* merge all thread-histograms into block-histogram */
    for (int i = 0; i < BIN_SIZE / groupSize; ++i) {
        uint binCount = 0;
        for (int j = 0; j < groupSize; ++j)
            binCount += sharedArray[(i * groupSize + localId) * groupSize + j];

        binResult[groupId * BIN_SIZE + i * groupSize + localId] = binCount;
    }
}
