// C = A B, n x n row-major: the i-k-j loop order a C programmer writes (rows of B
// streamed, C's row accumulated in vector registers).
void gemm_naive(const float *restrict a, const float *restrict b, float *restrict c, int n)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        float *ci = c + (long)i * n;
        for (int j = 0; j < n; j++)
            ci[j] = 0.0f;
        for (int k = 0; k < n; k++) {
            const float aik = a[(long)i * n + k];
            const float *bk = b + (long)k * n;
#pragma omp simd
            for (int j = 0; j < n; j++)
                ci[j] += aik * bk[j];
        }
    }
}
