/* Follows Rodinia 3.1 opencl/kmeans/kmeans.cl: kmeans_swap (row-major features to
 * feature-major) and kmeans_kernel_c (each point's nearest cluster centre, squared
 * Euclidean distance, FLT_MAX start). Difference: kmeans_swap gets the `tid < npoints`
 * guard Rodinia's lacks (its host rounds the global size up, so the original reads and
 * writes past the arrays for the last group). */
#ifndef FLT_MAX
#define FLT_MAX 3.40282347e+38
#endif

__kernel void kmeans_kernel_c(__global float *feature, __global float *clusters,
                              __global int *membership, int npoints, int nclusters,
                              int nfeatures, int offset, int size)
{
    unsigned int point_id = get_global_id(0);
    int index = 0;
    if (point_id < npoints) {
        float min_dist = FLT_MAX;
        for (int i = 0; i < nclusters; i++) {
            float dist = 0;
            float ans = 0;
            for (int l = 0; l < nfeatures; l++) {
                ans += (feature[l * npoints + point_id] - clusters[i * nfeatures + l]) *
                       (feature[l * npoints + point_id] - clusters[i * nfeatures + l]);
            }
            dist = ans;
            if (dist < min_dist) {
                min_dist = dist;
                index = i;
            }
        }
        membership[point_id] = index;
    }
    return;
}

__kernel void kmeans_swap(__global float *feature, __global float *feature_swap, int npoints,
                          int nfeatures)
{
    unsigned int tid = get_global_id(0);
    if (tid < npoints)
        for (int i = 0; i < nfeatures; i++)
            feature_swap[i * npoints + tid] = feature[tid * nfeatures + i];
}
