// y = A x for a row-major rows x cols matrix.
void matvec(const float *restrict a, const float *restrict x, float *restrict y, int rows,
            int cols)
{
#pragma omp parallel for schedule(static)
    for (int i = 0; i < rows; i++) {
        const float *row = a + (long)i * cols;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j < cols; j++)
            sum += row[j] * x[j];
        y[i] = sum;
    }
}
