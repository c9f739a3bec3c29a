// C = A * B for square row-major n x n matrices: cache-blocked i-k-j loops (the
// vectorizable order), rows of blocks spread over the threads.
#define BLOCK 64

void sgemm(const float *restrict a, const float *restrict b, float *restrict c, int n)
{
#pragma omp parallel for schedule(static)
    for (int i0 = 0; i0 < n; i0 += BLOCK) {
        int i1 = i0 + BLOCK < n ? i0 + BLOCK : n;
        for (int i = i0; i < i1; i++)
            for (int j = 0; j < n; j++)
                c[(long)i * n + j] = 0.0f;
        for (int k0 = 0; k0 < n; k0 += BLOCK) {
            int k1 = k0 + BLOCK < n ? k0 + BLOCK : n;
            for (int j0 = 0; j0 < n; j0 += 256) {
                int j1 = j0 + 256 < n ? j0 + 256 : n;
                for (int i = i0; i < i1; i++) {
                    float *crow = c + (long)i * n;
                    for (int k = k0; k < k1; k++) {
                        float aik = a[(long)i * n + k];
                        const float *brow = b + (long)k * n;
#pragma omp simd
                        for (int j = j0; j < j1; j++)
                            crow[j] += aik * brow[j];
                    }
                }
            }
        }
    }
}
