// Sum of n floats: a SIMD + thread reduction in single precision.
#include <stdint.h>

float reduction(const float *x, int64_t n)
{
    float sum = 0.0f;
#pragma omp parallel for simd reduction(+ : sum) schedule(static)
    for (int64_t i = 0; i < n; i++)
        sum += x[i];
    return sum;
}
