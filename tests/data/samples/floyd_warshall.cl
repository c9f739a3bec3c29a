/* Follows AMD APP SDK 2.x FloydWarshall_Kernels.cl: one launch per intermediate node k over
 * a numNodes x numNodes 2-D range; the distance and path matrices are updated in place
 * (row k and column k do not change during pass k, so the in-place update is race-free).
 * Difference: an optional `if (xValue < numNodes && yValue < numNodes)` guard (-DGUARD) so
 * the global size may be rounded up to a multiple of the local size. */
__kernel void floydWarshallPass(__global uint *pathDistanceBuffer, __global uint *pathBuffer,
                                const unsigned int numNodes, const unsigned int pass)
{
    int xValue = get_global_id(0);
    int yValue = get_global_id(1);
#ifdef GUARD
    if (xValue >= numNodes || yValue >= numNodes)
        return;
#endif

    int k = pass;
    int oldWeight = pathDistanceBuffer[yValue * numNodes + xValue];
    int tempWeight = (pathDistanceBuffer[yValue * numNodes + k] +
                      pathDistanceBuffer[k * numNodes + xValue]);

    if (tempWeight < oldWeight) {
        pathDistanceBuffer[yValue * numNodes + xValue] = tempWeight;
        pathBuffer[yValue * numNodes + xValue] = k;
    }
}
