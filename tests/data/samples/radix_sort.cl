/* Follows AMD APP SDK 2.x RadixSort_Kernels.cl, 8-bit digits (RADIX 8):
 * - histogram: the APP SDK 2.9 form, one element per work-item and a local histogram of
 *   RADICES bins filled with atomic_inc (local size RADICES, as the SDK requires);
 * - histogramThreads and permute: the SDK 2.5 form, one private histogram of RADICES bins
 *   per work-item (each work-item owns RADICES consecutive elements) and the permutation by
 *   the scanned histograms, with a barrier inside permute's loop.
 * The host scans the per-thread histograms between the two kernels, as the SDK's host does.
 * Difference: the 2.9 histogram kernel is named `histogram`, the 2.5 one `histogramThreads`. */
#define RADIX 8
#define RADICES (1 << RADIX)
#define RADIX_MASK (RADICES - 1)

__kernel void histogram(__global const uint *unsortedData, __global uint *buckets,
                        uint shiftCount, __local uint *sharedArray)
{
    size_t localId = get_local_id(0);
    size_t globalId = get_global_id(0);
    size_t groupId = get_group_id(0);
    size_t groupSize = get_local_size(0);

    /* Initialize shared array to zero */
    sharedArray[localId] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);

    /* Calculate thread-histograms */
    uint value = unsortedData[globalId];
    value = (value >> shiftCount) & 0xFFU;
    atomic_inc(sharedArray + value);

    barrier(CLK_LOCAL_MEM_FENCE);

    /* Copy calculated histogram bin to global memory */
    uint bucketPos = groupId * groupSize + localId;
    buckets[bucketPos] = sharedArray[localId];
}

__kernel void histogramThreads(__global const uint *unsortedData, __global uint *buckets,
                               uint shiftCount, __local ushort *sharedArray)
{
    size_t localId = get_local_id(0);
    size_t globalId = get_global_id(0);
    size_t groupId = get_group_id(0);
    size_t groupSize = get_local_size(0);

    /* Initialize shared array to zero */
    for (int i = 0; i < RADICES; ++i)
        sharedArray[localId * RADICES + i] = 0;

    barrier(CLK_LOCAL_MEM_FENCE);

    /* Calculate thread-histograms */
    for (int i = 0; i < RADICES; ++i) {
        uint value = unsortedData[globalId * RADICES + i];
        value = (value >> shiftCount) & 0xFFU;
        sharedArray[localId * RADICES + value]++;
    }

    barrier(CLK_LOCAL_MEM_FENCE);

    /* Copy calculated histogram bin to global memory */
    for (int i = 0; i < RADICES; ++i) {
        uint bucketPos = groupId * RADICES * groupSize + localId * RADICES + i;
        buckets[bucketPos] = sharedArray[localId * RADICES + i];
    }
}

__kernel void permute(__global const uint *unsortedData, __global const uint *scanedBuckets,
                      uint shiftCount, __local ushort *sharedBuckets, __global uint *sortedData)
{
    size_t groupId = get_group_id(0);
    size_t localId = get_local_id(0);
    size_t globalId = get_global_id(0);
    size_t groupSize = get_local_size(0);

    /* Copy prescaned thread histograms to corresponding thread shared block */
    for (int i = 0; i < RADICES; ++i) {
        uint bucketPos = groupId * RADICES * groupSize + localId * RADICES + i;
        sharedBuckets[localId * RADICES + i] = scanedBuckets[bucketPos];
    }

    barrier(CLK_LOCAL_MEM_FENCE);

    /* Premute elements to appropriate location */
    for (int i = 0; i < RADICES; ++i) {
        uint value = unsortedData[globalId * RADICES + i];
        value = (value >> shiftCount) & 0xFFU;
        uint index = sharedBuckets[localId * RADICES + value];
        sortedData[index] = unsortedData[globalId * RADICES + i];
        sharedBuckets[localId * RADICES + value] = index + 1;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
