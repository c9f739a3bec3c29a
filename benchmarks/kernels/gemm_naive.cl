// C = A B, n x n row-major, no local memory: work-item (j, i) computes C[i][j] with an
// inner loop over k (A's row is shared along the group's x, B's column is consecutive
// across neighbouring work-items).
kernel void gemm_naive(global const float *a, global const float *b, global float *c, int n)
{
    int j = get_global_id(0);
    int i = get_global_id(1);
    if (j >= n || i >= n)
        return;
    float sum = 0.0f;
    for (int k = 0; k < n; k++)
        sum += a[i * n + k] * b[k * n + j];
    c[i * n + j] = sum;
}
