// C = A * B for square row-major n x n matrices (n a multiple of TILE), one element of
// C per work-item; TILE x TILE tiles of A and B are staged in local memory.
#define TILE 16

kernel void sgemm(global const float *a, global const float *b, global float *c, int n)
{
    local float ta[TILE][TILE];
    local float tb[TILE][TILE];
    int lx = get_local_id(0), ly = get_local_id(1);
    int col = get_global_id(0), row = get_global_id(1);
    float acc = 0.0f;
    for (int t = 0; t < n; t += TILE) {
        ta[ly][lx] = a[row * n + t + lx];
        tb[ly][lx] = b[(t + ly) * n + col];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TILE; k++)
            acc += ta[ly][k] * tb[k][lx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    c[row * n + col] = acc;
}
