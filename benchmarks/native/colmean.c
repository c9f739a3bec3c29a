// Column means of a row-major rows x cols matrix: rows streamed, the sums of a block of
// columns kept in vector registers.
void colmean(const float *restrict data, float *restrict mean, int rows, int cols)
{
#pragma omp parallel for schedule(static)
    for (int j0 = 0; j0 < cols; j0 += 64) {
        int j1 = j0 + 64 < cols ? j0 + 64 : cols;
        float sum[64] = {0};
        for (int i = 0; i < rows; i++) {
            const float *row = data + (long)i * cols;
#pragma omp simd
            for (int j = j0; j < j1; j++)
                sum[j - j0] += row[j];
        }
        for (int j = j0; j < j1; j++)
            mean[j] = sum[j - j0] / (float)rows;
    }
}
